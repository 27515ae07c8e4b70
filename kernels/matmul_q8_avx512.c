/* Q8_0, Q5_0, Q4_0, Q5_1 and Q4_1 × int8 activations on AVX-512 VNNI over row-interleaved
 * weights (layout and why: matmul_q8.h). A tile is one group of 16 rows × up to 16 tokens: per
 * 32-column block it loads (the nibble types: unpacks) the group's 8 weight vectors and 16 fp16
 * scales once, and for each token runs
 *   s = −o·Σq (the u8 offset of the weights, precomputed per activation block)
 *   s += vpdpbusd(w_k, 4 activation bytes broadcast)      k = 0..7  (exact int32)
 *   acc = fma(float(s), d_w · d_x, acc)                     (per lane: one row)
 * i.e. 11 vector instructions per 512 multiply-adds, against 4 per 64 of a tile that keeps
 * a row per vector and must scale each pair of blocks separately. The registers: 8 weight
 * vectors, 16 accumulators, the scales and two temporaries (no spills: checked with
 * objdump -d on GCC 12 -O2). The build targets baseline x86-64; these functions carry their
 * own target attribute and run only when the CPU has AVX-512 VNNI. */
#include "kernels/matmul_q8.h"

#ifdef HSD_MM_HAVE_AVX512

#include <immintrin.h>
#include <string.h>

#define TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,fma,f16c")))
#define INL HSD_MM_INLINE
#define UNROLL HSD_MM_UNROLL

#define Q8P_T 16 /* tokens per tile */
/* Software prefetch distance in bytes of the group stream: the tile's arithmetic at 8..16
 * tokens hides the memory only if the stream runs far ahead. Measured for Q8_0 in blocks of
 * 512 weight bytes, single-thread CPU time over 258 MB of 1B-shaped matrices at n = 8 (load
 * ~4): none 17.2 ms, 4 blocks 13.3, 8: 12.1, 16: 9.5, 24: 8.8, 32: 9.2, 64: 8.3 (n = 1:
 * 7.4..8.7 for every distance from 16, within the noise). The nibble types keep the distance
 * in bytes. The lines go to L2: with the L1 hint, forward(1) of the Q8_0 1B file took 3-4%
 * longer (session 15). */
#define Q8P_PF_BYTES (24 * 512)
#define Q8P_PF_HINT _MM_HINT_T2

size_t hsd_q8p_acts_bytes(int32_t n, int32_t cols) {
    size_t N = (size_t)n, nb = (size_t)cols / 32;
    return hsd_mm_align64(N * nb * 32) + 3 * hsd_mm_align64(N * nb * 4);
}

/* Token t's row x (nb blocks) into the block-major arrays: d = fp16(max|x|/127), q =
 * round-to-even(x · 127/max|x|) as llama.cpp's quantize_row_q8_0 (so that a Q8_0 file gives
 * its products), c = −off·Σq, and sx = d·Σq, the sum of the block's rounded activations
 * (exact in fp32: an 11-bit significand times at most 32·127), which the weights' minima
 * (Q4_1, Q5_1) multiply. */
TGT static void prep_token(const float *x, int32_t nb, int32_t n, int32_t t, int32_t off, int8_t *q,
                           float *d, int32_t *c, float *sx) {
    const __m512 sign = _mm512_set1_ps(-0.0f);
    for (int32_t b = 0; b < nb; b++, x += 32) {
        __m512 v0 = _mm512_loadu_ps(x), v1 = _mm512_loadu_ps(x + 16);
        __m512 m = _mm512_max_ps(_mm512_andnot_ps(sign, v0), _mm512_andnot_ps(sign, v1));
        float amax = _mm512_reduce_max_ps(m);
        float id = amax > 0.0f ? 127.0f / amax : 0.0f;
        __m512 s = _mm512_set1_ps(id);
        /* Clamped because a NaN or infinite activation converts to INT_MIN: the stored bytes
         * and c must stay within what the tile's int32 sums can hold (|c| <= 32*127*128). */
        const __m512i lo = _mm512_set1_epi32(-127), hi = _mm512_set1_epi32(127);
        __m512i i0 = _mm512_min_epi32(_mm512_max_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(v0, s)), lo), hi);
        __m512i i1 = _mm512_min_epi32(_mm512_max_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(v1, s)), lo), hi);
        size_t k = (size_t)b * n + t;
        _mm_storeu_si128((__m128i *)(void *)(q + 32 * k), _mm512_cvtepi32_epi8(i0));
        _mm_storeu_si128((__m128i *)(void *)(q + 32 * k + 16), _mm512_cvtepi32_epi8(i1));
        d[k] = hsd_fp16_to_fp32(hsd_fp32_to_fp16(amax / 127.0f));
        const int32_t sum = _mm512_reduce_add_epi32(_mm512_add_epi32(i0, i1));
        c[k] = -off * sum;
        sx[k] = d[k] * (float)sum;
    }
}

