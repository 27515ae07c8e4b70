#include "verify/slrs.h"

#include "verify/verify.h"

int32_t hsd_verify_slrs(const float *p, const float *psi, int32_t n, int32_t t, bool greedy,
                        hsd_rng *rng, float *scratch, bool *accepted) {
    *accepted = false;
    if (greedy) {
        int32_t a = hsd_verify_argmax(p, n);
        *accepted = a == t;
        return a;
    }
    if (t >= 0 && t < n) {
        double u = hsd_rng_uniform_f64(rng);
        /* accept with probability min(1, p/psi): u * psi < p */
        if (psi[t] > 0 && u * (double)psi[t] < (double)p[t]) {
            *accepted = true;
            return t;
        }
    }
    return hsd_verify_residual(p, psi, n, rng, scratch);
}

double hsd_verify_slrs_expected(const float *p, const float *psi, int32_t n, double *exact_match) {
    double a = 0, em = 0;
    for (int32_t i = 0; i < n; i++) {
        a += p[i] < psi[i] ? p[i] : psi[i];
        em += (double)p[i] * psi[i];
    }
    if (exact_match) *exact_match = em;
    return a;
}
