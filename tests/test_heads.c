/* Draft LM heads (models/head.h, hsd_model_set_head): the top-k and indexed kernels, and each
 * head against a float64 reference on the rows it scores, threaded and single; bad arguments.
 * The SVD and factor files are in test_heads_svd.c; the real model pair in
 * test_heads_engine.c. */
#include "lib/base/rng.h"
#include "tests/heads_fixture.h"

/* ---------------------------------------------------------------- kernels ------------- */

static void test_topk(void **state) {
    (void)state;
    hsd_rng_init(&rng, 7, 1);
    enum { N = 1000 };
    float s[N];
    int32_t idx[N], work[N];
    for (int round = 0; round < 50; round++) {
        /* few distinct values: many ties, which must go to the smaller index */
        for (int i = 0; i < N; i++) s[i] = (float)(int)(10 * hsd_rng_uniform(&rng));
        if (round == 1) s[17] = NAN;
        int k = 1 + (int)(hsd_rng_uniform(&rng) * N);
        assert_int_equal(hsd_topk_ids(s, N, k, idx, work), k);
        /* reference: rank = number of elements ranking before i */
        int chosen = 0;
        for (int i = 0; i < N; i++) {
            float si = isnan(s[i]) ? -INFINITY : s[i];
            int before = 0;
            for (int j = 0; j < N; j++) {
                float sj = isnan(s[j]) ? -INFINITY : s[j];
                before += sj > si || (sj == si && j < i);
            }
            bool in = false;
            for (int j = 0; j < k; j++) in |= idx[j] == i;
            assert_int_equal(in, before < k);
            chosen += in;
        }
        assert_int_equal(chosen, k);
        for (int j = 1; j < k; j++) assert_true(idx[j] > idx[j - 1]); /* increasing */
    }
    assert_int_equal(hsd_topk_ids(s, N, N + 5, idx, work), N);
    assert_int_equal(hsd_topk_ids(s, N, 0, idx, work), 0);
}

/* out[j] = dot(w[ids[j]], x): runs of consecutive ids through the row kernel together, each
 * selected row read once from w in its storage type (what SpecVocab's indexed product does) */
static void matvec_indexed(float *out, const float *x, const hsd_mat *w, const int32_t *ids,
                           int32_t k, float *scratch) {
    int32_t j = 0;
    while (j < k) {
        int32_t run = 1;
        while (j + run < k && ids[j + run] == ids[j] + run) run++;
        hsd_matmul_rows(out + j, 1, x, 1, w, ids[j], run, scratch);
        j += run;
    }
}

static void test_indexed_kernel(void **state) {
    (void)state;
    hsd_rng_init(&rng, 8, 1);
    const hsd_dtype types[] = {HSD_DT_F32, HSD_DT_BF16};
    for (int ty = 0; ty < 2; ty++) {
        cls_t c = make_cls(301, 70, types[ty]);
        float x[70], scratch[4 * 70], out[301];
        double ref[301];
        for (int i = 0; i < 70; i++) x[i] = urand();
        ref_matmul(c.f, 301, 70, x, 1, ref);
        int32_t ids[] = {0, 1, 2, 3, 4, 9, 10, 57, 58, 59, 299, 300};
        matvec_indexed(out, x, &c.m, ids, 12, scratch);
        for (int j = 0; j < 12; j++) assert_close(out[j], ref[ids[j]], row_scale(ref, 301), 1e-5);
        free_cls(&c);
    }
}

/* ---------------------------------------------------------------- heads vs reference -- */

