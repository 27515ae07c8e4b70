/* AVX2 unpacking of the 32-element block types (Q4_0, Q4_1, Q5_0, Q5_1), shared by their
 * dequantisers (kernels/quant_x86.c) and their integer dot products (kernels/quant_q32.c).
 * Kernels-internal. */
#ifndef HSD_KERNELS_QUANT_X86_Q32_H
#define HSD_KERNELS_QUANT_X86_Q32_H

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <stdint.h>

#define HSD_Q32_AVX2 __attribute__((target("avx2")))

/* 16 bytes of packed nibbles -> 32 bytes: the 16 low nibbles, then the 16 high ones (the
 * element order of Q4_0/Q4_1/Q5_x blocks). */
HSD_Q32_AVX2 static inline __m256i hsd_q32_nibbles(const uint8_t *qs) {
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)qs), m = _mm_set1_epi8(15);
    return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), m), _mm_and_si128(v, m));
}

/* The 32 bits of qh as 32 bytes: 16 where bit j is set, 0 elsewhere (Q5_0/Q5_1). */
HSD_Q32_AVX2 static inline __m256i hsd_q32_bits(uint32_t qh) {
    __m256i v = _mm256_set1_epi32((int)qh);
    /* byte j takes byte j/8 of qh, then tests bit j%8 */
    const __m256i sel = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2,
                                         2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    v = _mm256_shuffle_epi8(v, sel); /* lanes hold the same 4 bytes, so in-lane shuffle works */
    v = _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
    return _mm256_and_si256(v, _mm256_set1_epi8(16));
}
#endif

#endif
