/* Draft LM heads (models/head.h, hsd_model_set_head): each head against a float64 reference
 * on the rows it scores; the SVD by its mathematics; factor files; and losslessness of
 * speculative decoding with reduced drafter heads on the real model pair. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hsd.h"
#include "kernels/head_ops.h"
#include "kernels/linalg.h"
#include "kernels/threadpool.h"
#include "lib/base/rng.h"
#include "lib/engine/sample.h"
#include "models/head.h"
#include "tests/testutil.h"

/* ---------------------------------------------------------------- helpers ------------- */

static hsd_rng rng;

static float urand(void) {
    return 2.0f * hsd_rng_uniform(&rng) - 1.0f;
}

/* A random classifier in `type` (f32 data is also returned widened for references). */
typedef struct {
    hsd_mat m;
    void *data;
    float *f; /* the stored values as f32 */
} cls_t;

static cls_t make_cls(int32_t V, int32_t d, hsd_dtype type) {
    cls_t c;
    c.f = malloc((size_t)V * d * sizeof *c.f);
    size_t es = type == HSD_DT_F32 ? 4 : 2;
    c.data = malloc((size_t)V * d * es);
    for (size_t i = 0; i < (size_t)V * d; i++) {
        float v = urand();
        if (type == HSD_DT_F32)
            ((float *)c.data)[i] = v, c.f[i] = v;
        else {
            uint16_t b = hsd_fp32_to_bf16(v);
            ((uint16_t *)c.data)[i] = b;
            c.f[i] = hsd_bf16_to_fp32(b);
        }
    }
    c.m = (hsd_mat){type, V, d, c.data};
    return c;
}

static void free_cls(cls_t *c) {
    free(c->data), free(c->f);
}

/* ref[t][v] = sum_i w[v][i] x[t][i] in double. */
static void ref_matmul(const float *w, int32_t rows, int32_t cols, const float *x, int32_t n,
                       double *ref) {
    for (int32_t t = 0; t < n; t++)
        for (int32_t v = 0; v < rows; v++) {
            double s = 0;
            for (int32_t i = 0; i < cols; i++)
                s += (double)w[(size_t)v * cols + i] * x[(size_t)t * cols + i];
            ref[(size_t)t * rows + v] = s;
        }
}

static void mat_f32(const hsd_mat *m, float *out) {
    hsd_mat_rows_f32(m, 0, m->rows, out);
}

/* |a - b| within rel of the row's scale (float32 dot products of length d). */
static void assert_close(double got, double want, double scale, double rel) {
    if (fabs(got - want) > rel * scale) {
        fprintf(stderr, "got %.9g, want %.9g (scale %.3g, rel %.1g)\n", got, want, scale, rel);
        fail();
    }
}

static double row_scale(const double *ref, int32_t n) {
    double s = 0;
    for (int32_t i = 0; i < n; i++) s = fmax(s, fabs(ref[i]));
    return s > 0 ? s : 1;
}

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
        hsd_matvec_indexed(out, x, &c.m, ids, 12, scratch);
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
        hr[i] = type == HSD_DT_BF16 ? hsd_bf16_to_fp32(hsd_fp32_to_bf16((float)hrd[i])) : (float)hrd[i];
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
        hr[i] = type == HSD_DT_BF16 ? hsd_bf16_to_fp32(hsd_fp32_to_bf16((float)hrd[i])) : (float)hrd[i];
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

/* ---------------------------------------------------------------- SVD mathematics ----- */

/* Rows of q (n x d, n <= d) made orthonormal by modified Gram-Schmidt in double. */
static void orthonormal_rows(double *q, int n, int d) {
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < i; j++) {
            double dot = 0;
            for (int k = 0; k < d; k++) dot += q[i * d + k] * q[j * d + k];
            for (int k = 0; k < d; k++) q[i * d + k] -= dot * q[j * d + k];
        }
        double nrm = 0;
        for (int k = 0; k < d; k++) nrm += q[i * d + k] * q[i * d + k];
        for (int k = 0; k < d; k++) q[i * d + k] /= sqrt(nrm);
    }
}

