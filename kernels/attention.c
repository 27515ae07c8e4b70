/* Streaming attention (kernels/attention.h): one body (kernels/attention_body.h) compiled for
 * the scalar, AVX2 and AVX-512 levels; the level comes from the one CPU probe
 * (kernels/cpu_features.h) and falls back a level where the head dimension is not a multiple
 * of the vector width. */
#include "kernels/attention.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "kernels/cpu_features.h"
#include "kernels/quant.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include "kernels/simd_exp.h"
#define HSD_ATTN_X86 1
#endif

size_t hsd_attn_row_bytes(hsd_dtype type, int32_t hd) {
    if (type == HSD_DT_Q8_0) return (size_t)(hd + HSD_ATTN_Q8_BLOCK - 1) / HSD_ATTN_Q8_BLOCK * HSD_ATTN_Q8_BYTES;
    if (type == HSD_DT_Q4_0) return (size_t)(hd + HSD_ATTN_Q8_BLOCK - 1) / HSD_ATTN_Q8_BLOCK * HSD_ATTN_Q4_BYTES;
    return (size_t)hd * (type == HSD_DT_F32 ? 4 : 2);
}

/* Q8_0 keys: a query row quantised once per call (attn_q8_query), in pairs of blocks (one
 * 512-bit vector of quants): np = ceil(nb / 2) pairs, laid out as
 *   int8 q[64 np]           the quants, a missing last block zero;
 *   float dq[16 np]         per pair, the first block's d in lanes 0..7, the second's in 8..15;
 *   int32 corr[16 np]       per pair, -128 * sum q of the first block in lane 0, of the second
 *                           in lane 8, zeros elsewhere (the AVX-512 kernel's u8 offset, below).
 * 192 bytes a pair, so every part stays 64-byte aligned. */
static size_t attn_q8_stride(int32_t hd) {
    return (size_t)(hd + 2 * HSD_ATTN_Q8_BLOCK - 1) / (2 * HSD_ATTN_Q8_BLOCK) * 192;
}

/* The float caches' prefetch on AMD (kernels/attention_body.h): ATTN_PF_AHEAD blocks ahead
 * (32 KB ahead in the keys and in the values at the qwen3 shape's 256-byte rows), hint T1 (L2).
 * Measured on Zen 4 (one thread, F16, depth 2,048, every layer's cache from memory, min of 5
 * interleaved rounds; bench/notes/attention.md session 22): qwen3-0.6b shape 22.1 ms with
 * the block bursts, 14.5 with this, 16.1 with T2, 17.5 three blocks ahead, 25.6 two blocks
 * ahead into L1; the 1B shape 7.2 against 6.3. */
#define ATTN_PF_AHEAD 4
#define ATTN_PF_LOC 2

static atomic_int attn_spread = -1;

void hsd_attn_prefetch_set(int spread) {
    atomic_store_explicit(&attn_spread, spread < 0 ? -1 : spread > 0, memory_order_relaxed);
}

/* The spread prefetch where it was measured (AMD), unless a test forced either form: Intel
 * keeps the block bursts that sessions 12-16 measured there. */
static bool attn_spread_on(void) {
    const int s = atomic_load_explicit(&attn_spread, memory_order_relaxed);
    return s < 0 ? hsd_cpu_features_get()->amd : s > 0;
}

size_t hsd_attn_scratch_floats(int32_t hd, int32_t n_rows) {
    /* a zero row (a Q8_0 row of hd elements is at most hd + 16 floats), a score row per row
     * (the block + 16: whole vectors), max, sum, then 64 bytes of alignment, the quantised
     * query rows of a Q8_0 cache, and a block's keys and values copied out of a tiled cache
     * (rows, or two tiles: the same bytes) */
    return (size_t)hd + 16 + (size_t)n_rows * (HSD_ATTN_BLOCK + 16) + 2 * (size_t)n_rows + 16 +
           (size_t)n_rows * attn_q8_stride(hd) / sizeof(float) +
           2 * HSD_ATTN_BLOCK * hsd_attn_row_bytes(HSD_DT_Q8_0, hd) / sizeof(float);
}

/* Block b of an n-value row quantised to Q8_0 by hsd_quant_q8_0 (llama.cpp's rule), a short
 * last block as if padded with zeros (they change neither amax nor the other quants). */
static void attn_q8_block(const float *x, int32_t n, int32_t b, hsd_q8_0 *blk) {
    float buf[HSD_ATTN_Q8_BLOCK] = {0};
    const int32_t e0 = b * HSD_ATTN_Q8_BLOCK, ne = n - e0 < HSD_ATTN_Q8_BLOCK ? n - e0 : HSD_ATTN_Q8_BLOCK;
    memcpy(buf, x + e0, (size_t)ne * sizeof(float));
    hsd_quant_q8_0(buf, HSD_ATTN_Q8_BLOCK, blk);
}

/* The query row q (hd floats) quantised to Q8_0 by the cache's rule (hsd_quant_q8_0: llama.cpp's
 * quantize_row_q8_0), into dst (attn_q8_stride(hd) bytes, 64-byte aligned). */
static void attn_q8_query(const float *q, int32_t hd, uint8_t *dst) {
    const int32_t nb = (hd + HSD_ATTN_Q8_BLOCK - 1) / HSD_ATTN_Q8_BLOCK, np = (nb + 1) / 2;
    float *dq = (float *)(void *)(dst + 64 * (size_t)np);
    int32_t *corr = (int32_t *)(void *)(dst + 128 * (size_t)np);
    memset(dst, 0, attn_q8_stride(hd));
    for (int32_t b = 0; b < nb; b++) {
        hsd_q8_0 blk;
        attn_q8_block(q, hd, b, &blk);
        memcpy(dst + (size_t)b * HSD_ATTN_Q8_BLOCK, blk.qs, HSD_ATTN_Q8_BLOCK);
        const size_t lane = 16 * (size_t)(b / 2) + 8 * (size_t)(b % 2);
        for (int i = 0; i < 8; i++) dq[lane + i] = blk.d;
        corr[lane] = -128 * blk.sum;
    }
}

/* A Q8_0 row's quants (after its nb scales: kernels/attention.h). */
static inline __attribute__((always_inline)) const uint8_t *attn_q8_quants(const uint8_t *row, int32_t hd) {
    return row + 2 * (size_t)((hd + HSD_ATTN_Q8_BLOCK - 1) / HSD_ATTN_Q8_BLOCK);
}

/* ---- the tiled Q8_0 cache (kernels/attention.h) ------------------------------------------ */

/* Whether a cache of this type and tiled flag is laid out in tiles: Q4_0 always, Q8_0 where
 * the loader chose tiles (hsd_attn_kv_tiled), no other type. */
static inline bool attn_in_tiles(hsd_dtype type, bool tiled) {
    return type == HSD_DT_Q4_0 || (tiled && type == HSD_DT_Q8_0);
}

