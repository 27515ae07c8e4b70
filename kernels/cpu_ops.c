#include "kernels/cpu_ops.h"
#include "kernels/cpu_features.h"

#include "kernels/quant.h"

#include <math.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include "kernels/simd_exp.h"
#define HSD_X86 1
#define HSD_AVX2 __attribute__((target("avx2,fma,f16c")))
#endif

const char *hsd_dtype_name(hsd_dtype t) {
    switch (t) {
    case HSD_DT_F32: return "F32";
    case HSD_DT_F16: return "F16";
    case HSD_DT_BF16: return "BF16";
    case HSD_DT_Q8_0: return "Q8_0";
    case HSD_DT_Q4_0: return "Q4_0";
    case HSD_DT_Q4_1: return "Q4_1";
    case HSD_DT_Q5_0: return "Q5_0";
    case HSD_DT_Q5_1: return "Q5_1";
    case HSD_DT_Q2_K: return "Q2_K";
    case HSD_DT_Q3_K: return "Q3_K";
    case HSD_DT_Q4_K: return "Q4_K";
    case HSD_DT_Q5_K: return "Q5_K";
    case HSD_DT_Q6_K: return "Q6_K";
    case HSD_DT_COUNT: break;
    }
    return "?";
}

size_t hsd_dtype_row_bytes(hsd_dtype t, int64_t cols) {
    switch (t) {
    case HSD_DT_F32: return (size_t)cols * 4;
    case HSD_DT_F16:
    case HSD_DT_BF16: return (size_t)cols * 2;
    case HSD_DT_Q8_0: return (size_t)(cols / HSD_Q8_0_BLOCK) * HSD_Q8_0_BYTES;
    default: /* the other block types: kernels/quant_ref.c */
        return (size_t)(cols / hsd_dtype_block(t)) * hsd_dtype_block_bytes(t);
    }
}

/* ---- scalar conversions ---------------------------------------------------------- */

float hsd_fp16_to_fp32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    uint32_t bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13); /* inf / nan */
    } else if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { /* subnormal: value = man * 2^-24 */
            float f = (float)man * 5.9604644775390625e-8f;
            memcpy(&bits, &f, 4);
            bits |= sign;
        }
    } else {
        bits = sign | ((exp + 112) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t hsd_fp32_to_fp16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000;
    uint32_t absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u) return (uint16_t)(sign | 0x7c00 | (absx > 0x7f800000u ? 0x200 : 0));
    if (absx >= 0x477ff000u) return (uint16_t)(sign | 0x7c00); /* overflow to inf */
    if (absx < 0x38800000u) {                                  /* subnormal or zero */
        float a;
        memcpy(&a, &absx, 4);
        /* round to nearest even on a 2^-24 grid */
        float q = a * 16777216.0f;
        uint32_t m = (uint32_t)q;
        float frac = q - (float)m;
        if (frac > 0.5f || (frac == 0.5f && (m & 1))) m++;
        return (uint16_t)(sign | m);
    }
    uint32_t exp = (absx >> 23) - 112, man = absx & 0x7fffff;
    uint32_t h = (exp << 10) | (man >> 13);
    uint32_t rest = man & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) h++; /* carries into exp correctly */
    return (uint16_t)(sign | h);
}

float hsd_bf16_to_fp32(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t hsd_fp32_to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40); /* quiet nan */
    x += 0x7fff + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

static inline float elem_f32(hsd_dtype t, const uint8_t *row, int32_t i) {
    switch (t) {
    case HSD_DT_F32: {
        float f;
        memcpy(&f, row + 4 * (size_t)i, 4);
        return f;
    }
    case HSD_DT_F16: {
        uint16_t h;
        memcpy(&h, row + 2 * (size_t)i, 2);
        return hsd_fp16_to_fp32(h);
    }
    case HSD_DT_BF16: {
        uint16_t h;
        memcpy(&h, row + 2 * (size_t)i, 2);
        return hsd_bf16_to_fp32(h);
    }
    case HSD_DT_Q8_0: {
        const uint8_t *b = row + (size_t)(i / HSD_Q8_0_BLOCK) * HSD_Q8_0_BYTES;
        uint16_t d;
        memcpy(&d, b, 2);
        return hsd_fp16_to_fp32(d) * (float)(int8_t)b[2 + i % HSD_Q8_0_BLOCK];
    }
    default: break; /* other block types go through kernels/quant.h */
    }
    return 0.0f;
}

