/* The one vectorised expf of the CPU kernels (softmax and SiLU in cpu_ops.c, the row kernels in
 * row_ops.c, the streaming attention in attention.c): Cephes-style exp(x) = 2^k p(r),
 * r = x - k ln2 (ln2 split in two for an exact reduction), a degree-7 polynomial, |error| about
 * 2 ulp against float64 exp. Inputs above 88.3 saturate near FLT_MAX; inputs below -87.3
 * (where exp < 1.2e-38) give an exact 0, so -inf logits and masked scores weigh nothing.
 * Each function carries its own target attribute: callers compiled for a superset inline it. */
#ifndef HSD_KERNELS_SIMD_EXP_H
#define HSD_KERNELS_SIMD_EXP_H

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define HSD_EXP_HI 88.3f
#define HSD_EXP_LO -87.3f
#define HSD_EXP_LOG2E 1.44269504088896341f
#define HSD_EXP_LN2_HI 0.693359375f
#define HSD_EXP_LN2_LO -2.12194440e-4f
#define HSD_EXP_P0 1.9875691500e-4f
#define HSD_EXP_P1 1.3981999507e-3f
#define HSD_EXP_P2 8.3334519073e-3f
#define HSD_EXP_P3 4.1665795894e-2f
#define HSD_EXP_P4 1.6666665459e-1f
#define HSD_EXP_P5 5.0000001201e-1f

__attribute__((target("avx2,fma"))) static inline __m256 hsd_exp8(__m256 x) {
    __m256 keep = _mm256_cmp_ps(x, _mm256_set1_ps(HSD_EXP_LO), _CMP_GE_OQ);
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(HSD_EXP_LO)), _mm256_set1_ps(HSD_EXP_HI));
    __m256 k = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(HSD_EXP_LOG2E)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(k, _mm256_set1_ps(HSD_EXP_LN2_HI), x);
    r = _mm256_fnmadd_ps(k, _mm256_set1_ps(HSD_EXP_LN2_LO), r);
    __m256 p = _mm256_set1_ps(HSD_EXP_P0);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(HSD_EXP_P1));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(HSD_EXP_P2));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(HSD_EXP_P3));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(HSD_EXP_P4));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(HSD_EXP_P5));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23);
    return _mm256_and_ps(_mm256_mul_ps(p, _mm256_castsi256_ps(e)), keep);
}

__attribute__((target("avx512f"))) static inline __m512 hsd_exp16(__m512 x) {
    __mmask16 keep = _mm512_cmp_ps_mask(x, _mm512_set1_ps(HSD_EXP_LO), _CMP_GE_OQ);
    x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(HSD_EXP_LO)), _mm512_set1_ps(HSD_EXP_HI));
    __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(HSD_EXP_LOG2E)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(k, _mm512_set1_ps(HSD_EXP_LN2_HI), x);
    r = _mm512_fnmadd_ps(k, _mm512_set1_ps(HSD_EXP_LN2_LO), r);
    __m512 p = _mm512_set1_ps(HSD_EXP_P0);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(HSD_EXP_P1));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(HSD_EXP_P2));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(HSD_EXP_P3));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(HSD_EXP_P4));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(HSD_EXP_P5));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(k), _mm512_set1_epi32(127)), 23);
    return _mm512_maskz_mul_ps(keep, p, _mm512_castsi512_ps(e));
}
#endif

#endif