/* The tile holding position p of a key or value buffer k (rows of rb bytes). */
static inline const uint8_t *attn_tile_of(const void *k, int32_t p, size_t rb) {
    return (const uint8_t *)k + (size_t)(p / HSD_ATTN_KVTILE) * HSD_ATTN_KVTILE * rb;
}

/* Where byte j of lane l's quants sits in a tile (after the 32 nb bytes of scales), lb the
 * lane's quant bytes (Q8_0: 32 nb, element j as k + 128 for keys; Q4_0: 16 nb, qs byte j):
 * keys in groups of four bytes per lane, values in pairs of positions, 16 bytes a chunk. */
static inline size_t attn_tile_at(bool value, int32_t nb, int32_t lb, int l, int32_t j) {
    if (value) return 32 * (size_t)nb + ((size_t)(l / 2) * (size_t)(lb / 16) + (size_t)(j / 16)) * 32 + 2 * (size_t)(j % 16) + (size_t)(l % 2);
    return 32 * (size_t)nb + 64 * (size_t)(j / 4) + 4 * (size_t)l + (size_t)(j % 4);
}
static inline int32_t attn_lane_bytes(hsd_dtype type, int32_t nb) {
    return (type == HSD_DT_Q4_0 ? 16 : 32) * nb;
}

/* One position from lane sl of tile src to lane dl of tile dst. */
static void attn_tile_lane_copy(hsd_dtype type, bool value, uint8_t *dst, int dl, const uint8_t *src, int sl, int32_t hd) {
    const int32_t nb = (hd + HSD_ATTN_Q8_BLOCK - 1) / HSD_ATTN_Q8_BLOCK, lb = attn_lane_bytes(type, nb);
    for (int32_t b = 0; b < nb; b++) memcpy(dst + 32 * (size_t)b + 2 * dl, src + 32 * (size_t)b + 2 * sl, 2);
    if (!value) { /* four bytes at a time */
        for (int32_t j = 0; j < lb; j += 4) memcpy(dst + attn_tile_at(false, nb, lb, dl, j), src + attn_tile_at(false, nb, lb, sl, j), 4);
        return;
    }
    for (int32_t j = 0; j < lb; j++) dst[attn_tile_at(true, nb, lb, dl, j)] = src[attn_tile_at(true, nb, lb, sl, j)];
}

/* A row of the cache type (Q8_0 or Q4_0, kernels/attention.h) into lane l of a tile. */
static void attn_tile_put(hsd_dtype type, bool value, uint8_t *tile, int l, const uint8_t *row, int32_t hd) {
    const int32_t nb = (hd + HSD_ATTN_Q8_BLOCK - 1) / HSD_ATTN_Q8_BLOCK, lb = attn_lane_bytes(type, nb);
    const uint8_t bias = value || type == HSD_DT_Q4_0 ? 0 : 0x80;
    for (int32_t b = 0; b < nb; b++) memcpy(tile + 32 * (size_t)b + 2 * l, row + 2 * (size_t)b, 2);
    const uint8_t *q = row + 2 * (size_t)nb;
    for (int32_t j = 0; j < lb; j++) tile[attn_tile_at(value, nb, lb, l, j)] = q[j] ^ bias;
}
/* Lane l of a tile back as a Q8_0 row (a Q4_0 lane's nibbles n as q = n - 8: the same values
 * and, read as a Q8_0 row, the same integer dots): what the levels without the tile kernels
 * read. */
static void attn_tile_get(hsd_dtype type, bool value, const uint8_t *tile, int l, int32_t hd, uint8_t *row) {
    const int32_t nb = (hd + HSD_ATTN_Q8_BLOCK - 1) / HSD_ATTN_Q8_BLOCK, lb = attn_lane_bytes(type, nb);
    for (int32_t b = 0; b < nb; b++) memcpy(row + 2 * (size_t)b, tile + 32 * (size_t)b + 2 * l, 2);
    uint8_t *q = row + 2 * (size_t)nb;
    if (type == HSD_DT_Q4_0) {
        for (int32_t j = 0; j < lb; j++) {
            const uint8_t x = tile[attn_tile_at(value, nb, lb, l, j)];
            q[32 * (j / 16) + j % 16] = (uint8_t)((x & 15) - 8);
            q[32 * (j / 16) + j % 16 + 16] = (uint8_t)((x >> 4) - 8);
        }
        return;
    }
    const uint8_t bias = value ? 0 : 0x80;
    for (int32_t j = 0; j < lb; j++) q[j] = tile[attn_tile_at(value, nb, lb, l, j)] ^ bias;
}

/* The tile of logical positions P0..P0+15 (P0 a multiple of 16) that a block reads, where the
 * call needs positions [lo, hi) of it: in place where they are physical (below L, or a
 * chain), every line asked for; otherwise gathered into buf through the position map, the
 * lanes not needed zero (scale 0: a finite score, masked after). */
static const uint8_t *attn_block_tile(const hsd_attn_kv *kv, bool value, size_t rb, int32_t P0,
                                      int32_t lo, int32_t hi, uint8_t *buf) {
    const void *base = value ? kv->v : kv->k;
    if (lo < P0) lo = P0;
    if (hi > P0 + HSD_ATTN_KVTILE) hi = P0 + HSD_ATTN_KVTILE;
    if (lo < hi && (!kv->map || hi <= kv->L)) {
        const uint8_t *t = attn_tile_of(base, P0, rb);
        /* into L2 (T1): the tile kernels read each line a few times and soon, and with the L1
         * hint on AMD Zen 4 decode attention at depth 2,048 (qwen3-0.6b shape, one thread,
         * from memory) took 11.4-12.0 ms instead of 9.4-10.1 (bench/notes/attention.md) */
        for (size_t o = 0; o < HSD_ATTN_KVTILE * rb; o += 64) __builtin_prefetch(t + o, 0, 2);
        return t;
    }
    /* a tile no row of the call reads (the last block's, a window's first): zeros */
    static const uint8_t zero_tile[HSD_ATTN_KVTILE * HSD_ATTN_Q8_BYTES * 8]; /* hd <= 256 */
    if (lo >= hi && HSD_ATTN_KVTILE * rb <= sizeof zero_tile) return zero_tile;
    memset(buf, 0, HSD_ATTN_KVTILE * rb);
    for (int32_t p = lo; p < hi; p++) {
        const int32_t phys = p >= kv->L ? kv->L + kv->map[p - kv->L] : p;
        attn_tile_lane_copy(kv->type, value, buf, p - P0, attn_tile_of(base, phys, rb), phys % HSD_ATTN_KVTILE, kv->hd);
    }
    return buf;
}

/* Scores o[p * R + r] of P positions from j on and R rows into s[r][j + p] (the vector Q8_0
 * kernels' reduced slots). */
static inline __attribute__((always_inline)) void attn_scatter(const float *o, int P, int R,
                                                               float *const *s, int32_t j) {
    for (int p = 0; p < P; p++)
        for (int r = 0; r < R; r++) s[r][j + p] = o[p * R + r];
}

/* ---- scalar ---------------------------------------------------------------------------- */