static void check_heads(hsd_dtype type) {
    const int32_t V = 300, d = 48, n = 3;
    cls_t c = make_cls(V, d, type);
    float *x = malloc((size_t)n * d * sizeof *x), *logits = malloc((size_t)n * V * sizeof *logits);
    double *ref = malloc((size_t)n * V * sizeof *ref);
    /* bf16 weights: activations bf16-representable too, since the AVX-512 kernels round
     * them to bf16 (vdpbf16ps) and the double reference is over the values they multiply */
    for (int i = 0; i < n * d; i++)
        x[i] = type == HSD_DT_BF16 ? hsd_bf16_to_fp32(hsd_fp32_to_bf16(urand())) : urand();
    ref_matmul(c.f, V, d, x, n, ref);
    hsd_head *h;
    hsd_head_params p = hsd_head_default_params();

    /* FULL */
    assert_int_equal(hsd_head_create(&c.m, &p, NULL, 0, "t", &h), HSD_OK);
    assert_int_equal(hsd_head_forward(h, NULL, 1, x, n, logits), HSD_OK);
    for (int32_t i = 0; i < n * V; i++)
        assert_close(logits[i], ref[i], row_scale(ref + i / V * V, V), 1e-5);
    hsd_head_free(h);

    /* TRIMMED: a random subset in random order; the rest exactly -inf */
    int32_t keep[120];
    bool kept[300] = {false};
    for (int j = 0; j < 120;) {
        int32_t id = (int32_t)(hsd_rng_uniform(&rng) * V);
        if (id >= V || kept[id]) continue;
        kept[id] = true;
        keep[j++] = id;
    }
    p.kind = HSD_HEAD_TRIMMED;
    p.keep_ids = keep;
    p.n_keep = 120;
    assert_int_equal(hsd_head_create(&c.m, &p, NULL, 0, "t", &h), HSD_OK);
    assert_int_equal(hsd_head_forward(h, NULL, 1, x, n, logits), HSD_OK);
    for (int32_t t = 0; t < n; t++)
        for (int32_t v = 0; v < V; v++) {
            float z = logits[(size_t)t * V + v];
            if (kept[v])
                assert_close(z, ref[(size_t)t * V + v], row_scale(ref + t * V, V), 1e-5);
            else
                assert_true(isinf(z) && z < 0);
        }
    hsd_head_free(h);

    /* LOWRANK: z = W_up (W_down h) against the factors the head holds */
    p = hsd_head_default_params();
    p.kind = HSD_HEAD_LOWRANK;
    p.rank = 6;
    assert_int_equal(hsd_head_create(&c.m, &p, NULL, 0, "t", &h), HSD_OK);
    hsd_mat dm, um;
    assert_int_equal(hsd_head_factors(h, &dm, &um), 6);
    assert_int_equal(um.type, type); /* the big factor is read at U's width */
    float *down = malloc((size_t)6 * d * sizeof *down), *up = malloc((size_t)V * 6 * sizeof *up);
    mat_f32(&dm, down);
    mat_f32(&um, up);
    float hr[3 * 6];
    double hrd[3 * 6], *lref = malloc((size_t)n * V * sizeof *lref);
    ref_matmul(down, 6, d, x, n, hrd);
    /* a bf16 W_up multiplies bf16-rounded activations (see x above) */
    for (int i = 0; i < n * 6; i++)
        hr[i] =
            type == HSD_DT_BF16 ? hsd_bf16_to_fp32(hsd_fp32_to_bf16((float)hrd[i])) : (float)hrd[i];
    ref_matmul(up, V, 6, hr, n, lref);
    assert_int_equal(hsd_head_forward(h, NULL, 1, x, n, logits), HSD_OK);
    for (int32_t i = 0; i < n * V; i++)
        assert_close(logits[i], lref[i], row_scale(lref + i / V * V, V), 1e-4);
    hsd_head_free(h);

    /* SPECULATIVE: exactly top_k finite entries, each the exact U row dot h, and they are the
     * router's top-k (no unselected router score above a selected one) */
    p.kind = HSD_HEAD_SPECULATIVE;
    p.top_k = 37;
    assert_int_equal(hsd_head_create(&c.m, &p, NULL, 0, "t", &h), HSD_OK);
    assert_int_equal(hsd_head_factors(h, &dm, &um), 6);
    mat_f32(&dm, down);
    mat_f32(&um, up);
    ref_matmul(down, 6, d, x, n, hrd);
    /* a bf16 W_up multiplies bf16-rounded activations (see x above) */
    for (int i = 0; i < n * 6; i++)
        hr[i] =
            type == HSD_DT_BF16 ? hsd_bf16_to_fp32(hsd_fp32_to_bf16((float)hrd[i])) : (float)hrd[i];
    ref_matmul(up, V, 6, hr, n, lref); /* router scores */
    assert_int_equal(hsd_head_forward(h, NULL, 1, x, n, logits), HSD_OK);
    for (int32_t t = 0; t < n; t++) {
        int finite = 0;
        double min_sel = INFINITY, max_unsel = -INFINITY;
        for (int32_t v = 0; v < V; v++) {
            float z = logits[(size_t)t * V + v];
            double s = lref[(size_t)t * V + v];
            if (isfinite(z)) {
                finite++;
                assert_close(z, ref[(size_t)t * V + v], row_scale(ref + t * V, V), 1e-5);
                min_sel = fmin(min_sel, s);
            } else {
                assert_true(z < 0);
                max_unsel = fmax(max_unsel, s);
            }
        }
        assert_int_equal(finite, 37);
        assert_true(min_sel >= max_unsel - 1e-4 * row_scale(lref + t * V, V));
    }
    hsd_head_free(h);

    /* SPECULATIVE with k = V equals FULL */
    p.top_k = V;
    assert_int_equal(hsd_head_create(&c.m, &p, NULL, 0, "t", &h), HSD_OK);
    assert_int_equal(hsd_head_forward(h, NULL, 1, x, n, logits), HSD_OK);
    for (int32_t i = 0; i < n * V; i++)
        assert_close(logits[i], ref[i], row_scale(ref + i / V * V, V), 1e-5);
    hsd_head_free(h);

    /* LOWRANK at full rank r = d reconstructs U h */
    p.kind = HSD_HEAD_LOWRANK;
    p.rank = d;
    assert_int_equal(hsd_head_create(&c.m, &p, NULL, 0, "t", &h), HSD_OK);
    assert_int_equal(hsd_head_forward(h, NULL, 1, x, n, logits), HSD_OK);
    /* bf16 storage of W_up rounds each factor entry (2^-9 relative) */
    for (int32_t i = 0; i < n * V; i++)
        assert_close(logits[i], ref[i], row_scale(ref + i / V * V, V),
                     type == HSD_DT_F32 ? 1e-4 : 2e-2);
    hsd_head_free(h);

    free(down), free(up), free(lref), free(x), free(logits), free(ref);
    free_cls(&c);
}

