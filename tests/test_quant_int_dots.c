/* The integer dot products that reproduce llama.cpp's quantised matmuls (kernels/quant.h):
 * Q4_0 / Q5_0 / Q4_1 / Q5_1 x Q8_0 (kernels/quant_q32.c) and Q4_K/Q5_K/Q6_K x Q8_K (kernels/quant_q8k_ref.c, the
 * AVX2 and AVX-512 versions). Each vector version equals its scalar reference bit for bit on
 * random blocks (a difference would break batch invariance or the CPU-independence of the
 * logits), and each reference is within float rounding of a float64 sum over the same
 * quantised values. (Split from tests/test_gguf_quant.c, which checks the dequantisers, the
 * matmul path and llama.cpp's logits.) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/quant.h"
#include "tests/quant_rows.h"
#include "tests/testutil.h"

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static uint32_t rnd(void) { return hsd_test_xorshift(&rng_state); }
static void random_row(hsd_dtype t, uint8_t *row, int64_t cols) {
    hsd_test_random_quant_row(t, row, cols, &rng_state);
}

/* Q4_0 / Q5_0 / Q4_1 / Q5_1 x Q8_0 integer dots (Q4_0: llama.cpp's repacked-kernel
 * arithmetic): the AVX2 version equals the scalar reference bit for bit for every row count 1..8
 * of a group, and the reference is within float rounding of the float64 sum over blocks of
 * d_w * d_x * (exact integer sum) (+ m_w * d_x * Σq for the _1 types), the weights decoded here
 * from the block layouts of kernels/quant.h. */
static void test_q32_integer_dots(void **state) {
    (void)state;
    static const hsd_dtype types[] = {HSD_DT_Q4_0, HSD_DT_Q5_0, HSD_DT_Q4_1, HSD_DT_Q5_1};
    const int64_t cols = 1024, nb = cols / 32;
    float *x = malloc(sizeof(float) * cols), ref[8], vec[8];
    hsd_q8_0 *xq = malloc(sizeof *xq * nb);
    int have = 1;
    for (int ti = 0; ti < 4; ti++) {
        const hsd_dtype t = types[ti];
        const int mins = t == HSD_DT_Q4_1 || t == HSD_DT_Q5_1,
                  five = t == HSD_DT_Q5_0 || t == HSD_DT_Q5_1;
        const int qh_at = mins ? 4 : 2, qs_at = qh_at + (five ? 4 : 0),
                  off = mins ? 0 : five ? 16 : 8;
        const size_t rb = hsd_dtype_row_bytes(t, cols), bb = hsd_dtype_row_bytes(t, 32);
        uint8_t *rows = malloc(rb * 8);
        for (int trial = 0; trial < 50; trial++) {
            for (int r = 0; r < 8; r++) random_row(t, rows + r * rb, cols);
            for (int64_t i = 0; i < cols; i++) x[i] = ((float)(rnd() % 20001) - 10000.0f) * 1e-3f;
            hsd_quant_q8_0(x, cols, xq);
            for (int r = 0; r < 8; r++) {
                ref[r] = hsd_quant_dot_q32_ref(t, rows + r * rb, xq, cols);
                double s = 0, mag = 0;
                for (int64_t b = 0; b < nb; b++) {
                    const uint8_t *blk = rows + r * rb + b * bb;
                    double dw = hsd_fp16_to_fp32((uint16_t)(blk[0] | blk[1] << 8)), isum = 0, xs = 0;
                    uint32_t qh = (uint32_t)blk[qh_at] | (uint32_t)blk[qh_at + 1] << 8 |
                                  (uint32_t)blk[qh_at + 2] << 16 | (uint32_t)blk[qh_at + 3] << 24;
                    for (int j = 0; j < 32; j++) {
                        int q = j < 16 ? (blk[qs_at + j] & 15) : (blk[qs_at + j - 16] >> 4);
                        if (five) q |= (int)((qh >> j) & 1) << 4;
                        isum += (double)(q - off) * xq[b].qs[j], xs += xq[b].qs[j];
                    }
                    double term = dw * xq[b].d * isum;
                    if (mins) {
                        double m = hsd_fp16_to_fp32((uint16_t)(blk[2] | blk[3] << 8));
                        s += m * xq[b].d * xs, mag += fabs(m * xq[b].d * xs);
                    }
                    s += term, mag += fabs(term);
                }
                /* 2 nb + 1 float roundings (scale products, fused adds), each <= 2^-24 of mag */
                if (fabs(ref[r] - s) > (double)(2 * nb + 1) * 0x1p-24 * mag + 1e-30)
                    fail_msg("%s integer dot trial %d row %d: %.9g, float64 %.9g",
                             hsd_dtype_name(t), trial, r, ref[r], s);
            }
            for (int32_t n = 1; n <= 8 && have; n++) {
                have = hsd_quant_matmul_q32_avx2(t, rows, rb, n, xq, 1, cols, vec, 8);
                if (have && memcmp(vec, ref, sizeof(float) * (size_t)n))
                    fail_msg("%s integer dot trial %d, %d rows: AVX2 differs from the reference",
                             hsd_dtype_name(t), trial, n);
            }
        }
        free(rows);
    }
    if (!have) fprintf(stderr, "32-block AVX2 integer dots not checked: no AVX2+FMA here\n");
    free(x), free(xq);
}

