/* AVX-512 (BW + VNNI) versions of the Q4_K / Q5_K / Q6_K x Q8_K integer dot products of
 * kernels/quant_x86_q8k.c, bit-identical to them: the forward(1) of a Q4_K_M file spends ~85%
 * of its time there.
 *
 * Why the results are the same bits: the AVX2 kernels sum, per 256-block, int32 lane l (0..7)
 * = sum over the sub-blocks of scale * (products of bytes 4l..4l+3 of each 32-byte chunk),
 * then take one float fma per block over those 8 lanes and one horizontal sum at the end.
 * Here a 512-bit register carries two 32-byte chunks (two sub-blocks) side by side; lanes l
 * and l + 8 are folded together once per block, so each of the 8 int32 lanes holds exactly
 * the AVX2 lane's integer (integer sums are exact in any order), and the float operations
 * that follow are the AVX2 ones, in the same order. VPDPWSSD fuses the AVX2 madd + add. */
#include "kernels/cpu_features.h"
#include "kernels/quant.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HSD_AVX512K __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma")))


HSD_AVX512K static inline float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* The 8 six-bit scales and 8 mins of a Q4_K/Q5_K block (12 bytes), as the AVX2 kernel decodes
 * them, returned as 8 bytes each in two 64-bit integers (kept in registers: a round trip
 * through a stack array cost a store-forwarding stall per block). */
static inline void k4_scales(const uint8_t *s, uint64_t *sc, uint64_t *m) {
    uint32_t w[3];
    memcpy(w, s, 12);
    uint32_t a0 = w[0] & 0x3f3f3f3fu, a2 = w[1] & 0x3f3f3f3fu;
    uint32_t a1 = (w[2] & 0x0f0f0f0fu) | ((w[0] >> 6) & 0x03030303u) << 4;
    uint32_t a3 = ((w[2] >> 4) & 0x0f0f0f0fu) | ((w[1] >> 6) & 0x03030303u) << 4;
    *sc = a0 | (uint64_t)a1 << 32;
    *m = a2 | (uint64_t)a3 << 32;
}

/* lanes l and l + 8 added: the AVX2 kernel's 8 lanes */
HSD_AVX512K static inline __m256i fold(__m512i v) {
    return _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
}

/* Four tokens' exact sums of madd(a, bsums) (16 int16 products summed in pairs, then all 8):
 * lane t for token t (blocks x, x + stride, ...). */
HSD_AVX512K static inline __m128i sum4_madd(__m256i a, const hsd_q8k *x, int64_t stride) {
    __m256i p[4];
    for (int t = 0; t < 4; t++)
        p[t] = _mm256_madd_epi16(
            a, _mm256_loadu_si256((const __m256i *)(const void *)x[t * stride].bsums));
    __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(p[0], p[1]), _mm256_hadd_epi32(p[2], p[3]));
    return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}
HSD_AVX512K static inline __m128 d4_of(const hsd_q8k *x, int64_t stride) {
    return _mm_setr_ps(x[0].d, x[stride].d, x[2 * stride].d, x[3 * stride].d);
}

/* Q4_K (five 0) / Q5_K (five 1) row against T tokens (x + t * nb: token t's blocks), dots
 * into out[t]. The weights of a block are unpacked once and used for every token; each token's
 * operations are the single-token ones in the same order, so its result does not depend on T
 * or on the other tokens (batch invariance). Always inlined with `five` and T constants, the
 * loops unrolled (the generic version kept the Q5_K branch and run-time bit masks: 1.3x
 * slower). */
