/* hsd bench generate --batch B1,B2,..: for each batch size B, the prompts in groups of B
 * through hsd_engine_generate_batch vs the same prompts one by one (hsd_engine_generate, seed
 * S + index both ways): tokens/s of each and their ratio; outputs must match. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/clock.h"
#include "cli/json_out.h"
#include "cli/bench_generate.h"
#include "cli/table.h"
#include "hsd.h"

typedef struct batch_cell {
    long prompts, tok_seq, tok_batch, rounds;
    double ms_seq, ms_batch;
    /* decode only: time after each sequence's first token, tokens after the first (the
     * batch's first tokens all come from its first round, which holds every prefill) */
    long dtok_seq, dtok_batch;
    double dms_seq, dms_batch;
    double cpu_seq, cpu_batch; /* process CPU time */
    int mismatches;
} batch_cell;

static batch_cell *bcell(hsd_bench *b, batch_cell *cells, int d, int t, int bi, int a) {
    return &cells[((d * b->n_temps + t) * b->batch.n + bi) * b->n_algos + a];
}

/* One group of prompts with one algorithm: one by one, then as one batch. Outputs are
 * compared (the batch gives prompt i the seed S + i, as the one-by-one runs get). */
static int run_group(hsd_bench *b, hsd_bench_dir *d, int algo, float temp, char **ps, int n,
                     uint64_t seed, batch_cell *c) {
    hsd_engine *e = algo == HSD_ALGO_SD ? d->self : d->pair;
    hsd_gen_params gp = hsd_gen_default_params();
    gp.algo = (hsd_algo)algo;
    gp.max_new_tokens = b->n_gen;
    gp.n_draft = b->k;
    gp.temp = temp;
    hsd_gen_result one[64], all[64];
    hsd_gen_results_init(one, 64);
    hsd_gen_results_init(all, 64);

    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        hsd_engine_reset(d->pair);
        hsd_engine_reset(d->self);
        gp.seed = seed + (uint64_t)i;
        double t0 = cli_timer_ms(), c0 = cli_timer_cpu_ms();
        if (hsd_engine_generate(e, ps[i], strlen(ps[i]), &gp, &one[i])) rc = 1;
        c->ms_seq += cli_timer_ms() - t0;
        c->cpu_seq += cli_timer_cpu_ms() - c0;
        c->tok_seq += one[i].n_ids;
        if (one[i].n_ids > 1)
            c->dtok_seq += one[i].n_ids - 1, c->dms_seq += one[i].total_ms - one[i].ttft_ms;
    }
    gp.seed = seed;
    hsd_engine_reset(d->pair);
    hsd_engine_reset(d->self);
    double t0 = cli_timer_ms(), c0 = cli_timer_cpu_ms();
    if (!rc && hsd_engine_generate_batch(e, (const char *const *)ps, NULL, n, &gp, all)) rc = 1;
    c->ms_batch += cli_timer_ms() - t0;
    c->cpu_batch += cli_timer_cpu_ms() - c0;
    double first = 0, last = 0;
    for (int i = 0; i < n && !rc; i++) {
        if (all[i].n_ids > 1) c->dtok_batch += all[i].n_ids - 1;
        if (all[i].n_ids > 0 && (first == 0 || all[i].ttft_ms < first)) first = all[i].ttft_ms;
        if (all[i].total_ms > last) last = all[i].total_ms;
    }
    if (last > first) c->dms_batch += last - first;
    if (rc)
        fprintf(stderr, "hsd bench generate: %s %s: %s\n", d->name, hsd_algo_name((hsd_algo)algo),
                hsd_last_error());
    for (int i = 0; i < n && !rc; i++) {
        c->tok_batch += all[i].n_ids;
        c->rounds += all[i].n_rounds;
        if (one[i].n_ids != all[i].n_ids ||
            memcmp(one[i].ids, all[i].ids, (size_t)one[i].n_ids * sizeof(int32_t))) {
            c->mismatches++;
            b->total_mismatches++;
            fprintf(stderr,
                    "BATCH MISMATCH %s %s temp %g: prompt %d of a group of %d differs from its "
                    "single run\n",
                    d->name, hsd_algo_name((hsd_algo)algo), temp, i, n);
        }
    }
    c->prompts += n;
    for (int i = 0; i < n; i++) hsd_gen_result_free(&one[i]), hsd_gen_result_free(&all[i]);
    return rc;
}

