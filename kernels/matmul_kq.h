/* Q4_K / Q5_K / Q6_K products on AVX-512 VNNI over row-interleaved weights ("kqp";
 * kernels-internal). The k-quant counterpart of matmul_q8.h.
 *
 * Why: the row kernels of quant_x86_q8k_avx512.c unpack a row's nibbles, scales and mins for
 * at most 4 tokens and end each row with a horizontal sum, so verifying 16 tokens cost 4-5
 * forwards of one. Here rows go in groups of 16, one row per 32-bit lane: a weight vector
 * holds 4 columns of 16 rows, one vpdpbusd with 4 activation bytes broadcast adds 4 products
 * to each of the 16 rows, and a group's weights are unpacked once per 32 (Q6_K: 16) columns
 * for up to 16 tokens held in registers.
 *
 * Layout of a group (nb = cols/256 super-blocks): block after block, each its weight planes
 * and then its small per-block data ("tail", HSD_KQP_TAIL bytes, so that every weight vector
 * stays 64-byte aligned). Interleaved, a product reads one stream; with all the planes first
 * and the tails after them it read two, 16-25 KB apart, and on Zen 4 a thread streamed 10-13%
 * slower at one token, 9-15% at 8 (bench/notes/kquant_packed.md, session 23):
 *   Q4_K  per block 2048 B: dword D (0..31) of the 16 rows' qs[128] (vector D, lane j =
 *         qs[4D..4D+3] of row j): its low nibbles are sub-block 2(D/8) columns 4(D%8).., its
 *         high nibbles sub-block 2(D/8)+1 at the same columns.
 *   Q5_K  the same 2048 B, then 512 B: dword v (0..7) of the rows' qh[32] (bit s of a byte:
 *         fifth bit of sub-block s at that column).
 *   Q6_K  per block 3072 B: dword D (0..31) of ql[128], then dword E (0..15) of qh[64].
 *   tail  Q4_K/Q5_K 320 B: scales u8 [8][16 rows], mins u8 [4][16 rows][2] (pairs 2p, 2p+1),
 *         d fp16 [16], dmin fp16 [16]; Q6_K 288 B: scales i8 [16][16 rows], d fp16 [16], then
 *         32 zero bytes (Q6_K's 3072 + 288 is not a multiple of 64).
 * The 6-bit scales and mins are stored unpacked (one byte each): 2.8% more bytes than the
 * GGUF blocks for Q4_K, against decoding them per lane in the inner loop. Lanes of missing
 * rows are zero (zero scales: they add 0).
 *
 * Arithmetic (each (row, token) pair on its own lane, the same sequence whatever the number
 * of tokens, the group or the lane: batch invariance by construction). Activations are
 * llama.cpp's Q8_K blocks (hsd_quant_q8k: d, q[256], sums of 16). Per super-block b, exact
 * int32 sums, then fp32 steps in block order starting from acc = 0:
 *   Q4_K/Q5_K: I = sum_s sc_s * sum_{e in s} q_e x_e,  M = sum_s m_s * (bsum_2s + bsum_2s+1)
 *              acc = fma(dx*dw, (float)I, acc); acc = fma(-(dx*dmin), (float)M, acc)
 *   Q6_K:      I = sum_k sc_k * (sum_{e in k} q_e x_e - 32 bsum_k)   (q_e = 0..63)
 *              acc = fma(dx*dw, (float)I, acc)
 * hsd_kqp_dot_ref states it in scalar C from the GGUF blocks; the vector kernel equals it bit
 * for bit. It is not the AVX2 row kernel's float order (that one sums 8 partial lanes per
 * block), so results differ from the other levels in the last bits, as llama.cpp's own
 * repacked kernels differ from its row kernels; llama.cpp agreement is tested on logits. */
#ifndef HSD_KERNELS_MATMUL_KQ_H
#define HSD_KERNELS_MATMUL_KQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/matmul_kern.h"
#include "kernels/matmul_pack.h"
#include "kernels/quant.h"

/* Bytes of a block's tail (Q6_K's padded), after its weight planes. */
#define HSD_KQP_TAIL 320
/* Bytes of one group of `cols` columns (a multiple of 256) of type t, a multiple of 64. */
size_t hsd_kqp_group_bytes(hsd_dtype t, int32_t cols);
/* Packs `count` (<= 16) rows given by pointers to their GGUF blocks (nb super-blocks each)
 * into one group at dst (hsd_kqp_group_bytes); lanes count..15 get zeros. The AVX-512 packer
 * where the active CPU level (cpu_features.h) has it, else the portable one: the same bytes. */
