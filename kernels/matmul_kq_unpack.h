/* Unpacking and weight prefetch of the packed k-quant groups (layout: matmul_kq.h), shared by
 * the AVX-512 VNNI kernel (matmul_kq_avx512.c) and the AMX one (matmul_amx.c).
 * Kernels-internal; include only where AVX-512 is compiled (HSD_MM_HAVE_AVX512). The functions
 * carry the AVX-512 F/BW target and always inline, so that they inline into either kernel's
 * wider target. */
#ifndef HSD_KERNELS_MATMUL_KQ_UNPACK_H
#define HSD_KERNELS_MATMUL_KQ_UNPACK_H

#include <immintrin.h>
#include <stdint.h>

#define HSD_KQ_UNPACK_FN static inline __attribute__((target("avx512f,avx512bw"), always_inline))

/* The k-quant kernels' weight prefetch, both levels: `lines` cache lines from `dist` bytes past
 * p into L2, issued a quarter (Q4_K/Q5_K, AMX Q6_K) or a half (AVX-512 Q6_K) of a block at a
 * time between the block's steps (groups of a packed copy follow each other). On AMD, from 2
 * tokens, the AVX-512 Q4_K and Q6_K tiles spread them instead over the block's sub-blocks (4
 * and 3 lines each): with a sub-block's arithmetic between them the stream keeps up where a
 * burst of 8 or 24 lines stalled (Zen 4, one thread from memory: Q6_K 8 tokens -8%, 16 -7%,
 * Q4_K 16 tokens -5%, bench/notes/kquant_packed.md session 22; one token stays a burst, Intel
 * unchanged: not measured there). The distance depends on the vendor (hsd_kqp_rows picks it
 * by hsd_kqp_tuning_amd, matmul_kq.h):
 * - Intel, measured on a Sapphire Rapids VM (bench/notes/kquant_packed.md): 12 KB ahead into
 *   L1, the Q8_0 kernel's first setting, made forward(1) of the Q4_K_M 1B file 7% and
 *   forward(8) 6-9% slower than 4 KB into L2 (session 15); the AMX kernels' burst of a whole
 *   block 12 KB ahead at its start kept their tile build from overlapping the stream (one
 *   thread, 16 layers of Q4_K from memory, n = 13: 82 ms, spread 76-80, session 16).
 * - AMD, measured on a Zen 4 EPYC VM (session 17): 4 KB ahead left forward(1) of the 1B
 *   Q5_K_M / Q6_K files 20-30% behind llama.cpp; 32 KB ahead took 8-12% off forward(1) of
 *   the Q4_K_M, Q5_K_M and Q6_K files (64 KB and 128 KB no better, into L1 worse). */
#define HSD_KQ_PF_BYTES_INTEL (4 << 10)
#define HSD_KQ_PF_BYTES_AMD (32 << 10)
HSD_KQ_UNPACK_FN void hsd_kq_prefetch(const uint8_t *p, int dist, int lines) {
    for (int l = 0; l < lines; l++) _mm_prefetch((const char *)(p + dist + 64 * l), _MM_HINT_T2);
}

/* Q6_K: the quants (0..63, one byte each, one row per dword lane) of column quad i of
 * sub-block 4·hi + kk of a half-block whose ql and qh planes start at ql, qh: the low or high
 * nibbles (hi) of ql dword 4kk + i, and 2-bit field f = 2·hi + kk/2 of qh dword 4(kk % 2) + i
 * moved to bits 4..5. */
HSD_KQ_UNPACK_FN __m512i hsd_kq6_quants(const uint8_t *ql, const uint8_t *qh, int hi, int kk,
                                        int i) {
    const int f = 2 * hi + kk / 2;
    __m512i l = _mm512_load_si512((const void *)(ql + 64 * (4 * kk + i)));
    if (hi) l = _mm512_srli_epi16(l, 4);
    __m512i q = _mm512_load_si512((const void *)(qh + 64 * (4 * (kk % 2) + i)));
    q = f == 0 ? _mm512_slli_epi16(q, 4) : f == 1 ? _mm512_slli_epi16(q, 2)
      : f == 2 ? q : _mm512_srli_epi16(q, 2);
    /* bits 0..3 from l, 4..7 from q (one bitwise select, 0xE4: c ? a : b), then bits 6..7
     * cleared: two instructions where and, and, or took three */
    return _mm512_and_si512(_mm512_ternarylogic_epi32(l, q, _mm512_set1_epi8(15), 0xE4), _mm512_set1_epi8(0x3F));
}

#endif
