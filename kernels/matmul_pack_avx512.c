/* The k-quant group packer (layout: matmul_kq.h) with 16 × 16 dword transposes in registers:
 * the AVX-512 counterpart of the portable hsd_kqp_pack_group_ref (matmul_kq_pack.c), byte
 * for byte the same groups (tests/test_matmul_kernels.c checks it on every row count).
 *
 * Why: every Q4_K/Q5_K/Q6_K matrix is packed at load (and row subsets on the fly per group),
 * and the portable packer moves 4 bytes at a time and decodes the 6-bit scales one row at a
 * time: about 0.3 s of CPU for a 1B Q4_K_M file (bench/notes/kquant_packed.md, "Load time").
 * Here a block of 16 rows is three transposes of 16 × 16 dwords (the weight planes and the
 * 16-byte header of d, dmin and scales) plus a few shuffles that spread the scales, decoded
 * for all 16 rows at once in their lanes. No memset of the group first: every byte of the
 * planes and tails is stored once, and only the padding at the group's end is zeroed. */
#include "kernels/matmul_kq.h"

#ifdef HSD_MM_HAVE_AVX512

#include <immintrin.h>
#include <string.h>

#define TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))
#define INL HSD_MM_INLINE
#define UNROLL HSD_MM_UNROLL

enum { Q4_W = 2048, Q5_W = 2560, Q6_W = 3072 };

/* The index vectors of the transpose: round b swaps bit b of the vector index with bit b of
 * the lane index (the same scheme as hsd_bf16p_pack_group). */
typedef struct tr_idx {
    __m512i lo[4], hi[4];
} tr_idx;

TGT static void tr_idx_init(tr_idx *t) {
    for (int b = 0; b < 4; b++) {
        int32_t m = 1 << b, lo[16], hi[16];
        for (int l = 0; l < 16; l++) {
            lo[l] = l & m ? 16 + (l & ~m) : l;
            hi[l] = l & m ? 16 + l : (l | m);
        }
        t->lo[b] = _mm512_loadu_si512(lo);
        t->hi[b] = _mm512_loadu_si512(hi);
    }
}

/* v[j] = the 16 dwords (mask: which of them; a word mask, so that a block's last 2 bytes
 * never pull in the 2 after them) at rows[j] + off, zero for j >= count; then transposed:
 * v[k] lane j = dword k of row j. Always inlined with the loops unrolled, so v stays in
 * registers. */
TGT static INL void load_tr(__m512i v[16], const uint8_t *const *rows, int32_t count, size_t off,
                            __mmask32 words, const tr_idx *t) {
    UNROLL for (int j = 0; j < 16; j++) v[j] =
        j < count ? _mm512_maskz_loadu_epi16(words, rows[j] + off) : _mm512_setzero_si512();
    UNROLL for (int b = 0; b < 4; b++) {
        const int vb = 1 << b;
        UNROLL for (int j = 0; j < 16; j++) {
            if (j & vb) continue;
            __m512i x = v[j], y = v[j | vb];
            v[j] = _mm512_permutex2var_epi32(x, t->lo[b], y);
            v[j | vb] = _mm512_permutex2var_epi32(x, t->hi[b], y);
        }
    }
}

/* Lane j holds bytes b0..b3 of row j; returns [b0 of rows 0..15, b1 of rows 0..15, b2.., b3..]:
 * a 4 × 4 byte transpose in each 128-bit chunk (rows 4c..4c+3), then a 4 × 4 dword one across
 * the chunks. AVX-512 BW only (no VBMI byte permute: not part of the AVX-512 level). */
TGT static INL __m512i bytes_by_position(__m512i v, __m512i bshuf, __m512i dperm) {
    return _mm512_permutexvar_epi32(dperm, _mm512_shuffle_epi8(v, bshuf));
}

