/* hsd bench forward: cost of one forward over n new tokens (all rows' logits, as a
 * speculative verification needs) relative to n = 1, after a cached prefix. */
#include <stddef.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "cli/clock.h"
#include "cli/cli.h"
#include "hsd.h"

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Truncates slots 0..B-1 back to the prefix. */
static void truncate_all(hsd_model *m, int32_t B, int32_t prefix) {
    for (int32_t s = 0; s < B; s++) hsd_model_seq_select(m, s), hsd_model_kv_truncate(m, prefix);
    hsd_model_seq_select(m, 0);
}

/* --batch: B sequences (each its own prefix in its own slot) × n new tokens, as B separate
 * forwards vs one hsd_model_forward_batch. Repetitions alternate the two. */
static int bench_batch(hsd_model *m, const int32_t *n_list, int n_n, const int32_t *b_list, int n_b,
                       int32_t prefix, int32_t stride, int32_t reps, const int32_t *toks,
                       float *logits, int cpu) {
    double (*clock_ms)(void) = cpu ? cli_timer_cpu_ms : cli_timer_ms;
    printf("%s time\n%4s %3s %14s %14s %9s %14s\n", cpu ? "process CPU" : "wall", "n", "B",
           "B forwards ms", "1 batched ms", "batched/B", "ms/token batched");
    hsd_model_batch_seq ent[64];
    for (int k = 0; k < n_n; k++)
        for (int j = 0; j < n_b; j++) {
            int32_t n = n_list[k], B = b_list[j];
            for (int32_t s = 0; s < B; s++) /* slot s: its own tokens after its own prefix */
                ent[s] = (hsd_model_batch_seq){sizeof(hsd_model_batch_seq), s, toks + (size_t)s * stride + prefix, n, NULL, NULL, n};
            double t = cli_timer_ms();
            if (hsd_model_forward_batch(m, ent, B, logits) != HSD_OK) return 1;
            truncate_all(m, B, prefix);
            t = cli_timer_ms() - t;
            int R = reps > 0 ? reps : (int)(500.0 / (t > 0.01 ? t : 0.01));
            if (R < 3) R = 3;
            if (R > 1000) R = 1000;
            double *ts = malloc((size_t)R * sizeof *ts), *tb = malloc((size_t)R * sizeof *tb);
            if (!ts || !tb) return free(ts), free(tb), 1;
            for (int i = 0; i < R; i++) {
                double t0 = clock_ms();
                for (int32_t s = 0; s < B; s++) {
                    hsd_model_seq_select(m, s);
                    hsd_model_forward(m, ent[s].tokens, n, NULL, NULL, n,
                                      logits + (size_t)s * n * hsd_model_vocab_size(m));
                }
                ts[i] = clock_ms() - t0;
                truncate_all(m, B, prefix);
                t0 = clock_ms();
                hsd_model_forward_batch(m, ent, B, logits);
                tb[i] = clock_ms() - t0;
                truncate_all(m, B, prefix);
            }
            qsort(ts, (size_t)R, sizeof *ts, cmp_double);
            qsort(tb, (size_t)R, sizeof *tb, cmp_double);
            printf("%4d %3d %14.4f %14.4f %9.2f %14.4f\n", n, B, ts[R / 2], tb[R / 2],
                   tb[R / 2] / ts[R / 2], tb[R / 2] / (B * n));
            fflush(stdout);
            free(ts), free(tb);
        }
    return 0;
}

/* --interleave: each depth of the --prefix list cached in its own slot, then rounds of one
 * timed forward per slot in turn, so that every depth sees the same moments of a shared host
 * (whose memory speed can move 1.5x within minutes: depths timed one after the other then
 * measure the host as much as the depth). Per n: each depth's median, and the median over
 * rounds of its time / the first depth's time in the same round. */
