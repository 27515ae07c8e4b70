/* AVX2 dequantisers of GGML's block types and dot products with fp32 activations, picked
 * at run time (the build targets x86-64-v2). Each dequantiser unpacks the quants of a block
 * into bytes, widens them eight at a time to floats and applies the reference's float
 * operations in the reference's order (mul, then add/sub; never fused), so its output equals
 * kernels/quant_ref.c bit for bit. The dot product dequantises 256 elements into a stack
 * buffer (L1) and accumulates them against x with FMAs. */
#include "kernels/cpu_features.h"
#include "kernels/quant.h"
#include "kernels/quant_x86_q32.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HSD_QX86 1
#define HSD_AVX2Q __attribute__((target("avx2,fma")))

static float half_at(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return hsd_fp16_to_fp32(h);
}

/* Eight signed bytes (the low 8 of v) as floats. */
HSD_AVX2Q static inline __m256 cvt8(__m128i v) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v));
}

/* 32 byte quants q (int8 range) to y[0..32): q*d + m (sub: q*d - m) per the reference. */
HSD_AVX2Q static inline void emit32_mul(float *y, __m256i q, float d) {
    __m256 dv = _mm256_set1_ps(d);
    __m128i lo = _mm256_castsi256_si128(q), hi = _mm256_extracti128_si256(q, 1);
    _mm256_storeu_ps(y, _mm256_mul_ps(cvt8(lo), dv));
    _mm256_storeu_ps(y + 8, _mm256_mul_ps(cvt8(_mm_srli_si128(lo, 8)), dv));
    _mm256_storeu_ps(y + 16, _mm256_mul_ps(cvt8(hi), dv));
    _mm256_storeu_ps(y + 24, _mm256_mul_ps(cvt8(_mm_srli_si128(hi, 8)), dv));
}

HSD_AVX2Q static inline void emit32_fma_free(float *y, __m256i q, float d, float m, int sub) {
    __m256 dv = _mm256_set1_ps(d), mv = _mm256_set1_ps(m);
    __m128i part[4] = {_mm256_castsi256_si128(q), _mm_srli_si128(_mm256_castsi256_si128(q), 8),
                       _mm256_extracti128_si256(q, 1),
                       _mm_srli_si128(_mm256_extracti128_si256(q, 1), 8)};
    for (int k = 0; k < 4; k++) {
        __m256 p = _mm256_mul_ps(cvt8(part[k]), dv);
        _mm256_storeu_ps(y + 8 * k, sub ? _mm256_sub_ps(p, mv) : _mm256_add_ps(p, mv));
    }
}

HSD_AVX2Q static void blocks32(hsd_dtype t, const uint8_t *b, int64_t nb, float *y) {
    const __m256i m8 = _mm256_set1_epi8(8), m16 = _mm256_set1_epi8(16);
    for (int64_t i = 0; i < nb; i++, y += 32) {
        switch (t) {
        case HSD_DT_Q4_0:
            emit32_mul(y, _mm256_sub_epi8(hsd_q32_nibbles(b + 2), m8), half_at(b));
            b += 18;
            break;
        case HSD_DT_Q4_1:
            emit32_fma_free(y, hsd_q32_nibbles(b + 4), half_at(b), half_at(b + 2), 0);
            b += 20;
            break;
        case HSD_DT_Q5_0: {
            uint32_t qh;
            memcpy(&qh, b + 2, 4);
            __m256i q = _mm256_or_si256(hsd_q32_nibbles(b + 6), hsd_q32_bits(qh));
            emit32_mul(y, _mm256_sub_epi8(q, m16), half_at(b));
            b += 22;
            break;
        }
        case HSD_DT_Q5_1: {
            uint32_t qh;
            memcpy(&qh, b + 4, 4);
            __m256i q = _mm256_or_si256(hsd_q32_nibbles(b + 8), hsd_q32_bits(qh));
            emit32_fma_free(y, q, half_at(b), half_at(b + 2), 0);
            b += 24;
            break;
        }
        case HSD_DT_Q8_0:
            emit32_mul(y, _mm256_loadu_si256((const __m256i *)(const void *)(b + 2)), half_at(b));
            b += 34;
            break;
        default:
            return;
        }
    }
}

/* 16 byte quants (int8 range, in the low or high lane of q) times scale dl, minus ml. */
HSD_AVX2Q static inline void emit16(float *y, __m128i q, float dl, float ml, int has_min) {
    __m256 dv = _mm256_set1_ps(dl), mv = _mm256_set1_ps(ml);
    __m256 a = _mm256_mul_ps(cvt8(q), dv), b = _mm256_mul_ps(cvt8(_mm_srli_si128(q, 8)), dv);
    if (has_min) a = _mm256_sub_ps(a, mv), b = _mm256_sub_ps(b, mv);
    _mm256_storeu_ps(y, a);
    _mm256_storeu_ps(y + 8, b);
}

