/* Shared fixture of the draft-LM-head tests (test_heads*.c): a seeded generator, random
 * classifiers in f32/bf16 and float64 references. Helpers are static inline so that a test
 * file using only some of them still compiles under -Werror. */
#ifndef HSD_TESTS_HEADS_FIXTURE_H
#define HSD_TESTS_HEADS_FIXTURE_H

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hsd.h"
#include "kernels/head_ops.h"
#include "kernels/linalg.h"
#include "kernels/threadpool.h"
#include "lib/base/rng.h"
#include "lib/engine/sample.h"
#include "models/head.h"
#include "tests/testutil.h"

/* ---------------------------------------------------------------- helpers ------------- */

static hsd_rng rng;

static inline float urand(void) {
    return 2.0f * hsd_rng_uniform(&rng) - 1.0f;
}

/* A random classifier in `type` (f32 data is also returned widened for references). */
typedef struct {
    hsd_mat m;
    void *data;
    float *f; /* the stored values as f32 */
} cls_t;

static inline cls_t make_cls(int32_t V, int32_t d, hsd_dtype type) {
    cls_t c;
    c.f = malloc((size_t)V * d * sizeof *c.f);
    size_t es = type == HSD_DT_F32 ? 4 : 2;
    c.data = malloc((size_t)V * d * es);
    for (size_t i = 0; i < (size_t)V * d; i++) {
        float v = urand();
        if (type == HSD_DT_F32)
            ((float *)c.data)[i] = v, c.f[i] = v;
        else {
            uint16_t b = hsd_fp32_to_bf16(v);
            ((uint16_t *)c.data)[i] = b;
            c.f[i] = hsd_bf16_to_fp32(b);
        }
    }
    c.m = (hsd_mat){type, V, d, c.data, NULL};
    return c;
}

static inline void free_cls(cls_t *c) {
    free(c->data), free(c->f);
}

/* ref[t][v] = sum_i w[v][i] x[t][i] in double. */
static inline void ref_matmul(const float *w, int32_t rows, int32_t cols, const float *x, int32_t n,
                              double *ref) {
    for (int32_t t = 0; t < n; t++)
        for (int32_t v = 0; v < rows; v++) {
            double s = 0;
            for (int32_t i = 0; i < cols; i++)
                s += (double)w[(size_t)v * cols + i] * x[(size_t)t * cols + i];
            ref[(size_t)t * rows + v] = s;
        }
}

static inline void mat_f32(const hsd_mat *m, float *out) {
    hsd_mat_rows_f32(m, 0, m->rows, out);
}

/* |a - b| within rel of the row's scale (float32 dot products of length d). */
static inline void assert_close(double got, double want, double scale, double rel) {
    if (fabs(got - want) > rel * scale) {
        fprintf(stderr, "got %.9g, want %.9g (scale %.3g, rel %.1g)\n", got, want, scale, rel);
        fail();
    }
}

static inline double row_scale(const double *ref, int32_t n) {
    double s = 0;
    for (int32_t i = 0; i < n; i++) s = fmax(s, fabs(ref[i]));
    return s > 0 ? s : 1;
}

#endif
