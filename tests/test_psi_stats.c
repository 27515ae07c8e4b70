/* lib/analysis/psi_stats and `hsd psi-stats`: every DP quantity (decompositions by id and by
 * surface, tree nodes, parts_max/min, n_max) checked against a recursive enumeration written here,
 * independent of the trie and the DP — on the paper's examples ('a'/'aa', 'hello' of Fig. 1,
 * 'hello_world' of Sec. 3.3), on random toy vocabularies, and on samples of real tokens
 * (gpt2 over llama2's tokens, qwen3 over itself); whole-vocabulary invariants,
 * the paper's Table 5 and the CLI are in test_psi_stats_cli.c. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hsd.h"
#include "lib/base/map.h"
#include "lib/analysis/psi_stats.h"
#include "tests/testutil.h"

/* ---- the reference: plain recursion over a multiplicity oracle ------------------------- */

/* How many drafter ids have surface p[0..len) (0 if none). */
typedef uint32_t (*mult_fn)(const void *ctx, const uint8_t *p, size_t len);

typedef struct brute {
    const uint8_t *s;
    size_t n;
    mult_fn mult;
    const void *ctx;
    double ids, surfaces, nodes;
    int pmax, pmin, prefix_max;
    long steps;
} brute;

static bool completable(const brute *b, size_t i) {
    if (i == b->n) return true;
    for (size_t l = 1; i + l <= b->n; l++)
        if (b->mult(b->ctx, b->s + i, l) && completable(b, i + l)) return true;
    return false;
}

/* Enumerates every drafter sequence whose concatenation is a prefix of s. */
static void rec(brute *b, size_t i, int parts, double weight) {
    b->steps++;
    if (i == b->n) {
        b->ids += weight;
        b->surfaces += 1;
        if (parts > b->pmax) b->pmax = parts;
        if (b->pmin == 0 || parts < b->pmin) b->pmin = parts;
        return;
    }
    if (parts > b->prefix_max) b->prefix_max = parts;
    if (completable(b, i)) b->nodes += weight;
    for (size_t l = 1; i + l <= b->n; l++) {
        uint32_t m = b->mult(b->ctx, b->s + i, l);
        if (m) rec(b, i + l, parts + 1, weight * m);
    }
}

static brute brute_run(const uint8_t *s, size_t n, mult_fn mult, const void *ctx) {
    brute b = {s, n, mult, ctx, 0, 0, 0, 0, 0, 0, 0};
    rec(&b, 0, 0, 1.0);
    return b;
}

/* Checks the DP (both counting modes) against the enumeration for one string. */
static void check_against_brute(const hsd_token_trie *tr, const uint8_t *s, size_t n, mult_fn mult,
                                const void *ctx) {
    brute b = brute_run(s, n, mult, ctx);
    hsd_psi_token t, u;
    assert_int_equal(hsd_psi_decompose(tr, s, n, NULL, &t), HSD_OK);
    hsd_psi_params distinct = {.distinct_surfaces = true};
    assert_int_equal(hsd_psi_decompose(tr, s, n, &distinct, &u), HSD_OK);
    if (t.count != b.ids || u.count != b.surfaces || t.nodes != b.nodes)
        fprintf(stderr, "'%.*s': dp %g/%g nodes %g, brute %g/%g nodes %g\n", (int)n, s, t.count,
                u.count, t.nodes, b.ids, b.surfaces, b.nodes);
    assert_true(t.count == b.ids);
    assert_true(u.count == b.surfaces);
    assert_true(t.nodes == b.nodes);
    assert_true((double)t.count_u64 == b.ids);
    assert_int_equal(t.parts_max, b.pmax);
    assert_int_equal(t.parts_min, b.pmin);
    assert_int_equal(u.parts_max, b.pmax);
    assert_int_equal(t.n_max, n ? b.prefix_max + 1 : 0);
    assert_true(t.n_max >= t.parts_max);
}

