/* Q4_K / Q5_K / Q6_K × Q8_K activations on AVX-512 VNNI over row-interleaved weights (layout,
 * arithmetic and why: matmul_kq.h). A tile is one group of 16 rows × up to 16 tokens: per
 * sub-block it unpacks the group's weight vectors once (nibbles, fifth bits or 2-bit highs
 * to u8 per lane) and runs, for each token,
 *   s = 0 (Q6_K: −32·the sum of x)               s += vpdpbusd(w_v, 4 bytes of x broadcast)
 *   I += s · scale_sub-block                       (vpmulld: per lane, exact int32)
 * (on Intel, where vpmulld is two instructions, Q4_K sums s per 16-column half and Q6_K per
 * 8-column half, which fit int16, and I += s · scale by one vpdpwssd:
 * tests/test_matmul_kernels.c's test_kquant_extremes holds them at the bound; on AMD vpmulld
 * is one instruction and Q4_K / Q6_K take the vpmulld form, as Q5_K everywhere)
 * and per 256-block the fp32 steps of matmul_kq.h (mins by vpdpwssd on int16 pairs). The
 * per-token int32 sums stay in registers (T ≤ 16, plus ≤ 8 weight vectors); the fp32
 * accumulators live in a small aligned array touched once per token and block. The build
 * targets baseline x86-64; these functions carry their own target attribute and run only
 * when the CPU has AVX-512 VNNI. */
#include "kernels/matmul_kq.h"
#include "kernels/matmul_amx.h"
#include "kernels/matmul_kq_unpack.h"

#ifdef HSD_MM_HAVE_AVX512

#include <immintrin.h>
#include <string.h>

#define TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,fma,f16c")))
#define INL HSD_MM_INLINE
#define UNROLL HSD_MM_UNROLL

#define KQ_T 16 /* tokens per tile */

/* *s += w (u8) · the 4 signed bytes at x broadcast, the broadcast as the memory operand (GCC
 * 12 emits the intrinsic form as a separate vpbroadcastd: see matmul_q8_avx512.c) */
TGT static INL void dpbusd_bcast(__m512i *s, __m512i w, const void *x) {
    __asm__("vpdpbusd %2%{1to16%}, %1, %0"
            : "+v"(*s)
            : "v"(w), "m"(*(const int32_t *)x));
}
/* *s += the int16 pairs of w · the int16 pair at x broadcast */
TGT static INL void dpwssd_bcast(__m512i *s, __m512i w, const void *x) {
    __asm__("vpdpwssd %2%{1to16%}, %1, %0"
            : "+v"(*s)
            : "v"(w), "m"(*(const int32_t *)x));
}

TGT static INL __m512i ld(const uint8_t *p) {
    return _mm512_load_si512((const void *)p);
}

/* clang-format off */
/* Q4_K (five 0) / Q5_K (five 1): the group at grp (nb blocks) × tokens t0..t0+T; lane j of
 * token t goes to dst[t·dld + j]. pf: the prefetch distance of the weights and the tails
 * (bytes, 0 none; run_group). mul: Q4_K's sub-block sums scaled by vpmulld + add, as Q5_K's
 * (the same exact int32 values, so the same bits): AMD's form. */
