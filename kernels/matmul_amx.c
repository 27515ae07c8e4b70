/* BF16 and Q8_0 products on AMX tiles (layouts, arithmetic and why: matmul_amx.h). The build
 * targets baseline x86-64; these functions carry their own target attribute and run only when
 * kernels/cpu_features.c found AMX and the OS granted tile data. */
#include "kernels/matmul_amx.h"

#ifdef HSD_MM_HAVE_AVX512

#include <immintrin.h>
#include <string.h>

#include "kernels/matmul_bf16p.h"
#include "kernels/matmul_kq.h"
#include "kernels/matmul_kq_unpack.h"
#include "kernels/matmul_q8.h"

#ifdef HSD_AMX_EMU /* test builds: the tile instructions in C (why: matmul_amx_emu.h) */
#include "kernels/matmul_amx_emu.h"
#else
/* asm with the whole struct as its operand: GCC 12 drops the stores to rows and colsb before
 * _tile_loadconfig (it sees the builtin read only the first bytes), and ldtilecfg then faults
 * on a configuration without rows */
#define HSD_AMX_LDTILECFG(p) __asm__ volatile("ldtilecfg %0" : : "m"(*(p)))
#define HSD_AMX_STTILECFG(p) __asm__ volatile("sttilecfg %0" : "=m"(*(p)))
#endif

#define TGT                                                                                        \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx512vnni,fma,f16c,"   \
                          "amx-tile,amx-bf16,amx-int8")))
#define INL HSD_MM_INLINE
#define UNROLL HSD_MM_UNROLL

#define AMX_T 16 /* tokens per tile (A and C rows), at most */
#define R HSD_MM_PACK_ROWS

/* The tile configuration (palette 1): tiles 0..3 C (one per group), 4 A, 5..7 B. */
TGT static void configure(int T, int a_colsb, int b_rows) {
    hsd_amx_cfg c;
    memset(&c, 0, sizeof c);
    c.palette = 1;
    for (int i = 0; i < 4; i++) c.rows[i] = (uint8_t)T, c.colsb[i] = 64;
    c.rows[4] = (uint8_t)T, c.colsb[4] = (uint16_t)a_colsb;
    for (int i = 5; i < 8; i++) c.rows[i] = (uint8_t)b_rows, c.colsb[i] = 64;
    HSD_AMX_LDTILECFG(&c);
}

/* The calling thread's tile configuration before a product, put back after it: another
 * library on the same thread (llama.cpp's AMX kernels, in one process with hsd) may have
 * configured the tiles once and rely on it — releasing them under it made its next tile
 * instruction fault (SIGILL in test_model_arch_llama_cpp). Unconfigured (palette 0): release. */
TGT static void save_cfg(hsd_amx_cfg *prev) {
    HSD_AMX_STTILECFG(prev);
}
TGT static void restore_cfg(const hsd_amx_cfg *prev) {
    if (prev->palette)
        HSD_AMX_LDTILECFG(prev);
    else
        _tile_release();
}

void hsd_amx_tiles_save(hsd_amx_cfg *prev) {
    save_cfg(prev);
}
void hsd_amx_tiles_restore(const hsd_amx_cfg *prev) {
    restore_cfg(prev);
}
void hsd_amx_tiles_set(int T) {
    configure(T, 64, 16);
}

TGT static INL __m512i ld512(const uint8_t *p) {
    return _mm512_load_si512((const void *)p);
}

/* ---- BF16 ------------------------------------------------------------------------------ */

size_t hsd_amx_bf16_acts_bytes(int32_t n, int32_t cols) {
    return hsd_mm_align64((size_t)n * (size_t)cols * 2);
}

TGT void hsd_amx_bf16_prepare(hsd_mm_acts *a, void *buf) {
    uint16_t *xb = buf;
    const size_t N = (size_t)a->n * (size_t)a->cols;
    size_t i = 0;
    for (; i + 32 <= N; i += 32) /* cols % 32 == 0: never across two tokens' ends unevenly */
        _mm512_storeu_si512((void *)(xb + i), (__m512i)_mm512_cvtne2ps_pbh(
                                                  _mm512_loadu_ps(a->x + i + 16),
                                                  _mm512_loadu_ps(a->x + i)));
    for (; i < N; i++) xb[i] = hsd_fp32_to_bf16(a->x[i]);
    a->xb = xb;
}

/* G (1..4) groups at grp (gb apart) × the T tokens configured, their bf16 rows at xb (xs
 * bytes apart): lane j of group g, token t goes to dst[t·dld + 16g + j]. */
