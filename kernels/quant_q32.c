/* Q4_0, Q5_0, Q4_1 and Q5_1 weight rows times Q8_0 activations as exact integer block sums.
 *
 * llama.cpp's CPU backend repacks every Q4_0 matrix whose row count is a multiple of 8 into
 * interleaved groups of 8 rows (ggml-cpu/repack.cpp, "q4_0_8x8_q8_0", chosen on any CPU with
 * AVX2, the zen4 build included) and multiplies them with its own kernels: per 32-element
 * block, the exact integer sum of the 32 products (q - 8) * q8, then one fused multiply-add
 *     acc = fma((float)isum_b, d_w[b] * d_x[b], acc)      (d_w * d_x rounded to float first)
 * in block order, one accumulator per (row, token). Dequantising to fp32 and summing the
 * products in float (hsd's earlier path) differs from it by float roundings only, but those
 * move an activation across a rounding boundary of the next layer's 8-bit quantisation now
 * and then, and such flips grew to 1e-4 in the logits' cosine on tiny-llama (62/64 argmax;
 * bench/RESULTS.md). This file computes the same sums in the same order, so a Q4_0 row's
 * result is the llama.cpp one bit for bit, and it does not depend on the other rows or tokens
 * (batch invariance).
 *
 * Q5_0 (q - 16), Q4_1 and Q5_1 (q·d + m) take the same steps, the minimum adding one more
 * per block: acc = fma(m_w, d_x · Σ q8, acc), d_x · Σ q8 exact in fp32 (an 11-bit
 * significand times at most 32·127). These are the packed AVX-512 kernel's steps
 * (kernels/matmul_q8.h), so every level gives the same bits. (llama.cpp sums these three in
 * eight float lanes per row: not reproduced; its logits agree within the bars of
 * tests/test_gguf_quant.c.) The scalar reference defines the result; the AVX2 version keeps 8
 * rows in the 8 lanes of one accumulator, each lane the reference's chain. */
#include <math.h>
#include <string.h>

#include "kernels/cpu_features.h"
#include "kernels/quant.h"
#include "kernels/quant_x86_q32.h"

bool hsd_quant_is_q32(hsd_dtype t) {
    return t == HSD_DT_Q4_0 || t == HSD_DT_Q5_0 || t == HSD_DT_Q4_1 || t == HSD_DT_Q5_1;
}

static float half_of(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return hsd_fp16_to_fp32(h);
}

float hsd_quant_dot_q32_ref(hsd_dtype t, const void *row, const hsd_q8_0 *x, int64_t cols) {
    const hsd_q32_form f = hsd_q32_form_of(t);
    const uint8_t *b = row;
    float acc = 0.0f;
    for (int64_t i = 0; i < cols / 32; i++, b += f.bytes) {
        uint32_t qh = 0;
        if (f.five) memcpy(&qh, b + f.qh, 4);
        int32_t isum = 0;
        for (int j = 0; j < 32; j++) {
            int q = (j < 16 ? b[f.qs + j] & 15 : b[f.qs + j - 16] >> 4) | (int)((qh >> j) & 1) << 4;
            isum += (q - f.off) * x[i].qs[j];
        }
        acc = fmaf((float)isum, half_of(b) * x[i].d, acc);
        if (f.mins) acc = fmaf(half_of(b + 2), x[i].d * (float)x[i].sum, acc);
    }
    return acc;
}

#if defined(__x86_64__) && defined(__GNUC__)
#define HSD_AVX2Q32 __attribute__((target("avx2,fma,f16c")))

/* The 32 weights of a block as bytes: q - off, signed (the _0 types), or q, unsigned. */
HSD_AVX2Q32 static inline __m256i weights32(const hsd_q32_form *f, const uint8_t *b) {
    __m256i q = hsd_q32_nibbles(b + f->qs);
    if (f->five) {
        uint32_t qh;
        memcpy(&qh, b + f->qh, 4);
        q = _mm256_or_si256(q, hsd_q32_bits(qh));
    }
    return f->off ? _mm256_sub_epi8(q, _mm256_set1_epi8((char)f->off)) : q;
}

/* The products of one block's 32 weights w (as weights32 gives them; ws: w's absolute values
 * for the signed types) with 32 activation bytes, as eight int32 partial sums. Signed weights
 * (|w| <= 16) go through the sign trick, unsigned ones (<= 31) straight into maddubs: a pair of
 * products fits int16 either way (2 · 31 · 127). */