/* ---- toy vocabularies: a list of surfaces, one per id ------------------------------------ */

typedef struct toy {
    const char *const *w;
    int32_t n;
} toy;

static uint32_t toy_mult(const void *ctx, const uint8_t *p, size_t len) {
    const toy *v = ctx;
    uint32_t m = 0;
    for (int32_t i = 0; i < v->n; i++)
        if (v->w[i] && strlen(v->w[i]) == len && !memcmp(v->w[i], p, len)) m++;
    return m;
}

static hsd_token_trie *toy_trie(const toy *v) {
    const uint8_t *s[64];
    size_t len[64];
    assert_true(v->n <= 64);
    for (int32_t i = 0; i < v->n; i++) {
        s[i] = (const uint8_t *)v->w[i];
        len[i] = v->w[i] ? strlen(v->w[i]) : 0;
    }
    hsd_token_trie *tr = NULL;
    assert_int_equal(hsd_token_trie_build_strings(s, len, v->n, &tr), HSD_OK);
    return tr;
}

static hsd_psi_token decompose(const hsd_token_trie *tr, const char *s) {
    hsd_psi_token t;
    assert_int_equal(hsd_psi_decompose(tr, (const uint8_t *)s, strlen(s), NULL, &t), HSD_OK);
    return t;
}

/* Lemma 3.1's growth: over {a, aa}, a^n has Fibonacci(n+1) decompositions; over every run
 * a..a^L (a "complete" vocabulary) a^n has 2^(n-1). */
static void test_a_aa(void **state) {
    (void)state;
    const char *w[] = {"a", "aa"};
    toy v = {w, 2};
    hsd_token_trie *tr = toy_trie(&v);
    double fib[40] = {0, 1};
    for (int i = 2; i < 40; i++) fib[i] = fib[i - 1] + fib[i - 2];
    char s[40];
    for (int n = 1; n < 38; n++) {
        memset(s, 'a', (size_t)n);
        s[n] = 0;
        hsd_psi_token t = decompose(tr, s);
        assert_true(t.count == fib[n + 1]);
        assert_int_equal(t.parts_max, n);
        assert_int_equal(t.parts_min, (n + 1) / 2);
        assert_int_equal(t.n_max, n);
        if (n <= 20) check_against_brute(tr, (const uint8_t *)s, (size_t)n, toy_mult, &v);
    }
    assert_true(decompose(tr, "aaaa").count == 5); /* Fibonacci(5) */
    hsd_token_trie_free(tr);

    const char *c[16];
    char runs[16][17];
    for (int l = 1; l <= 16; l++) {
        memset(runs[l - 1], 'a', (size_t)l);
        runs[l - 1][l] = 0;
        c[l - 1] = runs[l - 1];
    }
    toy full = {c, 16};
    tr = toy_trie(&full);
    for (int n = 1; n <= 16; n++) {
        hsd_psi_token t = decompose(tr, runs[n - 1]);
        assert_true(t.count == ldexp(1.0, n - 1));
        /* every proper prefix of every composition is a tree node: 2^(n-1) of them */
        assert_true(t.nodes == ldexp(1.0, n - 1));
        if (n <= 14)
            check_against_brute(tr, (const uint8_t *)runs[n - 1], (size_t)n, toy_mult, &full);
    }
    hsd_token_trie_free(tr);
}

/* The paper's Figure 1: 'hello' over the 13 Qwen2 tokens it lists has 14 combinations, and
 * 16 drafter forward passes (non-leaf nodes plus one). */
static void test_paper_hello(void **state) {
    (void)state;
    const char *w[] = {"H",     "e",  "l",   "o",    "He", "Hel", "Hell",
                       "Hello", "el", "ell", "ello", "ll", "lo"};
    toy v = {w, 13};
    hsd_token_trie *tr = toy_trie(&v);
    hsd_psi_token t = decompose(tr, "Hello");
    assert_true(t.count == 14);
    assert_int_equal(t.count_u64, 14);
    assert_true(t.nodes == 16);
    assert_int_equal(t.parts_max, 5);
    assert_int_equal(t.parts_min, 1);
    check_against_brute(tr, (const uint8_t *)"Hello", 5, toy_mult, &v);
    hsd_token_trie_free(tr);
}

