/* Forward-pass semantics: a multi-token chain, a token tree and truncate-then-refeed all give
 * the logits of feeding the same tokens one at a time. Runs on the real stories260K model
 * and on synthetic shapes (Llama 3 rope scaling, Qwen2 biases + tied head, Q8_0, BF16). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hsd.h"
#include "hsd_tools.h"
#include "lib/base/rng.h"
#include "models/synth.h"
#include "tests/testutil.h"

typedef struct fixture {
    const char *label;
    hsd_model *m;
    hsd_synth_model *synth;
} fixture;

static hsd_model *wrap_tf(hsd_transformer *tf) {
    hsd_model_iface it = {HSD_MODEL_IFACE_INIT};
    hsd_tf_iface(tf, &it);
    hsd_model *m;
    assert_int_equal(hsd_model_from_iface(&it, &m), HSD_OK);
    return m;
}

static bool open_fixture(int which, fixture *f) {
    memset(f, 0, sizeof *f);
    static const char *shapes[] = {"tiny", "tiny-qwen2", "tiny", "tiny-qwen2", "", "small",
                                   "tiny-qwen2", "small"};
    static const hsd_dtype types[] = {HSD_DT_F32, HSD_DT_F32, HSD_DT_Q8_0, HSD_DT_BF16, HSD_DT_F32,
                                      HSD_DT_F32, HSD_DT_BF16, HSD_DT_BF16};
    /* "synth small f32" reaches the OpenBLAS sgemm path (n >= 32 tokens at once) */
    static const char *labels[] = {"synth tiny f32", "synth tiny-qwen2 f32", "synth tiny q8_0",
                                   "synth tiny-qwen2 bf16", "", "synth small f32",
                                   "synth tiny-qwen2 bf16, Q8_0 KV cache", "synth small bf16, Q4_0 KV cache (rotated: head_dim 64)"};
    if (which == 4) {
        const char *p = hsd_test_path("models/stories260K/stories260K.bin");
        if (!hsd_test_require(p)) return false;
        f->label = "stories260K";
        assert_int_equal(hsd_model_load(p, NULL, &f->m), HSD_OK);
        return true;
    }
    f->label = labels[which];
    assert_int_equal(hsd_synth_create(shapes[which], types[which], 7 + which, &f->synth), HSD_OK);
    hsd_transformer *tf;
    /* the sgemm fixture's tolerance measures sgemm against the row kernels in fp32; an F16
     * cache would round two nearly equal keys apart and measure that rounding instead (the
     * other fixtures are bit-identical with the default F16 cache) */
    hsd_model_params p = hsd_model_default_params();
    if (which == 5) p.kv_type = HSD_KV_F32;
    if (which == 6) p.kv_type = HSD_KV_Q8_0; /* the same invariances with a quantised cache */
    if (which == 7) p.kv_type = HSD_KV_Q4_0;
    assert_int_equal(hsd_synth_to_transformer(f->synth, &p, &tf), HSD_OK);
    f->m = wrap_tf(tf);
    return true;
}

static void close_fixture(fixture *f) {
    hsd_model_free(f->m);
    hsd_synth_free(f->synth);
}

#define N_FIXTURES 8

static double rel_err(const float *a, const float *b, size_t n) {
    double mx = 0, scale = 1e-6;
    for (size_t i = 0; i < n; i++) {
        mx = fmax(mx, fabs((double)a[i] - b[i]));
        scale = fmax(scale, fabs((double)b[i]));
    }
    return mx / scale;
}

static void random_tokens(hsd_rng *r, int32_t *t, int n, int32_t V) {
    for (int i = 0; i < n; i++) t[i] = (int32_t)(hsd_rng_u32(r) % (uint32_t)V);
}

