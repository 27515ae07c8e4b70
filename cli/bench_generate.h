/* Shared pieces of `hsd bench generate`, one file per concept:
 *   cmd_bench_generate.c  options and the command's outline;
 *   bench_pair.c          a direction: the models (forward-counting wrappers), tokenizers
 *                         and engines of target <- drafter;
 *   bench_run.c           every algorithm over every prompt into per-cell sums;
 *   bench_report.c        text, JSON and Markdown tables of the cells;
 *   bench_batch.c         --batch: batched vs one by one;
 *   bench_cost.c          the round cost model; bench_plot.c the SVG plot.
 * A "cell" is one (direction, algorithm, temperature, prompt set). */
#ifndef HSD_CLI_BENCH_GENERATE_H
#define HSD_CLI_BENCH_GENERATE_H

#include <stdint.h>
#include <stdio.h>

#include "cli/opts.h"
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

#define HSD_BENCH_MAX_SETS HSD_OPT_LIST_MAX
#define HSD_BENCH_MAX_ALGOS 8
#define HSD_BENCH_MAX_TEMPS 4

typedef struct hsd_bench_prompts {
    char name[64];
    char **p;
    int n;
} hsd_bench_prompts;

/* Counts the forwards a model gets through the engine: k' (drafter forwards per round) is
 * then measured, not assumed. */
typedef struct hsd_bench_counted {
    hsd_model *inner;
    long n_fwd;
} hsd_bench_counted;

/* One direction: target + its tokenizer, drafter + its tokenizer, a second target instance
 * for SD (a model drafting for itself). */
typedef struct hsd_bench_dir {
    char name[128];
    hsd_model *t_raw, *d_raw, *s_raw, *t, *d, *s;
    hsd_bench_counted ct, cd, cs;
    hsd_tokenizer *tt, *dt;
    hsd_engine *pair, *self;
    hsd_bench_cost cost;
} hsd_bench_dir;

typedef struct hsd_bench {
    /* options (cmd_bench_generate.c's table) */
    const char *tm, *tt, *dm, *dt, *algos_arg, *temps_arg, *svg, *md;
    hsd_opt_list prompts;
    hsd_opt_ints batch;
    int max_prompts, both, json;
    int32_t k, n_gen, threads, clip;
    int32_t slrs_k, slrs_top_k, slrs_nodes;
    int slrs_rule, slrs_one, adaptive_k, cost_k;
    uint64_t seed;
    /* derived */
    int n_sets, n_algos, n_temps, n_dirs;
    const char *set_paths[HSD_BENCH_MAX_SETS];
    hsd_bench_prompts sets[HSD_BENCH_MAX_SETS + 1];
    int algos[HSD_BENCH_MAX_ALGOS];
    float temps[HSD_BENCH_MAX_TEMPS];
    hsd_bench_dir dirs[2];
    hsd_bench_cell *cells; /* [dir][temp][set + 1 ("all")][algo] */
    int total_mismatches;
} hsd_bench;

/* bench_pair.c */
int hsd_bench_dir_open(hsd_bench_dir *d, const char *tm, const char *tt, const char *dm,
                       const char *dt, int32_t threads, int need_self, int32_t n_seq);
void hsd_bench_dir_close(hsd_bench_dir *d);
/* Mean prompt length in a tokenizer's ids plus half the generation: the context at which a
 * typical round runs, so the cost model is measured where the rounds happen. */
int32_t hsd_bench_typical_ctx(const hsd_tokenizer *tok, const hsd_bench_prompts *sets, int n_sets,
                              int32_t n_gen);

/* bench_run.c */
hsd_bench_cell *hsd_bench_cell_at(hsd_bench *b, int d, int t, int s, int a);
int hsd_bench_has_algo(const hsd_bench *b, int algo);
/* Runs every algorithm on every prompt (AR first per prompt), summing into the cells. */
int hsd_bench_run_all(hsd_bench *b);
/* Sums the per-set cells into the "all" row, then applies the cost model everywhere. */
void hsd_bench_finish(hsd_bench *b);

/* bench_report.c */
void hsd_bench_print_text(hsd_bench *b);
void hsd_bench_print_json(hsd_bench *b);
int hsd_bench_write_md(hsd_bench *b);

/* bench_batch.c: --batch; returns 0, 1 on error (printed), 3 on a mismatch. */
int hsd_bench_batches(hsd_bench *b);

#endif
