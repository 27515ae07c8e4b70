/* The sampler's truncated distributions (lib/engine/sample.h: heap top-k, quickselect top-p,
 * no sort of the vocabulary) against a float64 reference that sorts the whole row: the same
 * kept set (ties at the k-th value and inside the nucleus broken by the lower id), the same
 * renormalised probabilities within float rounding, exact zeros elsewhere, the support the
 * workspace reports, and draws over that support equal to hsd_verify_draw over the row. Random
 * rows of 1..151,936 entries, continuous, coarsely rounded (many ties) and with -inf entries. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/rng.h"
#include "lib/engine/sample.h"
#include "tests/testutil.h"
#include "verify/verify.h"

typedef struct {
    float v;
    int32_t i;
} vi;

static int by_logit(const void *a, const void *b) {
    const vi *x = a, *y = b;
    if (x->v != y->v) return x->v > y->v ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

/* Box-Muller from the counter RNG */
static double gauss(hsd_rng *r) {
    double u = hsd_rng_uniform_f64(r), v = hsd_rng_uniform_f64(r);
    return sqrt(-2.0 * log(1.0 - u)) * cos(6.283185307179586 * v);
}

static void test_against_float64(void **state) {
    (void)state;
    const int32_t sizes[] = {1, 2, 5, 40, 41, 1000, 32000, 151936};
    const float temps[] = {0.6f, 1.0f, 1.5f};
    const float tops_p[] = {1.0f, 0.9f, 0.5f, 0.05f};
    const int32_t NMAX = 151936;
    float *logits = malloc(NMAX * sizeof *logits), *probs = malloc(NMAX * sizeof *probs);
    double *ref = malloc(NMAX * sizeof *ref), *e = malloc(NMAX * sizeof *e);
    vi *ord = malloc(NMAX * sizeof *ord);
    assert_true(logits && probs && ref && e && ord);
    hsd_sampler_ws w = {0};
    assert_int_equal(hsd_sampler_ws_reserve(&w, NMAX), HSD_OK);
    hsd_rng r;
    hsd_rng_init(&r, 2022, 5);
    long rows = 0, ambiguous = 0, kept_total = 0;
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
        for (int kind = 0; kind < 3; kind++)
            for (int rep = 0; rep < 2; rep++) {
                const int32_t n = sizes[si];
                const double sigma = rep ? 4.0 : 1.5;
                for (int32_t i = 0; i < n; i++) {
                    double g = sigma * gauss(&r);
                    logits[i] = kind == 1 ? (float)(round(g * 2.0) / 2.0) /* ties */
                                : kind == 2 && hsd_rng_uniform(&r) < 0.2f ? -INFINITY
                                                                          : (float)g;
                }
                if (kind == 2) logits[n / 2] = 0.0f; /* at least one finite */
                for (int32_t i = 0; i < n; i++) ord[i] = (vi){logits[i], i};
                qsort(ord, (size_t)n, sizeof *ord, by_logit);
                const int32_t ks[] = {0, 1, 2, 40, n - 1, n, n + 5};
                for (size_t ti = 0; ti < sizeof temps / sizeof temps[0]; ti++)
                    for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++)
                        for (size_t pi = 0; pi < sizeof tops_p / sizeof tops_p[0]; pi++) {
                            const hsd_sampler_params sp = {temps[ti], ks[ki], tops_p[pi]};
                            /* the float64 reference: sort, cut to k, then to the nucleus */
                            const double mx = ord[0].v, T = sp.temp;
                            int32_t K = sp.top_k > 0 && sp.top_k < n ? sp.top_k : n;
                            double total = 0;
                            for (int32_t j = 0; j < K; j++) total += e[j] = exp((ord[j].v - mx) / T);
                            bool amb = false;
                            if (sp.top_p < 1.0f) {
                                double acc = 0, need = (double)sp.top_p * total;
                                for (int32_t j = 0; j < K; j++) {
                                    double before = acc;
                                    acc += e[j];
                                    if (acc >= need) {
                                        /* float rounding may move a cut this close */
                                        amb = acc - need < 1e-5 * total || need - before < 1e-5 * total;
                                        K = j + 1;
                                        break;
                                    }
                                }
                            }
                            rows++;
                            if (amb) {
                                ambiguous++;
                                continue;
                            }
                            double kept = 0;
                            for (int32_t j = 0; j < K; j++) kept += e[j];
                            for (int32_t i = 0; i < n; i++) ref[i] = 0;
                            for (int32_t j = 0; j < K; j++) ref[ord[j].i] = e[j] / kept;
                            assert_int_equal(hsd_sample_probs_ws(&w, logits, n, &sp, probs), HSD_OK);
                            int32_t nz = 0;
                            for (int32_t i = 0; i < n; i++) {
                                if (ref[i] == 0 || ref[i] < 1e-30) { /* cut, or below float */
                                    if (ref[i] == 0) assert_true(probs[i] == 0.0f);
                                    nz += probs[i] > 0;
                                    continue;
                                }
                                nz++;
                                /* float rounding: ~1e-6 from exp, the sums and the division,
                                 * plus the exponent's argument (logit - max) / T computed in
                                 * float, 2 x 2^-24 relative to it */
                                double arg = (mx - logits[i]) / T, tol = 1e-6 + 2.4e-7 * arg;
                                if (!(fabs(probs[i] - ref[i]) <= tol * ref[i] + 1e-37))
                                    printf("n %d kind %d T %g k %d p %g: id %d %.9g, float64 %.12g\n",
                                           (int)n, kind, T, (int)sp.top_k, sp.top_p, (int)i, probs[i], ref[i]);
                                assert_true(fabs(probs[i] - ref[i]) <= tol * ref[i] + 1e-37);
                            }
                            kept_total += K;
                            /* the support: exactly the nonzero ids, increasing */
                            if (w.n_support >= 0) {
                                assert_int_equal(w.n_support, nz);
                                for (int32_t j = 0; j < w.n_support; j++) {
                                    assert_true(probs[w.support[j]] > 0);
                                    if (j) assert_true(w.support[j] > w.support[j - 1]);
                                }
                            } else {
                                assert_true(sp.top_p >= 1.0f && (sp.top_k <= 0 || sp.top_k >= n));
                            }
                            /* draws over the support are hsd_verify_draw's */
                            for (int d = 0; d < 8; d++) {
                                double u = d == 7 ? 0.9999999999999999 : hsd_rng_uniform_f64(&r);
                                assert_int_equal(hsd_sample_draw_ws(&w, probs, n, u),
                                                 hsd_verify_draw(probs, n, u));
                            }
                        }
            }
    printf("  %ld rows x parameters compared, %ld kept ids in all, %ld skipped with a top-p cut "
           "within 1e-5 of the mass (float rounding may move it)\n",
           rows, kept_total, ambiguous);
    assert_true(ambiguous * 20 < rows); /* the comparison covers nearly every case */
    /* greedy: one-hot at the lowest-index argmax, support {it} */
    float l[5] = {1.0f, 4.0f, -2.0f, 4.0f, 0.0f}, pr[5];
    const hsd_sampler_params g = {0.0f, 40, 0.9f};
    assert_int_equal(hsd_sample_probs_ws(&w, l, 5, &g, pr), HSD_OK);
    assert_true(pr[1] == 1.0f && pr[0] == 0 && pr[3] == 0);
    assert_true(w.n_support == 1 && w.support[0] == 1);
    /* a row longer than the workspace is an error, not an overrun */
    hsd_sampler_ws small = {0};
    assert_int_equal(hsd_sampler_ws_reserve(&small, 4), HSD_OK);
    assert_int_not_equal(hsd_sample_probs_ws(&small, l, 5, &g, pr), HSD_OK);
    hsd_sampler_ws_free(&small);
    hsd_sampler_ws_free(&w);
    free(logits), free(probs), free(ref), free(e), free(ord);
}