static int bench_interleave(hsd_model *m, const int32_t *depths, int nd, const int32_t *n_list,
                            int n_n, int32_t reps, const int32_t *toks, float *logits, int cpu) {
    double (*clock_ms)(void) = cpu ? cli_timer_cpu_ms : cli_timer_ms;
    for (int s = 0; s < nd; s++)
        if (hsd_model_seq_select(m, s) != HSD_OK || hsd_model_forward(m, toks, depths[s], NULL, NULL, 0, NULL) != HSD_OK)
            return 1;
    for (int k = 0; k < n_n; k++) {
        const int32_t n = n_list[k];
        double t = clock_ms(); /* a warm-up round, which also picks the round count */
        for (int s = 0; s < nd; s++) {
            hsd_model_seq_select(m, s);
            if (hsd_model_forward(m, toks + depths[s], n, NULL, NULL, n, logits) != HSD_OK) return 1;
            hsd_model_kv_truncate(m, depths[s]);
        }
        t = clock_ms() - t;
        int R = reps > 0 ? reps : (int)(2000.0 / (t > 0.01 ? t : 0.01));
        if (R < 5) R = 5;
        if (R > 2000) R = 2000;
        double *ts = malloc((size_t)R * nd * sizeof *ts), *col = malloc((size_t)R * sizeof *col);
        if (!ts || !col) return free(ts), free(col), 1;
        for (int i = 0; i < R; i++)
            for (int s = 0; s < nd; s++) {
                hsd_model_seq_select(m, s);
                const double t0 = clock_ms();
                const hsd_status st = hsd_model_forward(m, toks + depths[s], n, NULL, NULL, n, logits);
                ts[(size_t)i * nd + s] = clock_ms() - t0;
                if (st != HSD_OK) return free(ts), free(col), 1;
                hsd_model_kv_truncate(m, depths[s]);
            }
        printf("n %d: %d rounds, one forward per depth in turn\n%8s %12s %12s %12s\n", n, R, "depth",
               "ms/forward", "ms/token", "vs first");
        for (int s = 0; s < nd; s++) {
            for (int i = 0; i < R; i++) col[i] = ts[(size_t)i * nd + s];
            qsort(col, (size_t)R, sizeof *col, cmp_double);
            const double med = col[R / 2];
            for (int i = 0; i < R; i++) col[i] = ts[(size_t)i * nd + s] / ts[(size_t)i * nd];
            qsort(col, (size_t)R, sizeof *col, cmp_double);
            printf("%8d %12.4f %12.4f %11.3fx\n", depths[s], med, med / n, col[R / 2]);
        }
        fflush(stdout);
        free(ts), free(col);
    }
    hsd_model_seq_select(m, 0);
    return 0;
}

typedef struct fwd_opts {
    const char *model;
    hsd_opt_ints n, batch, prefix;
    int32_t reps, threads;
    int backend, cpu, kv_type, kv_no_rotate, interleave;
} fwd_opts;

#define O(f) offsetof(fwd_opts, f)
static const hsd_opt fwd_table[] = {
    {"model", 'm', HSD_OPT_STRING, O(model), "M", "model file or directory", 0, 0},
    {"n", 0, HSD_OPT_INTS, O(n), "1,2,4,8,16", "new tokens per forward (default 1,2,4,8,16)", 1,
     1e6},
    {"prefix", 0, HSD_OPT_INTS, O(prefix), "P[,P...]",
     "cached prefix before the timed forward (32); a list: each depth in turn, the cache "
     "extended from one to the next (decode cost at a context depth)", 1, 1 << 24},
    {"interleave", 0, HSD_OPT_FLAG, O(interleave), NULL,
     "with a --prefix list: each depth in its own sequence slot, timed in turn round by round "
     "(a shared host's drift hits every depth alike); medians and the per-round ratio to the "
     "first depth",
     0, 0},
    {"reps", 0, HSD_OPT_INT, O(reps), "R", "repetitions (default: enough for ~1 s per n)", 0, 1e9},
    HSD_OPT_ROW_THREADS(fwd_opts, threads),
    {"backend", 0, HSD_OPT_CHOICE, O(backend), "auto|cpu|cuda", "where the model runs", 0, 0},
    {"kv-type", 0, HSD_OPT_CHOICE, O(kv_type), "f16|bf16|f32|q8_0|q4_0",
     "KV cache element type (default f16, as llama.cpp's; f32: exact, twice the memory; q8_0: about half f16's; q4_0: a quarter)", 0, 0},
    {"kv-no-rotate", 0, HSD_OPT_FLAG, O(kv_no_rotate), NULL,
     "q8_0 / q4_0: no Hadamard rotation of q, k, v (llama.cpp's LLAMA_ATTN_ROT_DISABLE=1)", 0, 0},
    {"batch", 0, HSD_OPT_INTS, O(batch), "1,2,4,8",
     "instead: B sequences x n tokens, B forwards vs one batched forward (B <= 64)", 1, 64},
    {"cpu-time", 0, HSD_OPT_FLAG, O(cpu), NULL,
     "process CPU time instead of wall time (a shared machine; with --threads 1 for the plain "
     "forward, where a waiting worker would count)",
     0, 0},
};
#undef O

