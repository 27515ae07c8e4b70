/* llama2.c "legacy" (version 0) checkpoints: a header of 7 int32 (dim, hidden_dim,
 * n_layers, n_heads, n_kv_heads, vocab_size, seq_len), then fp32 weights in run.c's order.
 * A negative vocab_size means the classifier is stored separately (unshared). */
#include <stdio.h>
#include <string.h>

#include "lib/base/error.h"
#include "models/loaders.h"

typedef struct l2c_ctx {
    const char *path;
    hsd_tf_config cfg;
    const float *tok_emb, *attn_norm, *wq, *wk, *wv, *wo, *ffn_norm, *w1, *w2, *w3, *out_norm, *cls;
    char name[64];
} l2c_ctx;

static hsd_status l2c_lookup(void *vctx, hsd_tkind kind, int32_t layer, hsd_tensor_ref *r, bool *found) {
    l2c_ctx *c = vctx;
    const hsd_tf_config *g = &c->cfg;
    int64_t d = g->dim, h = g->hidden_dim, q = (int64_t)g->n_heads * g->head_dim,
            kv = (int64_t)g->n_kv_heads * g->head_dim;
    size_t l = layer < 0 ? 0 : (size_t)layer;
    *found = true;
    r->type = HSD_DT_F32;
    r->n_dims = 2;
    switch (kind) {
    case HSD_T_TOK_EMB: r->data = c->tok_emb; r->shape[0] = g->vocab_size; r->shape[1] = d; break;
    case HSD_T_OUT_NORM: r->data = c->out_norm; r->n_dims = 1; r->shape[0] = d; break;
    case HSD_T_CLS:
        if (!c->cls) { *found = false; return HSD_OK; }
        r->data = c->cls; r->shape[0] = g->vocab_size; r->shape[1] = d; break;
    case HSD_T_ATTN_NORM: r->data = c->attn_norm + l * d; r->n_dims = 1; r->shape[0] = d; break;
    case HSD_T_FFN_NORM: r->data = c->ffn_norm + l * d; r->n_dims = 1; r->shape[0] = d; break;
    case HSD_T_WQ: r->data = c->wq + l * q * d; r->shape[0] = q; r->shape[1] = d; break;
    case HSD_T_WK: r->data = c->wk + l * kv * d; r->shape[0] = kv; r->shape[1] = d; break;
    case HSD_T_WV: r->data = c->wv + l * kv * d; r->shape[0] = kv; r->shape[1] = d; break;
    case HSD_T_WO: r->data = c->wo + l * q * d; r->shape[0] = d; r->shape[1] = q; break;
    case HSD_T_W_GATE: r->data = c->w1 + l * h * d; r->shape[0] = h; r->shape[1] = d; break;
    case HSD_T_W_DOWN: r->data = c->w2 + l * h * d; r->shape[0] = d; r->shape[1] = h; break;
    case HSD_T_W_UP: r->data = c->w3 + l * h * d; r->shape[0] = h; r->shape[1] = d; break;
    default: *found = false; return HSD_OK;
    }
    snprintf(c->name, sizeof c->name, "%s%s%d", hsd_tkind_name(kind), layer >= 0 ? " of layer " : "", layer);
    if (layer < 0) snprintf(c->name, sizeof c->name, "%s", hsd_tkind_name(kind));
    r->name = c->name;
    return HSD_OK;
}