void hsd_q8_0_quantize_row(const float *x, int64_t cols, uint8_t *out) {
    for (int64_t b = 0; b < cols / HSD_Q8_0_BLOCK; b++) {
        const float *v = x + b * HSD_Q8_0_BLOCK;
        float amax = 0.0f;
        for (int i = 0; i < HSD_Q8_0_BLOCK; i++) amax = fmaxf(amax, fabsf(v[i]));
        float d = amax / 127.0f, id = d > 0.0f ? 1.0f / d : 0.0f;
        uint16_t dh = hsd_fp32_to_fp16(d);
        uint8_t *o = out + b * HSD_Q8_0_BYTES;
        memcpy(o, &dh, 2);
        for (int i = 0; i < HSD_Q8_0_BLOCK; i++) o[2 + i] = (uint8_t)(int8_t)lrintf(v[i] * id);
    }
}

/* ---- AVX2 kernels ------------------------------------------------------------------ */
#ifdef HSD_X86
static int cpu_has_avx2(void) {
    return hsd_cpu_level_active() >= HSD_CPU_AVX2; /* kernels/cpu_features.h */
}

HSD_AVX2 static inline float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* Eight consecutive elements i..i+7 of a row as floats (i multiple of 8). Inlined with a
 * constant type, so each caller below compiles to one straight loop per storage type. */
HSD_AVX2 static inline __m256 load8(hsd_dtype t, const uint8_t *row, int32_t i) {
    switch (t) {
    case HSD_DT_F32: return _mm256_loadu_ps((const float *)(const void *)row + i);
    case HSD_DT_F16:
        return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(row + 2 * (size_t)i)));
    case HSD_DT_BF16:
        return _mm256_castsi256_ps(_mm256_slli_epi32(
            _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)(row + 2 * (size_t)i))),
            16));
    case HSD_DT_Q8_0: {
        const uint8_t *b = row + (size_t)(i / HSD_Q8_0_BLOCK) * HSD_Q8_0_BYTES;
        uint16_t dh;
        memcpy(&dh, b, 2);
        __m256 d = _mm256_cvtph_ps(_mm_set1_epi16((short)dh));
        __m128i q = _mm_loadl_epi64((const __m128i *)(const void *)(b + 2 + i % HSD_Q8_0_BLOCK));
        return _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)));
    }
    default: break; /* other block types go through kernels/quant.h */
    }
    return _mm256_setzero_ps();
}

/* Four weight rows against one activation vector: each x load feeds four FMAs. */
HSD_AVX2 static inline void dot4_avx2(hsd_dtype t, const uint8_t *r0, const uint8_t *r1,
                                      const uint8_t *r2, const uint8_t *r3, const float *x,
                                      int32_t n, float *out, int32_t stride) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int32_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 xv = _mm256_loadu_ps(x + i);
        a0 = _mm256_fmadd_ps(load8(t, r0, i), xv, a0);
        a1 = _mm256_fmadd_ps(load8(t, r1, i), xv, a1);
        a2 = _mm256_fmadd_ps(load8(t, r2, i), xv, a2);
        a3 = _mm256_fmadd_ps(load8(t, r3, i), xv, a3);
    }
    float s0 = hsum8(a0), s1 = hsum8(a1), s2 = hsum8(a2), s3 = hsum8(a3);
    for (; i < n; i++) {
        s0 += elem_f32(t, r0, i) * x[i];
        s1 += elem_f32(t, r1, i) * x[i];
        s2 += elem_f32(t, r2, i) * x[i];
        s3 += elem_f32(t, r3, i) * x[i];
    }
    out[0] = s0;
    out[stride] = s1;
    out[2 * stride] = s2;
    out[3 * stride] = s3;
}

HSD_AVX2 static inline float dot1_avx2(hsd_dtype t, const uint8_t *r, const float *x, int32_t n) {
    __m256 a = _mm256_setzero_ps();
    int32_t i = 0;
    for (; i + 8 <= n; i += 8) a = _mm256_fmadd_ps(load8(t, r, i), _mm256_loadu_ps(x + i), a);
    float s = hsum8(a);
    for (; i < n; i++) s += elem_f32(t, r, i) * x[i];
    return s;
}

