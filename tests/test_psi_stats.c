/* lib/psi_stats and `hsd psi-stats`: every DP quantity (decompositions by id and by surface,
 * tree nodes, parts_max/min, n_max) checked against a recursive enumeration written here,
 * independent of the trie and the DP — on the paper's examples ('a'/'aa', 'hello' of Fig. 1,
 * 'hello_world' of Sec. 3.3), on random toy vocabularies, and on samples of real tokens
 * (gpt2 over llama2's tokens, qwen3 over itself); whole-vocabulary invariants and the paper's
 * Table 5 for qwen3; the CLI's --json checked for consistency; bad arguments. */
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
    assert_non_null(strstr(hsd_last_error(), "psi stats"));
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

/* Whole qwen3 vocabulary over itself: invariants, and the paper's Table 5 (Qwen2-7B, the
 * 150,000 shortest tokens; Qwen3 shares the base vocabulary). */
static void test_qwen3_table5(void **state) {
    (void)state;
    hsd_tokenizer *t = load("tokenizers/qwen3/tokenizer.json");
    if (!t) skip();
    hsd_token_trie *tr = NULL;
    assert_int_equal(hsd_token_trie_build(t, &tr), HSD_OK);
    hsd_psi_stats s;
    assert_int_equal(hsd_psi_stats_compute(t, tr, NULL, &s), HSD_OK);
    assert_int_equal(s.n_tokens, hsd_token_trie_n_tokens(tr));
    assert_int_equal(s.n_none, 0); /* every token is at least its own decomposition */
    int32_t n_max = 0, saturated = 0;
    for (int32_t id = 0; id < s.n_ids; id++) {
        if (!s.len[id]) continue;
        const hsd_psi_token *k = &s.tok[id];
        assert_true(k->count >= 1);
        /* Lemma 3.1: at most 2^(len-1) */
        assert_true(k->count <= ldexp(1.0, (int)s.len[id] - 1));
        /* qwen3 has all 256 single bytes: the longest split is byte by byte */
        assert_int_equal(k->parts_max, (int)s.len[id]);
        assert_int_equal(k->n_max, (int)s.len[id]);
        assert_true(k->nodes >= 1);
        if (k->count >= 18446744073709551616.0) {
            saturated++;
            assert_true(k->count_u64 == UINT64_MAX);
        } else if (k->count < 9007199254740992.0) {
            assert_true((double)k->count_u64 == k->count);
        }
        if (k->n_max > n_max) n_max = k->n_max;
    }
    assert_int_equal(saturated, s.n_saturated);
    assert_int_equal(n_max, s.n_max);
    assert_int_equal(s.n_max, (int)s.max_len);

    int32_t *ids;
    size_t n;
    assert_int_equal(hsd_psi_ids_by_length(&s, &ids, &n), HSD_OK);
    assert_int_equal(n, (size_t)s.n_tokens);
    for (size_t i = 1; i < n; i++)
        assert_true(s.len[ids[i - 1]] < s.len[ids[i]] ||
                    (s.len[ids[i - 1]] == s.len[ids[i]] && ids[i - 1] < ids[i]));
    const size_t N = 150000;
    double *v = malloc(N * sizeof *v);
    for (size_t i = 0; i < N; i++) v[i] = s.len[ids[i]];
    hsd_psi_summary len;
    hsd_psi_summarize(v, N, &len);
    for (size_t i = 0; i < N; i++) v[i] = s.tok[ids[i]].count;
    hsd_psi_summary cnt;
    hsd_psi_summarize(v, N, &cnt);
    printf("shortest 150000: length mean %.2f sd %.2f; decompositions mean %.2f sd %.2f min %g "
           "p25 %g median %g p75 %g max %g\n",
           len.mean, len.sd, cnt.mean, cnt.sd, cnt.min, cnt.p25, cnt.median, cnt.p75, cnt.max);
    /* Table 5, token length: mean 6.21, sd 2.87, min 1, p25 4, median 6, p75 8, max 17 */
    assert_true(fabs(len.mean - 6.21) < 0.005);
    assert_true(fabs(len.sd - 2.87) < 0.005);
    assert_true(len.min == 1 && len.p25 == 4 && len.median == 6 && len.p75 == 8 && len.max == 17);
    /* Table 5, combinations: min 1, p25 7, median 15, p75 56, max 65,536 */
    assert_true(cnt.min == 1 && cnt.p25 == 7 && cnt.median == 15 && cnt.p75 == 56);
    assert_true(cnt.max == 65536);
    /* mean 144.31: which of the 310 tokens of 17 bytes fall into the 150,000 is a tie the
     * paper does not break; the paper's mean must lie between the lightest and the heaviest
     * choice of them */
    uint32_t last = s.len[ids[N - 1]];
    size_t lo = 0, hi;
    while (s.len[ids[lo]] < last) lo++;
    for (hi = lo; hi < n && s.len[ids[hi]] == last; hi++) {
    }
    double base = 0;
    for (size_t i = 0; i < lo; i++) base += s.tok[ids[i]].count;
    double *tie = malloc((hi - lo) * sizeof *tie);
    for (size_t i = lo; i < hi; i++) tie[i - lo] = s.tok[ids[i]].count;
    hsd_psi_summary tmp;
    hsd_psi_summarize(tie, hi - lo, &tmp); /* sorts */
    double light = base, heavy = base;
    for (size_t i = 0; i < N - lo; i++) {
        light += tie[i];
        heavy += tie[hi - lo - 1 - i];
    }
    printf("tie at %u bytes: %zu of %zu taken; mean between %.2f and %.2f (paper 144.31)\n", last,
           N - lo, hi - lo, light / N, heavy / N);
    assert_true(light / N <= 144.31 && 144.31 <= heavy / N);
    free(tie);
    free(v);
    free(ids);

    /* per-length rows agree with the per-token results */
    hsd_psi_length_row *rows;
    size_t nr;
    assert_int_equal(hsd_psi_by_length(&s, &rows, &nr), HSD_OK);
    int64_t total = 0;
    for (size_t i = 0; i < nr; i++) {
        total += rows[i].tokens;
        assert_int_equal(rows[i].n_max, (int)rows[i].len);
        assert_true(rows[i].count.max <= ldexp(1.0, (int)rows[i].len - 1));
        if (i) assert_true(rows[i].len > rows[i - 1].len);
    }
    assert_int_equal(total, s.n_tokens);
    assert_int_equal(rows[0].len, 1);
    assert_int_equal(rows[0].tokens, 256); /* the byte alphabet */
    assert_true(rows[0].count.mean == 1);
    free(rows);
    hsd_psi_stats_free(&s);
    hsd_token_trie_free(tr);
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

/* ---- the CLI ------------------------------------------------------------------------------- */

/* Runs a command that must fail: returns its exit status; *err gets stderr+stdout. */
static int run_failing(const char *cmd, char *err, size_t cap) {
    char full[2048];
    snprintf(full, sizeof full, "%s 2>&1", cmd);
    FILE *p = popen(full, "r");
    assert_non_null(p);
    size_t n = fread(err, 1, cap - 1, p);
    err[n] = 0;
    int rc = pclose(p);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static void test_cli_json(void **state) {
    (void)state;
    const char *tp = hsd_test_path("models/stories260K/tok512.bin");
    const char *dp = hsd_test_path("models/babyllama-tok105/tok105.bin");
    HSD_REQUIRE_FILE(tp);
    HSD_REQUIRE_FILE(dp);
    char svg[] = "/tmp/hsd_psi_svg_XXXXXX";
    int fd = mkstemp(svg);
    assert_true(fd >= 0);
    close(fd);
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "'%s' psi-stats --target-tokenizer '%s' --draft-tokenizer '%s' "
             "--json --svg '%s' --shortest 300",
             hsd_test_cli(), tp, dp, svg);
    char *out = hsd_test_run(cmd);
    json_error_t e;
    json_t *o = json_loads(out, 0, &e);
    if (!o) fprintf(stderr, "bad JSON (%s): %s\n", e.text, out);
    assert_non_null(o);

    /* the same numbers in process */
    hsd_tokenizer *t = NULL, *d = NULL;
    assert_int_equal(hsd_tokenizer_load_file(tp, &t), HSD_OK);
    assert_int_equal(hsd_tokenizer_load_file(dp, &d), HSD_OK);
    hsd_token_trie *tr = NULL;
    assert_int_equal(hsd_token_trie_build(d, &tr), HSD_OK);
    hsd_psi_stats s;
    assert_int_equal(hsd_psi_stats_compute(t, tr, NULL, &s), HSD_OK);

    int tokens = (int)json_integer_value(json_object_get(o, "target_tokens"));
    assert_int_equal(tokens, s.n_tokens);
    assert_int_equal(json_integer_value(json_object_get(o, "no_decomposition")), s.n_none);
    assert_int_equal(json_integer_value(json_object_get(o, "n_max")), s.n_max);
    assert_string_equal(json_string_value(json_object_get(o, "count_mode")), "ids");
    /* tok105 is character-level with no byte fallback: the tok512 tokens it cannot spell are
     * exactly the 168 of `hsd pair`'s T -> D* check (docs/PAIR.md), all single bytes */
    assert_int_equal(s.n_none, 168);
    json_t *rows = json_object_get(o, "by_length");
    assert_true(json_is_array(rows));
    int sum = 0, none = 0, n_max = 0;
    double max = 0;
    for (size_t i = 0; i < json_array_size(rows); i++) {
        json_t *r = json_array_get(rows, i);
        sum += (int)json_integer_value(json_object_get(r, "tokens"));
        none += (int)json_integer_value(json_object_get(r, "none"));
        int nm = (int)json_integer_value(json_object_get(r, "n_max"));
        if (nm > n_max) n_max = nm;
        double mx = json_real_value(json_object_get(r, "max"));
        if (mx > max) max = mx;
        assert_true(json_real_value(json_object_get(r, "median")) <= mx);
    }
    assert_int_equal(sum, tokens);
    assert_int_equal(none, s.n_none);
    assert_int_equal(n_max, s.n_max);
    json_t *all = json_object_get(o, "all"), *sh = json_object_get(o, "shortest");
    assert_int_equal(json_integer_value(json_object_get(all, "n")), tokens);
    assert_int_equal(json_integer_value(json_object_get(sh, "n")), 300);
    double all_max =
        json_real_value(json_object_get(json_object_get(all, "decompositions"), "max"));
    assert_true(all_max == max);
    assert_true(all_max == json_real_value(
                               json_object_get(json_object_get(o, "max_decompositions"), "count")));
    assert_true(json_real_value(json_object_get(json_object_get(sh, "length"), "max")) <=
                json_real_value(json_object_get(json_object_get(all, "length"), "max")));
    /* the SVG has one box per length row */
    char *svgtext = hsd_test_read_file(svg, NULL);
    assert_non_null(svgtext);
    assert_non_null(strstr(svgtext, "<svg"));
    assert_non_null(strstr(svgtext, "</svg>"));
    size_t boxes = 0;
    for (const char *q = svgtext; (q = strstr(q, "fill=\"#6a9fd8\"")); q++) boxes++;
    assert_int_equal(boxes, json_array_size(rows) + 1); /* + the legend's */
    free(svgtext);
    unlink(svg);

    /* `hsd pair` reports the same ψ numbers */
    snprintf(cmd, sizeof cmd, "'%s' pair --target-tokenizer '%s' --draft-tokenizer '%s' --json",
             hsd_test_cli(), tp, dp);
    char *pout = hsd_test_run(cmd);
    json_t *po = json_loads(pout, JSON_ALLOW_NUL, &e); /* counterexample "\u0000" */
    assert_non_null(po);
    json_t *psi = json_object_get(po, "psi_cost");
    assert_true(json_is_object(psi));
    assert_int_equal(json_integer_value(json_object_get(psi, "target_tokens")), s.n_tokens);
    assert_int_equal(json_integer_value(json_object_get(psi, "no_decomposition")), s.n_none);
    assert_int_equal(json_integer_value(json_object_get(psi, "n_max")), s.n_max);
    assert_true(json_real_value(json_object_get(psi, "max")) == all_max);
    assert_true(json_real_value(json_object_get(psi, "median")) ==
                json_real_value(json_object_get(json_object_get(all, "decompositions"), "median")));
    json_decref(po);
    free(pout);

    hsd_psi_stats_free(&s);
    hsd_token_trie_free(tr);
    hsd_tokenizer_free(t);
    hsd_tokenizer_free(d);
    json_decref(o);
    free(out);
}

/* A llama2.c tokenizer.bin with a 1,500-byte token over {a, aa}: its count (about 1e313)
 * is past DBL_MAX; the CLI still writes valid JSON ("inf") and an SVG. */
static void write_entry(FILE *f, const char *s, int32_t len) {
    float score = 0.0f;
    assert_int_equal(fwrite(&score, sizeof score, 1, f), 1);
    assert_int_equal(fwrite(&len, sizeof len, 1, f), 1);
    assert_int_equal(fwrite(s, 1, (size_t)len, f), (size_t)len);
}

static void test_cli_huge_count(void **state) {
    (void)state;
    char path[] = "/tmp/hsd_psi_tok_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "wb");
    assert_non_null(f);
    static char run[1500];
    memset(run, 'a', sizeof run);
    int32_t max_len = (int32_t)sizeof run;
    assert_int_equal(fwrite(&max_len, sizeof max_len, 1, f), 1);
    write_entry(f, "<unk>", 5);
    write_entry(f, "\n<s>\n", 5);
    write_entry(f, "\n</s>\n", 6);
    write_entry(f, "a", 1);
    write_entry(f, "aa", 2);
    write_entry(f, run, max_len);
    assert_int_equal(fclose(f), 0);
    char bin[64], svg[64], cmd[1024];
    snprintf(bin, sizeof bin, "%s.bin", path);
    assert_int_equal(rename(path, bin), 0);
    snprintf(svg, sizeof svg, "%s.svg", path);
    snprintf(cmd, sizeof cmd, "'%s' psi-stats -T '%s' -D '%s' --json --svg '%s'", hsd_test_cli(),
             bin, bin, svg);
    char *out = hsd_test_run(cmd);
    json_error_t e;
    json_t *o = json_loads(out, 0, &e);
    if (!o) fprintf(stderr, "bad JSON (%s): %s\n", e.text, out);
    assert_non_null(o);
    json_t *mx = json_object_get(o, "max_decompositions");
    assert_int_equal(json_integer_value(json_object_get(mx, "len")), 1500);
    assert_string_equal(json_string_value(json_object_get(mx, "count")), "inf");
    assert_int_equal(json_integer_value(json_object_get(o, "above_uint64")), 1);
    assert_int_equal(json_integer_value(json_object_get(o, "n_max")), 1500);
    /* "aa": a a, aa */
    json_t *rows = json_object_get(o, "by_length");
    assert_int_equal(json_array_size(rows), 3);
    assert_true(json_real_value(json_object_get(json_array_get(rows, 1), "max")) == 2);
    char *svgtext = hsd_test_read_file(svg, NULL);
    assert_non_null(svgtext);
    assert_null(strstr(svgtext, "nan"));
    assert_null(strstr(svgtext, "inf"));
    free(svgtext);
    json_decref(o);
    free(out);
    unlink(bin);
    unlink(svg);
}

static void test_cli_errors(void **state) {
    (void)state;
    const char *dp = hsd_test_path("models/babyllama-tok105/tok105.bin");
    HSD_REQUIRE_FILE(dp);
    char cmd[2048], err[8192];
    snprintf(cmd, sizeof cmd,
             "'%s' psi-stats --draft-tokenizer '%s' --target-tokenizer "
             "/nonexistent/tok.json",
             hsd_test_cli(), dp);
    assert_int_equal(run_failing(cmd, err, sizeof err), 1);
    assert_non_null(strstr(err, "/nonexistent/tok.json"));
    assert_non_null(strstr(err, "target tokenizer"));

    snprintf(cmd, sizeof cmd, "'%s' psi-stats --draft-tokenizer '%s'", hsd_test_cli(), dp);
    assert_int_equal(run_failing(cmd, err, sizeof err), 2);
    assert_non_null(strstr(err, "--target-tokenizer"));

    snprintf(cmd, sizeof cmd, "'%s' psi-stats -D '%s' -T '%s' --shortest x", hsd_test_cli(), dp,
             dp);
    assert_int_equal(run_failing(cmd, err, sizeof err), 2);
    assert_non_null(strstr(err, "--shortest"));

    snprintf(cmd, sizeof cmd, "'%s' psi-stats -D '%s' -T '%s' --bogus", hsd_test_cli(), dp, dp);
    assert_int_equal(run_failing(cmd, err, sizeof err), 2);
    assert_non_null(strstr(err, "--bogus"));

    snprintf(cmd, sizeof cmd, "'%s' psi-stats -D '%s' -T '%s' --svg /nonexistent/dir/f.svg",
             hsd_test_cli(), dp, dp);
    assert_int_equal(run_failing(cmd, err, sizeof err), 1);
    assert_non_null(strstr(err, "/nonexistent/dir/f.svg"));

    /* a file that is not a tokenizer */
    snprintf(cmd, sizeof cmd, "'%s' psi-stats -D '%s' -T '%s'", hsd_test_cli(), dp,
             hsd_test_src_path("CMakeLists.txt"));
    assert_int_equal(run_failing(cmd, err, sizeof err), 1);
    assert_non_null(strstr(err, "hsd psi-stats: target tokenizer"));
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
        cmocka_unit_test(test_qwen3_table5),
        cmocka_unit_test(test_cli_json),
        cmocka_unit_test(test_cli_huge_count),
        cmocka_unit_test(test_cli_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
