/* BF16 and Q8_0 products on AMX tiles (kernels-internal), over the same row-interleaved packed
 * groups as the AVX-512 kernels (matmul_bf16p.h, matmul_q8.h), which are AMX's B-tile layout:
 *
 * - BF16 (AMX-BF16, tdpbf16ps): a group's 16 consecutive pair vectors (32 columns of 16 rows)
 *   are one 16 × 64-byte B tile; the A tile is up to 16 tokens × 32 bf16 activations (rounded
 *   to bf16 once per call, token-major). C accumulates in fp32 over the columns in steps of 32,
 *   in the tile, for up to 4 groups at once. Its own summation order inside each 32-column
 *   step (the hardware's), so its bits differ from the AVX-512 kernel's; within the path a
 *   (row, token) result is the same whatever n, tile or thread: C row t depends on A row t
 *   only, and every tile runs the same sequence of steps. Columns must be a multiple of 32
 *   (else the AVX-512 kernel runs).
 * - Q8_0 (AMX-INT8, tdpbsud): a group's 8 vectors of one 32-column block are an 8 × 64-byte B
 *   tile (u8 weights + 128); the A tile is up to 16 tokens' int8 block (matmul_q8.h's
 *   activations). Each block's exact int32 dot comes out of the tile and is scaled and added
 *   in fp32 exactly as the AVX-512 kernel does, so the results are bit for bit the AVX-512
 *   kernel's (tests check this).
 *
 * Tile state: each call configures the tiles for its token count on the calling thread and
 * before returning puts back the configuration it found (llama.cpp's AMX kernels configure a
 * thread once and rely on it) or, when there was none, releases the tiles (no tile state left
 * for context switches to save). The process must have been granted tile data
 * (kernels/cpu_features.c does it in its probe). */
#ifndef HSD_KERNELS_MATMUL_AMX_H
#define HSD_KERNELS_MATMUL_AMX_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/matmul_kern.h"
#include "kernels/matmul_pack.h"

#ifdef HSD_MM_HAVE_AVX512
/* A tile configuration (ldtilecfg's 64-byte operand). */
typedef struct hsd_amx_cfg {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} hsd_amx_cfg;
/* For kernels in other files: keep the calling thread's configuration in *prev, configure the
 * tiles for T (1..16) token rows (C 0..3 and A 4: T rows × 64 bytes; B 5..7: 16 × 64 bytes),
 * and put the kept configuration back (or release the tiles) after the product. */
void hsd_amx_tiles_save(hsd_amx_cfg *prev);
void hsd_amx_tiles_set(int T);
void hsd_amx_tiles_restore(const hsd_amx_cfg *prev);

/* The k-quant AMX kernels read their A tiles from a copy of the Q8_K quants laid out as tiles
 * (16 tokens × 64 bytes, contiguous and aligned: read from the Q8_K blocks directly, rows 292
 * bytes × blocks apart and split across cache lines, the tile loads took 30% of a 256-token
 * product) and the blocks' scales per block: bytes for n tokens of `cols` columns, and the
 * fill (a->xa, a->xad from a->xk). */
size_t hsd_amx_kq_acts_bytes(int32_t n, int32_t cols);
void hsd_amx_kq_prepare(hsd_mm_acts *a, void *buf);

/* One Q4_K (five 0) / Q5_K (five 1) packed group (matmul_kq.h) × nch (1..HSD_AMX_KQ_MAX_CHUNKS)
 * chunks of the T tokens the tiles are configured for, tokens t0 .. t0 + nch·T − 1, on
 * AMX-INT8: lane j of token t0 + i goes to dst[i·dld + j], bit for bit the AVX-512 kernel's
 * result (see the file). Each block's scaled weights are built once for all the chunks (a
 * prefill's 512 tokens pay for them twice). pf: prefetch this many bytes ahead in the group's
 * stream (hsd_kq_prefetch), 0 none. */
#define HSD_AMX_KQ_MAX_CHUNKS 16 /* 16 KB of accumulators on the stack */
void hsd_amx_kq45_tile(const uint8_t *grp, int32_t nb, const hsd_mm_acts *a, int32_t t0, int T,
                       int nch, int last, int pf, float *dst, int32_t dld, int five);
/* The same for one Q6_K packed group. In both, the last chunk keeps only its first `last`
 * (1..T) tokens: a tail shorter than a chunk runs padded with zero rows (the A layout's,
 * hsd_amx_kq_prepare), behind scaled weights built for the whole chunks anyway. */
void hsd_amx_kq6_tile(const uint8_t *grp, int32_t nb, const hsd_mm_acts *a, int32_t t0, int T,
                      int nch, int last, int pf, float *dst, int32_t dld);

/* Whether the AMX BF16 kernel takes a matrix of `cols` columns. */
static inline int hsd_amx_bf16_cols_ok(int32_t cols) {
    return cols > 0 && cols % 32 == 0;
}
/* Bytes of the bf16 activations, [n][cols] (64-byte aligned buffer). */
size_t hsd_amx_bf16_acts_bytes(int32_t n, int32_t cols);
/* Fills a->xb from a->x: round to nearest even. */
void hsd_amx_bf16_prepare(hsd_mm_acts *a, void *buf);
/* As hsd_bf16p_rows (same arguments, same packed copy or scratch), on AMX-BF16. */
void hsd_amx_bf16_rows(const hsd_mm_acts *a, const hsd_mat *w, const hsd_mm_packed *pk,
                       const int32_t *ids, int32_t r0, int32_t count, float *out, int32_t ld,
                       uint8_t *scratch);
/* As hsd_q8p_rows (activations from hsd_q8p_prepare), on AMX-INT8: the same bits. */
void hsd_amx_q8_rows(const hsd_mm_acts *a, const hsd_mat *w, const hsd_mm_packed *pk,
                     const int32_t *ids, int32_t r0, int32_t count, float *out, int32_t ld,
                     uint8_t *scratch);
#endif

#endif