/* Q2_K / Q3_K: 2-bit planes; plane g of half n is (qs[n*32 + l] >> 2g) & 3, l < 32. The
 * 16-bit shift lets bits of the neighbouring byte in, which the &3 removes. */
HSD_AVX2Q static void block_q2_k(const uint8_t *b, float *y) {
    float d = half_at(b + 80), dmin = half_at(b + 82);
    const __m256i three = _mm256_set1_epi8(3);
    for (int n = 0; n < 2; n++) {
        __m256i qs = _mm256_loadu_si256((const __m256i *)(const void *)(b + 16 + 32 * n));
        for (int g = 0; g < 4; g++, y += 32) {
            __m256i q = _mm256_and_si256(_mm256_srli_epi16(qs, 2 * g), three);
            for (int h = 0; h < 2; h++) {
                uint8_t sc = b[n * 8 + 2 * g + h];
                float dl = d * (float)(sc & 15), ml = dmin * (float)(sc >> 4);
                emit16(y + 16 * h, h ? _mm256_extracti128_si256(q, 1) : _mm256_castsi256_si128(q),
                       dl, ml, 1);
            }
        }
    }
}

HSD_AVX2Q static void block_q3_k(const uint8_t *b, float *y) {
    const uint8_t *s = b + 96;
    float d = half_at(b + 108);
    const __m256i three = _mm256_set1_epi8(3), four = _mm256_set1_epi8(4);
    __m256i hm = _mm256_loadu_si256((const __m256i *)(const void *)b);
    for (int n = 0; n < 2; n++) {
        __m256i qs = _mm256_loadu_si256((const __m256i *)(const void *)(b + 32 + 32 * n));
        for (int g = 0; g < 4; g++, y += 32) {
            __m256i q = _mm256_and_si256(_mm256_srli_epi16(qs, 2 * g), three);
            __m256i bit = _mm256_set1_epi8((char)(1 << (n * 4 + g)));
            __m256i clear = _mm256_cmpeq_epi8(_mm256_and_si256(hm, bit), _mm256_setzero_si256());
            q = _mm256_sub_epi8(q, _mm256_and_si256(clear, four));
            for (int h = 0; h < 2; h++) {
                int k = n * 8 + 2 * g + h;
                int lo = k < 8 ? s[k] & 15 : s[k - 8] >> 4, hi = s[8 + k % 4] >> (2 * (k / 4)) & 3;
                float dl = d * (float)((lo | hi << 4) - 32);
                emit16(y + 16 * h, h ? _mm256_extracti128_si256(q, 1) : _mm256_castsi256_si128(q),
                       dl, 0.0f, 0);
            }
        }
    }
}

static void k4_scale_min(const uint8_t *s, int j, int *sc, int *m) {
    if (j < 4) {
        *sc = s[j] & 63, *m = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 15) | (s[j - 4] >> 6) << 4;
        *m = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
    }
}

/* Q4_K (qh NULL) and Q5_K: 64 elements per 32 bytes of qs, low nibbles then high ones; the
 * fifth bit of sub-block j is bit j of qh[l]. */
HSD_AVX2Q static void block_q45_k(const uint8_t *b, const uint8_t *qh, const uint8_t *qs,
                                  float *y) {
    float d = half_at(b), dmin = half_at(b + 2);
    const __m256i low = _mm256_set1_epi8(15), sixteen = _mm256_set1_epi8(16);
    __m256i h = qh ? _mm256_loadu_si256((const __m256i *)(const void *)qh) : _mm256_setzero_si256();
    for (int c = 0; c < 4; c++) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(qs + 32 * c));
        __m256i q[2] = {_mm256_and_si256(v, low), _mm256_and_si256(_mm256_srli_epi16(v, 4), low)};
        for (int k = 0; k < 2; k++, y += 32) {
            int j = 2 * c + k, sc, m;
            if (qh) {
                __m256i bit = _mm256_set1_epi8((char)(1 << j));
                __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(h, bit), bit);
                q[k] = _mm256_or_si256(q[k], _mm256_and_si256(set, sixteen));
            }
            k4_scale_min(b + 4, j, &sc, &m);
            emit32_fma_free(y, q[k], d * (float)sc, dmin * (float)m, 1);
        }
    }
}

