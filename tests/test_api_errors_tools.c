/* Every public tools function (include/hsd_tools.h) called wrongly, then once rightly on the
 * toy pair of api_errors_fixture.h (see test_api_errors.c for the contract and the guard that
 * every public function has a row): NULL arguments and bad input give the documented status
 * with a message naming the function and the argument; getters give their neutral value. The
 * right calls are checked against values worked out by hand from the toy vocabularies (BPE
 * merges, decompositions), the Random123 known answer and the formulas of the docs. */
#include "lib/base/timer.h"
#include "lib/base/rng.h"
#include "hsd_tools.h"
#include "tests/api_errors_fixture.h"

/* EXPECT, and the message names `what` (the function, the argument or the cause). */
#define EXPECT_NAMED(want, call, what)                                                             \
    do {                                                                                           \
        EXPECT(want, call);                                                                        \
        if (!strstr(hsd_last_error(), what))                                                       \
            fail_msg("%s: message '%s' does not name '%s'", #call, hsd_last_error(), what);        \
    } while (0)

/* A file in /tmp holding `text` (the name is in a static buffer). */
static const char *tmp_file(const char *tag, const char *text) {
    static char path[256];
    snprintf(path, sizeof path, "/tmp/hsd_api_tools_%d_%s", (int)getpid(), tag);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

/* ---- corpus and token trie --------------------------------------------------------------- */

static void row_hsd_corpus_load(void **state) {
    (void)state;
    hsd_corpus c;
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_corpus_load(NULL, &c), "hsd_corpus_load: path");
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_corpus_load("x", NULL), "hsd_corpus_load: out");
    EXPECT_NAMED(HSD_ERR_IO, hsd_corpus_load("/nonexistent/c.jsonl", &c), "/nonexistent/c.jsonl");
    const char *bad = tmp_file("bad.jsonl", "{\"text\": \"ok\"}\n{\"txt\": 1}\n");
    EXPECT_NAMED(HSD_ERR_PARSE, hsd_corpus_load(bad, &c), ":2:");
    const char *good = tmp_file("good.jsonl", "{\"text\": \"abc\"}\n\n{\"text\": \"a\\u0000b\"}\n");
    assert_int_equal(hsd_corpus_load(good, &c), HSD_OK);
    assert_int_equal(c.n, 2);
    assert_int_equal(c.len[1], 3); /* the NUL byte counts */
    hsd_corpus_free(&c);
    unlink(bad);
    unlink(good);
}
static void row_hsd_corpus_free(void **state) {
    (void)state;
    hsd_corpus_free(NULL);
    hsd_corpus c = {0};
    hsd_corpus_free(&c);
    assert_int_equal(c.n, 0);
}
static void row_hsd_token_trie_build(void **state) {
    (void)state;
    hsd_token_trie *t = (hsd_token_trie *)1;
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_token_trie_build(NULL, &t), "tokenizer");
    assert_null(t);
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_token_trie_build(tok_t, NULL), "hsd_token_trie_build");
}
static void row_hsd_token_trie_free(void **state) {
    (void)state;
    hsd_token_trie_free(NULL);
}
static void row_hsd_token_trie_n_nodes(void **state) {
    (void)state;
    assert_int_equal(hsd_token_trie_n_nodes(NULL), 0);
    hsd_token_trie *t;
    assert_int_equal(hsd_token_trie_build(tok_t, &t), HSD_OK);
    /* text tokens a b c ' ' ab abc: root, a, b, c, ' ', a-b, a-b-c */
    assert_int_equal(hsd_token_trie_n_nodes(t), 7);
    hsd_token_trie_free(t);
}
static void row_hsd_token_trie_n_tokens(void **state) {
    (void)state;
    assert_int_equal(hsd_token_trie_n_tokens(NULL), 0);
    hsd_token_trie *t;
    assert_int_equal(hsd_token_trie_build(tok_d, &t), HSD_OK);
    assert_int_equal(hsd_token_trie_n_tokens(t), 4); /* c b a ' ' (specials left out) */
    hsd_token_trie_free(t);
}

