/* AVX-512 micro-kernels of the forward products (see matmul.h): a tile of up to 4 weight
 * rows × up to 4 tokens keeps one 16-lane fp32 accumulator per (row, token) in registers,
 * so each weight vector loaded feeds T multiply-adds and each activation vector R.
 *
 *   BF16: activations rounded to bf16 once per call; vdpbf16ps (32 products per instruction).
 *   (Q8_0: row-interleaved weights and their own tile, matmul_q8_avx512.c.)
 *   F16/F32: weights widened to fp32 in registers, fp32 FMA against fp32 activations.
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

#define TILE_R 4 /* rows per tile (BF16, F16, F32) */
#define TILE_T 4 /* tokens per tile */
#define MAX_R 4  /* table bounds */
#define MAX_T 4

int hsd_mm_avx512_handles(hsd_dtype t) {
    return t == HSD_DT_F32 || t == HSD_DT_F16 || t == HSD_DT_BF16;
}

static size_t align64(size_t b) {
    return (b + 63) & ~(size_t)63;
}

size_t hsd_mm_avx512_acts_bytes(hsd_dtype t, int32_t n, int32_t cols) {
    size_t N = (size_t)n;
    if (t == HSD_DT_BF16) return align64(N * cols * 2);
    return 0;
}

/* bf16 of x, round to nearest even (as hsd_fp32_to_bf16), 32 at a time. */
TGT static void prep_bf16(const float *x, size_t len, uint16_t *o) {
    size_t i = 0;
    for (; i + 32 <= len; i += 32) {
        __m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + i + 16), _mm512_loadu_ps(x + i));
        _mm512_storeu_si512((void *)(o + i), (__m512i)v);
    }
    for (; i < len; i++) o[i] = hsd_fp32_to_bf16(x[i]);
}