/* Elements d.. of a cache row as fp32 (the body inlines it with a constant type). Q8_0: value
 * q * d, d the block's fp16 scale (the product of a 7-bit integer and an 11-bit significand
 * is exact in fp32, so every level gets the same bits). */
static inline __attribute__((always_inline)) float kscale_scalar(const uint8_t *row, int32_t b) {
    uint16_t h;
    memcpy(&h, row + 2 * (size_t)b, 2);
    return hsd_fp16_to_fp32(h);
}
static inline __attribute__((always_inline)) float kq8_scalar(const uint8_t *row, int32_t hd, int32_t d, float sc) {
    return (float)(int8_t)attn_q8_quants(row, hd)[d] * sc;
}
static inline __attribute__((always_inline)) float kload_scalar(hsd_dtype t, const uint8_t *row, int32_t hd, int32_t d) {
    if (t == HSD_DT_Q8_0) return kq8_scalar(row, hd, d, kscale_scalar(row, d / HSD_ATTN_Q8_BLOCK));
    if (t == HSD_DT_F32) return ((const float *)(const void *)row)[d];
    uint16_t h;
    memcpy(&h, row + 2 * (size_t)d, 2);
    return t == HSD_DT_F16 ? hsd_fp16_to_fp32(h) : hsd_bf16_to_fp32(h);
}

/* Q8_0 keys (the query quantised, kernels/attention.h): per block the exact integer dot,
 * then the fp32 sum over blocks in order. W = 1: one row at a time. */
static void scores_q8_scalar(int R, const uint8_t *const *qq, const uint8_t *const *kp,
                             int32_t hd, int32_t j0, int32_t j1, float scale, float *const *s) {
    const int32_t nb = (hd + HSD_ATTN_Q8_BLOCK - 1) / HSD_ATTN_Q8_BLOCK, np = (nb + 1) / 2;
    for (int r = 0; r < R; r++) {
        const int8_t *qs = (const int8_t *)qq[r];
        const float *dq = (const float *)(const void *)(qq[r] + 64 * (size_t)np);
        for (int32_t j = j0; j < j1; j++) {
            const int8_t *ks = (const int8_t *)(kp[j] + 2 * nb);
            float acc = 0.0f;
            for (int32_t b = 0; b < nb; b++) {
                int32_t I = 0;
                for (int32_t i = 32 * b; i < 32 * b + 32; i++) I += (int32_t)ks[i] * qs[i];
                acc = fmaf((float)I, kscale_scalar(kp[j], b) * dq[16 * (b / 2) + 8 * (b % 2)], acc);
            }
            s[r][j] = acc * scale;
        }
    }
}

#define SFX scalar
#define ATTR
#define W 1
#define VT float
#define VZERO 0.0f
#define VSET1(x) (x)
#define VLOAD(p) (*(p))
#define VSTORE(p, v) (*(p) = (v))
#define VFMA(a, b, c) fmaf((a), (b), (c))
#define VMUL(a, b) ((a) * (b))
#define VSUB(a, b) ((a) - (b))
#define VADD(a, b) ((a) + (b))
#define VMAX(a, b) fmaxf((a), (b))
#define VHSUM(v) (v)
#define VHMAX(v) (v)
#define VREDUCE(a) ((a)[0])
#define VEXP(v) expf(v)
#define KLOAD kload_scalar
#define KSCALES(row, b, n, sc)                                                                \
    do {                                                                                      \
        for (int i_ = 0; i_ < (n); i_++) (sc)[i_] = kscale_scalar(row, (b) + i_);             \
    } while (0)
#define KQ8 kq8_scalar
#include "kernels/attention_body.h"

#ifdef HSD_ATTN_X86
/* ---- AVX2 + FMA + F16C ------------------------------------------------------------------ */
#define HSD_AVX2 __attribute__((target("avx2,fma,f16c")))

HSD_AVX2 static inline float attn_hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

HSD_AVX2 static inline float attn_hmax8(__m256 v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* Lane i of the result = the sum of a[i]'s eight lanes: pairs interleaved and added
 * (unpack, then 64-bit shuffles), then the two 128-bit halves. */
HSD_AVX2 static inline __m256 attn_reduce8(const __m256 *a) {
    __m256 t[4], u[2];
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++)
        t[k] = _mm256_add_ps(_mm256_unpacklo_ps(a[2 * k], a[2 * k + 1]),
                             _mm256_unpackhi_ps(a[2 * k], a[2 * k + 1]));
#pragma GCC unroll 2
    for (int k = 0; k < 2; k++)
        u[k] = _mm256_add_ps(_mm256_shuffle_ps(t[2 * k], t[2 * k + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm256_shuffle_ps(t[2 * k], t[2 * k + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    return _mm256_add_ps(_mm256_permute2f128_ps(u[0], u[1], 0x20),
                         _mm256_permute2f128_ps(u[0], u[1], 0x31));
}

/* Q8_0: block b's scale, broadcast; elements d..d+8 (in one block) times it, exact */
HSD_AVX2 static inline __attribute__((always_inline)) __m256 kscale_avx2(const uint8_t *row, int32_t b) {
    uint16_t h;
    memcpy(&h, row + 2 * (size_t)b, 2);
    return _mm256_set1_ps(_cvtsh_ss(h));
}
HSD_AVX2 static inline __attribute__((always_inline)) __m256 kq8_avx2(const uint8_t *row, int32_t hd, int32_t d, __m256 sc) {
    const __m256i q = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(attn_q8_quants(row, hd) + d)));
    return _mm256_mul_ps(_mm256_cvtepi32_ps(q), sc);
}
/* F16C: the scalar converter's value for every half */
HSD_AVX2 static inline __attribute__((always_inline)) __m256 kload_avx2(hsd_dtype t, const uint8_t *row, int32_t hd, int32_t d) {
    if (t == HSD_DT_Q8_0) return kq8_avx2(row, hd, d, kscale_avx2(row, d / HSD_ATTN_Q8_BLOCK));
    if (t == HSD_DT_F32) return _mm256_loadu_ps((const float *)(const void *)row + d);
    const __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(row + 2 * (size_t)d));
    return t == HSD_DT_F16 ? _mm256_cvtph_ps(x)
                           : _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(x), 16));
}

/* Q8_0 keys, R rows sharing each key: per block, |k| · sign(q, k) by vpmaddubsw (pairs of
 * products of at most 127 · 127: no saturation) and vpmaddwd into 8 int32 lanes, converted
 * and scaled by d_k · d_q (fp32, one FMA per block), P = 8 / R positions at a time, reduced as
 * scores_t reduces (a score's bits depend only on its row and its key). */
