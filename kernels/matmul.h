/* The weight × activation products of a forward pass, out[t][r] = W[r] · x[t] for n tokens
 * (n = 1 decode, n = 2..16 speculative verification), on the CPU.
 *
 * Each product reads every weight row once per call for all n tokens: rows go through
 * micro-kernels that hold a tile of several rows × several tokens in registers, with the
 * weights' dequantisation fused into the loads. The kernel set is the CPU level of
 * kernels/cpu_features.h (AMX tiles for BF16 and Q8_0, AVX-512 with BF16/VNNI, the AVX2
 * kernels of cpu_ops.c, or plain C); unknown storage types fall back to hsd_matmul_rows
 * (convert a row to fp32, then dot).
 *
 * Batch invariance: the result for a (row, token) pair is the same bits whatever n is, which
 * tile the pair falls in and which thread computes it — every tile shape runs the same
 * per-pair sequence of operations. Greedy speculative decoding relies on it: a token verified
 * among 16 must get the logits it gets alone, or outputs part from AR's at near-ties.
 *
 * Activation rounding (the AVX-512 set only, as llama.cpp does): for BF16 weights the
 * activations are rounded to bf16 once per call (vdpbf16ps multiplies bf16 pairs and adds in
 * fp32, each row's pairs in column order in one lane: matmul_bf16p.h); for Q8_0 weights each block of 32 activations is quantised to int8 with an fp32
 * scale d = max|x|/127, q = round-to-even(x / d) (vpdpbusd multiplies u8 × s8). */
#ifndef HSD_KERNELS_MATMUL_H
#define HSD_KERNELS_MATMUL_H

#include <stddef.h>
#include <stdint.h>

#include "hsd.h"
#include "kernels/cpu_ops.h"
#include "kernels/threadpool.h"

/* The kernel sets, one per level of kernels/cpu_features.h (the same values). */
typedef enum hsd_mm_isa {
    HSD_MM_SCALAR = 0, /* plain C, fp32 activations */
    HSD_MM_AVX2,       /* cpu_ops.c's AVX2+FMA kernels, fp32 activations */
    HSD_MM_AVX512,     /* AVX-512F/BW/VL + BF16 + VNNI micro-kernels */
    HSD_MM_AMX,        /* AVX-512's, with BF16 and Q8_0 on AMX tiles (matmul_amx.h) */
    HSD_MM_N_ISA
} hsd_mm_isa;

const char *hsd_mm_isa_name(hsd_mm_isa isa);
/* Whether this CPU runs the kernel set. */
int hsd_mm_isa_available(hsd_mm_isa isa);
/* The set used by hsd_mm_run: hsd_cpu_level_active() (the best the CPU runs, lowered by the
 * hsd_model_params.cpu_kernels override). */
hsd_mm_isa hsd_mm_isa_default(void);

/* Per-caller scratch of the products (prepared activations, per-thread row buffers), grown
 * on demand. Zero-initialise it; one workspace serves one caller at a time. */
typedef struct hsd_mm_ws {
    void *buf;
    size_t cap;
} hsd_mm_ws;
void hsd_mm_ws_free(hsd_mm_ws *ws);
/* Grows the workspace for products of up to n tokens × `cols` columns on up to nth threads,
 * any storage type, so that hsd_mm_run within those bounds cannot fail. */
hsd_status hsd_mm_ws_reserve(hsd_mm_ws *ws, int32_t nth, int32_t n, int32_t cols);

/* out[t][i] = W[ids ? ids[i] : i] · x[t] for t < n and i < (ids ? count : W.rows); out has row
 * stride ld, x row stride w->cols. Rows are split over min(nth, pool size) threads of `pool`
 * (NULL: the caller alone) when the product is large enough to pay for the hand-off.
 * Returns HSD_ERR_NOMEM when the workspace cannot grow. */
hsd_status hsd_mm_run(hsd_mm_ws *ws, hsd_pool *pool, int32_t nth, float *out, int32_t ld,
                      const float *x, int32_t n, const hsd_mat *w, const int32_t *ids,
                      int32_t count);

/* One product of a fused job: out[t][i] = W[ids ? ids[i] : i] · x[t] as in hsd_mm_run. */
typedef struct hsd_mm_prod {
    float *out;
    int32_t ld;
    const hsd_mat *w;
    const int32_t *ids;
    int32_t count;
} hsd_mm_prod;
#define HSD_MM_MAX_FUSED 4
/* Up to HSD_MM_MAX_FUSED products of the same activations x (a layer's q, k, v or gate, up)
 * as one threaded job: one activation preparation and one hand-off instead of one each, the
 * rows of all products shared out together. Their weights must have the same columns and
 * storage type (HSD_ERR_INVALID_ARG otherwise); the results are those of hsd_mm_run. */
hsd_status hsd_mm_run_fused(hsd_mm_ws *ws, hsd_pool *pool, int32_t nth, const float *x, int32_t n,
                            const hsd_mm_prod *prods, int32_t np);

/* The same product with a given kernel set on the calling thread (tests compare the sets). */
hsd_status hsd_mm_run_isa(hsd_mm_ws *ws, hsd_mm_isa isa, float *out, int32_t ld, const float *x,
                          int32_t n, const hsd_mat *w, const int32_t *ids, int32_t count);

/* Load-time repacking (Q8_0, BF16, Q4_K, Q5_K and Q6_K weights, when hsd_mm_isa_default() is
 * the AVX-512 set or AMX; else a no-op): keeps a row-interleaved copy of w
 * (kernels/matmul_pack.h; about as many bytes as w) in w->packed, that the products of w then
 * read instead of w. For Q8_0 and BF16 the results are those of the on-the-fly packing bit
 * for bit; for the k-quants too (matmul_kq.h). A no-op when w already has its copy. Call
 * hsd_mm_unpack(w) before w goes away. Returns HSD_ERR_NOMEM when the copy cannot be made.
 * hsd_model_params.no_pack skips the copies of a model's matrices (memory over speed: the
 * products then pack each 16-row group on the fly, the same bits, slower). */
hsd_status hsd_mm_pack(hsd_mat *w);
/* The same, packing on up to nth threads of pool (NULL: the calling thread). */
hsd_status hsd_mm_pack_on(hsd_mat *w, hsd_pool *pool, int32_t nth);
/* Frees w's packed copy (if any) and clears w->packed. */
void hsd_mm_unpack(hsd_mat *w);

#endif
