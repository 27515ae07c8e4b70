/* BF16 × bf16 activations on AVX-512 BF16 over row-interleaved weights (layout and why:
 * matmul_bf16p.h). A tile is G groups of 16 rows × T tokens (G·T <= 16 accumulators): per
 * column pair it loads the G weight vectors once and runs, for each token, one vdpbf16ps per
 * group with the token's pair broadcast from memory. Every tile reads its weights in one pass
 * for up to 16 tokens, so forward(n) streams the matrices once whatever n <= 16. The build
 * targets baseline x86-64; these functions carry their own target attribute and run only when
 * the CPU has AVX-512 BF16. */
#include "kernels/matmul_bf16p.h"
#include "kernels/matmul_kq.h"

#include <string.h>

size_t hsd_bf16p_group_bytes(int32_t cols) {
    return (size_t)((cols + 1) / 2) * 64;
}

#ifdef HSD_MM_HAVE_AVX512

#include <immintrin.h>

#define TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma")))
#define INL HSD_MM_INLINE
#define UNROLL HSD_MM_UNROLL

#define BFP_T 16 /* tokens per tile, at most */
#define BFP_G 4  /* groups per tile, at most */
/* Software prefetch distance along a group's stream, in 64-byte vectors (0: none), by tile
 * tokens. */
#ifndef BFP_PFA
#define BFP_PFA 0
#endif
#ifndef BFP_PFB
#define BFP_PFB 128
#endif
#ifndef BFP_PFC
#define BFP_PFC 256
#endif
#define BFP_PF(T) ((T) <= 4 ? BFP_PFA : (T) <= 8 ? BFP_PFB : BFP_PFC)

size_t hsd_bf16p_acts_bytes(int32_t n, int32_t cols) {
    return hsd_mm_align64((size_t)n * (size_t)((cols + 1) / 2) * 4);
}

/* Token t's row into pair p = (bf16(x[2p]), bf16(x[2p + 1])) at xp[p·n + t]; a missing last
 * element is 0. Rounding to nearest even, as hsd_fp32_to_bf16. */
TGT static void prep_token(const float *x, int32_t cols, int32_t n, int32_t t, uint32_t *xp) {
    const int32_t P = (cols + 1) / 2;
    int32_t p = 0;
    uint32_t tmp[16];
    for (; 2 * p + 32 <= cols; p += 16) {
        __m512bh v =
            _mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + 2 * p + 16), _mm512_loadu_ps(x + 2 * p));
        if (n == 1) {
            _mm512_storeu_si512((void *)(xp + p), (__m512i)v);
            continue;
        }
        _mm512_storeu_si512((void *)tmp, (__m512i)v);
        for (int k = 0; k < 16; k++) xp[(size_t)(p + k) * n + t] = tmp[k];
    }
    for (; p < P; p++) {
        uint32_t lo = hsd_fp32_to_bf16(x[2 * p]);
        uint32_t hi = 2 * p + 1 < cols ? hsd_fp32_to_bf16(x[2 * p + 1]) : 0;
        xp[(size_t)p * n + t] = lo | hi << 16;
    }
}

void hsd_bf16p_prepare(hsd_mm_acts *a, void *buf) {
    for (int32_t t = 0; t < a->n; t++)
        prep_token(a->x + (size_t)t * a->cols, a->cols, a->n, t, buf);
    a->xp = buf;
}

/* One group from 16 row pointers: a 16 × 16 transpose of 32-bit pairs per 16 pairs, in four
 * rounds of two-source permutes; round b swaps bit b of the vector index with bit b of the
 * lane index (vector v, lane l: row v, pair l before; row l, pair v after). */
TGT void hsd_bf16p_pack_group(const uint8_t *const *rows, int32_t count, int32_t cols,
                              uint8_t *dst) {
    __m512i idx_lo[4], idx_hi[4];
    for (int b = 0; b < 4; b++) {
        int32_t m = 1 << b, lo[16], hi[16];
        for (int l = 0; l < 16; l++) {
            lo[l] = l & m ? 16 + (l & ~m) : l;
            hi[l] = l & m ? 16 + l : (l | m);
        }
        idx_lo[b] = _mm512_loadu_si512(lo);
        idx_hi[b] = _mm512_loadu_si512(hi);
    }
    const int32_t P = (cols + 1) / 2;
    for (int32_t p0 = 0; p0 < P; p0 += 16) {
        int32_t left = cols - 2 * p0; /* bf16 elements from pair p0 on */
        __mmask32 m = left >= 32 ? (__mmask32)~0u : (__mmask32)((1u << left) - 1);
        __m512i v[16]; /* fully unrolled below, or v lives on the stack */
        UNROLL for (int j = 0; j < 16; j++) v[j] =
            j < count ? _mm512_maskz_loadu_epi16(m, rows[j] + 4 * (size_t)p0)
                      : _mm512_setzero_si512();
        UNROLL for (int b = 0; b < 4; b++) {
            int vb = 1 << b;
            UNROLL for (int j = 0; j < 16; j++) {
                if (j & vb) continue;
                __m512i x = v[j], y = v[j | vb];
                v[j] = _mm512_permutex2var_epi32(x, idx_lo[b], y);
                v[j | vb] = _mm512_permutex2var_epi32(x, idx_hi[b], y);
            }
        }
        int32_t k = P - p0 < 16 ? P - p0 : 16;
        UNROLL for (int j = 0; j < 16; j++) if (j < k)
            _mm512_store_si512((void *)(dst + 64 * (size_t)(p0 + j)), v[j]);
    }
}