HSD_AVX2 static void rows_to_f32_avx2(hsd_dtype t, const uint8_t *row, size_t rb, int32_t count,
                                      int32_t cols, float *out) {
    for (int32_t r = 0; r < count; r++, row += rb, out += cols) {
        int32_t i = 0;
        for (; i + 8 <= cols; i += 8) _mm256_storeu_ps(out + i, load8(t, row, i));
        for (; i < cols; i++) out[i] = elem_f32(t, row, i);
    }
}

/* Four weight rows against two activation vectors: 8 accumulators, each weight load feeds
 * two FMAs and each x load four, so several tokens cost less than twice one. */
HSD_AVX2 static inline void dot4x2_avx2(hsd_dtype t, const uint8_t *r0, size_t rb, const float *x0,
                                        const float *x1, int32_t n, float *o0, float *o1) {
    const uint8_t *r1 = r0 + rb, *r2 = r1 + rb, *r3 = r2 + rb;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
    int32_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 xa = _mm256_loadu_ps(x0 + i), xb = _mm256_loadu_ps(x1 + i);
        __m256 w0 = load8(t, r0, i), w1 = load8(t, r1, i), w2 = load8(t, r2, i), w3 = load8(t, r3, i);
        a0 = _mm256_fmadd_ps(w0, xa, a0), b0 = _mm256_fmadd_ps(w0, xb, b0);
        a1 = _mm256_fmadd_ps(w1, xa, a1), b1 = _mm256_fmadd_ps(w1, xb, b1);
        a2 = _mm256_fmadd_ps(w2, xa, a2), b2 = _mm256_fmadd_ps(w2, xb, b2);
        a3 = _mm256_fmadd_ps(w3, xa, a3), b3 = _mm256_fmadd_ps(w3, xb, b3);
    }
    float s[8] = {hsum8(a0), hsum8(a1), hsum8(a2), hsum8(a3), hsum8(b0), hsum8(b1), hsum8(b2), hsum8(b3)};
    for (; i < n; i++) {
        float w0 = elem_f32(t, r0, i), w1 = elem_f32(t, r1, i), w2 = elem_f32(t, r2, i), w3 = elem_f32(t, r3, i);
        s[0] += w0 * x0[i], s[1] += w1 * x0[i], s[2] += w2 * x0[i], s[3] += w3 * x0[i];
        s[4] += w0 * x1[i], s[5] += w1 * x1[i], s[6] += w2 * x1[i], s[7] += w3 * x1[i];
    }
    for (int k = 0; k < 4; k++) o0[k] = s[k], o1[k] = s[4 + k];
}

/* One kernel per storage type so that load8's switch folds away. Tokens go in pairs (the
 * 4x2 kernel), an odd last token through the 4x1 kernel. */
#define HSD_DEF_MATMUL(T, SUFFIX)                                                            \
    HSD_AVX2 static void matmul_avx2_##SUFFIX(float *out, int32_t ld, const float *x,       \
                                              int32_t n, const uint8_t *w, size_t rb,       \
                                              int32_t cols, int32_t count) {                \
        int32_t r = 0;                                                                       \
        for (; r + 4 <= count; r += 4) {                                                     \
            const uint8_t *p = w + (size_t)r * rb;                                           \
            int32_t t = 0;                                                                   \
            for (; t + 2 <= n; t += 2)                                                       \
                dot4x2_avx2(T, p, rb, x + (size_t)t * cols, x + (size_t)(t + 1) * cols, cols, \
                            out + (size_t)t * ld + r, out + (size_t)(t + 1) * ld + r);       \
            for (; t < n; t++)                                                               \
                dot4_avx2(T, p, p + rb, p + 2 * rb, p + 3 * rb, x + (size_t)t * cols, cols,  \
                          out + (size_t)t * ld + r, 1);                                      \
        }                                                                                    \
        for (; r < count; r++)                                                               \
            for (int32_t t = 0; t < n; t++)                                                  \
                out[(size_t)t * ld + r] =                                                    \
                    dot1_avx2(T, w + (size_t)r * rb, x + (size_t)t * cols, cols);            \
    }
HSD_DEF_MATMUL(HSD_DT_F32, f32)
HSD_DEF_MATMUL(HSD_DT_F16, f16)
HSD_DEF_MATMUL(HSD_DT_BF16, bf16)
HSD_DEF_MATMUL(HSD_DT_Q8_0, q8_0)

HSD_AVX2 static float dot_f32_avx2(const float *a, const float *b, int32_t n) {
    return dot1_avx2(HSD_DT_F32, (const uint8_t *)a, b, n);
}