TGT static INL void bf16_tile(const uint8_t *grp, size_t gb, int32_t K, const uint16_t *xb,
                              size_t xs, float *dst, int32_t dld, const int G) {
    _tile_zero(0);
    if (G > 1) _tile_zero(1);
    if (G > 2) _tile_zero(2);
    if (G > 3) _tile_zero(3);
    for (int32_t k = 0; k < K; k++) {
        const uint8_t *wp = grp + 1024 * (size_t)k; /* 16 pair vectors = 32 columns */
        _tile_loadd(4, xb + 32 * (size_t)k, xs);
        _tile_loadd(5, wp, 64);
        _tile_dpbf16ps(0, 4, 5);
        if (G > 1) {
            _tile_loadd(6, wp + gb, 64);
            _tile_dpbf16ps(1, 4, 6);
        }
        if (G > 2) {
            _tile_loadd(7, wp + 2 * gb, 64);
            _tile_dpbf16ps(2, 4, 7);
        }
        if (G > 3) {
            _tile_loadd(5, wp + 3 * gb, 64);
            _tile_dpbf16ps(3, 4, 5);
        }
    }
    const size_t ds = (size_t)dld * sizeof(float);
    _tile_stored(0, dst, ds);
    if (G > 1) _tile_stored(1, dst + 16, ds);
    if (G > 2) _tile_stored(2, dst + 32, ds);
    if (G > 3) _tile_stored(3, dst + 48, ds);
}

typedef void (*bf16_fn)(const uint8_t *, size_t, int32_t, const uint16_t *, size_t, float *,
                        int32_t);
#define DEFB(G)                                                                                    \
    TGT static void bf16_tile_##G(const uint8_t *grp, size_t gb, int32_t K, const uint16_t *xb,    \
                                  size_t xs, float *dst, int32_t dld) {                            \
        bf16_tile(grp, gb, K, xb, xs, dst, dld, G);                                                \
    }
DEFB(1)
DEFB(4)

/* k groups at grp (gb apart), lanes lo..hi of a single group when k == 1 and the range cuts it
 * (rows out[.. + lane − lo]), every token. */
TGT static void bf16_groups(const hsd_mm_acts *a, const uint8_t *grp, size_t gb, int32_t k,
                            int32_t lo, int32_t hi, float *out, int32_t ld) {
    const int32_t K = a->cols / 32;
    const size_t xs = (size_t)a->cols * 2;
    float part[AMX_T * R];
    int cfgT = 0;
    hsd_amx_cfg prev;
    save_cfg(&prev);
    for (int32_t t0 = 0; t0 < a->n; t0 += AMX_T) {
        int32_t T = a->n - t0 < AMX_T ? a->n - t0 : AMX_T;
        if (T != cfgT) configure(T, 64, 16), cfgT = T;
        const uint16_t *xb = a->xb + (size_t)t0 * a->cols;
        float *o = out + (size_t)t0 * ld;
        if (lo != 0 || hi != R) {
            bf16_tile_1(grp, gb, K, xb, xs, part, R);
            for (int32_t t = 0; t < T; t++)
                memcpy(o + (size_t)t * ld, part + (size_t)t * R + lo,
                       (size_t)(hi - lo) * sizeof *part);
            continue;
        }
        int32_t g = 0;
        for (; g + 4 <= k; g += 4) bf16_tile_4(grp + (size_t)g * gb, gb, K, xb, xs, o + R * g, ld);
        for (; g < k; g++) bf16_tile_1(grp + (size_t)g * gb, gb, K, xb, xs, o + R * g, ld);
    }
    restore_cfg(&prev);
}

void hsd_amx_bf16_rows(const hsd_mm_acts *a, const hsd_mat *w, const hsd_mm_packed *pk,
                       const int32_t *ids, int32_t r0, int32_t count, float *out, int32_t ld,
                       uint8_t *scratch) {
    const size_t gb = hsd_bf16p_group_bytes(a->cols);
    if (pk && !ids) {
        hsd_mm_span sp[3];
        for (int i = 0, n = hsd_mm_group_spans(r0, count, sp); i < n; i++)
            bf16_groups(a, pk->data + (size_t)sp[i].g * gb, gb, sp[i].n_groups, sp[i].lo,
                        sp[i].hi, out + sp[i].out_off, ld);
        return;
    }
    const uint8_t *rows[R];
    for (int32_t k = 0; k < count; k += R) {
        int32_t c = count - k < R ? count - k : R;
        hsd_mm_group_rows(w, ids, r0 + k, c, rows);
        hsd_bf16p_pack_group(rows, c, a->cols, scratch);
        bf16_groups(a, scratch, gb, 1, 0, c, out + k, ld);
    }
}

