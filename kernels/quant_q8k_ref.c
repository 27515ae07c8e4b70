/* Scalar reference of the Q4_K / Q5_K / Q6_K x Q8_K integer dot products
 * (kernels/quant_x86_q8k.c, kernels/quant_x86_q8k_avx512.c): the result those must equal bit
 * for bit, stated without vector registers. It is llama.cpp's AVX2 vec_dot arithmetic:
 *   - per 256-block, eight int32 lanes; lane l sums, over the block's 32-element sub-blocks,
 *     scale * (the four products of elements 4l..4l+3 of the sub-block) — exact integers;
 *     Q6_K's 16-element sub-blocks put their scale on lanes 0..3 or 4..7;
 *   - acc[l] = fma(d_x * d_w, (float)lane[l], acc[l]) per block (d_x * d_w rounded first);
 *   - the mins (Q4_K/Q5_K: dmin * sum_j m_j * sum(q8 of sub-block j)) and Q6_K's offset
 *     (32 * sum_k sc_k * sum(q8 of sub-block k)) as one exact integer per block, added to a
 *     float in block order: acc_m += d_x * dmin * (float)mins;
 *   - result: ((acc0 + acc4) + (acc2 + acc6)) + ((acc1 + acc5) + (acc3 + acc7)) - acc_m. */
#include <math.h>
#include <string.h>

#include "kernels/quant.h"

static float half_of(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return hsd_fp16_to_fp32(h);
}

static float lanes_sum(const float a[8]) {
    return ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]));
}

static void k4_scale_min(const uint8_t *s, int j, int *sc, int *m) {
    if (j < 4) {
        *sc = s[j] & 63, *m = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 15) | (s[j - 4] >> 6) << 4;
        *m = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
    }
}

static float dot_q45k(const uint8_t *w, size_t bb, int five, const hsd_q8k *x, int64_t nb) {
    float acc[8] = {0}, acc_m = 0.0f;
    for (int64_t i = 0; i < nb; i++, w += bb, x++) {
        const uint8_t *qh = w + 16, *qs = w + (five ? 48 : 16);
        int32_t lane[8] = {0}, mins = 0;
        for (int j = 0; j < 8; j++) {
            int sc, m;
            k4_scale_min(w + 4, j, &sc, &m);
            mins += m * (x->bsums[2 * j] + x->bsums[2 * j + 1]);
            for (int b = 0; b < 32; b++) {
                int q = (qs[32 * (j / 2) + b] >> (4 * (j % 2))) & 15;
                if (five) q |= ((qh[b] >> j) & 1) << 4;
                lane[b / 4] += sc * q * x->qs[32 * j + b];
            }
        }
        float d = x->d * half_of(w);
        for (int l = 0; l < 8; l++) acc[l] = fmaf(d, (float)lane[l], acc[l]);
        acc_m += x->d * half_of(w + 2) * (float)mins;
    }
    return lanes_sum(acc) - acc_m;
}

static float dot_q6k(const uint8_t *w, const hsd_q8k *x, int64_t nb) {
    float acc[8] = {0}, acc_m = 0.0f;
    for (int64_t i = 0; i < nb; i++, w += 210, x++) {
        const uint8_t *ql = w, *qh = w + 128;
        const int8_t *sc = (const int8_t *)(w + 192);
        int32_t lane[8] = {0}, corr = 0;
        for (int k = 0; k < 16; k++) corr += sc[k] * x->bsums[k];
        for (int n = 0; n < 2; n++)
            for (int g = 0; g < 4; g++)
                for (int b = 0; b < 32; b++) {
                    int lo = (ql[64 * n + 32 * (g % 2) + b] >> (g < 2 ? 0 : 4)) & 15;
                    int q = lo | ((qh[32 * n + b] >> (2 * g)) & 3) << 4;
                    lane[b / 4] += sc[n * 8 + 2 * g + b / 16] * q * x->qs[128 * n + 32 * g + b];
                }
        float d = x->d * half_of(w + 208);
        for (int l = 0; l < 8; l++) acc[l] = fmaf(d, (float)lane[l], acc[l]);
        acc_m += d * (float)(32 * corr);
    }
    return lanes_sum(acc) - acc_m;
}

bool hsd_quant_dot_q8k_ref(hsd_dtype t, const void *row, const hsd_q8k *x, int64_t cols,
                           float *dot) {
    int64_t nb = cols / HSD_QK_K;
    switch (t) {
    case HSD_DT_Q4_K:
        *dot = dot_q45k(row, 144, 0, x, nb);
        return true;
    case HSD_DT_Q5_K:
        *dot = dot_q45k(row, 176, 1, x, nb);
        return true;
    case HSD_DT_Q6_K:
        *dot = dot_q6k(row, x, nb);
        return true;
    default:
        return false;
    }
}