/* The token's pair goes to every lane with a vpbroadcastd from memory, then a register-form
 * vdpbf16ps. (The broadcast as vdpbf16ps's memory operand, {1to16}, which matmul_q8_avx512.c
 * uses for vpdpbusd, runs at 3.2 G instructions/s against 8.1 here on this Zen 5: a 16-token
 * tile over one L1-resident group, single thread.) */
/* clang-format off */
/* One tile: G groups from grp (gb bytes apart) × T tokens whose pairs start at xp (n per
 * pair); lane j of group g, token t goes to dst[t·dld + 16g + j]. */
TGT static INL void tile(const uint8_t *grp, size_t gb, int32_t P, const uint32_t *xp, size_t n,
                         float *dst, int32_t dld, const int G, const int T, const int l2) {
    __m512 acc[BFP_G][BFP_T];
    UNROLL for (int g = 0; g < G; g++)
        UNROLL for (int t = 0; t < T; t++) acc[g][t] = _mm512_setzero_ps();
    for (int32_t p = 0; p < P; p++, xp += n) {
        const uint8_t *wp = grp + 64 * (size_t)p;
        if (BFP_PF(T))
            UNROLL for (int g = 0; g < G; g++)
                /* may point past the buffer near its end: formed as an integer, and a
                 * prefetch never faults */
                /* into L2 on AMD: on Zen 4 the L1 hint left the 8- and 16-token tiles 15%
                 * slower (one thread from memory, bench/notes/verification_kernels.md) */
                l2 ? _mm_prefetch((const char *)((uintptr_t)wp + g * gb + 64 * BFP_PF(T)), _MM_HINT_T2)
                   : _mm_prefetch((const char *)((uintptr_t)wp + g * gb + 64 * BFP_PF(T)), _MM_HINT_T0);
        __m512i w[BFP_G];
        UNROLL for (int g = 0; g < G; g++) w[g] = _mm512_load_si512((const void *)(wp + g * gb));
        UNROLL for (int t = 0; t < T; t++) {
            __m512i x = _mm512_set1_epi32((int32_t)xp[t]);
            __asm__("" : "+v"(x)); /* keeps GCC from folding it back into {1to16} */
            UNROLL for (int g = 0; g < G; g++) acc[g][t] = _mm512_dpbf16_ps(acc[g][t], (__m512bh)w[g], (__m512bh)x);
        }
    }
    UNROLL for (int g = 0; g < G; g++)
        UNROLL for (int t = 0; t < T; t++) _mm512_storeu_ps(dst + (size_t)t * dld + 16 * g, acc[g][t]);
}
/* clang-format on */

typedef void (*tile_fn)(const uint8_t *, size_t, int32_t, const uint32_t *, size_t, float *,
                        int32_t);
#define DEF(G, T)                                                                                  \
    TGT static void tile_##G##_##T(const uint8_t *grp, size_t gb, int32_t P, const uint32_t *xp,   \
                                   size_t n, float *dst, int32_t dld) {                            \
        tile(grp, gb, P, xp, n, dst, dld, G, T, 0);                                                \
    }                                                                                              \
    TGT static void tile_##G##_##T##_l2(const uint8_t *grp, size_t gb, int32_t P,                 \
                                        const uint32_t *xp, size_t n, float *dst, int32_t dld) {   \
        tile(grp, gb, P, xp, n, dst, dld, G, T, 1);                                                \
    }
/* G·T <= 16: four groups up to 4 tokens, two up to 8, one up to 16 */
DEF(4, 1)
DEF(4, 2)
DEF(4, 3) DEF(4, 4) DEF(2, 5) DEF(2, 6) DEF(2, 7) DEF(2, 8) DEF(1, 1) DEF(1, 2) DEF(1, 3) DEF(1, 4)
    DEF(1, 5) DEF(1, 6) DEF(1, 7) DEF(1, 8) DEF(1, 9) DEF(1, 10) DEF(1, 11) DEF(1, 12) DEF(1, 13)
        DEF(1, 14) DEF(1, 15) DEF(1, 16)