static void test_heads_match_reference(void **state) {
    (void)state;
    hsd_rng_init(&rng, 9, 1);
    check_heads(HSD_DT_F32);
    check_heads(HSD_DT_BF16);
}

/* The thread pool splits rows among threads: same logits as one thread for every kind. */
static void test_heads_threaded(void **state) {
    (void)state;
    hsd_rng_init(&rng, 14, 1);
    const int32_t V = 5000, d = 64, n = 2;
    cls_t c = make_cls(V, d, HSD_DT_BF16);
    float *x = malloc((size_t)n * d * sizeof *x), *a = malloc((size_t)n * V * sizeof *a),
          *b = malloc((size_t)n * V * sizeof *b);
    for (int i = 0; i < n * d; i++) x[i] = urand();
    int32_t *keep = malloc(2000 * sizeof *keep);
    for (int i = 0; i < 2000; i++) keep[i] = (i * 7919) % V; /* 7919 is prime: distinct */
    hsd_pool *pool = hsd_pool_create(2);
    assert_non_null(pool);
    for (int kind = 0; kind < 4; kind++) {
        hsd_head_params p = hsd_head_default_params();
        p.kind = (hsd_head_kind)kind;
        p.keep_ids = keep;
        p.n_keep = 2000;
        p.top_k = 700;
        p.rank = 12;
        hsd_head *h;
        assert_int_equal(hsd_head_create(&c.m, &p, NULL, 0, "t", &h), HSD_OK);
        assert_int_equal(hsd_head_forward(h, NULL, 1, x, n, a), HSD_OK);
        assert_int_equal(hsd_head_forward(h, pool, 2, x, n, b), HSD_OK);
        for (int32_t i = 0; i < n * V; i++) {
            if (isinf(a[i]))
                assert_true(isinf(b[i]) && b[i] < 0);
            else
                assert_close(b[i], a[i], 10, 1e-5);
        }
        hsd_head_free(h);
    }
    hsd_pool_free(pool);
    free(x), free(a), free(b), free(keep);
    free_cls(&c);
}

static void test_head_errors(void **state) {
    (void)state;
    hsd_rng_init(&rng, 10, 1);
    cls_t c = make_cls(50, 16, HSD_DT_F32);
    hsd_head *h = NULL;
    hsd_head_params p = hsd_head_default_params();
    p.kind = HSD_HEAD_TRIMMED;
    assert_int_equal(hsd_head_create(&c.m, &p, NULL, 0, "t", &h), HSD_ERR_INVALID_ARG); /* no ids */
    int32_t dup[] = {3, 5, 3};
    p.keep_ids = dup;
    p.n_keep = 3;
    assert_int_equal(hsd_head_create(&c.m, &p, NULL, 0, "t", &h), HSD_ERR_INVALID_ARG);
    assert_non_null(strstr(hsd_last_error(), "twice"));
    int32_t out[] = {3, 50};
    p.keep_ids = out;
    p.n_keep = 2;
    assert_int_equal(hsd_head_create(&c.m, &p, NULL, 0, "t", &h), HSD_ERR_OUT_OF_RANGE);
    p = hsd_head_default_params();
    p.kind = HSD_HEAD_LOWRANK;
    p.rank = 17;
    assert_int_equal(hsd_head_create(&c.m, &p, NULL, 0, "t", &h), HSD_ERR_INVALID_ARG);
    p.kind = HSD_HEAD_SPECULATIVE;
    p.rank = 4;
    p.top_k = 0;
    assert_int_equal(hsd_head_create(&c.m, &p, NULL, 0, "t", &h), HSD_ERR_INVALID_ARG);
    p.kind = (hsd_head_kind)9;
    assert_int_equal(hsd_head_create(&c.m, &p, NULL, 0, "t", &h), HSD_ERR_INVALID_ARG);
    assert_null(h);
    free_cls(&c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_topk),
        cmocka_unit_test(test_indexed_kernel),
        cmocka_unit_test(test_heads_match_reference),
        cmocka_unit_test(test_heads_threaded),
        cmocka_unit_test(test_head_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