/* ---- pair advisor --------------------------------------------------------------------- */

static void row_hsd_pair_analyze(void **state) {
    (void)state;
    hsd_pair_report r;
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_pair_analyze(NULL, tok_d, NULL, &r), "target tokenizer");
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_pair_analyze(tok_t, NULL, NULL, &r), "draft tokenizer");
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_pair_analyze(tok_t, tok_d, NULL, NULL),
                 "hsd_pair_analyze");
    EXPECT_NAMED(HSD_ERR_IO, hsd_pair_analyze(tok_t, tok_d, "/nonexistent/c.jsonl", &r),
                 "/nonexistent/c.jsonl");
    assert_int_equal(hsd_pair_analyze(tok_t, tok_d, NULL, &r), HSD_OK);
    assert_int_equal(r.t_size, 8);
    assert_int_equal(r.d_size, 6);
    /* <s> </s> (special on both sides) and a b c ' '; ab and abc have no drafter twin */
    assert_int_equal(r.intersection, 6);
    hsd_pair_report_free(&r);
}
static void row_hsd_pair_expressible(void **state) {
    (void)state;
    hsd_pair_expr e;
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_pair_expressible(NULL, tok_d, &e), "tokenizer a");
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_pair_expressible(tok_t, tok_d, NULL), "out");
    assert_int_equal(hsd_pair_expressible(tok_t, tok_d, &e), HSD_OK);
    assert_true(e.holds); /* ab = a+b, abc = a+b+c */
    assert_int_equal(e.checked, 6);
}
static void row_hsd_pair_recommend(void **state) {
    (void)state;
    hsd_pair_recommend(NULL); /* no-op */
    hsd_pair_report r = {0};
    r.identical = true;
    hsd_pair_recommend(&r);
    assert_int_equal(r.algo, HSD_ALGO_SD);
    assert_non_null(strstr(r.reason, "identical")); /* library-allocated, never truncated */
    hsd_pair_report_free(&r);
}
static void row_hsd_pair_report_free(void **state) {
    (void)state;
    hsd_pair_report_free(NULL); /* no-op */
    hsd_pair_report r = {0};
    hsd_pair_report_free(&r); /* nothing allocated: no-op */
    r.identical = true;
    hsd_pair_recommend(&r);
    hsd_pair_report_free(&r);
    assert_null(r.reason);
    assert_null(r.warnings);
}
static void row_hsd_pair_psi_summary(void **state) {
    (void)state;
    hsd_pair_psi p;
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_pair_psi_summary(tok_t, NULL, &p), "draft tokenizer");
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_pair_psi_summary(tok_t, tok_d, NULL), "out");
    assert_int_equal(hsd_pair_psi_summary(tok_t, tok_d, &p), HSD_OK);
    assert_int_equal(p.tokens, 6);
    assert_int_equal(p.n_max, 3); /* abc: a, then ab, then the third draft fixes it */
}

/* ---- ψ statistics ---------------------------------------------------------------------- */

