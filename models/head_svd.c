/* Training-free factors for low-rank and SpecVocab-router heads: a truncated SVD of the
 * classifier U (vocab x dim) through its dim x dim Gram matrix. With vocab >> dim this is
 * the cheap route: one pass over U for G = U^T U, a symmetric eigen-decomposition of G, and
 * one more pass for W_up = U V_r. Accumulating G in double keeps the tail singular values
 * (which the rank choice is about) accurate despite squaring. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/linalg.h"
#include "lib/base/error.h"
#include "models/head.h"

#ifdef HSD_HAVE_OPENBLAS
#include <cblas.h>
#endif

#define SVD_BLOCK 256 /* rows of U widened to f32 at a time */

/* g (d x d, double, both triangles) = sum over rows u of U of u u^T. */
static hsd_status gram(const hsd_mat *U, double *g) {
    const int32_t d = U->cols;
    float *blk = malloc((size_t)SVD_BLOCK * d * sizeof *blk), *gf = NULL;
#ifdef HSD_HAVE_OPENBLAS
    gf = malloc((size_t)d * d * sizeof *gf);
    if (!gf) goto nomem;
#endif
    if (!blk) goto nomem;
    memset(g, 0, (size_t)d * d * sizeof *g);
    for (int32_t r0 = 0; r0 < U->rows; r0 += SVD_BLOCK) {
        int32_t nb = U->rows - r0 < SVD_BLOCK ? U->rows - r0 : SVD_BLOCK;
        hsd_mat_rows_f32(U, r0, nb, blk);
#ifdef HSD_HAVE_OPENBLAS
        /* a block's sum in float, blocks summed in double */
        cblas_ssyrk(CblasRowMajor, CblasUpper, CblasTrans, d, nb, 1.0f, blk, d, 0.0f, gf, d);
        for (int32_t i = 0; i < d; i++)
            for (int32_t j = i; j < d; j++) g[(size_t)i * d + j] += gf[(size_t)i * d + j];
#else
        for (int32_t t = 0; t < nb; t++) {
            const float *u = blk + (size_t)t * d;
            for (int32_t i = 0; i < d; i++) {
                double ui = u[i];
                double *gi = g + (size_t)i * d;
                for (int32_t j = i; j < d; j++) gi[j] += ui * u[j];
            }
        }
#endif
    }
    for (int32_t i = 0; i < d; i++)
        for (int32_t j = 0; j < i; j++) g[(size_t)i * d + j] = g[(size_t)j * d + i];
    free(blk);
    free(gf);
    return HSD_OK;
nomem:
    free(blk);
    free(gf);
    return hsd_error(HSD_ERR_NOMEM, "svd: out of memory for a %d x %d Gram matrix", d, d);
}

/* c = a b for n x n row-major doubles (a^T b when ta). */
static void matmul_d(const double *a, const double *b, double *c, int32_t n, int ta) {
#ifdef HSD_HAVE_OPENBLAS
    cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a, n, b,
                n, 0.0, c, n);
#else
    size_t N = (size_t)n;
    memset(c, 0, N * N * sizeof *c);
    for (size_t i = 0; i < N; i++)
        for (size_t k = 0; k < N; k++) {
            double aik = ta ? a[k * N + i] : a[i * N + k];
            if (aik == 0) continue;
            for (size_t j = 0; j < N; j++) c[i * N + j] += aik * b[k * N + j];
        }
#endif
}

/* w_up[v][i] = dot(U[v], p[i]) for the rank rows of p (f32, rank x d). */
static hsd_status project_rows(const hsd_mat *U, const float *p, int32_t rank, float *w_up) {
    const int32_t d = U->cols;
    float *blk = malloc((size_t)SVD_BLOCK * d * sizeof *blk);
    float *scratch = malloc((size_t)4 * d * sizeof *scratch);
    if (!blk || !scratch) {
        free(blk);
        free(scratch);
        return hsd_error(HSD_ERR_NOMEM, "svd: out of memory");
    }
    hsd_mat pm = {HSD_DT_F32, rank, d, p, NULL};
    for (int32_t r0 = 0; r0 < U->rows; r0 += SVD_BLOCK) {
        int32_t nb = U->rows - r0 < SVD_BLOCK ? U->rows - r0 : SVD_BLOCK;
        hsd_mat_rows_f32(U, r0, nb, blk);
#ifdef HSD_HAVE_OPENBLAS
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nb, rank, d, 1.0f, blk, d, p, d, 0.0f,
                    w_up + (size_t)r0 * rank, rank);
#else
        hsd_matmul_rows(w_up + (size_t)r0 * rank, rank, blk, nb, &pm, 0, rank, scratch);
#endif
    }
    (void)pm;
    free(blk);
    free(scratch);
    return HSD_OK;
}

