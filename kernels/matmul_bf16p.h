/* BF16 products on AVX-512 BF16 with row-interleaved weights (kernels-internal).
 *
 * Layout ("bf16p"): rows go in groups of 16 (kernels/matmul_pack.h). A group holds P =
 * ceil(cols/2) vectors of 64 bytes; lane j of vector p is the bf16 pair (w[j][2p], w[j][2p+1])
 * of row j (the pair past an odd last column holds a zero; lanes of missing rows hold zeros).
 * One vdpbf16ps of vector p with token t's pair p broadcast to every lane adds two products to
 * each of 16 rows, so a tile of up to 16 tokens reads each weight vector once, from one
 * sequential stream per group, and needs no horizontal sum. A (row, token) result is its
 * lane's chain of P steps in column order from zero: the same whatever n, the tile, the group
 * or the thread (batch invariance by construction). The copy has exactly the matrix's bytes
 * (up to the padding of odd columns and of the last group).
 *
 * Activations are rounded to bf16 once per call and stored pair-major ([P][n] pairs), so that
 * a tile's tokens sit at constant offsets from one pointer per pair.
 *
 * Why (llama-3.2-1b shape, 2 threads): the earlier row-major tile of 4 rows × 4 tokens made two
 * passes over its rows at n = 8 and kept forward(8) at 1.33-1.87 × forward(1); see
 * bench/RESULTS.md for the measurements of this layout. */
#ifndef HSD_KERNELS_MATMUL_BF16P_H
#define HSD_KERNELS_MATMUL_BF16P_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/matmul_kern.h"
#include "kernels/matmul_pack.h"

/* Bytes of one group of `cols` columns (a multiple of 64). */
size_t hsd_bf16p_group_bytes(int32_t cols);

#ifdef HSD_MM_HAVE_AVX512
/* Packs `count` (<= 16) BF16 rows of `cols` columns given by pointers into one group at dst
 * (hsd_bf16p_group_bytes, 64-byte aligned); lanes count..15 get zeros. AVX-512: call only
 * where the kernels run. */
void hsd_bf16p_pack_group(const uint8_t *const *rows, int32_t count, int32_t cols, uint8_t *dst);
/* Bytes of prepared activations for n tokens of `cols` (64-byte aligned buffer). */
size_t hsd_bf16p_acts_bytes(int32_t n, int32_t cols);
/* Fills a->xp (bf16 pairs, [P][n]) from a->x into buf: round to nearest even. */
void hsd_bf16p_prepare(hsd_mm_acts *a, void *buf);
/* out[t][j] = W[ids ? ids[r0 + j] : r0 + j] · x[t] for j < count, t < a->n, with the packed
 * copy pk when given (rows without ids only) and `scratch` (one group packed on the fly:
 * hsd_bf16p_group_bytes, 64-byte aligned) otherwise. */
void hsd_bf16p_rows(const hsd_mm_acts *a, const hsd_mat *w, const hsd_mm_packed *pk,
                    const int32_t *ids, int32_t r0, int32_t count, float *out, int32_t ld,
                    uint8_t *scratch);
#endif

#endif
