/* The transformer's construction from a loader's tensors (shapes checked, norms and biases
 * copied, RoPE tables built), the packed copies of its matrices, its release, and the views
 * that other backends (models/cuda_model.c) and tools (inflate) read. Sequence slots and their
 * KV caches are in models/kv_cache.c, the forward in models/forward.c, the per-layer math in
 * models/layer.c. */
#include "models/transformer.h"

#include <fcntl.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernels/quant.h"
#include "kernels/matmul_pack.h"
#include "kernels/attention.h"
#include "lib/base/error.h"
#include "lib/base/file_map.h"
#include "lib/base/log.h"
#include "lib/base/timer.h"
#include "models/arch.h"
#include "models/forward_check.h"
#include "models/tf_internal.h"

#define HSD_DEFAULT_CTX_CAP 4096

const char *hsd_tkind_name(hsd_tkind kind) {
    static const char *names[HSD_T_COUNT] = {
        "token embedding", "output norm", "classifier", "rope frequency factors",
        "attention norm", "q projection", "k projection", "v projection", "output projection",
        "q bias", "k bias", "v bias", "ffn norm", "ffn gate", "ffn down", "ffn up",
        "q norm", "k norm", "post-attention norm", "post-FFN norm", "fused qkv projection",
        "fused gate/up projection"};
    return kind < HSD_T_COUNT ? names[kind] : "?";
}

/* ---- construction ------------------------------------------------------------------ */

static hsd_status get_tensor(hsd_tensor_lookup_fn lookup, void *ctx, const char *src,
                             hsd_tkind kind, int32_t layer, bool required, hsd_tensor_ref *ref,
                             bool *found) {
    memset(ref, 0, sizeof *ref);
    *found = false;
    hsd_status s = lookup(ctx, kind, layer, ref, found);
    if (s != HSD_OK) return s;
    if (!*found && required) {
        if (layer >= 0)
            return hsd_error(HSD_ERR_PARSE, "%s: missing tensor: %s of layer %d", src,
                             hsd_tkind_name(kind), layer);
        return hsd_error(HSD_ERR_PARSE, "%s: missing tensor: %s", src, hsd_tkind_name(kind));
    }
    return HSD_OK;
}

static hsd_status get_matrix(hsd_tensor_lookup_fn lookup, void *ctx, const char *src,
                             hsd_tkind kind, int32_t layer, int32_t rows, int32_t cols,
                             bool required, hsd_mat *m, bool *found_out) {
    hsd_tensor_ref r;
    bool found;
    hsd_status s = get_tensor(lookup, ctx, src, kind, layer, required, &r, &found);
    if (found_out) *found_out = found;
    if (s != HSD_OK || !found) return s;
    if (r.n_dims != 2 || r.shape[0] != rows || r.shape[1] != cols)
        return hsd_error(HSD_ERR_PARSE,
                         "%s: tensor '%s' (%s) has shape [%lld, %lld]%s, expected [%d, %d]", src,
                         r.name, hsd_tkind_name(kind), (long long)r.shape[0],
                         (long long)(r.n_dims > 1 ? r.shape[1] : 0),
                         r.n_dims != 2 ? " (not a matrix)" : "", rows, cols);
    if (cols % hsd_dtype_block(r.type))
        return hsd_error(HSD_ERR_PARSE, "%s: tensor '%s' is %s with %d columns (not a multiple of %d)",
                         src, r.name, hsd_dtype_name(r.type), cols, hsd_dtype_block(r.type));
    *m = (hsd_mat){r.type, rows, cols, r.data, NULL}; /* no packed copy yet (a whole struct:
                                                         m may be an uninitialised local) */
    return HSD_OK;
}

