/* Products of the 32-column block types, Q8_0, Q5_0, Q4_0, Q5_1 and Q4_1, on AVX-512 VNNI
 * with row-interleaved weights (kernels-internal).
 *
 * Layout ("q8p"): rows go in groups of 16. A group holds its 32-column blocks in pairs
 * (blocks 2p and 2p + 1; an odd count's last pair has a zero second block): the two blocks'
 * weights, then their 16 rows' fp16 scales (2 × 32 bytes, one cache line), then for Q4_1 /
 * Q5_1 their fp16 minima (the same shape), so that a product reads one stream and every
 * weight vector stays 64-byte aligned. (With all the blocks' weights first and the scales
 * after them, a thread read two streams; on Zen 4 one thread from memory took 5-13% longer at
 * 8 and 16 tokens, bench/notes/kquant_packed.md session 23.) Each block's weights are 8
 * vectors of u8 (vector k, lane j: weights 4k..4k+3 of row j), stored
 *   Q8_0: as they are used, q + 128 (8 × 64 bytes);
 *   Q4_0: as the file's nibbles, 4 × 64 bytes: vector k (k < 4) lane j holds bytes 4k..4k+3
 *         of row j's 16 quant bytes, whose low nibbles are weights 4k.. and high nibbles
 *         weights 16 + 4k.. (vector k + 4), so the unpack is an and and a shift;
 *   Q5_0: the Q4_0 nibbles, then one 64-byte vector of the fifth bits, lane j a 32-bit word
 *         whose bit 8b + k is the fifth bit of weight 4k + b of row j: shifted by 4 − k
 *         (left, right for k > 4), its bit 4 in byte b is what weight vector k needs;
 *   Q4_1, Q5_1: as Q4_0, Q5_0.
 * The u8 weights are q + o (o = 128, 8,
 * 16 for Q8_0, Q4_0, Q5_0: the type's offset; 0 for the _1 types), so one vpdpbusd of weight
 * vector k
 * with 4 activation bytes broadcast to every lane adds 4 products to each of 16 rows, and a
 * row's block dot is 8 instructions plus the start value −o·Σx, exact in int32, with no
 * horizontal sum; each lane then takes one fp32 scale-and-add per block:
 *     acc = fma((float)isum, d_w · d_x, acc)    [then acc = fma(m_w, d_x·Σq_x, acc): Q4_1, Q5_1]
 * llama.cpp's arithmetic for Q4_0 (kernels/quant_q32.c: the same bits as its reference) and
 * the exact block sums for Q5_0. A (row, token) result is a sequence of per-block steps of its
 * own lane, the same whatever the number of tokens, the group or the lane: batch invariance
 * by construction. A group of a missing row (the last group of a matrix) holds zero weights
 * and zero scales. The bytes equal the file's (34, 22, 18 per 32 weights) up to that padding.
 *
 * Activations are stored block-major ([nb][n]) so that a tile's tokens sit at constant
 * offsets from one pointer per block.
 *
 * Weights come from a copy packed at load time (hsd_mm_pack, kept on the matrix) or, for
 * matrices without one and for row subsets (ids), are packed one group at a time into
 * scratch as the product runs: the same lanes, the same bits. */
#ifndef HSD_KERNELS_MATMUL_Q8_H
#define HSD_KERNELS_MATMUL_Q8_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/matmul_kern.h"
#include "kernels/matmul_pack.h"
#include "kernels/quant.h"

#define HSD_Q8P_ROWS HSD_MM_PACK_ROWS /* rows per group */
#define HSD_Q8P_BLOCK_BYTES 512 /* Q8_0 weight bytes of one block of a group */
#define HSD_Q8P_SCALE_BYTES 32  /* fp16 scales of one block of a group */
/* Tokens from which a Q8_0 product at the AMX level runs on AMX-INT8 (matmul_amx.c, the same
 * bits): with one token the AVX-512 VNNI kernel streams the weights faster. */
#define HSD_Q8P_AMX_MIN_T 2

