#include "lib/engine/sample.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/error.h"
#include "verify/verify.h"

int32_t hsd_sample_greedy(const float *logits, int32_t n) { return hsd_verify_argmax(logits, n); }

typedef struct prob_idx {
    float p;
    int32_t i;
} prob_idx;

static int by_prob_desc(const void *a, const void *b) {
    const prob_idx *x = a, *y = b;
    if (x->p != y->p) return x->p > y->p ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i; /* deterministic among equals */
}

hsd_status hsd_sample_probs(const float *logits, int32_t n, const hsd_sampler_params *p, float *probs) {
    if (!logits || !probs || n <= 0 || !p)
        return hsd_error(HSD_ERR_INVALID_ARG, "sample: bad arguments (n = %d)", n);
    if (!(p->temp > 0.0f)) {
        memset(probs, 0, (size_t)n * sizeof *probs);
        probs[hsd_sample_greedy(logits, n)] = 1.0f;
        return HSD_OK;
    }
    float mx = logits[0];
    for (int32_t i = 1; i < n; i++) mx = fmaxf(mx, logits[i]);
    double sum = 0.0;
    for (int32_t i = 0; i < n; i++) sum += probs[i] = expf((logits[i] - mx) / p->temp);
    for (int32_t i = 0; i < n; i++) probs[i] = (float)(probs[i] / sum);
    bool use_k = p->top_k > 0 && p->top_k < n, use_p = p->top_p > 0.0f && p->top_p < 1.0f;
    if (!use_k && !use_p) return HSD_OK;

    /* Candidates: with top-p alone, tokens below (1-top_p)/(n-1) can never be inside the
     * nucleus (run.c's trick), which keeps the sort short for big vocabularies. */
    float cutoff = use_p && !use_k ? (1.0f - p->top_p) / (float)(n - 1) : 0.0f;
    prob_idx *c = malloc((size_t)n * sizeof *c);
    if (!c) return hsd_error(HSD_ERR_NOMEM, "sample: out of memory");
    int32_t m = 0;
    for (int32_t i = 0; i < n; i++)
        if (probs[i] >= cutoff) c[m++] = (prob_idx){probs[i], i};
    qsort(c, (size_t)m, sizeof *c, by_prob_desc);
    int32_t keep = use_k && p->top_k < m ? p->top_k : m;
    if (use_p) {
        double mass = 0.0, total = 0.0;
        for (int32_t j = 0; j < keep; j++) total += c[j].p;
        for (int32_t j = 0; j < keep; j++) {
            mass += c[j].p;
            if (mass >= p->top_p * total) {
                keep = j + 1;
                break;
            }
        }
    }
    double kept = 0.0;
    for (int32_t j = 0; j < keep; j++) kept += c[j].p;
    memset(probs, 0, (size_t)n * sizeof *probs);
    for (int32_t j = 0; j < keep; j++) probs[c[j].i] = (float)(c[j].p / kept);
    free(c);
    return HSD_OK;
}

hsd_status hsd_sample(const float *logits, int32_t n, const hsd_sampler_params *p, hsd_rng *rng,
                      float *probs, int32_t *token) {
    if (!(p->temp > 0.0f)) {
        *token = hsd_sample_greedy(logits, n);
        return HSD_OK;
    }
    hsd_status s = hsd_sample_probs(logits, n, p, probs);
    if (s != HSD_OK) return s;
    *token = hsd_verify_draw(probs, n, hsd_rng_uniform_f64(rng));
    return HSD_OK;
}