/* Vectors (norm weights, biases) are tiny: keep an fp32 copy whatever the file stores. */
static hsd_status get_vector(hsd_tensor_lookup_fn lookup, void *ctx, const char *src,
                             hsd_tkind kind, int32_t layer, int32_t len, bool required,
                             float **out) {
    hsd_tensor_ref r;
    bool found;
    *out = NULL;
    hsd_status s = get_tensor(lookup, ctx, src, kind, layer, required, &r, &found);
    if (s != HSD_OK || !found) return s;
    if (r.n_dims != 1 || r.shape[0] != len)
        return hsd_error(HSD_ERR_PARSE, "%s: tensor '%s' (%s) has shape [%lld%s], expected [%d]",
                         src, r.name, hsd_tkind_name(kind), (long long)r.shape[0],
                         r.n_dims != 1 ? ", ..." : "", len);
    if (hsd_dtype_is_quant(r.type))
        return hsd_error(HSD_ERR_UNSUPPORTED, "%s: tensor '%s': %s is supported for matrices only",
                         src, r.name, hsd_dtype_name(r.type));
    float *v = malloc((size_t)len * sizeof *v);
    if (!v) return hsd_error(HSD_ERR_NOMEM, "%s: out of memory", src);
    hsd_mat m = {r.type, 1, len, r.data, NULL};
    hsd_mat_rows_f32(&m, 0, 1, v);
    *out = v;
    return HSD_OK;
}

static hsd_status check_config(const hsd_tf_config *c, const char *src) {
    if (c->dim <= 0 || c->hidden_dim <= 0 || c->n_layers <= 0 || c->n_heads <= 0 ||
        c->n_kv_heads <= 0 || c->vocab_size <= 0 || c->seq_len <= 0 || c->head_dim <= 0)
        return hsd_error(HSD_ERR_PARSE,
                         "%s: invalid shape: dim %d, hidden_dim %d, n_layers %d, n_heads %d, "
                         "n_kv_heads %d, head_dim %d, vocab_size %d, seq_len %d",
                         src, c->dim, c->hidden_dim, c->n_layers, c->n_heads, c->n_kv_heads,
                         c->head_dim, c->vocab_size, c->seq_len);
    if (c->n_heads % c->n_kv_heads)
        return hsd_error(HSD_ERR_PARSE, "%s: n_heads %d is not a multiple of n_kv_heads %d", src,
                         c->n_heads, c->n_kv_heads);
    if (c->head_dim % 2)
        return hsd_error(HSD_ERR_PARSE, "%s: head_dim %d is odd (rope needs pairs)", src,
                         c->head_dim);
    if (c->dim > (1 << 20) || c->hidden_dim > (1 << 20) || c->n_layers > 4096 ||
        c->n_heads > 4096 || c->head_dim > 4096 || c->vocab_size > (1 << 24))
        return hsd_error(HSD_ERR_PARSE, "%s: implausible shape (dim %d, %d layers, vocab %d)",
                         src, c->dim, c->n_layers, c->vocab_size);
    return HSD_OK;
}

/* cos/sin of position x frequency for rope base `theta`; the global layers also get Llama 3
 * scaling and a file's per-pair frequency factors, Gemma's sliding layers neither. */
static void rope_table(hsd_transformer *tf, double theta, bool global, const float *freq_factors,
                       float *cos_t, float *sin_t, int32_t p0, int32_t p1) {
    const hsd_tf_config *c = &tf->cfg;
    int32_t half = c->head_dim / 2;
    for (int32_t i = 0; i < half; i++) {
        double inv = 1.0 / pow(theta, 2.0 * i / (double)c->head_dim);
        if (global && c->rope_scale_factor > 0.0f) {
            /* Llama 3.1+: long wavelengths are slowed by `factor`, short ones kept, and the
             * band between is interpolated smoothly. */
            double lo = c->rope_low_freq_factor, hi = c->rope_high_freq_factor;
            double orig = c->rope_orig_ctx, wavelen = 2.0 * M_PI / inv;
            double lo_wl = orig / lo, hi_wl = orig / hi;
            if (wavelen > lo_wl) {
                inv /= c->rope_scale_factor;
            } else if (wavelen >= hi_wl) {
                double smooth = (orig / wavelen - lo) / (hi - lo);
                inv = (1.0 - smooth) * inv / c->rope_scale_factor + smooth * inv;
            }
        }
        if (global && freq_factors) inv /= freq_factors[i];
        if (global && c->rope_linear > 0) inv /= c->rope_linear;
        for (int32_t p = p0; p < p1; p++) {
            double a = p * inv;
            cos_t[(size_t)p * half + i] = (float)cos(a);
            sin_t[(size_t)p * half + i] = (float)sin(a);
        }
    }
}