static void row_hsd_psi_default_params(void **state) {
    (void)state;
    assert_false(hsd_psi_default_params().distinct_surfaces);
}
static void row_hsd_psi_stats_compute(void **state) {
    (void)state;
    hsd_psi_stats s;
    hsd_token_trie *t;
    assert_int_equal(hsd_token_trie_build(tok_d, &t), HSD_OK);
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_psi_stats_compute(NULL, t, NULL, &s), "target tokenizer");
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_psi_stats_compute(tok_t, NULL, NULL, &s), "draft trie");
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_psi_stats_compute(tok_t, t, NULL, NULL), "out");
    assert_int_equal(hsd_psi_stats_compute(tok_t, t, NULL, &s), HSD_OK);
    assert_int_equal(s.n_tokens, 6);
    assert_int_equal(s.n_none, 0);
    assert_true(s.tok[7].count == 1.0); /* abc = a b c, the only split over {a, b, c, ' '} */
    assert_int_equal(s.tok[7].parts_max, 3);
    assert_int_equal(s.n_max, 3);
    hsd_psi_stats_free(&s);
    hsd_token_trie_free(t);
}
static void row_hsd_psi_stats_free(void **state) {
    (void)state;
    hsd_psi_stats_free(NULL);
    hsd_psi_stats s = {0};
    hsd_psi_stats_free(&s);
}
static void row_hsd_psi_summarize(void **state) {
    (void)state;
    hsd_psi_summarize(NULL, 3, NULL); /* no-op */
    hsd_psi_summary m;
    hsd_psi_summarize(NULL, 3, &m);
    assert_int_equal(m.n, 0);
    double v[3] = {3, 1, 2};
    hsd_psi_summarize(v, 3, &m);
    assert_int_equal(m.n, 3);
    assert_true(m.mean == 2 && m.sd == 1 && m.min == 1 && m.median == 2 && m.max == 3);
    assert_true(m.p25 == 1.5 && m.p75 == 2.5); /* linear interpolation */
}
static void row_hsd_psi_ids_by_length(void **state) {
    (void)state;
    int32_t *ids;
    size_t n;
    hsd_psi_stats s = {0};
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_psi_ids_by_length(NULL, &ids, &n), "stats");
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_psi_ids_by_length(&s, NULL, &n), "ids");
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_psi_ids_by_length(&s, &ids, NULL),
                 "hsd_psi_ids_by_length");
}
static void row_hsd_psi_by_length(void **state) {
    (void)state;
    hsd_psi_length_row *rows;
    size_t n;
    hsd_psi_stats s = {0};
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_psi_by_length(NULL, &rows, &n), "stats");
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_psi_by_length(&s, NULL, &n), "rows");
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_psi_by_length(&s, &rows, NULL), "n_rows");
}

/* ---- injectivity ----------------------------------------------------------------------- */

static void row_hsd_inj_cause_name(void **state) {
    (void)state;
    assert_string_equal(hsd_inj_cause_name(HSD_INJ_BYTES), "byte_sequence");
    assert_string_equal(hsd_inj_cause_name((hsd_inj_cause)99), "other");
}
static void row_hsd_inj_default_params(void **state) {
    (void)state;
    hsd_inj_params p = hsd_inj_default_params();
    assert_true(p.minimize);
    assert_true(p.fuzz_seconds == 0 && p.prefix_chars == 0 && p.seed == 1 && !p.progress);
}
static void row_hsd_inj_check_corpus(void **state) {
    (void)state;
    hsd_inj_params p = hsd_inj_default_params();
    hsd_inj_result r = {0};
    /* HF decodes without a decoder by joining the tokens with spaces: "abc" (one token)
     * spells itself, "bc" (b, c: no merge) comes back as "b c" */
    char *texts[2] = {"abc", "bc"};
    size_t lens[2] = {3, 2};
    hsd_corpus c = {texts, lens, 2};
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_inj_check_corpus(NULL, &c, &p, &r), "tokenizer");
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_inj_check_corpus(tok_t, NULL, &p, &r), "corpus");
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_inj_check_corpus(tok_t, &c, NULL, &r), "params");
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_inj_check_corpus(tok_t, &c, &p, NULL), "result");
    assert_int_equal(hsd_inj_check_corpus(tok_t, &c, &p, &r), HSD_OK);
    assert_int_equal(r.samples, 2);
    assert_int_equal(r.non_injective, 1);
    assert_int_equal(r.n_ex, 1);
    assert_int_equal(r.ex[0].sample, 1);
    assert_string_equal(r.ex[0].decoded, "b c");
    assert_string_equal(r.ex[0].minimal, "bc"); /* removing either character round-trips */
    assert_int_equal(r.ex[0].cause, HSD_INJ_WHITESPACE);
    hsd_inj_result_free(&r);
}
static void row_hsd_inj_fuzz(void **state) {
    (void)state;
    hsd_inj_params p = hsd_inj_default_params();
    hsd_inj_result r = {0};
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_inj_fuzz(NULL, &p, &r), "hsd_inj_fuzz: tokenizer");
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_inj_fuzz(tok_t, NULL, &r), "params");
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_inj_fuzz(tok_t, &p, NULL), "result");
}
static void row_hsd_inj_result_free(void **state) {
    (void)state;
    hsd_inj_result_free(NULL);
    hsd_inj_result r = {0};
    hsd_inj_result_free(&r);
}