/* ---- Q8_0 ------------------------------------------------------------------------------ */

/* Software prefetch distance in blocks of a group's stream: 4 blocks (2 KB). 24 (12 KB, the
 * VNNI kernel's distance) made forward(8..16) of the Q8_0 1B file 3-5% slower (session 15). */
#define AMXQ_PF_BLOCKS 4

/* clang-format off */
/* G groups at grp (gb apart, nb blocks) × tokens t0..t0+T (configured): lane j of group g,
 * token t goes to dst[t·dld + 16g + j]. Per block: each group's int32 tile, then per token
 * acc = fma(float(tile + c), d_w · d_x, acc) as matmul_q8_avx512.c. pf: prefetch ahead. */
TGT static INL void q8_tile(const uint8_t *grp, size_t gb, int32_t nb, const hsd_mm_acts *a,
                            int32_t t0, int pf, float *dst, int32_t dld, const int G, const int T) {
    __m512 acc[4][AMX_T];
    int32_t ib[4][AMX_T * 16] __attribute__((aligned(64)));
    UNROLL for (int g = 0; g < G; g++) UNROLL for (int t = 0; t < T; t++) acc[g][t] = _mm512_setzero_ps();
    const size_t n = (size_t)a->n;
    const int8_t *xq = (const int8_t *)a->xq + (size_t)t0 * 32;
    const float *xd = a->xd + t0;
    const int32_t *xc = a->xc + t0;
    for (int32_t b = 0; b < nb; b++, xq += 32 * n, xd += n, xc += n) {
        const uint8_t *wb = hsd_q8p_weights(grp, HSD_DT_Q8_0, b);
        if (pf) { /* block b + AMXQ_PF_BLOCKS of each group (or of the G groups after these),
                   * and at a pair's first block its scales' line (matmul_q8.h) */
            const int32_t ahead = b + AMXQ_PF_BLOCKS, ab = ahead < nb ? ahead : ahead - nb;
            UNROLL for (int g = 0; g < G; g++) {
                const uint8_t *gp = grp + (ahead < nb ? (size_t)g : (size_t)(G + g)) * gb;
                const uintptr_t p = (uintptr_t)hsd_q8p_weights(gp, HSD_DT_Q8_0, ab);
                UNROLL for (int k = 0; k < 8; k++) _mm_prefetch((const char *)(p + 64 * k), _MM_HINT_T0);
                if (!(ab & 1)) _mm_prefetch((const char *)hsd_q8p_scales(gp, HSD_DT_Q8_0, ab), _MM_HINT_T0);
            }
        }
        _tile_loadd(4, xq, 32);
        _tile_zero(0);
        _tile_loadd(5, wb, 64);
        _tile_dpbsud(0, 4, 5);
        if (G > 1) {
            _tile_zero(1);
            _tile_loadd(6, wb + gb, 64);
            _tile_dpbsud(1, 4, 6);
        }
        if (G > 2) {
            _tile_zero(2);
            _tile_loadd(7, wb + 2 * gb, 64);
            _tile_dpbsud(2, 4, 7);
        }
        if (G > 3) {
            _tile_zero(3);
            _tile_loadd(5, wb + 3 * gb, 64);
            _tile_dpbsud(3, 4, 5);
        }
        _tile_stored(0, ib[0], 64);
        if (G > 1) _tile_stored(1, ib[1], 64);
        if (G > 2) _tile_stored(2, ib[2], 64);
        if (G > 3) _tile_stored(3, ib[3], 64);
        UNROLL for (int g = 0; g < G; g++) {
            const uint16_t *sc = hsd_q8p_scales(grp + g * gb, HSD_DT_Q8_0, b);
            const __m512 dw = _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(const void *)sc));
            UNROLL for (int t = 0; t < T; t++) {
                __m512i s = _mm512_add_epi32(_mm512_load_si512((const void *)(ib[g] + 16 * t)), _mm512_set1_epi32(xc[t]));
                acc[g][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dw, _mm512_set1_ps(xd[t])), acc[g][t]);
            }
        }
    }
    UNROLL for (int g = 0; g < G; g++)
        UNROLL for (int t = 0; t < T; t++) _mm512_storeu_ps(dst + (size_t)t * dld + 16 * g, acc[g][t]);
}
/* clang-format on */

