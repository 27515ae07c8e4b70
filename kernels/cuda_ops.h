/* The CUDA backend's device kernels behind a C interface, usable from C files compiled with
 * or without CUDA: without HSD_HAVE_CUDA (kernels/cuda_stub.c) every call that needs a
 * device returns HSD_ERR_UNSUPPORTED "built without CUDA", and hsd_cuda_device_count is 0.
 *
 * Conventions: an hsd_cuda is one device with its own stream and cuBLAS handle (no global
 * state). Every kernel is enqueued on that stream and returns as soon as it is queued; the
 * only synchronising calls are hsd_cuda_download and hsd_cuda_sync. Pointers named d_* and
 * the `data` of an hsd_mat given here are device pointers. Arguments are checked on the host
 * (hsd_cuda_check_* below, shared by both builds) before anything touches the device, and a
 * CUDA or cuBLAS error becomes an hsd_status whose message names the failing call, the
 * source line and CUDA's own error string.
 *
 * Every kernel has a CPU reference in kernels/cpu_ops.c (or, for the indexed head and the
 * sampling steps, the plain loops that bench/gpu_bench.c compares against). */
#ifndef HSD_KERNELS_CUDA_OPS_H
#define HSD_KERNELS_CUDA_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hsd.h"

#ifdef __cplusplus
extern "C" {
#endif

#include "kernels/cpu_ops.h" /* a C header without C++ guards */

typedef struct hsd_cuda hsd_cuda;

/* ---- device ------------------------------------------------------------------------ */

/* True when the library was compiled with the CUDA backend. */
bool hsd_cuda_compiled(void);
/* Usable CUDA devices: 0 without CUDA, without a driver or without a device. */
int hsd_cuda_device_count(void);
/* Opens `device` (a stream and a cuBLAS handle). No device → HSD_ERR_UNSUPPORTED with the
 * message "no CUDA device (<CUDA's reason>)". */
hsd_status hsd_cuda_open(int device, hsd_cuda **out);
void hsd_cuda_close(hsd_cuda *cu);
/* "NVIDIA H100 80GB HBM3, sm_90, 79 GiB". */
const char *hsd_cuda_device_desc(const hsd_cuda *cu);
/* Every product through cuBLAS (true), whose algorithm depends on n, instead of the default
 * batch-invariant kernels (false); see hsd_cuda_matmul. For comparison only. */
void hsd_cuda_use_cublas_gemv(hsd_cuda *cu, bool on);
/* Products of 2..8 tokens through a warp-per-row kernel with fp32 x (true; not batch-invariant,
 * for comparison), or through the default kernels (false); rows whose n*cols floats do not fit
 * in shared memory never take it. */
void hsd_cuda_use_warp_gemm(hsd_cuda *cu, bool on);
/* Programmatic dependent launch of the products (Hopper and later; on by default where the
 * device has it): a product starts while the kernel before it finishes and fetches its first
 * weights into L2, then waits for its input. Off: plain stream order. Same results either way. */
void hsd_cuda_use_pdl(hsd_cuda *cu, bool on);
/* The tensor-core product's block shape, for benchmarks: 0 = chosen per matrix (default),
 * 1..4 = fixed shapes (see kernels/cuda_mma.cu). Results are identical for every n within one
 * choice, but differ between choices. */
void hsd_cuda_set_mma_variant(hsd_cuda *cu, int variant);
hsd_status hsd_cuda_sync(hsd_cuda *cu);

hsd_status hsd_cuda_alloc(hsd_cuda *cu, size_t bytes, void **d_out);
void hsd_cuda_free(hsd_cuda *cu, void *d_ptr);
/* Page-locked host memory, so uploads of per-step inputs can be asynchronous. */
hsd_status hsd_cuda_host_alloc(hsd_cuda *cu, size_t bytes, void **out);
void hsd_cuda_host_free(hsd_cuda *cu, void *p);
/* Host → device, enqueued on the stream (src must stay valid until the next sync). */
hsd_status hsd_cuda_upload(hsd_cuda *cu, void *d_dst, const void *src, size_t bytes);
/* Device → host; waits for everything queued before it. */
hsd_status hsd_cuda_download(hsd_cuda *cu, void *dst, const void *d_src, size_t bytes);
hsd_status hsd_cuda_copy(hsd_cuda *cu, void *d_dst, const void *d_src, size_t bytes);

/* Device-side timing (cudaEvent pairs), for cost instrumentation and benchmarks. */
hsd_status hsd_cuda_timer_start(hsd_cuda *cu);
/* Milliseconds since hsd_cuda_timer_start on the stream (waits for the stream). */
hsd_status hsd_cuda_timer_stop(hsd_cuda *cu, float *ms);

/* ---- CUDA graphs ------------------------------------------------------------------- */

typedef struct hsd_cuda_graph hsd_cuda_graph;
/* Between begin and end, kernels are recorded instead of run; end instantiates them. */
hsd_status hsd_cuda_graph_begin(hsd_cuda *cu);
hsd_status hsd_cuda_graph_end(hsd_cuda *cu, hsd_cuda_graph **out);
hsd_status hsd_cuda_graph_launch(hsd_cuda *cu, hsd_cuda_graph *g);
void hsd_cuda_graph_free(hsd_cuda_graph *g);

/* ---- transformer kernels (fp32 activations) ---------------------------------------- */

/* o[r] = rmsnorm(x[rows ? rows[r] : r]) * w for r < n_rows; rows dim floats apart. */
hsd_status hsd_cuda_rmsnorm(hsd_cuda *cu, float *d_o, const float *d_x, const float *d_w,
                            const int32_t *d_rows, int32_t n_rows, int32_t dim, float eps);
/* Rotary embedding of n_tok rows (stride floats apart) of n_heads heads each, token t at
 * position d_pos[t]; tables [n_ctx][head_dim/2] as the CPU path builds them. */
hsd_status hsd_cuda_rope(hsd_cuda *cu, float *d_x, int32_t n_tok, int32_t stride, int32_t n_heads,
                         int32_t head_dim, const int32_t *d_pos, const float *d_cos,
                         const float *d_sin, bool interleaved);
/* gate[i] = silu(gate[i]) * up[i]. */
hsd_status hsd_cuda_silu_mul(hsd_cuda *cu, float *d_gate, const float *d_up, int64_t n);
/* x[i] += y[i]. */
hsd_status hsd_cuda_add(hsd_cuda *cu, float *d_x, const float *d_y, int64_t n);
/* x[t][i] += b[i] for t < n_rows, i < cols; rows ld floats apart. */
hsd_status hsd_cuda_add_bias(hsd_cuda *cu, float *d_x, const float *d_b, int32_t n_rows,
                             int32_t cols, int32_t ld);
/* out[t] = emb[tokens[t]] widened to fp32 (emb on device: F32, F16 or BF16). */
hsd_status hsd_cuda_embed(hsd_cuda *cu, float *d_out, const hsd_mat *emb, const int32_t *d_tokens,
                          int32_t n);
/* out[t][0..w.rows) = W · x[t] for t < n (fp32 accumulation). F32 weights: cuBLAS SGEMM;
 * F16/BF16: x is narrowed into d_xh (n*w.cols halves) and cublasGemmEx multiplies. A single
 * token (n = 1) goes to the indexed-head kernel over all rows (a warp per row, fp32 x) unless
 * hsd_cuda_use_cublas_gemv(cu, true) asks for cuBLAS there too. */
hsd_status hsd_cuda_matmul(hsd_cuda *cu, float *d_out, int32_t ld_out, const float *d_x, int32_t n,
                           const hsd_mat *w, void *d_xh);

/* out[t] += W · x[t]: hsd_cuda_matmul adding into out (the residual connection). */
hsd_status hsd_cuda_matmul_add(hsd_cuda *cu, float *d_out, int32_t ld_out, const float *d_x,
                               int32_t n, const hsd_mat *w, void *d_xh);
/* SwiGLU over a fused gate/up projection: gu rows are [gate | up] (2*hidden floats);
 * out[t][i] = silu(gate[t][i]) * up[t][i] (hsd_silu_mul on the halves). */
hsd_status hsd_cuda_silu_mul_split(hsd_cuda *cu, float *d_out, const float *d_gu, int32_t n,
                                   int32_t hidden);

/* Shapes of the attention over a KV cache: cache rows are kv_dim elements of kv_type
 * ([n_ctx][kv_dim] per layer), queries q_dim floats, output q_dim floats. */
typedef struct hsd_cuda_attn_shape {
    int32_t n_heads, n_kv_heads, head_dim, n_ctx;
    /* sliding window (Phi-3, Mistral v0.1): a token at position p sees the keys at positions
     * p - window + 1 .. p only; 0 = every earlier position */
    int32_t window;
    /* the cache's element type: HSD_DT_F32 (0, so a zeroed shape keeps the old meaning),
     * HSD_DT_F16 or HSD_DT_BF16; values are rounded to it to nearest even when stored, as
     * hsd_attn_store does on the CPU */
    hsd_dtype kv_type;
} hsd_cuda_attn_shape;
/* Bytes of one element of a device cache of this type (0 for a type the device cache does
 * not take). */
size_t hsd_cuda_kv_elem_bytes(hsd_dtype kv_type);
/* Writes n new k (or v) rows of kv_dim floats into the cache (elements of kv_type) at
 * d_meta[0] (= kv_len, read on the device so a captured graph stays valid as the cache
 * grows). */
hsd_status hsd_cuda_kv_store(hsd_cuda *cu, void *d_cache, hsd_dtype kv_type, const float *d_rows,
                             int32_t n, int32_t kv_dim, const int32_t *d_meta);
/* Qwen3's per-head RMSNorm of q and k, in place on fused q/k/v rows (q_dim + 2*kv_dim floats,
 * n of them): every q head (head_dim floats) by d_qnorm, every k head by d_knorm, as
 * hsd_rmsnorm does each head; v is left alone. Runs before hsd_cuda_qkv_post (no bias). */
hsd_status hsd_cuda_head_norm(hsd_cuda *cu, float *d_qkv, int32_t n,
                              const hsd_cuda_attn_shape *shape, const float *d_qnorm,
                              const float *d_knorm, float eps);
/* After a fused q/k/v projection (rows [q | k | v], q_dim + 2*kv_dim floats): adds the bias
 * (optional, same layout), applies rope at d_pos[t] to q and k, writes the rotated q to d_q
 * (q_dim per row) and k, v into the caches at kv_len + t (kv_len = d_meta[0]): add_bias, rope
 * and kv_store in one launch. */
hsd_status hsd_cuda_qkv_post(hsd_cuda *cu, const float *d_qkv, int32_t n,
                             const hsd_cuda_attn_shape *shape, const float *d_bias,
                             const int32_t *d_pos, const float *d_cos, const float *d_sin,
                             bool interleaved, float *d_q, void *d_kcache, void *d_vcache,
                             const int32_t *d_meta);
/* Attention of n new tokens over the cache (kv_len = d_meta[0], new tokens already stored
 * after it). chain: token t sees the cache and new tokens 0..t. Otherwise token t sees the
 * cache and the new tokens d_anc[d_anc_off[t] .. d_anc_off[t+1]) (its ancestors and itself,
 * as the CPU path's build_tree lists them).
 *
 * Split over positions (flash decoding): a token's visible slots go in chunks of
 * hsd_cuda_attn_chunk(n_ctx) (slot i holds position i: the cache, then the new tokens it
 * sees), one block per (KV head, token, chunk) reading each key and value once for all the
 * query heads that share the KV head; each chunk's max, sum and unnormalised output go to
 * d_work, and the token's chunks are then combined in order. So decode at depth keeps
 * the device's multiprocessors busy, the context is not bounded by shared memory, and a
 * row's result depends only on its query and visible slots (the chunk boundaries are fixed
 * by n_ctx): bit-identical alone, in any batch and as a tree path. The last of a token's
 * chunk blocks to finish combines them (a counter per token and KV head in d_work, reset by
 * that block). d_work holds at least hsd_cuda_attn_work_bytes(shape, 1) bytes and was zeroed
 * once by hsd_cuda_attn_work_init; with less than n tokens' worth, the tokens go through in
 * groups that fit (hsd_cuda_attn_work_tokens). */
int32_t hsd_cuda_attn_chunk(int32_t n_ctx);
size_t hsd_cuda_attn_work_bytes(const hsd_cuda_attn_shape *shape, int32_t n);
size_t hsd_cuda_attn_counter_bytes(const hsd_cuda_attn_shape *shape, int32_t n);
int32_t hsd_cuda_attn_work_tokens(const hsd_cuda_attn_shape *shape, size_t work_bytes);
hsd_status hsd_cuda_attn_work_init(hsd_cuda *cu, void *d_work, size_t work_bytes);
hsd_status hsd_cuda_attention(hsd_cuda *cu, float *d_out, const float *d_q, const void *d_kcache,
                              const void *d_vcache, const hsd_cuda_attn_shape *shape, int32_t n,
                              const int32_t *d_meta, const int32_t *d_anc,
                              const int32_t *d_anc_off, void *d_work, size_t work_bytes);
/* Moves cache rows base+keep[j] to base+j for j < n_keep in every one of n_layers layers
 * (rows of row_bytes, layer stride n_ctx rows); keep increasing (hsd_model_kv_keep's
 * contract). */
hsd_status hsd_cuda_kv_keep(hsd_cuda *cu, void *d_cache, int32_t n_layers, int32_t n_ctx,
                            size_t row_bytes, int32_t base, const int32_t *d_keep, int32_t n_keep);

/* ---- LM heads ---------------------------------------------------------------------- */

/* The fused indexed head (SpecVocab): out[j] = U[idx[j]] · h for j < k, every selected row of
 * U (V × d, F32/F16/BF16) read once, coalesced: one warp per row, 16-byte loads, h staged in
 * shared memory. d_idx == NULL means idx[j] = j (k <= V), i.e. the same kernel as a full
 * head, for comparing its bandwidth against cuBLAS. */
hsd_status hsd_cuda_indexed_head(hsd_cuda *cu, float *d_out, const hsd_mat *U, const float *d_h,
                                 const int32_t *d_idx, int32_t k);

/* Indices of the k largest of x[0..V) (the speculative head's router selection), in no
 * particular order; ties at the k-th value are broken arbitrarily. One block radix-selects
 * the k-th largest key in four 8-bit passes, then a last pass writes the indices. The
 * low-rank head (SlimSpec) needs no kernel of its own: it is two hsd_cuda_matmul calls. */
hsd_status hsd_cuda_topk(hsd_cuda *cu, int32_t *d_idx, const float *d_x, int32_t V, int32_t k);

/* ---- sampling on device (only token ids cross to the host) ------------------------- */

/* out[r] = argmax of row r (lowest index among ties, as the CPU loop). */
hsd_status hsd_cuda_argmax(hsd_cuda *cu, int32_t *d_out, const float *d_logits, int32_t n_rows,
                           int32_t V);
/* Row-wise softmax(x / temp) in place (temp > 0). */
hsd_status hsd_cuda_softmax(hsd_cuda *cu, float *d_x, int32_t n_rows, int32_t V, float temp);
/* out[0] = the smallest i with p[0] + ... + p[i] > u * sum(p) (inverse CDF; p need not be
 * normalised). u in [0, 1) comes from the host's generator. */
hsd_status hsd_cuda_sample(hsd_cuda *cu, int32_t *d_out, const float *d_p, int32_t V, float u);
/* One speculative rejection step for draft token x ~ q against target p (both normalised):
 * accept when u_accept * q[x] < p[x]; otherwise resample from max(0, p - q) with u_resample.
 * out[0] = 1 if accepted, out[1] = the emitted token. */
hsd_status hsd_cuda_reject(hsd_cuda *cu, int32_t *d_out, const float *d_p, const float *d_q,
                           int32_t V, int32_t x, float u_accept, float u_resample);

/* ---- host-side argument checks (no device needed; used by both builds) --------------- */

hsd_status hsd_cuda_check_mat(const char *what, const hsd_mat *w);
hsd_status hsd_cuda_check_indexed_head(const hsd_mat *U, const void *d_out, const void *d_h,
                                       int32_t k, bool have_idx);
hsd_status hsd_cuda_check_matmul(const hsd_mat *w, const void *d_out, int32_t ld_out,
                                 const void *d_x, int32_t n, const void *d_xh);
hsd_status hsd_cuda_check_attention(const hsd_cuda_attn_shape *s, int32_t n, const void *d_out,
                                    const void *d_q, const void *d_k, const void *d_v,
                                    const void *d_meta, bool chain, const void *d_anc);
/* The attention's work buffer: present and at least one token's chunks. */
hsd_status hsd_cuda_check_attn_work(const hsd_cuda_attn_shape *s, const void *d_work, size_t work_bytes);
hsd_status hsd_cuda_check_topk(const void *d_idx, const void *d_x, int32_t V, int32_t k);
hsd_status hsd_cuda_check_rows(const char *what, const void *d_ptr, int64_t n_rows, int64_t cols);

#ifdef __cplusplus
}
#endif
#endif