void hsd_mm_avx512_prepare(hsd_mm_acts *a, hsd_dtype t, void *buf) {
    size_t N = (size_t)a->n;
    if (t == HSD_DT_BF16) {
        prep_bf16(a->x, N * a->cols, buf);
        a->xb = buf;
    }
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

TGT static INL void tile_bf16(const hsd_mm_acts *a, const uint8_t *const *rows, int32_t t0,
                              float *out, int32_t ld, const pf_plan *pf, const int R, const int T) {
    __m512 acc[TILE_R][TILE_T];
    UNROLL for (int r = 0; r < R; r++)
        UNROLL for (int t = 0; t < T; t++) acc[r][t] = _mm512_setzero_ps();
    const int32_t cols = a->cols;
    const uint16_t *xb = a->xb + (size_t)t0 * cols;
    int32_t i = 0;
    int32_t c = 0;
    for (; i + 32 <= cols; i += 32, c++) {
        PREFETCH(pf, c, 2 * (size_t)i);
        __m512bh w[TILE_R];
        UNROLL for (int r = 0; r < R; r++) w[r] = (__m512bh)_mm512_loadu_si512(rows[r] + 2 * (size_t)i);
        UNROLL for (int t = 0; t < T; t++) {
            __m512bh xv = (__m512bh)_mm512_loadu_si512(xb + (size_t)t * cols + i);
            UNROLL for (int r = 0; r < R; r++) acc[r][t] = _mm512_dpbf16_ps(acc[r][t], w[r], xv);
        }
    }
    if (i < cols) { /* zero-filled tail: adds exact zeros */
        __mmask32 m = (__mmask32)((1u << (cols - i)) - 1);
        __m512bh w[TILE_R];
        UNROLL for (int r = 0; r < R; r++)
            w[r] = (__m512bh)_mm512_maskz_loadu_epi16(m, rows[r] + 2 * (size_t)i);
        UNROLL for (int t = 0; t < T; t++) {
            __m512bh xv = (__m512bh)_mm512_maskz_loadu_epi16(m, xb + (size_t)t * cols + i);
            UNROLL for (int r = 0; r < R; r++) acc[r][t] = _mm512_dpbf16_ps(acc[r][t], w[r], xv);
        }
    }
    TILE_STORE(R, T)
}

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

/* BF16, two tokens: as rows_bf16_n1, 4 rows × 2 tokens in 8 accumulators (single thread,
 * 1 GB of rows, CPU time: 34-37 ms against 37-39 ms for the tile table's 4 × 2 tile). */
TGT static void rows_bf16_n2(const hsd_mm_acts *a, const uint8_t *const *rows, int32_t count,
                             float *out, int32_t ld) {
    const int32_t cols = a->cols, full = cols & ~31;
    const uint16_t *x0 = a->xb, *x1 = a->xb + cols;
    const __mmask32 m = (__mmask32)((1u << (cols - full)) - 1);
    float *o1 = out + ld;
    int32_t r = 0;
    for (; r + 4 <= count; r += 4) {
        const uint8_t *p0 = rows[r], *p1 = rows[r + 1], *p2 = rows[r + 2], *p3 = rows[r + 3];
        __m512 c0 = _mm512_setzero_ps(), c1 = c0, c2 = c0, c3 = c0;
        __m512 d0 = c0, d1 = c0, d2 = c0, d3 = c0;
        for (int32_t i = 0; i < full; i += 32) {
            __m512bh u = (__m512bh)_mm512_loadu_si512(x0 + i);
            __m512bh v = (__m512bh)_mm512_loadu_si512(x1 + i);
            size_t o = 2 * (size_t)i;
            __m512bh w0 = (__m512bh)_mm512_loadu_si512(p0 + o);
            __m512bh w1 = (__m512bh)_mm512_loadu_si512(p1 + o);
            __m512bh w2 = (__m512bh)_mm512_loadu_si512(p2 + o);
            __m512bh w3 = (__m512bh)_mm512_loadu_si512(p3 + o);
            c0 = _mm512_dpbf16_ps(c0, w0, u), d0 = _mm512_dpbf16_ps(d0, w0, v);
            c1 = _mm512_dpbf16_ps(c1, w1, u), d1 = _mm512_dpbf16_ps(d1, w1, v);
            c2 = _mm512_dpbf16_ps(c2, w2, u), d2 = _mm512_dpbf16_ps(d2, w2, v);
            c3 = _mm512_dpbf16_ps(c3, w3, u), d3 = _mm512_dpbf16_ps(d3, w3, v);
        }
        if (full < cols) {
            __m512bh u = (__m512bh)_mm512_maskz_loadu_epi16(m, x0 + full);
            __m512bh v = (__m512bh)_mm512_maskz_loadu_epi16(m, x1 + full);
            size_t o = 2 * (size_t)full;
            __m512bh w0 = (__m512bh)_mm512_maskz_loadu_epi16(m, p0 + o);
            __m512bh w1 = (__m512bh)_mm512_maskz_loadu_epi16(m, p1 + o);
            __m512bh w2 = (__m512bh)_mm512_maskz_loadu_epi16(m, p2 + o);
            __m512bh w3 = (__m512bh)_mm512_maskz_loadu_epi16(m, p3 + o);
            c0 = _mm512_dpbf16_ps(c0, w0, u), d0 = _mm512_dpbf16_ps(d0, w0, v);
            c1 = _mm512_dpbf16_ps(c1, w1, u), d1 = _mm512_dpbf16_ps(d1, w1, v);
            c2 = _mm512_dpbf16_ps(c2, w2, u), d2 = _mm512_dpbf16_ps(d2, w2, v);
            c3 = _mm512_dpbf16_ps(c3, w3, u), d3 = _mm512_dpbf16_ps(d3, w3, v);
        }
        out[r] = _mm512_reduce_add_ps(c0), o1[r] = _mm512_reduce_add_ps(d0);
        out[r + 1] = _mm512_reduce_add_ps(c1), o1[r + 1] = _mm512_reduce_add_ps(d1);
        out[r + 2] = _mm512_reduce_add_ps(c2), o1[r + 2] = _mm512_reduce_add_ps(d2);
        out[r + 3] = _mm512_reduce_add_ps(c3), o1[r + 3] = _mm512_reduce_add_ps(d3);
    }
    for (; r < count; r++) {
        __m512 c0 = _mm512_setzero_ps(), d0 = c0;
        for (int32_t i = 0; i < full; i += 32) {
            __m512bh w0 = (__m512bh)_mm512_loadu_si512(rows[r] + 2 * (size_t)i);
            c0 = _mm512_dpbf16_ps(c0, w0, (__m512bh)_mm512_loadu_si512(x0 + i));
            d0 = _mm512_dpbf16_ps(d0, w0, (__m512bh)_mm512_loadu_si512(x1 + i));
        }
        if (full < cols) {
            __m512bh w0 = (__m512bh)_mm512_maskz_loadu_epi16(m, rows[r] + 2 * (size_t)full);
            c0 = _mm512_dpbf16_ps(c0, w0, (__m512bh)_mm512_maskz_loadu_epi16(m, x0 + full));
            d0 = _mm512_dpbf16_ps(d0, w0, (__m512bh)_mm512_maskz_loadu_epi16(m, x1 + full));
        }
        out[r] = _mm512_reduce_add_ps(c0), o1[r] = _mm512_reduce_add_ps(d0);
    }
}

/* clang-format on */

/* BF16, one token: the rows of a whole call in groups of 4 in one loop, without the tile
 * table's per-tile call, plan and prefetch. Each row runs exactly the tiles' sequence (one
 * accumulator from zero, the 32-wide chunks in order, the zero-filled tail, one
 * _mm512_reduce_add_ps), so its result has the same bits as in any tile at any n. */
TGT static void rows_bf16_n1(const hsd_mm_acts *a, const uint8_t *const *rows, int32_t count,
                             float *out) {
    const int32_t cols = a->cols, full = cols & ~31;
    const uint16_t *xb = a->xb;
    const __mmask32 m = (__mmask32)((1u << (cols - full)) - 1);
    int32_t r = 0;
    for (; r + 4 <= count; r += 4) {
        const uint8_t *p0 = rows[r], *p1 = rows[r + 1], *p2 = rows[r + 2], *p3 = rows[r + 3];
        __m512 c0 = _mm512_setzero_ps(), c1 = c0, c2 = c0, c3 = c0;
        for (int32_t i = 0; i < full; i += 32) {
            __m512bh xv = (__m512bh)_mm512_loadu_si512(xb + i);
            size_t o = 2 * (size_t)i;
            c0 = _mm512_dpbf16_ps(c0, (__m512bh)_mm512_loadu_si512(p0 + o), xv);
            c1 = _mm512_dpbf16_ps(c1, (__m512bh)_mm512_loadu_si512(p1 + o), xv);
            c2 = _mm512_dpbf16_ps(c2, (__m512bh)_mm512_loadu_si512(p2 + o), xv);
            c3 = _mm512_dpbf16_ps(c3, (__m512bh)_mm512_loadu_si512(p3 + o), xv);
        }
        if (full < cols) {
            __m512bh xv = (__m512bh)_mm512_maskz_loadu_epi16(m, xb + full);
            size_t o = 2 * (size_t)full;
            c0 = _mm512_dpbf16_ps(c0, (__m512bh)_mm512_maskz_loadu_epi16(m, p0 + o), xv);
            c1 = _mm512_dpbf16_ps(c1, (__m512bh)_mm512_maskz_loadu_epi16(m, p1 + o), xv);
            c2 = _mm512_dpbf16_ps(c2, (__m512bh)_mm512_maskz_loadu_epi16(m, p2 + o), xv);
            c3 = _mm512_dpbf16_ps(c3, (__m512bh)_mm512_maskz_loadu_epi16(m, p3 + o), xv);
        }
        out[r] = _mm512_reduce_add_ps(c0);
        out[r + 1] = _mm512_reduce_add_ps(c1);
        out[r + 2] = _mm512_reduce_add_ps(c2);
        out[r + 3] = _mm512_reduce_add_ps(c3);
    }
    for (; r < count; r++) {
        __m512 c0 = _mm512_setzero_ps();
        for (int32_t i = 0; i < full; i += 32)
            c0 = _mm512_dpbf16_ps(c0, (__m512bh)_mm512_loadu_si512(rows[r] + 2 * (size_t)i),
                                  (__m512bh)_mm512_loadu_si512(xb + i));
        if (full < cols)
            c0 = _mm512_dpbf16_ps(c0,
                                  (__m512bh)_mm512_maskz_loadu_epi16(m, rows[r] + 2 * (size_t)full),
                                  (__m512bh)_mm512_maskz_loadu_epi16(m, xb + full));
        out[r] = _mm512_reduce_add_ps(c0);
    }
}

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

#define B_BF16(R, T) tile_bf16(a, rows, t0, out, ld, pf, R, T)
#define B_F32(R, T) tile_fp(a, HSD_DT_F32, rows, t0, out, ld, pf, R, T)
#define B_F16(R, T) tile_fp(a, HSD_DT_F16, rows, t0, out, ld, pf, R, T)

DEF_TILES(k_bf16, B_BF16)
DEF_TILES(k_f32, B_F32)
DEF_TILES(k_f16, B_F16)

static const tile_fn tiles_bf16[MAX_R][MAX_T] = TABLE(k_bf16);
static const tile_fn tiles_f32[MAX_R][MAX_T] = TABLE(k_f32);
static const tile_fn tiles_f16[MAX_R][MAX_T] = TABLE(k_f16);

void hsd_mm_avx512_rows(const hsd_mm_acts *a, hsd_dtype t, const uint8_t *const *rows,
                        int32_t count, float *out, int32_t ld) {
    if (t == HSD_DT_BF16 && a->n == 1) {
        rows_bf16_n1(a, rows, count, out);
        return;
    }
    if (t == HSD_DT_BF16 && a->n == 2) {
        rows_bf16_n2(a, rows, count, out, ld);
        return;
    }
    const tile_fn(*tab)[MAX_T] = t == HSD_DT_BF16 ? tiles_bf16 : t == HSD_DT_F16 ? tiles_f16 : tiles_f32;
    const int32_t tr = TILE_R, tt = TILE_T;
    /* rows outer, tokens inner: a tile's rows come from memory once and stay in L1/L2 for
     * the following token groups */
    const int32_t G = (a->n + tt - 1) / tt;
    /* (BF16 at n <= 2 streams faster without software prefetch: rows_bf16_n1/n2 above; from
     * n = 3 on the tile's arithmetic fills the out-of-order window and prefetch pays: single
     * thread, 1 GB of rows, CPU time, n = 3 37.8 ms with, 46.8 without; n = 4 45 vs 50.) */
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
