/* Long prompts and contexts (issue 22): every algorithm prefills through the plain causal
 * path, the drafter's context is its own (a text longer than it slides the drafter to a
 * window of the text, and drafting goes on), and greedy output stays the target's own.
 *
 * Oracle: the target's greedy autoregressive decode of the same prompt (AR), which no
 * drafter is involved in. The pair is the shared TinyStories one (stories260K with tok512,
 * babyllama with the character-level tok105); the target runs on a ~2,000-token prompt
 * (bench/prompts/long_context.jsonl), past its trained 512 positions (n_ctx 2600: the output
 * degrades, it stays one deterministic function of the prompt), and the drafters get a
 * 64-position context so that the window slides several times per generation. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define T_CTX 2600
#define D_CTX 64
#define N_NEW 40
#define PROMPT_CHARS 4000 /* ~2,000 tok512 tokens, ~4,000 tok105 tokens */

static hsd_model *tm, *dm_char, *dm_same;
static hsd_tokenizer *tt, *dt_char;
static char *prompt, *prompt2;
static int slides;                        /* window notices seen through the log callback */
static hsd_gen_result ar_main = HSD_GEN_RESULT_INIT, ar_second = HSD_GEN_RESULT_INIT; /* the oracle: AR's output for prompt, prompt2 */

static void count_notices(hsd_log_level level, const char *msg, void *user) {
    (void)user;
    if (level >= HSD_LOG_INFO && strstr(msg, "window")) slides++;
}

/* The long_context prompts one after the other, cut to about `chars` at a word start. */
static char *long_prompt(size_t chars, int skip) {
    FILE *fp = fopen(hsd_test_src_path("bench/prompts/long_context.jsonl"), "r");
    if (!fp) return NULL;
    size_t cap = chars + 4096, n = 0;
    char *out = calloc(cap, 1), *line = NULL;
    size_t lcap = 0;
    int k = 0;
    while (n < chars && getline(&line, &lcap, fp) > 0) {
        json_t *j = json_loads(line, 0, NULL);
        const char *p = json_string_value(json_object_get(j, "prompt"));
        if (p && k++ >= skip) {
            size_t l = strlen(p);
            if (n + l + 2 >= cap) l = cap - n - 3;
            memcpy(out + n, p, l);
            n += l;
            out[n++] = '\n', out[n++] = '\n';
        }
        json_decref(j);
    }
    free(line);
    fclose(fp);
    if (n > chars) n = chars;
    while (n > 0 && out[n] != ' ') n--; /* a word start */
    out[n] = 0;
    return out;
}

static hsd_model *load(const char *rel, int32_t n_ctx) {
    hsd_model_params p = hsd_model_default_params();
    p.n_threads = 1;
    p.n_ctx = n_ctx;
    p.n_seq = 2;
    p.backend = HSD_BACKEND_CPU;
    hsd_model *m = NULL;
    if (hsd_model_load(hsd_test_path(rel), &p, &m)) fprintf(stderr, "%s\n", hsd_last_error());
    return m;
}

static int setup(void **state) {
    (void)state;
    const char *need[] = {"models/stories260K/stories260K.bin", "models/stories260K/tok512.bin",
                          "models/babyllama-tok105/model5000.bin",
                          "models/babyllama-tok105/tok105.bin"};
    for (int i = 0; i < 4; i++)
        if (!hsd_test_require(hsd_test_path(need[i]))) return 0;
    tm = load("models/stories260K/stories260K.bin", T_CTX);
    dm_char = load("models/babyllama-tok105/model5000.bin", D_CTX);
    dm_same = load("models/stories260K/stories260K.bin", D_CTX);
    if (hsd_tokenizer_load_file(hsd_test_path("models/stories260K/tok512.bin"), &tt) ||
        hsd_tokenizer_load_file(hsd_test_path("models/babyllama-tok105/tok105.bin"), &dt_char))
        fprintf(stderr, "%s\n", hsd_last_error());
    prompt = long_prompt(PROMPT_CHARS, 0);
    prompt2 = long_prompt(PROMPT_CHARS / 2, 3);
    if (!prompt) fprintf(stderr, "missing bench/prompts/long_context.jsonl\n");
    hsd_log_set(count_notices, NULL);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    hsd_log_set(NULL, NULL);
    hsd_model_free(tm), hsd_model_free(dm_char), hsd_model_free(dm_same);
    hsd_tokenizer_free(tt), hsd_tokenizer_free(dt_char);
    free(prompt), free(prompt2);
    hsd_gen_result_free(&ar_main), hsd_gen_result_free(&ar_second);
    return 0;
}

