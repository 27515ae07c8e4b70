/* Streaming (flash-style) attention over one KV head's cache: the visible positions are read
 * in blocks of HSD_ATTN_BLOCK, in place, by every query row of the call (the query heads that
 * share the KV head under GQA, and several tokens of a chain), with an online softmax (running
 * max and sum, the output rescaled when the max grows) so that no score buffer grows with the
 * depth. Keys and values are converted to fp32 in registers as they are read: each key vector
 * once for all the rows that share a visible range (a token's query heads), each value vector
 * once for two of them.
 *
 * Batch invariance: block boundaries are at multiples of HSD_ATTN_BLOCK in *logical*
 * positions (the position a key has in the row's own sequence), and a row's arithmetic
 * depends only on its query, its visible range and the keys and values at those positions.
 * So a row's output is bit-identical whichever other rows share the call, however many
 * tokens its forward has, and whether its ancestors arrive as a chain or as a tree path. It
 * does depend on the CPU kernel level (kernels/cpu_features.h), fixed per process. */
#ifndef HSD_KERNELS_ATTENTION_H
#define HSD_KERNELS_ATTENTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/cpu_ops.h"

#define HSD_ATTN_BLOCK 32
/* A Q8_0 cache row: blocks of 32 elements along the head dimension, each an fp16 scale d and
 * 32 int8 quants q (value q * d, llama.cpp's Q8_0 blocks and rounding), the nb scales first
 * and then the nb * 32 quants, so that a row's quants are one contiguous run (whole vectors
 * for the integer dots) and its scales one small load. A head dimension that is not a
 * multiple of 32 ends in a block padded with zeros.
 *
 * Scores against a Q8_0 cache take the query quantised to Q8_0 too, per block of 32 by the
 * same rule (as llama.cpp's CPU flash attention converts Q to the K type's dot type): the
 * score is scale * sum_b d_k,b * d_q,b * I_b with I_b the exact integer dot of the block's
 * quants, which the vector levels form with integer instructions (AVX-512 VNNI, AVX2
 * vpmaddubsw). Values are read as q * d, exactly, as for the other types. */
#define HSD_ATTN_Q8_BLOCK 32
#define HSD_ATTN_Q8_BYTES 34
/* A Q4_0 cache (llama.cpp's q4_0 cache type: per 32 elements an fp16 scale d and 32 4-bit
 * quants n, value (n - 8) * d, quantised by llama.cpp's rule) is always in tiles (below): a
 * row of it, as hsd_attn_store writes one, is the nb scales and then the nb GGML qs[16] (byte
 * j of a block: element j in its low nibble, element j + 16 in its high one), 18 bytes per 32
 * elements. Its blocks are Q8_0 blocks with q = n - 8 (same scale), and that is how it is
 * read: the query quantised to Q8_0, the same integer dots and the same fp32 steps. */
#define HSD_ATTN_Q4_BYTES 18

/* One KV head's keys and values: position p at k + p * hsd_attn_row_bytes(type, hd) bytes (head-major: a head's
 * positions are contiguous, so a block is one sequential read). Logical positions below L
 * are physical; logical position L + i is physical L + map[i] (a token tree's ancestor list)
 * unless map is NULL (a chain: identity). */
typedef struct hsd_attn_kv {
    hsd_dtype type; /* HSD_DT_F32, HSD_DT_F16, HSD_DT_BF16, HSD_DT_Q8_0 or HSD_DT_Q4_0 */
    const void *k, *v;
    int32_t hd; /* head dimension, even */
    int32_t L;
    const int32_t *map;
    bool tiled; /* keys and values in tiles (below) instead of rows: Q8_0 where chosen, Q4_0
                 * always (the flag is not read for it) */
} hsd_attn_kv;

