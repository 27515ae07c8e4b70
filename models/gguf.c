/* GGUF (v2, v3) models of the architectures in models/arch.c (the writer is gguf_write.c).
 * Layout: "GGUF", u32 version, u64 n_tensors, u64 n_kv, the key/value metadata, the tensor
 * infos (name, dims innermost first, ggml type, offset), then the aligned tensor data. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/quant.h"
#include "lib/base/error.h"
#include "lib/base/gguf.h"
#include "models/arch.h"
#include "models/loaders.h"

/* GGML type id -> hsd storage type (kernels/quant.h); -1 when hsd has no kernels for it. */
static int ggml_to_hsd(uint32_t t) {
    static const struct { uint32_t ggml; hsd_dtype dt; } map[] = {
        {HSD_GGML_F32, HSD_DT_F32},   {HSD_GGML_F16, HSD_DT_F16},   {HSD_GGML_BF16, HSD_DT_BF16},
        {HSD_GGML_Q8_0, HSD_DT_Q8_0}, {HSD_GGML_Q4_0, HSD_DT_Q4_0}, {HSD_GGML_Q4_1, HSD_DT_Q4_1},
        {HSD_GGML_Q5_0, HSD_DT_Q5_0}, {HSD_GGML_Q5_1, HSD_DT_Q5_1}, {HSD_GGML_Q2_K, HSD_DT_Q2_K},
        {HSD_GGML_Q3_K, HSD_DT_Q3_K}, {HSD_GGML_Q4_K, HSD_DT_Q4_K}, {HSD_GGML_Q5_K, HSD_DT_Q5_K},
        {HSD_GGML_Q6_K, HSD_DT_Q6_K}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (map[i].ggml == t) return (int)map[i].dt;
    return -1;
}

typedef struct gguf_tensor {
    char *name;
    uint32_t n_dims, type;
    uint64_t ne[4];
    uint64_t offset;
    size_t info_off; /* file offset of the tensor's info record, for error messages */
} gguf_tensor;

typedef struct gguf_file {
    const char *path;
    const uint8_t *p;
    size_t size, off;
    hsd_gguf meta; /* the metadata, read by lib/base/gguf.c */
    char arch[32];
    uint32_t alignment;
    gguf_tensor *tensors;
    uint64_t n_tensors;
    size_t data_start;
    char name_buf[160];
} gguf_file;

static hsd_status need(gguf_file *g, size_t n, const char *what) {
    if (n > g->size || g->off > g->size - n)
        return hsd_error(HSD_ERR_PARSE, "%s: truncated GGUF: %s at byte %zu needs %zu bytes, file has %zu",
                         g->path, what, g->off, n, g->size);
    return HSD_OK;
}

static hsd_status rd(gguf_file *g, void *dst, size_t n, const char *what) {
    hsd_status s = need(g, n, what);
    if (s != HSD_OK) return s;
    memcpy(dst, g->p + g->off, n);
    g->off += n;
    return HSD_OK;
}

/* An untrusted metadata number as int32: -1 unless integral and in range. */
static int32_t gguf_i32(double v) {
    return v >= 0 && v <= (double)INT32_MAX && v == (double)(int64_t)v ? (int32_t)v : -1;
}

/* The number under "<arch>.<suffix>"; false when absent (a present key of a non-number type
 * is an error naming it). */
static bool num_get(gguf_file *g, const char *suffix, double *v, hsd_status *err) {
    char key[96];
    snprintf(key, sizeof key, "%s.%s", g->arch, suffix);
    const hsd_gguf_kv *kv = hsd_gguf_find(&g->meta, key);
    if (!kv) return false;
    hsd_status s = hsd_gguf_get_num(&g->meta, kv, v);
    if (s != HSD_OK && *err == HSD_OK) *err = s;
    return s == HSD_OK;
}

static hsd_status gguf_parse(gguf_file *g) {
    hsd_status s = hsd_gguf_open(&g->meta, g->p, g->size, g->path);
    if (s) return s;
    g->n_tensors = g->meta.n_tensors;
    if (g->n_tensors > g->size / 24)
        return hsd_error(HSD_ERR_PARSE, "%s: truncated GGUF or corrupt header: it claims %llu tensors, more than %zu bytes can hold",
                         g->path, (unsigned long long)g->n_tensors, g->size);
    const hsd_gguf_kv *kv = hsd_gguf_find(&g->meta, "general.architecture");
    const char *arch = "";
    size_t alen = 0;
    if (kv && (s = hsd_gguf_get_str(&g->meta, kv, &arch, &alen))) return s;
    snprintf(g->arch, sizeof g->arch, "%.*s", (int)(alen < 31 ? alen : 31), arch);
    g->alignment = 32;
    if ((kv = hsd_gguf_find(&g->meta, "general.alignment"))) {
        double v;
        if ((s = hsd_gguf_get_num(&g->meta, kv, &v))) return s;
        if (v < 1 || v > 65536 || ((uint32_t)v & ((uint32_t)v - 1)))
            return hsd_error(HSD_ERR_PARSE, "%s: general.alignment %g is not a power of two", g->path, v);
        g->alignment = (uint32_t)v;
    }
    g->off = g->meta.kv_end;
    g->tensors = calloc(g->n_tensors ? g->n_tensors : 1, sizeof *g->tensors);
    if (!g->tensors) return hsd_error(HSD_ERR_NOMEM, "%s: out of memory", g->path);
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        gguf_tensor *t = &g->tensors[i];
        uint64_t nlen;
        t->info_off = g->off;
        if ((s = rd(g, &nlen, 8, "tensor name")) || (s = need(g, nlen, "tensor name"))) return s;
        t->name = malloc(nlen + 1);
        if (!t->name) return hsd_error(HSD_ERR_NOMEM, "%s: out of memory", g->path);
        memcpy(t->name, g->p + g->off, nlen);
        t->name[nlen] = 0;
        g->off += nlen;
        if ((s = rd(g, &t->n_dims, 4, t->name))) return s;
        if (t->n_dims < 1 || t->n_dims > 4)
            return hsd_error(HSD_ERR_PARSE, "%s: tensor '%s' has %u dimensions", g->path, t->name, t->n_dims);
        for (uint32_t d = 0; d < t->n_dims; d++)
            if ((s = rd(g, &t->ne[d], 8, t->name))) return s;
        if ((s = rd(g, &t->type, 4, t->name)) || (s = rd(g, &t->offset, 8, t->name))) return s;
        if (t->type >= HSD_GGML_N_TYPES)
            return hsd_error(HSD_ERR_PARSE, "%s: tensor '%s' (info at byte %zu): bad tensor type id %u (GGML has %d)",
                             g->path, t->name, t->info_off, t->type, HSD_GGML_N_TYPES);
    }
    g->data_start = (g->off + g->alignment - 1) / g->alignment * g->alignment;
    return HSD_OK;
}