TGT static INL void tile45(const uint8_t *grp, int32_t nb, const hsd_mm_acts *a, int32_t t0,
                           int pf, float *dst, int32_t dld, const int T, const int five,
                           const int mul) {
    const size_t W = five ? 2560 : 2048;
    const hsd_q8k *xk = a->xk + (size_t)t0 * nb;
    const int32_t *xe = a->xke + (size_t)t0 * nb * HSD_KQP_EXTRAS(HSD_DT_Q4_K);
    const __m512i low = _mm512_set1_epi8(15), bit4 = _mm512_set1_epi8(16);
    float accb[KQ_T * 16] __attribute__((aligned(64)));
    UNROLL for (int t = 0; t < T; t++) _mm512_store_ps(accb + 16 * t, _mm512_setzero_ps());
    for (int32_t b = 0; b < nb; b++) {
        const uint8_t *wp = grp + (size_t)b * (W + HSD_KQP_TAIL), *tail = wp + W;
        __m512i isum[KQ_T];
        UNROLL for (int t = 0; t < T; t++) isum[t] = _mm512_setzero_si512();
#pragma GCC unroll 1
        for (int c = 0; c < 4; c++) {
            const uint8_t *wq = wp + 512 * c;
            /* the weights' prefetch: a quarter block at once, or on AMD from 2 tokens Q4_K's
             * lines spread over its sub-blocks, 4 before each (matmul_kq_unpack.h) */
            const int spread = mul && !five && T > 1;
            if (pf && !spread) hsd_kq_prefetch(wp + (size_t)c * (W / 4), pf, five ? 10 : 8);
            if (pf && c == 0) hsd_kq_prefetch(tail, pf, 5); /* the tail's 5 lines (run_group) */
            UNROLL for (int hs = 0; hs < 2; hs++) { /* sub-block 2c + hs */
                const int s = 2 * c + hs;
                if (pf && spread) hsd_kq_prefetch(wp + (size_t)c * (W / 4) + (size_t)hs * (W / 8), pf, 4);
                __m512i w[8];
                UNROLL for (int v = 0; v < 8; v++)
                    w[v] = _mm512_and_si512(hs ? _mm512_srli_epi16(ld(wq + 64 * v), 4) : ld(wq + 64 * v), low);
                if (five) {
                    /* bit s of each qh byte to bit 4: a dword rotation by 4 - s (mod 32) moves
                     * bit 8i + s to 8i + 4 for every byte i, and one vpternlogd (w | (r & bit4))
                     * merges it, where shift, shift, and, or took four */
                    const __m512i rot = _mm512_set1_epi32((4 - s) & 31);
                    UNROLL for (int v = 0; v < 8; v++)
                        w[v] = _mm512_ternarylogic_epi32(w[v], _mm512_rolv_epi32(ld(wp + 2048 + 64 * v), rot), bit4, 0xF8);
                }
                const __m512i scv = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(const void *)(tail + 16 * s)));
                if (!five && !mul) {
                    /* Q4_K: a half sub-block's dot fits int16 (16 · 15 · 127 = 30480), so the
                     * dword lane is it sign-extended and vpdpwssd with the (sc, 0) pairs of
                     * scv multiplies and adds it exactly, one instruction for vpmulld + add */
                    UNROLL for (int t = 0; t < T; t++) {
                        const int8_t *xq = xk[(size_t)t * nb + b].qs + 32 * s;
                        __m512i d0 = _mm512_setzero_si512(), d1 = _mm512_setzero_si512();
                        UNROLL for (int v = 0; v < 4; v++) dpbusd_bcast(&d0, w[v], xq + 4 * v);
                        UNROLL for (int v = 4; v < 8; v++) dpbusd_bcast(&d1, w[v], xq + 4 * v);
                        isum[t] = _mm512_dpwssd_epi32(isum[t], d0, scv);
                        isum[t] = _mm512_dpwssd_epi32(isum[t], d1, scv);
                    }
                } else { /* Q5_K: q up to 31 overflows int16 over 16 columns; Q4_K where
                          * vpmulld is one instruction (AMD): 9 VNNI-port ops where the form
                          * above takes 10 */
                    UNROLL for (int t = 0; t < T; t++) {
                        const int8_t *xq = xk[(size_t)t * nb + b].qs + 32 * s;
                        __m512i d = _mm512_setzero_si512();
                        UNROLL for (int v = 0; v < 8; v++) dpbusd_bcast(&d, w[v], xq + 4 * v);
                        isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(d, scv));
                    }
                }
            }
        }
        __m512i mv[4];
        UNROLL for (int p = 0; p < 4; p++)
            mv[p] = _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)(const void *)(tail + 128 + 32 * p)));
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(tail + 256)));
        const __m512 dm = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(tail + 288)));
        UNROLL for (int t = 0; t < T; t++) {
            const int32_t *e = xe + ((size_t)t * nb + b) * HSD_KQP_EXTRAS(HSD_DT_Q4_K);
            __m512i m = _mm512_setzero_si512();
            UNROLL for (int p = 0; p < 4; p++) dpwssd_bcast(&m, mv[p], e + p);
            const __m512 dx = _mm512_set1_ps(xk[(size_t)t * nb + b].d);
            __m512 ac = _mm512_load_ps(accb + 16 * t);
            ac = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[t]), _mm512_mul_ps(dw, dx), ac);
            ac = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(m), _mm512_mul_ps(dm, dx), ac);
            _mm512_store_ps(accb + 16 * t, ac);
        }
    }
    UNROLL for (int t = 0; t < T; t++) _mm512_storeu_ps(dst + (size_t)t * dld, _mm512_load_ps(accb + 16 * t));
}