static void test_chain_equals_one_at_a_time(void **state) {
    (void)state;
    for (int w = 0; w < N_FIXTURES; w++) {
        fixture f;
        if (!open_fixture(w, &f)) continue;
        int32_t V = hsd_model_vocab_size(f.m);
        hsd_rng r;
        hsd_rng_init(&r, 11, (uint64_t)w);
        enum { T = 40 }; /* > 32: the f32 "small" fixture takes the sgemm path */
        int32_t toks[T];
        random_tokens(&r, toks, T, V);
        float *one = malloc((size_t)T * V * sizeof(float)), *all = malloc((size_t)T * V * sizeof(float));
        for (int t = 0; t < T; t++)
            assert_int_equal(hsd_model_forward(f.m, toks + t, 1, NULL, NULL, 1, one + (size_t)t * V), HSD_OK);
        assert_int_equal(hsd_model_kv_len(f.m), T);
        assert_int_equal(hsd_model_kv_truncate(f.m, 0), HSD_OK);
        /* 5 tokens, then 19 in one call */
        assert_int_equal(hsd_model_forward(f.m, toks, 5, NULL, NULL, 5, all), HSD_OK);
        assert_int_equal(hsd_model_forward(f.m, toks + 5, T - 5, NULL, NULL, T - 5, all + 5 * (size_t)V), HSD_OK);
        double e = rel_err(all, one, (size_t)T * V);
        fprintf(stderr, "%-24s chain of %d vs one at a time: rel err %.2g\n", f.label, T, e);
        assert_true(e < 1e-5);
        /* selected rows only, in any order */
        assert_int_equal(hsd_model_kv_truncate(f.m, 5), HSD_OK);
        int32_t rows[3] = {18, 0, 7};
        assert_int_equal(hsd_model_forward(f.m, toks + 5, T - 5, NULL, rows, 3, all), HSD_OK);
        for (int k = 0; k < 3; k++)
            assert_true(rel_err(all + (size_t)k * V, one + (size_t)(5 + rows[k]) * V, (size_t)V) < 1e-5);
        free(one), free(all);
        close_fixture(&f);
    }
}

static void test_tree_equals_paths(void **state) {
    (void)state;
    for (int w = 0; w < N_FIXTURES; w++) {
        fixture f;
        if (!open_fixture(w, &f)) continue;
        int32_t V = hsd_model_vocab_size(f.m);
        hsd_rng r;
        hsd_rng_init(&r, 12, (uint64_t)w);
        double worst = 0;
        for (int trial = 0; trial < 12; trial++) {
            int P = 1 + (int)(hsd_rng_u32(&r) % 20), n = 1 + (int)(hsd_rng_u32(&r) % 16);
            int32_t prefix[32], toks[16], parents[16];
            random_tokens(&r, prefix, P, V);
            random_tokens(&r, toks, n, V);
            for (int i = 0; i < n; i++) /* -1 (a root) or any earlier node */
                parents[i] = (int32_t)(hsd_rng_u32(&r) % (uint32_t)(i + 1)) - 1;
            if (trial % 2) {
                /* a verification carrying pending ids: a chain of c, the rest below its last
                 * token (the model runs the chain as a causal segment), and in every other
                 * such tree one node hanging from inside the chain (the chain part shrinks) */
                int c = 1 + (int)(hsd_rng_u32(&r) % (uint32_t)n);
                for (int i = 0; i < c; i++) parents[i] = i - 1;
                for (int i = c; i < n; i++)
                    parents[i] = c - 1 + (int32_t)(hsd_rng_u32(&r) % (uint32_t)(i - c + 1));
                if (trial % 4 == 3 && c >= 3 && c < n) parents[c + (int)(hsd_rng_u32(&r) % (uint32_t)(n - c))] = c / 2;
            }
            float *tree = malloc((size_t)n * V * sizeof(float)), *ref = malloc((size_t)V * sizeof(float));
            assert_int_equal(hsd_model_kv_truncate(f.m, 0), HSD_OK);
            assert_int_equal(hsd_model_forward(f.m, prefix, P, NULL, NULL, 0, NULL), HSD_OK);
            assert_int_equal(hsd_model_forward(f.m, toks, n, parents, NULL, n, tree), HSD_OK);
            assert_int_equal(hsd_model_kv_len(f.m), P + n);
            for (int i = 0; i < n; i++) {
                int32_t path[16], d = 0;
                for (int k = i; k >= 0; k = parents[k]) path[d++] = toks[k];
                assert_int_equal(hsd_model_kv_truncate(f.m, P), HSD_OK);
                for (int k = d - 1; k >= 0; k--) /* root first, one token at a time */
                    assert_int_equal(hsd_model_forward(f.m, &path[k], 1, NULL, NULL, k == 0, ref), HSD_OK);
                double e = rel_err(tree + (size_t)i * V, ref, (size_t)V);
                worst = fmax(worst, e);
                /* Q8_0: activations are quantised per 32-block to int8 (llama.cpp's q8_0 x
                 * q8_0 dot), so the ~1e-7 differences of tree attention can move one
                 * quantised activation by a step (1/127 of its block): ~1e-4 in logits */
                assert_true(e < (f.synth && w == 2 ? 1e-3 : 1e-5));
                /* tree attention continues the chain's running sum (models/layer.c) and the
                 * kernels are batch-invariant: the row is the path's, bit for bit, which
                 * greedy tree verification relies on (SLEM's candidate tree) */
                assert_memory_equal(tree + (size_t)i * V, ref, (size_t)V * sizeof(float));
            }
            free(tree), free(ref);
        }
        fprintf(stderr, "%-24s 12 random trees vs their paths: worst rel err %.2g\n", f.label, worst);
        close_fixture(&f);
    }
}