static void test_eigensolvers(void **state) {
    (void)state;
    hsd_rng_init(&rng, 11, 1);
    enum { N = 40 };
    double a[N * N], b[N * N], j[N * N], wl[N], wj[N];
    for (int i = 0; i < N; i++)
        for (int k = 0; k <= i; k++) a[i * N + k] = a[k * N + i] = urand();
    memcpy(b, a, sizeof a);
    memcpy(j, a, sizeof a);
    assert_int_equal(hsd_eig_sym(b, N, wl), HSD_OK);
    assert_int_equal(hsd_eig_sym_jacobi(j, N, wj), HSD_OK);
    printf("eigensolver in use: %s\n", hsd_eig_sym_solver());
    for (int i = 0; i < N; i++) {
        assert_close(wl[i], wj[i], 1.0, 1e-10);
        if (i) assert_true(wl[i] <= wl[i - 1]);
        /* A v = lambda v for both solvers, |v| = 1 */
        for (int s = 0; s < 2; s++) {
            const double *v = (s ? j : b) + i * N;
            double lam = s ? wj[i] : wl[i], nrm = 0;
            for (int r = 0; r < N; r++) {
                double av = 0;
                for (int k = 0; k < N; k++) av += a[r * N + k] * v[k];
                assert_close(av, lam * v[r], 1.0, 1e-9);
                nrm += v[r] * v[r];
            }
            assert_close(nrm, 1.0, 1.0, 1e-10);
        }
    }
    double spd[4] = {4, 2, 2, 3}, bad[4] = {1, 2, 2, 1};
    assert_int_equal(hsd_cholesky(spd, 2), HSD_OK);
    assert_close(spd[0], 2, 1, 1e-15);
    assert_close(spd[2], 1, 1, 1e-15);
    assert_close(spd[3], sqrt(2), 1, 1e-15);
    assert_int_equal(spd[1], 0);
    assert_int_equal(hsd_cholesky(bad, 2), HSD_ERR_INVALID_ARG);
}

/* U = A diag(sigma) B^T with orthonormal A (V x d columns) and B (d x d), so the best rank-r
 * error is known exactly: sum of sigma_i^2 for i >= r. */
static void test_svd_math(void **state) {
    (void)state;
    hsd_rng_init(&rng, 12, 1);
    const int V = 200, d = 32, r = 8;
    double *at = malloc((size_t)d * V * sizeof *at), *bt = malloc((size_t)d * d * sizeof *bt),
           sig[32];
    for (int i = 0; i < d * V; i++) at[i] = urand();
    for (int i = 0; i < d * d; i++) bt[i] = urand();
    orthonormal_rows(at, d, V); /* rows of at = columns of A */
    orthonormal_rows(bt, d, d);
    for (int i = 0; i < d; i++) sig[i] = 10.0 * pow(0.8, i);
    float *u = malloc((size_t)V * d * sizeof *u);
    for (int v = 0; v < V; v++)
        for (int k = 0; k < d; k++) {
            double s = 0;
            for (int i = 0; i < d; i++) s += at[i * V + v] * sig[i] * bt[i * d + k];
            u[v * d + k] = (float)s;
        }
    hsd_mat U = {HSD_DT_F32, V, d, u};
    float *down = malloc((size_t)r * d * sizeof *down), *up = malloc((size_t)V * r * sizeof *up);
    double sigma2[32];
    assert_int_equal(hsd_head_svd_factors(&U, r, NULL, 0, down, up, sigma2), HSD_OK);
    for (int i = 0; i < d; i++) assert_close(sigma2[i], sig[i] * sig[i], sig[0] * sig[0], 1e-5);
    /* W_down = V_r^T has orthonormal rows */
    for (int i = 0; i < r; i++)
        for (int j = 0; j < r; j++) {
            double dot = 0;
            for (int k = 0; k < d; k++) dot += (double)down[i * d + k] * down[j * d + k];
            assert_close(dot, i == j, 1.0, 1e-5);
        }
    /* |U - W_up W_down|_F^2 equals the tail energy */
    double err = 0, tail = 0;
    for (int v = 0; v < V; v++)
        for (int k = 0; k < d; k++) {
            double s = 0;
            for (int i = 0; i < r; i++) s += (double)up[v * r + i] * down[i * d + k];
            err += (s - u[v * d + k]) * (s - u[v * d + k]);
        }
    for (int i = r; i < d; i++) tail += sig[i] * sig[i];
    printf("rank %d of %d: |U - W_up W_down|^2 = %.6f, tail energy %.6f\n", r, d, err, tail);
    assert_close(err, tail, tail, 1e-3);

    /* Calibration: hidden states confined to an r-dimensional subspace S. The calibrated
     * rank-r head is exact on S (U h = W_up W_down h), the plain SVD is not. */
    const int n_cal = 64;
    double *basis = malloc((size_t)r * d * sizeof *basis);
    for (int i = 0; i < r * d; i++) basis[i] = urand();
    orthonormal_rows(basis, r, d);
    float *cal = malloc((size_t)n_cal * d * sizeof *cal);
    for (int t = 0; t < n_cal; t++) {
        double cw[8];
        for (int i = 0; i < r; i++) cw[i] = urand();
        for (int k = 0; k < d; k++) {
            double s = 0;
            for (int i = 0; i < r; i++) s += cw[i] * basis[i * d + k];
            cal[t * d + k] = (float)s;
        }
    }
    double err_plain = 0, err_cal = 0, norm = 0;
    for (int pass = 0; pass < 2; pass++) {
        assert_int_equal(
            hsd_head_svd_factors(&U, r, pass ? cal : NULL, pass ? n_cal : 0, down, up, NULL),
            HSD_OK);
        for (int t = 0; t < n_cal; t++) {
            const float *h = cal + t * d;
            double hr[8];
            for (int i = 0; i < r; i++) {
                hr[i] = 0;
                for (int k = 0; k < d; k++) hr[i] += (double)down[i * d + k] * h[k];
            }
            for (int v = 0; v < V; v++) {
                double z = 0, want = 0;
                for (int i = 0; i < r; i++) z += (double)up[v * r + i] * hr[i];
                for (int k = 0; k < d; k++) want += (double)u[v * d + k] * h[k];
                *(pass ? &err_cal : &err_plain) += (z - want) * (z - want);
                if (pass) norm += want * want;
            }
        }
    }
    printf("calibrated on a rank-%d subspace: relative error %.2e (plain SVD %.2e)\n", r,
           sqrt(err_cal / norm), sqrt(err_plain / norm));
    assert_true(sqrt(err_cal / norm) < 1e-3);
    assert_true(sqrt(err_plain / norm) > 0.05);
    free(at), free(bt), free(u), free(down), free(up), free(basis), free(cal);
}

