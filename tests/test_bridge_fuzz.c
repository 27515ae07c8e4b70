/* String-bridge fuzz: random pairs of shared tokenizers fed random draft text for 10k rounds
 * each. Every round: target candidates for a random draft chunk, the "target" commits a
 * random number of them plus one token of its own, the drafter side is realigned. Checked:
 *   - the committed target ids spell the committed text (nothing lost or duplicated);
 *   - for drafters without a normalizer, the drafter's ids spell it too;
 *   - the re-tokenized windows stay bounded (cost per round does not grow with context);
 *   - the first changed drafter index never precedes the frozen segment. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/engine/bridge.h"
#include "lib/base/rng.h"
#include "tests/testutil.h"
#include "tokenize/tokenizer.h"

static char *stream;
static size_t stream_n;

static int setup(void **state) {
    (void)state;
    const char *p = hsd_test_path("corpus/corpus.jsonl");
    if (!hsd_test_require(p)) return -1;
    FILE *f = fopen(p, "r");
    char *line = NULL;
    size_t cap = 0;
    hsd_buf b = {0};
    while (getline(&line, &cap, f) > 0) {
        json_t *j = json_loads(line, JSON_ALLOW_NUL, NULL);
        json_t *t = json_object_get(j, "text");
        if (t) hsd_buf_append(&b, json_string_value(t), json_string_length(t)), hsd_buf_push(&b, '\n');
        json_decref(j);
    }
    free(line);
    fclose(f);
    stream = b.p;
    stream_n = b.n;
    return 0;
}

static int teardown(void **state) {
    (void)state;
    free(stream);
    return 0;
}

static hsd_tokenizer *load(const char *fam) {
    char rel[256];
    snprintf(rel, sizeof rel, "tokenizers/%s/tokenizer.json", fam);
    hsd_tokenizer *t = NULL;
    if (!hsd_test_require(hsd_test_path(rel))) return NULL;
    assert_int_equal(hsd_tokenizer_load_file(hsd_test_path(rel), &t), HSD_OK);
    return t;
}

/* A chunk of the corpus stream of 1..maxlen bytes ending on a character boundary. */
static size_t chunk(hsd_rng *r, size_t *pos, size_t maxlen, const char **out) {
    if (*pos >= stream_n - 64) *pos = 0;
    size_t n = 1 + hsd_rng_u32(r) % maxlen, s = *pos;
    if (s + n > stream_n) n = stream_n - s;
    while (s + n < stream_n && ((unsigned char)stream[s + n] & 0xC0) == 0x80) n++;
    *pos = s + n;
    *out = stream + s;
    return n;
}

static void commit(hsd_bridge_side *T, hsd_buf *text, int32_t id) {
    size_t len;
    const uint8_t *b = hsd_tokenizer_token_bytes(T->tok, id, &len);
    assert_int_equal(hsd_ids_push(&T->ids, id), 0);
    /* special ids commit no text, as in the engine */
    if (!hsd_tokenizer_is_special(T->tok, id)) assert_int_equal(hsd_buf_append(text, b, len), 0);
}

