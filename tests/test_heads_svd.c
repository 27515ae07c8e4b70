/* Draft LM heads: the SVD (eigensolvers, low-rank factors) by its mathematics, and the
 * factor files (safetensors) with their malformed cases. Split from test_heads.c by concept. */
#include "lib/base/rng.h"
#include "tests/heads_fixture.h"

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
    hsd_mat U = {HSD_DT_F32, V, d, u, NULL};
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eigensolvers),
        cmocka_unit_test(test_svd_math),
        cmocka_unit_test(test_factor_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
