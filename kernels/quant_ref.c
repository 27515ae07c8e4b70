/* Scalar reference dequantisers of GGML's block types, one block at a time, written from the
 * block layouts (kernels/quant.h). Each element is computed with the same float operations
 * in the same order as llama.cpp's dequantisers ((d*sc)*q - dmin*m, etc.), so that a file
 * dequantised here gives llama.cpp's weights exactly; the vectorised versions in
 * quant_x86.c repeat these operations lane by lane and must match them bit for bit. */
#include "kernels/quant.h"

#include <stdlib.h>
#include <string.h>

typedef struct qinfo {
    int32_t block;
    size_t bytes;
} qinfo;

static qinfo info(hsd_dtype t) {
    switch (t) {
    case HSD_DT_F32:
        return (qinfo){1, 4};
    case HSD_DT_F16:
    case HSD_DT_BF16:
        return (qinfo){1, 2};
    case HSD_DT_Q8_0:
        return (qinfo){32, 34};
    case HSD_DT_Q4_0:
        return (qinfo){32, 18};
    case HSD_DT_Q4_1:
        return (qinfo){32, 20};
    case HSD_DT_Q5_0:
        return (qinfo){32, 22};
    case HSD_DT_Q5_1:
        return (qinfo){32, 24};
    case HSD_DT_Q2_K:
        return (qinfo){HSD_QK_K, 84};
    case HSD_DT_Q3_K:
        return (qinfo){HSD_QK_K, 110};
    case HSD_DT_Q4_K:
        return (qinfo){HSD_QK_K, 144};
    case HSD_DT_Q5_K:
        return (qinfo){HSD_QK_K, 176};
    case HSD_DT_Q6_K:
        return (qinfo){HSD_QK_K, 210};
    case HSD_DT_COUNT:
        break;
    }
    return (qinfo){1, 0};
}

bool hsd_dtype_is_quant(hsd_dtype t) {
    return t >= HSD_DT_Q8_0 && t < HSD_DT_COUNT;
}
int32_t hsd_dtype_block(hsd_dtype t) {
    return info(t).block;
}
size_t hsd_dtype_block_bytes(hsd_dtype t) {
    return info(t).bytes;
}

static float half_at(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return hsd_fp16_to_fp32(h);
}

/* ---- blocks of 32 ------------------------------------------------------------------ */

/* The 4 low bits of element j (< 32) of Q4_x/Q5_x: byte j%16, low nibble for j < 16. */
static inline int nibble(const uint8_t *qs, int j) {
    return j < 16 ? qs[j] & 15 : qs[j - 16] >> 4;
}

static void block_q4_0(const uint8_t *b, float *y) {
    float d = half_at(b);
    for (int j = 0; j < 32; j++) y[j] = (float)(nibble(b + 2, j) - 8) * d;
}

static void block_q4_1(const uint8_t *b, float *y) {
    float d = half_at(b), m = half_at(b + 2);
    for (int j = 0; j < 32; j++) y[j] = (float)nibble(b + 4, j) * d + m;
}

static void block_q5_0(const uint8_t *b, float *y) {
    float d = half_at(b);
    uint32_t qh;
    memcpy(&qh, b + 2, 4);
    for (int j = 0; j < 32; j++)
        y[j] = (float)((nibble(b + 6, j) | (int)((qh >> j) & 1) << 4) - 16) * d;
}

static void block_q5_1(const uint8_t *b, float *y) {
    float d = half_at(b), m = half_at(b + 2);
    uint32_t qh;
    memcpy(&qh, b + 4, 4);
    for (int j = 0; j < 32; j++)
        y[j] = (float)(nibble(b + 8, j) | (int)((qh >> j) & 1) << 4) * d + m;
}

static void block_q8_0(const uint8_t *b, float *y) {
    float d = half_at(b);
    for (int j = 0; j < 32; j++) y[j] = (float)(int8_t)b[2 + j] * d;
}

/* ---- super-blocks of 256 -------------------------------------------------------------
 * Q2_K / Q3_K / Q6_K pack 2-bit planes: the 256 elements are two halves of 128; element
 * (half n, plane g < 4, lane l < 32) takes bits 2g..2g+1 of byte n*32 + l of qs and belongs
 * to the 16-element sub-block n*8 + 2g + l/16. */