#define REQUIRE_MODELS()                                                                           \
    do {                                                                                           \
        if (!tm || !dm_char || !dm_same || !tt || !dt_char || !prompt) {                           \
            fprintf(stderr, "skip: shared TinyStories pair or long_context prompts missing\n");    \
            skip();                                                                                \
        }                                                                                          \
    } while (0)

static hsd_gen_params greedy(hsd_algo a) {
    hsd_gen_params p = hsd_gen_default_params();
    p.algo = a;
    p.max_new_tokens = N_NEW;
    p.temp = 0;
    p.n_ctx = T_CTX; /* past the trained 512 positions, on purpose */
    p.stop_at_eos = false;
    return p;
}

/* AR's output (once per prompt: the oracle of every test). */
static const hsd_gen_result *ar_ids(const char *pr) {
    hsd_gen_result *ar = pr == prompt ? &ar_main : &ar_second;
    if (ar->n_ids) return ar;
    hsd_engine *e = NULL;
    assert_int_equal(hsd_engine_init(tm, tt, NULL, NULL, &e), HSD_OK);
    hsd_gen_params p = greedy(HSD_ALGO_AR);
    assert_int_equal(hsd_engine_generate(e, pr, strlen(pr), &p, ar), HSD_OK);
    assert_int_equal(ar->n_ids, N_NEW);
    hsd_engine_free(e);
    return ar;
}

static void assert_same_ids(const hsd_gen_result *r, const hsd_gen_result *ar, const char *what) {
    if (r->n_ids != ar->n_ids || memcmp(r->ids, ar->ids, (size_t)ar->n_ids * sizeof *ar->ids)) {
        fprintf(stderr, "%s: output differs from AR's (%d vs %d ids)\n", what, r->n_ids, ar->n_ids);
        fail();
    }
}

/* Every algorithm, single requests: AR's ids exactly, the window slid (the prompt alone is
 * longer than the drafter's context) and drafting went on after it. */
static void test_greedy_equals_ar_every_algorithm(void **state) {
    (void)state;
    REQUIRE_MODELS();
    const hsd_gen_result *ar = ar_ids(prompt);
    const hsd_algo algos[] = {HSD_ALGO_SD, HSD_ALGO_UNION, HSD_ALGO_TLI, HSD_ALGO_SLEM,
                              HSD_ALGO_SLRS};
    /* one engine per drafter, SD's first: e_char's prefix cache then spares the target the
     * same prompt again (both use the target's slot 0) */
    hsd_engine *e_same = NULL, *e_char = NULL;
    assert_int_equal(hsd_engine_init(tm, tt, dm_same, tt, &e_same), HSD_OK);
    assert_int_equal(hsd_engine_init(tm, tt, dm_char, dt_char, &e_char), HSD_OK);
    for (size_t i = 0; i < sizeof algos / sizeof *algos; i++) {
        hsd_engine *e = algos[i] == HSD_ALGO_SD ? e_same : e_char;
        hsd_gen_params p = greedy(algos[i]);
        hsd_gen_result r = HSD_GEN_RESULT_INIT;
        slides = 0;
        assert_int_equal(hsd_engine_generate(e, prompt, strlen(prompt), &p, &r), HSD_OK);
        fprintf(stderr, "%-5s: %d drafted, %d accepted, %d window slides, ttft %.1f ms\n",
                hsd_algo_name(algos[i]), r.n_drafted, r.n_accepted, slides, r.ttft_ms);
        assert_same_ids(&r, ar, hsd_algo_name(algos[i]));
        assert_true(slides >= 1);
        assert_true(r.n_drafted > 0);
        assert_true(r.n_accepted > 0);
        hsd_gen_result_free(&r);
    }
    hsd_engine_free(e_same), hsd_engine_free(e_char);
}

