/* Token sampling from logits: greedy, temperature, top-k, top-p. Speculative verification
 * needs the filtered distribution itself (p(t), q(t)), so hsd_sample_probs exposes it and
 * hsd_sample is just probs + one uniform draw. */
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

/* Index of the largest logit; the lowest index wins ties (hsd_verify_argmax). */
int32_t hsd_sample_greedy(const float *logits, int32_t n);
/* probs[n] = the distribution sampling draws from: softmax(logits / temp), restricted to the
 * top_k largest and then to the smallest prefix of the sorted tokens whose mass reaches top_p,
 * renormalised; filtered tokens get exactly 0. For temp <= 0, one-hot at the argmax. */
hsd_status hsd_sample_probs(const float *logits, int32_t n, const hsd_sampler_params *p, float *probs);
/* Samples a token: hsd_sample_probs, then one draw (hsd_verify_draw with a 53-bit uniform,
 * the library's one way to draw); probs is scratch of n floats (NULL allowed for greedy). */
hsd_status hsd_sample(const float *logits, int32_t n, const hsd_sampler_params *p, hsd_rng *rng,
                      float *probs, int32_t *token);

#endif