void hsd_q8p_prepare(hsd_mm_acts *a, void *buf, hsd_dtype type) {
    size_t N = (size_t)a->n, nb = (size_t)a->cols / 32;
    int8_t *q = buf;
    float *d = (float *)(void *)((uint8_t *)buf + hsd_mm_align64(N * nb * 32));
    int32_t *c = (int32_t *)(void *)((uint8_t *)d + hsd_mm_align64(N * nb * 4));
    float *sx = (float *)(void *)((uint8_t *)c + hsd_mm_align64(N * nb * 4));
    for (int32_t t = 0; t < a->n; t++)
        prep_token(a->x + (size_t)t * a->cols, (int32_t)nb, a->n, t, hsd_q8p_offset(type), q, d, c,
                   sx);
    a->xq = (const uint8_t *)q;
    a->xd = d;
    a->xc = c;
    a->xs = sx;
}

/* One group packed from the rows' Q8_0 blocks with a transpose in registers: per block, rows j and
 * j' share a vector (8 dwords each), and three rounds of two-source permutes swap one bit of the
 * vector index with one bit of the lane index each, ending with vector k = dword k of all 16 rows.
 * Rows are placed so that lanes come out in order (row 8h + 4p0 + 2p1 + p2 in half h of vector p =
 * p2p1p0) and vector r holds dword bitreverse(r). Products without a packed copy (row subsets,
 * matrices nobody packed) pay this for each group: 43 GB/s from cache, where a scalar pack ran
 * at 16. */
TGT static void pack_group_q8(const uint8_t *const *rows, int32_t count, int32_t nb, uint8_t *dst) {
    static const int8_t brev3[8] = {0, 4, 2, 6, 1, 5, 3, 7};
    __m512i idx_lo[3], idx_hi[3];
    for (int st = 0; st < 3; st++) { /* round st swaps lane bit m = 4, 2, 1 */
        int32_t m = 4 >> st, lo[16], hi[16];
        for (int l = 0; l < 16; l++) {
            lo[l] = l & m ? 16 + (l & ~m) : l;
            hi[l] = l & m ? 16 + l : (l | m);
        }
        idx_lo[st] = _mm512_loadu_si512(lo);
        idx_hi[st] = _mm512_loadu_si512(hi);
    }
    const __m512i u128 = _mm512_set1_epi8((char)0x80);
    for (int32_t b = 0; b < nb; b++) {
        const size_t off = (size_t)b * HSD_Q8_0_BYTES;
        __m512i v[8]; /* fully unrolled below, or v lives on the stack (3x slower) */
        UNROLL for (int p = 0; p < 8; p++) {
            int j0 = 4 * (p & 1) + 2 * ((p >> 1) & 1) + (p >> 2), j1 = j0 + 8;
            __m256i a =
                j0 < count ? _mm256_loadu_si256((const __m256i *)(const void *)(rows[j0] + off + 2))
                           : _mm256_setzero_si256();
            __m256i c =
                j1 < count ? _mm256_loadu_si256((const __m256i *)(const void *)(rows[j1] + off + 2))
                           : _mm256_setzero_si256();
            v[p] = _mm512_xor_si512(_mm512_inserti64x4(_mm512_castsi256_si512(a), c, 1), u128);
        }
        UNROLL for (int st = 0; st < 3; st++) { /* pairs differ in vector bit st */
            int vb = 1 << st;
            UNROLL for (int p = 0; p < 8; p++) {
                if (p & vb) continue;
                __m512i x = v[p], y = v[p | vb];
                v[p] = _mm512_permutex2var_epi32(x, idx_lo[st], y);
                v[p | vb] = _mm512_permutex2var_epi32(x, idx_hi[st], y);
            }
        }
        uint8_t *wb = (uint8_t *)hsd_q8p_weights(dst, HSD_DT_Q8_0, b);
        UNROLL for (int r = 0; r < 8; r++) _mm512_store_si512((void *)(wb + 64 * brev3[r]), v[r]);
        uint16_t *sc = (uint16_t *)hsd_q8p_scales(dst, HSD_DT_Q8_0, b);
        UNROLL for (int32_t j = 0; j < HSD_Q8P_ROWS; j++) {
            uint16_t h = 0;
            if (j < count) memcpy(&h, rows[j] + off, 2);
            sc[j] = h;
        }
    }
    if (nb & 1) { /* the last pair's second block: zero weights (as the offset) and scales */
        uint8_t *wb = (uint8_t *)hsd_q8p_weights(dst, HSD_DT_Q8_0, nb);
        UNROLL for (int r = 0; r < 8; r++) _mm512_store_si512((void *)(wb + 64 * r), u128);
        memset((void *)hsd_q8p_scales(dst, HSD_DT_Q8_0, nb), 0, HSD_Q8P_SCALE_BYTES);
    }
}