const char *hsd_gguf_tensor_name(hsd_tkind kind, int32_t layer, char *buf, size_t cap) {
    static const char *glob[] = {"token_embd.weight", "output_norm.weight", "output.weight", "rope_freqs.weight"};
    static const char *per[] = {"attn_norm.weight", "attn_q.weight", "attn_k.weight", "attn_v.weight",
                                "attn_output.weight", "attn_q.bias", "attn_k.bias", "attn_v.bias",
                                "ffn_norm.weight", "ffn_gate.weight", "ffn_down.weight", "ffn_up.weight",
                                "attn_q_norm.weight", "attn_k_norm.weight", "post_attention_norm.weight",
                                "post_ffw_norm.weight", "attn_qkv.weight", "ffn_up.weight"};
    if (kind <= HSD_T_ROPE_FREQS) return glob[kind];
    snprintf(buf, cap, "blk.%d.%s", layer, per[kind - HSD_T_ATTN_NORM]);
    return buf;
}

static hsd_status gguf_lookup(void *ctx, hsd_tkind kind, int32_t layer, hsd_tensor_ref *r, bool *found) {
    gguf_file *g = ctx;
    const char *name = hsd_gguf_tensor_name(kind, layer, g->name_buf, sizeof g->name_buf);
    *found = false;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        gguf_tensor *t = &g->tensors[i];
        if (strcmp(t->name, name)) continue;
        int dti = ggml_to_hsd(t->type);
        if (dti < 0)
            return hsd_error(HSD_ERR_UNSUPPORTED,
                             "%s: unsupported tensor type %s (%u) in tensor '%s' (info at byte %zu); supported: "
                             "F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K",
                             g->path, hsd_ggml_type_name(t->type), t->type, t->name, t->info_off);
        hsd_dtype dt = (hsd_dtype)dti;
        if (t->ne[0] % (uint64_t)hsd_dtype_block(dt))
            return hsd_error(HSD_ERR_PARSE,
                             "%s: tensor '%s' (info at byte %zu): rows of %llu elements are not a multiple of %s's block of %d",
                             g->path, t->name, t->info_off, (unsigned long long)t->ne[0], hsd_dtype_name(dt),
                             hsd_dtype_block(dt));
        uint64_t rows = 1;
        for (uint32_t d = 1; d < t->n_dims; d++) {
            if (t->ne[d] && rows > UINT64_MAX / t->ne[d]) rows = UINT64_MAX;
            else rows *= t->ne[d];
        }
        if (t->ne[0] > (1u << 30) || rows > (1ull << 40))
            return hsd_error(HSD_ERR_PARSE, "%s: tensor '%s' has implausible dimensions", g->path, t->name);
        uint64_t bytes = hsd_dtype_row_bytes(dt, (int64_t)t->ne[0]) * rows;
        uint64_t end = g->data_start + t->offset + bytes;
        if (t->offset > g->size || end > g->size)
            return hsd_error(HSD_ERR_PARSE,
                             "%s: tensor '%s' data [%llu, %llu) lies beyond the end of the file (%zu bytes): truncated?",
                             g->path, t->name, (unsigned long long)(g->data_start + t->offset),
                             (unsigned long long)end, g->size);
        if ((g->data_start + t->offset) % 4)
            return hsd_error(HSD_ERR_PARSE, "%s: tensor '%s' data offset %llu is not 4-byte aligned", g->path,
                             t->name, (unsigned long long)t->offset);
        r->name = t->name;
        r->type = dt;
        r->n_dims = (int32_t)t->n_dims;
        for (uint32_t d = 0; d < t->n_dims; d++) r->shape[d] = (int64_t)t->ne[t->n_dims - 1 - d];
        r->data = g->p + g->data_start + t->offset;
        *found = true;
        return HSD_OK;
    }
    return HSD_OK;
}

