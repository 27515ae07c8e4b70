/* CPU kernels of the transformer forward pass, in llama2.c run.c style: plain loops over
 * float arrays. The hot ones (dot products, weight-row conversion) have AVX2/FMA versions
 * picked at run time, since the build targets x86-64-v2 and GCC does not vectorise float
 * reductions without -ffast-math. */
#ifndef HSD_KERNELS_CPU_OPS_H
#define HSD_KERNELS_CPU_OPS_H

#include <stddef.h>
#include <stdint.h>

/* Storage type of a weight matrix. Q8_0 is GGML's: blocks of 32 int8 with one fp16 scale.
 * The other GGML block types (Q4_0 ... Q6_K) are described in kernels/quant.h. */
typedef enum hsd_dtype {
    HSD_DT_F32 = 0,
    HSD_DT_F16,
    HSD_DT_BF16,
    HSD_DT_Q8_0,
    HSD_DT_Q4_0,
    HSD_DT_Q4_1,
    HSD_DT_Q5_0,
    HSD_DT_Q5_1,
    HSD_DT_Q2_K,
    HSD_DT_Q3_K,
    HSD_DT_Q4_K,
    HSD_DT_Q5_K,
    HSD_DT_Q6_K,
    HSD_DT_COUNT
} hsd_dtype;

#define HSD_Q8_0_BLOCK 32
#define HSD_Q8_0_BYTES 34 /* fp16 scale + 32 int8 */

const char *hsd_dtype_name(hsd_dtype t);
/* Bytes of one row of `cols` elements (cols must be a multiple of the type's block:
 * hsd_dtype_block in kernels/quant.h). */
size_t hsd_dtype_row_bytes(hsd_dtype t, int64_t cols);

/* A row-major matrix [rows][cols] in any storage type; row r starts at r*row_bytes. */
typedef struct hsd_mat {
    hsd_dtype type;
    int32_t rows, cols;
    const void *data;
    /* The matrix's row-interleaved copy for the AVX-512/AMX products (kernels/matmul_pack.h),
     * made by hsd_mm_pack and freed by hsd_mm_unpack; NULL otherwise. A by-value copy of the
     * struct (a view) carries it, and the products use it only where its source and shape
     * are the view's. */
    const struct hsd_mm_packed *packed;
} hsd_mat;

float hsd_fp16_to_fp32(uint16_t h);
uint16_t hsd_fp32_to_fp16(float f);
float hsd_bf16_to_fp32(uint16_t h);
uint16_t hsd_fp32_to_bf16(float f); /* round to nearest even */

/* Converts `count` rows starting at `row` to fp32 (out: count*cols floats). */
void hsd_mat_rows_f32(const hsd_mat *w, int32_t row, int32_t count, float *out);
/* Quantizes one row of fp32 to Q8_0 (cols multiple of 32). */
void hsd_q8_0_quantize_row(const float *x, int64_t cols, uint8_t *out);

float hsd_dot_f32(const float *a, const float *b, int32_t n);

void hsd_rmsnorm(float *o, const float *x, const float *w, int32_t n, float eps);
void hsd_softmax(float *x, int32_t n);
/* SwiGLU: gate[i] = silu(gate[i]) * up[i]. */
void hsd_silu_mul(float *gate, const float *up, int32_t n);
void hsd_add(float *x, const float *y, int32_t n);

/* Rotary embedding of n_heads heads of head_dim each, from a table of cos/sin for this
 * position (head_dim/2 pairs). Interleaved pairs (x[2i], x[2i+1]) as llama2.c and GGUF
 * llama; half-split pairs (x[i], x[i+head_dim/2]) as HuggingFace and GGUF qwen2 (NeoX). */
void hsd_rope(float *x, int32_t n_heads, int32_t head_dim, const float *cos_t,
              const float *sin_t, int interleaved);

/* x[0..n) in blocks of `block` elements (a power of two dividing n), each replaced by its
 * orthonormal Walsh-Hadamard transform H x / sqrt(block) (H Sylvester's, natural order:
 * H_2s = [[H_s, H_s], [H_s, -H_s]]), by the fast transform's butterflies. H / sqrt(block) is
 * symmetric and its own inverse. */
void hsd_hadamard(float *x, int64_t n, int32_t block);

/* Attention of one query head: att[i] = scale * q·k[slot_i] and out = sum_i att[i] v[slot_i],
 * with k/v rows `stride` floats apart and slot_i = slots ? slots[i] : i. */
void hsd_attn_scores(float *att, const float *q, const float *k, size_t stride,
                     const int32_t *slots, int32_t n, int32_t hd, float scale);
void hsd_attn_accum(float *out, const float *att, const float *v, size_t stride,
                    const int32_t *slots, int32_t n, int32_t hd);

/* out[t][r] = dot(x[t], w[row0 + r]) for t < n, r < count; out has row stride ld_out and x
 * has row stride w->cols. `scratch` holds at least 4*w->cols floats (row conversion). */
void hsd_matmul_rows(float *out, int32_t ld_out, const float *x, int32_t n, const hsd_mat *w,
                     int32_t row0, int32_t count, float *scratch);

#endif