/* The paper's Sec. 3.3 example: D = {hello_, world, wo, rld}, T = D ∪ {hello_world}:
 * 'hello_world' is reached by two draft sequences and n_max = 3. */
static void test_paper_hello_world(void **state) {
    (void)state;
    const char *w[] = {"hello_", "world", "wo", "rld"};
    toy v = {w, 4};
    hsd_token_trie *tr = toy_trie(&v);
    const char *targets[] = {"hello_", "world", "wo", "rld", "hello_world"};
    int32_t n_max = 0;
    for (int i = 0; i < 5; i++) {
        hsd_psi_token t = decompose(tr, targets[i]);
        check_against_brute(tr, (const uint8_t *)targets[i], strlen(targets[i]), toy_mult, &v);
        if (t.n_max > n_max) n_max = t.n_max;
    }
    hsd_psi_token hw = decompose(tr, "hello_world");
    assert_true(hw.count == 2);
    assert_int_equal(hw.parts_max, 3);
    assert_int_equal(hw.parts_min, 2);
    assert_int_equal(n_max, 3);
    assert_true(decompose(tr, "world").count == 2); /* world, wo+rld */
    /* a target token with no decomposition counts 0; the lookahead still needs one draft */
    hsd_psi_token none = decompose(tr, "hello_x");
    assert_true(none.count == 0);
    assert_true(none.nodes == 0);
    assert_int_equal(none.parts_max, 0);
    assert_int_equal(none.n_max, 2); /* hello_ is a proper prefix: one more draft decides */
    hsd_token_trie_free(tr);
}

/* Ids sharing a surface count apart (ψ sums over id sequences) unless distinct_surfaces. */
static void test_shared_surfaces(void **state) {
    (void)state;
    const char *w[] = {"a", "b", "a", "ab", NULL, ""};
    toy v = {w, 6};
    hsd_token_trie *tr = toy_trie(&v);
    hsd_psi_token t = decompose(tr, "aab"); /* a a b (x4), a ab (x2) */
    assert_true(t.count == 6);
    hsd_psi_params d = {.distinct_surfaces = true};
    hsd_psi_token u;
    assert_int_equal(hsd_psi_decompose(tr, (const uint8_t *)"aab", 3, &d, &u), HSD_OK);
    assert_true(u.count == 2);
    check_against_brute(tr, (const uint8_t *)"aab", 3, toy_mult, &v);
    /* empty string: nothing to decompose */
    assert_int_equal(hsd_psi_decompose(tr, NULL, 0, NULL, &t), HSD_OK);
    assert_int_equal(t.n_max, 0);
    /* bad arguments */
    assert_int_equal(hsd_psi_decompose(NULL, (const uint8_t *)"a", 1, NULL, &t),
                     HSD_ERR_INVALID_ARG);
    assert_int_equal(hsd_psi_decompose(tr, NULL, 3, NULL, &t), HSD_ERR_INVALID_ARG);
    assert_int_equal(hsd_psi_decompose(tr, (const uint8_t *)"a", 1, NULL, NULL),
                     HSD_ERR_INVALID_ARG);
    hsd_psi_stats s;
    assert_int_equal(hsd_psi_stats_compute(NULL, tr, NULL, &s), HSD_ERR_INVALID_ARG);
    assert_non_null(strstr(hsd_last_error(), "hsd_psi_stats_compute: target tokenizer"));
    hsd_token_trie_free(tr);
}

