/* GGML's block-quantised weight types (the ones llama.cpp's GGUF files hold): row
 * dequantisation, dot products, and the quantised matmul of the forward pass.
 *
 * Every type has a scalar reference (kernels/quant_ref.c), written from the block layouts
 * alone, and vectorised versions (kernels/quant_x86.c, AVX2 picked at run time) whose
 * dequantisers must equal the reference bit for bit (tests/test_gguf_quant.c). The entry
 * point hsd_quant_dequant picks the fastest version this CPU runs.
 * hsd_quant_matmul_rows multiplies as llama.cpp's CPU backend does: activations rounded to
 * 8 bits (kernels/quant_act.c); Q4_K/Q5_K/Q6_K rows by integer dot products with Q8_K blocks
 * (reference kernels/quant_q8k_ref.c; AVX2 kernels/quant_x86_q8k.c; AVX-512
 * kernels/quant_x86_q8k_avx512.c; all the same bits), Q4_0 / Q5_0 / Q4_1 / Q5_1 rows by exact
 * integer sums with Q8_0 blocks (llama.cpp's repacked Q4_0 arithmetic: kernels/quant_q32.c),
 * everything else dequantised to fp32 first.
 *
 * Layouts (little endian, "h" = IEEE fp16), value of element e of a block:
 *   Q4_0  32/18 B: h d, u8 qs[16]               ((nibble) - 8) * d
 *   Q4_1  32/20 B: h d, h m, u8 qs[16]          nibble * d + m
 *   Q5_0  32/22 B: h d, u32 qh, u8 qs[16]       ((nibble | bit<<4) - 16) * d
 *   Q5_1  32/24 B: h d, h m, u32 qh, u8 qs[16]  (nibble | bit<<4) * d + m
 *   Q8_0  32/34 B: h d, i8 qs[32]               q * d
 *   Q2_K 256/84 B: u8 scales[16], u8 qs[64], h d, h dmin
 *   Q3_K 256/110 B: u8 hmask[32], u8 qs[64], u8 scales[12], h d
 *   Q4_K 256/144 B: h d, h dmin, u8 scales[12], u8 qs[128]
 *   Q5_K 256/176 B: h d, h dmin, u8 scales[12], u8 qh[32], u8 qs[128]
 *   Q6_K 256/210 B: u8 ql[128], u8 qh[64], i8 scales[16], h d
 * (the per-element formulas of the super-block types are in quant_ref.c). */
#ifndef HSD_KERNELS_QUANT_H
#define HSD_KERNELS_QUANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/cpu_ops.h"

#include <string.h>

/* The fp16 at p (unaligned) as fp32 without branches for finite values: the magnitude bits
 * moved into a float's and rescaled by 2^112, exact for normal and subnormal halves; inf/nan
 * take the library conversion. The k-quant kernels read two per block, and the generic
 * conversion's branches showed in profiles (7%). */
static inline float hsd_quant_half_at(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    if ((h & 0x7c00) == 0x7c00) return hsd_fp16_to_fp32(h);
    uint32_t bits = (uint32_t)(h & 0x7fff) << 13;
    float f;
    memcpy(&f, &bits, 4);
    f *= 0x1p112f;
    return h & 0x8000 ? -f : f;
}

#define HSD_QK_K 256 /* elements of a k-quant super-block */

/* Quantises one row of fp32 to Q4_K or Q6_K blocks (cols a multiple of 256) or Q5_0 blocks
 * (a multiple of 32) at out (files hsd writes: kernels/quant_write.c); false for other types
 * or widths. */
bool hsd_quant_row(hsd_dtype t, const float *x, int64_t cols, void *out);

/* true for the block-quantised types (Q8_0 included), false for F32/F16/BF16 */
bool hsd_dtype_is_quant(hsd_dtype t);
/* Elements per block (1 for F32/F16/BF16) and bytes per block. */
int32_t hsd_dtype_block(hsd_dtype t);
size_t hsd_dtype_block_bytes(hsd_dtype t);

/* Scalar reference: out[0..cols) = row dequantised (cols a multiple of the block). */
void hsd_quant_dequant_ref(hsd_dtype t, const void *row, int64_t cols, float *out);
/* Scalar reference dot product: sum over e of dequant(e) * x[e], accumulated in order. */
float hsd_quant_dot_ref(hsd_dtype t, const void *row, const float *x, int64_t cols);

/* Best available version (vectorised when the CPU has it, otherwise the reference). */
void hsd_quant_dequant(hsd_dtype t, const void *row, int64_t cols, float *out);

/* Vectorised versions (kernels/quant_x86.c); return false (doing nothing) when the CPU or
 * the build lacks the instructions. Exposed so that the test checks them against the
 * reference directly. */
bool hsd_quant_dequant_avx2(hsd_dtype t, const void *row, int64_t cols, float *out);
bool hsd_quant_dot_avx2(hsd_dtype t, const void *row, const float *x, int64_t cols, float *dot);

/* Rounds activations x[0..cols) to what llama.cpp's CPU backend multiplies a matrix of type
 * wt with (8-bit Q8_K blocks for Q2_K..Q6_K, Q8_0 blocks for Q4_0..Q5_1 and Q8_0), as floats, into
 * out; false (out untouched) for the other types. kernels/quant_act.c. */
bool hsd_quant_act_round(hsd_dtype wt, const float *x, int64_t cols, float *out);

/* llama.cpp's Q8_K activation block: x ~ d * qs, with the sums of each 16 quants. */
typedef struct hsd_q8k {
    float d;
    int8_t qs[HSD_QK_K];
    int16_t bsums[HSD_QK_K / 16];
} hsd_q8k;