/* The sampled frequencies of a top-k + top-p row with ties at the k-th value follow the
 * float64 truncated law (chi-square): what the engine's draws see. */
static void test_sampled_frequencies(void **state) {
    (void)state;
    /* k = 3 cuts inside the tie {2.0 at ids 1, 4, 6}: ids 0 (3.0), 1, 4 stay; top-p 0.95 of
     * those keeps all three (0.95 * (e^3 + 2 e^2) falls inside the last one) */
    const float l[8] = {3.0f, 2.0f, -1.0f, 0.5f, 2.0f, -INFINITY, 2.0f, 1.0f};
    const hsd_sampler_params sp = {1.0f, 3, 0.95f};
    double z = exp(3.0) + 2 * exp(2.0), law[8] = {0};
    law[0] = exp(3.0) / z, law[1] = law[4] = exp(2.0) / z;
    float probs[8];
    hsd_sampler_ws w = {0};
    assert_int_equal(hsd_sampler_ws_reserve(&w, 8), HSD_OK);
    hsd_rng r;
    hsd_rng_init(&r, 7, 9);
    long obs[8] = {0};
    const long N = 60000;
    for (long t = 0; t < N; t++) {
        assert_int_equal(hsd_sample_probs_ws(&w, l, 8, &sp, probs), HSD_OK);
        obs[hsd_sample_draw_ws(&w, probs, 8, hsd_rng_uniform_f64(&r))]++;
    }
    assert_true(obs[2] == 0 && obs[3] == 0 && obs[5] == 0 && obs[6] == 0 && obs[7] == 0);
    int df;
    double chi = hsd_test_chi2(obs, law, 8, N, &df);
    double pv = hsd_test_chi2_pvalue(chi, df);
    printf("  chi2 %.3f, %d dof, p = %.3f\n", chi, df, pv);
    assert_true(pv > 1e-3);
    hsd_sampler_ws_free(&w);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_float64),
        cmocka_unit_test(test_sampled_frequencies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
