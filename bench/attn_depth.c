/* Decode attention at context depth, the kernel alone (no model, no prefill): one token's
 * attention over every layer of a model shape at depths d, timed for
 *   old   the per-position loop this replaces (kernels/cpu_ops.c hsd_attn_scores +
 *         hsd_softmax + hsd_attn_accum per query head, F32 cache [pos][kv_dim]),
 *   f32 / f16 / bf16 / q8_0 / q4_0   kernels/attention.c over a head-major cache of that type,
 *         the query heads of a KV head in one call (GQA); q8_0 in tiles where the model would
 *         tile it (hsd_attn_kv_tiled: AVX-512 VNNI), q4_0 always in tiles.
 * One thread; thread CPU ms per token (all layers: a shared machine descheduling the process
 * makes wall time meaningless), median of repetitions. Shapes: llama-3.2-1b
 * (16 layers, 32/8 heads of 64), qwen3-0.6b (28 layers, 16/8 heads of 128).
 *
 *   cc -O2 -std=c11 -D_GNU_SOURCE -I. -Iinclude bench/attn_depth.c build/libhsd.a -lm \
 *      -lpthread -o attn_depth && ./attn_depth [REPS]
 * (bench/notes/attention.md has the numbers). */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/attention.h"
#include "kernels/cpu_features.h"
#include "kernels/cpu_ops.h"

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); /* CPU time: the machine is shared */
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct shape {
    const char *name;
    int layers, heads, kv_heads, hd;
} shape;

int main(int argc, char **argv) {
    static const shape shapes[] = {{"llama-3.2-1b", 16, 32, 8, 64}, {"qwen3-0.6b", 28, 16, 8, 128}};
    static const int depths[] = {32, 512, 2048};
    int reps = argc > 1 ? atoi(argv[1]) : 15;
    printf("cpu kernels: %s; 1 thread, median of %d\n",
           hsd_cpu_level_name(hsd_cpu_level_active()), reps);
    printf("%-14s %6s %10s %10s %10s %10s %10s %10s\n", "shape", "depth", "old ms", "f32 ms", "f16 ms",
           "bf16 ms", "q8_0 ms", "q4_0 ms");
    for (size_t si = 0; si < 2; si++) {
        const shape *s = &shapes[si];
        const int kvd = s->kv_heads * s->hd, qd = s->heads * s->hd, g = s->heads / s->kv_heads;
        const int dmax = depths[2];
        size_t per = (size_t)dmax * kvd;
        /* one cache per layer, so that a token's reads come from memory as in a forward */
        float *kc = malloc(per * s->layers * sizeof(float)), *vc = malloc(per * s->layers * sizeof(float));
        uint16_t *kh = malloc(per * s->layers * 2), *vh = malloc(per * s->layers * 2);
        float *q = malloc((size_t)qd * sizeof(float)), *o = malloc((size_t)qd * sizeof(float));
        float *att = malloc((size_t)(dmax + 64) * sizeof(float));
        float *scratch = malloc(hsd_attn_scratch_floats(s->hd, g) * sizeof(float));
        for (size_t i = 0; i < per * s->layers; i++) {
            kc[i] = (float)((i * 2654435761u) % 2001) / 1000.0f - 1.0f;
            vc[i] = (float)((i * 40503u) % 2001) / 1000.0f - 1.0f;
        }
        for (int i = 0; i < qd; i++) q[i] = (float)(i % 7) / 7.0f - 0.5f;
        const float scale = 1.0f / sqrtf((float)s->hd);
        for (size_t di = 0; di < 3; di++) {
            const int d = depths[di];
            double med[6];
            for (int kind = 0; kind < 6; kind++) {
                hsd_dtype t = kind == 1 ? HSD_DT_F32 : kind == 2 ? HSD_DT_F16 : kind == 3 ? HSD_DT_BF16 : kind == 4 ? HSD_DT_Q8_0 : HSD_DT_Q4_0;
                /* the head-major caches of this type: [layer][kv_head][pos][hd] */
                void *kt = kind == 1 ? (void *)kc : kh, *vt = kind == 1 ? (void *)vc : vh;
                const size_t rb = hsd_attn_row_bytes(t, s->hd); /* Q8_0: 34 B per 32 */
                /* a Q8_0 cache in tiles where the model would tile it (kernels/attention.h) */
                const bool tiled = hsd_attn_kv_tiled(t, s->hd);
                for (size_t row = 0; kind >= 2 && row < per * s->layers / s->hd; row++) {
                    const size_t head = row / dmax * dmax * rb; /* each head's positions from 0 */
                    hsd_attn_store_at(t, tiled, false, (char *)kh + head, (int32_t)(row % dmax), kc + row * s->hd, s->hd);
                    hsd_attn_store_at(t, tiled, true, (char *)vh + head, (int32_t)(row % dmax), vc + row * s->hd, s->hd);
                }
                double *ts = malloc((size_t)reps * sizeof *ts);
                for (int r = 0; r < reps; r++) {
                    double t0 = now_ms();
                    for (int l = 0; l < s->layers; l++) {
                        if (kind == 0) {
                            const float *kb = kc + per * l, *vb = vc + per * l;
                            for (int h = 0; h < s->heads; h++) {
                                size_t koff = (size_t)(h / g) * s->hd;
                                hsd_attn_scores(att, q + h * s->hd, kb + koff, kvd, NULL, d, s->hd, scale);
                                hsd_softmax(att, d);
                                memset(o + h * s->hd, 0, s->hd * sizeof(float));
                                hsd_attn_accum(o + h * s->hd, att, vb + koff, kvd, NULL, d, s->hd);
                            }
                        } else {
                            for (int h = 0; h < s->kv_heads; h++) {
                                size_t off = ((size_t)l * s->kv_heads + h) * dmax * rb;
                                hsd_attn_kv kv = {t, (char *)kt + off, (char *)vt + off, s->hd, d, NULL, tiled};
                                hsd_attn_row rows[16];
                                for (int k = 0; k < g; k++)
                                    rows[k] = (hsd_attn_row){q + (h * g + k) * s->hd,
                                                             o + (h * g + k) * s->hd, 0, d - 1};
                                hsd_attn_rows(&kv, rows, g, scale, 0.0f, scratch);
                            }
                        }
                    }
                    ts[r] = now_ms() - t0;
                }
                qsort(ts, (size_t)reps, sizeof *ts, cmp);
                med[kind] = ts[reps / 2];
                free(ts);
            }
            printf("%-14s %6d %10.3f %10.3f %10.3f %10.3f %10.3f %10.3f\n", s->name, d, med[0], med[1],
                   med[2], med[3], med[4], med[5]);
            fflush(stdout);
        }
        free(kc), free(vc), free(kh), free(vh), free(q), free(o), free(att), free(scratch);
    }
    return 0;
}
