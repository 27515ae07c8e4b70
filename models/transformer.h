/* The decoder (Llama 1/2/3, llama2.c, Mistral, SmolLM, Qwen2/3, Gemma 3, Phi-3) shared by every loader: a loader
 * fills an hsd_tf_config and answers tensor look-ups; hsd_tf_create checks every shape,
 * builds the weights view (matrices stay where the loader put them, e.g. in an mmap) and
 * allocates the KV cache. */
#ifndef HSD_MODELS_TRANSFORMER_H
#define HSD_MODELS_TRANSFORMER_H

#include <stdbool.h>
#include <stdint.h>

#include "hsd.h"
#include "kernels/cpu_ops.h"
#include "lib/base/file_map.h"
#include "models/head.h"

#define HSD_TF_MAX_SWA_LAYERS 1024

typedef enum hsd_ffn_act {
    HSD_ACT_SILU,      /* SwiGLU: silu(gate) * up (Llama, Qwen, Mistral, Phi-3) */
    HSD_ACT_GELU_TANH, /* GeGLU: gelu_tanh(gate) * up (Gemma) */
} hsd_ffn_act;

/* What a decoder layer computes. models/arch.c fills the per-architecture fields from the
 * architecture's name; loaders fill the shape from the file. */
typedef struct hsd_tf_config {
    char arch[16];           /* "llama", "qwen2", "qwen3", "gemma3", "phi3", ... */
    int32_t dim, hidden_dim, n_layers, n_heads, n_kv_heads, head_dim, vocab_size, seq_len;
    float rope_theta, norm_eps;
    bool rope_interleaved;   /* llama2.c / GGUF llama: true; HF and the other GGUF archs: false */
    bool qkv_bias;           /* Qwen2 */
    /* Llama 3 rope scaling ("rope_type": "llama3"); factor 0 = none. */
    float rope_scale_factor, rope_low_freq_factor, rope_high_freq_factor;
    int32_t rope_orig_ctx;
    /* later architectures (all off / 0 for Llama) */
    bool qk_norm;            /* Qwen3, Gemma 3: RMSNorm of each q and k head before rope */
    bool post_norms;         /* Gemma 3: RMSNorm of the attention and FFN outputs before each residual add */
    bool norm_unit_offset;   /* Gemma HF checkpoints store w for a norm that multiplies by 1 + w
                              * (GGUF stores 1 + w): the loader adds 1 to every norm weight */
    bool fused_qkv;          /* Phi-3: one [q; k; v] projection (split into views at load) */
    bool fused_gate_up;      /* Phi-3: one [gate; up] projection */
    hsd_ffn_act act;
    float emb_scale;         /* Gemma: embeddings times sqrt(dim); 0 = none */
    float attn_scale;        /* query scale; 0 = 1/sqrt(head_dim) */
    float attn_softcap;      /* scores = c * tanh(scores / c) before softmax; 0 = none */
    float final_softcap;     /* the same on the logits; 0 = none */
    int32_t swa_window;      /* sliding-window layers see the last swa_window positions; 0 = none */
    int32_t swa_pattern;     /* with a window: layer l is global when (l + 1) % swa_pattern == 0,
                              * sliding otherwise; 0 = every layer slides */
    /* a per-layer list instead of the pattern (GGUF sliding_window_pattern as an array):
     * bit l set = layer l slides; used when swa_layers_set */
    bool swa_layers_set;
    uint64_t swa_layers[HSD_TF_MAX_SWA_LAYERS / 64];
    float rope_theta_swa;    /* rope base of the sliding layers (Gemma 3: 10000); 0 = rope_theta */
    float rope_linear;       /* linear rope scaling: positions / factor on the global layers
                              * (Gemma 3 4B+: 8); 0 = none */
} hsd_tf_config;

typedef enum hsd_tkind {
    HSD_T_TOK_EMB, HSD_T_OUT_NORM, HSD_T_CLS, HSD_T_ROPE_FREQS, /* globals */
    HSD_T_ATTN_NORM, HSD_T_WQ, HSD_T_WK, HSD_T_WV, HSD_T_WO, HSD_T_BQ, HSD_T_BK, HSD_T_BV,
    HSD_T_FFN_NORM, HSD_T_W_GATE, HSD_T_W_DOWN, HSD_T_W_UP, /* per layer */
    HSD_T_Q_NORM, HSD_T_K_NORM, HSD_T_ATTN_POST_NORM, HSD_T_FFN_POST_NORM, /* per layer, optional */
    HSD_T_WQKV, HSD_T_W_GATE_UP,                                          /* fused (Phi-3) */
    HSD_T_COUNT
} hsd_tkind;

/* A tensor as a loader found it. shape is outermost first (PyTorch order), so a matrix is
 * [rows][cols] with rows = output features. */