/* exp8: kernels/simd_exp.h (softmax and SiLU, whose libm expf calls were a quarter of a small
 * model's token time). */

HSD_AVX2 static float softmax_avx2(float *x, int32_t n) {
    __m256 mv = _mm256_set1_ps(-INFINITY);
    int32_t i = 0;
    for (; i + 8 <= n; i += 8) mv = _mm256_max_ps(mv, _mm256_loadu_ps(x + i));
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(mv), _mm256_extractf128_ps(mv, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    float max = _mm_cvtss_f32(m4);
    for (; i < n; i++) max = x[i] > max ? x[i] : max;
    __m256 sv = _mm256_setzero_ps(), bm = _mm256_set1_ps(max);
    for (i = 0; i + 8 <= n; i += 8) {
        __m256 e = hsd_exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), bm));
        _mm256_storeu_ps(x + i, e);
        sv = _mm256_add_ps(sv, e);
    }
    float sum = hsum8(sv);
    for (; i < n; i++) sum += x[i] = expf(x[i] - max);
    return sum;
}

HSD_AVX2 static void silu_mul_avx2(float *g, const float *u, int32_t n) {
    int32_t i = 0;
    const __m256 one = _mm256_set1_ps(1.0f);
    for (; i + 8 <= n; i += 8) {
        __m256 x = _mm256_loadu_ps(g + i);
        __m256 d = _mm256_add_ps(one, hsd_exp8(_mm256_sub_ps(_mm256_setzero_ps(), x)));
        _mm256_storeu_ps(g + i, _mm256_mul_ps(_mm256_div_ps(x, d), _mm256_loadu_ps(u + i)));
    }
    for (; i < n; i++) g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

/* Attention for one head over `n` cached positions, head_dim a multiple of 8. */
HSD_AVX2 static void attn_scores_avx2(float *att, const float *q, const float *k, size_t stride,
                                      const int32_t *slots, int32_t n, int32_t hd, float scale) {
    for (int32_t i = 0; i < n; i++) {
        const float *kr = k + (size_t)(slots ? slots[i] : i) * stride;
        __m256 a = _mm256_mul_ps(_mm256_loadu_ps(q), _mm256_loadu_ps(kr));
        for (int32_t d = 8; d < hd; d += 8) a = _mm256_fmadd_ps(_mm256_loadu_ps(q + d), _mm256_loadu_ps(kr + d), a);
        att[i] = hsum8(a) * scale;
    }
}

HSD_AVX2 static void attn_accum_avx2(float *out, const float *att, const float *v, size_t stride,
                                     const int32_t *slots, int32_t n, int32_t hd) {
    for (int32_t d = 0; d < hd; d += 8) {
        __m256 o = _mm256_setzero_ps();
        for (int32_t i = 0; i < n; i++)
            o = _mm256_fmadd_ps(_mm256_set1_ps(att[i]),
                                _mm256_loadu_ps(v + (size_t)(slots ? slots[i] : i) * stride + d), o);
        _mm256_storeu_ps(out + d, o);
    }
}
#endif /* HSD_X86 */

/* ---- portable entry points --------------------------------------------------------- */

void hsd_mat_rows_f32(const hsd_mat *w, int32_t row, int32_t count, float *out) {
    size_t rb = hsd_dtype_row_bytes(w->type, w->cols);
    const uint8_t *p = (const uint8_t *)w->data + (size_t)row * rb;
    if (hsd_dtype_is_quant(w->type) && w->type != HSD_DT_Q8_0) {
        for (int32_t r = 0; r < count; r++, p += rb)
            hsd_quant_dequant(w->type, p, w->cols, out + (size_t)r * w->cols);
        return;
    }
#ifdef HSD_X86
    if (cpu_has_avx2()) {
        rows_to_f32_avx2(w->type, p, rb, count, w->cols, out);
        return;
    }
#endif
    for (int32_t r = 0; r < count; r++, p += rb)
        for (int32_t i = 0; i < w->cols; i++) out[(size_t)r * w->cols + i] = elem_f32(w->type, p, i);
}

float hsd_dot_f32(const float *a, const float *b, int32_t n) {
#ifdef HSD_X86
    if (cpu_has_avx2()) return dot_f32_avx2(a, b, n);
#endif
    float s = 0.0f;
    for (int32_t i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

void hsd_matmul_rows(float *out, int32_t ld_out, const float *x, int32_t n, const hsd_mat *w,
                     int32_t row0, int32_t count, float *scratch) {
    if (hsd_dtype_is_quant(w->type) && w->type != HSD_DT_Q8_0) {
        hsd_quant_matmul_rows(out, ld_out, x, n, w, row0, count, scratch);
        return;
    }
    size_t rb = hsd_dtype_row_bytes(w->type, w->cols);
    const uint8_t *base = (const uint8_t *)w->data + (size_t)row0 * rb;
    const int32_t cols = w->cols;
#ifdef HSD_X86
    if (cpu_has_avx2()) {
        if (w->type == HSD_DT_F32 || n <= 4) { /* fused: weights read n/2 times */
            switch (w->type) {
            case HSD_DT_F32: matmul_avx2_f32(out, ld_out, x, n, base, rb, cols, count); return;
            case HSD_DT_F16: matmul_avx2_f16(out, ld_out, x, n, base, rb, cols, count); return;
            case HSD_DT_BF16: matmul_avx2_bf16(out, ld_out, x, n, base, rb, cols, count); return;
            case HSD_DT_Q8_0: matmul_avx2_q8_0(out, ld_out, x, n, base, rb, cols, count); return;
            default: break;
            }
        }
        /* Several tokens: widen 4 rows once, then reuse them for every token. */
        for (int32_t r = 0; r < count; r += 4) {
            int32_t c = count - r < 4 ? count - r : 4;
            rows_to_f32_avx2(w->type, base + (size_t)r * rb, rb, c, cols, scratch);
            matmul_avx2_f32(out + r, ld_out, x, n, (const uint8_t *)scratch, (size_t)cols * 4,
                            cols, c);
        }
        return;
    }
#endif
    (void)scratch;
    for (int32_t r = 0; r < count; r++) {
        const uint8_t *row = base + (size_t)r * rb;
        for (int32_t t = 0; t < n; t++) {
            const float *xt = x + (size_t)t * cols;
            float s = 0.0f;
            for (int32_t i = 0; i < cols; i++) s += elem_f32(w->type, row, i) * xt[i];
            out[(size_t)t * ld_out + r] = s;
        }
    }
}

/* ---- elementwise ops --------------------------------------------------------------- */

void hsd_rmsnorm(float *o, const float *x, const float *w, int32_t n, float eps) {
    float ss = hsd_dot_f32(x, x, n);
    float scale = 1.0f / sqrtf(ss / (float)n + eps);
    for (int32_t i = 0; i < n; i++) o[i] = w[i] * (scale * x[i]);
}

void hsd_softmax(float *x, int32_t n) {
#ifdef HSD_X86
    if (cpu_has_avx2()) {
        float inv = 1.0f / softmax_avx2(x, n);
        for (int32_t i = 0; i < n; i++) x[i] *= inv;
        return;
    }
#endif
    float max = x[0];
    for (int32_t i = 1; i < n; i++)
        if (x[i] > max) max = x[i];
    float sum = 0.0f;
    for (int32_t i = 0; i < n; i++) {
        x[i] = expf(x[i] - max);
        sum += x[i];
    }
    float inv = 1.0f / sum;
    for (int32_t i = 0; i < n; i++) x[i] *= inv;
}

void hsd_silu_mul(float *gate, const float *up, int32_t n) {
#ifdef HSD_X86
    if (cpu_has_avx2()) {
        silu_mul_avx2(gate, up, n);
        return;
    }
#endif
    for (int32_t i = 0; i < n; i++) {
        float g = gate[i];
        gate[i] = g / (1.0f + expf(-g)) * up[i];
    }
}

void hsd_add(float *x, const float *y, int32_t n) {
    for (int32_t i = 0; i < n; i++) x[i] += y[i];
}

#ifdef HSD_X86
/* The same butterflies, 8 lanes at a time: pairs h = 1, 2, 4 apart inside a vector (its
 * lanes permuted so that each meets its partner p, then a + b where the lane's bit h is clear
 * and p - x where it is set: the scalar loop's a - b with the same operands), pairs 8 or more
 * apart between vectors. Every element gets the scalar loop's operations in its order: the
 * same bits. block a multiple of 8, at most 1,024 (64 vectors). */
HSD_AVX2 static void hadamard_avx2(float *x, int64_t n, int32_t block, float norm) {
    const __m256 nv = _mm256_set1_ps(norm);
    const int32_t V = block / 8;
    for (int64_t b0 = 0; b0 + block <= n; b0 += block) {
        float *y = x + b0;
        for (int32_t v = 0; v < V; v++) {
            __m256 r = _mm256_loadu_ps(y + 8 * v), p;
            p = _mm256_permute_ps(r, 0xB1); /* h = 1 */
            r = _mm256_blend_ps(_mm256_add_ps(r, p), _mm256_sub_ps(p, r), 0xAA);
            p = _mm256_permute_ps(r, 0x4E); /* h = 2 */
            r = _mm256_blend_ps(_mm256_add_ps(r, p), _mm256_sub_ps(p, r), 0xCC);
            p = _mm256_permute2f128_ps(r, r, 1); /* h = 4 */
            r = _mm256_blend_ps(_mm256_add_ps(r, p), _mm256_sub_ps(p, r), 0xF0);
            _mm256_storeu_ps(y + 8 * v, r);
        }
        for (int32_t h = 1; h < V; h *= 2) /* vectors h apart: elements 8h apart */
            for (int32_t i = 0; i < V; i += 2 * h)
                for (int32_t j = i; j < i + h; j++) {
                    const __m256 a = _mm256_loadu_ps(y + 8 * j), c = _mm256_loadu_ps(y + 8 * (j + h));
                    _mm256_storeu_ps(y + 8 * j, _mm256_add_ps(a, c));
                    _mm256_storeu_ps(y + 8 * (j + h), _mm256_sub_ps(a, c));
                }
        for (int32_t v = 0; v < V; v++) _mm256_storeu_ps(y + 8 * v, _mm256_mul_ps(_mm256_loadu_ps(y + 8 * v), nv));
    }
}
#endif

void hsd_hadamard(float *x, int64_t n, int32_t block) {
    const float norm = 1.0f / sqrtf((float)block);
#ifdef HSD_X86
    if (block % 8 == 0 && cpu_has_avx2()) {
        hadamard_avx2(x, n, block, norm);
        return;
    }
#endif
    for (int64_t b0 = 0; b0 + block <= n; b0 += block) {
        float *y = x + b0;
        for (int32_t h = 1; h < block; h *= 2) /* pairs h apart: (a, b) -> (a + b, a - b) */
            for (int32_t i = 0; i < block; i += 2 * h)
                for (int32_t j = i; j < i + h; j++) {
                    const float a = y[j], b = y[j + h];
                    y[j] = a + b, y[j + h] = a - b;
                }
        for (int32_t i = 0; i < block; i++) y[i] *= norm;
    }
}

void hsd_rope(float *x, int32_t n_heads, int32_t head_dim, const float *cos_t,
              const float *sin_t, int interleaved) {
    int32_t half = head_dim / 2;
    for (int32_t h = 0; h < n_heads; h++) {
        float *v = x + (size_t)h * head_dim;
        for (int32_t i = 0; i < half; i++) {
            float *a = interleaved ? &v[2 * i] : &v[i];
            float *b = interleaved ? &v[2 * i + 1] : &v[i + half];
            float c = cos_t[i], s = sin_t[i], v0 = *a, v1 = *b;
            *a = v0 * c - v1 * s;
            *b = v0 * s + v1 * c;
        }
    }
}

void hsd_attn_scores(float *att, const float *q, const float *k, size_t stride,
                     const int32_t *slots, int32_t n, int32_t hd, float scale) {
#ifdef HSD_X86
    if (hd % 8 == 0 && cpu_has_avx2()) {
        attn_scores_avx2(att, q, k, stride, slots, n, hd, scale);
        return;
    }
#endif
    for (int32_t i = 0; i < n; i++) {
        const float *kr = k + (size_t)(slots ? slots[i] : i) * stride;
        float s = 0.0f;
        for (int32_t d = 0; d < hd; d++) s += q[d] * kr[d];
        att[i] = s * scale;
    }
}

void hsd_attn_accum(float *out, const float *att, const float *v, size_t stride,
                    const int32_t *slots, int32_t n, int32_t hd) {
#ifdef HSD_X86
    if (hd % 8 == 0 && cpu_has_avx2()) {
        attn_accum_avx2(out, att, v, stride, slots, n, hd);
        return;
    }
#endif
    memset(out, 0, (size_t)hd * sizeof *out);
    for (int32_t i = 0; i < n; i++) {
        const float *vr = v + (size_t)(slots ? slots[i] : i) * stride;
        for (int32_t d = 0; d < hd; d++) out[d] += att[i] * vr[d];
    }
}
