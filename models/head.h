/* Draft LM heads: what replaces a model's final classifier U (vocab x dim) when the model
 * drafts. Every head fills vocab_size logits per row; ids it does not score get -INFINITY so
 * their probability is exactly 0 and speculative verification stays lossless.
 *
 *   FULL         U h;
 *   TRIMMED      rows keep[] of U, gathered once into a packed copy so the product streams;
 *   SPECULATIVE  SpecVocab: s = W_vocab (W_down h), K = top-k(s), exact U[K] h read row by
 *                row from U itself;
 *   LOWRANK      SlimSpec: z = W_up (W_down h) for every id.
 * The factors (down [rank][dim], up [vocab][rank]) are loaded from safetensors or built from
 * U by a truncated SVD (hsd_head_svd_factors). */
#ifndef HSD_MODELS_HEAD_H
#define HSD_MODELS_HEAD_H

#include <stdint.h>

#include "hsd.h"
#include "kernels/cpu_ops.h"
#include "kernels/threadpool.h"

typedef struct hsd_head hsd_head;

/* Builds a head over the classifier `cls` (borrowed: it must outlive the head). calib, when
 * not NULL, holds n_calib hidden states (dim floats each, as the classifier sees them) that
 * weight the SVD; it is ignored when the factors come from a file. `src` names the model in
 * messages. FULL is accepted (a plain U h head, used by benchmarks). */
hsd_status hsd_head_create(const hsd_mat *cls, const hsd_head_params *p, const float *calib,
                           int32_t n_calib, const char *src, hsd_head **out);
void hsd_head_free(hsd_head *h);
hsd_head_kind hsd_head_get_kind(const hsd_head *h);
/* One line, e.g. "speculative: top-k 2048 of 152064, router rank 512 (svd)". */
const char *hsd_head_desc(const hsd_head *h);

/* logits[t][0..vocab) for the n rows of x (dim floats each). pool may be NULL (one thread). */
hsd_status hsd_head_forward(hsd_head *h, hsd_pool *pool, int32_t n_threads, const float *x,
                            int32_t n, float *logits);

/* Introspection for tests and other backends: the factors (0 when the head has none). */
int32_t hsd_head_factors(const hsd_head *h, hsd_mat *down, hsd_mat *up);

/* Writes the head's factors as F32 safetensors under the names of its kind (hsd.h). */
hsd_status hsd_head_save(const hsd_head *h, const char *path);

/* Truncated SVD of U at `rank`: w_down [rank][dim] = V_r^T (orthonormal rows) and w_up
 * [vocab][rank] = U V_r = U_r S_r, so w_up w_down is the best rank-r approximation of U.
 * With calib (n_calib hidden states h) the approximation minimises sum_h |U h - w_up w_down h|^2
 * instead (the covariance C of h weights the rows: W_up W_down = P P^T U with P the top left
 * singular vectors of U L, C = L L^T). sigma2, if not NULL, receives the dim eigenvalues of
 * U^T U (or L^T U^T U L) in decreasing order: the squared singular values. */
hsd_status hsd_head_svd_factors(const hsd_mat *U, int32_t rank, const float *calib, int32_t n_calib,
                                float *w_down, float *w_up, double *sigma2);

/* Safetensors I/O of a factor pair (names per kind, see hsd.h). load checks dtypes and
 * shapes against vocab and dim and returns f32 copies (caller frees) and the rank. */
hsd_status hsd_head_factors_load(const char *path, hsd_head_kind kind, int32_t vocab, int32_t dim,
                                 float **down, float **up, int32_t *rank);
hsd_status hsd_head_factors_save(const char *path, hsd_head_kind kind, const hsd_mat *down,
                                 const hsd_mat *up);
/* Tensor names of a kind's factors ("lm_head.w_down"/"lm_head.w_up" or
 * "router.w_down"/"router.w_vocab"). */
void hsd_head_factor_names(hsd_head_kind kind, const char **down, const char **up);

/* A capture head collects the rows it is given instead of scoring them (calibration). */
hsd_status hsd_head_capture_create(int32_t dim, int32_t vocab, int32_t max_rows, hsd_head **out);
const float *hsd_head_captured(const hsd_head *h, int32_t *n_rows);

#endif