static void run_pair(const char *tfam, const char *dfam, int rounds) {
    hsd_tokenizer *tt = load(tfam), *dt = load(dfam);
    if (!tt || !dt) skip();
    bool d_plain = dt->n_norm == 0; /* surfaces must spell the text exactly */
    hsd_rng r;
    hsd_rng_init(&r, 42, 0);
    size_t pos = 0;
    hsd_buf text = {0};
    hsd_bridge_side T = {tt, {0}, 0, 0, true}, D = {dt, {0}, 0, 0, false};
    /* prompt: first 40 bytes encoded normally by each side */
    const char *pr;
    size_t pn = chunk(&r, &pos, 40, &pr);
    int32_t *ids;
    size_t n;
    assert_int_equal(hsd_tokenizer_encode_alloc(tt, pr, pn, false, &ids, &n), HSD_OK);
    for (size_t i = 0; i < n; i++) commit(&T, &text, ids[i]);
    hsd_free(ids);
    T.seg = (int32_t)T.ids.n;
    T.seg_off = text.n;
    assert_int_equal(hsd_tokenizer_encode_alloc(dt, pr, pn, false, &ids, &n), HSD_OK);
    for (size_t i = 0; i < n; i++) hsd_ids_push(&D.ids, ids[i]);
    hsd_free(ids);
    D.seg = (int32_t)D.ids.n;
    D.seg_off = text.n;
    size_t prompt_text = text.n;
    int32_t d_prompt = D.seg;
    size_t max_win_t = 0, max_win_d = 0;
    hsd_ids cand = {0}, own = {0};
    for (int round = 0; round < rounds; round++) {
        const char *dr;
        size_t dn = chunk(&r, &pos, 24, &dr);
        assert_int_equal(hsd_bridge_candidates(&T, &text, dr, dn, &cand, 64), HSD_OK);
        /* the target keeps a random prefix of the candidates, then a token of its own */
        size_t keep = cand.n ? hsd_rng_u32(&r) % (cand.n + 1) : 0;
        for (size_t i = 0; i < keep; i++) commit(&T, &text, cand.p[i]);
        /* (candidates may end inside a character: the next ones complete it, as a model's
         * next byte tokens would) */
        for (size_t i = keep; i < cand.n && hsd_bridge_pending_tail(text.p, text.n); i++)
            commit(&T, &text, cand.p[i]);
        const char *ow;
        size_t on = chunk(&r, &pos, 8, &ow);
        own.n = 0;
        assert_int_equal(hsd_tok_encode_cont(tt, ow, on, &own), HSD_OK);
        /* the target's own continuation: whole characters */
        for (size_t i = 0; i < own.n; i++) {
            commit(&T, &text, own.p[i]);
            if (!hsd_bridge_pending_tail(text.p, text.n)) break;
        }
        int32_t first;
        assert_int_equal(hsd_bridge_resync(&D, &text, &first), HSD_OK);
        hsd_bridge_advance(&T, &text);
        assert_true(first >= d_prompt);
        assert_true(hsd_bridge_consistent(&T, &text));
        if (d_plain) {
            /* all drafter ids after the prompt spell all text after the prompt */
            hsd_bridge_side whole = {dt, D.ids, d_prompt, prompt_text, false};
            if (!hsd_bridge_consistent(&whole, &text)) {
                fprintf(stderr, "%s<-%s round %d: drafter ids do not spell the text\n", tfam, dfam, round);
                size_t off = prompt_text;
                for (size_t i = (size_t)d_prompt; i < D.ids.n; i++) {
                    size_t len;
                    const uint8_t *b = hsd_tokenizer_token_bytes(dt, D.ids.p[i], &len);
                    if (off + len > text.n || memcmp(text.p + off, b, len)) {
                        fprintf(stderr, "diverge at text %zu (of %zu), token %zu id %d seg %d seg_off %zu: text '", off, text.n, i, D.ids.p[i], D.seg, D.seg_off);
                        for (size_t k = off; k < off + 12 && k < text.n; k++) fprintf(stderr, "\\x%02x", (unsigned char)text.p[k]);
                        fprintf(stderr, "' tok '");
                        for (size_t k = 0; k < len; k++) fprintf(stderr, "\\x%02x", b[k]);
                        fprintf(stderr, "'\n");
                        break;
                    }
                    off += len;
                }
            }
            assert_true(hsd_bridge_consistent(&whole, &text));
        }
        if (text.n - T.seg_off > max_win_t) max_win_t = text.n - T.seg_off;
        if (text.n - D.seg_off > max_win_d) max_win_d = text.n - D.seg_off;
    }
    printf("%-8s <- %-8s %d rounds, %zu bytes committed, max window: target %zu B, drafter %zu B%s\n",
           tfam, dfam, rounds, text.n, max_win_t, max_win_d, d_plain ? "" : " (normalizing drafter)");
    /* bounded windows: a few words, whatever the context length */
    assert_true(max_win_t < 2048);
    assert_true(max_win_d < 2048);
    hsd_ids_free(&cand), hsd_ids_free(&own), hsd_ids_free(&T.ids), hsd_ids_free(&D.ids);
    hsd_buf_free(&text);
    hsd_tokenizer_free(tt), hsd_tokenizer_free(dt);
}

static void test_qwen3_llama2(void **s) { (void)s; run_pair("qwen3", "llama2", 10000); run_pair("llama2", "qwen3", 10000); }
static void test_claude_gpt2(void **s) { (void)s; run_pair("claude", "gpt2", 10000); run_pair("gpt2", "claude", 10000); }
static void test_gemma3_llama3(void **s) { (void)s; run_pair("gemma3", "llama3", 10000); run_pair("llama3", "gemma3", 10000); }

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qwen3_llama2),
        cmocka_unit_test(test_claude_gpt2),
        cmocka_unit_test(test_gemma3_llama3),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