HSD_AVX2 static inline __attribute__((always_inline)) void
scores_q8_avx2_t(const int R, const uint8_t *const *qq, const uint8_t *const *kp, int32_t hd,
                 int32_t j0, int32_t j1, float scale, float *const *s) {
    const int32_t nb = (hd + HSD_ATTN_Q8_BLOCK - 1) / HSD_ATTN_Q8_BLOCK, np = (nb + 1) / 2;
    const int P = 8 / R;
    const __m256i ones = _mm256_set1_epi16(1);
    const __m256 sc = _mm256_set1_ps(scale);
    for (int32_t j = j0; j < j1; j += P) {
        __m256 a[8];
#pragma GCC unroll 8
        for (int i = 0; i < 8; i++) a[i] = _mm256_setzero_ps();
        for (int32_t b = 0; b < nb; b++) {
#pragma GCC unroll 8
            for (int p = 0; p < P; p++) {
                const uint8_t *row = kp[j + p];
                const __m256i k = _mm256_loadu_si256((const __m256i *)(const void *)(row + 2 * nb + 32 * b));
                const __m256i ak = _mm256_abs_epi8(k);
                uint16_t h;
                memcpy(&h, row + 2 * (size_t)b, 2);
                const float dk = _cvtsh_ss(h);
#pragma GCC unroll 8
                for (int r = 0; r < R; r++) {
                    const __m256i q = _mm256_load_si256((const __m256i *)(const void *)(qq[r] + 32 * b));
                    const __m256i I = _mm256_madd_epi16(_mm256_maddubs_epi16(ak, _mm256_sign_epi8(q, k)), ones);
                    const float dq = ((const float *)(const void *)(qq[r] + 64 * (size_t)np))[16 * (b / 2) + 8 * (b % 2)];
                    a[p * R + r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(I), _mm256_set1_ps(dk * dq), a[p * R + r]);
                }
            }
        }
        float o[8];
        _mm256_storeu_ps(o, _mm256_mul_ps(attn_reduce8(a), sc));
        attn_scatter(o, P, R, s, j);
    }
}
/* the group size R (a power of two up to the width RMAX) as a constant */
#define ATTN_Q8_BY_R(fn, R, RMAX, ...)                                                        \
    switch (R) {                                                                              \
    case 1: fn(1, __VA_ARGS__); return;                                                       \
    case 2: fn(2, __VA_ARGS__); return;                                                       \
    case 4: fn(4, __VA_ARGS__); return;                                                       \
    case 8: fn(8 < (RMAX) ? 8 : (RMAX), __VA_ARGS__); return;                                 \
    default: fn(RMAX, __VA_ARGS__); return;                                                   \
    }
HSD_AVX2 static void scores_q8_avx2(int R, const uint8_t *const *qq, const uint8_t *const *kp,
                                    int32_t hd, int32_t j0, int32_t j1, float scale, float *const *s) {
    ATTN_Q8_BY_R(scores_q8_avx2_t, R, 8, qq, kp, hd, j0, j1, scale, s)
}

#define SFX avx2
#define ATTR HSD_AVX2
#define W 8
#define VT __m256
#define VZERO _mm256_setzero_ps()
#define VSET1(x) _mm256_set1_ps(x)
#define VLOAD(p) _mm256_loadu_ps(p)
#define VSTORE(p, v) _mm256_storeu_ps((p), (v))
#define VFMA(a, b, c) _mm256_fmadd_ps((a), (b), (c))
#define VMUL(a, b) _mm256_mul_ps((a), (b))
#define VSUB(a, b) _mm256_sub_ps((a), (b))
#define VADD(a, b) _mm256_add_ps((a), (b))
#define VMAX(a, b) _mm256_max_ps((a), (b))
#define VHSUM(v) attn_hsum8(v)
#define VHMAX(v) attn_hmax8(v)
#define VREDUCE(a) attn_reduce8(a)
#define VEXP(v) hsd_exp8(v)
#define KLOAD kload_avx2
#define KSCALES(row, b, n, sc)                                                                \
    do {                                                                                      \
        for (int i_ = 0; i_ < (n); i_++) (sc)[i_] = kscale_avx2(row, (b) + i_);               \
    } while (0)
#define KQ8 kq8_avx2
#include "kernels/attention_body.h"

/* ---- AVX-512 ---------------------------------------------------------------------------- */
#define HSD_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")))