/* Q4_0 / Q5_0 / Q4_1 / Q5_1 groups: plain copies of the nibble bytes (4 per lane and vector),
 * the fifth bits regrouped so that one shift per weight vector brings them to bit 4 of their
 * bytes, the scales, and the minima of the _1 types. */
static void pack_group_nibbles(hsd_dtype t, const uint8_t *const *rows, int32_t count, int32_t nb,
                               uint8_t *dst) {
    const hsd_q32_form f = hsd_q32_form_of(t); /* the file's block layout (kernels/quant.h) */
    memset(dst, 0, hsd_q8p_group_bytes(t, nb * 32));
    for (int32_t b = 0; b < nb; b++)
        for (int32_t j = 0; j < count; j++) {
            const uint8_t *blk = rows[j] + (size_t)b * f.bytes;
            uint8_t *wb = (uint8_t *)hsd_q8p_weights(dst, t, b);
            uint16_t *sc = (uint16_t *)hsd_q8p_scales(dst, t, b);
            memcpy(sc + j, blk, 2);
            if (f.mins) memcpy(sc + 2 * HSD_Q8P_ROWS + j, blk + 2, 2);
            for (int k = 0; k < 4; k++) memcpy(wb + 64 * k + 4 * j, blk + f.qs + 4 * k, 4);
            if (!f.five) continue;
            uint32_t qh, r = 0;
            memcpy(&qh, blk + f.qh, 4);
            for (int k = 0; k < 8; k++)
                for (int e = 0; e < 4; e++) r |= ((qh >> (4 * k + e)) & 1u) << (8 * e + k);
            memcpy(wb + 256 + 4 * j, &r, 4);
        }
}

void hsd_q8p_pack_group(hsd_dtype t, const uint8_t *const *rows, int32_t count, int32_t nb,
                        uint8_t *dst) {
    if (t == HSD_DT_Q8_0)
        pack_group_q8(rows, count, nb, dst);
    else
        pack_group_nibbles(t, rows, count, nb, dst);
}

/* *s += w (u8) · the 4 signed bytes at x broadcast to every lane, with the broadcast as the
 * instruction's memory operand ({1to16}). GCC 12 emits the intrinsic form as a separate
 * vpbroadcastd per use, and the 9 extra instructions per token and block measured 15-20%
 * slower at 8 tokens (single thread, CPU time over 258 MB of 1B-shaped matrices: 9.0-9.4 ms
 * against 7.4-8.2; equal at 16 tokens, where the vpdpbusd throughput is the limit). */
TGT static INL void dpbusd_bcast(__m512i *s, __m512i w, const int8_t *x) {
    __asm__("vpdpbusd %2%{1to16%}, %1, %0"
            : "+v"(*s)
            : "v"(w), "m"(*(const int32_t *)(const void *)x));
}