static void gguf_free(gguf_file *g) {
    hsd_gguf_close(&g->meta);
    if (g->tensors)
        for (uint64_t i = 0; i < g->n_tensors; i++) free(g->tensors[i].name);
    free(g->tensors);
}

/* The architecture's hparams under "<arch>.": shape, rope, norms, sliding window, caps. */
static hsd_status read_config(gguf_file *g, hsd_tf_config *c) {
    const char *path = g->path;
    hsd_status err = HSD_OK;
    double v;
    static const char *required[] = {"embedding_length", "feed_forward_length", "block_count", "attention.head_count"};
    hsd_status s = hsd_arch_init(c, g->arch, true, path); /* an unknown architecture first */
    if (s) return s;
    for (int i = 0; i < 4; i++)
        if (!num_get(g, required[i], &v, &err))
            return err ? err : hsd_error(HSD_ERR_PARSE, "%s: missing metadata key '%s.%s'", path, g->arch, required[i]);
    /* metadata numbers are untrusted: out-of-range values become -1, which the shape
     * checks reject (a raw double-to-int cast of 4294967295 is UB; fuzz_model_gguf) */
    num_get(g, "embedding_length", &v, &err), c->dim = gguf_i32(v);
    num_get(g, "feed_forward_length", &v, &err), c->hidden_dim = gguf_i32(v);
    num_get(g, "block_count", &v, &err), c->n_layers = gguf_i32(v);
    num_get(g, "attention.head_count", &v, &err), c->n_heads = gguf_i32(v);
    c->n_kv_heads = num_get(g, "attention.head_count_kv", &v, &err) ? gguf_i32(v) : c->n_heads;
    c->head_dim = num_get(g, "attention.key_length", &v, &err) ? gguf_i32(v) : (c->n_heads > 0 ? c->dim / c->n_heads : 0);
    c->seq_len = num_get(g, "context_length", &v, &err) ? gguf_i32(v) : 2048;
    c->rope_theta = num_get(g, "rope.freq_base", &v, &err) ? (float)v : 10000.0f;
    c->norm_eps = num_get(g, "attention.layer_norm_rms_epsilon", &v, &err) ? (float)v : 1e-5f;
    c->swa_window = num_get(g, "attention.sliding_window", &v, &err) ? gguf_i32(v) : 0;
    char pkey[96];
    snprintf(pkey, sizeof pkey, "%s.attention.sliding_window_pattern", g->arch);
    const hsd_gguf_kv *pat = hsd_gguf_find(&g->meta, pkey);
    if (pat && pat->type == HSD_GGUF_ARRAY) { /* one flag per layer, as llama.cpp reads it */
        if ((pat->arr_type != HSD_GGUF_BOOL && pat->arr_type != HSD_GGUF_INT32 && pat->arr_type != HSD_GGUF_UINT32) ||
            pat->arr_n != (uint64_t)c->n_layers || c->n_layers > HSD_TF_MAX_SWA_LAYERS)
            return hsd_error(HSD_ERR_PARSE, "%s: metadata '%s' is an array of %llu (need one bool or int per layer, %d)",
                             path, pkey, (unsigned long long)pat->arr_n, c->n_layers);
        c->swa_layers_set = true;
        for (int32_t l = 0; l < c->n_layers; l++) {
            bool on = pat->arr_type == HSD_GGUF_BOOL ? g->p[pat->val_off + (size_t)l] != 0
                                                     : hsd_gguf_i32_at(&g->meta, pat, (uint64_t)l) != 0;
            if (on) c->swa_layers[l / 64] |= 1ull << (l % 64);
        }
    } else {
        c->swa_pattern = num_get(g, "attention.sliding_window_pattern", &v, &err) ? gguf_i32(v) : 0;
    }
    c->rope_theta_swa = num_get(g, "rope.freq_base_swa", &v, &err) ? (float)v : 0;
    c->attn_softcap = num_get(g, "attn_logit_softcapping", &v, &err) ? (float)v : 0;
    c->final_softcap = num_get(g, "final_logit_softcapping", &v, &err) ? (float)v : 0;
    if (num_get(g, "rope.scaling.factor", &v, &err) || num_get(g, "rope.scale_linear", &v, &err))
        c->rope_linear = v > 0 && v != 1 ? (float)v : 0;
    char key[96];
    snprintf(key, sizeof key, "%s.rope.scaling.type", g->arch);
    const hsd_gguf_kv *kv = hsd_gguf_find(&g->meta, key);
    const char *type = "linear";
    size_t tlen = 6;
    if (kv && (s = hsd_gguf_get_str(&g->meta, kv, &type, &tlen))) return s;
    if (tlen == 4 && !memcmp(type, "none", 4)) c->rope_linear = 0;
    else if (!(tlen == 6 && !memcmp(type, "linear", 6)))
        return hsd_error(HSD_ERR_UNSUPPORTED, "%s: metadata '%s' = '%.*s' (supported: none, linear)", path, key,
                         (int)(tlen < 32 ? tlen : 32), type);
    /* partial rotary (rope.dimension_count < head_dim) and a value width unlike the key's
     * are other architectures' */
    if (num_get(g, "rope.dimension_count", &v, &err) && gguf_i32(v) != c->head_dim)
        return hsd_error(HSD_ERR_UNSUPPORTED, "%s: metadata '%s.rope.dimension_count' = %g, head_dim %d (partial rope is not supported)",
                         path, g->arch, v, c->head_dim);
    if (num_get(g, "attention.value_length", &v, &err) && gguf_i32(v) != c->head_dim)
        return hsd_error(HSD_ERR_UNSUPPORTED, "%s: metadata '%s.attention.value_length' = %g differs from the key length %d",
                         path, g->arch, v, c->head_dim);
    if (err) return err;
    if (c->swa_window < 0 || c->swa_pattern < 0)
        return hsd_error(HSD_ERR_PARSE, "%s: bad sliding window metadata (window %d, pattern %d)", path,
                         c->swa_window, c->swa_pattern);
    /* Phi-3's sliding window is off in llama.cpp (its converters wrote it wrongly): do the same */
    if (!strcmp(g->arch, "phi3")) c->swa_window = 0;
    if (num_get(g, "vocab_size", &v, &err)) {
        c->vocab_size = gguf_i32(v);
    } else {
        hsd_tensor_ref r;
        bool found;
        s = gguf_lookup(g, HSD_T_TOK_EMB, -1, &r, &found);
        if (s) return s;
        if (!found) return hsd_error(HSD_ERR_PARSE, "%s: missing tensor 'token_embd.weight'", path);
        c->vocab_size = r.shape[0] > 0 && r.shape[0] < INT32_MAX ? (int32_t)r.shape[0] : -1;
    }
    return hsd_arch_init(c, g->arch, true, path);
}

hsd_status hsd_gguf_load(const char *path, const hsd_model_params *params, hsd_transformer **out) {
    *out = NULL;
    hsd_file_map *m;
    hsd_status s = hsd_file_map_open(path, params ? params->use_mmap : true, &m);
    if (s != HSD_OK) return s;
    gguf_file g = {.path = path, .p = m->data, .size = m->size};
    hsd_tf_config c = {0};
    if ((s = gguf_parse(&g)) || (s = read_config(&g, &c))) goto fail;
    s = hsd_tf_create(&c, gguf_lookup, &g, path, params, hsd_file_map_close, m, out);
    gguf_free(&g);
    if (s != HSD_OK) hsd_file_map_close(m);
    return s;
fail:
    gguf_free(&g);
    hsd_file_map_close(m);
    return s;
}