HSD_AVX512K static inline __attribute__((always_inline)) void
dot_q45k(const uint8_t *w, size_t bb, int five, const hsd_q8k *x, int T, int64_t nb, float *out) {
    const __m512i low = _mm512_set1_epi8(15), sixteen = _mm512_set1_epi8(16);
    /* scale vector of the sub-block pair (2c, 2c+1): 16-bit lanes 0..15 take scale 2c, 16..31
     * scale 2c+1 (permutexvar of the 8 scales as 16-bit values) */
    __m512i pick[4];
    for (int c = 0; c < 4; c++)
        pick[c] = _mm512_inserti64x4(_mm512_set1_epi16((short)(2 * c)),
                                     _mm256_set1_epi16((short)(2 * c + 1)), 1);
    __m256 acc[4];
    float acc_min[4];
    /* four tokens: the mins of all four in one vector (the same integers and float operations
     * per lane as the one-token code) */
    __m128 acc_min4 = _mm_setzero_ps();
    for (int t = 0; t < T; t++) acc[t] = _mm256_setzero_ps(), acc_min[t] = 0.0f;
    for (int64_t i = 0; i < nb; i++, w += bb) {
        const uint8_t *qs = w + (five ? 48 : 16);
        uint64_t sc, m;
        k4_scales(w + 4, &sc, &m);
        __m128i mv = _mm_cvtepu8_epi16(_mm_cvtsi64_si128((long long)m));
        __m512i scv = _mm512_castsi128_si512(_mm_cvtepu8_epi16(_mm_cvtsi64_si128((long long)sc)));
        __m512i h = five ? _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(w + 16)))
                         : _mm512_setzero_si512();
        __m512i q[4], s4[4];
#pragma GCC unroll 4
        for (int c = 0; c < 4; c++) {
            /* chunk c: low nibbles = sub-block 2c (low half), high nibbles = 2c+1 (high half);
             * their activations are the 64 contiguous bytes 64c.. */
            __m512i v = _mm512_broadcast_i64x4(
                _mm256_loadu_si256((const __m256i *)(const void *)(qs + 32 * c)));
            q[c] = _mm512_and_si512(_mm512_mask_srli_epi16(v, 0xffff0000u, v, 4), low);
            if (five) {
                __m512i bit = _mm512_inserti64x4(_mm512_set1_epi8((char)(1 << (2 * c))),
                                                 _mm256_set1_epi8((char)(1 << (2 * c + 1))), 1);
                q[c] = _mm512_or_si512(
                    q[c], _mm512_maskz_mov_epi8(_mm512_test_epi8_mask(h, bit), sixteen));
            }
            s4[c] = _mm512_permutexvar_epi16(pick[c], scv);
        }
        const float dw = hsd_quant_half_at(w), dmin = hsd_quant_half_at(w + 2);
        if (T == 4) { /* mins_t = sum_k m_(k/2) * bsums_t[k] */
            __m256i mdup = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(_mm_cvtsi64_si128((long long)m),
                                                                  _mm_cvtsi64_si128((long long)m)));
            __m128 mins4 = _mm_cvtepi32_ps(sum4_madd(mdup, x + i, nb));
            acc_min4 = _mm_add_ps(
                acc_min4, _mm_mul_ps(_mm_mul_ps(d4_of(x + i, nb), _mm_set1_ps(dmin)), mins4));
        }
#pragma GCC unroll 4
        for (int t = 0; t < T; t++) {
            const hsd_q8k *xb = x + t * nb + i;
            if (T != 4) { /* mins: the AVX2 kernel's integer, computed the same way */
                __m256i bs = _mm256_loadu_si256((const __m256i *)(const void *)xb->bsums);
                __m128i pairs =
                    _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
                __m128i pm = _mm_madd_epi16(pairs, mv);
                pm = _mm_add_epi32(pm, _mm_shuffle_epi32(pm, 0x4e));
                pm = _mm_add_epi32(pm, _mm_shuffle_epi32(pm, 0xb1));
                int mins = _mm_cvtsi128_si32(pm);
                acc_min[t] += xb->d * dmin * (float)mins;
            }
            __m512i sumi = _mm512_setzero_si512();
#pragma GCC unroll 4
            for (int c = 0; c < 4; c++) {
                __m512i q8 = _mm512_loadu_si512((const void *)(xb->qs + 64 * c));
                sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(q[c], q8), s4[c]);
            }
            acc[t] =
                _mm256_fmadd_ps(_mm256_set1_ps(xb->d * dw), _mm256_cvtepi32_ps(fold(sumi)), acc[t]);
        }
    }
    if (T == 4) _mm_storeu_ps(acc_min, acc_min4);
    for (int t = 0; t < T; t++) out[t] = hsum8(acc[t]) - acc_min[t];
}