/* A norm weight: HF Gemma stores w for a norm that scales by 1 + w. */
static hsd_status get_norm(hsd_tensor_lookup_fn lookup, void *ctx, const char *src, const hsd_tf_config *c,
                           hsd_tkind kind, int32_t layer, int32_t len, bool required, float **out) {
    hsd_status s = get_vector(lookup, ctx, src, kind, layer, len, required, out);
    if (s == HSD_OK && *out && c->norm_unit_offset)
        for (int32_t i = 0; i < len; i++) (*out)[i] += 1.0f;
    return s;
}

/* Rows [r0, r0 + rows) of a matrix, as a matrix of its own (rows are contiguous). */
static hsd_mat row_view(const hsd_mat *m, int32_t r0, int32_t rows) {
    hsd_mat v = *m;
    v.rows = rows;
    v.data = (const uint8_t *)m->data + (size_t)r0 * hsd_dtype_row_bytes(m->type, m->cols);
    return v;
}

/* The i-th matrix of the forward's products, i < 7 · layers + 1 (not tok_emb: its rows are
 * looked up). */
static hsd_mat *product_mat(hsd_transformer *tf, int32_t i) {
    if (i == 7 * tf->cfg.n_layers) return &tf->cls;
    hsd_tf_layer *L = &tf->layers[i / 7];
    hsd_mat *m[] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_down, &L->w_up};
    return m[i % 7];
}
/* BF16 and Q8_0 weights get a row-interleaved copy for the AVX-512 products
 * (kernels/matmul.h; as many bytes again as those matrices) once the model is known to stay
 * on the CPU (hsd_tf_pack from hsd_model_load), or else at its first forward: a model that
 * hsd_model_load hands to the CUDA backend (copied to the device, then freed) never pays. Without the memory for a copy the products pack each group on the
 * fly: the same bits, slower, so a failure here is a notice, not an error. */
/* One resident copy of the weights, not two: the products read the packed copies, so the
 * pages of the file mapping under every packed matrix are handed back to the kernel (a
 * private read-only file mapping: whatever still reads them — embedding rows of a tied
 * matrix, row subsets — faults them in again from the page cache). Only for mapped files
 * (a buffer read into memory would lose its contents). Measured: bench/notes/kquant_amx.md. */
static bool mapped_source(const hsd_transformer *tf) {
    return tf->release == hsd_file_map_close && tf->release_ctx &&
           ((const hsd_file_map *)tf->release_ctx)->mapped;
}

static void drop_packed_source(const hsd_transformer *tf, const hsd_mat *w) {
    if (!mapped_source(tf) || !w->data || !hsd_mm_packed_find(w)) return;
    const uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t a = (uintptr_t)w->data,
              b = a + hsd_dtype_row_bytes(w->type, w->cols) * (size_t)w->rows;
    a = (a + pg - 1) & ~(pg - 1), b &= ~(pg - 1); /* whole pages inside the matrix */
    if (b > a) (void)madvise((void *)a, b - a, MADV_DONTNEED);
}

static void pack_weights(hsd_transformer *tf) {
    tf->pack_tried = true;
    int32_t n = 7 * tf->cfg.n_layers + 1;
    for (int32_t i = 0; i < n; i++) {
        hsd_mat *w = product_mat(tf, i);
        /* a mapped file's pages go back as they are packed (hsd_mm_pack_release), then the
         * pages at the threads' range ends: the peak is about one copy */
        hsd_status s = mapped_source(tf) ? hsd_mm_pack_release(w, tf->pool, tf->n_threads)
                                         : hsd_mm_pack_on(w, tf->pool, tf->n_threads);
        if (s == HSD_OK) {
            drop_packed_source(tf, w);
        } else {
            hsd_log(HSD_LOG_INFO, "%s; weights are packed on the fly instead (slower)",
                    hsd_last_error());
            hsd_error_clear();
            while (i-- > 0) hsd_mm_unpack(product_mat(tf, i));
            return;
        }
    }
    tf->packed = true;
}

