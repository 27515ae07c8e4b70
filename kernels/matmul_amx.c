/* BF16 and Q8_0 products on AMX tiles (layouts, arithmetic and why: matmul_amx.h). The build
 * targets baseline x86-64; these functions carry their own target attribute and run only when
 * kernels/cpu_features.c found AMX and the OS granted tile data. */
#include "kernels/matmul_amx.h"

#ifdef HSD_MM_HAVE_AVX512

#include <immintrin.h>
#include <string.h>

#include "kernels/matmul_bf16p.h"
#include "kernels/matmul_q8.h"

#define TGT                                                                                        \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx512vnni,fma,f16c,"   \
                          "amx-tile,amx-bf16,amx-int8")))
#define INL HSD_MM_INLINE
#define UNROLL HSD_MM_UNROLL

#define AMX_T 16 /* tokens per tile (A and C rows), at most */
#define R HSD_MM_PACK_ROWS

/* The tile configuration (palette 1): tiles 0..3 C (one per group), 4 A, 5..7 B. */
typedef struct amx_cfg {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} amx_cfg;

TGT static void configure(int T, int a_colsb, int b_rows) {
    amx_cfg c;
    memset(&c, 0, sizeof c);
    c.palette = 1;
    for (int i = 0; i < 4; i++) c.rows[i] = (uint8_t)T, c.colsb[i] = 64;
    c.rows[4] = (uint8_t)T, c.colsb[4] = (uint16_t)a_colsb;
    for (int i = 5; i < 8; i++) c.rows[i] = (uint8_t)b_rows, c.colsb[i] = 64;
    /* asm with the whole struct as its operand: GCC 12 drops the stores to rows and colsb
     * before _tile_loadconfig (it sees the builtin read only the first bytes), and ldtilecfg
     * then faults on a configuration without rows */
    __asm__ volatile("ldtilecfg %0" : : "m"(c));
}

/* The calling thread's tile configuration before a product, put back after it: another
 * library on the same thread (llama.cpp's AMX kernels, in one process with hsd) may have
 * configured the tiles once and rely on it — releasing them under it made its next tile
 * instruction fault (SIGILL in test_model_arch_llama_cpp). Unconfigured (palette 0): release. */
TGT static void save_cfg(amx_cfg *prev) {
    __asm__ volatile("sttilecfg %0" : "=m"(*prev));
}
TGT static void restore_cfg(const amx_cfg *prev) {
    if (prev->palette)
        __asm__ volatile("ldtilecfg %0" : : "m"(*prev));
    else
        _tile_release();
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
    amx_cfg prev;
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

/* Software prefetch distance in blocks of a group's stream (as matmul_q8_avx512.c). */
#define AMXQ_PF_BLOCKS 24

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
    const size_t sco = (size_t)nb * HSD_Q8P_BLOCK_BYTES;
    for (int32_t b = 0; b < nb; b++, xq += 32 * n, xd += n, xc += n) {
        const uint8_t *wb = grp + (size_t)b * HSD_Q8P_BLOCK_BYTES;
        if (pf) {
            int32_t ahead = b + AMXQ_PF_BLOCKS;
            UNROLL for (int g = 0; g < G; g++) {
                uintptr_t p = (uintptr_t)grp + g * gb +
                              (ahead < nb ? (size_t)ahead * HSD_Q8P_BLOCK_BYTES
                                          : gb * G + (size_t)(ahead - nb) * HSD_Q8P_BLOCK_BYTES);
                UNROLL for (int k = 0; k < 8; k++) _mm_prefetch((const char *)(p + 64 * k), _MM_HINT_T0);
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
            const uint16_t *sc = (const uint16_t *)(const void *)(grp + g * gb + sco);
            const __m512 dw = _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(const void *)(sc + 16 * (size_t)b)));
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
    amx_cfg prev;
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
    const size_t gb = hsd_q8p_group_bytes(a->cols);
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
        hsd_q8p_pack_group(rows, c, a->cols / 32, scratch);
        q8_groups(a, scratch, gb, 1, 0, 0, c, out + k, ld);
    }
}

#endif /* HSD_MM_HAVE_AVX512 */