/* generate_batch and the running batch (two prompts of different lengths in two slots):
 * each sequence's ids are its own AR output. */
static void test_batch_and_step_equal_ar(void **state) {
    (void)state;
    REQUIRE_MODELS();
    const char *ps[2] = {prompt, prompt2};
    const hsd_gen_result *ar[2] = {ar_ids(prompt), ar_ids(prompt2)};
    hsd_engine *e = NULL;
    assert_int_equal(hsd_engine_init(tm, tt, dm_char, dt_char, &e), HSD_OK);
    hsd_gen_params p = greedy(HSD_ALGO_SLEM);
    hsd_gen_result r[2];
    hsd_gen_results_init(r, 2);
    slides = 0;
    assert_int_equal(hsd_engine_generate_batch(e, ps, NULL, 2, &p, r), HSD_OK);
    for (int i = 0; i < 2; i++) {
        assert_same_ids(&r[i], ar[i], "generate_batch");
        assert_true(r[i].n_accepted > 0);
        hsd_gen_result_free(&r[i]);
    }
    assert_true(slides >= 2);

    hsd_batch *b = NULL;
    assert_int_equal(hsd_batch_init(e, NULL, &b), HSD_OK);
    int64_t id[2];
    p.algo = HSD_ALGO_TLI;
    for (int i = 0; i < 2; i++)
        assert_int_equal(hsd_batch_add(b, ps[i], strlen(ps[i]), &p, &id[i]), HSD_OK);
    int done = 0;
    for (int step = 0; step < 10 * N_NEW && done < 2; step++) {
        const hsd_batch_event *ev;
        int32_t n_ev;
        assert_int_equal(hsd_batch_step(b, &ev, &n_ev), HSD_OK);
        for (int32_t k = 0; k < n_ev; k++) {
            if (!ev[k].done) continue;
            int i = ev[k].id == id[0] ? 0 : 1;
            assert_same_ids(ev[k].result, ar[i], "hsd_batch_step");
            assert_true(ev[k].result->n_accepted > 0);
            done++;
        }
    }
    assert_int_equal(done, 2);
    hsd_batch_free(b);
    hsd_engine_free(e);
}

/* The proposer (draft-only SLEM) on a context past its drafter's: it slides and keeps
 * proposing, and its first proposed id is often the target's own next greedy id. */
static void test_proposer_window(void **state) {
    (void)state;
    REQUIRE_MODELS();
    const hsd_gen_result *ar = ar_ids(prompt);
    int32_t *ctx = NULL;
    size_t n = 0;
    assert_int_equal(hsd_tokenizer_encode_alloc(tt, prompt, strlen(prompt), false, &ctx, &n),
                     HSD_OK);
    int32_t *full = malloc((n + 1 + N_NEW) * sizeof *full);
    full[0] = hsd_tokenizer_bos_id(tt);
    memcpy(full + 1, ctx, n * sizeof *ctx);
    memcpy(full + 1 + n, ar->ids, (size_t)N_NEW * sizeof *full);
    hsd_proposer *pr = NULL;
    assert_int_equal(hsd_proposer_init(dm_char, dt_char, tt, NULL, &pr), HSD_OK);
    slides = 0;
    int hits = 0, proposed = 0;
    for (int j = 0; j < N_NEW; j++) {
        int32_t slot = 0, len = (int32_t)n + 1 + j, out[8], n_out = 0;
        const int32_t *c = full;
        assert_int_equal(hsd_proposer_propose(pr, 1, &slot, &c, &len, 8, out, &n_out), HSD_OK);
        proposed += n_out > 0;
        hits += n_out > 0 && out[0] == ar->ids[j];
    }
    fprintf(stderr, "proposer: %d of %d steps proposed, %d first ids = AR's, %d slides\n", proposed,
            N_NEW, hits, slides);
    assert_true(slides >= 1);
    assert_true(proposed > N_NEW / 2);
    assert_true(hits > 0);
    hsd_proposer_free(pr);
    hsd_free(ctx);
    free(full);
}