typedef void (*q8_fn)(const uint8_t *, size_t, int32_t, const hsd_mm_acts *, int32_t, int,
                      float *, int32_t);
#define DEFQ(G, T)                                                                                 \
    TGT static void q8_tile_##G##_##T(const uint8_t *grp, size_t gb, int32_t nb,                    \
                                      const hsd_mm_acts *a, int32_t t0, int pf, float *dst,         \
                                      int32_t dld) {                                               \
        q8_tile(grp, gb, nb, a, t0, pf, dst, dld, G, T);                                           \
    }
/* G·T <= 16 accumulators: four groups up to 4 tokens, two up to 8, one up to 16 */
DEFQ(4, 1) DEFQ(4, 2) DEFQ(4, 3) DEFQ(4, 4) DEFQ(2, 5) DEFQ(2, 6) DEFQ(2, 7) DEFQ(2, 8)
DEFQ(1, 1) DEFQ(1, 2) DEFQ(1, 3) DEFQ(1, 4) DEFQ(1, 5) DEFQ(1, 6) DEFQ(1, 7) DEFQ(1, 8)
DEFQ(1, 9) DEFQ(1, 10) DEFQ(1, 11) DEFQ(1, 12) DEFQ(1, 13) DEFQ(1, 14) DEFQ(1, 15) DEFQ(1, 16)
static const q8_fn q8_wide[8] = {q8_tile_4_1, q8_tile_4_2, q8_tile_4_3, q8_tile_4_4,
                                 q8_tile_2_5, q8_tile_2_6, q8_tile_2_7, q8_tile_2_8};
static const q8_fn q8_one[AMX_T] = {
    q8_tile_1_1, q8_tile_1_2,  q8_tile_1_3,  q8_tile_1_4,  q8_tile_1_5,  q8_tile_1_6,
    q8_tile_1_7, q8_tile_1_8,  q8_tile_1_9,  q8_tile_1_10, q8_tile_1_11, q8_tile_1_12,
    q8_tile_1_13, q8_tile_1_14, q8_tile_1_15, q8_tile_1_16};

/* As bf16_groups, for Q8_0 groups. */
TGT static void q8_groups(const hsd_mm_acts *a, const uint8_t *grp, size_t gb, int32_t k,
                          int pf, int32_t lo, int32_t hi, float *out, int32_t ld) {
    const int32_t nb = a->cols / 32;
    float part[AMX_T * R];
    int cfgT = 0;
    hsd_amx_cfg prev;
    save_cfg(&prev);
    for (int32_t t0 = 0; t0 < a->n; t0 += AMX_T) {
        int32_t T = a->n - t0 < AMX_T ? a->n - t0 : AMX_T;
        if (T != cfgT) configure(T, 32, 8), cfgT = T;
        float *o = out + (size_t)t0 * ld;
        if (lo != 0 || hi != R) {
            q8_one[T - 1](grp, gb, nb, a, t0, 0, part, R);
            for (int32_t t = 0; t < T; t++)
                memcpy(o + (size_t)t * ld, part + (size_t)t * R + lo,
                       (size_t)(hi - lo) * sizeof *part);
            continue;
        }
        int32_t G = T <= 4 ? 4 : T <= 8 ? 2 : 1, g = 0;
        for (; G > 1 && g + G <= k; g += G)
            q8_wide[T - 1](grp + (size_t)g * gb, gb, nb, a, t0, pf, o + R * g, ld);
        for (; g < k; g++) q8_one[T - 1](grp + (size_t)g * gb, gb, nb, a, t0, pf, o + R * g, ld);
    }
    restore_cfg(&prev);
}

void hsd_amx_q8_rows(const hsd_mm_acts *a, const hsd_mat *w, const hsd_mm_packed *pk,
                     const int32_t *ids, int32_t r0, int32_t count, float *out, int32_t ld,
                     uint8_t *scratch) {
    const size_t gb = hsd_q8p_group_bytes(HSD_DT_Q8_0, a->cols);
    if (pk && !ids) {
        hsd_mm_span sp[3];
        for (int i = 0, n = hsd_mm_group_spans(r0, count, sp); i < n; i++) {
            const bool whole = sp[i].lo == 0 && sp[i].hi == R; /* prefetch ahead only there */
            q8_groups(a, pk->data + (size_t)sp[i].g * gb, gb, sp[i].n_groups, whole, sp[i].lo,
                      sp[i].hi, out + sp[i].out_off, ld);
        }
        return;
    }
    const uint8_t *rows[R];
    for (int32_t k = 0; k < count; k += R) {
        int32_t c = count - k < R ? count - k : R;
        hsd_mm_group_rows(w, ids, r0 + k, c, rows);
        hsd_q8p_pack_group(HSD_DT_Q8_0, rows, c, a->cols / 32, scratch);
        q8_groups(a, scratch, gb, 1, 0, 0, c, out + k, ld);
    }
}