/* Q6_K row against T tokens, as dot_q45k. */
HSD_AVX512K static inline __attribute__((always_inline)) void
dot_q6k(const uint8_t *w, const hsd_q8k *x, int T, int64_t nb, float *out) {
    const __m512i low = _mm512_set1_epi8(15), bits45 = _mm512_set1_epi8(0x30);
    /* scale vector of pass (n, g): 16-bit lanes 0..7, 8..15, 16..23, 24..31 take scales
     * k, k+1, k+2, k+3 with k = 8n + 2g (permutexvar of the 16 scales as 16-bit values) */
    __m512i pick[4];
    for (int p = 0; p < 4; p++) {
        short k = (short)(4 * p);
        pick[p] = _mm512_inserti64x4(
            _mm512_castsi256_si512(
                _mm256_set_m128i(_mm_set1_epi16((short)(k + 1)), _mm_set1_epi16(k))),
            _mm256_set_m128i(_mm_set1_epi16((short)(k + 3)), _mm_set1_epi16((short)(k + 2))), 1);
    }
    __m256 acc[4];
    float acc_corr[4];
    __m128 acc_corr4 = _mm_setzero_ps();
    for (int t = 0; t < T; t++) acc[t] = _mm256_setzero_ps(), acc_corr[t] = 0.0f;
    for (int64_t i = 0; i < nb; i++, w += 210) {
        const int8_t *sc = (const int8_t *)(w + 192);
        __m256i scw = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)sc));
        __m512i sc512 = _mm512_castsi256_si512(scw), q[4], s4[4];
#pragma GCC unroll 2
        for (int n = 0; n < 2; n++) {
            __m512i l = _mm512_loadu_si512((const void *)(w + 64 * n)); /* groups 0|1 low nibbles */
            /* high bits: qh in the low half, qh >> 2 in the high half; group pair 0|1 takes
             * bits 0-1 of each byte (moved to bits 4-5), pair 2|3 bits 4-5 where they are */
            __m512i qh = _mm512_broadcast_i64x4(
                _mm256_loadu_si256((const __m256i *)(const void *)(w + 128 + 32 * n)));
            qh = _mm512_mask_srli_epi16(qh, 0xffff0000u, qh, 2);
#pragma GCC unroll 2
            for (int g = 0; g < 4; g += 2) {
                __m512i lo = g == 0 ? _mm512_and_si512(l, low)
                                    : _mm512_and_si512(_mm512_srli_epi16(l, 4), low);
                __m512i hi = _mm512_and_si512(g == 0 ? _mm512_slli_epi16(qh, 4) : qh, bits45);
                q[2 * n + g / 2] = _mm512_or_si512(lo, hi);
                s4[2 * n + g / 2] = _mm512_permutexvar_epi16(pick[2 * n + g / 2], sc512);
            }
        }
        const float dw = hsd_quant_half_at(w + 208);
        if (T == 4) { /* the four tokens' offsets in one vector, per lane the code below */
            __m128 d4 = _mm_mul_ps(d4_of(x + i, nb), _mm_set1_ps(dw));
            __m128i corr4 = _mm_slli_epi32(sum4_madd(scw, x + i, nb), 5);
            acc_corr4 = _mm_add_ps(acc_corr4, _mm_mul_ps(d4, _mm_cvtepi32_ps(corr4)));
        }