HSD_AVX2Q32 static inline __m256i block_products(int sgn, __m256i w, __m256i ws, const int8_t *q8) {
    const __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)q8);
    const __m256i p = sgn ? _mm256_maddubs_epi16(ws, _mm256_sign_epi8(a, w)) : _mm256_maddubs_epi16(w, a);
    return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
}

#define Q32_T 4 /* tokens per pass: each block's weights are unpacked once for them */

/* out[t·ld + r] for r < nrows (<= 8) rows at rows + r * rb and t < nt (<= Q32_T) tokens of x
 * (nb blocks each): lane r of acc[t] holds row r's chain for token t, the same steps whatever
 * nt (batch invariance). */
HSD_AVX2Q32 static void dot8(const hsd_q32_form *f, const uint8_t *rows, size_t rb, int32_t nrows,
                             const hsd_q8_0 *x, int64_t nb, int32_t nt, float *out, int32_t ld) {
    const uint8_t *p[8];
    for (int r = 0; r < 8; r++) p[r] = rows + (size_t)(r < nrows ? r : nrows - 1) * rb;
    const int sgn = f->off != 0;
    __m256 acc[Q32_T];
    for (int t = 0; t < Q32_T; t++) acc[t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        __m256i w[8], ws[8];
        uint16_t dh[8], mh[8];
        for (int r = 0; r < 8; r++) {
            const uint8_t *b = p[r] + (size_t)f->bytes * i;
            w[r] = weights32(f, b);
            ws[r] = sgn ? _mm256_sign_epi8(w[r], w[r]) : w[r];
            memcpy(&dh[r], b, 2);
            memcpy(&mh[r], b + 2, 2);
        }
        const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)dh));
        const __m256 mw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)mh));
        for (int32_t t = 0; t < nt; t++) {
            const hsd_q8_0 *xt = x + (size_t)t * nb + i;
            __m256i v[8];
            for (int r = 0; r < 8; r++) v[r] = block_products(sgn, w[r], ws[r], xt->qs);
            /* integer sums are exact in any order: reduce the 8 x 8 partials to one per lane */
            __m256i s01 = _mm256_hadd_epi32(v[0], v[1]), s23 = _mm256_hadd_epi32(v[2], v[3]);
            __m256i s45 = _mm256_hadd_epi32(v[4], v[5]), s67 = _mm256_hadd_epi32(v[6], v[7]);
            __m256i s03 = _mm256_hadd_epi32(s01, s23), s47 = _mm256_hadd_epi32(s45, s67);
            __m256i isum = _mm256_add_epi32(_mm256_permute2x128_si256(s03, s47, 0x20),
                                            _mm256_permute2x128_si256(s03, s47, 0x31));
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(dw, _mm256_set1_ps(xt->d)),
                                     acc[t]);
            if (f->mins) acc[t] = _mm256_fmadd_ps(mw, _mm256_set1_ps(xt->d * (float)xt->sum), acc[t]);
        }
    }
    for (int32_t t = 0; t < nt; t++) {
        float o[8];
        _mm256_storeu_ps(o, acc[t]);
        memcpy(out + (size_t)t * ld, o, sizeof(float) * (size_t)nrows);
    }
}

bool hsd_quant_matmul_q32_avx2(hsd_dtype t, const void *rows, size_t rb, int32_t nrows,
                               const hsd_q8_0 *x, int32_t n, int64_t cols, float *out,
                               int32_t ld) {
    if (hsd_cpu_level_active() < HSD_CPU_AVX2) return false; /* kernels/cpu_features.h */
    const hsd_q32_form f = hsd_q32_form_of(t);
    const int64_t nb = cols / 32;
    for (int32_t r = 0; r < nrows; r += 8)
        for (int32_t t0 = 0; t0 < n; t0 += Q32_T)
            dot8(&f, (const uint8_t *)rows + (size_t)r * rb, rb, nrows - r < 8 ? nrows - r : 8,
                 x + (size_t)t0 * nb, nb, n - t0 < Q32_T ? n - t0 : Q32_T,
                 out + (size_t)t0 * ld + r, ld);
    return true;
}

#else

bool hsd_quant_matmul_q32_avx2(hsd_dtype t, const void *rows, size_t rb, int32_t nrows,
                               const hsd_q8_0 *x, int32_t n, int64_t cols, float *out,
                               int32_t ld) {
    (void)t, (void)rows, (void)rb, (void)nrows, (void)x, (void)n, (void)cols, (void)out, (void)ld;
    return false;
}

#endif