/* ---- k-quant activations ---------------------------------------------------------------- */

size_t hsd_amx_kq_acts_bytes(int32_t n, int32_t cols) {
    const size_t chunks = ((size_t)n + AMX_T - 1) / AMX_T;
    return hsd_mm_align64(chunks * AMX_T * (size_t)cols) +
           hsd_mm_align64((size_t)n * (size_t)(cols / HSD_QK_K) * sizeof(float));
}

TGT void hsd_amx_kq_prepare(hsd_mm_acts *a, void *buf) {
    const int32_t n = a->n, nb = a->cols / HSD_QK_K;
    int8_t *xa = buf;
    float *xad = (float *)(void *)((uint8_t *)buf + hsd_mm_align64(((size_t)n + AMX_T - 1) / AMX_T * AMX_T * (size_t)a->cols));
    for (int32_t t = 0; t < n; t++)
        for (int32_t b = 0; b < nb; b++) {
            const hsd_q8k *x = a->xk + (size_t)t * nb + b;
            int8_t *d = xa + (((size_t)(t / AMX_T) * nb + b) * 4 * AMX_T + (size_t)(t % AMX_T)) * 64;
            UNROLL for (int c = 0; c < 4; c++)
                _mm512_store_si512((void *)(d + (size_t)c * AMX_T * 64), _mm512_loadu_si512((const void *)(x->qs + 64 * c)));
            xad[(size_t)b * n + t] = x->d;
        }
    /* the last chunk's rows past n as zeros: a prefill's tail runs as a padded chunk (the
     * kernels read no other data of those rows and keep none of their results) */
    for (int32_t t = n; t % AMX_T; t++)
        for (int32_t b = 0; b < nb; b++) {
            int8_t *d = xa + (((size_t)(t / AMX_T) * nb + b) * 4 * AMX_T + (size_t)(t % AMX_T)) * 64;
            UNROLL for (int c = 0; c < 4; c++) _mm512_store_si512((void *)(d + (size_t)c * AMX_T * 64), _mm512_setzero_si512());
        }
    a->xa = xa;
    a->xad = xad;
}

/* ---- Q4_K / Q5_K ----------------------------------------------------------------------- */

/* Why this shape: the AVX-512 k-quant kernel (matmul_kq_avx512.c) spends most of its time on
 * the per-sub-block scale, an int32 multiply for every token and 32 columns; an earlier AMX
 * try that took each sub-block's dots out of a tile to scale them was slower still. Here the
 * scale goes into the weights instead, so a tile accumulates a whole super-block: a 6-bit
 * scale is 8·h + l with h, l in 0..7, and q·l, q·h (q ≤ 31) fit in a byte, so two B tiles per
 * 64 columns hold q·l and q·h and
 *     I = Σ_s sc_s Σ_{e∈s} q_e x_e = C_l + 8·C_h          (exact int32)
 * with C_l, C_h two int32 tiles over the 256 columns. I is the integer the AVX-512 kernel
 * forms, and the fp32 steps after it are the same instructions, so the results are the same
 * bits: the two kernels can share a product, chosen per tile by its token count. The byte
 * products come from vpmullw on the packed bytes: each 16-bit word holds two quants of one
 * row (one row per dword lane), and neither product reaches 256, so no carry crosses a byte.
 * A token's 64 Q8_K bytes of two sub-blocks are already the K order of a B tile (low nibbles,
 * then high); the A tiles come from the tile-ordered copy of them (hsd_amx_kq_prepare). */
