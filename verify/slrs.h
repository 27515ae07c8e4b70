/* String-level rejection sampling (Alg 3) for one target position, as a pure function.
 *
 * The candidate t was drawn from psi (the law of the draft's target token at this position,
 * see lib/engine/slrs_tree.h); t < 0 means the draft proposed nothing here, an outcome whose target
 * probability is 0 (its psi mass is 1 - sum(psi)). The target's token is then:
 *   t with probability min(1, p(t)/psi(t)), else a draw from norm(max(0, p - psi)),
 * which is distributed exactly as p (Thm 3.2). Greedy (temperature 0): psi and p are one-hot
 * and the rule reduces to "accept t iff it is argmax p, else argmax p", which is what this
 * function does directly so greedy output equals autoregressive argmax decoding even on
 * ties. Draws: one uniform for the test (when t is a real candidate), one for a resample. */
#ifndef HSD_VERIFY_SLRS_H
#define HSD_VERIFY_SLRS_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/base/rng.h"

/* p, psi: n entries. scratch: n floats. Returns the emitted token; *accepted tells whether it
 * is the candidate. */
int32_t hsd_verify_slrs(const float *p, const float *psi, int32_t n, int32_t t, bool greedy,
                        hsd_rng *rng, float *scratch, bool *accepted);

/* Expected acceptance of one position: sum_t min(p(t), psi(t)) (SLRS, Table 3) and, into
 * *exact_match (optional), sum_t p(t) psi(t) — what exact matching (SLEM) accepts with the same
 * proposal. The first is never smaller (Thm 3.1). */
double hsd_verify_slrs_expected(const float *p, const float *psi, int32_t n, double *exact_match);

#endif