typedef struct hsd_tensor_ref {
    const char *name; /* as named in the file, for error messages */
    hsd_dtype type;
    int32_t n_dims;
    int64_t shape[4];
    const void *data;
} hsd_tensor_ref;

/* Finds `kind` for `layer` (-1 for globals). Sets *found = false when the file lacks it;
 * returns an error status only for a tensor that exists but cannot be used. */
typedef hsd_status (*hsd_tensor_lookup_fn)(void *ctx, hsd_tkind kind, int32_t layer,
                                           hsd_tensor_ref *ref, bool *found);

typedef struct hsd_transformer hsd_transformer;

/* `source` names the file in messages. On success the transformer calls release(release_ctx)
 * when freed (unmapping the file); on failure the caller keeps ownership. */
hsd_status hsd_tf_create(const hsd_tf_config *cfg, hsd_tensor_lookup_fn lookup, void *lookup_ctx,
                         const char *source, const hsd_model_params *params,
                         void (*release)(void *), void *release_ctx, hsd_transformer **out);
void hsd_tf_free(hsd_transformer *tf);
const hsd_tf_config *hsd_tf_get_config(const hsd_transformer *tf);
/* Fills iface with the transformer as ctx (ownership moves to whoever calls iface.free). */
void hsd_tf_iface(hsd_transformer *tf, hsd_model_iface *iface);
const char *hsd_tf_desc(const hsd_transformer *tf);

/* Makes the row-interleaved copies of the BF16 and Q8_0 products' weights now (kernels/matmul.h)
 * instead of at the first forward: hsd_model_load calls it once a model stays on the CPU, so
 * that the copy is load time, not the first token's. Idempotent; a failure is a notice. */
void hsd_tf_pack(hsd_transformer *tf);
/* hsd_model_params.no_pack (no packed copies: call before hsd_tf_pack and the first forward)
 * and no_blas (no sgemm for F32 prefills). */
void hsd_tf_set_cpu_options(hsd_transformer *tf, bool no_pack, bool no_blas);
hsd_status hsd_tf_forward(hsd_transformer *tf, const int32_t *tokens, int32_t n,
                          const int32_t *parents, const int32_t *rows, int32_t n_rows,
                          float *logits);
int32_t hsd_tf_kv_len(const hsd_transformer *tf);
hsd_status hsd_tf_kv_truncate(hsd_transformer *tf, int32_t len);
hsd_status hsd_tf_kv_keep(hsd_transformer *tf, int32_t base, const int32_t *keep, int32_t n_keep);
/* Sequence slots (hsd_model_params.n_seq): forward and kv_* act on the selected one;
 * forward_batch covers several (see hsd_model_forward_batch). */
int32_t hsd_tf_n_seq(const hsd_transformer *tf);
hsd_status hsd_tf_seq_select(hsd_transformer *tf, int32_t seq);
hsd_status hsd_tf_forward_batch(hsd_transformer *tf, const hsd_model_batch_seq *seqs,
                                int32_t n_seqs, float *logits);

/* Read-only views for other backends (models/cuda_model.c uploads them). A matrix or fp32
 * vector of `kind` for `layer` (-1 for globals), NULL when the model has none (e.g. biases of
 * a Llama); a tied classifier is the embedding (same data). The rope tables are
 * [n_ctx][head_dim/2] cosines and sines, frequency scaling applied (computed up to n_ctx by
 * this call: the forward grows them lazily; HSD_ERR_NOMEM when they cannot be). */
const hsd_mat *hsd_tf_matrix(const hsd_transformer *tf, hsd_tkind kind, int32_t layer);
const float *hsd_tf_vector(const hsd_transformer *tf, hsd_tkind kind, int32_t layer);
int32_t hsd_tf_n_ctx(const hsd_transformer *tf);
hsd_status hsd_tf_rope_tables(const hsd_transformer *tf, const float **cos_t, const float **sin_t);
/* Draft head hook (models/head.h): the classifier step runs `head` instead of U h when one
 * is set. swap takes ownership of head (NULL = back to U) and returns the previous one for
 * the caller to free. */
hsd_head *hsd_tf_swap_head(hsd_transformer *tf, hsd_head *head);
const hsd_head *hsd_tf_head(const hsd_transformer *tf);
const hsd_mat *hsd_tf_classifier(const hsd_transformer *tf);
/* Cumulative head / backbone time of the forwards (hsd_model_get_timing). */
void hsd_tf_timing(const hsd_transformer *tf, hsd_model_timing *out);
void hsd_tf_reset_timing(hsd_transformer *tf);

/* Helpers for loaders. */
const char *hsd_tkind_name(hsd_tkind kind);

#endif
