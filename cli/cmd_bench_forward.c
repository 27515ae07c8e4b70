/* hsd bench forward: cost of one forward over n new tokens (all rows' logits, as a
 * speculative verification needs) relative to n = 1, after a cached prefix. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_util.h"
#include "hsd.h"
#include "lib/rng.h"

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
    double (*clock_ms)(void) = cpu ? hsd_cli_cpu_ms : hsd_cli_now_ms;
    printf("%s time\n%4s %3s %14s %14s %9s %14s\n", cpu ? "process CPU" : "wall", "n", "B",
           "B forwards ms", "1 batched ms", "batched/B", "ms/token batched");
    hsd_model_batch_seq ent[64];
    for (int k = 0; k < n_n; k++)
        for (int j = 0; j < n_b; j++) {
            int32_t n = n_list[k], B = b_list[j];
            for (int32_t s = 0; s < B; s++) /* slot s: its own tokens after its own prefix */
                ent[s] = (hsd_model_batch_seq){s, toks + (size_t)s * stride + prefix, n, NULL, NULL, n};
            double t = hsd_cli_now_ms();
            if (hsd_model_forward_batch(m, ent, B, logits) != HSD_OK) return 1;
            truncate_all(m, B, prefix);
            t = hsd_cli_now_ms() - t;
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

int hsd_cmd_bench_forward(int argc, char **argv) {
    const char *model_path = NULL, *ns = "1,2,4,8,16", *bs = NULL;
    int32_t prefix = 32, reps = 0, threads = 0;
    int backend = HSD_BACKEND_AUTO;
    int cpu = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--cpu-time")) {
            cpu = 1;
            continue;
        }
        if (!v) break;
        i++;
        if (!strcmp(a, "--model") || !strcmp(a, "-m")) model_path = v;
        else if (!strcmp(a, "--n")) ns = v;
        else if (!strcmp(a, "--prefix")) prefix = atoi(v);
        else if (!strcmp(a, "--reps")) reps = atoi(v);
        else if (!strcmp(a, "--threads")) threads = atoi(v);
        else if (!strcmp(a, "--batch")) bs = v;
        else if (!strcmp(a, "--backend")) {
            if ((backend = hsd_backend_parse(v)) < 0) {
                fprintf(stderr, "hsd bench forward: unknown backend %s (auto, cpu, cuda)\n", v);
                return 2;
            }
        }
        else { fprintf(stderr, "hsd bench forward: unknown option %s\n", a); return 2; }
    }
    int32_t n_list[64], b_list[16], max_b = 1;
    int n_n = hsd_cli_parse_ints(ns, n_list, 64), n_b = bs ? hsd_cli_parse_ints(bs, b_list, 16) : 0;
    for (int i = 0; i < n_b; i++) {
        if (b_list[i] < 1 || b_list[i] > 64)
            n_b = -1;
        else if (b_list[i] > max_b)
            max_b = b_list[i];
    }
    if (!model_path || n_n <= 0 || prefix < 1 || n_b < 0) {
        fprintf(
            stderr,
            "usage: hsd bench forward --model M [--n 1,2,4,8,16] [--prefix P] [--reps R] "
            "[--threads T]\n"
            "                         [--backend auto|cpu|cuda] [--batch 1,2,4,8 [--cpu-time]]\n"
            "  median time of one forward of n tokens after a P-token prefix (default 32),\n"
            "  logits for every row; reps default: enough for ~1 s per n.\n"
            "  --batch: instead, B sequences (own prefixes, own KV slots) x n new tokens as\n"
            "  B separate forwards vs one batched forward (hsd_model_forward_batch), B <= 64;\n"
            "  --cpu-time times them in process CPU time instead of wall time (shared machines)\n");
        return 2;
    }
    int32_t max_n = 1;
    for (int i = 0; i < n_n; i++) {
        if (n_list[i] < 1) { fprintf(stderr, "hsd bench forward: bad n %d\n", n_list[i]); return 2; }
        if (n_list[i] > max_n) max_n = n_list[i];
    }
    hsd_model_params mp = hsd_model_default_params();
    mp.n_ctx = prefix + max_n;
    mp.n_seq = max_b;
    if (threads > 0) mp.n_threads = threads;
    mp.backend = (hsd_backend)backend;
    hsd_model *m;
    double tl = hsd_cli_now_ms();
    if (hsd_model_load(model_path, &mp, &m) != HSD_OK) {
        fprintf(stderr, "hsd bench forward: %s\n", hsd_last_error());
        return 1;
    }
    printf("model: %s (loaded in %.0f ms)\nbackend %s, threads %d, prefix %d tokens, logits for all n rows\n",
           hsd_model_desc(m), hsd_cli_now_ms() - tl, hsd_backend_name(hsd_model_backend(m)), mp.n_threads,
           prefix);
    int32_t V = hsd_model_vocab_size(m);
    float *logits = malloc((size_t)max_b * max_n * V * sizeof *logits);
    int32_t *toks = malloc((size_t)max_b * (prefix + max_n) * sizeof *toks);
    hsd_rng r;
    hsd_rng_init(&r, 5, 0);
    for (int32_t i = 0; toks && i < max_b * (prefix + max_n); i++)
        toks[i] = (int32_t)(hsd_rng_u32(&r) % (uint32_t)V);
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
            fprintf(stderr, "hsd bench forward: %s\n", hsd_last_error());
            rc = 1;
        }
        goto done;
    }
    if (!logits || hsd_model_forward(m, toks, prefix, NULL, NULL, 0, NULL) != HSD_OK) {
        fprintf(stderr, "hsd bench forward: %s\n", hsd_last_error());
        rc = 1;
        goto done;
    }
    double base = 0;
    printf("%4s %12s %12s %10s\n", "n", "ms/forward", "ms/token", "vs n=1");
    for (int k = 0; k < n_n; k++) {
        int32_t n = n_list[k];
        /* warm-up, and a first timing to pick the repetition count */
        double t = hsd_cli_now_ms();
        hsd_model_forward(m, toks + prefix, n, NULL, NULL, n, logits);
        hsd_model_kv_truncate(m, prefix);
        t = hsd_cli_now_ms() - t;
        int R = reps > 0 ? reps : (int)(1000.0 / (t > 0.01 ? t : 0.01));
        if (R < 3) R = 3;
        if (R > 2000) R = 2000;
        double *times = malloc((size_t)R * sizeof *times);
        for (int i = 0; i < R; i++) {
            double t0 = hsd_cli_now_ms();
            hsd_model_forward(m, toks + prefix, n, NULL, NULL, n, logits);
            times[i] = hsd_cli_now_ms() - t0;
            hsd_model_kv_truncate(m, prefix);
        }
        qsort(times, (size_t)R, sizeof *times, cmp_double);
        double med = times[R / 2];
        free(times);
        if (k == 0 || n == 1) base = med / n; /* per-token cost of the first entry */
        printf("%4d %12.4f %12.4f %9.2fx\n", n, med, med / n, med / (base > 0 ? base : 1));
        fflush(stdout);
    }
done:
    free(logits);
    free(toks);
    hsd_model_free(m);
    return rc;
}