/* clang-format off */
/* The 8 u8 weight vectors of one block of a group of type t at wb (matmul_q8.h). */
TGT static INL void block_weights(const hsd_dtype t, const uint8_t *wb, __m512i w[8]) {
    if (t == HSD_DT_Q8_0) {
        UNROLL for (int k = 0; k < 8; k++) w[k] = _mm512_load_si512((const void *)(wb + 64 * k));
        return;
    }
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    UNROLL for (int k = 0; k < 4; k++) {
        const __m512i v = _mm512_load_si512((const void *)(wb + 64 * k));
        w[k] = _mm512_and_si512(v, m4);
        w[k + 4] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
    }
    if (!hsd_q32_form_of(t).five) return;
    const __m512i h = _mm512_load_si512((const void *)(wb + 256)), m10 = _mm512_set1_epi8(0x10);
    UNROLL for (int k = 0; k < 8; k++) { /* w | (h shifted & 0x10): ternary-logic table 0xf8 */
        const __m512i s = k < 4 ? _mm512_slli_epi32(h, 4 - k) : k > 4 ? _mm512_srli_epi32(h, k - 4) : h;
        w[k] = _mm512_ternarylogic_epi32(w[k], s, m10, 0xf8);
    }
}

/* One tile: the group at grp (nb blocks of type t) × tokens t0..t0+T; lane j of token t goes
 * to dst[t·dld + j]. pf: prefetch the stream ahead (the pack, whose groups follow each other:
 * the stream runs on into the next group by itself). */
TGT static INL void tile(const hsd_dtype ty, const uint8_t *grp, int32_t nb,
                         const hsd_mm_acts *a, int32_t t0, int pf, float *dst, int32_t dld,
                         const int T) {
    /* a pair's lines (matmul_q8.h), asked for half at each of its blocks */
    const int pl = (int)(hsd_q8p_pair_bytes(ty) / 64), ph = pl / 2;
    __m512 acc[Q8P_T];
    UNROLL for (int t = 0; t < T; t++) acc[t] = _mm512_setzero_ps();
    const int mins = hsd_q8p_has_min(ty);
    const float *xs = a->xs + t0;
    const size_t n = (size_t)a->n;
    const int8_t *xq = (const int8_t *)a->xq + (size_t)t0 * 32;
    const float *xd = a->xd + t0;
    const int32_t *xc = a->xc + t0;
    for (int32_t b = 0; b < nb; b++, xq += 32 * n, xd += n, xc += n, xs += n) {
        const uint8_t *wb = hsd_q8p_weights(grp, ty, b);
        const uint16_t *sc = hsd_q8p_scales(grp, ty, b);
        if (pf) { /* the stream Q8P_PF_BYTES ahead, into the next group (the pack's follow) */
            const uintptr_t p = (uintptr_t)hsd_q8p_weights(grp, ty, b & ~1) + Q8P_PF_BYTES;
            for (int k = (b & 1) ? ph : 0; k < ((b & 1) ? pl : ph); k++)
                _mm_prefetch((const char *)(p + 64 * (size_t)k), Q8P_PF_HINT);
        }
        const __m512 dw = _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(const void *)sc));
        const __m512 mw = mins ? _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(const void *)(sc + 2 * HSD_Q8P_ROWS)))
                               : _mm512_setzero_ps();
        __m512i w[8];
        block_weights(ty, wb, w);
        UNROLL for (int t = 0; t < T; t++) {
            const int8_t *xp = xq + 32 * t;
            __m512i s = _mm512_set1_epi32(xc[t]);
            UNROLL for (int k = 0; k < 8; k++) dpbusd_bcast(&s, w[k], xp + 4 * k);
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dw, _mm512_set1_ps(xd[t])), acc[t]);
            if (mins) acc[t] = _mm512_fmadd_ps(mw, _mm512_set1_ps(xs[t]), acc[t]);
        }
    }
    UNROLL for (int t = 0; t < T; t++) _mm512_storeu_ps(dst + (size_t)t * dld, acc[t]);
}
/* clang-format on */

typedef void (*tile_fn)(const uint8_t *, int32_t, const hsd_mm_acts *, int32_t, int, float *,
                        int32_t);
/* clang-format off */
#define DEF(q, ty, T)                                                                          \
    TGT static void tile_##q##_##T(const uint8_t *g, int32_t nb, const hsd_mm_acts *a,         \
                                   int32_t t0, int pf, float *dst, int32_t dld) {              \
        tile(ty, g, nb, a, t0, pf, dst, dld, T);                                               \
    }
#define DEFS(q, ty)                                                                            \
    DEF(q, ty, 1) DEF(q, ty, 2) DEF(q, ty, 3) DEF(q, ty, 4) DEF(q, ty, 5) DEF(q, ty, 6)        \
    DEF(q, ty, 7) DEF(q, ty, 8) DEF(q, ty, 9) DEF(q, ty, 10) DEF(q, ty, 11) DEF(q, ty, 12)     \
    DEF(q, ty, 13) DEF(q, ty, 14) DEF(q, ty, 15) DEF(q, ty, 16)
