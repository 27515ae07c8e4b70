/* hsd bench generate: the cells as a text table, one JSON object, or Markdown tables for
 * bench/notes/ and bench/RESULTS.md (the prose around them is written by hand). */
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/json_out.h"
#include "cli/bench_generate.h"
#include "cli/table.h"
#include "hsd.h"

static double mean(double sum, int n) {
    return n ? sum / n : 0;
}

static const char *set_name(const hsd_bench *b, int si) {
    return si < b->n_sets ? b->sets[si].name : "all";
}

static const int cost_ns[] = {1, 2, 4, 8, 16, 32, 48};
#define N_COST_NS ((int)(sizeof cost_ns / sizeof cost_ns[0]))

#define CELL_COLS 16
static const int cell_width[CELL_COLS] = {-5, -14, -6, 8, 8, 5, 5, 7, 7, 21, 6, 5, 6, 6, 6, 4};

/* The cells of one result row, for the text table and the Markdown one (md: the greedy
 * mismatch column says "**MISMATCH**", and "–" where sampling makes it meaningless). */
static void cell_row(const hsd_bench *b, int ti, int si, const hsd_bench_cell *x, bool md,
                     char (*c)[HSD_CLI_CELL]) {
    int n = x->runs;
    snprintf(c[0], HSD_CLI_CELL, "%g", b->temps[ti]);
    snprintf(c[1], HSD_CLI_CELL, "%s", set_name(b, si));
    snprintf(c[2], HSD_CLI_CELL, "%s", hsd_algo_name((hsd_algo)x->algo));
    snprintf(c[3], HSD_CLI_CELL, "%.0f", mean(x->tps, n));
    snprintf(c[4], HSD_CLI_CELL, "%.0f", mean(x->dec_tps, n));
    snprintf(c[5], HSD_CLI_CELL, "%.2f", x->tau_all);
    snprintf(c[6], HSD_CLI_CELL, "%.2f", mean(x->acc, n));
    snprintf(c[7], HSD_CLI_CELL, "%.2f", mean(x->ttft, n));
    snprintf(c[8], HSD_CLI_CELL, "%.3f", mean(x->tpot, n));
    snprintf(c[9], HSD_CLI_CELL, md ? "%.1f / %.1f / %.1f" : "%6.1f/%6.1f/%6.1f",
             mean(x->draft_ms, n), mean(x->verify_ms, n), mean(x->bridge_ms, n));
    snprintf(c[10], HSD_CLI_CELL, "%.2f", x->m);
    snprintf(c[11], HSD_CLI_CELL, "%.2f", x->k_prime);
    snprintf(c[12], HSD_CLI_CELL, "%.2f", x->predicted);
    snprintf(c[13], HSD_CLI_CELL, "%.2f", x->measured);
    snprintf(c[14], HSD_CLI_CELL, "%.2f", x->predicted > 0 ? x->measured / x->predicted : 0);
    if (!md)
        snprintf(c[15], HSD_CLI_CELL, "%d", x->mismatches);
    else
        snprintf(c[15], HSD_CLI_CELL, "%s",
                 b->temps[ti] > 0 ? "–"
                 : x->mismatches  ? "**MISMATCH**"
                                  : "0");
}

/* Every result row of direction di, as text or Markdown. */
static void print_rows(hsd_bench *b, int di, FILE *f, bool md) {
    for (int ti = 0; ti < b->n_temps; ti++)
        for (int si = 0; si <= b->n_sets; si++)
            for (int ai = 0; ai < b->n_algos; ai++) {
                hsd_bench_cell *x = hsd_bench_cell_at(b, di, ti, si, ai);
                if (!x->runs) continue;
                char cells[CELL_COLS][HSD_CLI_CELL];
                cell_row(b, ti, si, x, md, cells);
                hsd_cli_table_row(f, cells, cell_width, CELL_COLS, md);
            }
}