TGT void hsd_amx_kq45_tile(const uint8_t *grp, int32_t nb, const hsd_mm_acts *a, int32_t t0,
                           int T, int nch, int last, int pf, float *dst, int32_t dld, int five) {
    const size_t W = five ? 2560 : 2048;
    const __m512i low = _mm512_set1_epi8(15), bit4 = _mm512_set1_epi8(16),
                  seven = _mm512_set1_epi32(7);
    uint8_t stage[8][1024] __attribute__((aligned(64))); /* B tiles: [2c] q·l, [2c+1] q·h */
    int32_t cl[2 * AMX_T * 16] __attribute__((aligned(64))), ch[2 * AMX_T * 16] __attribute__((aligned(64)));
    float accb[HSD_AMX_KQ_MAX_CHUNKS * AMX_T * 16] __attribute__((aligned(64)));
    const int nt = T * (nch - 1) + last; /* the tokens kept: the last chunk has `last` */
    for (int t = 0; t < nt; t++) _mm512_store_ps(accb + 16 * t, _mm512_setzero_ps());
    for (int32_t b = 0; b < nb; b++) {
        const uint8_t *wp = grp + (size_t)b * (W + HSD_KQP_TAIL), *tail = wp + W;
        /* the scaled weights of this block, once for every chunk of tokens */
#pragma GCC unroll 1
        for (int c = 0; c < 4; c++) {
            const uint8_t *wq = wp + 512 * c;
            if (pf) hsd_kq_prefetch(wp + (size_t)c * (W / 4), pf, five ? 10 : 8); /* a quarter block */
            if (pf && c == 0) hsd_kq_prefetch(tail, pf, 5); /* and the block's tail */
            __m512i ml[2], mh[2];
            UNROLL for (int hs = 0; hs < 2; hs++) {
                const __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(const void *)(tail + 16 * (2 * c + hs))));
                const __m512i l = _mm512_and_si512(v, seven), h = _mm512_srli_epi32(v, 3);
                ml[hs] = _mm512_or_si512(l, _mm512_slli_epi32(l, 16));
                mh[hs] = _mm512_or_si512(h, _mm512_slli_epi32(h, 16));
            }
            uint8_t *bl = stage[2 * c], *bh = stage[2 * c + 1];
            UNROLL for (int v = 0; v < 8; v++) {
                const __m512i x = ld512(wq + 64 * v);
                __m512i q0 = _mm512_and_si512(x, low), q1 = _mm512_and_si512(_mm512_srli_epi16(x, 4), low);
                if (five) {
                    const __m512i qh = ld512(wp + 2048 + 64 * v);
                    q0 = _mm512_or_si512(q0, _mm512_and_si512(_mm512_slli_epi16(_mm512_srl_epi16(qh, _mm_cvtsi32_si128(2 * c)), 4), bit4));
                    q1 = _mm512_or_si512(q1, _mm512_and_si512(_mm512_slli_epi16(_mm512_srl_epi16(qh, _mm_cvtsi32_si128(2 * c + 1)), 4), bit4));
                }
                _mm512_store_si512((void *)(bl + 64 * v), _mm512_mullo_epi16(q0, ml[0]));
                _mm512_store_si512((void *)(bl + 64 * (8 + v)), _mm512_mullo_epi16(q1, ml[1]));
                _mm512_store_si512((void *)(bh + 64 * v), _mm512_mullo_epi16(q0, mh[0]));
                _mm512_store_si512((void *)(bh + 64 * (8 + v)), _mm512_mullo_epi16(q1, mh[1]));
            }
        }
        __m512i mv[4];
        UNROLL for (int p = 0; p < 4; p++)
            mv[p] = _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)(const void *)(tail + 128 + 32 * p)));
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(tail + 256)));
        const __m512 dm = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(tail + 288)));
        /* two chunks at a time where there are two: four C tiles (0, 1 and 2, 3), so that four
         * accumulation chains overlap in the tile unit instead of two (a chain's four
         * products per block wait on each other), and each B tile is loaded once for both */
