#include "kernels/linalg.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/error.h"

#ifdef HSD_HAVE_LAPACK
/* Fortran LAPACK from OpenBLAS; no lapacke.h is needed for one routine. */
void dsyevd_(const char *jobz, const char *uplo, const int *n, double *a, const int *lda, double *w,
             double *work, const int *lwork, int *iwork, const int *liwork, int *info);
#endif

/* Sorts eigenpairs (row i of vec belongs to w[i]) into decreasing order of w. */
static void sort_desc(double *vec, int32_t n, double *w) {
    double *row = malloc((size_t)n * sizeof *row);
    for (int32_t i = 0; i < n; i++) {
        int32_t best = i;
        for (int32_t j = i + 1; j < n; j++)
            if (w[j] > w[best]) best = j;
        if (best == i) continue;
        double t = w[i];
        w[i] = w[best];
        w[best] = t;
        if (row) {
            memcpy(row, vec + (size_t)i * n, (size_t)n * sizeof *row);
            memcpy(vec + (size_t)i * n, vec + (size_t)best * n, (size_t)n * sizeof *row);
            memcpy(vec + (size_t)best * n, row, (size_t)n * sizeof *row);
        }
    }
    free(row);
}

hsd_status hsd_eig_sym_jacobi(double *a, int32_t n, double *w) {
    if (n <= 0 || !a || !w) return hsd_error(HSD_ERR_INVALID_ARG, "eig_sym: n = %d", n);
    size_t N = (size_t)n;
    double *v = calloc(N * N, sizeof *v);
    if (!v) return hsd_error(HSD_ERR_NOMEM, "eig_sym: out of memory for %d x %d", n, n);
    for (size_t i = 0; i < N; i++) v[i * N + i] = 1.0;
    double total = 0;
    for (size_t i = 0; i < N * N; i++) total += a[i] * a[i];
    for (int sweep = 0; sweep < 100; sweep++) {
        double off = 0;
        for (size_t p = 0; p < N; p++)
            for (size_t q = p + 1; q < N; q++) off += a[p * N + q] * a[p * N + q];
        if (off <= 1e-30 * total || off == 0) break;
        for (size_t p = 0; p < N; p++)
            for (size_t q = p + 1; q < N; q++) {
                double apq = a[p * N + q];
                if (apq == 0) continue;
                /* rotation that zeroes a[p][q] (Golub & Van Loan, sym.schur2) */
                double tau = (a[q * N + q] - a[p * N + p]) / (2 * apq);
                double t = (tau >= 0 ? 1.0 : -1.0) / (fabs(tau) + sqrt(1 + tau * tau));
                double c = 1 / sqrt(1 + t * t), s = t * c;
                for (size_t k = 0; k < N; k++) { /* columns p, q */
                    double akp = a[k * N + p], akq = a[k * N + q];
                    a[k * N + p] = c * akp - s * akq;
                    a[k * N + q] = s * akp + c * akq;
                }
                for (size_t k = 0; k < N; k++) { /* rows p, q */
                    double apk = a[p * N + k], aqk = a[q * N + k];
                    a[p * N + k] = c * apk - s * aqk;
                    a[q * N + k] = s * apk + c * aqk;
                }
                for (size_t k = 0; k < N; k++) { /* eigenvectors as rows of v */
                    double vpk = v[p * N + k], vqk = v[q * N + k];
                    v[p * N + k] = c * vpk - s * vqk;
                    v[q * N + k] = s * vpk + c * vqk;
                }
            }
    }
    for (size_t i = 0; i < N; i++) w[i] = a[i * N + i];
    memcpy(a, v, N * N * sizeof *a);
    free(v);
    sort_desc(a, n, w);
    return HSD_OK;
}

const char *hsd_eig_sym_solver(void) {
#ifdef HSD_HAVE_LAPACK
    return "lapack dsyevd";
#else
    return "jacobi";
#endif
}

hsd_status hsd_eig_sym(double *a, int32_t n, double *w) {
#ifdef HSD_HAVE_LAPACK
    if (n <= 0 || !a || !w) return hsd_error(HSD_ERR_INVALID_ARG, "eig_sym: n = %d", n);
    int N = n, lwork = -1, liwork = -1, info = 0, iq;
    double wq;
    dsyevd_("V", "U", &N, a, &N, w, &wq, &lwork, &iq, &liwork, &info); /* workspace query */
    if (info != 0) return hsd_error(HSD_ERR_INTERNAL, "dsyevd workspace query: info %d", info);
    lwork = (int)wq + 1;
    liwork = iq + 1;
    double *work = malloc((size_t)lwork * sizeof *work);
    int *iwork = malloc((size_t)liwork * sizeof *iwork);
    if (!work || !iwork) {
        free(work);
        free(iwork);
        return hsd_error(HSD_ERR_NOMEM, "eig_sym: out of memory for %d x %d", n, n);
    }
    /* a symmetric row-major matrix is its own column-major transpose; the eigenvectors come
     * back as columns (column-major), i.e. as rows of the row-major view */
    dsyevd_("V", "U", &N, a, &N, w, work, &lwork, iwork, &liwork, &info);
    free(work);
    free(iwork);
    if (info != 0) return hsd_error(HSD_ERR_INTERNAL, "dsyevd failed to converge (info %d)", info);
    sort_desc(a, n, w); /* LAPACK gives increasing order */
    return HSD_OK;
#else
    return hsd_eig_sym_jacobi(a, n, w);
#endif
}

hsd_status hsd_cholesky(double *a, int32_t n) {
    size_t N = (size_t)n;
    for (size_t j = 0; j < N; j++) {
        double d = a[j * N + j];
        for (size_t k = 0; k < j; k++) d -= a[j * N + k] * a[j * N + k];
        if (!(d > 0))
            return hsd_error(HSD_ERR_INVALID_ARG,
                             "cholesky: matrix is not positive definite (pivot %zu)", j);
        double l = sqrt(d);
        a[j * N + j] = l;
        for (size_t i = j + 1; i < N; i++) {
            double s = a[i * N + j];
            for (size_t k = 0; k < j; k++) s -= a[i * N + k] * a[j * N + k];
            a[i * N + j] = s / l;
        }
        for (size_t i = j + 1; i < N; i++) a[j * N + i] = 0;
    }
    return HSD_OK;
}
