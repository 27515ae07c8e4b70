/* hsd_ar_compare: greedy AR of one model on the CPU and on the CUDA device, step by step, to
 * say whether the two backends write the same ids and, where they do not, why. A different
 * summation order (cuBLAS, bf16-narrowed activations on the device) can flip a near-tie, so a
 * divergence is reported with both backends' top-2 logit gaps at that step: a gap near zero on
 * the CPU side is a near-tie, a large one is a bug. After a divergence both models are fed
 * the CPU's id, so later steps still compare like with like.
 *
 *   hsd_ar_compare --model M --tokenizer T -p PROMPT [-n 64] [--threads 8] [--md FILE]
 *
 * Prints one summary line (and appends a markdown row to --md); exit 0 when the ids are equal,
 * 1 when they differ, 2 on an error or when the model did not land on the device.
 * Uses only the public API (include/hsd.h). */
#include "include/hsd.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* index of the largest logit, and the gap to the second largest */
static int32_t top2(const float *x, int32_t V, double *gap) {
    int32_t a = 0;
    for (int32_t i = 1; i < V; i++)
        if (x[i] > x[a]) a = i;
    float second = -INFINITY;
    for (int32_t i = 0; i < V; i++)
        if (i != a && x[i] > second) second = x[i];
    *gap = (double)x[a] - second;
    return a;
}

static void on_log(hsd_log_level level, const char *msg, void *user) {
    (void)user;
    if (level >= HSD_LOG_INFO) fprintf(stderr, "hsd: %s\n", msg);
}

static int fail(const char *what) {
    fprintf(stderr, "hsd_ar_compare: %s: %s\n", what, hsd_last_error());
    return 2;
}

int main(int argc, char **argv) {
    const char *model_path = NULL, *tok_path = NULL, *prompt = NULL, *md_path = NULL;
    int n_gen = 64, threads = 8;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--model") && i + 1 < argc)
            model_path = argv[++i];
        else if (!strcmp(argv[i], "--tokenizer") && i + 1 < argc)
            tok_path = argv[++i];
        else if (!strcmp(argv[i], "-p") && i + 1 < argc)
            prompt = argv[++i];
        else if (!strcmp(argv[i], "-n") && i + 1 < argc)
            n_gen = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--md") && i + 1 < argc)
            md_path = argv[++i];
        else {
            fprintf(stderr, "hsd_ar_compare: unknown argument '%s'\nusage: hsd_ar_compare --model "
                            "M --tokenizer T -p PROMPT [-n N] [--threads K] [--md FILE]\n",
                    argv[i]);
            return 2;
        }
    }
    if (!model_path || !tok_path || !prompt || n_gen < 1) {
        fprintf(stderr, "hsd_ar_compare: --model, --tokenizer and -p are required, -n >= 1\n");
        return 2;
    }
    hsd_log_set(on_log, NULL);
    hsd_tokenizer *tok;
    if (hsd_tokenizer_load_file(tok_path, &tok) != HSD_OK) return fail(tok_path);
    hsd_model *m[2];
    const hsd_backend be[2] = {HSD_BACKEND_CPU, HSD_BACKEND_CUDA};
    for (int b = 0; b < 2; b++) {
        hsd_model_params p = hsd_model_default_params();
        p.backend = be[b];
        p.n_threads = threads;
        p.n_ctx = 1024;
        if (hsd_model_load(model_path, &p, &m[b]) != HSD_OK) return fail(model_path);
    }
    if (hsd_model_backend(m[1]) != HSD_BACKEND_CUDA) {
        fprintf(stderr, "hsd_ar_compare: the model did not load on the CUDA device\n");
        return 2;
    }
    /* the prompt as `hsd generate` feeds it to a llama2.c model: BOS, then the text with the
     * tokenizer's own conventions */
    int32_t ids[1024], n = 0;
    int32_t bos = hsd_tokenizer_bos_id(tok);
    if (bos >= 0) ids[n++] = bos;
    int32_t *enc = NULL;
    size_t n_enc = 0;
    if (hsd_tokenizer_encode_alloc(tok, prompt, strlen(prompt), false, &enc, &n_enc) != HSD_OK)
        return fail("encode");
    for (size_t i = 0; i < n_enc && n < 512; i++) ids[n++] = enc[i];
    hsd_free(enc);
    const int32_t V = hsd_model_vocab_size(m[0]);
    float *lg[2] = {malloc(sizeof(float) * V), malloc(sizeof(float) * V)};
    int32_t last = n - 1;
    double t_step[2] = {0, 0};
    for (int b = 0; b < 2; b++)
        if (hsd_model_forward(m[b], ids, n, NULL, &last, 1, lg[b]) != HSD_OK)
            return fail("prefill");
    int n_diff = 0, first = -1;
    int32_t first_cpu = -1, first_gpu = -1;
    double first_gap_cpu = 0, first_gap_gpu = 0, max_rel = 0, min_gap = INFINITY;
    for (int step = 0; step < n_gen; step++) {
        double gap[2], mx = 0, md = 0;
        int32_t a[2] = {top2(lg[0], V, &gap[0]), top2(lg[1], V, &gap[1])};
        for (int32_t i = 0; i < V; i++) {
            double d = fabs((double)lg[0][i] - lg[1][i]);
            if (d > md) md = d;
            if (fabs(lg[0][i]) > mx) mx = fabs(lg[0][i]);
        }
        if (mx > 0 && md / mx > max_rel) max_rel = md / mx;
        if (gap[0] < min_gap) min_gap = gap[0];
        if (a[0] != a[1]) {
            if (first < 0)
                first = step, first_cpu = a[0], first_gpu = a[1], first_gap_cpu = gap[0],
                first_gap_gpu = gap[1];
            n_diff++;
        }
        int32_t next = a[0]; /* both follow the CPU's choice */
        for (int b = 0; b < 2; b++) {
            double t0 = now_ms();
            if (hsd_model_forward(m[b], &next, 1, NULL, NULL, 1, lg[b]) != HSD_OK)
                return fail("decode");
            t_step[b] += now_ms() - t0;
        }
    }
    char line[512];
    if (first < 0)
        snprintf(line, sizeof line,
                 "| %s | %d greedy steps | ids equal | max rel logit diff %.2e | smallest CPU "
                 "top-2 gap %.4f | CPU %.2f ms/token, CUDA %.2f ms/token |",
                 model_path, n_gen, max_rel, min_gap, t_step[0] / n_gen, t_step[1] / n_gen);
    else
        snprintf(line, sizeof line,
                 "| %s | %d greedy steps | **%d differ**; first at step %d: CPU id %d (top-2 gap "
                 "%.4f), CUDA id %d (top-2 gap %.4f) | max rel logit diff %.2e | smallest CPU "
                 "top-2 gap %.4f | CPU %.2f ms/token, CUDA %.2f ms/token |",
                 model_path, n_gen, n_diff, first, first_cpu, first_gap_cpu, first_gpu,
                 first_gap_gpu, max_rel, min_gap, t_step[0] / n_gen, t_step[1] / n_gen);
    printf("%s\n", line);
    if (md_path) {
        FILE *f = fopen(md_path, "a");
        if (f) fprintf(f, "%s\n", line), fclose(f);
    }
    free(lg[0]), free(lg[1]);
    hsd_model_free(m[0]), hsd_model_free(m[1]);
    hsd_tokenizer_free(tok);
    return first < 0 ? 0 : 1;
}
