/* The round cost model of speculative decoding, measured on the real models.
 *
 * AR spends one target forward over 1 token per emitted token: c_t(1). A speculative round
 * spends k' drafter forwards (1 new token each, c_d) and one target forward over the pending
 * token plus the m candidates, c_t(m+1), and emits τ tokens on average. Per token that is
 * (k'·c_d + c_t(m+1)) / τ, so
 *
 *     speedup = τ · c_t(1) / (k' · c_d + c_t(m+1)).
 *
 * The bridge, sampling and bookkeeping are left out on purpose: the ratio measured/predicted
 * then says how much of the ideal the implementation's overheads eat. */
#include <stdlib.h>

#include "cli/clock.h"
#include "cli/bench_generate.h"
#include "hsd.h"

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median ms of one forward over n tokens after a prefix, all n rows' logits requested (the
 * verification needs every row); the cache is cut back after each repetition. */
static double median_forward(hsd_model *m, int32_t prefix, int32_t n, int32_t rows_all,
                             const int32_t *toks, float *logits) {
    enum { MAX_REPS = 400 };
    double times[MAX_REPS];
    int32_t last = n - 1;
    double budget = cli_timer_ms() + 60; /* ~60 ms per point keeps the sweep short */
    int r = 0;
    /* 3 repetitions suffice for a forward over 50 ms (a 1B model on a CPU), which would
     * otherwise make the sweep take many minutes */
    while (r < MAX_REPS && (r < (r > 0 && times[0] > 50 ? 3 : 7) || cli_timer_ms() < budget)) {
        double t0 = cli_timer_ms();
        hsd_status s = rows_all ? hsd_model_forward(m, toks + prefix, n, NULL, NULL, n, logits)
                                : hsd_model_forward(m, toks + prefix, n, NULL, &last, 1, logits);
        times[r++] = cli_timer_ms() - t0;
        hsd_model_kv_truncate(m, prefix);
        if (s) return -1;
    }
    qsort(times, (size_t)r, sizeof *times, cmp_d);
    return times[r / 2];
}

static int measure_one(hsd_model *m, int32_t prefix, int32_t max_n, int rows_all, double *out) {
    int32_t V = hsd_model_vocab_size(m);
    if (prefix + max_n > hsd_model_n_ctx(m)) prefix = hsd_model_n_ctx(m) - max_n;
    if (prefix < 1) prefix = 1;
    int32_t *toks = malloc((size_t)(prefix + max_n) * sizeof *toks);
    float *logits = malloc((size_t)max_n * (size_t)V * sizeof *logits);
    int rc = 1;
    if (!toks || !logits) goto done;
    cli_rng r;
    cli_rng_init(&r, 11);
    /* ids do not change the arithmetic; random ones avoid any accidental structure */
    for (int32_t i = 0; i < prefix + max_n; i++) toks[i] = (int32_t)(cli_rng_u32(&r) % (uint32_t)V);
    if (hsd_model_kv_truncate(m, 0) || hsd_model_forward(m, toks, prefix, NULL, NULL, 0, NULL)) goto done;
    median_forward(m, prefix, 1, rows_all, toks, logits); /* warm-up */
    /* every n up to 8, then a sparse grid with linear interpolation between its points:
     * c(n) is close to linear there, and a 1B model's sweep over all 48 took 10+ minutes */
    int32_t prev = 0;
    for (int32_t n = 1; n <= max_n; n++) {
        if (n > 8 && n != max_n && n % (n < 24 ? 4 : 8)) continue;
        if ((out[n] = median_forward(m, prefix, n, rows_all, toks, logits)) < 0) goto done;
        for (int32_t j = prev + 1; j < n; j++)
            out[j] = out[prev] + (out[n] - out[prev]) * (j - prev) / (n - prev);
        prev = n;
    }
    rc = hsd_model_kv_truncate(m, 0) != HSD_OK;
done:
    if (rc) fprintf(stderr, "hsd bench generate: cost measurement: %s\n", hsd_last_error());
    free(toks);
    free(logits);
    return rc;
}

int hsd_bench_cost_measure(hsd_model *target, hsd_model *draft, hsd_model *self,
                           int32_t t_prefix, int32_t d_prefix, hsd_bench_cost *out) {
    double one[2];
    out->t_prefix = t_prefix;
    out->d_prefix = d_prefix;
    out->c_target[0] = 0;
    int32_t max_n = HSD_BENCH_COST_MAX_N;
    if (max_n > hsd_model_n_ctx(target) / 2) max_n = hsd_model_n_ctx(target) / 2;
    if (measure_one(target, t_prefix, max_n, 1, out->c_target)) return 1;
    for (int32_t n = max_n + 1; n <= HSD_BENCH_COST_MAX_N; n++) /* extrapolate linearly */
        out->c_target[n] = out->c_target[n - 1] + (out->c_target[max_n] - out->c_target[max_n - 1]);
    out->c_draft = out->c_self = 0;
    if (draft && measure_one(draft, d_prefix, 1, 0, one)) return 1;
    if (draft) out->c_draft = one[1];
    if (self && measure_one(self, t_prefix, 1, 0, one)) return 1;
    if (self) out->c_self = one[1];
    return 0;
}

double hsd_bench_cost_target(const hsd_bench_cost *c, double n) {
    const int N = HSD_BENCH_COST_MAX_N;
    if (n <= 1) return c->c_target[1];
    if (n >= N) return c->c_target[N] + (n - N) * (c->c_target[N] - c->c_target[N - 1]);
    int i = (int)n;
    double f = n - i;
    return c->c_target[i] * (1 - f) + c->c_target[i + 1] * f;
}

void hsd_bench_predict(hsd_bench_cell *c, const hsd_bench_cell *ar, const hsd_bench_cost *cost) {
    double rounds = c->rounds > 0 ? (double)c->rounds : 1;
    c->m = c->drafted / rounds;
    c->k_prime = c->d_fwd / rounds;
    c->tau_all = c->tokens / rounds;
    double cd = c->algo == HSD_ALGO_SD ? cost->c_self : cost->c_draft;
    double denom = c->algo == HSD_ALGO_AR ? cost->c_target[1]
                                          : c->k_prime * cd + hsd_bench_cost_target(cost, c->m + 1);
    c->predicted = denom > 0 ? c->tau_all * cost->c_target[1] / denom : 0;
    c->measured = c->measured_e2e = 0;
    if (ar && ar->runs && c->runs) {
        double a = ar->dec_tps / ar->runs, b = ar->tps / ar->runs;
        c->measured = a > 0 ? (c->dec_tps / c->runs) / a : 0;
        c->measured_e2e = b > 0 ? (c->tps / c->runs) / b : 0;
    }
}
