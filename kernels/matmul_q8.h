/* Q8_0 products on AVX-512 VNNI with row-interleaved weights (kernels-internal).
 *
 * Layout ("q8p"): rows go in groups of 16. A group holds, for each 32-column block b,
 * 8 × 64 bytes of weights (vector k, lane j: bytes 4k..4k+3 of row j's block, each stored
 * as w + 128 in u8) and then, after all blocks, the 16 rows' fp16 block scales
 * (nb × 16 × 2 bytes). One vpdpbusd of weight vector k with 4 activation bytes broadcast to
 * every lane adds 4 products to each of 16 rows, so a row's block dot is 8 instructions,
 * exact in int32, with no horizontal sum; each lane then takes one fp32 scale-and-add per
 * block. A (row, token) result is a sequence of per-block steps of its own lane, the same
 * whatever the number of tokens, the group or the lane: batch invariance by construction.
 * A group of a missing row (the last group of a matrix) holds zero weights and zero scales.
 * The bytes equal Q8_0's (34 per 32 weights) up to that padding.
 *
 * Activations are stored block-major ([nb][n]) so that a tile's tokens sit at constant
 * offsets from one pointer per block.
 *
 * Weights come from a copy packed at load time (hsd_mm_pack, registered by the matrix's
 * data pointer) or, for matrices without one and for row subsets (ids), are packed one group
 * at a time into scratch as the product runs: the same lanes, the same bits. */
#ifndef HSD_KERNELS_MATMUL_Q8_H
#define HSD_KERNELS_MATMUL_Q8_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/matmul_kern.h"
#include "kernels/matmul_pack.h"

#define HSD_Q8P_ROWS HSD_MM_PACK_ROWS /* rows per group */
#define HSD_Q8P_BLOCK_BYTES 512 /* weight bytes of one block of a group */
#define HSD_Q8P_SCALE_BYTES 32  /* fp16 scales of one block of a group */

/* Bytes of one group of `cols` columns (cols a multiple of 32). */
size_t hsd_q8p_group_bytes(int32_t cols);

#ifdef HSD_MM_HAVE_AVX512
/* Packs `count` (<= 16) rows given by pointers to their Q8_0 data (nb blocks each) into one
 * group at dst (hsd_q8p_group_bytes, 64-byte aligned); lanes count..15 get zero weights
 * (stored 128) and zero scales. AVX-512: call only where the kernels run. */
void hsd_q8p_pack_group(const uint8_t *const *rows, int32_t count, int32_t nb, uint8_t *dst);
/* Bytes of prepared activations for n tokens of `cols` (64-byte aligned buffer). */
size_t hsd_q8p_acts_bytes(int32_t n, int32_t cols);
/* Fills a->xq (int8 quants, [n][cols]), a->xd (fp32 block scales, [n][nb]) and a->xc
 * (int32 −128·Σq per block, [n][nb]) from a->x into buf: llama.cpp's Q8_0 rounding. */
void hsd_q8p_prepare(hsd_mm_acts *a, void *buf);
/* out[t][j] = W[ids ? ids[r0 + j] : r0 + j] · x[t] for j < count, t < a->n, with the packed
 * copy pk when given (rows without ids only) and `scratch` (one group packed on the fly:
 * hsd_q8p_group_bytes, 64-byte aligned) otherwise. */
void hsd_q8p_rows(const hsd_mm_acts *a, const hsd_mat *w, const hsd_mm_packed *pk, const int32_t *ids,
                  int32_t r0, int32_t count, float *out, int32_t ld, uint8_t *scratch);
#endif

#endif