/* ---------------------------------------------------------------- factor files -------- */

static void write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    fclose(f);
}

/* A safetensors file with one header and a data area of `data_len` zero-ish bytes. */
static void write_st(const char *path, const char *header, size_t data_len) {
    size_t hl = strlen(header);
    size_t total = 8 + hl + data_len;
    uint8_t *buf = calloc(1, total);
    uint64_t n = hl;
    memcpy(buf, &n, 8);
    memcpy(buf + 8, header, hl);
    for (size_t i = 0; i < data_len / 4; i++) {
        float one = 0.5f;
        memcpy(buf + 8 + hl + 4 * i, &one, 4);
    }
    write_file(path, buf, total);
    free(buf);
}

static void test_factor_files(void **state) {
    (void)state;
    hsd_rng_init(&rng, 13, 1);
    cls_t c = make_cls(90, 24, HSD_DT_F32);
    char path[64];
    snprintf(path, sizeof path, "/tmp/hsd_test_heads_%d.safetensors", (int)getpid());
    hsd_head_params p = hsd_head_default_params();
    p.kind = HSD_HEAD_SPECULATIVE;
    p.rank = 5;
    p.top_k = 11;
    hsd_head *h, *h2;
    assert_int_equal(hsd_head_create(&c.m, &p, NULL, 0, "t", &h), HSD_OK);
    assert_int_equal(hsd_head_save(h, path), HSD_OK);
    p.factors_path = path;
    p.rank = 0; /* taken from the file */
    assert_int_equal(hsd_head_create(&c.m, &p, NULL, 0, "t", &h2), HSD_OK);
    assert_non_null(strstr(hsd_head_desc(h2), "file"));
    float x[2 * 24], a[2 * 90], b[2 * 90];
    for (int i = 0; i < 48; i++) x[i] = urand();
    assert_int_equal(hsd_head_forward(h, NULL, 1, x, 2, a), HSD_OK);
    assert_int_equal(hsd_head_forward(h2, NULL, 1, x, 2, b), HSD_OK);
    assert_memory_equal(a, b, sizeof a); /* f32 factors round-trip bit for bit */
    hsd_head_free(h2);
    /* a low-rank head does not read the router's names */
    p.kind = HSD_HEAD_LOWRANK;
    assert_int_equal(hsd_head_create(&c.m, &p, NULL, 0, "t", &h2), HSD_ERR_PARSE);
    assert_non_null(strstr(hsd_last_error(), "lm_head.w_down"));
    assert_non_null(strstr(hsd_last_error(), "router.w_down")); /* what the file has */
    hsd_head_free(h);

    /* malformed files: each a clear error, never a crash */
    p.kind = HSD_HEAD_SPECULATIVE;
    write_file(path, "abc", 3);
    assert_int_equal(hsd_head_create(&c.m, &p, NULL, 0, "t", &h), HSD_ERR_PARSE);
    assert_non_null(strstr(hsd_last_error(), "truncated"));
    uint8_t big[16] = {0xff, 0xff, 0, 0, 0, 0, 0, 0, '{', '}'};
    write_file(path, big, sizeof big);
    assert_int_equal(hsd_head_create(&c.m, &p, NULL, 0, "t", &h), HSD_ERR_PARSE);
    write_st(path, "{not json", 0);
    assert_int_equal(hsd_head_create(&c.m, &p, NULL, 0, "t", &h), HSD_ERR_PARSE);
    /* wrong width of W_down (23 instead of the hidden size 24) */
    write_st(path,
             "{\"router.w_down\":{\"dtype\":\"F32\",\"shape\":[2,23],\"data_offsets\":[0,184]},"
             "\"router.w_vocab\":{\"dtype\":\"F32\",\"shape\":[90,2],\"data_offsets\":[184,904]}}",
             904);
    assert_int_equal(hsd_head_create(&c.m, &p, NULL, 0, "t", &h), HSD_ERR_PARSE);
    assert_non_null(strstr(hsd_last_error(), "shape [2, 23]"));
    /* W_vocab rows must equal the vocabulary */
    write_st(path,
             "{\"router.w_down\":{\"dtype\":\"F32\",\"shape\":[2,24],\"data_offsets\":[0,192]},"
             "\"router.w_vocab\":{\"dtype\":\"F32\",\"shape\":[89,2],\"data_offsets\":[192,904]}}",
             904);
    assert_int_equal(hsd_head_create(&c.m, &p, NULL, 0, "t", &h), HSD_ERR_PARSE);
    /* data beyond the end of the file */
    write_st(path,
             "{\"router.w_down\":{\"dtype\":\"F32\",\"shape\":[2,24],\"data_offsets\":[0,192]},"
             "\"router.w_vocab\":{\"dtype\":\"F32\",\"shape\":[90,2],\"data_offsets\":[192,912]}}",
             500);
    assert_int_equal(hsd_head_create(&c.m, &p, NULL, 0, "t", &h), HSD_ERR_PARSE);
    assert_non_null(strstr(hsd_last_error(), "beyond the end"));
    /* unsupported dtype, offsets that do not match the shape */
    write_st(path,
             "{\"router.w_down\":{\"dtype\":\"I8\",\"shape\":[2,24],\"data_offsets\":[0,48]}}", 48);
    assert_int_equal(hsd_head_create(&c.m, &p, NULL, 0, "t", &h), HSD_ERR_UNSUPPORTED);
    write_st(path,
             "{\"router.w_down\":{\"dtype\":\"F32\",\"shape\":[2,24],\"data_offsets\":[0,100]}}",
             100);
    assert_int_equal(hsd_head_create(&c.m, &p, NULL, 0, "t", &h), HSD_ERR_PARSE);
    p.factors_path = "/nonexistent/router.safetensors";
    assert_int_equal(hsd_head_create(&c.m, &p, NULL, 0, "t", &h), HSD_ERR_IO);
    unlink(path);
    free_cls(&c);
}

