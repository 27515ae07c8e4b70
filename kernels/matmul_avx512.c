/* AVX-512 micro-kernels of the forward products (see matmul.h): a tile of up to 4 weight
 * rows × up to 4 tokens keeps one 16-lane fp32 accumulator per (row, token) in registers,
 * so each weight vector loaded feeds T multiply-adds and each activation vector R.
 *
 *   F16/F32: weights widened to fp32 in registers, fp32 FMA against fp32 activations.
 *   (Q8_0 and BF16: row-interleaved weights and their own tiles, matmul_q8_avx512.c and
 *   matmul_bf16p_avx512.c.)
 *
 * Every tile shape runs the same per-(row, token) sequence: chunks of the row in order, one
 * accumulator, one fixed horizontal sum. That is what makes a row's result independent of n
 * and of the tile it lands in (batch invariance). The build targets baseline x86-64; these
 * functions carry their own target attribute and are only called when the CPU has it. */
#include "kernels/matmul_kern.h"

#ifdef HSD_MM_HAVE_AVX512

#include <immintrin.h>
#include <string.h>

#define TGT                                                                                        \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx512vnni,fma,"          \
                          "f16c")))
#define INL inline __attribute__((always_inline))
/* The tile loops must unroll fully (-O2 does not when code grows), or the accumulators
 * live in memory instead of registers. */
#ifdef __clang__
#define UNROLL _Pragma("unroll")
#else
#define UNROLL _Pragma("GCC unroll 4")
#endif

#define TILE_R 4 /* rows per tile */
#define TILE_T 4 /* tokens per tile */
#define MAX_R 4  /* table bounds */
#define MAX_T 4

int hsd_mm_avx512_handles(hsd_dtype t) {
    return t == HSD_DT_F32 || t == HSD_DT_F16;
}

/* ---- tiles ---------------------------------------------------------------------------- */
/* (clang-format cannot lay out `UNROLL for`, a pragma before each tile loop) */
/* clang-format off */

/* Prefetching the next tile's rows, one tile (4 rows) ahead. A tile of n > 4 tokens runs in
 * G = ceil(n/4) passes over its rows: the first streams them from memory, the others compute
 * from L1/L2 and leave the memory idle, so streaming and arithmetic would add up instead of
 * overlapping. Pass g of G fetches the lines c of the next tile's rows with c % G == g,
 * spreading the next tile's stream over all passes. Even at n = 1 it paid for the Q8_0 tile
 * that was here (now matmul_q8_avx512.c), whose many instructions per byte kept the
 * out-of-order window from running far enough ahead: single-thread 31 ms -> 15.5 ms. */
typedef struct pf_plan {
    const uint8_t *next[MAX_R];
    int32_t g, G;
} pf_plan;
#define PREFETCH(pf, c, off)                                                                  \
    do {                                                                                      \
        if ((pf) && (c) % (pf)->G == (pf)->g) {                                               \
            UNROLL for (int p_ = 0; p_ < R; p_++)                                        \
                _mm_prefetch((const char *)((pf)->next[p_] + (off)), _MM_HINT_T0);            \
        }                                                                                     \
    } while (0)

/* The accumulators of a tile and how they end: one fixed reduction per (row, token). */
#define TILE_STORE(R, T)                                                                      \
    UNROLL for (int r = 0; r < R; r++)                                                               \
        UNROLL for (int t = 0; t < T; t++) out[(size_t)t * ld + r] = _mm512_reduce_add_ps(acc[r][t]);

/* 16 weights of row p from element i widened to fp32 (exactly), m: lanes to load. */
TGT static INL __m512 load_w16(hsd_dtype ty, const uint8_t *p, int32_t i, __mmask16 m) {
    switch (ty) {
    case HSD_DT_F16: return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p + 2 * (size_t)i));
    case HSD_DT_BF16:
        return _mm512_castsi512_ps(
            _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p + 2 * (size_t)i)), 16));
    default: return _mm512_maskz_loadu_ps(m, p + 4 * (size_t)i); /* F32 */
    }
}