void hsd_tf_set_cpu_options(hsd_transformer *tf, bool no_pack, bool no_blas) {
    if (no_pack) tf->pack_tried = true; /* the products pack each group on the fly */
    tf->no_blas = no_blas;
}

void hsd_tf_pack(hsd_transformer *tf) {
    if (!tf->pack_tried) pack_weights(tf);
}

static hsd_status load_layer(hsd_transformer *tf, hsd_tensor_lookup_fn lookup, void *lctx, const char *src,
                             int32_t l) {
    const hsd_tf_config *c = &tf->cfg;
    hsd_tf_layer *L = &tf->layers[l];
    const int32_t d = c->dim, H = c->hidden_dim, q = tf->q_dim, kv = tf->kv_dim;
    hsd_status s;
    if ((s = get_norm(lookup, lctx, src, c, HSD_T_ATTN_NORM, l, d, true, &L->attn_norm))) return s;
    if (c->fused_qkv) { /* Phi-3: [q; k; v] in one matrix */
        hsd_mat qkv;
        if ((s = get_matrix(lookup, lctx, src, HSD_T_WQKV, l, q + 2 * kv, d, true, &qkv, NULL))) return s;
        L->wq = row_view(&qkv, 0, q), L->wk = row_view(&qkv, q, kv), L->wv = row_view(&qkv, q + kv, kv);
    } else if ((s = get_matrix(lookup, lctx, src, HSD_T_WQ, l, q, d, true, &L->wq, NULL)) ||
               (s = get_matrix(lookup, lctx, src, HSD_T_WK, l, kv, d, true, &L->wk, NULL)) ||
               (s = get_matrix(lookup, lctx, src, HSD_T_WV, l, kv, d, true, &L->wv, NULL))) {
        return s;
    }
    if ((s = get_matrix(lookup, lctx, src, HSD_T_WO, l, d, q, true, &L->wo, NULL)) ||
        (s = get_norm(lookup, lctx, src, c, HSD_T_FFN_NORM, l, d, true, &L->ffn_norm)))
        return s;
    if (c->fused_gate_up) { /* Phi-3: [gate; up] in one matrix */
        hsd_mat gu;
        if ((s = get_matrix(lookup, lctx, src, HSD_T_W_GATE_UP, l, 2 * H, d, true, &gu, NULL))) return s;
        L->w_gate = row_view(&gu, 0, H), L->w_up = row_view(&gu, H, H);
    } else if ((s = get_matrix(lookup, lctx, src, HSD_T_W_GATE, l, H, d, true, &L->w_gate, NULL))) {
        return s;
    }
    if ((s = get_matrix(lookup, lctx, src, HSD_T_W_DOWN, l, d, H, true, &L->w_down, NULL))) return s;
    if (!c->fused_gate_up && (s = get_matrix(lookup, lctx, src, HSD_T_W_UP, l, H, d, true, &L->w_up, NULL)))
        return s;
    if (c->qkv_bias &&
        ((s = get_vector(lookup, lctx, src, HSD_T_BQ, l, q, true, &L->bq)) ||
         (s = get_vector(lookup, lctx, src, HSD_T_BK, l, kv, true, &L->bk)) ||
         (s = get_vector(lookup, lctx, src, HSD_T_BV, l, kv, true, &L->bv))))
        return s;
    if (c->qk_norm &&
        ((s = get_norm(lookup, lctx, src, c, HSD_T_Q_NORM, l, c->head_dim, true, &L->q_norm)) ||
         (s = get_norm(lookup, lctx, src, c, HSD_T_K_NORM, l, c->head_dim, true, &L->k_norm))))
        return s;
    if (c->post_norms &&
        ((s = get_norm(lookup, lctx, src, c, HSD_T_ATTN_POST_NORM, l, d, true, &L->attn_post_norm)) ||
         (s = get_norm(lookup, lctx, src, c, HSD_T_FFN_POST_NORM, l, d, true, &L->ffn_post_norm))))
        return s;
    L->slides = hsd_arch_layer_slides(c, l);
    return HSD_OK;
}