/* ---------------------------------------------------------------- real model pair ----- */

typedef struct {
    hsd_model *m;
    hsd_tokenizer *t;
} lm;

static int load_lm(lm *x, const char *model, const char *tok) {
    const char *mp = hsd_test_path(model), *tp = hsd_test_path(tok);
    if (!hsd_test_require(mp) || !hsd_test_require(tp)) return -1;
    hsd_model_params prm = hsd_model_default_params();
    prm.n_threads = 1;
    if (hsd_model_load(mp, &prm, &x->m) || hsd_tokenizer_load_file(tp, &x->t)) {
        fprintf(stderr, "%s\n", hsd_last_error());
        return -1;
    }
    return 0;
}

static void free_lm(lm *x) {
    hsd_model_free(x->m), hsd_tokenizer_free(x->t);
}

#define SMALL "models/stories260K/stories260K.bin", "models/stories260K/tok512.bin"
#define BABY "models/babyllama-tok105/model5000.bin", "models/babyllama-tok105/tok105.bin"

/* The model API: heads on a loaded model give the same logits as the head object on its
 * classifier; FULL restores U h; timing counts forwards and rows. */
static void test_model_api(void **state) {
    (void)state;
    lm s;
    if (load_lm(&s, SMALL)) skip();
    int32_t V = hsd_model_vocab_size(s.m), toks[] = {1, 400, 300, 290};
    float *full = malloc((size_t)V * sizeof *full), *z = malloc((size_t)V * sizeof *z);
    int32_t last = 3;
    hsd_model_reset_timing(s.m);
    assert_int_equal(hsd_model_forward(s.m, toks, 4, NULL, &last, 1, full), HSD_OK);
    hsd_model_timing tm;
    assert_int_equal(hsd_model_get_timing(s.m, &tm), HSD_OK);
    assert_int_equal(tm.n_forward, 1);
    assert_int_equal(tm.n_head_rows, 1);
    assert_true(tm.head_ms >= 0 && tm.backbone_ms >= 0);
    assert_string_equal(hsd_model_head_desc(s.m), "full");

    hsd_head_params p = hsd_head_default_params();
    p.kind = HSD_HEAD_SPECULATIVE;
    p.top_k = V; /* every row scored exactly: the full logits */
    p.rank = 8;
    assert_int_equal(hsd_model_set_head(s.m, &p), HSD_OK);
    assert_non_null(strstr(hsd_model_head_desc(s.m), "speculative"));
    assert_int_equal(hsd_model_kv_truncate(s.m, 0), HSD_OK);
    assert_int_equal(hsd_model_forward(s.m, toks, 4, NULL, &last, 1, z), HSD_OK);
    for (int32_t i = 0; i < V; i++) assert_close(z[i], full[i], 10, 1e-5);
    /* calibration on the model's own hidden states over a story leaves the cache empty */
    int32_t *ids;
    size_t n;
    const char *story =
        "Once upon a time, there was a little girl named Lily. She loved to play outside.";
    assert_int_equal(hsd_tokenizer_encode_alloc(s.t, story, strlen(story), true, &ids, &n), HSD_OK);
    p.kind = HSD_HEAD_LOWRANK;
    p.calib_tokens = ids;
    p.n_calib = (int32_t)n;
    assert_int_equal(hsd_model_set_head(s.m, &p), HSD_OK);
    assert_non_null(strstr(hsd_model_head_desc(s.m), "calibrated"));
    assert_int_equal(hsd_model_kv_len(s.m), 0);
    hsd_free(ids);
    /* a failed set_head keeps the previous head */
    p.kind = HSD_HEAD_TRIMMED;
    p.keep_ids = NULL;
    p.n_keep = 0;
    assert_int_equal(hsd_model_set_head(s.m, &p), HSD_ERR_INVALID_ARG);
    assert_non_null(strstr(hsd_model_head_desc(s.m), "lowrank"));
    char path[64];
    snprintf(path, sizeof path, "/tmp/hsd_test_heads_m%d.safetensors", (int)getpid());
    assert_int_equal(hsd_model_save_head(s.m, path), HSD_OK);
    p.kind = HSD_HEAD_LOWRANK;
    p.factors_path = path;
    assert_int_equal(hsd_model_set_head(s.m, &p), HSD_OK);
    unlink(path);
    assert_int_equal(hsd_model_set_head(s.m, NULL), HSD_OK);
    assert_string_equal(hsd_model_head_desc(s.m), "full");
    assert_int_equal(hsd_model_save_head(s.m, path), HSD_ERR_INVALID_ARG);
    assert_int_equal(hsd_model_kv_truncate(s.m, 0), HSD_OK);
    assert_int_equal(hsd_model_forward(s.m, toks, 4, NULL, &last, 1, z), HSD_OK);
    assert_memory_equal(z, full, (size_t)V * sizeof *z);
    assert_int_equal(hsd_model_get_timing(s.m, &tm), HSD_OK);
    assert_true(tm.n_forward >= 3);

    free(full), free(z);
    free_lm(&s);
}