/* A 2000-byte string takes the heap path; counts overflow uint64 and saturate. */
static void test_long_and_overflow(void **state) {
    (void)state;
    const char *w[] = {"a", "aa"};
    toy v = {w, 2};
    hsd_token_trie *tr = toy_trie(&v);
    static char s[2001];
    memset(s, 'a', 2000);
    s[2000] = 0;
    hsd_psi_token t = decompose(tr, s);
    assert_int_equal(t.count_u64, UINT64_MAX);
    assert_true(t.count > 1e300 || isinf(t.count)); /* Fibonacci(2001) ~ 4e417: past double */
    assert_int_equal(t.parts_max, 2000);
    /* Fibonacci(100) = 354224848179261915075 > 2^64: saturated u64, double close */
    s[99] = 0;
    t = decompose(tr, s);
    assert_int_equal(t.count_u64, UINT64_MAX);
    assert_true(fabs(t.count / 354224848179261915075.0 - 1) < 1e-12);
    /* Fibonacci(93) = 12200160415121876738 < 2^64: exact in u64 */
    s[92] = 0;
    t = decompose(tr, s);
    assert_true(t.count_u64 == 12200160415121876738ULL);
    hsd_token_trie_free(tr);
}

/* Random toy vocabularies over a 3-letter alphabet against the enumeration. */
static void test_random_toys(void **state) {
    (void)state;
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    char words[10][6];
    const char *w[10];
    for (int trial = 0; trial < 400; trial++) {
        int nw = 1 + (int)(hsd_mix64(x++) % 10);
        for (int i = 0; i < nw; i++) {
            int len = 1 + (int)(hsd_mix64(x++) % 4);
            for (int k = 0; k < len; k++) words[i][k] = (char)('a' + hsd_mix64(x++) % 3);
            words[i][len] = 0;
            w[i] = words[i];
        }
        toy v = {w, nw};
        hsd_token_trie *tr = toy_trie(&v);
        for (int k = 0; k < 5; k++) {
            char s[16];
            int n = (int)(hsd_mix64(x++) % 13);
            for (int j = 0; j < n; j++) s[j] = (char)('a' + hsd_mix64(x++) % 3);
            check_against_brute(tr, (const uint8_t *)s, (size_t)n, toy_mult, &v);
        }
        hsd_token_trie_free(tr);
    }
}

/* n_max by the paper's definition, simulated: draft sequences are sampled one token at a time
 * and drafting stops as soon as the first target token is determined — with the paper's
 * tokenization (longest target-token prefix first), when the drafts' concatenation is no
 * longer a proper prefix of any target token. The most drafts any sequence needs is n_max. */
static bool proper_prefix_of_some(const toy *t, const char *c, size_t n) {
    for (int32_t i = 0; i < t->n; i++)
        if (strlen(t->w[i]) > n && !memcmp(t->w[i], c, n)) return true;
    return false;
}

static int simulate_lookahead(const toy *d, const toy *t, char *c, size_t n, int drafts) {
    if (!proper_prefix_of_some(t, c, n)) return drafts; /* determined: stop sampling */
    int most = drafts;
    for (int32_t i = 0; i < d->n; i++) {
        size_t l = strlen(d->w[i]);
        memcpy(c + n, d->w[i], l);
        int k = simulate_lookahead(d, t, c, n + l, drafts + 1);
        if (k > most) most = k;
    }
    return most;
}

/* The pair's n_max from the DP; *parts gets the largest parts_max (the most drafts in an exact
 * decomposition), which is NOT the paper's lookahead in general. */
static int32_t pair_n_max(const toy *d, const toy *t, int32_t *parts) {
    hsd_token_trie *tr = toy_trie(d);
    int32_t m = 0, p = 0;
    for (int32_t i = 0; i < t->n; i++) {
        hsd_psi_token k = decompose(tr, t->w[i]);
        if (k.n_max > m) m = k.n_max;
        if (k.parts_max > p) p = k.parts_max;
    }
    hsd_token_trie_free(tr);
    if (parts) *parts = p;
    return m;
}