#pragma GCC unroll 4
        for (int t = 0; t < T; t++) {
            const hsd_q8k *xb = x + t * nb + i;
            float d = xb->d * dw;
            if (T != 4) { /* sum_k sc[k] * bsums[k]: exact integers, the AVX2 kernel's value */
                __m256i cp = _mm256_madd_epi16(
                    scw, _mm256_loadu_si256((const __m256i *)(const void *)xb->bsums));
                __m128i c4 =
                    _mm_add_epi32(_mm256_castsi256_si128(cp), _mm256_extracti128_si256(cp, 1));
                c4 = _mm_add_epi32(c4, _mm_shuffle_epi32(c4, 0x4e));
                c4 = _mm_add_epi32(c4, _mm_shuffle_epi32(c4, 0xb1));
                int corr = _mm_cvtsi128_si32(c4);
                acc_corr[t] += d * (float)(32 * corr);
            }
            __m512i sumi = _mm512_setzero_si512();
#pragma GCC unroll 4
            for (int p = 0; p < 4; p++) { /* pass p = (n, g): activations 128n + 32g = 64p */
                __m512i q8 = _mm512_loadu_si512((const void *)(xb->qs + 64 * p));
                sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(q[p], q8), s4[p]);
            }
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(fold(sumi)), acc[t]);
        }
    }
    if (T == 4) _mm_storeu_ps(acc_corr, acc_corr4);
    for (int t = 0; t < T; t++) out[t] = hsum8(acc[t]) - acc_corr[t];
}

HSD_AVX512K static void dot_q4k_1(const uint8_t *w, const hsd_q8k *x, int64_t nb, float *o) {
    dot_q45k(w, 144, 0, x, 1, nb, o);
}
HSD_AVX512K static void dot_q4k_4(const uint8_t *w, const hsd_q8k *x, int64_t nb, float *o) {
    dot_q45k(w, 144, 0, x, 4, nb, o);
}
HSD_AVX512K static void dot_q5k_1(const uint8_t *w, const hsd_q8k *x, int64_t nb, float *o) {
    dot_q45k(w, 176, 1, x, 1, nb, o);
}
HSD_AVX512K static void dot_q5k_4(const uint8_t *w, const hsd_q8k *x, int64_t nb, float *o) {
    dot_q45k(w, 176, 1, x, 4, nb, o);
}
HSD_AVX512K static void dot_q6k_1(const uint8_t *w, const hsd_q8k *x, int64_t nb, float *o) {
    dot_q6k(w, x, 1, nb, o);
}
HSD_AVX512K static void dot_q6k_4(const uint8_t *w, const hsd_q8k *x, int64_t nb, float *o) {
    dot_q6k(w, x, 4, nb, o);
}

static int has_avx512(void) {
    return hsd_cpu_level_active() >= HSD_CPU_AVX512; /* kernels/cpu_features.h */
}

bool hsd_quant_dot_q8k_avx512(hsd_dtype t, const void *row, const hsd_q8k *x, int64_t cols,
                              float *dot) {
    return hsd_quant_dot_q8k_avx512_n(t, row, x, 1, cols, dot);
}

bool hsd_quant_dot_q8k_avx512_n(hsd_dtype t, const void *row, const hsd_q8k *x, int32_t n,
                                int64_t cols, float *dots) {
    if (!has_avx512()) return false;
    void (*one)(const uint8_t *, const hsd_q8k *, int64_t, float *);
    void (*four)(const uint8_t *, const hsd_q8k *, int64_t, float *);
    switch (t) {
    case HSD_DT_Q4_K:
        one = dot_q4k_1, four = dot_q4k_4;
        break;
    case HSD_DT_Q5_K:
        one = dot_q5k_1, four = dot_q5k_4;
        break;
    case HSD_DT_Q6_K:
        one = dot_q6k_1, four = dot_q6k_4;
        break;
    default:
        return false;
    }
    int64_t nb = cols / HSD_QK_K;
    int32_t k = 0;
    for (; k + 4 <= n; k += 4) four(row, x + k * nb, nb, dots + k);
    for (; k < n; k++) one(row, x + k * nb, nb, dots + k);
    return true;
}

#else

bool hsd_quant_dot_q8k_avx512(hsd_dtype t, const void *row, const hsd_q8k *x, int64_t cols,
                              float *dot) {
    (void)t, (void)row, (void)x, (void)cols, (void)dot;
    return false;
}

bool hsd_quant_dot_q8k_avx512_n(hsd_dtype t, const void *row, const hsd_q8k *x, int32_t n,
                                int64_t cols, float *dots) {
    (void)t, (void)row, (void)x, (void)n, (void)cols, (void)dots;
    return false;
}

#endif