void hsd_bench_print_text(hsd_bench *b) {
    printf("%s\nk = %d, N = %d new tokens, %d thread(s), prompt clip %d chars, seed %llu\n",
           HSD_BENCH_FORMULA, b->k, b->n_gen, b->threads, b->clip, (unsigned long long)b->seed);
    for (int di = 0; di < b->n_dirs; di++) {
        hsd_bench_dir *d = &b->dirs[di];
        const hsd_bench_cost *c = &d->cost;
        printf("\n== %s  (target: %s; drafter: %s)\n", d->name, hsd_model_desc(d->t_raw),
               hsd_model_desc(d->d_raw));
        printf("cost model: c_d = %.4f ms (drafter, 1 token, prefix %d)%s", c->c_draft, c->d_prefix,
               d->self ? "" : "\n");
        if (d->self) printf(", c_self = %.4f ms (target copy as drafter)\n", c->c_self);
        printf("c_t(n) ms [x c_t(1)] at prefix %d:", c->t_prefix);
        for (int i = 0; i < N_COST_NS; i++)
            printf(" n=%d %.4f [%.2f]", cost_ns[i], c->c_target[cost_ns[i]],
                   c->c_target[cost_ns[i]] / c->c_target[1]);
        printf("\n%-5s %-14s %-6s %8s %8s %5s %5s %7s %7s %21s %6s %5s %6s %6s %6s %4s\n", "temp",
               "set", "algo", "tok/s", "dec tk/s", "tau", "acc", "TTFT", "TPOT",
               "draft/verify/bridge", "m", "k'", "pred", "meas", "ratio", "mism");
        print_rows(b, di, stdout, false);
        if (!hsd_bench_has_algo(b, HSD_ALGO_SLRS)) continue;
        printf("string-level verification (all sets): first-candidate acceptance; SLRS also the "
               "expected\n"
               "acceptance sum min(p,psi) vs exact matching's sum p*psi on the same proposal, tree "
               "nodes,\n"
               "drafter forwards and psi time per round (SLRS tree: depth %d, top-%d, %d nodes, "
               "%s, %s)\n",
               b->slrs_k, b->slrs_top_k, b->slrs_nodes,
               b->slrs_rule == 1   ? "fixed depth"
               : b->slrs_rule == 2 ? "n_max"
                                   : "stop when determined",
               b->slrs_one ? "one forward per round" : "one forward per level");
        printf("%-5s %-6s %9s %9s %9s %7s %7s %8s\n", "temp", "algo", "first acc", "E[SLRS]",
               "E[EM]", "nodes", "fwds", "psi ms");
        for (int ti = 0; ti < b->n_temps; ti++)
            for (int ai = 0; ai < b->n_algos; ai++) {
                hsd_bench_cell *x = hsd_bench_cell_at(b, di, ti, b->n_sets, ai);
                if (!x->runs || (x->algo != HSD_ALGO_SLEM && x->algo != HSD_ALGO_SLRS)) continue;
                int n = x->runs;
                if (x->algo == HSD_ALGO_SLEM)
                    printf("%-5g %-6s %9.3f\n", b->temps[ti], "slem", mean(x->first_acc, n));
                else
                    printf("%-5g %-6s %9.3f %9.3f %9.3f %7.1f %7.2f %8.4f\n", b->temps[ti], "slrs",
                           mean(x->first_acc, n), mean(x->exp_acc, n), mean(x->exp_em, n),
                           mean(x->tree_nodes, n), mean(x->tree_fwd, n), mean(x->psi_ms, n));
            }
    }
    printf("\ngreedy mismatches vs AR: %d\n", b->total_mismatches);
}

static json_t *cell_json(hsd_bench *b, int di, int ti, int si, hsd_bench_cell *x) {
    int n = x->runs;
    json_t *o = json_object();
    json_object_set_new(o, "direction", json_string(b->dirs[di].name));
    json_object_set_new(o, "algo", json_string(hsd_algo_name((hsd_algo)x->algo)));
    json_object_set_new(o, "temp", json_real(b->temps[ti]));
    json_object_set_new(o, "set", json_string(set_name(b, si)));
    json_object_set_new(o, "prompts", json_integer(n));
    json_object_set_new(o, "tokens_per_s", json_real(mean(x->tps, n)));
    json_object_set_new(o, "decode_tokens_per_s", json_real(mean(x->dec_tps, n)));
    json_object_set_new(o, "tau", json_real(x->tau_all));
    json_object_set_new(o, "acceptance_rate", json_real(mean(x->acc, n)));
    json_object_set_new(o, "ttft_ms", json_real(mean(x->ttft, n)));
    json_object_set_new(o, "tpot_ms", json_real(mean(x->tpot, n)));
    json_object_set_new(o, "draft_ms", json_real(mean(x->draft_ms, n)));
    json_object_set_new(o, "verify_ms", json_real(mean(x->verify_ms, n)));
    json_object_set_new(o, "bridge_ms", json_real(mean(x->bridge_ms, n)));
    json_object_set_new(o, "total_ms", json_real(mean(x->total_ms, n)));
    json_object_set_new(o, "generated_tokens", json_integer(x->tokens));
    json_object_set_new(o, "rounds", json_integer(x->rounds));
    json_object_set_new(o, "m", json_real(x->m));
    json_object_set_new(o, "k_prime", json_real(x->k_prime));
    json_object_set_new(o, "predicted_speedup", json_real(x->predicted));
    json_object_set_new(o, "measured_speedup", json_real(x->measured));
    json_object_set_new(o, "measured_speedup_e2e", json_real(x->measured_e2e));
    json_object_set_new(o, "measured_over_predicted",
                        json_real(x->predicted > 0 ? x->measured / x->predicted : 0));
    json_object_set_new(o, "greedy_mismatches", json_integer(x->mismatches));
    if (x->algo == HSD_ALGO_SLEM || x->algo == HSD_ALGO_SLRS)
        json_object_set_new(o, "first_accept_rate", json_real(mean(x->first_acc, n)));
    if (x->algo == HSD_ALGO_SLRS) {
        json_object_set_new(o, "expected_accept", json_real(mean(x->exp_acc, n)));
        json_object_set_new(o, "expected_accept_em", json_real(mean(x->exp_em, n)));
        json_object_set_new(o, "psi_ms_per_round", json_real(mean(x->psi_ms, n)));
        json_object_set_new(o, "tree_nodes_per_round", json_real(mean(x->tree_nodes, n)));
        json_object_set_new(o, "tree_forwards_per_round", json_real(mean(x->tree_fwd, n)));
    }
    return o;
}

