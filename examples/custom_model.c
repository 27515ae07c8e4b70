/* A caller-supplied model plugged into hsd through hsd_model_iface: a bigram language model
 * counted from a sentence, over the token ids of a real tokenizer. It is the target; a real
 * transformer with a different tokenizer drafts for it. Greedy output must be the same for
 * every algorithm, and here it is the rest of the sentence the bigrams were counted from.
 *   custom_model TARGET_TOKENIZER DRAFTER DRAFTER_TOKENIZER */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsd.h"

/* No token occurs twice in this sentence (under tok512), so greedy decoding of its bigram
 * model from "Once upon" spells the rest of it, then ends (the last token has no successor). */
static const char *TEXT = "Once upon a time, Tom found his big red ball.";

typedef struct bigram {
    int32_t vocab, n_ctx, len, eos;
    int32_t *cache; /* the tokens seen: a bigram's "KV cache" */
    float *count;   /* count[prev * vocab + next] */
} bigram;

static int32_t bg_vocab(void *c) {
    return ((bigram *)c)->vocab;
}
static int32_t bg_n_ctx(void *c) {
    return ((bigram *)c)->n_ctx;
}
static int32_t bg_kv_len(void *c) {
    return ((bigram *)c)->len;
}
static hsd_status bg_truncate(void *c, int32_t len) {
    ((bigram *)c)->len = len; /* hsd checked 0 <= len <= kv_len */
    return HSD_OK;
}
/* Row r's logits depend on its own token only, so chains and trees need no special case. */
static hsd_status bg_forward(void *c, const int32_t *tok, int32_t n, const int32_t *parents,
                             const int32_t *rows, int32_t n_rows, float *logits) {
    bigram *m = c;
    (void)parents;
    memcpy(m->cache + m->len, tok, (size_t)n * sizeof *tok);
    m->len += n;
    for (int32_t r = 0; r < n_rows; r++) {
        const float *cnt = m->count + (size_t)tok[rows ? rows[r] : r] * m->vocab;
        float seen = 0, *out = logits + (size_t)r * m->vocab;
        for (int32_t v = 0; v < m->vocab; v++) seen += cnt[v];
        for (int32_t v = 0; v < m->vocab; v++) /* unseen context: end the text */
            out[v] = seen > 0 ? logf(cnt[v] + 1e-3f) : (v == m->eos ? 0.f : -10.f);
    }
    return HSD_OK;
}
static void bg_free(void *c) {
    bigram *m = c;
    free(m->cache);
    free(m->count);
    free(m);
}

/* Counts the token pairs of BOS + TEXT as the tokenizer spells them. */
static hsd_status bigram_model(const hsd_tokenizer *tok, hsd_model **out) {
    bigram *m = calloc(1, sizeof *m);
    int32_t *ids = NULL;
    size_t n = 0;
    if (!m) return HSD_ERR_NOMEM;
    m->vocab = hsd_tokenizer_vocab_size(tok);
    m->n_ctx = 1024;
    m->eos = hsd_tokenizer_eos_id(tok);
    m->cache = malloc((size_t)m->n_ctx * sizeof *m->cache);
    m->count = calloc((size_t)m->vocab * m->vocab, sizeof *m->count);
    hsd_status s = m->cache && m->count ? HSD_OK : HSD_ERR_NOMEM;
    if (!s) s = hsd_tokenizer_encode_alloc(tok, TEXT, strlen(TEXT), false, &ids, &n);
    for (size_t i = 0; !s && i < n; i++)
        m->count[(size_t)(i ? ids[i - 1] : hsd_tokenizer_bos_id(tok)) * m->vocab + ids[i]] += 1;
    hsd_free(ids);
    hsd_model_iface f = {HSD_MODEL_IFACE_INIT, .ctx = m, .vocab_size = bg_vocab, .n_ctx = bg_n_ctx, .forward = bg_forward,
                         .kv_len = bg_kv_len, .kv_truncate = bg_truncate, .free = bg_free};
    if (!s) s = hsd_model_from_iface(&f, out); /* on success the model owns m */
    if (s) bg_free(m);
    return s;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s TARGET_TOKENIZER DRAFTER DRAFTER_TOKENIZER\n", argv[0]);
        return 2;
    }
    hsd_tokenizer *tt = NULL, *dt = NULL;
    hsd_model *tm = NULL, *dm = NULL;
    hsd_engine *e = NULL;
    int rc = 1;
    if (hsd_tokenizer_load_file(argv[1], &tt) || bigram_model(tt, &tm) ||
        hsd_model_load(argv[2], NULL, &dm) || hsd_tokenizer_load_file(argv[3], &dt) ||
        hsd_engine_init(tm, tt, dm, dt, &e))
        goto out;
    printf("target: %s, vocab %d; drafter: %s\n", hsd_model_desc(tm), hsd_model_vocab_size(tm),
           hsd_model_desc(dm));
    const char *prompt = "Once upon";
    const hsd_algo algos[] = {HSD_ALGO_AR, HSD_ALGO_UNION, HSD_ALGO_TLI, HSD_ALGO_SLEM};
    char *first = NULL;
    rc = 0;
    for (size_t i = 0; i < sizeof algos / sizeof algos[0] && !rc; i++) {
        hsd_gen_params p = hsd_gen_default_params();
        p.algo = algos[i];
        p.max_new_tokens = 60;
        hsd_gen_result r = HSD_GEN_RESULT_INIT;
        if (hsd_engine_generate(e, prompt, strlen(prompt), &p, &r)) {
            rc = 1;
            break;
        }
        printf("%-5s \"%s\" -> \"%s\"  [accepted %d of %d drafts]\n", hsd_algo_name(r.algo), prompt,
               r.text, r.n_accepted, r.n_drafted);
        if (!first)
            first = strdup(r.text);
        else if (strcmp(first, r.text))
            rc = 1, printf("%s differs from ar\n", hsd_algo_name(r.algo));
        hsd_gen_result_free(&r);
    }
    free(first);
out:
    if (rc && hsd_last_error()[0]) fprintf(stderr, "custom_model: %s\n", hsd_last_error());
    hsd_engine_free(e);
    hsd_model_free(tm);
    hsd_model_free(dm);
    hsd_tokenizer_free(tt);
    hsd_tokenizer_free(dt);
    return rc;
}