HSD_AVX512 static inline float attn_hsum16(__m512 v) {
    __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* Lane i of the result = the sum of a[i]'s sixteen lanes: pairs interleaved and added within
 * 128-bit lanes (unpack, then 64-bit shuffles), then across 128-bit lanes twice. */
HSD_AVX512 static inline __m512 attn_reduce16(const __m512 *a) {
    __m512 t[8], u[4], v[2];
#pragma GCC unroll 8
    for (int k = 0; k < 8; k++)
        t[k] = _mm512_add_ps(_mm512_unpacklo_ps(a[2 * k], a[2 * k + 1]),
                             _mm512_unpackhi_ps(a[2 * k], a[2 * k + 1]));
#pragma GCC unroll 4
    for (int k = 0; k < 4; k++)
        u[k] = _mm512_add_ps(_mm512_shuffle_ps(t[2 * k], t[2 * k + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm512_shuffle_ps(t[2 * k], t[2 * k + 1], _MM_SHUFFLE(3, 2, 3, 2)));
#pragma GCC unroll 2
    for (int k = 0; k < 2; k++)
        v[k] = _mm512_add_ps(_mm512_shuffle_f32x4(u[2 * k], u[2 * k + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                             _mm512_shuffle_f32x4(u[2 * k], u[2 * k + 1], _MM_SHUFFLE(3, 1, 3, 1)));
    return _mm512_add_ps(_mm512_shuffle_f32x4(v[0], v[1], _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_f32x4(v[0], v[1], _MM_SHUFFLE(3, 1, 3, 1)));
}

/* as kload_avx2, 16 lanes */
HSD_AVX512 static inline __attribute__((always_inline)) __m512 kscale_avx512(const uint8_t *row, int32_t b) {
    uint16_t h;
    memcpy(&h, row + 2 * (size_t)b, 2);
    return _mm512_set1_ps(_cvtsh_ss(h));
}
/* the scales of blocks b..b+n (n <= 4, adjacent in the row) in one load and one conversion,
 * each then broadcast from memory (a load, no shuffle: the conversions of the values keep the
 * shuffle port busy) */
HSD_AVX512 static inline __attribute__((always_inline)) void kscales_avx512(const uint8_t *row, int32_t b, int n, __m512 *sc) {
    uint64_t h = 0;
    memcpy(&h, row + 2 * (size_t)b, 2 * (size_t)n);
    float f[4] __attribute__((aligned(16)));
    _mm_store_ps(f, _mm_cvtph_ps(_mm_cvtsi64_si128((long long)h)));
    for (int i = 0; i < n; i++) sc[i] = _mm512_set1_ps(f[i]);
}
HSD_AVX512 static inline __attribute__((always_inline)) __m512 kq8_avx512(const uint8_t *row, int32_t hd, int32_t d, __m512 sc) {
    const __m512i q = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(const void *)(attn_q8_quants(row, hd) + d)));
    return _mm512_mul_ps(_mm512_cvtepi32_ps(q), sc);
}
HSD_AVX512 static inline __attribute__((always_inline)) __m512 kload_avx512(hsd_dtype t, const uint8_t *row, int32_t hd, int32_t d) {
    if (t == HSD_DT_Q8_0) return kq8_avx512(row, hd, d, kscale_avx512(row, d / HSD_ATTN_Q8_BLOCK));
    if (t == HSD_DT_F32) return _mm512_loadu_ps((const float *)(const void *)row + d);
    const __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(row + 2 * (size_t)d));
    return t == HSD_DT_F16 ? _mm512_cvtph_ps(x)
                           : _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(x), 16));
}

/* Q8_0 keys on VNNI, R rows sharing each key, a pair of blocks (64 quants) per vector:
 * vpdpbusd takes unsigned × signed bytes, so the key's quants go in as k + 128 (an xor of the
 * sign bit) and each row's accumulator starts at its corr lanes, -128 · sum q of each block,
 * which leaves the exact sum k · q of a block over its 8 lanes. Then the lanes are converted,
 * scaled by d_k · d_q (lanes 0..7 the first block's, 8..15 the second's) into one fp32 chain
 * per (position, row), and reduced as scores_t reduces: a score's bits depend only on its row
 * and its key. A missing second block reads zero quants against zero q lanes. */
#define HSD_AVX512_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))
HSD_AVX512_VNNI static inline __attribute__((always_inline)) void
scores_q8_avx512_t(const int R, const uint8_t *const *qq, const uint8_t *const *kp, int32_t hd,
                   int32_t j0, int32_t j1, float scale, float *const *s) {
    const int32_t nb = (hd + HSD_ATTN_Q8_BLOCK - 1) / HSD_ATTN_Q8_BLOCK, np = (nb + 1) / 2;
    const int P = 16 / R;
    const __m512i sign = _mm512_set1_epi8((char)0x80);
    const __m512i halves = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m512 sc = _mm512_set1_ps(scale);
    for (int32_t j = j0; j < j1; j += P) {
        __m512 a[16];
#pragma GCC unroll 16
        for (int i = 0; i < 16; i++) a[i] = _mm512_setzero_ps();
        for (int32_t pb = 0; pb < np; pb++) {
            const int two = 2 * pb + 1 < nb;
#pragma GCC unroll 16
            for (int p = 0; p < P; p++) {
                const uint8_t *row = kp[j + p];
                const uint8_t *kq = row + 2 * nb + 64 * (size_t)pb;
                __m512i k;
                uint32_t h = 0;
                if (two) {
                    k = _mm512_loadu_si512((const void *)kq);
                    memcpy(&h, row + 4 * (size_t)pb, 4);
                } else {
                    k = _mm512_zextsi256_si512(_mm256_loadu_si256((const __m256i *)(const void *)kq));
                    memcpy(&h, row + 4 * (size_t)pb, 2);
                }
                k = _mm512_xor_si512(k, sign);
                const __m512 dk = _mm512_permutexvar_ps(halves, _mm512_castps128_ps512(_mm_cvtph_ps(_mm_cvtsi32_si128((int)h))));
#pragma GCC unroll 16
                for (int r = 0; r < R; r++) {
                    const uint8_t *qr = qq[r];
                    const __m512i I = _mm512_dpbusd_epi32(_mm512_load_si512((const void *)(qr + 128 * (size_t)np + 64 * (size_t)pb)),
                                                          k, _mm512_load_si512((const void *)(qr + 64 * (size_t)pb)));
                    const __m512 dq = _mm512_load_ps((const float *)(const void *)(qr + 64 * (size_t)np + 64 * (size_t)pb));
                    a[p * R + r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(I), _mm512_mul_ps(dk, dq), a[p * R + r]);
                }
            }
        }
        float o[16];
        _mm512_storeu_ps(o, _mm512_mul_ps(attn_reduce16(a), sc));
        attn_scatter(o, P, R, s, j);
    }
}
HSD_AVX512_VNNI static void scores_q8_avx512(int R, const uint8_t *const *qq, const uint8_t *const *kp,
                                             int32_t hd, int32_t j0, int32_t j1, float scale, float *const *s) {
    ATTN_Q8_BY_R(scores_q8_avx512_t, R, 16, qq, kp, hd, j0, j1, scale, s)
}

/* *s += w (u8) · the 4 signed bytes at x broadcast to every lane, the broadcast as the
 * instruction's memory operand ({1to16}): GCC emits the intrinsic's broadcast as a separate
 * instruction per use (kernels/matmul_q8_avx512.c measured what that costs) */
HSD_AVX512_VNNI static inline __attribute__((always_inline)) void attn_dpbusd_bcast(__m512i *s, __m512i w, const uint8_t *x) {
    __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(*s) : "v"(w), "m"(*(const int32_t *)(const void *)x));
}

/* Scores of R rows against the 16 positions of one key tile (kernels/attention.h), lane i for
 * position j + i: per block the exact integer dot in each lane (the tile's k + 128 times the
 * query's bytes, started at -128 · sum q), then acc = fma(I, d_k · d_q, acc) over the blocks
 * in order and acc · scale: scores_q8_scalar's arithmetic, so the bits are the scalar
 * level's and depend only on the row and the key. q4: a Q4_0 tile, each of a block's four
 * vectors giving two (its low nibbles: elements 4g.., its high ones: 16 + 4g..), the sums
 * started at -8 · sum q (the query's -128 · sum q shifted: exact): the integer dots of the
 * Q8_0 blocks q = n - 8, the other levels' arithmetic. */
HSD_AVX512_VNNI static inline __attribute__((always_inline)) void
scores_q8t_avx512_t(const int R, const int q4, const uint8_t *const *qq, const uint8_t *const *tp, int32_t hd,
                    int32_t j0, int32_t j1, float scale, float *const *s) {
    const int32_t nb = (hd + HSD_ATTN_Q8_BLOCK - 1) / HSD_ATTN_Q8_BLOCK, np = (nb + 1) / 2;
    const __m512 sc = _mm512_set1_ps(scale);
    const __m512i low = _mm512_set1_epi8(15);
    for (int32_t j = j0; j < j1; j += HSD_ATTN_KVTILE) {
        const uint8_t *tile = tp[j / HSD_ATTN_KVTILE];
        __m512 acc[16];
#pragma GCC unroll 16
        for (int r = 0; r < R; r++) acc[r] = _mm512_setzero_ps();
        for (int32_t b = 0; b < nb; b++) {
            const __m512 dk = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(tile + 32 * (size_t)b)));
            const uint8_t *kq = tile + 32 * (size_t)nb + (q4 ? 256 : 512) * (size_t)b;
            __m512i k[8];
            if (q4) {
#pragma GCC unroll 4
                for (int g = 0; g < 4; g++) {
                    const __m512i x = _mm512_loadu_si512((const void *)(kq + 64 * g));
                    k[g] = _mm512_and_si512(x, low);
                    k[g + 4] = _mm512_and_si512(_mm512_srli_epi16(x, 4), low);
                }
            } else {
#pragma GCC unroll 8
                for (int g = 0; g < 8; g++) k[g] = _mm512_loadu_si512((const void *)(kq + 64 * g));
            }
            const size_t lane = 16 * (size_t)(b / 2) + 8 * (size_t)(b % 2);
#pragma GCC unroll 16
            for (int r = 0; r < R; r++) {
                const uint8_t *qr = qq[r];
                __m512i Is = _mm512_set1_epi32(((const int32_t *)(const void *)(qr + 128 * (size_t)np))[lane] / (q4 ? 16 : 1));
#pragma GCC unroll 8
                for (int g = 0; g < 8; g++) attn_dpbusd_bcast(&Is, k[g], qr + 32 * (size_t)b + 4 * g);
                const float dq = ((const float *)(const void *)(qr + 64 * (size_t)np))[lane];
                acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(Is), _mm512_mul_ps(dk, _mm512_set1_ps(dq)), acc[r]);
            }
        }