/* A Q8_0 cache in tiles. Positions go in groups of HSD_ATTN_KVTILE: group t (positions
 * 16t..16t+15) takes the bytes of its 16 rows (16 rb at 16 t rb) laid out as
 *   uint16 d[nb][16]              block b's fp16 scale, one lane per position (keys and values);
 *   keys:   uint8 q[8 nb][16][4]  elements 4g..4g+3 of each position, as k + 128 (u8);
 *   values: int8  q[8][2 nb][16][2]  positions 2i and 2i + 1 (pair i), elements 16c..16c+15,
 *                                 interleaved.
 * So one 64-byte vector holds the same four key elements of 16 positions: the AVX-512 VNNI
 * kernel multiplies it by four query bytes broadcast (vpdpbusd) and has 16 positions' partial
 * dots in 16 lanes, with no horizontal sums (they cost more than the dots in the row layout).
 * And 32 value bytes widen to 16 lanes of a position pair's two int16 elements, which
 * vpdpwssd multiplies by the pair's two weights: the weights are p · d of the block, rounded
 * to 15 bits of the largest weight of the 32 positions (exact integer sums, then one fp32
 * multiply by that scale; relative error about 2^-16 of the block's largest term, far below
 * the Q8_0 values' own rounding, 2^-8). A cache so laid out holds whole groups (its
 * capacity a multiple of 16 positions). Other levels read a tiled cache by copying the
 * block's positions back into rows.
 *
 * A Q4_0 tile: the same scales, then each lane's 16 nb bytes of qs (byte j = 16 b + i of a
 * lane: block b's GGML qs[i], element i in its low nibble and i + 16 in its high one) where a
 * Q8_0 tile with 16 nb quants a lane would put quant j:
 *   keys:   uint8 qs[4 nb][16][4]       bytes 4g..4g+3 of each position: vector g' of block b
 *                                       holds elements 4g'..4g'+3 in its low nibbles and
 *                                       16 + 4g'.. in its high ones (g' = 0..3);
 *   values: uint8 qs[8][nb][16][2]      positions 2i, 2i + 1 interleaved per block: 32 bytes
 *                                       widened to int16 pairs give elements 32b..32b+15
 *                                       (low nibbles) and 32b+16.. (high: one shift).
 * The nibbles n = q + 8 are the unsigned bytes vpdpbusd takes (the sums start at -8 · sum q
 * where a Q8_0 tile's start at -128 · sum q), and the values' offset is one integer per row
 * and block, -8 times the sum of its int16 weights. Half a Q8_0 cache's bytes. */
#define HSD_ATTN_KVTILE 16
/* Whether a new cache of this type should be tiled: Q8_0 where the active kernel level
 * (kernels/cpu_features.h) has the tile kernels (AVX-512 VNNI) and hd is a multiple of 16;
 * Q4_0 always (other levels copy its blocks back into Q8_0 rows). */
bool hsd_attn_kv_tiled(hsd_dtype type, int32_t hd);
/* Stores position p's key (value: its value) of hd fp32 values, rounded as hsd_attn_store
 * does, into the buffer buf (rows, or tiles when tiled). */
void hsd_attn_store_at(hsd_dtype type, bool tiled, bool value, void *buf, int32_t p, const float *src,
                       int32_t hd);
/* Copies position src's key (value: value) to position dst within the buffer buf. */
void hsd_attn_copy_at(hsd_dtype type, bool tiled, bool value, void *buf, int32_t dst, int32_t src,
                      int32_t hd);

/* One query row: out = softmax(softcap(scale q·K[first..last])) V[first..last]
 * (logical positions, inclusive, first <= last; q as quantised above for a Q8_0 cache). out
 * may not alias q. */
typedef struct hsd_attn_row {
    const float *q;
    float *out;
    int32_t first, last;
} hsd_attn_row;

/* Floats of scratch a call with n_rows rows of head dimension hd needs. */
size_t hsd_attn_scratch_floats(int32_t hd, int32_t n_rows);

/* The attention of n_rows rows against one KV head; softcap <= 0: none (Gemma 2's attention
 * soft-cap softcap * tanh(s / softcap) otherwise). */
void hsd_attn_rows(const hsd_attn_kv *kv, const hsd_attn_row *rows, int32_t n_rows, float scale,
                   float softcap, float *scratch);

/* A test hook: 1 forces the float caches' prefetch spread over the score and value loops (the
 * AMD form, kernels/attention.c), 0 the block-start bursts, -1 (the default) picks by the
 * CPU's vendor. Prefetches only: a row's output is the same bits either way. */
void hsd_attn_prefetch_set(int spread);

/* Stores n fp32 values as the cache type (round to nearest even; Q8_0 and Q4_0: the n values
 * are one row, quantised per block of 32 as llama.cpp does, laid out as above). */
void hsd_attn_store(hsd_dtype type, void *dst, const float *src, int32_t n);
/* Bytes of one cache row of hd elements. */
size_t hsd_attn_row_bytes(hsd_dtype type, int32_t hd);

#endif