static int32_t fake_vocab(void *c) {
    return (void)c, 4;
}
static int32_t fake_kv(void *c) {
    return (void)c, 0;
}
static hsd_status fake_fwd(void *c, const int32_t *t, int32_t n, const int32_t *p, const int32_t *r,
                           int32_t nr, float *l) {
    (void)c, (void)t, (void)n, (void)p, (void)r, (void)nr, (void)l;
    return HSD_OK;
}
static hsd_status fake_trunc(void *c, int32_t len) {
    return (void)c, (void)len, HSD_OK;
}

static void test_caller_model_has_no_head(void **state) {
    (void)state;
    hsd_model_iface iface = {.vocab_size = fake_vocab, .forward = fake_fwd, .kv_len = fake_kv, .kv_truncate = fake_trunc};
    hsd_model *m;
    assert_int_equal(hsd_model_from_iface(&iface, &m), HSD_OK);
    hsd_head_params p = hsd_head_default_params();
    assert_int_equal(hsd_model_set_head(m, &p), HSD_ERR_UNSUPPORTED);
    hsd_model_timing t;
    assert_int_equal(hsd_model_get_timing(m, &t), HSD_ERR_UNSUPPORTED);
    hsd_model_free(m);
}

/* Sets a reduced head on the drafter; kind 0 = the full one. */
static void set_draft_head(lm *d, int kind, const int32_t *keep, int32_t n_keep) {
    hsd_head_params p = hsd_head_default_params();
    if (kind == 1) p.kind = HSD_HEAD_TRIMMED, p.keep_ids = keep, p.n_keep = n_keep;
    if (kind == 2) p.kind = HSD_HEAD_SPECULATIVE, p.top_k = 24, p.rank = 4;
    if (kind == 3) p.kind = HSD_HEAD_LOWRANK, p.rank = 4;
    hsd_status s = hsd_model_set_head(d->m, &p);
    if (s) fprintf(stderr, "set head: %s\n", hsd_last_error());
    assert_int_equal(s, HSD_OK);
}

static void gen(hsd_engine *e, const char *prompt, hsd_algo algo, float temp, uint64_t seed, int n,
                hsd_gen_result *r) {
    hsd_gen_params p = hsd_gen_default_params();
    p.algo = algo;
    p.n_draft = 3;
    p.temp = temp;
    p.seed = seed;
    p.max_new_tokens = n;
    hsd_status s = hsd_engine_generate(e, prompt, strlen(prompt), &p, r);
    if (s) fprintf(stderr, "generate(%s): %s\n", hsd_algo_name(algo), hsd_last_error());
    assert_int_equal(s, HSD_OK);
}