#pragma GCC unroll 16
        for (int r = 0; r < R; r++) _mm512_storeu_ps(s[r] + j, _mm512_mul_ps(acc[r], sc));
    }
}
/* the tile score kernel with the cache type (q4) and the group size as constants */
HSD_AVX512_VNNI static void scores_tiles_avx512(int q4, int R, const uint8_t *const *qq, const uint8_t *const *tp,
                                                int32_t hd, int32_t j0, int32_t j1, float scale, float *const *s) {
    if (q4) ATTN_Q8_BY_R(scores_q8t_avx512_t, R, 16, 1, qq, tp, hd, j0, j1, scale, s)
    ATTN_Q8_BY_R(scores_q8t_avx512_t, R, 16, 0, qq, tp, hd, j0, j1, scale, s)
}
#define SCORES_Q8_TILES(...) scores_tiles_avx512(0, __VA_ARGS__)
#define SCORES_Q4_TILES(...) scores_tiles_avx512(1, __VA_ARGS__)

/* *s += w (int16 pairs) · the pair of int16 weights at x broadcast to every lane (memory
 * operand {1to16}, as attn_dpbusd_bcast) */
HSD_AVX512_VNNI static inline __attribute__((always_inline)) void attn_dpwssd_bcast(__m512i *s, __m512i w, const int32_t *x) {
    __asm__("vpdpwssd %2%{1to16%}, %1, %0" : "+v"(*s) : "v"(w), "m"(*x));
}

/* out_r += the block's values weighted by p_r over lanes [j0, j1) of two value tiles
 * (kernels/attention.h): per block b of the head dimension, the weights u_j = p_r,j · d_j,b,
 * rounded to int16 as w_j = round(u_j · 32767 / S) with S their largest; per pair of
 * positions and 16 elements one vpdpwssd (exact int32: at most 32 · 32767 · 127), then
 * out += float(sum) · (S / 32767). CG chunks of 16 elements from chunk c0, R rows, each
 * chunk's sum a chain over the pairs in order: a row's bits depend on its own weights and
 * the values only. */
HSD_AVX512_VNNI static inline __attribute__((always_inline)) void
accum_q8t_chunks(const int R, const int CG, float *const *out, const int32_t (*wq)[8][16],
                 const float (*sc)[8], const uint8_t *const *vtp, int32_t nb, int32_t c0, int32_t i0,
                 int32_t i1) {
    __m512i acc[2][8];
#pragma GCC unroll 2
    for (int r = 0; r < R; r++)
#pragma GCC unroll 8
        for (int c = 0; c < CG; c++) acc[r][c] = _mm512_setzero_si512();
    for (int32_t i = i0; i < i1; i++) {
        const uint8_t *pr = vtp[i / 8] + 32 * (size_t)nb + (size_t)(i % 8) * 64 * (size_t)nb + 32 * (size_t)c0;
#pragma GCC unroll 8
        for (int c = 0; c < CG; c++) {
            const __m512i x = _mm512_cvtepi8_epi16(_mm256_loadu_si256((const __m256i *)(const void *)(pr + 32 * c)));
#pragma GCC unroll 2
            for (int r = 0; r < R; r++) attn_dpwssd_bcast(&acc[r][c], x, &wq[r][(c0 + c) / 2][i]);
        }
    }
#pragma GCC unroll 2
    for (int r = 0; r < R; r++)
#pragma GCC unroll 8
        for (int c = 0; c < CG; c++) {
            float *o = out[r] + 16 * (size_t)(c0 + c);
            _mm512_storeu_ps(o, _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[r][c]), _mm512_set1_ps(sc[r][(c0 + c) / 2]),
                                                _mm512_loadu_ps(o)));
        }
}

/* accum_q8t_chunks for a Q4_0 value tile: BG blocks from b0, each 32 bytes per pair of
 * positions widened to int16 (low nibbles: the block's first 16 elements, high: the next 16),
 * each sum started at the row's offset for the block (-8 · the sum of its weights, so that
 * the nibbles n count as n - 8), then as accum_q8t_chunks. nc: the head dimension's chunks of
 * 16 (a last block may hold only one). */
HSD_AVX512_VNNI static inline __attribute__((always_inline)) void
accum_q4t_blocks(const int R, const int BG, float *const *out, const int32_t (*wq)[8][16],
                 const float (*sc)[8], const int32_t (*off)[8], const uint8_t *const *vtp, int32_t nb,
                 int32_t nc, int32_t b0, int32_t i0, int32_t i1) {
    __m512i acc[2][8];
    const __m512i low = _mm512_set1_epi16(15);
#pragma GCC unroll 2
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int bb = 0; bb < BG; bb++) acc[r][2 * bb] = acc[r][2 * bb + 1] = _mm512_set1_epi32(off[r][b0 + bb]);
    for (int32_t i = i0; i < i1; i++) {
        const uint8_t *pr = vtp[i / 8] + 32 * (size_t)nb + ((size_t)(i % 8) * (size_t)nb + (size_t)b0) * 32;
#pragma GCC unroll 4
        for (int bb = 0; bb < BG; bb++) {
            const __m512i x = _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)(const void *)(pr + 32 * bb)));
            const __m512i lo = _mm512_and_si512(x, low), hi = _mm512_srli_epi16(x, 4);
#pragma GCC unroll 2
            for (int r = 0; r < R; r++) {
                attn_dpwssd_bcast(&acc[r][2 * bb], lo, &wq[r][b0 + bb][i]);
                attn_dpwssd_bcast(&acc[r][2 * bb + 1], hi, &wq[r][b0 + bb][i]);
            }
        }
    }
#pragma GCC unroll 2
    for (int r = 0; r < R; r++)