static void test_n_max_definition(void **state) {
    (void)state;
    char c[256];
    /* the paper's example: 3 */
    const char *dw[] = {"hello_", "world", "wo", "rld"};
    const char *tw[] = {"hello_", "world", "wo", "rld", "hello_world"};
    toy d = {dw, 4}, t = {tw, 5};
    assert_int_equal(simulate_lookahead(&d, &t, c, 0, 0), 3);
    assert_int_equal(pair_n_max(&d, &t, NULL), 3);
    /* random pairs over {a, b}. The drafter need not hold every letter: drafting stops once
     * the concatenation leaves the target tokens' prefixes, so every sequence ends. */
    uint64_t x = 12345;
    char dwords[8][6], twords[10][9];
    const char *dp[8], *tp[10];
    int differs = 0; /* trials where n_max is not simply the longest target token */
    int parts_differs = 0;
    for (int trial = 0; trial < 400; trial++) {
        int nd = 1 + (int)(hsd_mix64(x++) % 7), nt = 1 + (int)(hsd_mix64(x++) % 9);
        for (int i = 0; i < nd; i++) {
            int len = 1 + (int)(hsd_mix64(x++) % 4);
            for (int k = 0; k < len; k++) dwords[i][k] = (char)('a' + (int)(hsd_mix64(x++) % 2));
            dwords[i][len] = 0;
            dp[i] = dwords[i];
        }
        size_t longest = 0;
        for (int i = 0; i < nt; i++) {
            int len = 1 + (int)(hsd_mix64(x++) % 7);
            for (int k = 0; k < len; k++) twords[i][k] = (char)('a' + (int)(hsd_mix64(x++) % 2));
            twords[i][len] = 0;
            tp[i] = twords[i];
            if ((size_t)len > longest) longest = (size_t)len;
        }
        toy dd = {dp, nd}, tt = {tp, nt};
        int sim = simulate_lookahead(&dd, &tt, c, 0, 0), parts;
        assert_int_equal(pair_n_max(&dd, &tt, &parts), sim);
        if ((size_t)sim != longest) differs++;
        if (parts != sim) parts_differs++;
    }
    printf("n_max differs from the longest target token in %d of 400 random pairs, from the "
           "most drafts in an exact decomposition in %d\n",
           differs, parts_differs);
    assert_true(differs > 50);
    assert_true(parts_differs > 0);
}

/* ---- real tokenizers ----------------------------------------------------------------------- */

static hsd_tokenizer *load(const char *rel) {
    const char *p = hsd_test_path(rel);
    if (!hsd_test_require(p)) return NULL;
    hsd_tokenizer *t = NULL;
    assert_int_equal(hsd_tokenizer_load_file(p, &t), HSD_OK);
    return t;
}

/* Surface -> number of text ids with it, built from the tokenizer directly (not the trie). */
typedef struct surface_counts {
    hsd_strmap m;
    size_t max_len;
} surface_counts;

static void counts_build(const hsd_tokenizer *d, surface_counts *c) {
    memset(c, 0, sizeof *c);
    assert_int_equal(hsd_strmap_init(&c->m, 1 << 16), 0);
    for (int32_t id = 0; id < hsd_tokenizer_vocab_size(d); id++) {
        if (!hsd_tokenizer_id_to_token(d, id) || hsd_tokenizer_is_special(d, id)) continue;
        size_t len;
        const uint8_t *b = hsd_tokenizer_token_bytes(d, id, &len);
        if (!b || !len) continue;
        int32_t old = hsd_strmap_get(&c->m, b, len);
        assert_int_equal(hsd_strmap_put(&c->m, b, len, old < 0 ? 1 : old + 1), 0);
        if (len > c->max_len) c->max_len = len;
    }
}

static uint32_t counts_mult(const void *ctx, const uint8_t *p, size_t len) {
    const surface_counts *c = ctx;
    if (len > c->max_len) return 0;
    int32_t v = hsd_strmap_get(&c->m, p, len);
    return v < 0 ? 0 : (uint32_t)v;
}