static void block_q2_k(const uint8_t *b, float *y) {
    const uint8_t *sc = b, *qs = b + 16;
    float d = half_at(b + 80), dmin = half_at(b + 82);
    for (int e = 0; e < 256; e++) {
        int n = e / 128, g = e % 128 / 32, l = e % 32, is = n * 8 + 2 * g + l / 16;
        int q = qs[n * 32 + l] >> (2 * g) & 3;
        float dl = d * (float)(sc[is] & 15), ml = dmin * (float)(sc[is] >> 4);
        y[e] = dl * (float)q - ml;
    }
}

/* Q3_K's 16 signed 6-bit scales: low 4 bits in the nibbles of bytes 0..7 (scales 0..7 low
 * nibbles, 8..15 high nibbles), the 2 high bits in bytes 8..11 (scale k: byte 8 + k%4,
 * bits 2*(k/4)), stored with an offset of 32. */
static int q3_k_scale(const uint8_t *s, int k) {
    int lo = k < 8 ? s[k] & 15 : s[k - 8] >> 4;
    int hi = s[8 + k % 4] >> (2 * (k / 4)) & 3;
    return (lo | hi << 4) - 32;
}

static void block_q3_k(const uint8_t *b, float *y) {
    const uint8_t *hmask = b, *qs = b + 32, *sc = b + 96;
    float d = half_at(b + 108);
    for (int e = 0; e < 256; e++) {
        int n = e / 128, g = e % 128 / 32, l = e % 32, is = n * 8 + 2 * g + l / 16;
        int q = (qs[n * 32 + l] >> (2 * g) & 3) - (hmask[l] >> (n * 4 + g) & 1 ? 0 : 4);
        float dl = d * (float)q3_k_scale(sc, is);
        y[e] = dl * (float)q;
    }
}

/* Q4_K / Q5_K: 8 sub-blocks of 32 with unsigned 6-bit scale and min packed in 12 bytes:
 * j < 4: scale = s[j] & 63, min = s[j+4] & 63; j >= 4: the low 4 bits from byte j+4's
 * nibbles and the high 2 bits from the top of bytes j-4 (scale) and j (min). */
static void k4_scale_min(const uint8_t *s, int j, int *sc, int *m) {
    if (j < 4) {
        *sc = s[j] & 63, *m = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 15) | (s[j - 4] >> 6) << 4;
        *m = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
    }
}

/* Element e: sub-block e/32; the nibble of byte (e/64)*32 + e%32, low for even sub-blocks. */
static void block_q4_k(const uint8_t *b, float *y) {
    float d = half_at(b), dmin = half_at(b + 2);
    const uint8_t *s = b + 4, *qs = b + 16;
    for (int j = 0; j < 8; j++) {
        int sc, m;
        k4_scale_min(s, j, &sc, &m);
        float d1 = d * (float)sc, m1 = dmin * (float)m;
        for (int l = 0; l < 32; l++) {
            int q = j % 2 ? qs[j / 2 * 32 + l] >> 4 : qs[j / 2 * 32 + l] & 15;
            y[j * 32 + l] = d1 * (float)q - m1;
        }
    }
}

/* Q5_K: as Q4_K plus a fifth bit, bit j of qh[l] for sub-block j. */
static void block_q5_k(const uint8_t *b, float *y) {
    float d = half_at(b), dmin = half_at(b + 2);
    const uint8_t *s = b + 4, *qh = b + 16, *qs = b + 48;
    for (int j = 0; j < 8; j++) {
        int sc, m;
        k4_scale_min(s, j, &sc, &m);
        float d1 = d * (float)sc, m1 = dmin * (float)m;
        for (int l = 0; l < 32; l++) {
            int q = j % 2 ? qs[j / 2 * 32 + l] >> 4 : qs[j / 2 * 32 + l] & 15;
            q |= (qh[l] >> j & 1) << 4;
            y[j * 32 + l] = d1 * (float)q - m1;
        }
    }
}

/* Q6_K: element (half n, plane g, lane l): low 4 bits from ql[n*64 + (g%2)*32 + l] (low
 * nibble for g < 2), high 2 bits from bits 2g of qh[n*32 + l]; signed with offset 32; one
 * int8 scale per 16 elements. */
static void block_q6_k(const uint8_t *b, float *y) {
    const uint8_t *ql = b, *qh = b + 128;
    const int8_t *sc = (const int8_t *)(b + 192);
    float d = half_at(b + 208);
    for (int e = 0; e < 256; e++) {
        int n = e / 128, g = e % 128 / 32, l = e % 32, is = n * 8 + 2 * g + l / 16;
        int lo = ql[n * 64 + g % 2 * 32 + l];
        lo = g < 2 ? lo & 15 : lo >> 4;
        int q = (lo | (qh[n * 32 + l] >> (2 * g) & 3) << 4) - 32;
        y[e] = d * (float)sc[is] * (float)q;
    }
}