/* ---- trimming -------------------------------------------------------------------------- */

static void row_hsd_trim_default_params(void **state) {
    (void)state;
    hsd_trim_params p = hsd_trim_default_params();
    assert_true(p.alpha == 0.5 && p.min_coverage == 0 && p.dim == 0 && p.fixed_flops == 0);
}
static void row_hsd_trim_count(void **state) {
    (void)state;
    char *texts[1] = {"abc ab"};
    size_t lens[1] = {6};
    hsd_corpus c = {texts, lens, 1};
    int64_t counts[8] = {0}, n = 0;
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_trim_count(NULL, &c, counts, &n), "tokenizer");
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_trim_count(tok_t, NULL, counts, &n), "corpus");
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_trim_count(tok_t, &c, NULL, &n), "counts");
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_trim_count(tok_t, &c, counts, NULL), "n_tokens");
    assert_int_equal(hsd_trim_count(tok_t, &c, counts, &n), HSD_OK);
    /* merges "a b" then "ab c": a b c ' ' a b → abc ' ' ab */
    assert_int_equal(n, 3);
    assert_true(counts[7] == 1 && counts[5] == 1 && counts[6] == 1 && counts[2] == 0);
}
static void row_hsd_trim_rank(void **state) {
    (void)state;
    const int64_t counts[5] = {0, 0, 5, 1, 5};
    int32_t order[5];
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_trim_rank(NULL, 5, order), "counts");
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_trim_rank(counts, 5, NULL), "order");
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_trim_rank(counts, -1, order), "negative");
    assert_int_equal(hsd_trim_rank(counts, 5, order), HSD_OK);
    const int32_t want[5] = {2, 4, 3, 0, 1}; /* by count, ties by id */
    for (int i = 0; i < 5; i++) assert_int_equal(order[i], want[i]);
}
static void row_hsd_trim_candidates(void **state) {
    (void)state;
    int32_t order[8] = {7, 6, 2, 0, 3, 1, 4, 5}, dids[8], n = -1;
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_trim_candidates(NULL, tok_d, order, 8, dids, &n),
                 "target tokenizer");
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_trim_candidates(tok_t, NULL, order, 8, dids, &n),
                 "draft tokenizer");
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_trim_candidates(tok_t, tok_d, order, 8, NULL, &n),
                 "draft_ids");
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_trim_candidates(tok_t, tok_d, order, -1, dids, &n),
                 "negative");
    int32_t only_merged[2] = {7, 6}; /* abc, ab: no drafter token has their bytes */
    EXPECT_NAMED(HSD_ERR_OUT_OF_RANGE, hsd_trim_candidates(tok_t, tok_d, only_merged, 2, dids, &n),
                 "no target token");
    assert_int_equal(hsd_trim_candidates(tok_t, tok_d, order, 8, dids, &n), HSD_OK);
    /* a b c ' ' in rank order (specials and merges out); drafter ids a=4, b=3, c=2, ' '=5 */
    assert_int_equal(n, 4);
    const int32_t want_t[4] = {2, 3, 4, 5}, want_d[4] = {4, 3, 2, 5};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(order[i], want_t[i]);
        assert_int_equal(dids[i], want_d[i]);
    }
}
static void row_hsd_trim_eval(void **state) {
    (void)state;
    const int64_t prefix[4] = {0, 5, 9, 10};
    hsd_trim_params p = hsd_trim_default_params();
    p.dim = 2;
    hsd_trim_result r;
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_trim_eval(NULL, 3, 10, 3, &p, 1, &r), "prefix");
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_trim_eval(prefix, 3, 10, 3, NULL, 1, &r), "params");
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_trim_eval(prefix, 3, 10, 3, &p, 1, NULL), "out");
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_trim_eval(prefix, 3, 10, 3, &p, 0, &r), "k 0");
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_trim_eval(prefix, 3, 10, 3, &p, 4, &r), "k 4");
    /* K = 2 of a 4-row head with d 2: C = 9/10, R = 1 - 2*2*2 / (2*2*4) = 1/2, U = their mean */
    assert_int_equal(hsd_trim_eval(prefix, 3, 10, 4, &p, 2, &r), HSD_OK);
    assert_int_equal(r.k, 2);
    assert_true(r.coverage == 0.9 && r.saving == 0.5 && fabs(r.utility - 0.7) < 1e-15);
}
static void row_hsd_trim_optimum(void **state) {
    (void)state;
    const int64_t prefix[4] = {0, 5, 9, 10};
    hsd_trim_params p = hsd_trim_default_params();
    hsd_trim_result r;
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_trim_optimum(NULL, 3, 10, 3, &p, &r), "prefix");
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_trim_optimum(prefix, 3, 10, 3, NULL, &r), "params");
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_trim_optimum(prefix, 3, 10, 3, &p, NULL), "out");
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_trim_optimum(prefix, 3, 10, 3, &p, &r), "hidden dim 0");
    p.dim = 4;
    EXPECT_NAMED(HSD_ERR_OUT_OF_RANGE, hsd_trim_optimum(prefix, 3, 0, 3, &p, &r), "no tokens");
    p.min_coverage = 0.95;
    EXPECT_NAMED(HSD_ERR_OUT_OF_RANGE, hsd_trim_optimum(prefix, 2, 10, 3, &p, &r), "0.9");
    /* alpha 1: coverage alone, so K* is the smallest K of the highest coverage */
    p.alpha = 1, p.min_coverage = 0;
    assert_int_equal(hsd_trim_optimum(prefix, 3, 10, 3, &p, &r), HSD_OK);
    assert_int_equal(r.k, 3);
    assert_true(r.coverage == 1.0 && r.k_min_feasible == 1);
}