static void test_truncate_refeed_identical(void **state) {
    (void)state;
    for (int w = 0; w < N_FIXTURES; w++) {
        fixture f;
        if (!open_fixture(w, &f)) continue;
        int32_t V = hsd_model_vocab_size(f.m);
        hsd_rng r;
        hsd_rng_init(&r, 13, (uint64_t)w);
        int32_t a[10], b[6], c[9];
        random_tokens(&r, a, 10, V);
        random_tokens(&r, b, 6, V);
        random_tokens(&r, c, 9, V);
        float *l1 = malloc((size_t)6 * V * sizeof(float)), *l2 = malloc((size_t)6 * V * sizeof(float));
        assert_int_equal(hsd_model_forward(f.m, a, 10, NULL, NULL, 0, NULL), HSD_OK);
        assert_int_equal(hsd_model_forward(f.m, b, 6, NULL, NULL, 6, l1), HSD_OK);
        /* a speculative round that gets rejected: other tokens, then roll back */
        assert_int_equal(hsd_model_kv_truncate(f.m, 10), HSD_OK);
        assert_int_equal(hsd_model_forward(f.m, c, 9, NULL, NULL, 0, NULL), HSD_OK);
        assert_int_equal(hsd_model_kv_truncate(f.m, 10), HSD_OK);
        assert_int_equal(hsd_model_kv_len(f.m), 10);
        assert_int_equal(hsd_model_forward(f.m, b, 6, NULL, NULL, 6, l2), HSD_OK);
        assert_memory_equal(l1, l2, (size_t)6 * V * sizeof(float));
        assert_int_equal(hsd_model_kv_truncate(f.m, 17), HSD_ERR_OUT_OF_RANGE);
        assert_int_equal(hsd_model_kv_truncate(f.m, -1), HSD_ERR_OUT_OF_RANGE);
        free(l1), free(l2);
        close_fixture(&f);
    }
}

/* Keeping the accepted path of a tree equals having fed that path as a chain. */
static void test_kv_keep_accepted_path(void **state) {
    (void)state;
    for (int w = 0; w < N_FIXTURES; w++) {
        fixture f;
        if (!open_fixture(w, &f)) continue;
        int32_t V = hsd_model_vocab_size(f.m);
        hsd_rng r;
        hsd_rng_init(&r, 14, (uint64_t)w);
        int32_t pre[5], toks[7], next;
        random_tokens(&r, pre, 5, V);
        random_tokens(&r, toks, 7, V);
        random_tokens(&r, &next, 1, V);
        /*        0
         *      /   \
         *     1     2
         *    / \    |
         *   3   4   5 - 6        accepted: 0, 2, 5, 6 */
        const int32_t parents[7] = {-1, 0, 0, 1, 1, 2, 5}, keep[4] = {0, 2, 5, 6};
        float *got = malloc((size_t)V * sizeof(float)), *want = malloc((size_t)V * sizeof(float));
        assert_int_equal(hsd_model_forward(f.m, pre, 5, NULL, NULL, 0, NULL), HSD_OK);
        assert_int_equal(hsd_model_forward(f.m, toks, 7, parents, NULL, 0, NULL), HSD_OK);
        assert_int_equal(hsd_model_kv_keep(f.m, 5, keep, 4), HSD_OK);
        assert_int_equal(hsd_model_kv_len(f.m), 9);
        assert_int_equal(hsd_model_forward(f.m, &next, 1, NULL, NULL, 1, got), HSD_OK);
        int32_t chain[5] = {toks[0], toks[2], toks[5], toks[6], next};
        assert_int_equal(hsd_model_kv_truncate(f.m, 5), HSD_OK);
        assert_int_equal(hsd_model_forward(f.m, chain, 5, NULL, (const int32_t[]){4}, 1, want), HSD_OK);
        assert_true(rel_err(got, want, (size_t)V) < 1e-5);
        const int32_t bad[2] = {3, 1};
        assert_int_equal(hsd_model_kv_keep(f.m, 5, bad, 2), HSD_ERR_OUT_OF_RANGE);
        free(got), free(want);
        close_fixture(&f);
    }
}