void hsd_bench_print_json(hsd_bench *b) {
    json_t *o = json_object(), *res = json_array(), *costs = json_array();
    json_object_set_new(o, "formula", json_string(HSD_BENCH_FORMULA));
    json_object_set_new(o, "k", json_integer(b->k));
    json_object_set_new(o, "n", json_integer(b->n_gen));
    json_object_set_new(o, "clip", json_integer(b->clip));
    json_object_set_new(o, "threads", json_integer(b->threads));
    for (int di = 0; di < b->n_dirs; di++) {
        const hsd_bench_cost *c = &b->dirs[di].cost;
        json_t *co = json_object(), *ct = json_array();
        for (int n = 1; n <= HSD_BENCH_COST_MAX_N; n++)
            json_array_append_new(ct, json_real(c->c_target[n]));
        json_object_set_new(co, "direction", json_string(b->dirs[di].name));
        json_object_set_new(co, "c_target_ms", ct);
        json_object_set_new(co, "c_draft_ms", json_real(c->c_draft));
        json_object_set_new(co, "c_self_ms", json_real(c->c_self));
        json_object_set_new(co, "target_prefix", json_integer(c->t_prefix));
        json_object_set_new(co, "draft_prefix", json_integer(c->d_prefix));
        json_array_append_new(costs, co);
        for (int ti = 0; ti < b->n_temps; ti++)
            for (int si = 0; si <= b->n_sets; si++)
                for (int ai = 0; ai < b->n_algos; ai++) {
                    hsd_bench_cell *x = hsd_bench_cell_at(b, di, ti, si, ai);
                    if (x->runs) json_array_append_new(res, cell_json(b, di, ti, si, x));
                }
    }
    json_object_set_new(o, "cost", costs);
    json_object_set_new(o, "results", res);
    json_object_set_new(o, "greedy_mismatches", json_integer(b->total_mismatches));
    hsd_cli_put_json(o, JSON_INDENT(1));
}

int hsd_bench_write_md(hsd_bench *b) {
    FILE *f = fopen(b->md, "w");
    if (!f) {
        fprintf(stderr, "hsd bench generate: cannot write %s\n", b->md);
        return 1;
    }
    fprintf(f, "Predicted speedup per round: `%s`.\n\n", HSD_BENCH_FORMULA);
    for (int di = 0; di < b->n_dirs; di++) {
        const hsd_bench_cost *c = &b->dirs[di].cost;
        fprintf(f, "**%s**: c_d = %.4f ms", b->dirs[di].name, c->c_draft);
        if (b->dirs[di].self) fprintf(f, ", c_self = %.4f ms", c->c_self);
        fprintf(f, "; c_t(n) ms (× c_t(1)) at a %d-token prefix:", c->t_prefix);
        for (int i = 0; i < N_COST_NS; i++)
            fprintf(f, " %d: %.4f (%.2f)%s", cost_ns[i], c->c_target[cost_ns[i]],
                    c->c_target[cost_ns[i]] / c->c_target[1], i + 1 < N_COST_NS ? ";" : "");
        fprintf(f,
                "\n\n| temp | set | algo | tok/s | decode tok/s | τ | accept | TTFT ms | TPOT ms | "
                "draft / verify / bridge ms | m | k' | predicted | measured | meas/pred | greedy "
                "mism. |\n"
                "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        print_rows(b, di, f, true);
        fputc('\n', f);
    }
    fclose(f);
    return 0;
}