HSD_AVX2Q static void block_q6_k(const uint8_t *b, float *y) {
    const int8_t *sc = (const int8_t *)(b + 192);
    float d = half_at(b + 208);
    const __m256i low = _mm256_set1_epi8(15), three = _mm256_set1_epi8(3),
                  off = _mm256_set1_epi8(32);
    for (int n = 0; n < 2; n++) {
        __m256i l0 = _mm256_loadu_si256((const __m256i *)(const void *)(b + 64 * n));
        __m256i l1 = _mm256_loadu_si256((const __m256i *)(const void *)(b + 64 * n + 32));
        __m256i qh = _mm256_loadu_si256((const __m256i *)(const void *)(b + 128 + 32 * n));
        for (int g = 0; g < 4; g++, y += 32) {
            __m256i lv = g % 2 ? l1 : l0;
            __m256i lo =
                g < 2 ? _mm256_and_si256(lv, low) : _mm256_and_si256(_mm256_srli_epi16(lv, 4), low);
            __m256i hi =
                _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * g), three), 4);
            __m256i q = _mm256_sub_epi8(_mm256_or_si256(lo, hi), off);
            for (int h = 0; h < 2; h++) {
                float dl = d * (float)sc[n * 8 + 2 * g + h];
                emit16(y + 16 * h, h ? _mm256_extracti128_si256(q, 1) : _mm256_castsi256_si128(q),
                       dl, 0.0f, 0);
            }
        }
    }
}

/* Dequantises `nb` blocks (of 32 or 256 elements) starting at b. */
HSD_AVX2Q static void dequant_blocks(hsd_dtype t, const uint8_t *b, int64_t nb, float *y) {
    switch (t) {
    case HSD_DT_Q2_K:
        for (int64_t i = 0; i < nb; i++) block_q2_k(b + 84 * i, y + 256 * i);
        return;
    case HSD_DT_Q3_K:
        for (int64_t i = 0; i < nb; i++) block_q3_k(b + 110 * i, y + 256 * i);
        return;
    case HSD_DT_Q4_K:
        for (int64_t i = 0; i < nb; i++)
            block_q45_k(b + 144 * i, NULL, b + 144 * i + 16, y + 256 * i);
        return;
    case HSD_DT_Q5_K:
        for (int64_t i = 0; i < nb; i++)
            block_q45_k(b + 176 * i, b + 176 * i + 16, b + 176 * i + 48, y + 256 * i);
        return;
    case HSD_DT_Q6_K:
        for (int64_t i = 0; i < nb; i++) block_q6_k(b + 210 * i, y + 256 * i);
        return;
    default:
        blocks32(t, b, nb, y);
        return;
    }
}

static int has_avx2(void) {
    return hsd_cpu_level_active() >= HSD_CPU_AVX2; /* kernels/cpu_features.h */
}

bool hsd_quant_dequant_avx2(hsd_dtype t, const void *row, int64_t cols, float *out) {
    if (!hsd_dtype_is_quant(t) || !has_avx2()) return false;
    dequant_blocks(t, row, cols / hsd_dtype_block(t), out);
    return true;
}

HSD_AVX2Q static float dot_avx2(hsd_dtype t, const uint8_t *p, const float *x, int64_t cols) {
    const int32_t blk = hsd_dtype_block(t);
    const size_t bb = hsd_dtype_block_bytes(t);
    const int64_t per = HSD_QK_K / blk; /* blocks per 256-element chunk */
    float buf[HSD_QK_K];
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t i = 0; i < cols; i += HSD_QK_K) {
        int64_t nb = (cols - i) / blk < per ? (cols - i) / blk : per, len = nb * blk;
        dequant_blocks(t, p, nb, buf);
        p += (size_t)nb * bb;
        int64_t j = 0;
        for (; j + 32 <= len; j += 32) {
            a0 = _mm256_fmadd_ps(_mm256_loadu_ps(buf + j), _mm256_loadu_ps(x + i + j), a0);
            a1 = _mm256_fmadd_ps(_mm256_loadu_ps(buf + j + 8), _mm256_loadu_ps(x + i + j + 8), a1);
            a2 =
                _mm256_fmadd_ps(_mm256_loadu_ps(buf + j + 16), _mm256_loadu_ps(x + i + j + 16), a2);
            a3 =
                _mm256_fmadd_ps(_mm256_loadu_ps(buf + j + 24), _mm256_loadu_ps(x + i + j + 24), a3);
        }
    }
    __m256 s = _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3));
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_movehdup_ps(h));
    return _mm_cvtss_f32(h);
}

bool hsd_quant_dot_avx2(hsd_dtype t, const void *row, const float *x, int64_t cols, float *dot) {
    if (!hsd_dtype_is_quant(t) || !has_avx2()) return false;
    *dot = dot_avx2(t, row, x, cols);
    return true;
}

#else /* not x86-64 GCC/clang: the reference only */

bool hsd_quant_dequant_avx2(hsd_dtype t, const void *row, int64_t cols, float *out) {
    (void)t, (void)row, (void)cols, (void)out;
    return false;
}

bool hsd_quant_dot_avx2(hsd_dtype t, const void *row, const float *x, int64_t cols, float *dot) {
    (void)t, (void)row, (void)x, (void)cols, (void)dot;
    return false;
}

#endif