/* The k-quant integer dots: AVX2 and AVX-512 equal the scalar reference bit for bit (random
 * rows, activations of several magnitudes, an all-zero activation block), and the reference is
 * within float rounding of float64 over the dequantised row and the Q8_K activations. */
static void test_q8k_dots(void **state) {
    (void)state;
    const int64_t cols = 1024, nb = cols / HSD_QK_K;
    static const hsd_dtype kt[] = {HSD_DT_Q4_K, HSD_DT_Q5_K, HSD_DT_Q6_K};
    uint8_t *row = malloc(hsd_dtype_row_bytes(HSD_DT_Q6_K, cols) + 64);
    float *x = malloc(sizeof(float) * cols);
    hsd_q8k *xq = malloc(sizeof *xq * nb);
    float a = 0, b = 0, r = 0, *deq = malloc(sizeof(float) * cols);
    int have2 = hsd_quant_dot_q8k_avx2(HSD_DT_Q4_K, row, xq, 0, &a),
        have512 = hsd_quant_dot_q8k_avx512(HSD_DT_Q4_K, row, xq, 0, &b);
    if (!have2 || !have512)
        fprintf(stderr, "k-quant dots: %s not checked (CPU lacks them)\n",
                have2 ? "AVX-512" : "AVX2 and AVX-512");
    for (size_t ti = 0; ti < sizeof kt / sizeof kt[0]; ti++)
        for (int trial = 0; trial < 300; trial++) {
            random_row(kt[ti], row, cols);
            float scale = trial % 3 == 0 ? 1e-3f : trial % 3 == 1 ? 1.0f : 50.0f;
            for (int64_t i = 0; i < cols; i++)
                x[i] = ((float)(rnd() % 20001) - 10000.0f) * 1e-4f * scale;
            if (trial % 7 == 0)
                for (int64_t i = 0; i < HSD_QK_K; i++) x[i] = 0.0f;
            hsd_quant_q8k(x, cols, xq);
            assert_true(hsd_quant_dot_q8k_ref(kt[ti], row, xq, cols, &r));
            hsd_quant_dequant_ref(kt[ti], row, cols, deq);
            double s = 0, mag = 0;
            for (int64_t i = 0; i < cols; i++) {
                double p = (double)deq[i] * xq[i / HSD_QK_K].qs[i % HSD_QK_K] * xq[i / HSD_QK_K].d;
                s += p, mag += fabs(p);
            }
            if (fabs(r - s) > 1e-5 * mag + 1e-30)
                fail_msg("%s trial %d: reference %.9g, float64 %.9g", hsd_dtype_name(kt[ti]), trial,
                         r, s);
            if (have2 && (!hsd_quant_dot_q8k_avx2(kt[ti], row, xq, cols, &a) || memcmp(&a, &r, 4)))
                fail_msg("%s trial %d: AVX2 %.9g != reference %.9g", hsd_dtype_name(kt[ti]), trial,
                         a, r);
            if (have512 &&
                (!hsd_quant_dot_q8k_avx512(kt[ti], row, xq, cols, &b) || memcmp(&b, &r, 4)))
                fail_msg("%s trial %d: AVX-512 %.9g != reference %.9g", hsd_dtype_name(kt[ti]),
                         trial, b, r);
        }
    /* one row against 6 tokens at once (a group of 4, then single ones): token k's bits are
     * the reference's for token k alone */
    hsd_q8k *xs = malloc(sizeof *xs * nb * 6);
    float dots[6];
    for (size_t ti = 0; ti < sizeof kt / sizeof kt[0] && have512; ti++)
        for (int trial = 0; trial < 50; trial++) {
            random_row(kt[ti], row, cols);
            for (int k = 0; k < 6; k++) {
                for (int64_t i = 0; i < cols; i++)
                    x[i] = ((float)(rnd() % 20001) - 10000.0f) * 1e-4f;
                hsd_quant_q8k(x, cols, xs + k * nb);
            }
            assert_true(hsd_quant_dot_q8k_avx512_n(kt[ti], row, xs, 6, cols, dots));
            for (int k = 0; k < 6; k++) {
                assert_true(hsd_quant_dot_q8k_ref(kt[ti], row, xs + k * nb, cols, &r));
                if (memcmp(&dots[k], &r, 4))
                    fail_msg("%s trial %d: token %d of 6 %.9g != reference alone %.9g",
                             hsd_dtype_name(kt[ti]), trial, k, dots[k], r);
            }
        }
    free(row), free(x), free(xq), free(deq), free(xs);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_q32_integer_dots),
        cmocka_unit_test(test_q8k_dots),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