/* A KV cache type outside the enum is refused at load, naming the value and the choices. */
static void test_bad_kv_type(void **state) {
    (void)state;
    hsd_synth_model *sm;
    assert_int_equal(hsd_synth_create("tiny", HSD_DT_F32, 3, &sm), HSD_OK);
    hsd_model_params p = hsd_model_default_params();
    hsd_transformer *tf = NULL;
    p.kv_type = (hsd_kv_type)(HSD_KV_Q4_0 + 1);
    assert_int_equal(hsd_synth_to_transformer(sm, &p, &tf), HSD_ERR_INVALID_ARG);
    assert_null(tf);
    assert_non_null(strstr(hsd_last_error(), "kv_type 5"));
    assert_non_null(strstr(hsd_last_error(), "q4_0 (4)"));
    p.kv_type = HSD_KV_Q4_0;
    assert_int_equal(hsd_synth_to_transformer(sm, &p, &tf), HSD_OK);
    hsd_tf_free(tf);
    hsd_synth_free(sm);
}

/* A caller built against the release before kv_no_rotate (sizeof(hsd_model_params) was 56:
 * kv_type its last field, then 4 bytes of padding) whose padding holds garbage: hsd_model_load
 * reads its 56 bytes and keeps the default for every field past them, so a Q4_0 cache of
 * head_dim 64 is still rotated as llama.cpp rotates it: the logits equal, bit for bit, those
 * of this release's default, and differ from those with kv_no_rotate. */
static float *logits_with(const char *path, const hsd_model_params *p, const int32_t *tok, int32_t n) {
    hsd_model *m;
    assert_int_equal(hsd_model_load(path, p, &m), HSD_OK);
    const int32_t V = hsd_model_vocab_size(m);
    float *lg = malloc((size_t)n * V * sizeof *lg);
    assert_int_equal(hsd_model_forward(m, tok, n, NULL, NULL, n, lg), HSD_OK);
    hsd_model_free(m);
    return lg;
}

static void test_old_params_size(void **state) {
    (void)state;
    assert_true(sizeof(hsd_model_params) > 56);
    assert_true(offsetof(hsd_model_params, kv_no_rotate) >= 56);
    hsd_synth_model *sm;
    assert_int_equal(hsd_synth_create("small", HSD_DT_F32, 3, &sm), HSD_OK);
    char path[] = "/tmp/hsd_old_params_XXXXXX";
    const int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(hsd_synth_write_gguf(sm, path), HSD_OK);
    const int32_t V = sm->cfg.vocab_size, n = 40;
    hsd_synth_free(sm);
    int32_t tok[40];
    for (int32_t i = 0; i < n; i++) tok[i] = (i * 37 + 11) % V;
    hsd_model_params cur = hsd_model_default_params(), old, off;
    cur.kv_type = HSD_KV_Q4_0;
    off = cur, off.kv_no_rotate = true;
    old = cur;
    memset((char *)&old + 52, 0xff, sizeof old - 52); /* the old padding and the new tail: garbage */
    old.kv_type = HSD_KV_Q4_0, old.size = 56;
    float *a = logits_with(path, &cur, tok, n), *b = logits_with(path, &old, tok, n),
          *c = logits_with(path, &off, tok, n);
    assert_memory_equal(a, b, (size_t)n * V * sizeof *a);
    assert_memory_not_equal(a, c, (size_t)n * V * sizeof *a);
    free(a), free(b), free(c);
    unlink(path);
}