/* A deterministic sample of target tokens small enough to enumerate, against the brute
 * force; returns how many were checked. */
static int sample_pair(const hsd_tokenizer *t, const hsd_tokenizer *d, int32_t stride,
                       double max_surface_seqs) {
    hsd_token_trie *tr = NULL;
    assert_int_equal(hsd_token_trie_build(d, &tr), HSD_OK);
    surface_counts c;
    counts_build(d, &c);
    hsd_psi_params distinct = {.distinct_surfaces = true};
    int checked = 0, skipped = 0;
    for (int32_t id = 0; id < hsd_tokenizer_vocab_size(t); id += stride) {
        if (!hsd_tokenizer_id_to_token(t, id) || hsd_tokenizer_is_special(t, id)) continue;
        size_t len;
        const uint8_t *b = hsd_tokenizer_token_bytes(t, id, &len);
        if (!b || !len) continue;
        hsd_psi_token u;
        assert_int_equal(hsd_psi_decompose(tr, b, len, &distinct, &u), HSD_OK);
        if (u.count > max_surface_seqs || len > 24) { /* enumeration would take too long */
            skipped++;
            continue;
        }
        check_against_brute(tr, b, len, counts_mult, &c);
        checked++;
    }
    printf("checked %d target tokens against enumeration (%d too large to enumerate)\n", checked,
           skipped);
    hsd_strmap_free(&c.m);
    hsd_token_trie_free(tr);
    return checked;
}

static void test_real_sample_gpt2_over_llama2(void **state) {
    (void)state;
    hsd_tokenizer *t = load("tokenizers/gpt2/tokenizer.json");
    hsd_tokenizer *d = t ? load("tokenizers/llama2/tokenizer.json") : NULL;
    if (!t || !d) {
        hsd_tokenizer_free(t);
        skip();
    }
    assert_true(sample_pair(t, d, 97, 3000) > 300);
    hsd_tokenizer_free(t);
    hsd_tokenizer_free(d);
}

static void test_real_sample_qwen3(void **state) {
    (void)state;
    hsd_tokenizer *t = load("tokenizers/qwen3/tokenizer.json");
    if (!t) skip();
    assert_true(sample_pair(t, t, 211, 3000) > 500);
    hsd_tokenizer_free(t);
}

static void test_summary_percentiles(void **state) {
    (void)state;
    /* numpy: percentile([1,2,3,4,10], [25,50,75]) = 2, 3, 4; mean 4, sample sd sqrt(12.5) */
    double v[] = {10, 3, 1, 4, 2};
    hsd_psi_summary s;
    hsd_psi_summarize(v, 5, &s);
    assert_true(s.p25 == 2 && s.median == 3 && s.p75 == 4 && s.min == 1 && s.max == 10);
    assert_true(s.mean == 4);
    assert_true(fabs(s.sd - sqrt(12.5)) < 1e-12);
    /* interpolation: percentile([1,2,3,4], 25) = 1.75, median 2.5 */
    double w[] = {4, 1, 3, 2};
    hsd_psi_summarize(w, 4, &s);
    assert_true(s.p25 == 1.75 && s.median == 2.5 && s.p75 == 3.25);
    hsd_psi_summarize(w, 0, &s);
    assert_int_equal(s.n, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_aa),
        cmocka_unit_test(test_paper_hello),
        cmocka_unit_test(test_paper_hello_world),
        cmocka_unit_test(test_shared_surfaces),
        cmocka_unit_test(test_long_and_overflow),
        cmocka_unit_test(test_random_toys),
        cmocka_unit_test(test_n_max_definition),
        cmocka_unit_test(test_summary_percentiles),
        cmocka_unit_test(test_real_sample_gpt2_over_llama2),
        cmocka_unit_test(test_real_sample_qwen3),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