static int run_batches(hsd_bench *b, batch_cell *cells) {
    char **all = NULL;
    int n_all = 0;
    for (int si = 0; si < b->n_sets; si++)
        for (int pi = 0; pi < b->sets[si].n; pi++) {
            char **na = realloc(all, (size_t)(n_all + 1) * sizeof *na);
            if (!na) return free(all), 1;
            (all = na)[n_all++] = b->sets[si].p[pi];
        }
    int rc = 0;
    for (int di = 0; di < b->n_dirs && !rc; di++)
        for (int ti = 0; ti < b->n_temps && !rc; ti++)
            for (int bi = 0; bi < b->batch.n && !rc; bi++) {
                int B = b->batch.v[bi];
                /* interleaved per group: every algorithm, one by one then batched */
                for (int g0 = 0; g0 < n_all && !rc; g0 += B)
                    for (int ai = 0; ai < b->n_algos && !rc; ai++) {
                        if (b->algos[ai] == HSD_ALGO_SD && !b->dirs[di].self) continue;
                        int n = n_all - g0 < B ? n_all - g0 : B;
                        rc = run_group(b, &b->dirs[di], b->algos[ai], b->temps[ti], all + g0, n,
                                       b->seed + (uint64_t)g0, bcell(b, cells, di, ti, bi, ai));
                    }
                if (!b->json)
                    fprintf(stderr, "  done: %s temp %g batch %d\n", b->dirs[di].name, b->temps[ti],
                            B);
            }
    free(all);
    return rc;
}

#define BATCH_COLS 17
/* Text widths of the columns (negative: left-aligned). */
static const int batch_width[BATCH_COLS] = {-26, -5, -6, 3,  7,  8, 10, 10, 7,
                                            10,  10, 7,  10, 10, 7, 6,  4};

