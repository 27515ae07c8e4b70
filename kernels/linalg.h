/* Dense symmetric linear algebra in double precision for building low-rank heads: the
 * eigen-decomposition of a Gram or covariance matrix (d x d, d = hidden size) and a Cholesky
 * factor. LAPACK's dsyevd from OpenBLAS is used when the build found it (HSD_HAVE_LAPACK);
 * otherwise a cyclic Jacobi method, which is exact to rounding but O(d^3) per sweep. */
#ifndef HSD_KERNELS_LINALG_H
#define HSD_KERNELS_LINALG_H

#include <stdint.h>

#include "hsd.h"

/* Eigen-decomposition of the symmetric n x n matrix a (row-major, both triangles set). On
 * success w[0..n) holds the eigenvalues in decreasing order and row i of a the unit
 * eigenvector of w[i]. */
hsd_status hsd_eig_sym(double *a, int32_t n, double *w);
/* The same with the Jacobi method whatever the build (kept callable so tests can compare). */
hsd_status hsd_eig_sym_jacobi(double *a, int32_t n, double *w);
/* Name of the solver hsd_eig_sym uses: "lapack dsyevd" or "jacobi". */
const char *hsd_eig_sym_solver(void);

/* Lower Cholesky factor in place (a = L L^T; the strict upper triangle is zeroed).
 * HSD_ERR_INVALID_ARG when a is not positive definite. */
hsd_status hsd_cholesky(double *a, int32_t n);

#endif