/* ---- the forwards a generation makes, recorded by a model wrapper ---- */
typedef struct call {
    int32_t kv, n, n_rows;
    bool tree;
    int32_t chain, row0; /* leading ids each the previous one's child (all: no parents); rows[0] */
} call;

typedef struct rec {
    hsd_model *inner;
    call *c;
    int n, cap;
    int32_t batch_rows_max, n_batches; /* forward_batch: the most rows stacked in one call */
} rec;

static int32_t r_vocab(void *x) {
    return hsd_model_vocab_size(((rec *)x)->inner);
}
static int32_t r_n_ctx(void *x) {
    return hsd_model_n_ctx(((rec *)x)->inner);
}
static int32_t r_kv_len(void *x) {
    return hsd_model_kv_len(((rec *)x)->inner);
}
static hsd_status r_truncate(void *x, int32_t len) {
    return hsd_model_kv_truncate(((rec *)x)->inner, len);
}
static hsd_status r_keep(void *x, int32_t base, const int32_t *keep, int32_t n) {
    return hsd_model_kv_keep(((rec *)x)->inner, base, keep, n);
}
static hsd_status r_forward(void *x, const int32_t *tokens, int32_t n, const int32_t *parents,
                            const int32_t *rows, int32_t n_rows, float *logits) {
    rec *r = x;
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 256;
        r->c = realloc(r->c, (size_t)r->cap * sizeof *r->c);
    }
    int32_t chain = 0;
    while (chain < n && (!parents || parents[chain] == chain - 1)) chain++;
    r->c[r->n++] = (call){hsd_model_kv_len(r->inner), n, n_rows, parents != NULL, chain,
                          n_rows > 0 ? (rows ? rows[0] : 0) : -1};
    return hsd_model_forward(r->inner, tokens, n, parents, rows, n_rows, logits);
}

static int32_t r_n_seq(void *x) {
    return hsd_model_n_seq(((rec *)x)->inner);
}
static hsd_status r_seq_select(void *x, int32_t seq) {
    return hsd_model_seq_select(((rec *)x)->inner, seq);
}
static hsd_status r_forward_batch(void *x, const hsd_model_batch_seq *seqs, int32_t n_seqs,
                                  float *logits) {
    rec *r = x;
    int32_t rows = 0;
    for (int32_t i = 0; i < n_seqs; i++) rows += HSD_BATCH_SEQ_AT(seqs, i)->n;
    if (rows > r->batch_rows_max) r->batch_rows_max = rows;
    r->n_batches++;
    return hsd_model_forward_batch(r->inner, seqs, n_seqs, logits);
}

static hsd_model *recorder(rec *r, hsd_model *inner) {
    memset(r, 0, sizeof *r);
    r->inner = inner;
    hsd_model_iface f = {HSD_MODEL_IFACE_INIT,
                         .ctx = r,
                         .vocab_size = r_vocab,
                         .n_ctx = r_n_ctx,
                         .forward = r_forward,
                         .kv_len = r_kv_len,
                         .kv_truncate = r_truncate,
                         .kv_keep = r_keep,
                         .n_seq = r_n_seq,
                         .seq_select = r_seq_select,
                         .forward_batch = r_forward_batch};
    hsd_model *m = NULL;
    assert_int_equal(hsd_model_from_iface(&f, &m), HSD_OK);
    return m;
}

/* The prompt goes through causal forwards (parents NULL) of at most 512 positions that ask
 * for no logits, except that the last chunk may end with the last prompt id and ask for its
 * one row (AR); a drafting round's target prefills only whole chunks of 512 and its first
 * verification forward carries the rest of the prompt (1..512 ids) ahead of the candidates,
 * as a causal chain at its start (the parents of a tree: each id the previous one's child;
 * the model runs them as a chain segment), its first row the last prompt id's. No prompt id
 * is fed twice: AR's first token comes from the prefill's row (its forwards are the
 * ceil(P / 512) chunks and one per later token, nothing else), and the drafter's first draft
 * reads its own prefill's row (its next forward starts past it). */
