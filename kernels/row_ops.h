/* Kernels over one vocabulary-sized row of logits or probabilities (150k-262k floats for real
 * vocabularies): argmax, max, exp-and-sum (softmax denominators), scaling, top-k selection,
 * threshold gathering and the logit soft-cap. Every token runs several of them, so each is one
 * vectorised pass (AVX2 or AVX-512, picked from hsd_cpu_level_active(), kernels/cpu_features.h)
 * with a scalar reference beside it.
 *
 * Rows are expected NaN-free; where a NaN would change a result the behaviour is stated. */
#ifndef HSD_KERNELS_ROW_OPS_H
#define HSD_KERNELS_ROW_OPS_H

#include <stddef.h>
#include <stdint.h>

/* Index of the largest value, the lowest index among equal ones (n >= 1). Bit-identical to the
 * scalar loop `if (x[i] > x[best]) best = i` on NaN-free rows; NaNs are skipped, and a row whose
 * x[0] is NaN gives 0 (as that loop does). */
int32_t hsd_row_argmax(const float *x, int32_t n);

/* The largest value (n >= 1; NaN-free rows). */
float hsd_row_max(const float *x, int32_t n);

/* out[i] = exp((x[i] - mx) * scale) and returns the sum of those values, accumulated in double
 * (out may be NULL: the sum alone, a softmax denominator). exp is a polynomial with a relative
 * error below 2.5e-7 (asserted in tests/test_row_ops.c against libm's double exp; measured 1.2e-7); -inf entries
 * give exactly 0. `mx` should be the row's max so that nothing overflows. */
double hsd_row_exp_sum(const float *x, int32_t n, float mx, float scale, float *out);

/* x[i] *= s. */
void hsd_row_scale(float *x, int32_t n, float s);

/* The k largest entries of x (1 <= k <= n) in decreasing order, the lower index first among
 * equal values (the order a stable sort by decreasing value gives): their indices go to
 * idx[0..k). One pass over the row with a min-heap of k entries (idx is that heap), so the cost
 * is O(n + k log(k) log(n / k)) rather than a sort of the row. NaNs are never selected while
 * k non-NaN entries exist. */
void hsd_row_topk(const float *x, int32_t n, int32_t k, int32_t *idx);

/* Indices i (increasing) with x[i] >= thr into idx; returns their count (idx needs room for
 * n entries in the worst case). */
int32_t hsd_row_gather_ge(const float *x, int32_t n, float thr, int32_t *idx);

/* The logit soft-cap of Gemma 2/3: finite x[i] become cap * tanh(x[i] / cap); +-inf and NaN stay
 * as they are (a trimmed draft head masks tokens with -inf). tanh is vectorised (Cephes' odd polynomial below
 * |x| = 0.625, 1 - 2 / (exp(2|x|) + 1) above) with a relative error below 2 x 2^-23 (measured
 * 1.5e-7, about 1.3 ulp), and cap * tanh(x / cap) below 3 x 2^-23 (measured 2.3e-7), both
 * asserted against libm's double tanh in tests/test_row_ops.c. The
 * last partial vector goes through the same vector code (padded), so an element's result does
 * not depend on where it sits in x: rows stay bit-identical whatever the batch. */
void hsd_row_softcap(float *x, size_t n, float cap);

#endif