typedef void (*block_fn)(const uint8_t *b, float *y);

static block_fn block_of(hsd_dtype t) {
    switch (t) {
    case HSD_DT_Q8_0:
        return block_q8_0;
    case HSD_DT_Q4_0:
        return block_q4_0;
    case HSD_DT_Q4_1:
        return block_q4_1;
    case HSD_DT_Q5_0:
        return block_q5_0;
    case HSD_DT_Q5_1:
        return block_q5_1;
    case HSD_DT_Q2_K:
        return block_q2_k;
    case HSD_DT_Q3_K:
        return block_q3_k;
    case HSD_DT_Q4_K:
        return block_q4_k;
    case HSD_DT_Q5_K:
        return block_q5_k;
    case HSD_DT_Q6_K:
        return block_q6_k;
    default:
        return NULL;
    }
}

/* F32/F16/BF16 go through the same entry points so that callers need no special case. */
static void dequant_float(hsd_dtype t, const uint8_t *p, int64_t cols, float *out) {
    for (int64_t i = 0; i < cols; i++) {
        uint16_t h;
        if (t == HSD_DT_F32) {
            memcpy(&out[i], p + 4 * i, 4);
            continue;
        }
        memcpy(&h, p + 2 * i, 2);
        out[i] = t == HSD_DT_F16 ? hsd_fp16_to_fp32(h) : hsd_bf16_to_fp32(h);
    }
}

void hsd_quant_dequant_ref(hsd_dtype t, const void *row, int64_t cols, float *out) {
    const uint8_t *p = row;
    block_fn f = block_of(t);
    if (!f) {
        dequant_float(t, p, cols, out);
        return;
    }
    qinfo q = info(t);
    for (int64_t i = 0; i + q.block <= cols; i += q.block, p += q.bytes) f(p, out + i);
}

float hsd_quant_dot_ref(hsd_dtype t, const void *row, const float *x, int64_t cols) {
    const uint8_t *p = row;
    block_fn f = block_of(t);
    qinfo q = info(t);
    float buf[HSD_QK_K], s = 0.0f;
    if (!f) {
        for (int64_t i = 0; i < cols; i++) {
            dequant_float(t, p + (size_t)i * q.bytes, 1, buf);
            s += buf[0] * x[i];
        }
        return s;
    }
    for (int64_t i = 0; i + q.block <= cols; i += q.block, p += q.bytes) {
        f(p, buf);
        for (int32_t j = 0; j < q.block; j++) s += buf[j] * x[i + j];
    }
    return s;
}

void hsd_quant_dequant(hsd_dtype t, const void *row, int64_t cols, float *out) {
    if (!hsd_quant_dequant_avx2(t, row, cols, out)) hsd_quant_dequant_ref(t, row, cols, out);
}

/* Q4_K/Q5_K/Q6_K rows: activations to Q8_K once, then integer dot products row by row, the
 * fastest version this CPU has (kernels/quant_x86_q8k*.c; all equal to the scalar reference,
 * kernels/quant_q8k_ref.c, bit for bit). false when the type is not covered, or on allocation
 * failure: the caller takes the float path. */
bool hsd_quant_is_q8k(hsd_dtype t) {
    return t == HSD_DT_Q4_K || t == HSD_DT_Q5_K || t == HSD_DT_Q6_K;
}

void hsd_quant_matmul_q8k_rows(float *out, int32_t ld_out, const hsd_q8k *xq, int32_t n,
                               const hsd_mat *w, int32_t row0, int32_t count) {
    int64_t nb = w->cols / HSD_QK_K;
    size_t rb = hsd_dtype_row_bytes(w->type, w->cols);
    const uint8_t *base = (const uint8_t *)w->data + (size_t)row0 * rb;
    float col[16], probe;
    /* AVX-512: a row's weights unpacked once for up to 4 tokens (the same bits per token) */
    if (hsd_quant_dot_q8k_avx512_n(w->type, base, xq, 0, w->cols, &probe)) {
        for (int32_t r = 0; r < count; r++)
            for (int32_t t0 = 0; t0 < n; t0 += 16) {
                int32_t m = n - t0 < 16 ? n - t0 : 16;
                hsd_quant_dot_q8k_avx512_n(w->type, base + (size_t)r * rb, xq + t0 * nb, m,
                                           w->cols, col);
                for (int32_t t = 0; t < m; t++) out[(size_t)(t0 + t) * ld_out + r] = col[t];
            }
        return;
    }
    bool (*dot)(hsd_dtype, const void *, const hsd_q8k *, int64_t, float *) =
        hsd_quant_dot_q8k_avx2(w->type, base, xq, 0, &probe) ? hsd_quant_dot_q8k_avx2
                                                             : hsd_quant_dot_q8k_ref;
    for (int32_t r = 0; r < count; r++)
        for (int32_t t = 0; t < n; t++)
            dot(w->type, base + (size_t)r * rb, xq + t * nb, w->cols, &out[(size_t)t * ld_out + r]);
}

