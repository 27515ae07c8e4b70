/* CPU kernels of the reduced draft heads: top-k selection, the reference the CUDA kernels are
 * checked against. */
#ifndef HSD_KERNELS_HEAD_OPS_H
#define HSD_KERNELS_HEAD_OPS_H

#include <stdint.h>

#include "kernels/cpu_ops.h"

/* The k largest of s[0..n) (ties: the smaller index first; NaN counts as -inf) written to
 * idx in increasing index order, so that the indexed product walks U forwards. work holds n
 * int32. k is clamped to [0, n]; returns the number written. */
int32_t hsd_topk_ids(const float *s, int32_t n, int32_t k, int32_t *idx, int32_t *work);

#endif
