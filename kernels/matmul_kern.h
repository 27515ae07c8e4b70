/* Internal interface between the matmul driver (matmul.c) and its ISA-specific kernel files.
 * Not for use outside kernels/. */
#ifndef HSD_KERNELS_MATMUL_KERN_H
#define HSD_KERNELS_MATMUL_KERN_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/cpu_ops.h"

/* The activations of one product, prepared once per call for all threads. */
typedef struct hsd_mm_acts {
    int32_t n, cols;
    const float *x;     /* fp32 [n][cols] */
    const uint32_t *xp; /* bf16 pairs, [ceil(cols/2)][n] (matmul_bf16p_avx512.c) */
    const uint8_t *xq;  /* q + 128 as u8, [n][nb*32] (Q8_0 weights), nb = cols/32;
                           matmul_q8_avx512.c: q as int8, [nb][n][32] */
    const float *xd;    /* [n][nb] block scales of xq (matmul_q8_avx512.c: [nb][n]) */
    const int32_t *xc;  /* matmul_q8_avx512.c: −o·Σq per block (o the weights' offset), [nb][n] */
    const float *xs;    /* matmul_q8_avx512.c: d·Σq per block (the weights' minima), [nb][n] */
    const struct hsd_q8k *xk; /* Q8_K blocks [n][cols/256] (Q4_K/Q5_K/Q6_K weights) */
    const int32_t *xke;       /* matmul_kq.h: per token and block HSD_KQP_EXTRAS(type) int32 of extras */
    const uint16_t *xb;       /* bf16 [n][cols] (matmul_amx.c) */
    const int8_t *xa;   /* matmul_amx.c, k-quants: xk's quants as A tiles, [n/16][nb][4][16][64] */
    const float *xad;   /* matmul_amx.c, k-quants: xk's scales, [nb][n] */
} hsd_mm_acts;

/* n rounded up to a whole number of 64-byte lines (prepared activation buffers). */
static inline size_t hsd_mm_align64(size_t n) {
    return (n + 63) & ~(size_t)63;
}

/* The tile loops of the AVX-512 kernels must unroll fully (-O2 does not when code grows), or
 * their accumulators live in memory instead of registers. */
#define HSD_MM_INLINE inline __attribute__((always_inline))
#ifdef __clang__
#define HSD_MM_UNROLL _Pragma("unroll")
#else
#define HSD_MM_UNROLL _Pragma("GCC unroll 16")
#endif

#if defined(__x86_64__) && defined(__GNUC__)
#define HSD_MM_HAVE_AVX512 1
/* Whether the AVX-512 kernels handle storage type t (others go to the fallback). */
int hsd_mm_avx512_handles(hsd_dtype t);
/* out[t][j] = rows[j] · x[t] for j < count, t < a->n (rows: pointers to the weight rows). */
void hsd_mm_avx512_rows(const hsd_mm_acts *a, hsd_dtype t, const uint8_t *const *rows,
                        int32_t count, float *out, int32_t ld);
#endif

#endif
