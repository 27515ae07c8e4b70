/* Row kernels (kernels/row_ops.h) at every kernel level the CPU runs (scalar, AVX2, AVX-512),
 * against their definitions: argmax and top-k against the plain loop / a stable sort (bit-
 * identical, ties included), exp-sum and the soft-cap against float64 libm (stated relative
 * error bounds), on random rows of 1..300,000 entries with many ties. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu_features.h"
#include "kernels/row_ops.h"
#include "lib/base/rng.h"
#include "tests/testutil.h"

static const int32_t sizes[] = {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47, 100, 255, 1000, 4099, 32000, 128256, 151936, 262144, 300000};
#define N_SIZES ((int)(sizeof sizes / sizeof sizes[0]))
#define MAXN 300000

static float *row, *row2;
static int32_t *ibuf, *ibuf2;

/* Row kinds: continuous values, a few distinct values (many ties), and logits with -inf. */
static void fill(float *x, int32_t n, int kind, hsd_rng *r) {
    for (int32_t i = 0; i < n; i++) {
        float u = hsd_rng_uniform(r);
        switch (kind) {
        case 0: x[i] = 20.0f * u - 10.0f; break;
        case 1: x[i] = (float)(int)(u * 7.0f) - 3.0f; break; /* 7 values: ties everywhere */
        default: x[i] = u < 0.3f ? -INFINITY : 30.0f * u - 15.0f; break;
        }
    }
}