static void print_batches(hsd_bench *b, batch_cell *cells) {
    FILE *md = b->md ? fopen(b->md, "w") : NULL;
    if (b->md && !md) fprintf(stderr, "hsd bench generate: cannot write %s\n", b->md);
    json_t *arr = json_array();
    if (!b->json)
        printf(
            "batched (hsd_engine_generate_batch, groups of B) vs one by one (hsd_engine_generate); "
            "k = %d, "
            "N = %d, %d thread(s), prompt clip %d, seed %llu; tok/s over wall time, per CPU second "
            "(process CPU time), and decode only (wall, after the first token)\n"
            "%-26s %-5s %-6s %3s %7s %8s %10s %10s %7s %10s %10s %7s %10s %10s %7s %6s %4s\n",
            b->k, b->n_gen, b->threads, b->clip, (unsigned long long)b->seed, "direction", "temp",
            "algo", "B", "prompts", "tokens", "1by1 tok/s", "batch", "speedup", "1by1 /cpus",
            "batch", "speedup", "1by1 dec/s", "batch", "speedup", "tau", "mism");
    if (md)
        fprintf(
            md,
            "| direction | temp | algo | B | prompts | tokens | one by one tok/s | batched tok/s | "
            "batched / one by one | CPU: one by one tok/s | CPU: batched tok/s | CPU: batched / "
            "one by one | "
            "decode: one by one tok/s | decode: batched tok/s | decode: batched / one by one | τ | "
            "mismatches "
            "|\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int di = 0; di < b->n_dirs; di++)
        for (int ti = 0; ti < b->n_temps; ti++)
            for (int ai = 0; ai < b->n_algos; ai++)
                for (int bi = 0; bi < b->batch.n; bi++) {
                    batch_cell *c = bcell(b, cells, di, ti, bi, ai);
                    if (!c->prompts) continue;
                    double seq = c->ms_seq > 0 ? 1000.0 * c->tok_seq / c->ms_seq : 0;
                    double bat = c->ms_batch > 0 ? 1000.0 * c->tok_batch / c->ms_batch : 0;
                    double tau = c->rounds ? (double)c->tok_batch / c->rounds : 0;
                    double dseq = c->dms_seq > 0 ? 1000.0 * c->dtok_seq / c->dms_seq : 0;
                    double dbat = c->dms_batch > 0 ? 1000.0 * c->dtok_batch / c->dms_batch : 0;
                    double cseq = c->cpu_seq > 0 ? 1000.0 * c->tok_seq / c->cpu_seq : 0;
                    double cbat = c->cpu_batch > 0 ? 1000.0 * c->tok_batch / c->cpu_batch : 0;
                    const char *an = hsd_algo_name((hsd_algo)b->algos[ai]);
                    char col[BATCH_COLS][HSD_CLI_CELL];
                    snprintf(col[0], HSD_CLI_CELL, "%s", b->dirs[di].name);
                    snprintf(col[1], HSD_CLI_CELL, "%g", b->temps[ti]);
                    snprintf(col[2], HSD_CLI_CELL, "%s", an);
                    snprintf(col[3], HSD_CLI_CELL, "%d", b->batch.v[bi]);
                    snprintf(col[4], HSD_CLI_CELL, "%ld", c->prompts);
                    snprintf(col[5], HSD_CLI_CELL, "%ld", c->tok_batch);
                    const double rates[9] = {seq,  bat,  seq > 0 ? bat / seq : 0,
                                             cseq, cbat, cseq > 0 ? cbat / cseq : 0,
                                             dseq, dbat, dseq > 0 ? dbat / dseq : 0};
                    for (int k = 0; k < 9; k++) /* tok/s whole, ratios to 0.01 */
                        snprintf(col[6 + k], HSD_CLI_CELL, k % 3 == 2 ? "%.2f" : "%.0f", rates[k]);
                    snprintf(col[15], HSD_CLI_CELL, "%.2f", tau);
                    snprintf(col[16], HSD_CLI_CELL, "%d", c->mismatches);
                    if (!b->json) hsd_cli_table_row(stdout, col, batch_width, BATCH_COLS, false);
                    if (md) hsd_cli_table_row(md, col, batch_width, BATCH_COLS, true);
                    json_t *o = json_object();
                    json_object_set_new(o, "direction", json_string(b->dirs[di].name));
                    json_object_set_new(o, "temp", json_real(b->temps[ti]));
                    json_object_set_new(o, "algo", json_string(an));
                    json_object_set_new(o, "batch", json_integer(b->batch.v[bi]));
                    json_object_set_new(o, "prompts", json_integer(c->prompts));
                    json_object_set_new(o, "tokens", json_integer(c->tok_batch));
                    json_object_set_new(o, "one_by_one_ms", json_real(c->ms_seq));
                    json_object_set_new(o, "batched_ms", json_real(c->ms_batch));
                    json_object_set_new(o, "one_by_one_tokens_per_s", json_real(seq));
                    json_object_set_new(o, "batched_tokens_per_s", json_real(bat));
                    json_object_set_new(o, "speedup", json_real(seq > 0 ? bat / seq : 0));
                    json_object_set_new(o, "one_by_one_cpu_ms", json_real(c->cpu_seq));
                    json_object_set_new(o, "batched_cpu_ms", json_real(c->cpu_batch));
                    json_object_set_new(o, "one_by_one_tokens_per_cpu_s", json_real(cseq));
                    json_object_set_new(o, "batched_tokens_per_cpu_s", json_real(cbat));
                    json_object_set_new(o, "cpu_speedup", json_real(cseq > 0 ? cbat / cseq : 0));
                    json_object_set_new(o, "one_by_one_decode_tokens_per_s", json_real(dseq));
                    json_object_set_new(o, "batched_decode_tokens_per_s", json_real(dbat));
                    json_object_set_new(o, "decode_speedup", json_real(dseq > 0 ? dbat / dseq : 0));
                    json_object_set_new(o, "tau", json_real(tau));
                    json_object_set_new(o, "mismatches", json_integer(c->mismatches));
                    json_array_append_new(arr, o);
                }
    if (b->json) {
        json_t *o = json_object();
        json_object_set_new(o, "k", json_integer(b->k));
        json_object_set_new(o, "n", json_integer(b->n_gen));
        json_object_set_new(o, "threads", json_integer(b->threads));
        json_object_set_new(o, "clip", json_integer(b->clip));
        json_object_set_new(o, "batch_results", arr);
        json_object_set_new(o, "mismatches", json_integer(b->total_mismatches));
        hsd_cli_put_json(o, JSON_INDENT(1));
    } else {
        json_decref(arr);
        printf("\nmismatches (batched vs one by one): %d\n", b->total_mismatches);
    }
    if (md) fclose(md);
}

int hsd_bench_batches(hsd_bench *b) {
    batch_cell *bc = calloc((size_t)b->n_dirs * b->n_temps * b->batch.n * b->n_algos, sizeof *bc);
    if (!bc || run_batches(b, bc)) {
        free(bc);
        return 1;
    }
    print_batches(b, bc);
    free(bc);
    return b->total_mismatches ? 3 : 0;
}
