/* The transformer's state, shared by its construction (tf_load.c), its sequence slots and KV
 * caches (kv_cache.c), the forward's segments and token trees (forward.c) and its math
 * (layer.c: one decoder layer). */
#ifndef HSD_MODELS_TF_INTERNAL_H
#define HSD_MODELS_TF_INTERNAL_H

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
    int32_t seq, t0, n, L; /* L: the slot's cached length before this forward */
    bool chain;
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
    float *key_cache, *value_cache;     /* [seq][layer][n_ctx][kv_dim] */
    float *rope_cos, *rope_sin;         /* [n_ctx][head_dim/2] */
    float *rope_cos_swa, *rope_sin_swa; /* sliding layers' own base (NULL: the tables above) */
    fw_seg *segs;                       /* [n_seq]: the slots of the forward in progress */
    int32_t n_segs;

    /* scratch, grown to the largest n seen */
    int32_t cap_n;
    float *x, *xb, *q, *hb, *hb2;
    float *kbuf, *vbuf; /* new keys/values of a multi-slot forward before they go to their caches */
    int32_t *pos, *anc, *anc_off, *tseg; /* tseg[t]: segment of token row t */
    float *att;      /* [n_threads][n_ctx + head_dim] attention scores */
    hsd_mm_ws mm; /* products' scratch, reserved for cap_n tokens of max_cols */
    int32_t max_cols;
    int64_t attn_work; /* multiply-adds of this forward's attention (threading threshold) */

    hsd_head *head;          /* draft head replacing cls (NULL: cls) */
    hsd_model_timing timing; /* cumulative head / backbone split */
};

static inline size_t hsd_tf_cache_off(const hsd_transformer *tf, int32_t seq, int32_t layer) {
    return ((size_t)seq * tf->cfg.n_layers + (size_t)layer) * tf->n_ctx * tf->kv_dim;
}

/* layer.c */
/* out[t][0..w.rows) = W · x[t] for t < n (out row stride ld), on the thread pool. */
void hsd_tf_matmul(hsd_transformer *tf, float *out, int32_t ld, const float *x, int32_t n,
                   const hsd_mat *w);
/* Layer l over the N stacked token rows of tf->x, in place. */
void hsd_tf_layer_forward(hsd_transformer *tf, int32_t l, int32_t N);
/* The classifier rows: logits = U · norm(h), soft-capped where the architecture says so. */
void hsd_tf_softcap(const hsd_tf_config *c, float *logits, size_t n);

/* kv_cache.c: the slots' caches, allocated for n_seq x n_ctx at construction and released
 * with the transformer; where layer l's new keys and values go (the slot's cache directly,
 * or a staging buffer when several slots share the forward), and their hand-over. */
hsd_status hsd_tf_kv_alloc(hsd_transformer *tf);
void hsd_tf_kv_free(hsd_transformer *tf);
void hsd_tf_kv_dest(hsd_transformer *tf, int32_t l, float **k, float **v);
void hsd_tf_kv_commit(hsd_transformer *tf, int32_t l, const float *k, const float *v);

#endif