/* Q6_K, as tile45 (mul: vpmulld scaling, the two halves summed first).
 * Sub-block k = 8h + 4·hi + kk (h: half of the block, hi: high nibbles): its 4 column quads i
 * are ql dword 16h + 4kk + i (low or high nibbles) and the 2-bit field 2·hi + kk/2 of qh dword
 * 8h + 4(kk % 2) + i. */
TGT static INL void tile6(const uint8_t *grp, int32_t nb, const hsd_mm_acts *a, int32_t t0,
                          int pf, float *dst, int32_t dld, const int T, const int mul) {
    const size_t W = 3072;
    const hsd_q8k *xk = a->xk + (size_t)t0 * nb;
    const int32_t *xe = a->xke + (size_t)t0 * nb * HSD_KQP_EXTRAS(HSD_DT_Q6_K);
    float accb[KQ_T * 16] __attribute__((aligned(64)));
    UNROLL for (int t = 0; t < T; t++) _mm512_store_ps(accb + 16 * t, _mm512_setzero_ps());
    for (int32_t b = 0; b < nb; b++) {
        const uint8_t *wp = grp + (size_t)b * (W + HSD_KQP_TAIL), *tail = wp + W;
        __m512i isum[KQ_T];
        UNROLL for (int t = 0; t < T; t++) isum[t] = _mm512_setzero_si512();
#pragma GCC unroll 1
        for (int h = 0; h < 2; h++) {
            const uint8_t *ql = wp + 1024 * h, *qh = wp + 2048 + 512 * h;
            const int spread = mul && T > 1; /* as in tile45 */
            if (pf && !spread) hsd_kq_prefetch(wp + (size_t)h * 1536, pf, 24);
            if (pf && h == 0) hsd_kq_prefetch(tail, pf, 5);
            UNROLL for (int hi = 0; hi < 2; hi++) {
                UNROLL for (int kk = 0; kk < 4; kk++) {
                    const int k = 8 * h + 4 * hi + kk;
                    if (pf && spread) hsd_kq_prefetch(wp + (size_t)h * 1536 + 192 * (4 * hi + kk), pf, 3);
                    __m512i w[4];
                    UNROLL for (int i = 0; i < 4; i++) w[i] = hsd_kq6_quants(ql, qh, hi, kk, i);
                    const __m128i sc8 = _mm_loadu_si128((const __m128i *)(const void *)(tail + 16 * k));
                    if (mul) { /* AMD: vpmulld one instruction, the halves summed first */
                        const __m512i sc32 = _mm512_cvtepi8_epi32(sc8);
                        UNROLL for (int t = 0; t < T; t++) {
                            const int8_t *xq = xk[(size_t)t * nb + b].qs + 16 * k;
                            const int32_t *off = xe + ((size_t)t * nb + b) * HSD_KQP_EXTRAS(HSD_DT_Q6_K) + 2 * k;
                            __m512i d = _mm512_add_epi32(_mm512_set1_epi32(off[0]), _mm512_set1_epi32(off[1]));
                            UNROLL for (int i = 0; i < 4; i++) dpbusd_bcast(&d, w[i], xq + 4 * i);
                            isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(d, sc32));
                        }
                        continue;
                    }
                    /* Intel: (sc, 0) int16 pairs: a half sub-block's sum (8 columns) fits
                     * int16, |.| <= 8 · 32 · 127 = 32512, so as for Q4_K one vpdpwssd scales and
                     * adds each half exactly, where vpmulld (two uops there) + add took three */
                    const __m512i scv = _mm512_cvtepu16_epi32(_mm256_cvtepi8_epi16(sc8));
                    UNROLL for (int t = 0; t < T; t++) {
                        const int8_t *xq = xk[(size_t)t * nb + b].qs + 16 * k;
                        const int32_t *off = xe + ((size_t)t * nb + b) * HSD_KQP_EXTRAS(HSD_DT_Q6_K) + 2 * k;
                        __m512i d0 = _mm512_set1_epi32(off[0]), d1 = _mm512_set1_epi32(off[1]);
                        dpbusd_bcast(&d0, w[0], xq);
                        dpbusd_bcast(&d0, w[1], xq + 4);
                        dpbusd_bcast(&d1, w[2], xq + 8);
                        dpbusd_bcast(&d1, w[3], xq + 12);
                        isum[t] = _mm512_dpwssd_epi32(isum[t], d0, scv);
                        isum[t] = _mm512_dpwssd_epi32(isum[t], d1, scv);
                    }
                }
            }
        }
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(tail + 256)));
        UNROLL for (int t = 0; t < T; t++) {
            const __m512 dx = _mm512_set1_ps(xk[(size_t)t * nb + b].d);
            __m512 ac = _mm512_load_ps(accb + 16 * t);
            ac = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[t]), _mm512_mul_ps(dw, dx), ac);
            _mm512_store_ps(accb + 16 * t, ac);
        }
    }
    UNROLL for (int t = 0; t < T; t++) _mm512_storeu_ps(dst + (size_t)t * dld, _mm512_load_ps(accb + 16 * t));
}
/* clang-format on */