/* Quantises x[0..cols) (cols a multiple of 256) to Q8_K blocks by hsd_quant_act_round's rule. */
void hsd_quant_q8k(const float *x, int64_t cols, hsd_q8k *out);
/* Integer dot products of a Q4_K / Q5_K / Q6_K row with Q8_K activations (AVX2, as llama.cpp
 * computes them): false when the type or the CPU is not covered. kernels/quant_x86_q8k.c. */
bool hsd_quant_dot_q8k_avx2(hsd_dtype t, const void *row, const hsd_q8k *x, int64_t cols,
                            float *dot);
/* Their scalar reference (the arithmetic the vector versions must reproduce bit for bit);
 * false for other types. kernels/quant_q8k_ref.c. */
bool hsd_quant_dot_q8k_ref(hsd_dtype t, const void *row, const hsd_q8k *x, int64_t cols,
                           float *dot);
/* The same products with AVX-512 BW/VNNI, bit-identical to the AVX2 ones (false when the CPU
 * lacks them). kernels/quant_x86_q8k_avx512.c. */
bool hsd_quant_dot_q8k_avx512(hsd_dtype t, const void *row, const hsd_q8k *x, int64_t cols,
                              float *dot);
/* One row against n tokens (token k's blocks at x + k * cols / 256) into dots[0..n): the
 * row's weights unpacked once per block for up to 4 tokens; each token's bits those of
 * hsd_quant_dot_q8k_avx512 alone (batch invariance). */
bool hsd_quant_dot_q8k_avx512_n(hsd_dtype t, const void *row, const hsd_q8k *x, int32_t n,
                                int64_t cols, float *dots);

/* llama.cpp's Q8_0 activation block (d = fp16(amax / 127) as a float, q = round-half-even(x *
 * 127 / amax)): what it multiplies Q4_0 and Q5_0 weights with (Q4_1 and Q5_1: its Q8_1, the
 * same quants). */
typedef struct hsd_q8_0 {
    float d;
    int8_t qs[32];
    int32_t sum; /* Σ qs: what a Q4_1 / Q5_1 block's minimum multiplies (with d), as Q8_1's s */
} hsd_q8_0;

/* Quantises x[0..cols) (cols a multiple of 32) to Q8_0 blocks by hsd_quant_act_round's rule. */
void hsd_quant_q8_0(const float *x, int64_t cols, hsd_q8_0 *out);
/* Whether t is a 32-element block type with an integer dot here (Q4_0, Q5_0, Q4_1, Q5_1). */
bool hsd_quant_is_q32(hsd_dtype t);
/* Where a block of such a type keeps its parts (the layouts above): the minimum at byte 2
 * (the _1 types), then qh (the 5-bit types), then the 16 bytes of nibbles; `off` is what the
 * value subtracts from q (the _0 types: 8 or 16). One description for the reference, the
 * AVX2 dots and the AVX-512 packer. */
typedef struct hsd_q32_form {
    int mins, five, qh, qs, bytes, off;
} hsd_q32_form;
static inline hsd_q32_form hsd_q32_form_of(hsd_dtype t) {
    hsd_q32_form f;
    f.mins = t == HSD_DT_Q4_1 || t == HSD_DT_Q5_1;
    f.five = t == HSD_DT_Q5_0 || t == HSD_DT_Q5_1;
    f.qh = f.mins ? 4 : 2;
    f.qs = f.qh + (f.five ? 4 : 0);
    f.bytes = f.qs + 16;
    f.off = f.mins ? 0 : f.five ? 16 : 8;
    return f;
}
/* A row of such a type t times Q8_0 activations as llama.cpp's repacked Q4_0 kernels compute
 * Q4_0 (exact integer sum per block, then acc = fma(sum, d_w * d_x, acc) in block order; the
 * _1 types then acc = fma(m_w, d_x * Σq, acc)): the scalar reference, and the AVX2 version for
 * nrows rows rb bytes apart times n tokens (x: n × cols/32 blocks) into out[t·ld + r] (false
 * when the CPU lacks AVX2/FMA). Equal bit for bit, and equal to the AVX-512 packed kernel's
 * products. kernels/quant_q32.c. */
float hsd_quant_dot_q32_ref(hsd_dtype t, const void *row, const hsd_q8_0 *x, int64_t cols);
bool hsd_quant_matmul_q32_avx2(hsd_dtype t, const void *rows, size_t rb, int32_t nrows,
                               const hsd_q8_0 *x, int32_t n, int64_t cols, float *out,
                               int32_t ld);

/* Whether t is a k-quant whose products take Q8_K activations (Q4_K, Q5_K, Q6_K). */
bool hsd_quant_is_q8k(hsd_dtype t);
/* out[t][r] = W[row0 + r] · token t for a k-quant W, with the n tokens' activations already
 * quantised (hsd_quant_q8k, [n][cols/256] blocks): llama.cpp's integer arithmetic, each (row,
 * token) on its own, the same bits as hsd_quant_matmul_rows. */
void hsd_quant_matmul_q8k_rows(float *out, int32_t ld_out, const hsd_q8k *xq, int32_t n,
                               const hsd_mat *w, int32_t row0, int32_t count);
/* hsd_matmul_rows for a quantised matrix (kernels/cpu_ops.c dispatches here): rows are
 * dequantised four at a time into `scratch` (4*w->cols floats) and multiplied as fp32 with
 * x rounded by hsd_quant_act_round (fp32 x if that copy cannot be allocated). */
void hsd_quant_matmul_rows(float *out, int32_t ld_out, const float *x, int32_t n, const hsd_mat *w,
                           int32_t row0, int32_t count, float *scratch);

#endif