/* The drafter ids of the most frequent `k` tokens of a text (a small frequency trim). */
static int32_t frequent_ids(const lm *x, const char *text, int32_t k, int32_t *out) {
    int32_t V = hsd_model_vocab_size(x->m), *ids;
    size_t n;
    assert_int_equal(hsd_tokenizer_encode_alloc(x->t, text, strlen(text), false, &ids, &n), HSD_OK);
    long *cnt = calloc((size_t)V, sizeof *cnt);
    for (size_t i = 0; i < n; i++) cnt[ids[i]]++;
    int32_t m = 0;
    for (; m < k; m++) {
        int32_t best = -1;
        for (int32_t v = 0; v < V; v++)
            if (cnt[v] > 0 && (best < 0 || cnt[v] > cnt[best])) best = v;
        if (best < 0) break;
        out[m] = best;
        cnt[best] = 0;
    }
    free(cnt), hsd_free(ids);
    return m;
}

static const char *story =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
    "sunshine. One day, she saw a big tree with a swing. She ran to her mom and said, \"Can we go "
    "to the park?\" Her mom smiled and said yes. They had a lot of fun together.";

/* Greedy output with a reduced drafter head is the AR output, for SD (self-drafting), TLI and
 * SLEM, and each reduced head is really used (acceptance changes or rows are -inf). */
static void test_greedy_lossless(void **state) {
    (void)state;
    lm small, small2, baby;
    if (load_lm(&small, SMALL) || load_lm(&small2, SMALL) || load_lm(&baby, BABY)) skip();
    const char *prompts[] = {"Once upon a time", "Tom and Lily went to the park. They saw",
                             "The dog"};
    int32_t keep_s[64], keep_b[64];
    int32_t n_s = frequent_ids(&small2, story, 60, keep_s),
            n_b = frequent_ids(&baby, story, 30, keep_b);
    struct {
        lm *t, *d;
        hsd_algo algo;
        int32_t *keep, n_keep;
    } cases[] = {{&small, &small2, HSD_ALGO_SD, keep_s, n_s},
                 {&small, &baby, HSD_ALGO_TLI, keep_b, n_b},
                 {&small, &baby, HSD_ALGO_SLEM, keep_b, n_b},
                 {&baby, &small2, HSD_ALGO_SLEM, keep_s, n_s}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        hsd_engine *e;
        assert_int_equal(
            hsd_engine_init(cases[c].t->m, cases[c].t->t, cases[c].d->m, cases[c].d->t, &e),
            HSD_OK);
        for (size_t pi = 0; pi < 3; pi++) {
            hsd_gen_result ar;
            hsd_engine_reset(e);
            gen(e, prompts[pi], HSD_ALGO_AR, 0, 1, 60, &ar);
            for (int kind = 0; kind < 4; kind++) {
                set_draft_head(cases[c].d, kind, cases[c].keep, cases[c].n_keep);
                hsd_engine_reset(e);
                hsd_gen_result r;
                gen(e, prompts[pi], cases[c].algo, 0, 1, 60, &r);
                if (r.n_ids != ar.n_ids ||
                    memcmp(r.ids, ar.ids, (size_t)ar.n_ids * sizeof *ar.ids)) {
                    fprintf(stderr, "%s head %d prompt %zu: differs from AR\n%s\n---\n%s\n",
                            hsd_algo_name(cases[c].algo), kind, pi, r.text, ar.text);
                    fail();
                }
                if (pi == 0)
                    printf("%-4s drafter head %-55s acceptance %.3f, tau %.2f\n",
                           hsd_algo_name(cases[c].algo), hsd_model_head_desc(cases[c].d->m),
                           r.acceptance_rate, r.tau);
                hsd_gen_result_free(&r);
            }
            hsd_gen_result_free(&ar);
        }
        set_draft_head(cases[c].d, 0, NULL, 0);
        hsd_engine_free(e);
    }
    /* TLI prunes the drafter head to T ∩ D: the overlap ids are the drafter ids that map */
    hsd_engine *e;
    assert_int_equal(hsd_engine_init(baby.m, baby.t, small2.m, small2.t, &e), HSD_OK);
    int32_t n_ov = 0, ids[512];
    assert_int_equal(hsd_engine_overlap_ids(e, ids, 1, &n_ov), HSD_ERR_BUFFER_TOO_SMALL);
    assert_int_equal(n_ov, hsd_engine_overlap(e));
    assert_int_equal(hsd_engine_overlap_ids(e, ids, 512, &n_ov), HSD_OK);
    assert_int_equal(n_ov, hsd_engine_overlap(e));
    assert_true(n_ov > 0 && n_ov < 512);
    set_draft_head(&small2, 1, ids, n_ov);
    hsd_gen_result ar, r;
    gen(e, prompts[0], HSD_ALGO_AR, 0, 1, 60, &ar);
    hsd_engine_reset(e);
    gen(e, prompts[0], HSD_ALGO_TLI, 0, 1, 60, &r);
    assert_int_equal(r.n_ids, ar.n_ids);
    assert_memory_equal(r.ids, ar.ids, (size_t)ar.n_ids * sizeof *ar.ids);
    printf("TLI, drafter stories260K pruned to |T∩D| = %d of 512 rows: acceptance %.3f\n", n_ov,
           r.acceptance_rate);
    hsd_gen_result_free(&ar), hsd_gen_result_free(&r);
    hsd_engine_free(e);
    free_lm(&small), free_lm(&small2), free_lm(&baby);
}