typedef void (*tile_fn)(const uint8_t *, int32_t, const hsd_mm_acts *, int32_t, int, float *,
                        int32_t);
#define DEF(T)                                                                                     \
    TGT static void q4_##T(const uint8_t *g, int32_t nb, const hsd_mm_acts *a, int32_t t0,         \
                            int pf, float *dst, int32_t dld) {                                     \
        tile45(g, nb, a, t0, pf, dst, dld, T, 0, 0);                                               \
    }                                                                                              \
    TGT static void q4m_##T(const uint8_t *g, int32_t nb, const hsd_mm_acts *a, int32_t t0,        \
                            int pf, float *dst, int32_t dld) {                                     \
        tile45(g, nb, a, t0, pf, dst, dld, T, 0, 1);                                               \
    }                                                                                              \
    TGT static void q5_##T(const uint8_t *g, int32_t nb, const hsd_mm_acts *a, int32_t t0,         \
                            int pf, float *dst, int32_t dld) {                                     \
        tile45(g, nb, a, t0, pf, dst, dld, T, 1, 0);                                               \
    }                                                                                              \
    TGT static void q6_##T(const uint8_t *g, int32_t nb, const hsd_mm_acts *a, int32_t t0,         \
                            int pf, float *dst, int32_t dld) {                                     \
        tile6(g, nb, a, t0, pf, dst, dld, T, 0);                                                   \
    }                                                                                              \
    TGT static void q6m_##T(const uint8_t *g, int32_t nb, const hsd_mm_acts *a, int32_t t0,        \
                            int pf, float *dst, int32_t dld) {                                     \
        tile6(g, nb, a, t0, pf, dst, dld, T, 1);                                                   \
    }
DEF(1)
DEF(2)
DEF(3)
DEF(4)
DEF(5)
DEF(6)
DEF(7)
DEF(8)
DEF(9)
DEF(10)
DEF(11)
DEF(12)
DEF(13)
DEF(14)
DEF(15)
DEF(16)
#define ROW(p)                                                                                     \
    {                                                                                              \
        p##_1, p##_2, p##_3, p##_4, p##_5, p##_6, p##_7, p##_8, p##_9, p##_10, p##_11, p##_12,    \
            p##_13, p##_14, p##_15, p##_16                                                         \
    }
/* Q4_K, Q4_K by vpmulld, Q5_K, Q6_K, Q6_K by vpmulld */
static const tile_fn tiles[5][KQ_T] = {ROW(q4), ROW(q4m), ROW(q5), ROW(q6), ROW(q6m)};

/* Q8_K activations (hsd_quant_q8k's rule, kernels/quant_act.c) with AVX-512, the same bytes:
 * the prepare step runs on the calling thread before the product's threads start, and the
 * scalar loop cost ~6% of a 16-token Q4_K_M forward. Per block: amax = the largest |x| (NaN
 * lanes ignored, as the scalar comparison does: vmaxps returns its second operand when the
 * first is NaN), max = the first element with |x| = amax, then the scalar formulas for the
 * scale, and q = clamp(rint(iscale·x)) with NaN → 0, 16 lanes at a time, each lane group of
 * 16 one bsum. */