static void test_prefill_is_causal(void **state) {
    (void)state;
    REQUIRE_MODELS();
    hsd_model_seq_select(tm, 0), hsd_model_seq_select(dm_char, 0);
    int32_t *ids = NULL;
    size_t n = 0;
    assert_int_equal(hsd_tokenizer_encode_alloc(tt, prompt, strlen(prompt), false, &ids, &n),
                     HSD_OK);
    hsd_free(ids);
    const int32_t plen = (int32_t)n + 1; /* BOS */
    const hsd_algo algos[] = {HSD_ALGO_AR, HSD_ALGO_TLI, HSD_ALGO_SLEM, HSD_ALGO_SLRS};
    for (size_t a = 0; a < sizeof algos / sizeof *algos; a++) {
        const bool ar = algos[a] == HSD_ALGO_AR;
        rec rt, rd;
        hsd_model *t = recorder(&rt, tm), *d = recorder(&rd, dm_char);
        hsd_engine *e = NULL;
        assert_int_equal(hsd_engine_init(t, tt, ar ? NULL : d, ar ? NULL : dt_char, &e), HSD_OK);
        hsd_gen_params p = greedy(algos[a]);
        hsd_gen_result r = HSD_GEN_RESULT_INIT;
        assert_int_equal(hsd_engine_generate(e, prompt, strlen(prompt), &p, &r), HSD_OK);
        int prefill_fw = 0, last_by_prefill = 0, last_by_verify = 0, carried = 0;
        int32_t next = 0; /* the first prompt position not written yet */
        for (int i = 0; i < rt.n; i++) {
            const call *c = &rt.c[i];
            if (c->kv >= plen) continue;
            assert_int_equal(c->kv, next); /* in order, none twice */
            if (c->kv + c->n < plen) { /* a prefill chunk before the last prompt id */
                prefill_fw++;
                assert_false(c->tree);
                assert_true(c->n <= 512);
                assert_int_equal(c->n_rows, 0);
                if (!ar) assert_int_equal(c->n, 512);
            } else if (!c->tree && c->kv + c->n == plen && c->n_rows == 1 && c->row0 == c->n - 1) {
                prefill_fw++; /* AR: the last chunk ends with the last prompt id, its row only */
                last_by_prefill++;
            } else { /* a verification carrying the prompt's last ids */
                carried = plen - c->kv;
                assert_true(carried >= 1 && carried <= 512);
                assert_true(c->chain >= carried); /* causal at its start */
                assert_int_equal(c->row0, carried - 1);
                last_by_verify++;
            }
            next = c->kv + c->n;
        }
        /* the last prompt position is written once, by one of the two */
        assert_int_equal(last_by_prefill + last_by_verify, 1);
        if (ar) {
            assert_int_equal(last_by_prefill, 1);
            assert_int_equal(rt.n, (plen + 511) / 512 + r.n_ids - 1);
        } else {
            /* the drafter's first forward is its prefill (the window), with the row that its
             * first draft reads; the next one feeds past it, recomputing nothing */
            assert_true(rd.n >= 2);
            assert_false(rd.c[0].tree);
            assert_int_equal(rd.c[0].n_rows, 1);
            assert_true(rd.c[0].n > 1);
            assert_int_equal(rd.c[1].kv, rd.c[0].kv + rd.c[0].n);
        }
        /* the drafter's window re-prefills: any long drafter forward is causal, with at most
         * its last row */
        for (int i = 0; i < rd.n; i++)
            if (rd.c[i].n > 64) {
                assert_false(rd.c[i].tree);
                assert_true(rd.c[i].n_rows <= 1);
            }
        fprintf(stderr,
                "%-5s: prompt %d target tokens in %d causal forwards and %d carried by the first "
                "verification, %d target and %d drafter forwards in all, %d tokens\n",
                hsd_algo_name(algos[a]), plen, prefill_fw, carried, rt.n, rd.n, r.n_ids);
        assert_int_equal(prefill_fw, ar ? (plen + 511) / 512 : (plen - 1) / 512);
        hsd_gen_result_free(&r);
        hsd_engine_free(e);
        /* the wrappers borrow the real models: free only the wrappers */
        hsd_model_free(t), hsd_model_free(d);
        free(rt.c), free(rd.c);
    }
}