/* At temperature 1 the first token's law is the target's whatever the drafter head: Pearson
 * chi-square against softmax of the target's logits, for SD with a low-rank and a trimmed
 * self-drafter and TLI with a speculative babyllama drafter. */
static void test_first_token_law(void **state) {
    (void)state;
    lm small, small2, baby;
    if (load_lm(&small, SMALL) || load_lm(&small2, SMALL) || load_lm(&baby, BABY)) skip();
    const char *prompt = "Once upon a time, there was a little";
    int32_t V = hsd_model_vocab_size(small.m);
    double *law = calloc((size_t)V, sizeof *law);
    long *count = calloc((size_t)V, sizeof *count);
    {
        int32_t *ids;
        size_t n;
        assert_int_equal(
            hsd_tokenizer_encode_alloc(small.t, prompt, strlen(prompt), false, &ids, &n), HSD_OK);
        int32_t *all = malloc((n + 1) * sizeof *all), row = (int32_t)n;
        all[0] = hsd_tokenizer_bos_id(small.t);
        memcpy(all + 1, ids, n * sizeof *ids);
        float *logits = malloc((size_t)V * sizeof *logits),
              *probs = malloc((size_t)V * sizeof *probs);
        assert_int_equal(hsd_model_forward(small.m, all, (int32_t)n + 1, NULL, &row, 1, logits),
                         HSD_OK);
        assert_int_equal(hsd_model_kv_truncate(small.m, 0), HSD_OK);
        hsd_sampler_params sp = {1.0f, 0, 1.0f};
        assert_int_equal(hsd_sample_probs(logits, V, &sp, probs), HSD_OK);
        for (int32_t i = 0; i < V; i++) law[i] = probs[i];
        free(all), free(logits), free(probs), hsd_free(ids);
    }
    int32_t keep[64];
    int32_t n_keep = frequent_ids(&small2, story, 40, keep);
    struct {
        lm *d;
        hsd_algo algo;
        int kind;
        const char *label;
    } cases[] = {{&small2, HSD_ALGO_SD, 3, "SD, low-rank r=4 drafter"},
                 {&small2, HSD_ALGO_SD, 1, "SD, trimmed 40-row drafter"},
                 {&baby, HSD_ALGO_TLI, 2, "TLI, speculative k=24 drafter"}};
    const long N = 20000;
    for (size_t c = 0; c < 3; c++) {
        set_draft_head(cases[c].d, cases[c].kind, keep, n_keep);
        hsd_engine *e;
        assert_int_equal(hsd_engine_init(small.m, small.t, cases[c].d->m, cases[c].d->t, &e),
                         HSD_OK);
        memset(count, 0, (size_t)V * sizeof *count);
        long accepted = 0, drafted = 0;
        for (long s = 0; s < N; s++) {
            hsd_gen_result r;
            gen(e, prompt, cases[c].algo, 1.0f, 5000 + (uint64_t)s + 1000000 * (uint64_t)c, 1, &r);
            assert_int_equal(r.n_ids, 1);
            count[r.ids[0]]++;
            accepted += r.n_accepted, drafted += r.n_drafted;
            hsd_gen_result_free(&r);
        }
        int df;
        double chi2 = hsd_test_chi2(count, law, V, N, &df), pv = hsd_test_chi2_pvalue(chi2, df);
        printf("%s: chi2 %.1f, df %d, p = %.4f (%ld samples, acceptance %.3f)\n", cases[c].label,
               chi2, df, pv, N, drafted ? (double)accepted / drafted : 0);
        assert_true(pv > 1e-3);
        /* the head is really reduced: some drafts get rejected */
        assert_true(accepted < drafted);
        hsd_engine_free(e);
        set_draft_head(cases[c].d, 0, NULL, 0);
    }
    free(law), free(count);
    free_lm(&small), free_lm(&small2), free_lm(&baby);
}

/* The CLI: --draft-head keeps greedy output identical to AR (ids from --json), each head spec
 * form parses, a bad spec fails, and bench heads prints the acceptance–cost table. */