hsd_status hsd_head_svd_factors(const hsd_mat *U, int32_t rank, const float *calib, int32_t n_calib,
                                float *w_down, float *w_up, double *sigma2) {
    const int32_t d = U ? U->cols : 0;
    if (!U || !w_down || !w_up || rank < 1 || rank > d || U->rows < 1)
        return hsd_error(HSD_ERR_INVALID_ARG, "svd: rank %d outside 1..%d", rank, d);
    size_t D = (size_t)d;
    double *g = malloc(D * D * sizeof *g), *m = malloc(D * D * sizeof *m),
           *w = malloc(D * sizeof *w);
    double *l = NULL, *t = NULL;
    float *p = malloc((size_t)rank * D * sizeof *p);
    hsd_status s = HSD_OK;
    if (!g || !m || !w || !p) {
        s = hsd_error(HSD_ERR_NOMEM, "svd: out of memory (dim %d)", d);
        goto done;
    }
    if ((s = gram(U, g))) goto done;
    bool calibrated = calib && n_calib > 0;
    if (calibrated) {
        /* C = mean h h^T plus a small ridge so that C = L L^T exists even for fewer samples
         * than dimensions; then M = L^T G L */
        l = calloc(D * D, sizeof *l);
        t = malloc(D * D * sizeof *t);
        if (!l || !t) {
            s = hsd_error(HSD_ERR_NOMEM, "svd: out of memory (dim %d)", d);
            goto done;
        }
#ifdef HSD_HAVE_OPENBLAS
        /* sum h h^T in float per block of states, blocks summed in double (as for G) */
        float *cf = malloc(D * D * sizeof *cf);
        if (!cf) {
            s = hsd_error(HSD_ERR_NOMEM, "svd: out of memory (dim %d)", d);
            goto done;
        }
        for (int32_t k0 = 0; k0 < n_calib; k0 += SVD_BLOCK) {
            int32_t nb = n_calib - k0 < SVD_BLOCK ? n_calib - k0 : SVD_BLOCK;
            cblas_ssyrk(CblasRowMajor, CblasUpper, CblasTrans, d, nb, 1.0f, calib + (size_t)k0 * D,
                        d, 0.0f, cf, d);
            for (size_t i = 0; i < D; i++)
                for (size_t j = i; j < D; j++) l[i * D + j] += cf[i * D + j];
        }
        free(cf);
#else
        for (int32_t k = 0; k < n_calib; k++) {
            const float *h = calib + (size_t)k * D;
            for (size_t i = 0; i < D; i++)
                for (size_t j = i; j < D; j++) l[i * D + j] += (double)h[i] * h[j];
        }
#endif
        double tr = 0;
        for (size_t i = 0; i < D; i++) tr += l[i * D + i];
        double ridge = 1e-6 * (tr > 0 ? tr / (double)D : 1.0) + 1e-30;
        for (size_t i = 0; i < D; i++) {
            for (size_t j = i; j < D; j++) l[i * D + j] /= n_calib;
            l[i * D + i] += ridge;
            for (size_t j = 0; j < i; j++) l[i * D + j] = l[j * D + i];
        }
        if ((s = hsd_cholesky(l, d))) goto done;
        matmul_d(g, l, t, d, 0); /* G L */
        matmul_d(l, t, m, d, 1); /* L^T G L */
    } else {
        memcpy(m, g, D * D * sizeof *m);
    }
    if ((s = hsd_eig_sym(m, d, w))) goto done;
    if (sigma2) memcpy(sigma2, w, D * sizeof *w);
    if (!calibrated) {
        /* V_r^T: the top eigenvectors of U^T U */
        for (size_t i = 0; i < (size_t)rank; i++)
            for (size_t j = 0; j < D; j++) w_down[i * D + j] = p[i * D + j] = (float)m[i * D + j];
        s = project_rows(U, p, rank, w_up); /* U V_r = U_r S_r */
        goto done;
    }
    /* P = rows (L q_i)^T; W_up = U P^T and W_down = diag(1/lambda) P G (head.h) */
    for (size_t i = 0; i < (size_t)rank; i++) {
        const double *q = m + i * D;
        double *row = t + i * D; /* t is free again */
        for (size_t a = 0; a < D; a++) {
            double acc = 0;
            for (size_t b = 0; b <= a; b++) acc += l[a * D + b] * q[b];
            row[a] = acc;
            p[i * D + a] = (float)acc;
        }
        double inv = w[i] > 1e-12 * (w[0] > 0 ? w[0] : 1) ? 1.0 / w[i] : 0.0;
        for (size_t j = 0; j < D; j++) {
            double acc = 0;
            for (size_t a = 0; a < D; a++) acc += row[a] * g[a * D + j];
            w_down[i * D + j] = (float)(acc * inv);
        }
    }
    s = project_rows(U, p, rank, w_up);
done:
    free(g);
    free(m);
    free(w);
    free(l);
    free(t);
    free(p);
    return s;
}
