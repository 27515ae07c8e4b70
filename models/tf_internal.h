/* The transformer's state, shared by its construction (tf_load.c), its sequence slots and KV
 * caches (kv_cache.c), the forward's segments and token trees (forward.c) and its math
 * (layer.c: one decoder layer). */
#ifndef HSD_MODELS_TF_INTERNAL_H
#define HSD_MODELS_TF_INTERNAL_H

#include "kernels/attention.h"
#include "kernels/matmul.h"
#include "kernels/threadpool.h"
#include "models/transformer.h"

typedef struct hsd_tf_layer {
    hsd_mat wq, wk, wv, wo, w_gate, w_down, w_up; /* views into the file (fused ones split) */
    float *attn_norm, *ffn_norm, *bq, *bk, *bv;   /* owned fp32 copies (small) */
    float *q_norm, *k_norm;                       /* [head_dim], qk_norm only */
    float *attn_post_norm, *ffn_post_norm;        /* post_norms only */
    bool slides;                                  /* sliding-window layer */
} hsd_tf_layer;

/* One slot's new tokens within a forward: rows t0..t0+n of the stacked activations. */
typedef struct fw_seg {
    int32_t seq, t0, n, L; /* L: the slot's cached length before this segment's rows */
    bool chain;
    const int32_t *par; /* a tree segment's parents, indices within the segment (-1: root) */
} fw_seg;

struct hsd_transformer {
    hsd_tf_config cfg;
    char desc[320];
    hsd_mat tok_emb, cls;
    bool packed; /* hsd_mm_pack ran on the products' matrices (hsd_tf_free undoes it) */
    bool pack_tried; /* the first forward tried it (pack_weights in tf_load.c) */
    bool no_blas;    /* hsd_model_params.no_blas: no sgemm for F32 prefills */
    float *out_norm;
    hsd_tf_layer *layers;
    void (*release)(void *);
    void *release_ctx;

    hsd_pool *pool;
    int32_t n_threads, n_ctx, q_dim, kv_dim;
    int32_t n_seq, cur;                 /* sequence slots; the one forward/kv_* act on */
    int32_t *kv_lens;                   /* [n_seq] */
    /* the caches (kv_cache.c): per slot and layer, keys and values [n_kv_heads][cap][head_dim]
     * of kv_type (head-major: attention reads one head's positions in one sequential sweep),
     * cap = kv_cap[seq] positions, grown on demand up to n_ctx */
    hsd_dtype kv_type;                  /* HSD_DT_F16 (default), HSD_DT_BF16, HSD_DT_F32, HSD_DT_Q8_0, HSD_DT_Q4_0 */
    bool kv_tiled;                      /* keys and values in tiles (hsd_attn_kv_tiled: Q8_0, Q4_0) */
    /* A quantised cache's rotations (llama.cpp's since April 2026, its PR 21038): q and k in
     * blocks of kv_rot_k, v and the attention's output in blocks of kv_rot_v, by the
     * orthonormal Hadamard transform (hsd_hadamard), after RoPE and before the cache; 0: none.
     * Scores are unchanged in exact arithmetic (H is orthonormal) and the output is rotated
     * back (H is its own inverse), while the rounding to 8 or 4 bits sees the outliers of a
     * head spread over its block. */
    int32_t kv_rot_k, kv_rot_v;
    int32_t *kv_cap;                    /* [n_seq] */
    void **kc, **vc;                    /* [seq * n_layers + layer] */
    float *rope_cos, *rope_sin;         /* [rope_n][head_dim/2], grown with the caches */
    float *rope_cos_swa, *rope_sin_swa; /* sliding layers' own base (NULL: the tables above) */
    int32_t rope_n;                     /* positions the tables hold (<= n_ctx) */
    bool swa_rope;                      /* the sliding layers have their own tables */
    float *freq_factors;                /* [head_dim/2] the file's rope factors, or NULL */
    fw_seg *segs;                       /* [2 n_seq]: the segments of the forward in progress */
    int32_t n_segs;

    /* scratch, grown to the largest n seen */
    int32_t cap_n;
    float *x, *xb, *q, *hb, *hb2;
    float *kbuf, *vbuf; /* the forward's new keys/values (fp32, kv_dim rows) before hsd_tf_kv_commit */
    int32_t *pos, *anc, *anc_off, *spar; /* spar: tree segments' parents, re-based */
    float *att;      /* [n_threads][att_floats] attention scratch (kernels/attention.h) */
    size_t att_floats;
    hsd_attn_row *att_rows; /* [n_threads][HSD_ATTN_TILE * n_heads / n_kv_heads] */
    hsd_mm_ws mm; /* products' scratch, reserved for cap_n tokens of max_cols */
    int32_t max_cols;
    int64_t attn_work; /* multiply-adds of this forward's attention (threading threshold) */

    hsd_head *head;          /* draft head replacing cls (NULL: cls) */
    hsd_model_timing timing; /* cumulative head / backbone split */
};

/* Tokens of a chain that share one pass over their KV head in attention (each block of keys
 * and values is converted once for this many tokens x the KV head's query heads). */
#define HSD_ATTN_TILE 8

/* tf_load.c: the rope tables for at least `need` positions (need <= n_ctx). */
hsd_status hsd_tf_rope_reserve(hsd_transformer *tf, int32_t need);

/* layer.c */
/* out[t][0..w.rows) = W · x[t] for t < n (out row stride ld), on the thread pool. */
void hsd_tf_matmul(hsd_transformer *tf, float *out, int32_t ld, const float *x, int32_t n,
                   const hsd_mat *w);
/* Layer l over the N stacked token rows of tf->x, in place. */
void hsd_tf_layer_forward(hsd_transformer *tf, int32_t l, int32_t N);
/* The classifier rows: logits = U · norm(h), soft-capped where the architecture says so. */
void hsd_tf_softcap(const hsd_tf_config *c, float *logits, size_t n);

/* kv_cache.c: the slots' caches, empty at construction, grown by hsd_tf_kv_reserve before a
 * forward writes past their capacity, released with the transformer. Layer l's new keys and
 * values are computed in fp32 (kbuf/vbuf, rows of kv_dim) and hsd_tf_kv_commit stores them
 * in their slots' caches, converted to kv_type. */
hsd_status hsd_tf_kv_alloc(hsd_transformer *tf);
void hsd_tf_kv_free(hsd_transformer *tf);
/* Capacity of slot seq for at least `need` positions (need <= n_ctx), contents kept. */
hsd_status hsd_tf_kv_reserve(hsd_transformer *tf, int32_t seq, int32_t need);
void hsd_tf_kv_commit(hsd_transformer *tf, int32_t l, const float *k, const float *v);
/* Keys and values of slot seq, layer l, KV head h: position p at + p * head_dim elements. */
void hsd_tf_kv_head(const hsd_transformer *tf, int32_t seq, int32_t l, int32_t h, const void **k,
                    const void **v);

#endif
