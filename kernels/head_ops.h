/* CPU kernels of the reduced draft heads: the indexed LM-head product (SpecVocab's "read each
 * selected row of U once") and top-k selection. They are the reference the CUDA kernels are
 * checked against. */
#ifndef HSD_KERNELS_HEAD_OPS_H
#define HSD_KERNELS_HEAD_OPS_H

#include <stdint.h>

#include "kernels/cpu_ops.h"

/* out[j] = dot(w[ids[j]], x) for j < k. Each selected row is read once, straight from w in its
 * storage type (no gathered copy); runs of consecutive ids go through the row kernel
 * together. ids must lie in [0, w->rows). scratch: 4*w->cols floats. */
void hsd_matvec_indexed(float *out, const float *x, const hsd_mat *w, const int32_t *ids, int32_t k,
                        float *scratch);

/* The k largest of s[0..n) (ties: the smaller index first; NaN counts as -inf) written to
 * idx in increasing index order, so that the indexed product walks U forwards. work holds n
 * int32. k is clamped to [0, n]; returns the number written. */
int32_t hsd_topk_ids(const float *s, int32_t n, int32_t k, int32_t *idx, int32_t *work);

#endif