hsd_status hsd_tf_create(const hsd_tf_config *cfg, hsd_tensor_lookup_fn lookup, void *lctx,
                         const char *src, const hsd_model_params *params,
                         void (*release)(void *), void *release_ctx, hsd_transformer **out) {
    *out = NULL;
    hsd_status s = check_config(cfg, src);
    if (s != HSD_OK) return s;
    hsd_model_params p = params ? *params : hsd_model_default_params();
    hsd_transformer *tf = calloc(1, sizeof *tf);
    if (!tf) return hsd_error(HSD_ERR_NOMEM, "%s: out of memory", src);
    tf->cfg = *cfg;
    const hsd_tf_config *c = &tf->cfg;
    tf->q_dim = c->n_heads * c->head_dim;
    tf->kv_dim = c->n_kv_heads * c->head_dim;
    tf->n_ctx = p.n_ctx > 0 ? p.n_ctx : (c->seq_len < HSD_DEFAULT_CTX_CAP ? c->seq_len : HSD_DEFAULT_CTX_CAP);
    tf->n_threads = p.n_threads > 0 ? p.n_threads : 2;
    if ((unsigned)p.kv_type > HSD_KV_Q4_0) {
        free(tf);
        return hsd_error(HSD_ERR_INVALID_ARG,
                         "%s: kv_type %d is not f16 (0), bf16 (1), f32 (2), q8_0 (3) or q4_0 (4)",
                         src, (int)p.kv_type);
    }
    tf->kv_type = p.kv_type == HSD_KV_F32    ? HSD_DT_F32
                  : p.kv_type == HSD_KV_BF16 ? HSD_DT_BF16
                  : p.kv_type == HSD_KV_Q8_0 ? HSD_DT_Q8_0
                  : p.kv_type == HSD_KV_Q4_0 ? HSD_DT_Q4_0
                                             : HSD_DT_F16;
    /* a Q8_0 cache in tiles where the kernel level reads them, a Q4_0 one always
     * (kernels/attention.h) */
    tf->kv_tiled = hsd_attn_kv_tiled(tf->kv_type, cfg->head_dim);
    /* where llama.cpp rotates a quantised cache (head_dim a multiple of 64): keys and queries
     * in blocks of the largest power of two dividing head_dim, values in blocks of 64 (its
     * authors measured smaller blocks better for V) */
    if ((tf->kv_type == HSD_DT_Q8_0 || tf->kv_type == HSD_DT_Q4_0) && !p.kv_no_rotate && cfg->head_dim % 64 == 0) {
        tf->kv_rot_k = 64;
        while (cfg->head_dim % (2 * tf->kv_rot_k) == 0) tf->kv_rot_k *= 2;
        tf->kv_rot_v = 64;
    }
    if (p.n_seq < 0 || p.n_seq > 4096) {
        free(tf);
        return hsd_error(HSD_ERR_INVALID_ARG, "%s: n_seq %d outside 0..4096", src, p.n_seq);
    }
    tf->n_seq = p.n_seq > 0 ? p.n_seq : 1;
    float *freq_factors = NULL;

    tf->layers = calloc((size_t)c->n_layers, sizeof *tf->layers);
    if (!tf->layers) goto nomem;
    bool found;
    if ((s = get_matrix(lookup, lctx, src, HSD_T_TOK_EMB, -1, c->vocab_size, c->dim, true,
                        &tf->tok_emb, NULL)) ||
        (s = get_norm(lookup, lctx, src, c, HSD_T_OUT_NORM, -1, c->dim, true, &tf->out_norm)) ||
        (s = get_matrix(lookup, lctx, src, HSD_T_CLS, -1, c->vocab_size, c->dim, false, &tf->cls,
                        &found)) ||
        (s = get_vector(lookup, lctx, src, HSD_T_ROPE_FREQS, -1, c->head_dim / 2, false,
                        &freq_factors)))
        goto fail;
    if (!found) tf->cls = tf->tok_emb; /* tied embeddings */
    for (int32_t l = 0; l < c->n_layers; l++)
        if ((s = load_layer(tf, lookup, lctx, src, l))) goto fail;

    if (hsd_tf_kv_alloc(tf) != HSD_OK) goto nomem;
    tf->max_cols = c->dim > c->hidden_dim ? c->dim : c->hidden_dim;
    if (tf->q_dim > tf->max_cols) tf->max_cols = tf->q_dim;
    const int32_t att_rows = HSD_ATTN_TILE * (c->n_heads / c->n_kv_heads);
    tf->att_floats = hsd_attn_scratch_floats(c->head_dim, att_rows);
    tf->att = malloc((size_t)tf->n_threads * tf->att_floats * sizeof(float));
    tf->att_rows = malloc((size_t)tf->n_threads * att_rows * sizeof *tf->att_rows);
    tf->pool = hsd_pool_create(tf->n_threads);
    /* the rope tables, like the caches, grow with the positions used (hsd_tf_rope_reserve) */
    tf->swa_rope = c->swa_window > 0 && c->rope_theta_swa > 0;
    tf->freq_factors = freq_factors;
    freq_factors = NULL;
    if (!tf->att || !tf->att_rows || !tf->pool) goto nomem;
    snprintf(tf->desc, sizeof tf->desc,
             "%s %s: dim %d, hidden %d, %d layers, %d heads (%d kv, head_dim %d), vocab %d, "
             "ctx %d/%d, %s weights, %s KV%s%s%s%s%s",
             c->arch, src, c->dim, c->hidden_dim, c->n_layers, c->n_heads, c->n_kv_heads,
             c->head_dim, c->vocab_size, tf->n_ctx, c->seq_len, hsd_dtype_name(tf->layers[0].wq.type),
             hsd_dtype_name(tf->kv_type),
             c->qkv_bias ? ", qkv bias" : "", c->qk_norm ? ", qk norm" : "",
             c->post_norms ? ", post norms" : "", c->swa_window > 0 ? ", sliding window" : "",
             tf->cls.data == tf->tok_emb.data ? ", tied" : "");
    if (tf->n_seq > 1) {
        size_t dl = strlen(tf->desc);
        snprintf(tf->desc + dl, sizeof tf->desc - dl, ", %d sequences", tf->n_seq);
    }
    tf->release = release;
    tf->release_ctx = release_ctx;
    *out = tf;
    return HSD_OK;
nomem:
    s = hsd_error(HSD_ERR_NOMEM, "%s: out of memory (attention scratch of %d threads, %d sequences)",
                  src, tf->n_threads, tf->n_seq);
fail:
    free(freq_factors);
    hsd_tf_free(tf); /* release is not yet set: the caller keeps the mapping */
    return s;
}

