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

int hsd_cmd_bench_forward(int argc, char **argv) {
    const char *model_path = NULL, *ns = "1,2,4,8,16";
    int32_t prefix = 32, reps = 0, threads = 0;
    int backend = HSD_BACKEND_AUTO;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) break;
        i++;
        if (!strcmp(a, "--model") || !strcmp(a, "-m")) model_path = v;
        else if (!strcmp(a, "--n")) ns = v;
        else if (!strcmp(a, "--prefix")) prefix = atoi(v);
        else if (!strcmp(a, "--reps")) reps = atoi(v);
        else if (!strcmp(a, "--threads")) threads = atoi(v);
        else if (!strcmp(a, "--backend")) {
            if ((backend = hsd_backend_parse(v)) < 0) {
                fprintf(stderr, "hsd bench forward: unknown backend %s (auto, cpu, cuda)\n", v);
                return 2;
            }
        }
        else { fprintf(stderr, "hsd bench forward: unknown option %s\n", a); return 2; }
    }
    int32_t n_list[64];
    int n_n = hsd_cli_parse_ints(ns, n_list, 64);
    if (!model_path || n_n <= 0 || prefix < 1) {
        fprintf(stderr, "usage: hsd bench forward --model M [--n 1,2,4,8,16] [--prefix P] [--reps R] [--threads T]\n"
                        "                         [--backend auto|cpu|cuda]\n"
                        "  median time of one forward of n tokens after a P-token prefix (default 32),\n"
                        "  logits for every row; reps default: enough for ~1 s per n\n");
        return 2;
    }
    int32_t max_n = 1;
    for (int i = 0; i < n_n; i++) {
        if (n_list[i] < 1) { fprintf(stderr, "hsd bench forward: bad n %d\n", n_list[i]); return 2; }
        if (n_list[i] > max_n) max_n = n_list[i];
    }
    hsd_model_params mp = hsd_model_default_params();
    mp.n_ctx = prefix + max_n;
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
    float *logits = malloc((size_t)max_n * V * sizeof *logits);
    int32_t *toks = malloc((size_t)(prefix + max_n) * sizeof *toks);
    hsd_rng r;
    hsd_rng_init(&r, 5, 0);
    for (int32_t i = 0; i < prefix + max_n; i++) toks[i] = (int32_t)(hsd_rng_u32(&r) % (uint32_t)V);
    int rc = 0;
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