/* Whether t is one of the layout's types. */
static inline int hsd_q8p_type(hsd_dtype t) {
    return t == HSD_DT_Q8_0 || t == HSD_DT_Q5_0 || t == HSD_DT_Q4_0 || t == HSD_DT_Q5_1 ||
           t == HSD_DT_Q4_1;
}
/* Whether the type's blocks carry a minimum (value q·d + m). */
static inline int hsd_q8p_has_min(hsd_dtype t) {
    return t != HSD_DT_Q8_0 && hsd_q32_form_of(t).mins;
}
/* Weight bytes of one block of a group of type t: 8 vectors (Q8_0), 4 of nibbles (+ 1 of
 * fifth bits). */
static inline size_t hsd_q8p_block_bytes(hsd_dtype t) {
    return t == HSD_DT_Q8_0 ? HSD_Q8P_BLOCK_BYTES : hsd_q32_form_of(t).five ? 320 : 256;
}
/* Bytes of a pair of blocks of a group of type t: weights, scales (and minima), a multiple
 * of 64. */
static inline size_t hsd_q8p_pair_bytes(hsd_dtype t) {
    return 2 * hsd_q8p_block_bytes(t) + 2 * HSD_Q8P_SCALE_BYTES * (hsd_q8p_has_min(t) ? 2 : 1);
}
/* Block b's weights in the group at g (the layout above). */
static inline const uint8_t *hsd_q8p_weights(const uint8_t *g, hsd_dtype t, int32_t b) {
    return g + (size_t)(b >> 1) * hsd_q8p_pair_bytes(t) + (size_t)(b & 1) * hsd_q8p_block_bytes(t);
}
/* Block b's 16 fp16 scales; its minima (Q4_1, Q5_1) follow at + 2 × 16. */
static inline const uint16_t *hsd_q8p_scales(const uint8_t *g, hsd_dtype t, int32_t b) {
    return (const uint16_t *)(const void *)(g + (size_t)(b >> 1) * hsd_q8p_pair_bytes(t) +
                                            2 * hsd_q8p_block_bytes(t)) +
           (size_t)(b & 1) * HSD_Q8P_ROWS;
}
/* The offset o of the stored u8 weights (q + o): the activations' start value is −o·Σx. */
static inline int32_t hsd_q8p_offset(hsd_dtype t) {
    return t == HSD_DT_Q8_0 ? 128 : hsd_q32_form_of(t).off;
}

/* Bytes of one group of type t and `cols` columns (cols a multiple of 32). */
size_t hsd_q8p_group_bytes(hsd_dtype t, int32_t cols);

#ifdef HSD_MM_HAVE_AVX512
/* Packs `count` (<= 16) rows of type t given by pointers to their data (nb blocks each) into
 * one group at dst (hsd_q8p_group_bytes, 64-byte aligned); lanes count..15 get zero weights
 * (stored as the offset for Q8_0, 0 for the nibble types) and zero scales. AVX-512: call only
 * where the kernels run. */
void hsd_q8p_pack_group(hsd_dtype t, const uint8_t *const *rows, int32_t count, int32_t nb,
                        uint8_t *dst);
/* Bytes of prepared activations for n tokens of `cols` (64-byte aligned buffer). */
size_t hsd_q8p_acts_bytes(int32_t n, int32_t cols);
/* Fills a->xq (int8 quants, [n][cols]), a->xd (fp32 block scales, [n][nb]) and a->xc
 * (int32 −o·Σq per block, [n][nb], o = hsd_q8p_offset of the weights' type t) from a->x into
 * buf: llama.cpp's Q8_0 rounding. */
void hsd_q8p_prepare(hsd_mm_acts *a, void *buf, hsd_dtype t);
/* out[t][j] = W[ids ? ids[r0 + j] : r0 + j] · x[t] for j < count, t < a->n, with the packed
 * copy pk when given (rows without ids only) and `scratch` (one group packed on the fly:
 * hsd_q8p_group_bytes, 64-byte aligned) otherwise. */
void hsd_q8p_rows(const hsd_mm_acts *a, const hsd_mat *w, const hsd_mm_packed *pk, const int32_t *ids,
                  int32_t r0, int32_t count, float *out, int32_t ld, uint8_t *scratch);
#endif

#endif