static void test_bad_arguments(void **state) {
    (void)state;
    fixture f;
    open_fixture(0, &f);
    int32_t V = hsd_model_vocab_size(f.m), n_ctx = hsd_model_n_ctx(f.m);
    float *lg = malloc((size_t)4 * V * sizeof(float));
    int32_t toks[4] = {1, 2, 3, 4};
    assert_int_equal(hsd_model_forward(f.m, toks, 2, NULL, NULL, 2, lg), HSD_OK);
    int32_t bad_tok[2] = {1, V};
    assert_int_equal(hsd_model_forward(f.m, bad_tok, 2, NULL, NULL, 2, lg), HSD_ERR_OUT_OF_RANGE);
    assert_non_null(strstr(hsd_last_error(), "index 1"));
    const int32_t bad_par[3] = {-1, 1, 0}; /* parents[1] = 1 is not earlier */
    assert_int_equal(hsd_model_forward(f.m, toks, 3, bad_par, NULL, 0, NULL), HSD_ERR_INVALID_ARG);
    assert_non_null(strstr(hsd_last_error(), "parents[1]"));
    const int32_t bad_rows[1] = {3};
    assert_int_equal(hsd_model_forward(f.m, toks, 3, NULL, bad_rows, 1, lg), HSD_ERR_OUT_OF_RANGE);
    assert_int_equal(hsd_model_forward(f.m, toks, 0, NULL, NULL, 0, lg), HSD_ERR_INVALID_ARG);
    assert_int_equal(hsd_model_kv_len(f.m), 2); /* failed calls change nothing */
    int32_t *many = calloc((size_t)n_ctx, sizeof *many);
    assert_int_equal(hsd_model_forward(f.m, many, n_ctx - 1, NULL, NULL, 0, NULL), HSD_ERR_OUT_OF_RANGE);
    assert_non_null(strstr(hsd_last_error(), "exceed the context"));
    assert_int_equal(hsd_model_forward(f.m, many, n_ctx - 2, NULL, NULL, 0, NULL), HSD_OK);
    assert_int_equal(hsd_model_kv_len(f.m), n_ctx);
    free(many), free(lg);
    close_fixture(&f);
}

/* A caller-provided model goes through the same API. */
typedef struct toy_model {
    int32_t len, forwards;
    bool freed;
} toy_model;
static int32_t toy_vocab(void *c) { (void)c; return 3; }
static hsd_status toy_forward(void *c, const int32_t *t, int32_t n, const int32_t *par, const int32_t *rows,
                              int32_t n_rows, float *logits) {
    (void)t, (void)par;
    toy_model *m = c;
    m->len += n;
    m->forwards++;
    for (int32_t r = 0; r < n_rows; r++)
        for (int v = 0; v < 3; v++) logits[r * 3 + v] = (float)((rows ? rows[r] : r) == v);
    return HSD_OK;
}
static int32_t toy_len(void *c) { return ((toy_model *)c)->len; }
static hsd_status toy_trunc(void *c, int32_t len) {
    ((toy_model *)c)->len = len;
    return HSD_OK;
}
static void toy_free(void *c) { ((toy_model *)c)->freed = true; }

static void test_iface_plugin(void **state) {
    (void)state;
    toy_model toy = {0};
    hsd_model_iface it = {sizeof(hsd_model_iface), &toy, toy_vocab, NULL, toy_forward, toy_len, toy_trunc,
                          NULL, toy_free,  NULL, NULL,        NULL};
    hsd_model *m;
    assert_int_equal(hsd_model_from_iface(&it, &m), HSD_OK);
    float lg[6];
    int32_t toks[2] = {0, 1}, rows[2] = {1, 0};
    assert_int_equal(hsd_model_forward(m, toks, 2, NULL, rows, 2, lg), HSD_OK);
    assert_true(lg[1] == 1.0f && lg[3] == 1.0f && lg[0] == 0.0f);
    assert_int_equal(hsd_model_vocab_size(m), 3);
    assert_int_equal(hsd_model_kv_len(m), 2);
    assert_int_equal(hsd_model_kv_truncate(m, 1), HSD_OK);
    assert_int_equal(hsd_model_kv_len(m), 1);
    assert_int_equal(hsd_model_kv_keep(m, 0, NULL, 0), HSD_ERR_UNSUPPORTED);
    hsd_model_free(m);
    assert_true(toy.freed);
    hsd_model_iface bad = {.size = sizeof(hsd_model_iface)};
    assert_int_equal(hsd_model_from_iface(&bad, &m), HSD_ERR_INVALID_ARG);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chain_equals_one_at_a_time),
        cmocka_unit_test(test_tree_equals_paths),
        cmocka_unit_test(test_truncate_refeed_identical),
        cmocka_unit_test(test_kv_keep_accepted_path),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_bad_kv_type),
        cmocka_unit_test(test_old_params_size),
        cmocka_unit_test(test_iface_plugin),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