TGT void hsd_kqp_pack_group_avx512(hsd_dtype t, const uint8_t *const *rows, int32_t count,
                                   int32_t nb, uint8_t *dst) {
    tr_idx ti;
    tr_idx_init(&ti);
    int8_t bs[64];
    int32_t dp[16];
    int16_t wp_even_odd[32];
    for (int c = 0; c < 4; c++)
        for (int i = 0; i < 16; i++) bs[16 * c + i] = (int8_t)(4 * (i % 4) + i / 4);
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 4; c++) dp[4 * r + c] = 4 * c + r;
    for (int k = 0; k < 32; k++) wp_even_odd[k] = (int16_t)(k < 16 ? 2 * k : 2 * (k - 16) + 1);
    const __m512i bshuf = _mm512_loadu_si512(bs), dperm = _mm512_loadu_si512(dp),
                  weo = _mm512_loadu_si512(wp_even_odd);
    const __m512i m3f = _mm512_set1_epi8(0x3f), m0f = _mm512_set1_epi8(0x0f),
                  mc0 = _mm512_set1_epi8((char)0xc0);
    const size_t bb = hsd_dtype_block_bytes(t);
    const size_t W = t == HSD_DT_Q4_K ? Q4_W : t == HSD_DT_Q5_K ? Q5_W : Q6_W;
    const size_t TL = HSD_KQP_TAIL;
    __m512i v[16];
    for (int32_t b = 0; b < nb; b++) {
        const size_t g = (size_t)b * bb;
        uint8_t *wp = dst + (size_t)b * (W + TL), *tail = wp + W;
        if (t == HSD_DT_Q6_K) { /* ql[128] qh[64] scales[16] d */
            for (int h = 0; h < 3; h++) { /* ql dwords 0..15, 16..31, then qh dwords 0..15 */
                load_tr(v, rows, count, g + 64 * (size_t)h, ~(__mmask32)0, &ti);
                UNROLL for (int k = 0; k < 16; k++)
                    _mm512_storeu_si512(wp + 64 * (16 * h + k), v[k]);
            }
            load_tr(v, rows, count, g + 192, 0x1ff, &ti); /* 16 scale bytes, then d */
            UNROLL for (int k = 0; k < 4; k++)
                _mm512_storeu_si512(tail + 64 * k, bytes_by_position(v[k], bshuf, dperm));
            /* d, then the tail's 32 bytes of padding as zeros (the portable packer's bytes) */
            _mm512_storeu_si512(tail + 256, _mm512_zextsi256_si512(_mm512_castsi512_si256(
                                                _mm512_permutexvar_epi16(weo, v[4]))));
            continue;
        }
        /* Q4_K: d dmin scales[12] qs[128]; Q5_K: d dmin scales[12] qh[32] qs[128] */
        const int five = t == HSD_DT_Q5_K;
        load_tr(v, rows, count, g, five ? 0xffffff : 0xff, &ti); /* header (+ Q5_K's qh) */
        if (five)
            UNROLL for (int k = 0; k < 8; k++) _mm512_storeu_si512(wp + 2048 + 64 * k, v[4 + k]);
        /* the 6-bit scales and mins of all 16 rows at once (k4_scale_min in matmul_kq_pack.c):
         * sub-blocks 0..3 from bytes 0..7, 4..7 from bytes 8..11 and the top bits of 0..7 */
        const __m512i s0 = v[1], s4 = v[2], s8 = v[3];
        const __m512i sc_lo = _mm512_and_si512(s0, m3f), m_lo = _mm512_and_si512(s4, m3f);
        const __m512i sc_hi = _mm512_or_si512(
            _mm512_and_si512(s8, m0f), _mm512_srli_epi32(_mm512_and_si512(s0, mc0), 2));
        const __m512i m_hi =
            _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(s8, 4), m0f),
                            _mm512_srli_epi32(_mm512_and_si512(s4, mc0), 2));
        _mm512_storeu_si512(tail, bytes_by_position(sc_lo, bshuf, dperm));
        _mm512_storeu_si512(tail + 64, bytes_by_position(sc_hi, bshuf, dperm));
        /* mins in pairs (2p, 2p+1) per row: the 16-bit words of the lanes, word 0 then word 1 */
        _mm512_storeu_si512(tail + 128, _mm512_permutexvar_epi16(weo, m_lo));
        _mm512_storeu_si512(tail + 192, _mm512_permutexvar_epi16(weo, m_hi));
        _mm512_storeu_si512(tail + 256, _mm512_permutexvar_epi16(weo, v[0])); /* d, dmin */
        const size_t qs = five ? 48 : 16;
        for (int h = 0; h < 2; h++) {
            load_tr(v, rows, count, g + qs + 64 * (size_t)h, ~(__mmask32)0, &ti);
            UNROLL for (int k = 0; k < 16; k++)
                _mm512_storeu_si512(wp + 64 * (16 * h + k), v[k]);
        }
    }
    const size_t used = (size_t)nb * (W + TL);
    memset(dst + used, 0, hsd_kqp_group_bytes(t, nb * HSD_QK_K) - used);
}

#endif