hsd_status hsd_llama2c_load(const char *path, const hsd_model_params *params, hsd_transformer **out) {
    *out = NULL;
    hsd_file_map *m;
    hsd_status s = hsd_file_map_open(path, params ? params->use_mmap : true, &m);
    if (s != HSD_OK) return s;
    if (m->size < 28) {
        size_t size = m->size;
        hsd_file_map_close(m);
        return hsd_error(HSD_ERR_PARSE, "%s: truncated llama2.c header (%zu bytes, need 28)", path, size);
    }
    int32_t h[7];
    memcpy(h, m->data, sizeof h);
    if (!memcmp(m->data, "ak42", 4)) {
        hsd_file_map_close(m);
        return hsd_error(HSD_ERR_UNSUPPORTED,
                         "%s: llama2.c version-1+ export (magic \"ak42\"); only legacy version-0 checkpoints are supported",
                         path);
    }
    l2c_ctx c = {.path = path};
    hsd_tf_config *g = &c.cfg;
    snprintf(g->arch, sizeof g->arch, "llama2c");
    g->dim = h[0];
    g->hidden_dim = h[1];
    g->n_layers = h[2];
    g->n_heads = h[3];
    g->n_kv_heads = h[4];
    bool shared = h[5] > 0;
    /* a negative vocab_size marks an unshared classifier; INT32_MIN has no positive twin
     * (negating it is UB: found by fuzz_model_llama2c), so it becomes 0 and is refused */
    g->vocab_size = h[5] == INT32_MIN ? 0 : h[5] < 0 ? -h[5] : h[5];
    g->seq_len = h[6];
    g->head_dim = g->n_heads > 0 && g->dim % g->n_heads == 0 ? g->dim / g->n_heads : 0;
    g->rope_theta = 10000.0f;
    g->norm_eps = 1e-5f;
    g->rope_interleaved = true;
    if (g->dim <= 0 || g->hidden_dim <= 0 || g->n_layers <= 0 || g->n_heads <= 0 ||
        g->n_kv_heads <= 0 || g->vocab_size <= 0 || g->seq_len <= 0 || g->head_dim <= 0 ||
        g->dim > (1 << 16) || g->hidden_dim > (1 << 18) || g->n_layers > 1024 ||
        g->vocab_size > (1 << 22) || g->seq_len > (1 << 20) || g->n_kv_heads > g->n_heads) {
        hsd_file_map_close(m);
        return hsd_error(HSD_ERR_PARSE,
                         "%s: not a llama2.c checkpoint: header dim %d, hidden_dim %d, n_layers %d, "
                         "n_heads %d, n_kv_heads %d, vocab_size %d, seq_len %d",
                         path, h[0], h[1], h[2], h[3], h[4], h[5], h[6]);
    }
    size_t d = (size_t)g->dim, hd = (size_t)g->head_dim, nl = (size_t)g->n_layers,
           kv = (size_t)g->n_kv_heads * hd, V = (size_t)g->vocab_size, H = (size_t)g->hidden_dim;
    /* float counts of each section, in file order */
    size_t need = V * d + nl * d + nl * d * d + 2 * nl * d * kv + nl * d * d + nl * d +
                  3 * nl * d * H + d + (size_t)g->seq_len * hd; /* + freq_cis real/imag */
    if (!shared) need += V * d;
    size_t have = (m->size - 28) / 4;
    if (have < need) {
        size_t size = m->size;
        hsd_file_map_close(m);
        return hsd_error(HSD_ERR_PARSE,
                         "%s: truncated llama2.c checkpoint: %zu bytes, the header implies %zu",
                         path, size, 28 + need * 4);
    }
    const float *p = (const float *)(const void *)((const char *)m->data + 28);
    c.tok_emb = p; p += V * d;
    c.attn_norm = p; p += nl * d;
    c.wq = p; p += nl * d * d;
    c.wk = p; p += nl * d * kv;
    c.wv = p; p += nl * d * kv;
    c.wo = p; p += nl * d * d;
    c.ffn_norm = p; p += nl * d;
    c.w1 = p; p += nl * d * H;
    c.w2 = p; p += nl * d * H;
    c.w3 = p; p += nl * d * H;
    c.out_norm = p; p += d;
    p += (size_t)g->seq_len * hd; /* freq_cis_real, freq_cis_imag: recomputed instead */
    c.cls = shared ? NULL : p;
    s = hsd_tf_create(g, l2c_lookup, &c, path, params, hsd_file_map_close, m, out);
    if (s != HSD_OK) hsd_file_map_close(m);
    return s;
}
