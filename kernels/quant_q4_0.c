/* Q4_0 weight rows times Q8_0 activations with llama.cpp's arithmetic on x86.
 *
 * llama.cpp's CPU backend repacks every Q4_0 matrix whose row count is a multiple of 8 into
 * interleaved groups of 8 rows (ggml-cpu/repack.cpp, "q4_0_8x8_q8_0", chosen on any CPU with
 * AVX2, the zen4 build included) and multiplies them with its own kernels: per 32-element
 * block, the exact integer sum of the 32 products (q - 8) * q8, then one fused multiply-add
 *     acc = fma((float)isum_b, d_w[b] * d_x[b], acc)      (d_w * d_x rounded to float first)
 * in block order, one accumulator per (row, token). Dequantising to fp32 and summing the
 * products in float (hsd's earlier path) differs from it by float roundings only, but those
 * move an activation across a rounding boundary of the next layer's 8-bit quantisation now
 * and then, and such flips grew to 1e-4 in the logits' cosine on tiny-llama (62/64 argmax;
 * bench/RESULTS.md). This file computes the same sums in the same order, so a row's result is
 * the llama.cpp one bit for bit, and it does not depend on the other rows or tokens (batch
 * invariance). The scalar reference defines the result; the AVX2 version keeps 8 rows in the
 * 8 lanes of one accumulator, each lane the reference's chain. */
#include <math.h>
#include <string.h>

#include "kernels/cpu_features.h"
#include "kernels/quant.h"

static float half_of(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return hsd_fp16_to_fp32(h);
}

float hsd_quant_dot_q4_0_ref(const void *row, const hsd_q8_0 *x, int64_t cols) {
    const uint8_t *b = row;
    float acc = 0.0f;
    for (int64_t i = 0; i < cols / 32; i++, b += 18) {
        int32_t isum = 0;
        for (int j = 0; j < 16; j++) {
            isum += ((b[2 + j] & 15) - 8) * x[i].qs[j];
            isum += ((b[2 + j] >> 4) - 8) * x[i].qs[16 + j];
        }
        acc = fmaf((float)isum, half_of(b) * x[i].d, acc);
    }
    return acc;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HSD_AVX2Q4 __attribute__((target("avx2,fma,f16c")))

/* The 32 signed weights (q - 8) of a Q4_0 block: low nibbles are elements 0..15. */
HSD_AVX2Q4 static inline __m256i weights32(const uint8_t *qs) {
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)qs), m = _mm_set1_epi8(15);
    __m256i q = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), m), _mm_and_si128(v, m));
    return _mm256_sub_epi8(q, _mm256_set1_epi8(8));
}

/* Eight int32 partial sums of one block's 32 products (|w| <= 8, |q8| <= 127: a pair of
 * products fits int16 in maddubs). */
HSD_AVX2Q4 static inline __m256i block_products(const uint8_t *qs, const int8_t *q8) {
    __m256i w = weights32(qs), a = _mm256_loadu_si256((const __m256i *)(const void *)q8);
    __m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(a, w));
    return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
}

/* out[r] for r < nrows (<= 8) rows at rows + r * rb: lane r holds row r's chain. */
HSD_AVX2Q4 static void dot8(const uint8_t *rows, size_t rb, int32_t nrows, const hsd_q8_0 *x,
                            int64_t cols, float *out) {
    const uint8_t *p[8];
    for (int r = 0; r < 8; r++) p[r] = rows + (size_t)(r < nrows ? r : nrows - 1) * rb;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < cols / 32; i++) {
        __m256i v[8];
        uint16_t dh[8];
        for (int r = 0; r < 8; r++) {
            const uint8_t *b = p[r] + 18 * i;
            v[r] = block_products(b + 2, x[i].qs);
            memcpy(&dh[r], b, 2);
        }
        /* integer sums are exact in any order: reduce the 8 x 8 partials to one per lane */
        __m256i s01 = _mm256_hadd_epi32(v[0], v[1]), s23 = _mm256_hadd_epi32(v[2], v[3]);
        __m256i s45 = _mm256_hadd_epi32(v[4], v[5]), s67 = _mm256_hadd_epi32(v[6], v[7]);
        __m256i s03 = _mm256_hadd_epi32(s01, s23), s47 = _mm256_hadd_epi32(s45, s67);
        __m256i isum = _mm256_add_epi32(_mm256_permute2x128_si256(s03, s47, 0x20),
                                        _mm256_permute2x128_si256(s03, s47, 0x31));
        __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)dh));
        __m256 sc = _mm256_mul_ps(dw, _mm256_set1_ps(x[i].d));
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), sc, acc);
    }
    float o[8];
    _mm256_storeu_ps(o, acc);
    memcpy(out, o, sizeof(float) * (size_t)nrows);
}

bool hsd_quant_dot_q4_0_avx2(const void *rows, size_t rb, int32_t nrows, const hsd_q8_0 *x,
                             int64_t cols, float *out) {
    if (hsd_cpu_level_active() < HSD_CPU_AVX2) return false; /* kernels/cpu_features.h */
    for (int32_t r = 0; r < nrows; r += 8)
        dot8((const uint8_t *)rows + (size_t)r * rb, rb, nrows - r < 8 ? nrows - r : 8, x, cols,
             out + r);
    return true;
}

#else

bool hsd_quant_dot_q4_0_avx2(const void *rows, size_t rb, int32_t nrows, const hsd_q8_0 *x,
                             int64_t cols, float *out) {
    (void)rows, (void)rb, (void)nrows, (void)x, (void)cols, (void)out;
    return false;
}

#endif