#pragma GCC unroll 8
        for (int c = 0; c < 2 * BG; c++) {
            if (2 * b0 + c >= nc) break;
            float *o = out[r] + 16 * (size_t)(2 * b0 + c);
            _mm512_storeu_ps(o, _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[r][c]), _mm512_set1_ps(sc[r][b0 + c / 2]),
                                                _mm512_loadu_ps(o)));
        }
}
/* The values of a Q8_0 (q4: Q4_0) tile pair: the int16 weights per row and block, then the
 * integer sums (accum_q8t_chunks, accum_q4t_blocks). A Q4_0 scale may be negative (llama.cpp's
 * d = max / -8), so S is the largest |weight| there. */
HSD_AVX512_VNNI static inline __attribute__((always_inline)) void
accum_q8t_avx512_t(const int R, const int q4, float *const *out, float *const *p, const uint8_t *const *vtp,
                   int32_t hd, int32_t j0, int32_t j1) {
    const int32_t nb = (hd + HSD_ATTN_Q8_BLOCK - 1) / HSD_ATTN_Q8_BLOCK, nc = hd / 16;
    int32_t wq[2][8][16] __attribute__((aligned(64))); /* [row][block][pair]: two int16 weights */
    float sc[2][8];
    int32_t off[2][8]; /* Q4_0: -8 · the sum of the block's weights */
    const __m512 absmask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
    /* the lanes of the row's range */
    const uint64_t m = (j1 >= 64 ? ~0ull : (1ull << j1) - 1) & ~((1ull << j0) - 1);
    const __mmask16 m0 = (__mmask16)(m & 0xffff), m1 = (__mmask16)((m >> 16) & 0xffff);
    for (int32_t b = 0; b < nb; b++) {
        const __m512 d0 = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(vtp[0] + 32 * (size_t)b)));
        const __m512 d1 = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(vtp[1] + 32 * (size_t)b)));
#pragma GCC unroll 2
        for (int r = 0; r < R; r++) {
            const __m512 u0 = _mm512_maskz_mul_ps(m0, _mm512_loadu_ps(p[r]), d0);
            const __m512 u1 = _mm512_maskz_mul_ps(m1, _mm512_loadu_ps(p[r] + 16), d1);
            const float S = q4 ? _mm512_reduce_max_ps(_mm512_max_ps(_mm512_and_ps(u0, absmask), _mm512_and_ps(u1, absmask)))
                               : _mm512_reduce_max_ps(_mm512_max_ps(u0, u1));
            if (!(S > 0.0f)) { /* nothing visible, or all weights 0 */
                memset(wq[r][b], 0, sizeof wq[r][b]);
                sc[r][b] = 0.0f, off[r][b] = 0;
                continue;
            }
            /* 32767 / S overflows below S ~ 1e-34 (tiny values far from the running max):
             * there the weights are scaled by 2^100 first, exactly */
            const float big = S < 0x1p-100f ? 0x1p100f : 1.0f;
            const __m512 inv = _mm512_set1_ps(32767.0f / (S * big)), bv = _mm512_set1_ps(big);
            const __m512i w0 = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_mul_ps(u0, bv), inv));
            const __m512i w1 = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_mul_ps(u1, bv), inv));
            _mm256_store_si256((__m256i *)(void *)&wq[r][b][0], _mm512_cvtepi32_epi16(w0));
            _mm256_store_si256((__m256i *)(void *)&wq[r][b][8], _mm512_cvtepi32_epi16(w1));
            if (q4) off[r][b] = -8 * _mm512_reduce_add_epi32(_mm512_add_epi32(w0, w1));
            sc[r][b] = S * big / 32767.0f / big;
        }
    }
    const int32_t i0 = j0 / 2, i1 = (j1 + 1) / 2; /* the pairs that hold the range */
    if (q4) {
        int32_t b0 = 0;
        for (; b0 + 4 <= nb; b0 += 4) accum_q4t_blocks(R, 4, out, (const int32_t (*)[8][16])wq, (const float (*)[8])sc, (const int32_t (*)[8])off, vtp, nb, nc, b0, i0, i1);
        for (; b0 + 2 <= nb; b0 += 2) accum_q4t_blocks(R, 2, out, (const int32_t (*)[8][16])wq, (const float (*)[8])sc, (const int32_t (*)[8])off, vtp, nb, nc, b0, i0, i1);
        for (; b0 < nb; b0++) accum_q4t_blocks(R, 1, out, (const int32_t (*)[8][16])wq, (const float (*)[8])sc, (const int32_t (*)[8])off, vtp, nb, nc, b0, i0, i1);
        return;
    }
    int32_t c0 = 0;
    for (; c0 + 8 <= nc; c0 += 8) accum_q8t_chunks(R, 8, out, (const int32_t (*)[8][16])wq, (const float (*)[8])sc, vtp, nb, c0, i0, i1);
    for (; c0 + 4 <= nc; c0 += 4) accum_q8t_chunks(R, 4, out, (const int32_t (*)[8][16])wq, (const float (*)[8])sc, vtp, nb, c0, i0, i1);
    for (; c0 < nc; c0++) accum_q8t_chunks(R, 1, out, (const int32_t (*)[8][16])wq, (const float (*)[8])sc, vtp, nb, c0, i0, i1);
}
/* the value tile kernel with the cache type (q4) and the row count as constants */
HSD_AVX512_VNNI static void accum_tiles_avx512(int q4, int R, float *const *out, float *const *p,
                                               const uint8_t *const *vtp, int32_t hd, int32_t j0, int32_t j1) {
    if (q4 && R == 2) accum_q8t_avx512_t(2, 1, out, p, vtp, hd, j0, j1);
    else if (q4) accum_q8t_avx512_t(1, 1, out, p, vtp, hd, j0, j1);
    else if (R == 2) accum_q8t_avx512_t(2, 0, out, p, vtp, hd, j0, j1);
    else accum_q8t_avx512_t(1, 0, out, p, vtp, hd, j0, j1);
}
#define ACCUM_Q8_TILES(...) accum_tiles_avx512(0, __VA_ARGS__)
#define ACCUM_Q4_TILES(...) accum_tiles_avx512(1, __VA_ARGS__)

#define SFX avx512
#define ATTR HSD_AVX512
#define W 16
#define VT __m512
#define VZERO _mm512_setzero_ps()
#define VSET1(x) _mm512_set1_ps(x)
#define VLOAD(p) _mm512_loadu_ps(p)
#define VSTORE(p, v) _mm512_storeu_ps((p), (v))
#define VFMA(a, b, c) _mm512_fmadd_ps((a), (b), (c))
#define VMUL(a, b) _mm512_mul_ps((a), (b))
#define VSUB(a, b) _mm512_sub_ps((a), (b))
#define VADD(a, b) _mm512_add_ps((a), (b))
#define VMAX(a, b) _mm512_max_ps((a), (b))
#define VHSUM(v) attn_hsum16(v)
#define VHMAX(v) _mm512_reduce_max_ps(v)
#define VREDUCE(a) attn_reduce16(a)
#define VEXP(v) hsd_exp16(v)
#define KLOAD kload_avx512
#define KSCALES kscales_avx512
#define KQ8 kq8_avx512
#include "kernels/attention_body.h"

