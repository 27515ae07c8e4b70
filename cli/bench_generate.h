/* Shared pieces of `hsd bench generate`: per-cell aggregates, the round cost model and the
 * plot. A "cell" is one (direction, algorithm, temperature, prompt set). */
#ifndef HSD_CLI_BENCH_GENERATE_H
#define HSD_CLI_BENCH_GENERATE_H

#include <stdint.h>
#include <stdio.h>

#include "hsd.h"

#define HSD_BENCH_COST_MAX_N 48 /* c_target(n) is measured for n = 1..this */

/* Measured forward costs of one direction (ms, medians). */
typedef struct hsd_bench_cost {
    int32_t t_prefix, d_prefix;                   /* cached context the costs were taken at */
    double c_target[HSD_BENCH_COST_MAX_N + 1];    /* [n]: one target forward over n tokens */
    double c_draft;                               /* one drafter forward over 1 token */
    double c_self;                                /* SD's drafter (target copy), 1 token */
} hsd_bench_cost;

typedef struct hsd_bench_cell {
    int dir, algo, set;
    float temp;
    int runs;
    /* sums over runs (means are taken at print time) */
    double tps, dec_tps, tau, acc, ttft, tpot, draft_ms, verify_ms, bridge_ms, total_ms;
    long rounds, drafted, accepted, tokens, d_fwd;
    int mismatches;
    /* SLEM/SLRS sums: first-candidate acceptance; SLRS: expected acceptance (SLRS rule and
     * exact matching on the same proposal), per-round psi time, tree nodes, drafter forwards */
    double first_acc, exp_acc, exp_em, psi_ms, tree_nodes, tree_fwd;
    /* filled by hsd_bench_predict */
    double m, k_prime, tau_all, predicted, measured, measured_e2e;
} hsd_bench_cell;

/* c_target at a fractional token count, linearly interpolated (extrapolated past the last
 * measured n with the last slope). */
double hsd_bench_cost_target(const hsd_bench_cost *c, double n);
/* Measures the costs with hsd_model_forward directly (median of repetitions). self may be
 * NULL. Returns 0 or prints the error and returns 1. */
int hsd_bench_cost_measure(hsd_model *target, hsd_model *draft, hsd_model *self,
                           int32_t t_prefix, int32_t d_prefix, hsd_bench_cost *out);
/* Fills m, k', τ and the predicted speedup of a cell; ar is the matching AR cell (for the
 * measured speedup) or NULL. */
void hsd_bench_predict(hsd_bench_cell *c, const hsd_bench_cell *ar, const hsd_bench_cost *cost);

#define HSD_BENCH_FORMULA                                                                  \
    "predicted speedup = tau * c_t(1) / (k' * c_d + c_t(m+1)); tau = tokens/round, "       \
    "m = verified candidates/round, k' = drafter forwards/round, c_t(n) = target forward " \
    "over n tokens, c_d = drafter forward over 1 token"

/* Grouped bars of tokens/s and tau per algorithm, groups = (direction, temperature). */
int hsd_bench_plot(const char *path, const hsd_bench_cell *cells, int n_cells,
                   const char *const *dir_names, int n_dirs, const float *temps, int n_temps,
                   const int *algos, int n_algos);

#endif