/* A batch's first verification stacks every sequence's carried prompt ids in one forward:
 * together they stay within about a prefill chunk (the forward's scratch grows with its
 * rows), and the outputs are still each prompt's AR output. */
/* The longest start of s that the target tokenizes to at most `want` ids. */
static char *cut_to_tokens(const char *s, size_t want) {
    size_t lo = 0, hi = strlen(s);
    while (lo < hi) {
        size_t mid = (lo + hi + 1) / 2, n = 0;
        int32_t *ids = NULL;
        assert_int_equal(hsd_tokenizer_encode_alloc(tt, s, mid, false, &ids, &n), HSD_OK);
        hsd_free(ids);
        if (n <= want) lo = mid; else hi = mid - 1;
    }
    char *c = malloc(lo + 1);
    memcpy(c, s, lo);
    c[lo] = 0;
    return c;
}

static void test_batch_carry_is_bounded(void **state) {
    (void)state;
    REQUIRE_MODELS();
    /* prompts of about 500 and 480 ids: one sequence alone would carry all of them */
    char *p0 = cut_to_tokens(prompt, 500), *p1 = cut_to_tokens(prompt2, 480);
    const char *ps[2] = {p0, p1};
    hsd_gen_result a0 = HSD_GEN_RESULT_INIT, a1 = HSD_GEN_RESULT_INIT;
    {
        hsd_engine *ea = NULL;
        assert_int_equal(hsd_engine_init(tm, tt, NULL, NULL, &ea), HSD_OK);
        hsd_gen_params pa = greedy(HSD_ALGO_AR);
        assert_int_equal(hsd_engine_generate(ea, p0, strlen(p0), &pa, &a0), HSD_OK);
        assert_int_equal(hsd_engine_generate(ea, p1, strlen(p1), &pa, &a1), HSD_OK);
        hsd_engine_free(ea);
    }
    const hsd_gen_result *ar[2] = {&a0, &a1};
    rec rt, rd;
    hsd_model *t = recorder(&rt, tm), *d = recorder(&rd, dm_char);
    hsd_engine *e = NULL;
    assert_int_equal(hsd_engine_init(t, tt, d, dt_char, &e), HSD_OK);
    hsd_gen_params p = greedy(HSD_ALGO_SLEM);
    hsd_gen_result r[2];
    hsd_gen_results_init(r, 2);
    assert_int_equal(hsd_engine_generate_batch(e, ps, NULL, 2, &p, r), HSD_OK);
    for (int i = 0; i < 2; i++) {
        assert_same_ids(&r[i], ar[i], "generate_batch through the recorders");
        hsd_gen_result_free(&r[i]);
    }
    /* 512 carried ids at most in all, plus each sequence's candidates and its last id */
    fprintf(stderr, "batch of 2: %d target batched forwards, at most %d rows in one\n",
            rt.n_batches, rt.batch_rows_max);
    assert_true(rt.n_batches > 0);
    assert_true(rt.batch_rows_max <= 512 + 2 * (64 + 1));
    hsd_engine_free(e);
    hsd_model_free(t), hsd_model_free(d);
    free(rt.c), free(rd.c);
    hsd_gen_result_free(&a0), hsd_gen_result_free(&a1);
    free(p0), free(p1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_greedy_equals_ar_every_algorithm),
        cmocka_unit_test(test_batch_and_step_equal_ar),
        cmocka_unit_test(test_proposer_window),
        cmocka_unit_test(test_prefill_is_causal),
        cmocka_unit_test(test_batch_carry_is_bounded),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