static int ref_argmax(const float *x, int32_t n) {
    int best = 0;
    for (int32_t i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

/* Runs body at each supported level; returns how many ran. */
#define FOR_LEVELS(l)                                                                              \
    for (hsd_cpu_level l = HSD_CPU_SCALAR; l <= HSD_CPU_AVX512; l++)                              \
        if (!hsd_cpu_level_supported(l)) {                                                         \
            printf("  level %s: not supported by this CPU, skipped\n", hsd_cpu_level_name(l));   \
        } else if (hsd_cpu_level_limit(l), 1)

static void test_argmax_max(void **state) {
    (void)state;
    hsd_rng r;
    hsd_rng_init(&r, 22, 1);
    FOR_LEVELS(l) {
        for (int s = 0; s < N_SIZES; s++)
            for (int kind = 0; kind < 3; kind++) {
                int32_t n = sizes[s];
                fill(row, n, kind, &r);
                assert_int_equal(hsd_row_argmax(row, n), ref_argmax(row, n));
                float mx = row[ref_argmax(row, n)];
                assert_true(hsd_row_max(row, n) == mx);
                /* the max at the very end, then tied with an earlier copy */
                row[n - 1] = 1e30f;
                assert_int_equal(hsd_row_argmax(row, n), n - 1);
                row[n / 2] = 1e30f;
                assert_int_equal(hsd_row_argmax(row, n), n > 1 ? n / 2 : 0);
                row[0] = 1e30f;
                assert_int_equal(hsd_row_argmax(row, n), 0);
            }
        /* all equal, all -inf: index 0 */
        for (int32_t i = 0; i < 1000; i++) row[i] = 2.5f, row2[i] = -INFINITY;
        assert_int_equal(hsd_row_argmax(row, 1000), 0);
        assert_int_equal(hsd_row_argmax(row2, 1000), 0);
    }
    hsd_cpu_level_limit(HSD_CPU_N_LEVELS);
}

static void test_exp_sum(void **state) {
    (void)state;
    hsd_rng r;
    hsd_rng_init(&r, 22, 2);
    double worst = 0, worst_sum = 0;
    FOR_LEVELS(l) {
        for (int s = 0; s < N_SIZES; s++)
            for (int kind = 0; kind < 3; kind++) {
                int32_t n = sizes[s];
                fill(row, n, kind, &r);
                float mx = row[ref_argmax(row, n)];
                if (mx == -INFINITY) continue; /* nothing to normalise (the sampler's case) */
                const float scale = kind == 1 ? 1.0f : 1.0f / 0.7f;
                double got = hsd_row_exp_sum(row, n, mx, scale, row2), ref = 0;
                for (int32_t i = 0; i < n; i++) {
                    double a = (double)((row[i] - mx) * scale), e = exp(a);
                    ref += e;
                    if (row[i] == -INFINITY) {
                        assert_true(row2[i] == 0.0f); /* masked tokens: exactly 0 */
                        continue;
                    }
                    if (a < -87.3) {
                        assert_true(row2[i] >= 0.0f && row2[i] < 1.2e-38f);
                        continue;
                    }
                    double rel = fabs(row2[i] - e) / e;
                    if (rel > worst) worst = rel;
                    assert_true(rel < 2.5e-7); /* 2.1 x 2^-23; measured 1.2e-7 */
                }
                double rs = fabs(got - ref) / ref;
                if (rs > worst_sum) worst_sum = rs;
                if (!(rs < 4e-7)) printf("  level %d n %d kind %d: sum %.17g, float64 %.17g\n", (int)l, (int)n, kind, got, ref);
                assert_true(rs < 2.5e-7);
                assert_true(hsd_row_exp_sum(row, n, mx, scale, NULL) == got); /* sum alone */
            }
    }
    printf("  exp: worst relative error %.3g per entry, %.3g on the sum\n", worst, worst_sum);
    hsd_cpu_level_limit(HSD_CPU_N_LEVELS);
}

typedef struct {
    float v;
    int32_t i;
} vi;

static int by_value_desc(const void *a, const void *b) {
    const vi *x = a, *y = b;
    if (x->v != y->v) return x->v > y->v ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

static void test_topk(void **state) {
    (void)state;
    hsd_rng r;
    hsd_rng_init(&r, 22, 3);
    vi *s = malloc(MAXN * sizeof *s);
    assert_non_null(s);
    const int32_t ks[] = {1, 2, 3, 40, 1000};
    FOR_LEVELS(l) {
        for (int z = 0; z < N_SIZES; z++)
            for (int kind = 0; kind < 3; kind++) {
                int32_t n = sizes[z];
                if (n > 152000) continue; /* the reference sort is the slow part */
                fill(row, n, kind, &r);
                for (int32_t i = 0; i < n; i++) s[i] = (vi){row[i], i};
                qsort(s, (size_t)n, sizeof *s, by_value_desc);
                for (size_t q = 0; q < sizeof ks / sizeof ks[0]; q++) {
                    int32_t k = ks[q] < n ? ks[q] : n;
                    hsd_row_topk(row, n, k, ibuf);
                    for (int32_t j = 0; j < k; j++) assert_int_equal(ibuf[j], s[j].i);
                }
                /* gather: every index at or above a threshold, increasing */
                float thr = s[n / 3].v;
                int32_t c = hsd_row_gather_ge(row, n, thr, ibuf), c2 = 0;
                for (int32_t i = 0; i < n; i++)
                    if (row[i] >= thr) ibuf2[c2++] = i;
                assert_int_equal(c, c2);
                assert_memory_equal(ibuf, ibuf2, (size_t)c * sizeof *ibuf);
            }
    }
    free(s);
    hsd_cpu_level_limit(HSD_CPU_N_LEVELS);
}

static void test_softcap(void **state) {
    (void)state;
    hsd_rng r;
    hsd_rng_init(&r, 22, 4);
    const float caps[] = {30.0f, 50.0f, 1.0f};
    double worst = 0, worst_tanh = 0;
    const int32_t n = 200003;
    FOR_LEVELS(l) {
        for (int c = 0; c < 3; c++) {
            float cap = caps[c];
            for (int32_t i = 0; i < n; i++) {
                float u = hsd_rng_uniform(&r);
                /* magnitudes from 1e-6 to 1e3 times the cap, both signs, and a dense sweep
                 * over the polynomial / exp boundary at |x| = 0.625 cap */
                float mag = i % 3 == 0 ? cap * (0.5f + 0.25f * u)
                                       : cap * powf(10.0f, -6.0f + 9.0f * u);
                row[i] = (i & 1 ? -1.0f : 1.0f) * mag;
            }
            row[0] = 0.0f, row[1] = -0.0f, row[2] = INFINITY, row[3] = -INFINITY, row[4] = NAN;
            row[5] = 1e-30f, row[6] = -3e38f;
            memcpy(row2, row, (size_t)n * sizeof *row);
            hsd_row_softcap(row2, (size_t)n, cap);
            assert_true(row2[2] == INFINITY && row2[3] == -INFINITY && isnan(row2[4]));
            assert_true(row2[0] == 0.0f && row2[6] == -cap);
            for (int32_t i = 0; i < n; i++) {
                if (i >= 2 && i <= 4) continue;
                double ref = (double)cap * tanh((double)row[i] / (double)cap);
                double e = ref == 0 ? fabs(row2[i]) : fabs(row2[i] - ref) / fabs(ref);
                if (e > worst) worst = e;
                if (cap == 1.0f && e > worst_tanh) worst_tanh = e;
                if (!(e <= 3.6e-7)) printf("  level %d cap %g x %.9g: %.9g, float64 %.17g\n", (int)l, cap, row[i], row2[i], ref);
                assert_true(e <= 3.6e-7); /* 3 x 2^-23 with the division and product */
                if (cap == 1.0f) assert_true(e <= 2.4e-7); /* tanh alone: 2 x 2^-23 */
            }
            /* batch invariance: any element gives the same bits at any offset */
            for (int32_t off = 0; off < 40; off++) {
                float one[64];
                int32_t m = 1 + off % 17;
                memcpy(one, row + 1000 + off, (size_t)m * sizeof *one);
                hsd_row_softcap(one, (size_t)m, cap);
                assert_memory_equal(one, row2 + 1000 + off, (size_t)m * sizeof *one);
            }
        }
    }
    printf("  soft-cap: worst relative error %.3g against float64 cap*tanh(x/cap); tanh alone "
           "(cap 1) %.3g\n", worst, worst_tanh);
    hsd_cpu_level_limit(HSD_CPU_N_LEVELS);
}

int main(void) {
    row = malloc(MAXN * sizeof *row);
    row2 = malloc(MAXN * sizeof *row2);
    ibuf = malloc(MAXN * sizeof *ibuf);
    ibuf2 = malloc(MAXN * sizeof *ibuf2);
    if (!row || !row2 || !ibuf || !ibuf2) return 1;
    printf("CPU kernel levels: best %s (%s)\n", hsd_cpu_level_name(hsd_cpu_features_get()->best),
           hsd_cpu_features_get()->desc);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_argmax_max),
        cmocka_unit_test(test_exp_sum),
        cmocka_unit_test(test_topk),
        cmocka_unit_test(test_softcap),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    free(row), free(row2), free(ibuf), free(ibuf2);
    return rc;
}