/* ---- synthetic and inflated models ----------------------------------------------------- */

static void row_hsd_synth_shape_list(void **state) {
    (void)state;
    assert_non_null(strstr(hsd_synth_shape_list(), "llama-3.2-1b"));
}
static void row_hsd_synth_default_params(void **state) {
    (void)state;
    hsd_synth_params p = hsd_synth_default_params();
    assert_true(!p.shape && p.type == HSD_FTYPE_F32 && p.seed == 1 && p.tokenizer_ids == 0);
}
static void row_hsd_synth_init(void **state) {
    (void)state;
    hsd_synth_params p = hsd_synth_default_params();
    hsd_synth_model *m = (hsd_synth_model *)1;
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_synth_init(&p, NULL), "hsd_synth_init: out");
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_synth_init(NULL, &m), "params");
    assert_null(m);
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_synth_init(&p, &m), "no shape");
    p.shape = "gpt-5";
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_synth_init(&p, &m), "tiny-qwen2"); /* lists shapes */
    p.shape = "tiny", p.type = (hsd_ftype)99;
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_synth_init(&p, &m), "hsd_ftype");
}
static void row_hsd_synth_free(void **state) {
    (void)state;
    hsd_synth_free(NULL);
}
static void row_hsd_synth_weight_bytes(void **state) {
    (void)state;
    assert_int_equal(hsd_synth_weight_bytes(NULL), 0);
    hsd_synth_params p = hsd_synth_default_params();
    hsd_synth_model *f32, *bf16;
    p.shape = "tiny";
    assert_int_equal(hsd_synth_init(&p, &f32), HSD_OK);
    p.type = HSD_FTYPE_BF16;
    assert_int_equal(hsd_synth_init(&p, &bf16), HSD_OK);
    size_t a = hsd_synth_weight_bytes(f32), b = hsd_synth_weight_bytes(bf16);
    /* every tensor, vectors included, goes from 4 bytes an element to 2 */
    assert_true(a > 0 && 2 * b == a);
    hsd_synth_free(f32);
    hsd_synth_free(bf16);
}
static void row_hsd_synth_write_safetensors(void **state) {
    (void)state;
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_synth_write_safetensors(NULL, "/tmp"), "model");
    hsd_synth_params p = hsd_synth_default_params();
    hsd_synth_model *m;
    p.shape = "tiny", p.type = HSD_FTYPE_Q8_0;
    assert_int_equal(hsd_synth_init(&p, &m), HSD_OK);
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_synth_write_safetensors(m, NULL), "dir");
    EXPECT_NAMED(HSD_ERR_UNSUPPORTED, hsd_synth_write_safetensors(m, "/tmp/hsd_api_tools_q8"),
                 "Q8_0");
    hsd_synth_free(m);
    rmdir("/tmp/hsd_api_tools_q8");
}
static void row_hsd_synth_write_gguf_tok(void **state) {
    (void)state;
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_synth_write_gguf_tok(NULL, "/tmp/x.gguf", NULL), "model");
    hsd_synth_params p = hsd_synth_default_params();
    hsd_synth_model *m;
    p.shape = "tiny";
    assert_int_equal(hsd_synth_init(&p, &m), HSD_OK);
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_synth_write_gguf_tok(m, NULL, NULL), "path");
    EXPECT(HSD_ERR_IO, hsd_synth_write_gguf_tok(m, "/nonexistent-dir/m.gguf", NULL));
    hsd_synth_free(m);
}
static void row_hsd_synth_write_gguf_vocab(void **state) {
    (void)state;
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_synth_write_gguf_vocab(NULL, "/tmp/x.gguf", NULL, 0),
                 "model");
    hsd_synth_params p = hsd_synth_default_params();
    hsd_synth_model *m;
    p.shape = "tiny";
    assert_int_equal(hsd_synth_init(&p, &m), HSD_OK);
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_synth_write_gguf_vocab(m, NULL, NULL, 0), "path");
    EXPECT(HSD_ERR_IO, hsd_synth_write_gguf_vocab(m, "/nonexistent-dir/m.gguf", NULL,
                                                  HSD_GGUF_VOCAB_DROP_NORMALIZER));
    EXPECT(HSD_ERR_IO, hsd_synth_write_gguf_vocab(m, "/tmp/x.gguf", "/nonexistent/tok.json", 0));
    hsd_synth_free(m);
}
static void row_hsd_inflate_default_params(void **state) {
    (void)state;
    hsd_inflate_params p = hsd_inflate_default_params();
    assert_true(!p.shape && !p.tokenizer && p.n_layers == 0 && p.type == HSD_FTYPE_F32 &&
                p.gguf_vocab_flags == 0);
}
static void row_hsd_inflate_file(void **state) {
    (void)state;
    hsd_inflate_params p = hsd_inflate_default_params();
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_inflate_file(NULL, &p, "/tmp/o.gguf", NULL), "input");
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_inflate_file("m.bin", NULL, "/tmp/o.gguf", NULL),
                 "params");
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_inflate_file("m.bin", &p, NULL, NULL), "output");
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_inflate_file("m.bin", &p, "/tmp/o.gguf", NULL),
                 "no shape");
    p.shape = "tiny", p.type = (hsd_ftype)-1;
    EXPECT_NAMED(HSD_ERR_INVALID_ARG, hsd_inflate_file("m.bin", &p, "/tmp/o.gguf", NULL),
                 "hsd_ftype");
    p.type = HSD_FTYPE_F32;
    hsd_status s = hsd_inflate_file("/nonexistent/m.bin", &p, "/tmp/hsd_api_tools_o.gguf", NULL);
    assert_int_not_equal(s, HSD_OK);
    assert_non_null(strstr(hsd_last_error(), "/nonexistent/m.bin"));
}