static void test_cli_draft_head(void **state) {
    (void)state;
    const char *tm = hsd_test_path("models/stories260K/stories260K.bin"),
               *tt = hsd_test_path("models/stories260K/tok512.bin");
    const char *dm = hsd_test_path("models/babyllama-tok105/model5000.bin"),
               *dt = hsd_test_path("models/babyllama-tok105/tok105.bin");
    if (!hsd_test_require(tm) || !hsd_test_require(tt) || !hsd_test_require(dm) ||
        !hsd_test_require(dt))
        skip();
    char cmd[2048], ids_path[64], st_path[64];
    snprintf(ids_path, sizeof ids_path, "/tmp/hsd_test_heads_cli_%d.ids", (int)getpid());
    snprintf(st_path, sizeof st_path, "/tmp/hsd_test_heads_cli_%d.safetensors", (int)getpid());
    FILE *f = fopen(ids_path, "w");
    assert_non_null(f);
    fprintf(f, "# a few characters\n");
    for (int i = 3; i < 60; i++) fprintf(f, "%d\n", i);
    fclose(f);
    snprintf(cmd, sizeof cmd,
             "%s generate --target %s --target-tokenizer %s --algo ar -p 'Once upon a time' -n 40 "
             "--json",
             hsd_test_cli(), tm, tt);
    char *ar = hsd_test_run(cmd);
    char *ar_ids = strstr(ar, "\"ids\"");
    assert_non_null(ar_ids);
    *strchr(ar_ids, ']') = 0;
    const char *heads[] = {"full",      "tli",       "trim:IDS",       "tli:IDS",
                           "spec:16/8", "lowrank:8", "lowrank:8:SAVED"};
    for (size_t i = 0; i < sizeof heads / sizeof *heads; i++) {
        char spec[160];
        if (!strcmp(heads[i], "trim:IDS") || !strcmp(heads[i], "tli:IDS"))
            snprintf(spec, sizeof spec, "%.*s%s", (int)strcspn(heads[i], ":") + 1, heads[i],
                     ids_path);
        else if (!strcmp(heads[i], "lowrank:8:SAVED"))
            snprintf(spec, sizeof spec, "lowrank:8:%s", st_path);
        else
            snprintf(spec, sizeof spec, "%s", heads[i]);
        for (int algo = 0; algo < 2; algo++) {
            snprintf(cmd, sizeof cmd,
                     "%s generate --target %s --target-tokenizer %s --draft %s --draft-tokenizer "
                     "%s --algo %s "
                     "-p 'Once upon a time' -n 40 --json --draft-head %s%s%s",
                     hsd_test_cli(), tm, tt, dm, dt, algo ? "slem" : "tli", spec,
                     i == 5 ? " --save-draft-head " : "", i == 5 ? st_path : "");
            char *out = hsd_test_run(cmd);
            char *ids = strstr(out, "\"ids\"");
            assert_non_null(ids);
            *strchr(ids, ']') = 0;
            assert_string_equal(ids, ar_ids);
            free(out);
        }
    }
    /* bad specs fail with a message */
    snprintf(cmd, sizeof cmd,
             "%s generate --target %s --target-tokenizer %s --draft %s --draft-tokenizer %s --algo "
             "tli -p x -n 2 "
             "--draft-head spec:abc 2>&1",
             hsd_test_cli(), tm, tt, dm, dt);
    FILE *pp = popen(cmd, "r");
    char buf[2048];
    size_t got = fread(buf, 1, sizeof buf - 1, pp);
    buf[got] = 0;
    assert_int_not_equal(pclose(pp), 0);
    assert_non_null(strstr(buf, "draft head 'spec:abc'")); /* names the spec */
    snprintf(cmd, sizeof cmd,
             "%s bench heads --target %s --target-tokenizer %s --draft %s --draft-tokenizer %s "
             "--algo slem -p "
             "'Once upon a time' -n 16 --heads 'full;lowrank:8;trim:%s'",
             hsd_test_cli(), tm, tt, dm, dt, ids_path);
    char *out = hsd_test_run(cmd);
    assert_non_null(strstr(out, "kappa"));
    assert_non_null(strstr(out, "lowrank: rank 8 of 128"));
    assert_non_null(strstr(out, "trimmed: 57 of 105 rows"));
    free(out);
    free(ar);
    unlink(ids_path);
    unlink(st_path);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_topk),
        cmocka_unit_test(test_indexed_kernel),
        cmocka_unit_test(test_heads_match_reference),
        cmocka_unit_test(test_heads_threaded),
        cmocka_unit_test(test_head_errors),
        cmocka_unit_test(test_eigensolvers),
        cmocka_unit_test(test_svd_math),
        cmocka_unit_test(test_factor_files),
        cmocka_unit_test(test_model_api),
        cmocka_unit_test(test_caller_model_has_no_head),
        cmocka_unit_test(test_greedy_lossless),
        cmocka_unit_test(test_first_token_law),
        cmocka_unit_test(test_cli_draft_head),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