void hsd_kqp_pack_group(hsd_dtype t, const uint8_t *const *rows, int32_t count, int32_t nb,
                        uint8_t *dst);
/* The portable packer: the reference the vector one is tested against. */
void hsd_kqp_pack_group_ref(hsd_dtype t, const uint8_t *const *rows, int32_t count,
                            int32_t nb, uint8_t *dst);
#ifdef HSD_MM_HAVE_AVX512
/* The AVX-512 (F/BW) packer (matmul_pack_avx512.c): call only where it runs. */
void hsd_kqp_pack_group_avx512(hsd_dtype t, const uint8_t *const *rows, int32_t count,
                               int32_t nb, uint8_t *dst);
#endif
/* The packed arithmetic above in scalar C, from a row's GGUF blocks and a token's Q8_K blocks. */
float hsd_kqp_dot_ref(hsd_dtype t, const void *row, const hsd_q8k *x, int64_t cols);

/* The per-token extras, HSD_KQP_EXTRAS(t) int32 per token and block (sums of 32 activations
 * for Q4_K/Q5_K, -32 x sums of 8 for Q6_K), for n tokens of `cols` columns: their bytes (for
 * any type: the larger stride), and hsd_kqp_prepare fills them at buf from a->xk. Q4_K/Q5_K
 * keep the smaller stride: a prefill reads them for every token and block, and at Q6_K's
 * stride a 512-token Q4_K_M prefill took 2-4% longer. */
#define HSD_KQP_EXTRAS(t) ((t) == HSD_DT_Q6_K ? 32 : 16)
size_t hsd_kqp_extra_bytes(int32_t n, int32_t cols);
void hsd_kqp_prepare(hsd_mm_acts *a, hsd_dtype t, void *buf);

/* Which token tiles go to the AMX-INT8 kernel (where the CPU has it). It pays a fixed cost per
 * super-block (building the scaled B tiles) that the AVX-512 kernel pays per token, so it
 * wins from about 13 tokens for Q4_K / Q5_K and 14 for Q6_K (three digit tiles). While its
 * prefetch was one burst per super-block, those were 14 and, for Q6_K, only several 16-token
 * chunks sharing the cost (prefill): session 16, bench/notes/kquant_packed.md. Both
 * give the same bits, so the choice never changes a result. Below this many tokens in a
 * product no tile uses AMX (chunks share weights only from 32), so matmul.c does not build the
 * AMX activation layout there (decode). */
#define HSD_KQP_AMX_MIN_T 13
#define HSD_KQP_AMX_MIN_T_Q6K 14

/* The per-vendor tuning of the k-quant kernels (the prefetch distance, the tails' prefetch, and
 * Q4_K / Q6_K's scaling instruction; the same bits either way): -1 the CPU's vendor (the
 * default), 0 Intel's, 1 AMD's. Process-wide; set by tests, which run both on any CPU.
 * hsd_kqp_tuning_amd: the one in force. */
void hsd_kqp_tuning_set(int amd);
bool hsd_kqp_tuning_amd(void);

#ifdef HSD_MM_HAVE_AVX512
/* hsd_quant_q8k (kernels/quant.h) with AVX-512 F/BW: the same bytes. */
void hsd_kqp_quantize(const float *x, int64_t cols, hsd_q8k *out);
/* out[t][j] = W[ids ? ids[r0 + j] : r0 + j] · x[t] for j < count, t < a->n, with the packed
 * copy pk when given (rows without ids only), else packing each group into `scratch`
 * (hsd_kqp_group_bytes, 64-byte aligned) first. AVX-512 VNNI: call only where it runs; amx:
 * the CPU has AMX-INT8 with tile data granted, and tiles of enough tokens may use it (the
 * same bits, matmul_amx.c). */
void hsd_kqp_rows(const hsd_mm_acts *a, const hsd_mat *w, const hsd_mm_packed *pk,
                  const int32_t *ids, int32_t r0, int32_t count, float *out, int32_t ld,
                  uint8_t *scratch, bool amx);
#endif

#endif
