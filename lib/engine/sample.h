/* Token sampling from logits: greedy, temperature, top-k, top-p. Speculative verification
 * needs the filtered distribution itself (p(t), q(t)), so hsd_sample_probs exposes it and
 * hsd_sample is just probs + one uniform draw.
 *
 * The work per row is a few vectorised passes (kernels/row_ops.h) and no sort of the
 * vocabulary: top-k is a one-pass heap selection of k entries, top-p a weighted quickselect on
 * the tokens that can be in the nucleus, and both run in a workspace allocated once (per
 * engine sequence), so sampling a row allocates nothing. */
#ifndef HSD_LIB_SAMPLE_H
#define HSD_LIB_SAMPLE_H

#include <stdint.h>

#include "hsd.h"
#include "lib/base/rng.h"

typedef struct hsd_sampler_params {
    float temp;    /* <= 0: greedy */
    int32_t top_k; /* <= 0 or >= n: off */
    float top_p;   /* >= 1: off */
} hsd_sampler_params;

/* Scratch of the sampler for rows of up to `cap` entries, and the support of the last row
 * hsd_sample_probs_ws wrote: when n_support >= 0, exactly the ids support[0..n_support) in
 * increasing order may have nonzero probability (greedy, top-k or top-p rows), which lets
 * callers work on those ids alone; n_support = -1 when every id may (plain temperature). */
typedef struct hsd_sampler_ws {
    int32_t *idx; /* candidates, then the support */
    float *val;   /* their weights */
    int32_t cap;
    const int32_t *support;
    int32_t n_support;
} hsd_sampler_ws;

/* Room for rows of n entries (allocates only when n grows past the capacity). */
hsd_status hsd_sampler_ws_reserve(hsd_sampler_ws *w, int32_t n);
void hsd_sampler_ws_free(hsd_sampler_ws *w);

/* Index of the largest logit; the lowest index wins ties (hsd_verify_argmax). */
int32_t hsd_sample_greedy(const float *logits, int32_t n);
/* probs[n] = the distribution sampling draws from: softmax(logits / temp), restricted to the
 * top_k largest and then to the smallest prefix of the sorted tokens whose mass reaches top_p
 * of the remaining mass, renormalised; filtered tokens get exactly 0. Sorted means by
 * decreasing logit, the lower id first among equal logits (so ties at the k-th value keep the
 * lower ids). For temp <= 0, one-hot at the argmax. w must have room for n
 * (hsd_sampler_ws_reserve); it receives the row's support. */
hsd_status hsd_sample_probs_ws(hsd_sampler_ws *w, const float *logits, int32_t n,
                               const hsd_sampler_params *p, float *probs);
/* The same with a workspace of its own (allocated per call: for tests and one-off rows). */
hsd_status hsd_sample_probs(const float *logits, int32_t n, const hsd_sampler_params *p, float *probs);
/* Samples a token: hsd_sample_probs, then one draw (hsd_verify_draw with a 53-bit uniform,
 * the library's one way to draw); probs is scratch of n floats (NULL allowed for greedy). */
hsd_status hsd_sample(const float *logits, int32_t n, const hsd_sampler_params *p, hsd_rng *rng,
                      float *probs, int32_t *token);
/* One draw from a row hsd_sample_probs_ws just wrote, over its support when it has one: the
 * same token hsd_verify_draw(probs, n, u) returns, in O(support) instead of O(n). */
int32_t hsd_sample_draw_ws(const hsd_sampler_ws *w, const float *probs, int32_t n, double u);

#endif