void hsd_tf_free(hsd_transformer *tf) {
    if (!tf) return;
    for (int32_t i = 0; tf->packed && i < 7 * tf->cfg.n_layers + 1; i++)
        hsd_mm_unpack(product_mat(tf, i));
    if (tf->layers)
        for (int32_t l = 0; l < tf->cfg.n_layers; l++) {
            hsd_tf_layer *L = &tf->layers[l];
            free(L->attn_norm);
            free(L->ffn_norm);
            free(L->bq);
            free(L->bk);
            free(L->bv);
            free(L->q_norm);
            free(L->k_norm);
            free(L->attn_post_norm);
            free(L->ffn_post_norm);
        }
    free(tf->layers);
    free(tf->out_norm);
    hsd_pool_free(tf->pool);
    hsd_tf_kv_free(tf);
    free(tf->kbuf);
    free(tf->vbuf);
    free(tf->spar);
    free(tf->rope_cos);
    free(tf->rope_sin);
    free(tf->rope_cos_swa);
    free(tf->rope_sin_swa);
    free(tf->freq_factors);
    free(tf->x);
    free(tf->xb);
    free(tf->q);
    free(tf->hb);
    free(tf->hb2);
    free(tf->pos);
    free(tf->anc);
    free(tf->anc_off);
    free(tf->att);
    free(tf->att_rows);
    hsd_mm_ws_free(&tf->mm);
    hsd_head_free(tf->head);
    if (tf->release) tf->release(tf->release_ctx);
    free(tf);
}

const hsd_tf_config *hsd_tf_get_config(const hsd_transformer *tf) { return &tf->cfg; }
const char *hsd_tf_desc(const hsd_transformer *tf) { return tf->desc; }

/* ---- draft head hook and timing ---------------------------------------------------- */