const hsd_cli_spec hsd_spec_bench_forward = {
    "bench forward", "--model M [OPTIONS]",
    "  median time of one forward of n tokens after a P-token prefix, logits for every row.\n",
    NULL, fwd_table, HSD_OPTS_N(fwd_table), 0,
};

int hsd_cmd_bench_forward(int argc, char **argv) {
    fwd_opts o = {0};
    o.prefix = (hsd_opt_ints){{32}, 1};
    o.kv_type = -1;
    o.n = (hsd_opt_ints){{1, 2, 4, 8, 16}, 5};
    HSD_OPTS_PARSE(&hsd_spec_bench_forward, &o, argc, argv, NULL);
    if (!o.model) return hsd_opts_fail(&hsd_spec_bench_forward, "--model is required");
    const char *model_path = o.model;
    /* the depths, ascending: the cache grows from one to the next */
    for (int i = 1; i < o.prefix.n; i++)
        if (o.prefix.v[i] <= o.prefix.v[i - 1])
            return hsd_opts_fail(&hsd_spec_bench_forward, "--prefix: depths must increase (%d after %d)",
                                 o.prefix.v[i], o.prefix.v[i - 1]);
    if (o.prefix.n > 1 && o.batch.n > 0)
        return hsd_opts_fail(&hsd_spec_bench_forward, "--prefix: one depth with --batch");
    if (o.interleave && (o.prefix.n < 2 || o.batch.n > 0))
        return hsd_opts_fail(&hsd_spec_bench_forward, "--interleave: a --prefix list of depths, without --batch");
    int32_t prefix = o.prefix.v[o.prefix.n - 1], reps = o.reps, threads = o.threads, max_b = 1;
    int backend = o.backend, cpu = o.cpu, n_n = o.n.n, n_b = o.batch.n;
    const int32_t *n_list = o.n.v, *b_list = o.batch.v;
    for (int i = 0; i < n_b; i++)
        if (b_list[i] > max_b) max_b = b_list[i];
    int32_t max_n = 1;
    for (int i = 0; i < n_n; i++) {
        if (n_list[i] > max_n) max_n = n_list[i];
    }
    hsd_model_params mp = hsd_cli_model_params();
    mp.n_ctx = prefix + max_n;
    mp.n_seq = o.interleave ? o.prefix.n : max_b;
    if (threads > 0) mp.n_threads = threads;
    mp.backend = (hsd_backend)backend;
    if (o.kv_type >= 0) mp.kv_type = (hsd_kv_type)o.kv_type;
    mp.kv_no_rotate = o.kv_no_rotate;
    hsd_model *m;
    double tl = cli_timer_ms();
    if (hsd_model_load(model_path, &mp, &m) != HSD_OK) {
        fprintf(stderr, "hsd bench forward: %s\n", hsd_cli_error("bench forward"));
        return 1;
    }
    printf("model: %s (loaded in %.0f ms)\nbackend %s, threads %d, prefix %d tokens, logits for all n rows\n",
           hsd_model_desc(m), cli_timer_ms() - tl, hsd_backend_name(hsd_model_backend(m)), mp.n_threads,
           prefix);
    printf("cpu kernels: %s (features: %s)\n", hsd_cpu_kernels_name(hsd_cpu_kernels_active()),
           hsd_cpu_kernels_features());
    { /* resident memory once loaded (weights, packed copies): Linux's /proc/self/statm */
        long pages_total = 0, pages_res = 0;
        FILE *sf = fopen("/proc/self/statm", "r");
        if (sf && fscanf(sf, "%ld %ld", &pages_total, &pages_res) == 2)
            printf("resident after load: %.0f MB\n", pages_res * (double)sysconf(_SC_PAGESIZE) / 1e6);
        if (sf) fclose(sf);
    }
    int32_t V = hsd_model_vocab_size(m);
    float *logits = malloc((size_t)max_b * max_n * V * sizeof *logits);
    int32_t *toks = malloc((size_t)max_b * (prefix + max_n) * sizeof *toks);
    cli_rng r;
    cli_rng_init(&r, 5);
    for (int32_t i = 0; toks && i < max_b * (prefix + max_n); i++)
        toks[i] = (int32_t)(cli_rng_u32(&r) % (uint32_t)V);
    int rc = 0;
    if (n_b > 0) {
        printf("prefix %d tokens per sequence, logits for all rows; median of alternating "
               "repetitions\n",
               prefix);
        for (int32_t s = 0; logits && toks && s < max_b && !rc; s++) {
            hsd_model_seq_select(m, s);
            rc = hsd_model_forward(m, toks + (size_t)s * (prefix + max_n), prefix, NULL, NULL, 0,
                                   NULL) != HSD_OK;
        }
        hsd_model_seq_select(m, 0);
        if (!logits || !toks || rc ||
            bench_batch(m, n_list, n_n, b_list, n_b, prefix, prefix + max_n, reps, toks, logits, cpu)) {
            fprintf(stderr, "hsd bench forward: %s\n", hsd_cli_error("bench forward"));
            rc = 1;
        }
        goto done;
    }
    if (o.interleave) {
        printf("depths %d", o.prefix.v[0]);
        for (int i = 1; i < o.prefix.n; i++) printf(",%d", o.prefix.v[i]);
        printf(", each in its own slot, interleaved\n");
        if (!logits || !toks || bench_interleave(m, o.prefix.v, o.prefix.n, n_list, n_n, reps, toks, logits, cpu)) {
            fprintf(stderr, "hsd bench forward: %s\n", hsd_cli_error("bench forward"));
            rc = 1;
        }
        goto done;
    }
    for (int di = 0, have = 0; di < o.prefix.n; di++) {
        prefix = o.prefix.v[di];
        /* the cache extended to this depth (the tokens of the depths before stay) */
        if (!logits || hsd_model_forward(m, toks + have, prefix - have, NULL, NULL, 0, NULL) != HSD_OK) {
            fprintf(stderr, "hsd bench forward: %s\n", hsd_cli_error("bench forward"));
            rc = 1;
            goto done;
        }
        have = prefix;
        if (o.prefix.n > 1) printf("prefix %d\n", prefix);
        double base = 0;
        printf("%4s %12s %12s %10s\n", "n", "ms/forward", "ms/token", "vs n=1");
        double (*clock_ms)(void) = cpu ? cli_timer_cpu_ms : cli_timer_ms;
        for (int k = 0; k < n_n; k++) {
            int32_t n = n_list[k];
            /* warm-up, and a first timing to pick the repetition count */
            double t = clock_ms();
            hsd_model_forward(m, toks + prefix, n, NULL, NULL, n, logits);
            hsd_model_kv_truncate(m, prefix);
            t = clock_ms() - t;
            int R = reps > 0 ? reps : (int)(1000.0 / (t > 0.01 ? t : 0.01));
            if (R < 3) R = 3;
            if (R > 2000) R = 2000;
            double *times = malloc((size_t)R * sizeof *times);
            for (int i = 0; i < R; i++) {
                double t0 = clock_ms();
                hsd_model_forward(m, toks + prefix, n, NULL, NULL, n, logits);
                times[i] = clock_ms() - t0;
                hsd_model_kv_truncate(m, prefix);
            }
            qsort(times, (size_t)R, sizeof *times, cmp_double);
            double med = times[R / 2];
            free(times);
            if (k == 0 || n == 1) base = med / n; /* per-token cost of the first entry */
            printf("%4d %12.4f %12.4f %9.2fx\n", n, med, med / n, med / (base > 0 ? base : 1));
            fflush(stdout);
        }
    }
done:
    free(logits);
    free(toks);
    hsd_model_free(m);
    return rc;
}