/* Q4_K/Q5_K/Q6_K rows with the activations quantised here (callers that run many row ranges
 * of one product quantise once: hsd_quant_matmul_q8k_rows). false on allocation failure. */
static bool quant_matmul_q8k(float *out, int32_t ld_out, const float *x, int32_t n,
                             const hsd_mat *w, int32_t row0, int32_t count) {
    if (!hsd_quant_is_q8k(w->type)) return false;
    int64_t nb = w->cols / HSD_QK_K;
    hsd_q8k *xq = malloc(sizeof *xq * (size_t)(nb * n));
    if (!xq) return false;
    for (int32_t t = 0; t < n; t++) hsd_quant_q8k(x + (size_t)t * w->cols, w->cols, xq + t * nb);
    hsd_quant_matmul_q8k_rows(out, ld_out, xq, n, w, row0, count);
    free(xq);
    return true;
}

/* Q4_0 / Q5_0 / Q4_1 / Q5_1 rows: activations to Q8_0 blocks once, then exact integer block
 * sums and fused scales (kernels/quant_q32.c), each (row, token) on its own. false on
 * allocation failure. */
static bool quant_matmul_q32(float *out, int32_t ld_out, const float *x, int32_t n,
                             const hsd_mat *w, int32_t row0, int32_t count) {
    int64_t nb = w->cols / 32;
    size_t rb = hsd_dtype_row_bytes(w->type, w->cols);
    const uint8_t *base = (const uint8_t *)w->data + (size_t)row0 * rb;
    hsd_q8_0 *xq = malloc(sizeof *xq * (size_t)(nb * n));
    if (!xq) return false;
    for (int32_t t = 0; t < n; t++) hsd_quant_q8_0(x + (size_t)t * w->cols, w->cols, xq + t * nb);
    if (!hsd_quant_matmul_q32_avx2(w->type, base, rb, count, xq, n, w->cols, out, ld_out))
        for (int32_t r = 0; r < count; r++)
            for (int32_t t = 0; t < n; t++)
                out[(size_t)t * ld_out + r] =
                    hsd_quant_dot_q32_ref(w->type, base + (size_t)r * rb, xq + t * nb, w->cols);
    free(xq);
    return true;
}

void hsd_quant_matmul_rows(float *out, int32_t ld_out, const float *x, int32_t n, const hsd_mat *w,
                           int32_t row0, int32_t count, float *scratch) {
    size_t rb = hsd_dtype_row_bytes(w->type, w->cols);
    /* Q4_K/Q5_K/Q6_K: llama.cpp's integer arithmetic for every n, each (row, token) on its own,
     * so a token's result does not depend on how many are verified with it (batch invariance:
     * greedy speculative output must equal AR's even at near-ties) */
    if (quant_matmul_q8k(out, ld_out, x, n, w, row0, count)) return;
    if (hsd_quant_is_q32(w->type) && quant_matmul_q32(out, ld_out, x, n, w, row0, count)) return;
    /* each thread rounds its own copy: n*cols work against count*n*cols for the rows */
    float *xr = malloc(sizeof(float) * (size_t)n * (size_t)w->cols);
    bool rounded = xr != NULL;
    for (int32_t t = 0; t < n && rounded; t++)
        rounded = hsd_quant_act_round(w->type, x + (size_t)t * w->cols, w->cols,
                                      xr + (size_t)t * w->cols);
    if (rounded) x = xr;
    const uint8_t *base = (const uint8_t *)w->data + (size_t)row0 * rb;
    for (int32_t r = 0; r < count; r += 4) {
        int32_t c = count - r < 4 ? count - r : 4;
        for (int32_t k = 0; k < c; k++)
            hsd_quant_dequant(w->type, base + (size_t)(r + k) * rb, w->cols,
                              scratch + (size_t)k * w->cols);
        hsd_mat f = {HSD_DT_F32, c, w->cols, scratch, NULL};
        /* f32 rows never reach this function again, and need no scratch */
        hsd_matmul_rows(out + r, ld_out, x, n, &f, 0, c, NULL);
    }
    free(xr);
}