#define TILES(q)                                                                               \
    {tile_##q##_1, tile_##q##_2, tile_##q##_3, tile_##q##_4, tile_##q##_5, tile_##q##_6,       \
     tile_##q##_7, tile_##q##_8, tile_##q##_9, tile_##q##_10, tile_##q##_11, tile_##q##_12,    \
     tile_##q##_13, tile_##q##_14, tile_##q##_15, tile_##q##_16}
DEFS(q8, HSD_DT_Q8_0)
DEFS(q5, HSD_DT_Q5_0)
DEFS(q4, HSD_DT_Q4_0)
DEFS(q51, HSD_DT_Q5_1)
DEFS(q41, HSD_DT_Q4_1)
static const tile_fn tiles[5][Q8P_T] = {TILES(q8), TILES(q5), TILES(q4), TILES(q51), TILES(q41)};
/* clang-format on */
static const tile_fn *type_tiles(hsd_dtype t) {
    return tiles[t == HSD_DT_Q8_0   ? 0
                 : t == HSD_DT_Q5_0 ? 1
                 : t == HSD_DT_Q4_0 ? 2
                 : t == HSD_DT_Q5_1 ? 3
                                    : 4];
}

/* Every token of one group; lanes lo..hi of it are rows out[.. + lane − lo]. */
static void run_group(const tile_fn *tiles, const hsd_mm_acts *a, const uint8_t *grp,
                      int pf, int32_t lo, int32_t hi, float *out, int32_t ld) {
    const int32_t nb = a->cols / 32;
    float part[Q8P_T * HSD_Q8P_ROWS]; /* a group cut by the row range */
    for (int32_t t0 = 0; t0 < a->n; t0 += Q8P_T) {
        int32_t T = a->n - t0 < Q8P_T ? a->n - t0 : Q8P_T;
        if (lo == 0 && hi == HSD_Q8P_ROWS) {
            tiles[T - 1](grp, nb, a, t0, pf, out + (size_t)t0 * ld, ld);
            continue;
        }
        tiles[T - 1](grp, nb, a, t0, pf, part, HSD_Q8P_ROWS);
        for (int32_t t = 0; t < T; t++)
            memcpy(out + (size_t)(t0 + t) * ld, part + (size_t)t * HSD_Q8P_ROWS + lo,
                   (size_t)(hi - lo) * sizeof *part);
    }
}

void hsd_q8p_rows(const hsd_mm_acts *a, const hsd_mat *w, const hsd_mm_packed *pk, const int32_t *ids,
                  int32_t r0, int32_t count, float *out, int32_t ld, uint8_t *scratch) {
    const size_t gb = hsd_q8p_group_bytes(w->type, a->cols);
    const tile_fn *tl = type_tiles(w->type);
    if (pk && !ids) {
        int32_t g0 = r0 / HSD_Q8P_ROWS, g1 = (r0 + count + HSD_Q8P_ROWS - 1) / HSD_Q8P_ROWS;
        for (int32_t g = g0; g < g1; g++) {
            int32_t first = g * HSD_Q8P_ROWS; /* matrix row of lane 0 */
            int32_t lo = r0 > first ? r0 - first : 0;
            int32_t hi = r0 + count - first < HSD_Q8P_ROWS ? r0 + count - first : HSD_Q8P_ROWS;
            run_group(tl, a, pk->data + (size_t)g * gb, g + 1 < g1, lo, hi,
                      out + (first + lo - r0), ld);
        }
        return;
    }
    /* no packed copy, or a row subset: pack each group into scratch first */
    const uint8_t *rows[HSD_Q8P_ROWS];
    for (int32_t k = 0; k < count; k += HSD_Q8P_ROWS) {
        int32_t c = count - k < HSD_Q8P_ROWS ? count - k : HSD_Q8P_ROWS;
        hsd_mm_group_rows(w, ids, r0 + k, c, rows);
        hsd_q8p_pack_group(w->type, rows, c, a->cols / 32, scratch);
        run_group(tl, a, scratch, 0, 0, c, out + k, ld);
    }
}

#endif /* HSD_MM_HAVE_AVX512 */
