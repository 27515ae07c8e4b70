/* Weight quantisers for files hsd writes (hsd inflate --dtype q4_k_m): rows of fp32 to Q4_K,
 * Q6_K and (for widths that are not multiples of 256, as llama.cpp falls back) Q5_0 blocks in
 * GGML's layouts (kernels/quant.h; the decoders, kernels/quant_ref.c, define
 * what the bytes mean). Q4_K and Q6_K are not llama.cpp's quantisers (which weight the error
 * by importance and iterate): a small search per sub-block for the scale of least squared
 * error, so the files are valid and close, not byte-equal to llama.cpp's. Q5_0 follows
 * llama.cpp's reference rule (it has no search to reproduce). */
#include <math.h>
#include <string.h>

#include "kernels/quant.h"

static int clampi(int v, int lo, int hi) {
    return v < lo ? lo : v > hi ? hi : v;
}

/* One sub-block's affine fit x ≈ a·q − b, q in 0..nmax: a grid of candidate scales around
 * (hi − lo)/nmax, each giving its q and then the weighted least-squares a and b for those q;
 * the smallest weighted squared error wins (the kind of search llama.cpp's quantisers do). */
static void fit_affine(const float *x, int n, int nmax, float *a_out, float *b_out) {
    float lo = 0, hi = 0;
    for (int l = 0; l < n; l++) {
        lo = x[l] < lo ? x[l] : lo;
        hi = x[l] > hi ? x[l] : hi;
    }
    if (hi <= lo) {
        *a_out = 0, *b_out = -lo;
        return;
    }
    /* weights: large values matter more (llama.cpp's choice for Q4_K: rms + |x|) */
    float wt[32], ss = 0;
    for (int l = 0; l < n; l++) ss += x[l] * x[l];
    const float rms = sqrtf(ss / (float)n);
    double W = 0;
    for (int l = 0; l < n; l++) wt[l] = rms + fabsf(x[l]), W += wt[l];
    float best_a = (hi - lo) / (float)nmax, best_b = -lo, best_err = INFINITY;
    for (int is = -9; is <= 9; is++) {
        float iscale = ((float)nmax + 0.1f * (float)is) / (hi - lo);
        double sq = 0, sx = 0, sqq = 0, sqx = 0;
        int q[32];
        for (int l = 0; l < n; l++) {
            q[l] = clampi((int)lrintf((x[l] - lo) * iscale), 0, nmax);
            double w = wt[l];
            sq += w * q[l], sx += w * x[l], sqq += w * q[l] * q[l], sqx += w * q[l] * x[l];
        }
        double det = W * sqq - sq * sq;
        if (det <= 0) continue;
        double a = (W * sqx - sq * sx) / det, c = (sqq * sx - sq * sqx) / det; /* x ≈ a·q + c */
        if (a <= 0) continue;
        if (c > 0) { /* the min must stay >= 0 (b = −c <= 0 is not stored): refit a alone */
            c = 0;
            a = sqq > 0 ? sqx / sqq : 0;
        }
        float err = 0;
        for (int l = 0; l < n; l++) {
            float e = (float)(a * q[l] + c) - x[l];
            err += wt[l] * e * e;
        }
        if (err < best_err) best_err = err, best_a = (float)a, best_b = (float)-c;
    }
    *a_out = best_a, *b_out = best_b;
}

/* Q4_K: x ≈ d·sc_j·q − dmin·m_j on sub-block j (32 elements), q in 0..15, sc_j and m_j in
 * 0..63: each sub-block's affine fit (fit_affine), the 8 scales and mins quantised against
 * the largest, then q rounded against the stored values. */
static void block_q4_k(const float *x, uint8_t *b) {
    float scale[8], minv[8], smax = 0, mmax = 0;
    for (int j = 0; j < 8; j++) {
        fit_affine(x + 32 * j, 32, 15, &scale[j], &minv[j]);
        smax = scale[j] > smax ? scale[j] : smax;
        mmax = minv[j] > mmax ? minv[j] : mmax;
    }
    uint16_t dh = hsd_fp32_to_fp16(smax / 63.0f), mh = hsd_fp32_to_fp16(mmax / 63.0f);
    float d = hsd_fp16_to_fp32(dh), dmin = hsd_fp16_to_fp32(mh);
    int sc[8], m[8];
    for (int j = 0; j < 8; j++) {
        sc[j] = d > 0 ? clampi((int)lrintf(scale[j] / d), 0, 63) : 0;
        m[j] = dmin > 0 ? clampi((int)lrintf(minv[j] / dmin), 0, 63) : 0;
    }
    memcpy(b, &dh, 2);
    memcpy(b + 2, &mh, 2);
    uint8_t *s = b + 4, *qs = b + 16;
    for (int j = 0; j < 4; j++) {
        s[j] = (uint8_t)((sc[j] & 63) | (sc[j + 4] >> 4) << 6);
        s[j + 4] = (uint8_t)((m[j] & 63) | (m[j + 4] >> 4) << 6);
        s[j + 8] = (uint8_t)((sc[j + 4] & 15) | (m[j + 4] & 15) << 4);
    }
    memset(qs, 0, 128);
    for (int j = 0; j < 8; j++) {
        float d1 = d * (float)sc[j], m1 = dmin * (float)m[j];
        for (int l = 0; l < 32; l++) {
            int q = d1 > 0 ? clampi((int)lrintf((x[32 * j + l] + m1) / d1), 0, 15) : 0;
            qs[j / 2 * 32 + l] |= (uint8_t)(j % 2 ? q << 4 : q);
        }
    }
}