/* ---- bridge benchmark ------------------------------------------------------------------ */

static void row_hsd_bridge_bench_default_params(void **state) {
    (void)state;
    hsd_bridge_bench_params p = hsd_bridge_bench_default_params();
    assert_true(p.k == 4 && p.rounds == 2000 && p.block == 25 && p.seed == 7 && p.stream == 0);
}
static void row_hsd_bridge_bench(void **state) {
    (void)state;
    const char *text = "abc ab abc ab abc ab abc ab abc ab abc ab abc ab abc ab";
    int32_t *tids, *dids;
    size_t nt, nd;
    assert_int_equal(hsd_tokenizer_encode_alloc(tok_t, text, strlen(text), false, &tids, &nt), 0);
    assert_int_equal(hsd_tokenizer_encode_alloc(tok_d, text, strlen(text), false, &dids, &nd), 0);
    hsd_bridge_bench_params p = hsd_bridge_bench_default_params();
    p.k = 2, p.rounds = 4, p.block = 2;
    double us[4];
    hsd_bridge_bench_result r;
    EXPECT_NAMED(HSD_ERR_INVALID_ARG,
                 hsd_bridge_bench(NULL, tok_d, tids, nt, dids, nd, 2, &p, us, &r), "target");
    EXPECT_NAMED(HSD_ERR_INVALID_ARG,
                 hsd_bridge_bench(tok_t, tok_d, tids, nt, NULL, nd, 2, &p, us, &r), "draft_src");
    EXPECT_NAMED(HSD_ERR_INVALID_ARG,
                 hsd_bridge_bench(tok_t, tok_d, tids, nt, dids, nd, 2, &p, NULL, &r), "us");
    EXPECT_NAMED(HSD_ERR_INVALID_ARG,
                 hsd_bridge_bench(tok_t, tok_d, tids, nt, dids, 2, 2, &p, us, &r), "k = 2");
    EXPECT_NAMED(HSD_ERR_OUT_OF_RANGE,
                 hsd_bridge_bench(tok_t, tok_d, tids, nt, dids, nd, (int32_t)nt + 1, &p, us, &r),
                 "context");
    p.rounds = 1; /* fewer than a block */
    EXPECT_NAMED(HSD_ERR_INVALID_ARG,
                 hsd_bridge_bench(tok_t, tok_d, tids, nt, dids, nd, 2, &p, us, &r), "rounds = 1");
    p.rounds = 4;
    /* the whole text committed, then the warm-up's 2 blocks of 2 rounds commit 1..k target
     * tokens of at most 3 bytes each */
    assert_int_equal(hsd_bridge_bench(tok_t, tok_d, tids, nt, dids, nd, (int32_t)nt, &p, us, &r),
                     HSD_OK);
    assert_true(r.context_bytes > strlen(text) && r.context_bytes <= strlen(text) + 4 * 2 * 3);
    for (int i = 0; i < 4; i++) assert_true(us[i] >= 0);
    hsd_free(tids);
    hsd_free(dids);
}

int main(void) {
    const struct CMUnitTest rows[] = {HSD_API_ROWS_TOOLS(HSD_API_ROW_CASE)};
    return hsd_api_rows_run("api_errors_tools", NULL, rows, sizeof rows / sizeof rows[0]);
}