hsd_head *hsd_tf_swap_head(hsd_transformer *tf, hsd_head *head) {
    hsd_head *old = tf->head;
    tf->head = head;
    return old;
}
const hsd_head *hsd_tf_head(const hsd_transformer *tf) {
    return tf->head;
}
const hsd_mat *hsd_tf_classifier(const hsd_transformer *tf) {
    return &tf->cls;
}
/* ---- views for other backends ------------------------------------------------------ */

const hsd_mat *hsd_tf_matrix(const hsd_transformer *tf, hsd_tkind kind, int32_t layer) {
    if (layer < 0) {
        if (kind == HSD_T_TOK_EMB) return &tf->tok_emb;
        if (kind == HSD_T_CLS) return &tf->cls;
        return NULL;
    }
    if (layer >= tf->cfg.n_layers) return NULL;
    const hsd_tf_layer *L = &tf->layers[layer];
    switch (kind) {
    case HSD_T_WQ: return &L->wq;
    case HSD_T_WK: return &L->wk;
    case HSD_T_WV: return &L->wv;
    case HSD_T_WO: return &L->wo;
    case HSD_T_W_GATE: return &L->w_gate;
    case HSD_T_W_DOWN: return &L->w_down;
    case HSD_T_W_UP: return &L->w_up;
    default: return NULL;
    }
}

const float *hsd_tf_vector(const hsd_transformer *tf, hsd_tkind kind, int32_t layer) {
    if (layer < 0) return kind == HSD_T_OUT_NORM ? tf->out_norm : NULL;
    if (layer >= tf->cfg.n_layers) return NULL;
    const hsd_tf_layer *L = &tf->layers[layer];
    switch (kind) {
    case HSD_T_ATTN_NORM: return L->attn_norm;
    case HSD_T_FFN_NORM: return L->ffn_norm;
    case HSD_T_BQ: return L->bq;
    case HSD_T_BK: return L->bk;
    case HSD_T_BV: return L->bv;
    case HSD_T_Q_NORM: return L->q_norm;
    case HSD_T_K_NORM: return L->k_norm;
    default: return NULL;
    }
}

int32_t hsd_tf_n_ctx(const hsd_transformer *tf) { return tf->n_ctx; }

hsd_status hsd_tf_rope_reserve(hsd_transformer *tf, int32_t need) {
    if (need <= tf->rope_n) return HSD_OK;
    const hsd_tf_config *c = &tf->cfg;
    int64_t c64 = (int64_t)tf->rope_n + tf->rope_n / 2; /* as the caches: 1.5x, 64s, <= n_ctx */
    if (c64 < need) c64 = need;
    c64 = (c64 + 63) / 64 * 64;
    const int32_t cap = c64 > tf->n_ctx ? tf->n_ctx : (int32_t)c64;
    const size_t bytes = (size_t)cap * (c->head_dim / 2) * sizeof(float);
    float **tabs[4] = {&tf->rope_cos, &tf->rope_sin, &tf->rope_cos_swa, &tf->rope_sin_swa};
    for (int i = 0; i < (tf->swa_rope ? 4 : 2); i++) {
        float *t = realloc(*tabs[i], bytes);
        if (!t)
            return hsd_error(HSD_ERR_NOMEM, "forward: out of memory for rope tables of %d positions",
                             cap);
        *tabs[i] = t;
    }
    rope_table(tf, c->rope_theta, true, tf->freq_factors, tf->rope_cos, tf->rope_sin, tf->rope_n, cap);
    if (tf->swa_rope)
        rope_table(tf, c->rope_theta_swa, false, NULL, tf->rope_cos_swa, tf->rope_sin_swa,
                   tf->rope_n, cap);
    tf->rope_n = cap;
    return HSD_OK;
}

hsd_status hsd_tf_rope_tables(const hsd_transformer *tf, const float **cos_t, const float **sin_t) {
    /* the views cover n_ctx positions: fill the lazily grown tables up to there (a transformer
     * is always heap-allocated and mutable: the const is the caller's read-only promise) */
    hsd_status s = hsd_tf_rope_reserve((hsd_transformer *)tf, tf->n_ctx);
    *cos_t = tf->rope_cos;
    *sin_t = tf->rope_sin;
    return s;
}

