/* hsd bench head: the drafter's LM head alone. For each head the model runs single-token
 * decode steps after a short prefix, and the model's own head / backbone timers (the head is
 * timed inside the forward, hsd_model_get_timing) give the head's share of each step. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/clock.h"
#include "cli/cli.h"
#include "cli/head_spec.h"
#include "hsd.h"

typedef struct bhead_opts {
    const char *model, *heads;
    int32_t reps, prefix, threads;
    int no_mmap;
} bhead_opts;

#define O(f) offsetof(bhead_opts, f)
static const hsd_opt bhead_table[] = {
    {"model", 'm', HSD_OPT_STRING, O(model), "M", "model file or directory", 0, 0},
    {"heads", 0, HSD_OPT_STRING, O(heads), "'full;trimk:K;SPEC;...'",
     "heads to time, ';'-separated (default full;trimk:V/8;spec:2048;lowrank:0)", 0, 0},
    {"reps", 0, HSD_OPT_INT, O(reps), "R", "decode steps per head (10)", 1, 1e9},
    {"prefix", 0, HSD_OPT_INT, O(prefix), "P", "prefix tokens before the steps (16)", 1, 1e6},
    HSD_OPT_ROW_THREADS(bhead_opts, threads),
    HSD_OPT_ROW_NO_MMAP(bhead_opts, no_mmap),
};
#undef O

const hsd_cli_spec hsd_spec_bench_head = {
    "bench head", "--model M [--heads LIST] [--reps R] [--prefix P] [--threads T] [--no-mmap]",
    "  Median per-step head time and backbone time of 1-token decode steps with each head.\n"
    "  trimk:K keeps K ids spread evenly over the vocabulary (for models without a tokenizer);\n"
    "  other heads as --draft-head of hsd generate. Build time = SVD / packing.\n",
    NULL, bhead_table, HSD_OPTS_N(bhead_table), 0,
};

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int hsd_cmd_bench_head(int argc, char **argv) {
    bhead_opts o = {0};
    o.reps = 10, o.prefix = 16;
    HSD_OPTS_PARSE(&hsd_spec_bench_head, &o, argc, argv, NULL);
    if (!o.model) return hsd_opts_fail(&hsd_spec_bench_head, "--model is required");
    int no_mmap = o.no_mmap;
    const char *model_path = o.model, *heads = o.heads;
    int32_t reps = o.reps, prefix = o.prefix, threads = o.threads;
    hsd_model_params mp = hsd_cli_model_params();
    mp.n_ctx = prefix + 2;
    if (threads > 0) mp.n_threads = threads;
    mp.use_mmap = !no_mmap;
    hsd_model *m;
    double t0 = cli_timer_ms();
    if (hsd_model_load(model_path, &mp, &m)) {
        fprintf(stderr, "hsd bench head: %s\n", hsd_cli_error("bench head"));
        return 1;
    }
    int32_t V = hsd_model_vocab_size(m);
    printf("model: %s (loaded in %.0f ms), %d threads, %d steps per head after a %d-token prefix\n",
           hsd_model_desc(m), cli_timer_ms() - t0, mp.n_threads, reps, prefix);
    char defaults[128];
    snprintf(defaults, sizeof defaults, "full;trimk:%d;spec:%d;lowrank:0", V / 8 > 0 ? V / 8 : 1,
             V > 2048 ? 2048 : (V / 8 > 0 ? V / 8 : 1));
    char *list = strdup(heads ? heads : defaults);
    float *logits = malloc((size_t)V * sizeof *logits);
    int32_t *toks = malloc((size_t)(prefix + 1) * sizeof *toks);
    double *head_t = malloc((size_t)reps * sizeof *head_t),
           *bb_t = malloc((size_t)reps * sizeof *bb_t);
    int rc = 0;
    if (!list || !logits || !toks || !head_t || !bb_t) {
        rc = 1;
        goto done;
    }
    cli_rng r;
    cli_rng_init(&r, 3);
    for (int32_t i = 0; i <= prefix; i++) toks[i] = (int32_t)(cli_rng_u32(&r) % (uint32_t)V);
    printf("%-26s %10s %12s %12s %10s  %s\n", "head", "build ms", "head ms", "backbone ms",
           "vs full", "description");
    double full_ms = 0;
    for (char *save = NULL, *spec = strtok_r(list, ";", &save); spec;
         spec = strtok_r(NULL, ";", &save)) {
        int32_t *even = NULL;
        double tb = cli_timer_ms();
        if (!strncmp(spec, "trimk:", 6)) {
            int32_t k = atoi(spec + 6);
            if (k < 1 || k > V) {
                fprintf(stderr, "hsd bench head: %s: K outside 1..%d\n", spec, V);
                rc = 1;
                break;
            }
            hsd_head_params hp = hsd_head_default_params();
            hp.kind = HSD_HEAD_TRIMMED;
            even = malloc((size_t)k * sizeof *even);
            for (int32_t i = 0; even && i < k; i++) even[i] = (int32_t)((int64_t)i * V / k);
            hp.keep_ids = even;
            hp.n_keep = k;
            if (hsd_model_set_head(m, &hp)) {
                fprintf(stderr, "hsd bench head: %s: %s\n", spec, hsd_last_error());
                free(even);
                rc = 1;
                break;
            }
            free(even);
        } else if (hsd_cli_head_apply("bench head", spec, m, NULL, NULL, NULL, 0)) {
            rc = 1;
            break;
        }
        double build = cli_timer_ms() - tb;
        int32_t last = prefix - 1;
        hsd_status s = hsd_model_kv_truncate(m, 0);
        if (!s) s = hsd_model_forward(m, toks, prefix, NULL, &last, 1, logits);
        if (!s) s = hsd_model_forward(m, toks + prefix, 1, NULL, NULL, 1, logits); /* warm-up */
        if (!s) s = hsd_model_kv_truncate(m, prefix);
        for (int32_t i = 0; !s && i < reps; i++) {
            hsd_model_timing a, b;
            hsd_model_get_timing(m, &a);
            s = hsd_model_forward(m, toks + prefix, 1, NULL, NULL, 1, logits);
            hsd_model_get_timing(m, &b);
            head_t[i] = b.head_ms - a.head_ms;
            bb_t[i] = b.backbone_ms - a.backbone_ms;
            if (!s) s = hsd_model_kv_truncate(m, prefix);
        }
        if (s) {
            fprintf(stderr, "hsd bench head: %s: %s\n", spec, hsd_last_error());
            rc = 1;
            break;
        }
        qsort(head_t, (size_t)reps, sizeof *head_t, cmp_d);
        qsort(bb_t, (size_t)reps, sizeof *bb_t, cmp_d);
        double hm = head_t[reps / 2], bm = bb_t[reps / 2];
        if (!full_ms) full_ms = hm;
        printf("%-26s %10.1f %12.3f %12.3f %9.2fx  %s\n", spec, build, hm, bm,
               hm > 0 ? full_ms / hm : 0, hsd_model_head_desc(m));
        fflush(stdout);
    }
done:
    free(list), free(logits), free(toks), free(head_t), free(bb_t);
    hsd_model_free(m);
    return rc;
}