HSD_AVX2 static void store_f16_avx2(uint16_t *dst, const float *src, int32_t n) {
    int32_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(dst + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    for (; i < n; i++) dst[i] = hsd_fp32_to_fp16(src[i]);
}
#endif

void hsd_attn_rows(const hsd_attn_kv *kv, const hsd_attn_row *rows, int32_t n_rows, float scale,
                   float softcap, float *scratch) {
    if (n_rows <= 0) return;
#ifdef HSD_ATTN_X86
    hsd_cpu_level lv = hsd_cpu_level_active();
    if (lv >= HSD_CPU_AVX512 && kv->hd % 16 == 0) {
        attn_rows_avx512(kv, rows, n_rows, scale, softcap, scratch);
        return;
    }
    if (lv >= HSD_CPU_AVX2 && kv->hd % 8 == 0) {
        attn_rows_avx2(kv, rows, n_rows, scale, softcap, scratch);
        return;
    }
#endif
    attn_rows_scalar(kv, rows, n_rows, scale, softcap, scratch);
}

/* llama.cpp's Q8_0 as its CPU backend writes a Q8_0 KV cache (d = fp16(amax / 127),
 * q = round-half-even(x * 127 / amax)): kernels/quant_act.c's block rule, checked against
 * llama.cpp in tests/test_gguf_quant.c; the row laid out as kernels/attention.h says. */
static void store_q8_0(uint8_t *dst, const float *src, int32_t n) {
    const int32_t nb = (n + HSD_ATTN_Q8_BLOCK - 1) / HSD_ATTN_Q8_BLOCK;
    for (int32_t b = 0; b < nb; b++) {
        hsd_q8_0 blk;
        attn_q8_block(src, n, b, &blk);
        const uint16_t h = hsd_fp32_to_fp16(blk.d); /* blk.d is an fp16 value: exact */
        memcpy(dst + 2 * (size_t)b, &h, 2);
        memcpy(dst + 2 * (size_t)nb + (size_t)b * HSD_ATTN_Q8_BLOCK, blk.qs, HSD_ATTN_Q8_BLOCK);
    }
}

/* llama.cpp's Q4_0 as its CPU backend writes a q4_0 KV cache (quantize_row_q4_0_ref, restated
 * from its description: max = the element of largest |x| (the first such), d = max / -8,
 * n = min(15, trunc(x / d + 8.5)), d stored as fp16; the quotient by the unrounded d), a short
 * last block as if padded with zeros; the row laid out as kernels/attention.h says. A NaN
 * element stores n = 8 (value 0), where llama.cpp's conversion is undefined. */
static void store_q4_0(uint8_t *dst, const float *src, int32_t n) {
    const int32_t nb = (n + HSD_ATTN_Q8_BLOCK - 1) / HSD_ATTN_Q8_BLOCK;
    for (int32_t b = 0; b < nb; b++) {
        float x[HSD_ATTN_Q8_BLOCK] = {0}, amax = 0.0f, max = 0.0f;
        const int32_t e0 = b * HSD_ATTN_Q8_BLOCK, ne = n - e0 < HSD_ATTN_Q8_BLOCK ? n - e0 : HSD_ATTN_Q8_BLOCK;
        memcpy(x, src + e0, (size_t)ne * sizeof(float));
        for (int i = 0; i < HSD_ATTN_Q8_BLOCK; i++)
            if (amax < fabsf(x[i])) amax = fabsf(x[i]), max = x[i];
        const float d = max / -8.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        const uint16_t h = hsd_fp32_to_fp16(d);
        memcpy(dst + 2 * (size_t)b, &h, 2);
        uint8_t nib[HSD_ATTN_Q8_BLOCK];
        for (int i = 0; i < HSD_ATTN_Q8_BLOCK; i++) {
            const float t = x[i] * id + 8.5f; /* in [0.5, 16.5] for finite x */
            nib[i] = t >= 15.0f ? 15 : t >= 0.0f ? (uint8_t)t : 8;
        }
        for (int i = 0; i < 16; i++) dst[2 * (size_t)nb + 16 * (size_t)b + i] = (uint8_t)(nib[i] | nib[i + 16] << 4);
    }
}

void hsd_attn_store(hsd_dtype type, void *dst, const float *src, int32_t n) {
    uint16_t *h = dst;
    if (type == HSD_DT_Q8_0) {
        store_q8_0(dst, src, n);
    } else if (type == HSD_DT_Q4_0) {
        store_q4_0(dst, src, n);
    } else if (type == HSD_DT_F32) {
        memcpy(dst, src, (size_t)n * sizeof(float));
    } else if (type == HSD_DT_F16) {
#ifdef HSD_ATTN_X86
        /* F16C's conversion rounds to nearest even as hsd_fp32_to_fp16 does: the same bits */
        if (hsd_cpu_level_active() >= HSD_CPU_AVX2) {
            store_f16_avx2(h, src, n);
            return;
        }
#endif
        for (int32_t i = 0; i < n; i++) h[i] = hsd_fp32_to_fp16(src[i]);
    } else {
        for (int32_t i = 0; i < n; i++) h[i] = hsd_fp32_to_bf16(src[i]);
    }
}

bool hsd_attn_kv_tiled(hsd_dtype type, int32_t hd) {
    if (type == HSD_DT_Q4_0) return true;
#ifdef HSD_ATTN_X86
    return type == HSD_DT_Q8_0 && hd % 16 == 0 && hd <= 256 && hsd_cpu_level_active() >= HSD_CPU_AVX512;
#else
    (void)type, (void)hd;
    return false;
#endif
}

void hsd_attn_store_at(hsd_dtype type, bool tiled, bool value, void *buf, int32_t p, const float *src,
                       int32_t hd) {
    const size_t rb = hsd_attn_row_bytes(type, hd);
    if (!attn_in_tiles(type, tiled)) {
        hsd_attn_store(type, (char *)buf + (size_t)p * rb, src, hd);
        return;
    }
    uint8_t row[HSD_ATTN_Q8_BYTES * 128]; /* hd <= 4,096 (models/tf_load.c) */
    if (rb > sizeof row) return;
    hsd_attn_store(type, row, src, hd);
    attn_tile_put(type, value, (uint8_t *)(uintptr_t)attn_tile_of(buf, p, rb), p % HSD_ATTN_KVTILE, row, hd);
}

void hsd_attn_copy_at(hsd_dtype type, bool tiled, bool value, void *buf, int32_t dst, int32_t src,
                      int32_t hd) {
    const size_t rb = hsd_attn_row_bytes(type, hd);
    if (dst == src) return;
    if (!attn_in_tiles(type, tiled)) {
        memcpy((char *)buf + (size_t)dst * rb, (const char *)buf + (size_t)src * rb, rb);
        return;
    }
    attn_tile_lane_copy(type, value, (uint8_t *)(uintptr_t)attn_tile_of(buf, dst, rb), dst % HSD_ATTN_KVTILE,
                        attn_tile_of(buf, src, rb), src % HSD_ATTN_KVTILE, hd);
}