TGT static INL void tile_fp(const hsd_mm_acts *a, hsd_dtype ty, const uint8_t *const *rows,
                            int32_t t0, float *out, int32_t ld, const pf_plan *pf, const int R,
                            const int T) {
    __m512 acc[TILE_R][TILE_T];
    UNROLL for (int r = 0; r < R; r++)
        UNROLL for (int t = 0; t < T; t++) acc[r][t] = _mm512_setzero_ps();
    const int32_t cols = a->cols;
    const float *x = a->x + (size_t)t0 * cols;
    for (int32_t i = 0; i < cols; i += 16) {
        PREFETCH(pf, i / 16, (ty == HSD_DT_F32 ? 4 : 2) * (size_t)i);
        __mmask16 m = cols - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (cols - i)) - 1);
        __m512 w[TILE_R];
        UNROLL for (int r = 0; r < R; r++) w[r] = load_w16(ty, rows[r], i, m);
        UNROLL for (int t = 0; t < T; t++) {
            __m512 xv = _mm512_maskz_loadu_ps(m, x + (size_t)t * cols + i);
            UNROLL for (int r = 0; r < R; r++) acc[r][t] = _mm512_fmadd_ps(w[r], xv, acc[r][t]);
        }
    }
    TILE_STORE(R, T)
}

/* clang-format on */

/* One instance per (R, T): constant shapes let the compiler keep the tile in registers. */
typedef void (*tile_fn)(const hsd_mm_acts *, const uint8_t *const *, int32_t, float *, int32_t,
                        const pf_plan *);

#define DEF_TILE(NAME, BODY, R, T)                                                                 \
    TGT static void NAME##_##R##_##T(const hsd_mm_acts *a, const uint8_t *const *rows, int32_t t0, \
                                     float *out, int32_t ld, const pf_plan *pf) {                  \
        BODY;                                                                                      \
    }
#define DEF_TILES_T(NAME, B, R)                                                                    \
    DEF_TILE(NAME, B(R, 1), R, 1)                                                                  \
    DEF_TILE(NAME, B(R, 2), R, 2) DEF_TILE(NAME, B(R, 3), R, 3) DEF_TILE(NAME, B(R, 4), R, 4)
#define DEF_TILES(NAME, B)                                                                         \
    DEF_TILES_T(NAME, B, 1) DEF_TILES_T(NAME, B, 2) DEF_TILES_T(NAME, B, 3) DEF_TILES_T(NAME, B, 4)
#define TABLE_T(NAME, R)                                                                           \
    { NAME##_##R##_1, NAME##_##R##_2, NAME##_##R##_3, NAME##_##R##_4 }
#define TABLE(NAME)                                                                                \
    { TABLE_T(NAME, 1), TABLE_T(NAME, 2), TABLE_T(NAME, 3), TABLE_T(NAME, 4) }

#define B_F32(R, T) tile_fp(a, HSD_DT_F32, rows, t0, out, ld, pf, R, T)
#define B_F16(R, T) tile_fp(a, HSD_DT_F16, rows, t0, out, ld, pf, R, T)

DEF_TILES(k_f32, B_F32)
DEF_TILES(k_f16, B_F16)

static const tile_fn tiles_f32[MAX_R][MAX_T] = TABLE(k_f32);
static const tile_fn tiles_f16[MAX_R][MAX_T] = TABLE(k_f16);

void hsd_mm_avx512_rows(const hsd_mm_acts *a, hsd_dtype t, const uint8_t *const *rows,
                        int32_t count, float *out, int32_t ld) {
    const tile_fn(*tab)[MAX_T] = t == HSD_DT_F16 ? tiles_f16 : tiles_f32;
    const int32_t tr = TILE_R, tt = TILE_T;
    /* rows outer, tokens inner: a tile's rows come from memory once and stay in L1/L2 for
     * the following token groups */
    const int32_t G = (a->n + tt - 1) / tt;
    for (int32_t r = 0; r < count; r += tr) {
        int R = count - r < tr ? (int)(count - r) : tr;
        int32_t nn = count - r - tr; /* rows in the next tile */
        pf_plan plan = {{NULL}, 0, G};
        for (int k = 0; k < tr && nn > 0; k++) plan.next[k] = rows[r + tr + (k < nn ? k : nn - 1)];
        for (int32_t t0 = 0; t0 < a->n; t0 += tt) {
            int T = a->n - t0 < tt ? (int)(a->n - t0) : tt;
            plan.g = t0 / tt;
            tab[R - 1][T - 1](a, rows + r, t0, out + (size_t)t0 * ld + r, ld,
                              nn > 0 ? &plan : NULL);
        }
    }
}

#endif /* HSD_MM_HAVE_AVX512 */