/* [l2]: the prefetch hint, L1 (Intel) or L2 (AMD) */
static const tile_fn wide[2][BFP_T] = {
    {tile_4_1, tile_4_2, tile_4_3, tile_4_4, tile_2_5, tile_2_6, tile_2_7, tile_2_8},
    {tile_4_1_l2, tile_4_2_l2, tile_4_3_l2, tile_4_4_l2, tile_2_5_l2, tile_2_6_l2, tile_2_7_l2, tile_2_8_l2}};
static const tile_fn one[2][BFP_T] = {
    {tile_1_1, tile_1_2, tile_1_3, tile_1_4, tile_1_5, tile_1_6, tile_1_7, tile_1_8, tile_1_9,
     tile_1_10, tile_1_11, tile_1_12, tile_1_13, tile_1_14, tile_1_15, tile_1_16},
    {tile_1_1_l2, tile_1_2_l2, tile_1_3_l2, tile_1_4_l2, tile_1_5_l2, tile_1_6_l2, tile_1_7_l2,
     tile_1_8_l2, tile_1_9_l2, tile_1_10_l2, tile_1_11_l2, tile_1_12_l2, tile_1_13_l2,
     tile_1_14_l2, tile_1_15_l2, tile_1_16_l2}};

static int groups_per_tile(int32_t T) {
    return T <= 4 ? 4 : T <= 8 ? 2 : 1;
}

/* k whole groups at grp (gb apart) × every token: rows out[.. + 16g + lane]. */
static void run_groups(const hsd_mm_acts *a, const uint8_t *grp, size_t gb, int32_t k, float *out,
                       int32_t ld, int l2) {
    const int32_t P = (a->cols + 1) / 2;
    const size_t n = (size_t)a->n;
    for (int32_t t0 = 0; t0 < a->n; t0 += BFP_T) {
        int32_t T = a->n - t0 < BFP_T ? a->n - t0 : BFP_T, G = groups_per_tile(T), g = 0;
        float *o = out + (size_t)t0 * ld;
        for (; G > 1 && g + G <= k; g += G)
            wide[l2][T - 1](grp + (size_t)g * gb, gb, P, a->xp + t0, n, o + 16 * g, ld);
        for (; g < k; g++) one[l2][T - 1](grp + (size_t)g * gb, gb, P, a->xp + t0, n, o + 16 * g, ld);
    }
}

/* One group cut to lanes lo..hi: rows out[.. + lane − lo]. */
static void run_part(const hsd_mm_acts *a, const uint8_t *grp, size_t gb, int32_t lo, int32_t hi,
                     float *out, int32_t ld, int l2) {
    float part[BFP_T * HSD_MM_PACK_ROWS];
    for (int32_t t0 = 0; t0 < a->n; t0 += BFP_T) {
        int32_t T = a->n - t0 < BFP_T ? a->n - t0 : BFP_T;
        one[l2][T - 1](grp, gb, (a->cols + 1) / 2, a->xp + t0, (size_t)a->n, part, HSD_MM_PACK_ROWS);
        for (int32_t t = 0; t < T; t++)
            memcpy(out + (size_t)(t0 + t) * ld, part + (size_t)t * HSD_MM_PACK_ROWS + lo,
                   (size_t)(hi - lo) * sizeof *part);
    }
}

void hsd_bf16p_rows(const hsd_mm_acts *a, const hsd_mat *w, const hsd_mm_packed *pk,
                    const int32_t *ids, int32_t r0, int32_t count, float *out, int32_t ld,
                    uint8_t *scratch) {
    const int32_t R = HSD_MM_PACK_ROWS;
    const size_t gb = hsd_bf16p_group_bytes(a->cols);
    const int l2 = hsd_kqp_tuning_amd(); /* the per-vendor tuning (matmul_kq.h) */
    if (pk && !ids) {
        hsd_mm_span sp[3];
        for (int i = 0, n = hsd_mm_group_spans(r0, count, sp); i < n; i++) {
            const uint8_t *grp = pk->data + (size_t)sp[i].g * gb;
            if (sp[i].lo == 0 && sp[i].hi == R)
                run_groups(a, grp, gb, sp[i].n_groups, out + sp[i].out_off, ld, l2);
            else
                run_part(a, grp, gb, sp[i].lo, sp[i].hi, out + sp[i].out_off, ld, l2);
        }
        return;
    }
    /* no packed copy, or a row subset: pack each group into scratch first */
    const uint8_t *rows[HSD_MM_PACK_ROWS];
    for (int32_t k = 0; k < count; k += R) {
        int32_t c = count - k < R ? count - k : R;
        hsd_mm_group_rows(w, ids, r0 + k, c, rows);
        hsd_bf16p_pack_group(rows, c, a->cols, scratch);
        if (c == R)
            run_groups(a, scratch, gb, 1, out + k, ld, l2);
        else
            run_part(a, scratch, gb, 0, c, out + k, ld, l2);
    }
}

#endif /* HSD_MM_HAVE_AVX512 */