TGT void hsd_kqp_quantize(const float *x, int64_t cols, hsd_q8k *out) {
    const __m512 absmask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
    for (int64_t i = 0; i + HSD_QK_K <= cols; i += HSD_QK_K, out++) {
        const float *xb = x + i;
        __m512 am = _mm512_setzero_ps();
        UNROLL for (int k = 0; k < 16; k++)
            am = _mm512_max_ps(_mm512_and_ps(_mm512_loadu_ps(xb + 16 * k), absmask), am);
        const float amax = _mm512_reduce_max_ps(am);
        float max = 0.0f;
        if (amax != 0.0f) {
            const __m512 av = _mm512_set1_ps(amax);
            for (int k = 0; k < 16; k++) {
                __mmask16 eq = _mm512_cmp_ps_mask(_mm512_and_ps(_mm512_loadu_ps(xb + 16 * k), absmask), av, _CMP_EQ_OQ);
                if (eq) {
                    max = xb[16 * k + __builtin_ctz(eq)];
                    break;
                }
            }
        }
        const float iscale = amax == 0.0f ? 0.0f : -127.0f / max;
        out->d = amax == 0.0f ? 0.0f : 1.0f / iscale;
        const __m512 is = _mm512_set1_ps(iscale), lo = _mm512_set1_ps(-127.0f), hi = _mm512_set1_ps(127.0f);
        UNROLL for (int k = 0; k < 16; k++) {
            __m512 v = _mm512_roundscale_ps(_mm512_mul_ps(is, _mm512_loadu_ps(xb + 16 * k)),
                                            _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), v);
            const __m512i q = _mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(v, lo), hi));
            _mm_storeu_si128((__m128i *)(void *)(out->qs + 16 * k), _mm512_cvtepi32_epi8(q));
            out->bsums[k] = (int16_t)_mm512_reduce_add_epi32(q);
        }
    }
}


/* The state of one hsd_kqp_rows call: AMX tiles configured for cfgT token rows (0: not yet),
 * and the per-vendor choices (hsd_kqp_tuning_amd): the prefetch distance, and amd: Q4_K /
 * Q6_K tiles scaled by vpmulld. */
typedef struct kq_amx {
    int on, cfgT;
    hsd_amx_cfg prev;
    int pf_bytes, amd;
} kq_amx;

/* Every token of one group; lanes lo..hi of it are rows out[.. + lane − lo]. pf: whether to
 * prefetch ahead (groups that follow each other in a packed copy). */