#pragma GCC unroll 1
        for (int k = 0; k < nch; k += 2) {
            const int two = k + 1 < nch;
            const int32_t tk = t0 + k * T; /* first token of the chunk: a multiple of 16 */
            const int8_t *xa = a->xa + ((size_t)(tk / AMX_T) * nb + b) * 4 * AMX_T * 64;
            const int8_t *xa2 = xa + (size_t)nb * 4 * AMX_T * 64;
            const float *xd = a->xad + (size_t)b * a->n + tk;
            _tile_zero(0);
            _tile_zero(1);
            if (two) {
                _tile_zero(2);
                _tile_zero(3);
            }
            UNROLL for (int c = 0; c < 4; c++) {
                _tile_loadd(4, xa + c * AMX_T * 64, 64);
                _tile_loadd(6, stage[2 * c], 64);
                _tile_loadd(7, stage[2 * c + 1], 64);
                _tile_dpbsud(0, 4, 6);
                _tile_dpbsud(1, 4, 7);
                if (two) {
                    _tile_loadd(5, xa2 + c * AMX_T * 64, 64);
                    _tile_dpbsud(2, 5, 6);
                    _tile_dpbsud(3, 5, 7);
                }
            }
            _tile_stored(0, cl, 64);
            _tile_stored(1, ch, 64);
            if (two) {
                _tile_stored(2, cl + 16 * AMX_T, 64);
                _tile_stored(3, ch + 16 * AMX_T, 64);
            }
            float *ak = accb + (size_t)16 * k * T;
            const int kept = nt - k * T < (two ? 2 * T : T) ? nt - k * T : (two ? 2 * T : T);
            for (int t = 0; t < kept; t++) {
                /* token tk + t: chunk k's rows, then chunk k + 1's at 16·AMX_T in cl, ch */
                const int32_t row = t < T ? t : AMX_T + t - T;
                const int32_t *e = a->xke + ((size_t)(tk + t) * nb + b) * HSD_KQP_EXTRAS(HSD_DT_Q4_K);
                const __m512i is = _mm512_add_epi32(_mm512_load_si512((const void *)(cl + 16 * row)),
                                                    _mm512_slli_epi32(_mm512_load_si512((const void *)(ch + 16 * row)), 3));
                __m512i m = _mm512_setzero_si512();
                UNROLL for (int p = 0; p < 4; p++)
                    m = _mm512_dpwssd_epi32(m, mv[p], _mm512_set1_epi32(e[p]));
                const __m512 dx = _mm512_set1_ps(xd[t]);
                __m512 ac = _mm512_load_ps(ak + 16 * t);
                ac = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is), _mm512_mul_ps(dw, dx), ac);
                ac = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(m), _mm512_mul_ps(dm, dx), ac);
                _mm512_store_ps(ak + 16 * t, ac);
            }
        }
    }
    for (int t = 0; t < nt; t++) _mm512_storeu_ps(dst + (size_t)t * dld, _mm512_load_ps(accb + 16 * t));
}

/* ---- Q6_K ------------------------------------------------------------------------------ */

/* As for Q4_K, the scale goes into the weights, but Q6_K's scales are signed 8-bit and its
 * quants 6-bit with an offset (q − 32 in −32..31), so the digits are signed: every scale in
 * −128..127 is 64·d2 + 8·d1 + d0 with each digit in −3..4 (eight consecutive values are a
 * full set of residues mod 8, and three of them reach −219..292), and (q − 32)·d stays in
 * −128..124, a signed byte. Three B tiles per 64 columns and signed × signed tiles give
 *     I = Σ_k sc_k Σ_{e∈k} (q_e − 32) x_e = 64·C_2 + 8·C_1 + C_0           (exact int32)
 * which is the AVX-512 kernel's integer (its −32·bsum term is the same offset), so the bits
 * are the same. The byte product: p = q·|d| by vpmullw (q ≤ 63, |d| ≤ 4: below 256, no carry
 * across bytes), then p − 32|d| for d ≥ 0 and 32|d| − p for d < 0, by byte subtractions. */
