/* Per-row work that scales with the vocabulary, alone, one thread, thread CPU time (the
 * minimum over repetitions, so that a shared machine's other processes distort it less):
 *
 *   argmax          the greedy pick of one target row;
 *   sample T=1      softmax(logits) as the distribution a sampled row verifies against;
 *   sample k40 p0.9 the same cut to top-k 40 then top-p 0.9;
 *   sample p0.9     top-p 0.9 alone;
 *   draw            one draw from that row (dense, or over the support the sampler reports);
 *   soft-cap        Gemma's final logit soft-cap cap * tanh(x / cap) over the row.
 *
 * Each is timed for the library (kernels/row_ops.h, lib/engine/sample.h) and, as "before", for
 * the code it replaced, kept here verbatim as the reference (a scalar argmax; softmax with
 * libm expf; a malloc and a qsort of the candidates per top-k / top-p row; tanhf per logit).
 * Rows are N(0, sigma^2) logits (sigma 2: a flat row, the hard case for top-p alone).
 *
 *   vocab_rows [n ...]     (default: 128256 151936 262144)
 *
 * Built and run by bench/vocab_scale.sh. */
#define _GNU_SOURCE
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/cpu_features.h"
#include "kernels/row_ops.h"
#include "lib/base/rng.h"
#include "lib/engine/sample.h"
#include "verify/verify.h"

static double cpu_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

/* ---- the replaced code (lib/engine/sample.c and verify/verify.c before issue 22) ---- */

static int32_t before_argmax(const float *p, int32_t n) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (p[i] > p[best]) best = i;
    return best;
}

typedef struct prob_idx {
    float p;
    int32_t i;
} prob_idx;

static int by_prob_desc(const void *a, const void *b) {
    const prob_idx *x = a, *y = b;
    if (x->p != y->p) return x->p > y->p ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

static int before_sample_probs(const float *logits, int32_t n, const hsd_sampler_params *p, float *probs) {
    if (!(p->temp > 0.0f)) {
        memset(probs, 0, (size_t)n * sizeof *probs);
        probs[before_argmax(logits, n)] = 1.0f;
        return 0;
    }
    float mx = logits[0];
    for (int32_t i = 1; i < n; i++) mx = fmaxf(mx, logits[i]);
    double sum = 0.0;
    for (int32_t i = 0; i < n; i++) sum += probs[i] = expf((logits[i] - mx) / p->temp);
    for (int32_t i = 0; i < n; i++) probs[i] = (float)(probs[i] / sum);
    bool use_k = p->top_k > 0 && p->top_k < n, use_p = p->top_p > 0.0f && p->top_p < 1.0f;
    if (!use_k && !use_p) return 0;
    float cutoff = use_p && !use_k ? (1.0f - p->top_p) / (float)(n - 1) : 0.0f;
    prob_idx *c = malloc((size_t)n * sizeof *c);
    if (!c) return -1;
    int32_t m = 0;
    for (int32_t i = 0; i < n; i++)
        if (probs[i] >= cutoff) c[m++] = (prob_idx){probs[i], i};
    qsort(c, (size_t)m, sizeof *c, by_prob_desc);
    int32_t keep = use_k && p->top_k < m ? p->top_k : m;
    if (use_p) {
        double mass = 0.0, total = 0.0;
        for (int32_t j = 0; j < keep; j++) total += c[j].p;
        for (int32_t j = 0; j < keep; j++) {
            mass += c[j].p;
            if (mass >= p->top_p * total) {
                keep = j + 1;
                break;
            }
        }
    }
    double kept = 0.0;
    for (int32_t j = 0; j < keep; j++) kept += c[j].p;
    memset(probs, 0, (size_t)n * sizeof *probs);
    for (int32_t j = 0; j < keep; j++) probs[c[j].i] = (float)(c[j].p / kept);
    free(c);
    return 0;
}

static void before_softcap(float *x, size_t n, float cap) {
    for (size_t i = 0; i < n; i++)
        if (isfinite(x[i])) x[i] = cap * tanhf(x[i] / cap);
}

/* ---- timing ---- */

static volatile int32_t sink;

#define TIME(label, body)                                                                          \
    do {                                                                                           \
        double best = 1e30;                                                                        \
        for (int r = 0; r < reps; r++) {                                                           \
            memcpy(row, src, (size_t)n * sizeof *row);                                             \
            double t0 = cpu_ms();                                                                  \
            body;                                                                                  \
            double t = cpu_ms() - t0;                                                              \
            if (t < best) best = t;                                                                \
        }                                                                                          \
        printf("%7d  %-34s %9.4f ms\n", (int)n, label, best);                                      \
    } while (0)

int main(int argc, char **argv) {
    int32_t sizes[8] = {128256, 151936, 262144}, n_sizes = 3;
    if (argc > 1) {
        n_sizes = 0;
        for (int i = 1; i < argc && n_sizes < 8; i++) sizes[n_sizes++] = atoi(argv[i]);
    }
    const int reps = 15;
    printf("cpu kernels: %s (%s); thread CPU time, min of %d\n",
           hsd_cpu_level_name(hsd_cpu_level_active()), hsd_cpu_features_get()->desc, reps);
    for (int si = 0; si < n_sizes; si++) {
        const int32_t n = sizes[si];
        float *src = malloc((size_t)n * sizeof *src), *row = malloc((size_t)n * sizeof *row),
              *probs = malloc((size_t)n * sizeof *probs);
        hsd_sampler_ws w = {0};
        if (!src || !row || !probs || hsd_sampler_ws_reserve(&w, n)) return 1;
        hsd_rng rng;
        hsd_rng_init(&rng, 22, 0);
        for (int32_t i = 0; i < n; i++) {
            double u = hsd_rng_uniform_f64(&rng), v = hsd_rng_uniform_f64(&rng);
            src[i] = (float)(2.0 * sqrt(-2.0 * log(1.0 - u)) * cos(6.283185307179586 * v));
        }
        const hsd_sampler_params t1 = {1.0f, 0, 1.0f}, kp = {1.0f, 40, 0.9f}, pp = {1.0f, 0, 0.9f};
        TIME("argmax            before", sink = before_argmax(row, n));
        TIME("argmax            after", sink = hsd_row_argmax(row, n));
        TIME("sample T=1        before", sink = before_sample_probs(row, n, &t1, probs));
        TIME("sample T=1        after", sink = hsd_sample_probs_ws(&w, row, n, &t1, probs));
        TIME("sample k40 p0.9   before", sink = before_sample_probs(row, n, &kp, probs));
        TIME("sample k40 p0.9   after", sink = hsd_sample_probs_ws(&w, row, n, &kp, probs));
        TIME("sample p0.9       before", sink = before_sample_probs(row, n, &pp, probs));
        TIME("sample p0.9       after", sink = hsd_sample_probs_ws(&w, row, n, &pp, probs));
        hsd_sample_probs_ws(&w, src, n, &kp, probs);
        TIME("draw k40 p0.9     before (dense)", sink = hsd_verify_draw(probs, n, 0.5));
        TIME("draw k40 p0.9     after (support)", sink = hsd_sample_draw_ws(&w, probs, n, 0.5));
        for (int32_t i = 0; i < n; i++) src[i] *= 20.0f; /* logits of a Gemma-like range */
        TIME("soft-cap 30       before", before_softcap(row, (size_t)n, 30.0f));
        TIME("soft-cap 30       after", hsd_row_softcap(row, (size_t)n, 30.0f));
        hsd_sampler_ws_free(&w);
        free(src), free(row), free(probs);
    }
    return 0;
}