/* Q6_K: x ≈ d·sc_i·(q − 32) on sub-block i (16 elements), q − 32 in −32..31, sc_i an int8. */
static void block_q6_k(const float *x, uint8_t *b) {
    float scale[16], amax = 0;
    for (int i = 0; i < 16; i++) { /* the scale of least squared error among candidates */
        const float *xi = x + 16 * i;
        float a = 0;
        for (int l = 0; l < 16; l++) a = fmaxf(a, fabsf(xi[l]));
        scale[i] = a / 31.0f;
        float best = INFINITY;
        for (int is = -8; a > 0 && is <= 8; is++) {
            float sc = a / (31.0f + 0.25f * (float)is), err = 0;
            for (int l = 0; l < 16; l++) { /* weighted by x² (llama.cpp's choice for Q6_K) */
                float e = sc * (float)clampi((int)lrintf(xi[l] / sc), -32, 31) - xi[l];
                err += xi[l] * xi[l] * e * e;
            }
            if (err < best) best = err, scale[i] = sc;
        }
        amax = scale[i] > amax ? scale[i] : amax;
    }
    uint16_t dh = hsd_fp32_to_fp16(amax / 127.0f);
    float d = hsd_fp16_to_fp32(dh);
    uint8_t *ql = b, *qh = b + 128;
    int8_t *sc = (int8_t *)(b + 192);
    memset(b, 0, 208);
    for (int i = 0; i < 16; i++) {
        int s = d > 0 ? clampi((int)lrintf(scale[i] / d), 0, 127) : 0;
        sc[i] = (int8_t)s;
    }
    for (int e = 0; e < 256; e++) {
        float d1 = d * (float)sc[e / 16];
        int q = d1 > 0 ? clampi((int)lrintf(x[e] / d1), -32, 31) : 0;
        int u = q + 32, n = e / 128, g = e % 128 / 32, l = e % 32;
        ql[n * 64 + g % 2 * 32 + l] |= (uint8_t)(g < 2 ? (u & 15) : (u & 15) << 4);
        qh[n * 32 + l] |= (uint8_t)((u >> 4) << (2 * g));
    }
    memcpy(b + 208, &dh, 2);
}

/* One Q5_0 block: the value of largest magnitude, sign kept, maps to −16, so d = max/−16 and
 * q = x/d + 16 rounded half up, at most 31 (the rule of llama.cpp's reference quantiser, which
 * its Q4_K_M files use for the rows Q4_K cannot hold). */
static void block_q5_0(const float *x, uint8_t *b) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < 32; j++)
        if (fabsf(x[j]) > amax) amax = fabsf(x[j]), max = x[j];
    const float d = max / -16.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    const uint16_t dh = hsd_fp32_to_fp16(d);
    uint32_t qh = 0;
    memcpy(b, &dh, 2);
    for (int j = 0; j < 16; j++) {
        int q0 = (int)(int8_t)(x[j] * id + 16.5f), q1 = (int)(int8_t)(x[16 + j] * id + 16.5f);
        q0 = q0 < 31 ? q0 : 31, q1 = q1 < 31 ? q1 : 31;
        b[6 + j] = (uint8_t)((q0 & 15) | ((q1 & 15) << 4));
        qh |= (uint32_t)((q0 >> 4) & 1) << j | (uint32_t)((q1 >> 4) & 1) << (16 + j);
    }
    memcpy(b + 2, &qh, 4);
}

bool hsd_quant_row(hsd_dtype t, const float *x, int64_t cols, void *out) {
    if (t == HSD_DT_Q5_0 && cols % 32 == 0) {
        for (int64_t i = 0; i < cols / 32; i++) block_q5_0(x + 32 * i, (uint8_t *)out + 22 * i);
        return true;
    }
    if ((t != HSD_DT_Q4_K && t != HSD_DT_Q6_K) || cols % HSD_QK_K) return false;
    uint8_t *o = out;
    const size_t bb = hsd_dtype_block_bytes(t);
    for (int64_t i = 0; i < cols / HSD_QK_K; i++)
        (t == HSD_DT_Q4_K ? block_q4_k : block_q6_k)(x + HSD_QK_K * i, o + bb * (size_t)i);
    return true;
}
