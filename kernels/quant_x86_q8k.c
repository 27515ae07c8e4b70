/* Integer dot products of k-quant weight rows (Q4_K, Q5_K, Q6_K: what Q4_K_M / Q5_K_M / Q6_K
 * files hold) with Q8_K activations, AVX2: llama.cpp's arithmetic (exact integer sums per
 * sub-block, one float multiply-add per block), so that a decode step reads the weights once
 * and spends ~5 instructions per 32 of them instead of widening them to floats.
 *
 * Per super-block, with activations x = dx * q8:
 *   Q4_K/Q5_K: sum = dx*d * sum_j sc_j * <q_j, q8_j>  -  dx*dmin * sum_j m_j * sum(q8_j)
 *   Q6_K:      sum = dx*d * sum_k sc_k * (<q_k, q8_k> - 32 * sum(q8_k))     (q unsigned 0..63)
 * _mm256_maddubs_epi16 multiplies the unsigned weight quants (<= 63) by the signed activation
 * quants (|q8| <= 127): a pair sums to at most 2*63*127 < 2^15, so it never saturates. */
#include "kernels/cpu_features.h"
#include "kernels/quant.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HSD_AVX2K __attribute__((target("avx2,fma")))


HSD_AVX2K static inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* The 8 six-bit scales and 8 mins of a Q4_K/Q5_K block (12 bytes) as bytes sc[0..8), m[0..8):
 * j < 4 in the low 6 bits of bytes j (scale) and j+4 (min); j >= 4 from the nibbles of byte
 * j+4 with the top 2 bits of bytes j-4 (scale) and j (min) above them. */
static void k4_scales(const uint8_t *s, uint8_t sc[8], uint8_t m[8]) {
    uint32_t w[3], a[4];
    memcpy(w, s, 12);
    a[0] = w[0] & 0x3f3f3f3fu;
    a[1] = (w[2] & 0x0f0f0f0fu) | ((w[0] >> 6) & 0x03030303u) << 4;
    a[2] = w[1] & 0x3f3f3f3fu;
    a[3] = ((w[2] >> 4) & 0x0f0f0f0fu) | ((w[1] >> 6) & 0x03030303u) << 4;
    memcpy(sc, a, 8);
    memcpy(m, a + 2, 8);
}

/* Q4_K (five 0) and Q5_K (five 1). */
HSD_AVX2K static float dot_q45k(const uint8_t *w, size_t bb, int five, const hsd_q8k *x,
                                int64_t nb) {
    const __m256i low = _mm256_set1_epi8(15), sixteen = _mm256_set1_epi8(16);
    __m256 acc = _mm256_setzero_ps();
    float acc_min = 0.0f;
    for (int64_t i = 0; i < nb; i++, w += bb, x++) {
        const uint8_t *qs = w + (five ? 48 : 16);
        uint8_t sc[8], m[8];
        k4_scales(w + 4, sc, m);
        /* mins: sum_j m_j * (sum of the 32 activation quants of sub-block j) */
        __m256i bs = _mm256_loadu_si256((const __m256i *)(const void *)x->bsums);
        __m128i pairs = _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
        __m128i mv = _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)(const void *)m));
        __m128i pm = _mm_madd_epi16(pairs, mv);
        pm = _mm_add_epi32(pm, _mm_shuffle_epi32(pm, 0x4e));
        pm = _mm_add_epi32(pm, _mm_shuffle_epi32(pm, 0xb1));
        int mins = _mm_cvtsi128_si32(pm);
        __m256i h = five ? _mm256_loadu_si256((const __m256i *)(const void *)(w + 16))
                         : _mm256_setzero_si256();
        __m256i sumi = _mm256_setzero_si256();
        for (int c = 0; c < 4; c++) {
            __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(qs + 32 * c));
            __m256i q[2] = {_mm256_and_si256(v, low),
                            _mm256_and_si256(_mm256_srli_epi16(v, 4), low)};
            for (int k = 0; k < 2; k++) {
                int j = 2 * c + k;
                if (five) {
                    __m256i bit = _mm256_set1_epi8((char)(1 << j));
                    __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(h, bit), bit);
                    q[k] = _mm256_or_si256(q[k], _mm256_and_si256(set, sixteen));
                }
                __m256i q8 = _mm256_loadu_si256((const __m256i *)(const void *)(x->qs + 32 * j));
                __m256i p = _mm256_maddubs_epi16(q[k], q8);
                sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, _mm256_set1_epi16((short)sc[j])));
            }
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(x->d * hsd_quant_half_at(w)), _mm256_cvtepi32_ps(sumi), acc);
        acc_min += x->d * hsd_quant_half_at(w + 2) * (float)mins;
    }
    return hsum(acc) - acc_min;
}

HSD_AVX2K static float dot_q6k(const uint8_t *w, const hsd_q8k *x, int64_t nb) {
    const __m256i low = _mm256_set1_epi8(15), three = _mm256_set1_epi8(3);
    __m256 acc = _mm256_setzero_ps();
    float acc_corr = 0.0f;
    for (int64_t i = 0; i < nb; i++, w += 210, x++) {
        const int8_t *sc = (const int8_t *)(w + 192);
        __m256i sumi = _mm256_setzero_si256();
        int corr = 0;
        for (int n = 0; n < 2; n++) {
            __m256i l0 = _mm256_loadu_si256((const __m256i *)(const void *)(w + 64 * n));
            __m256i l1 = _mm256_loadu_si256((const __m256i *)(const void *)(w + 64 * n + 32));
            __m256i qh = _mm256_loadu_si256((const __m256i *)(const void *)(w + 128 + 32 * n));
            for (int g = 0; g < 4; g++) {
                __m256i lv = g % 2 ? l1 : l0;
                __m256i lo = g < 2 ? _mm256_and_si256(lv, low)
                                   : _mm256_and_si256(_mm256_srli_epi16(lv, 4), low);
                __m256i hi =
                    _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * g), three), 4);
                __m256i q = _mm256_or_si256(lo, hi);
                int k = n * 8 + 2 * g;
                __m256i q8 =
                    _mm256_loadu_si256((const __m256i *)(const void *)(x->qs + 128 * n + 32 * g));
                __m256i p = _mm256_maddubs_epi16(q, q8);
                __m256i scv = _mm256_set_m128i(_mm_set1_epi16(sc[k + 1]), _mm_set1_epi16(sc[k]));
                sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, scv));
                corr += sc[k] * x->bsums[k] + sc[k + 1] * x->bsums[k + 1];
            }
        }
        float d = x->d * hsd_quant_half_at(w + 208);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
        acc_corr += d * (float)(32 * corr);
    }
    return hsum(acc) - acc_corr;
}

bool hsd_quant_dot_q8k_avx2(hsd_dtype t, const void *row, const hsd_q8k *x, int64_t cols,
                            float *dot) {
    if (hsd_cpu_level_active() < HSD_CPU_AVX2) return false; /* kernels/cpu_features.h */
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

#else

bool hsd_quant_dot_q8k_avx2(hsd_dtype t, const void *row, const hsd_q8k *x, int64_t cols,
                            float *dot) {
    (void)t, (void)row, (void)x, (void)cols, (void)dot;
    return false;
}

#endif