TGT void hsd_amx_kq6_tile(const uint8_t *grp, int32_t nb, const hsd_mm_acts *a, int32_t t0,
                          int T, int nch, int last, int pf, float *dst, int32_t dld) {
    const size_t W = 3072;
    const __m512i three = _mm512_set1_epi32(3), seven = _mm512_set1_epi32(7),
                  /* byte 0 of each dword to bytes 0 and 2 (a word's low byte), and to all four
                   * (vpshufb indexes within 128-bit lanes: dword m of a lane starts at 4m) */
                  to_words = _mm512_broadcast_i32x4(_mm_set_epi32((int32_t)0x800c800c, 0x80088008, 0x80048004, (int32_t)0x80008000)),
                  to_bytes = _mm512_broadcast_i32x4(_mm_set_epi32(0x0c0c0c0c, 0x08080808, 0x04040404, 0));
    uint8_t stage[12][1024] __attribute__((aligned(64))); /* [3j + digit] */
    int32_t cc[3][AMX_T * 16] __attribute__((aligned(64)));
    float accb[HSD_AMX_KQ_MAX_CHUNKS * AMX_T * 16] __attribute__((aligned(64)));
    const int nt = T * (nch - 1) + last;
    for (int t = 0; t < nt; t++) _mm512_store_ps(accb + 16 * t, _mm512_setzero_ps());
    for (int32_t b = 0; b < nb; b++) {
        const uint8_t *wp = grp + (size_t)b * (W + HSD_KQP_TAIL), *tail = wp + W;
#pragma GCC unroll 1
        for (int j = 0; j < 4; j++) { /* 64 columns: sub-blocks 4j..4j+3 */
            if (pf) hsd_kq_prefetch(wp + (size_t)j * (W / 4), pf, 12); /* a quarter block */
            if (pf && j == 0) hsd_kq_prefetch(tail, pf, 5); /* and the block's tail */
            const int h = j >> 1, hi = j & 1;
            const uint8_t *ql = wp + 1024 * h, *qh = wp + 2048 + 512 * h;
            UNROLL for (int kk = 0; kk < 4; kk++) {
                const int k = 4 * j + kk;
                /* the scale's digits, per lane: |d| as two words, 32|d| as four bytes, sign */
                const __m512i v = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(const void *)(tail + 16 * k)));
                const __m512i d0 = _mm512_sub_epi32(_mm512_and_si512(_mm512_add_epi32(v, three), seven), three);
                const __m512i v1 = _mm512_srai_epi32(_mm512_sub_epi32(v, d0), 3);
                const __m512i d1 = _mm512_sub_epi32(_mm512_and_si512(_mm512_add_epi32(v1, three), seven), three);
                const __m512i d2 = _mm512_srai_epi32(_mm512_sub_epi32(v1, d1), 3);
                const __m512i dg[3] = {d0, d1, d2};
                __m512i mw[3], kb[3];
                __mmask64 neg[3];
                UNROLL for (int g = 0; g < 3; g++) {
                    const __m512i ad = _mm512_abs_epi32(dg[g]);
                    mw[g] = _mm512_shuffle_epi8(ad, to_words);
                    kb[g] = _mm512_shuffle_epi8(_mm512_slli_epi32(ad, 5), to_bytes);
                    neg[g] = _mm512_movepi8_mask(_mm512_srai_epi32(dg[g], 31));
                }
                UNROLL for (int i = 0; i < 4; i++) {
                    const __m512i q = hsd_kq6_quants(ql, qh, hi, kk, i);
                    UNROLL for (int g = 0; g < 3; g++) {
                        const __m512i p = _mm512_mullo_epi16(q, mw[g]);
                        const __m512i r = _mm512_mask_sub_epi8(_mm512_sub_epi8(p, kb[g]), neg[g], kb[g], p);
                        _mm512_store_si512((void *)(stage[3 * j + g] + 64 * (4 * kk + i)), r);
                    }
                }
            }
        }
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(tail + 256)));
#pragma GCC unroll 1
        for (int k = 0; k < nch; k++) {
            const int32_t tk = t0 + k * T; /* a multiple of 16 */
            const int8_t *xa = a->xa + ((size_t)(tk / AMX_T) * nb + b) * 4 * AMX_T * 64;
            const float *xd = a->xad + (size_t)b * a->n + tk;
            _tile_zero(0);
            _tile_zero(1);
            _tile_zero(2);
            UNROLL for (int j = 0; j < 4; j++) {
                _tile_loadd(4, xa + j * AMX_T * 64, 64);
                _tile_loadd(5, stage[3 * j], 64);
                _tile_dpbssd(0, 4, 5);
                _tile_loadd(6, stage[3 * j + 1], 64);
                _tile_dpbssd(1, 4, 6);
                _tile_loadd(7, stage[3 * j + 2], 64);
                _tile_dpbssd(2, 4, 7);
            }
            _tile_stored(0, cc[0], 64);
            _tile_stored(1, cc[1], 64);
            _tile_stored(2, cc[2], 64);
            float *ak = accb + (size_t)16 * k * T;
            for (int t = 0; t < (k == nch - 1 ? last : T); t++) {
                const __m512i is = _mm512_add_epi32(
                    _mm512_add_epi32(_mm512_load_si512((const void *)(cc[0] + 16 * t)),
                                     _mm512_slli_epi32(_mm512_load_si512((const void *)(cc[1] + 16 * t)), 3)),
                    _mm512_slli_epi32(_mm512_load_si512((const void *)(cc[2] + 16 * t)), 6));
                const __m512 dx = _mm512_set1_ps(xd[t]);
                __m512 ac = _mm512_load_ps(ak + 16 * t);
                ac = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is), _mm512_mul_ps(dw, dx), ac);
                _mm512_store_ps(ak + 16 * t, ac);
            }
        }
    }
    for (int t = 0; t < nt; t++) _mm512_storeu_ps(dst + (size_t)t * dld, _mm512_load_ps(accb + 16 * t));
}

#endif /* HSD_MM_HAVE_AVX512 */