static void run_group(const hsd_mm_acts *a, hsd_dtype type, const uint8_t *grp, int pf,
                      int32_t lo, int32_t hi, float *out, int32_t ld, kq_amx *amx) {
    const tile_fn *tf = tiles[type == HSD_DT_Q4_K ? amx->amd : type == HSD_DT_Q5_K ? 2 : 3 + amx->amd];
    if (pf) pf = amx->pf_bytes;
    /* each block's tail (scales, mins, d) follows its weights in the stream (matmul_kq.h), and
     * its 5 lines are asked for at the weights' distance: the weights' requests, a block's
     * planes at a time, leave them out. (With the tails in a stream of their own after the
     * group, only AMD prefetched them: there, one thread from memory, n = 1, Q6_K 5-10% faster
     * for it, session 17; on Intel the tails took the hardware prefetcher's stream. Interleaved,
     * both vendors ask for them, so that no line of the one stream is left to the hardware;
     * measured on Zen 4 only, session 23.) */
    const int32_t nb = a->cols / HSD_QK_K;
    const bool whole = lo == 0 && hi == HSD_MM_PACK_ROWS;
    float part[KQ_T * HSD_MM_PACK_ROWS]; /* a group cut by the row range */
    for (int32_t t0 = 0; t0 < a->n;) {
        int32_t T = a->n - t0 < KQ_T ? a->n - t0 : KQ_T, nch = 1, last = T;
        /* AMD: tiles of at most 8 tokens from 11 on (halves below 16): a 16-token tile keeps 16
         * int32 sums beside the weight vectors and spills, and two 8-token passes over the
         * group (its second from L1/L2) cost less. Zen 4, one thread from memory: Q4_K n = 13
         * / 16 -7% / -7%, Q6_K -8% / -16%; n <= 10 no gain (session 23). The same bits: every
         * token's lanes are their own sequence whatever the tile. Intel keeps 16 (not
         * measured there; AMX takes the long tiles) */
        if (amx->amd && !amx->on && T > 10) T = last = T < KQ_T ? (T + 1) / 2 : KQ_T / 2;
        if (amx->on && whole && T == KQ_T) {
            /* whole chunks of 16 tokens share the scaled weights, and so does a shorter tail
             * after them, padded: on the AVX-512 kernel its tokens would cost their whole
             * arithmetic again (a 77-token forward took 172 ms against 80 tokens' 152) */
            while (nch < HSD_AMX_KQ_MAX_CHUNKS && t0 + (nch + 1) * KQ_T <= a->n) nch++;
            const int32_t rest = a->n - (t0 + nch * KQ_T);
            if (rest > 0 && rest < KQ_T && nch < HSD_AMX_KQ_MAX_CHUNKS) nch++, last = rest;
        }
        if (amx->on && (nch > 1 || T >= (type == HSD_DT_Q6_K ? HSD_KQP_AMX_MIN_T_Q6K : HSD_KQP_AMX_MIN_T))) {
            if (amx->cfgT != T) {
                if (!amx->cfgT) hsd_amx_tiles_save(&amx->prev);
                hsd_amx_tiles_set(T);
                amx->cfgT = T;
            }
            float *d = whole ? out + (size_t)t0 * ld : part;
            const int32_t dl = whole ? ld : HSD_MM_PACK_ROWS;
            if (type == HSD_DT_Q6_K)
                hsd_amx_kq6_tile(grp, nb, a, t0, T, nch, last, pf, d, dl);
            else
                hsd_amx_kq45_tile(grp, nb, a, t0, T, nch, last, pf, d, dl, type == HSD_DT_Q5_K);
        } else {
            tf[T - 1](grp, nb, a, t0, pf, whole ? out + (size_t)t0 * ld : part,
                      whole ? ld : HSD_MM_PACK_ROWS);
        }
        if (!whole)
            for (int32_t t = 0; t < T; t++)
                memcpy(out + (size_t)(t0 + t) * ld, part + (size_t)t * HSD_MM_PACK_ROWS + lo,
                       (size_t)(hi - lo) * sizeof *part);
        t0 += T * (nch - 1) + last;
    }
}

void hsd_kqp_rows(const hsd_mm_acts *a, const hsd_mat *w, const hsd_mm_packed *pk,
                  const int32_t *ids, int32_t r0, int32_t count, float *out, int32_t ld,
                  uint8_t *scratch, bool amx) {
    const size_t gb = hsd_kqp_group_bytes(w->type, a->cols);
    /* AMD (Zen 4): prefetch 32 KB ahead and the tails too, and Q4_K / Q6_K scaled by vpmulld,
     * one instruction there (two on Intel): in cache, 8 tokens -6% (Q4_K, Q6_K), 16 tokens
     * -10% (Q6_K) (session 17, bench/notes/kquant_packed.md) */
    const bool amd = hsd_kqp_tuning_amd();
    kq_amx st = {.on = amx, .cfgT = 0, .pf_bytes = amd ? HSD_KQ_PF_BYTES_AMD : HSD_KQ_PF_BYTES_INTEL, .amd = amd};
    if (pk && !ids) {
        hsd_mm_span sp[3];
        int ns = hsd_mm_group_spans(r0, count, sp);
        for (int i = 0; i < ns; i++)
            for (int32_t g = 0; g < sp[i].n_groups; g++)
                run_group(a, w->type, pk->data + (size_t)(sp[i].g + g) * gb, 1, sp[i].lo,
                          sp[i].hi, out + sp[i].out_off + g * HSD_MM_PACK_ROWS, ld, &st);
    } else {
        /* no packed copy, or a row subset: pack each group into scratch first */
        const uint8_t *rows[HSD_MM_PACK_ROWS];
        for (int32_t k = 0; k < count; k += HSD_MM_PACK_ROWS) {
            int32_t c = count - k < HSD_MM_PACK_ROWS ? count - k : HSD_MM_PACK_ROWS;
            hsd_mm_group_rows(w, ids, r0 + k, c, rows);
            hsd_kqp_pack_group(w->type, rows, c, a->cols / HSD_QK_K, scratch);
            run_group(a, w->type, scratch, 0, 0, c, out + k, ld, &st);
        }
    }
    if (st.cfgT) hsd_amx_tiles_restore(&st.prev);
}

#endif /* HSD_MM_HAVE_AVX512 */
