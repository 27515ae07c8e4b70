/* GGUF (v2, v3) models of architecture llama or qwen2 (the writer is gguf_write.c).
 * Layout: "GGUF", u32 version, u64 n_tensors, u64 n_kv, the key/value metadata, the tensor
 * infos (name, dims innermost first, ggml type, offset), then the aligned tensor data. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/error.h"
#include "models/loaders.h"

enum { GGUF_U8, GGUF_I8, GGUF_U16, GGUF_I16, GGUF_U32, GGUF_I32, GGUF_F32, GGUF_BOOL,
       GGUF_STRING, GGUF_ARRAY, GGUF_U64, GGUF_I64, GGUF_F64, GGUF_NTYPES };
enum { GGML_F32 = 0, GGML_F16 = 1, GGML_Q8_0 = 8, GGML_BF16 = 30 };

static const char *ggml_type_name(uint32_t t) {
    static const char *names[] = {"F32", "F16", "Q4_0", "Q4_1", "type 4", "type 5", "Q5_0",
                                  "Q5_1", "Q8_0", "Q8_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K",
                                  "Q8_K", "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL",
                                  "IQ3_S", "IQ2_S", "IQ4_XS", "I8", "I16", "I32", "I64", "F64",
                                  "IQ1_M", "BF16"};
    return t < sizeof names / sizeof names[0] ? names[t] : "unknown";
}

#define GGUF_MAX_NUM 64

typedef struct gguf_tensor {
    char *name;
    uint32_t n_dims, type;
    uint64_t ne[4];
    uint64_t offset;
} gguf_tensor;

typedef struct gguf_file {
    const char *path;
    const uint8_t *p;
    size_t size, off;
    char arch[32];
    struct {
        char key[96];
        double v;
    } num[GGUF_MAX_NUM];
    int n_num;
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

/* A string in place: *s points into the file, not NUL-terminated. */
static hsd_status rd_str(gguf_file *g, const char **s, uint64_t *len, const char *what) {
    hsd_status st = rd(g, len, 8, what);
    if (st != HSD_OK) return st;
    if ((st = need(g, *len, what)) != HSD_OK) return st;
    *s = (const char *)g->p + g->off;
    g->off += *len;
    return HSD_OK;
}

static size_t scalar_size(uint32_t t) {
    static const size_t sz[GGUF_NTYPES] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    return t < GGUF_NTYPES ? sz[t] : 0;
}

static double scalar_value(uint32_t t, const uint8_t *p) {
    switch (t) {
    case GGUF_U8: return *p;
    case GGUF_I8: return (int8_t)*p;
    case GGUF_BOOL: return *p != 0;
    case GGUF_U16: { uint16_t v; memcpy(&v, p, 2); return v; }
    case GGUF_I16: { int16_t v; memcpy(&v, p, 2); return v; }
    case GGUF_U32: { uint32_t v; memcpy(&v, p, 4); return v; }
    case GGUF_I32: { int32_t v; memcpy(&v, p, 4); return v; }
    case GGUF_F32: { float v; memcpy(&v, p, 4); return v; }
    case GGUF_U64: { uint64_t v; memcpy(&v, p, 8); return (double)v; }
    case GGUF_I64: { int64_t v; memcpy(&v, p, 8); return (double)v; }
    case GGUF_F64: { double v; memcpy(&v, p, 8); return v; }
    }
    return 0;
}

static hsd_status skip_value(gguf_file *g, uint32_t type, const char *key, int depth) {
    if (type == GGUF_STRING) {
        const char *s;
        uint64_t n;
        return rd_str(g, &s, &n, key);
    }
    if (type == GGUF_ARRAY) {
        uint32_t et;
        uint64_t n;
        hsd_status st;
        if ((st = rd(g, &et, 4, key)) || (st = rd(g, &n, 8, key))) return st;
        if (depth > 2 || et >= GGUF_NTYPES)
            return hsd_error(HSD_ERR_PARSE, "%s: metadata '%s': bad array element type %u", g->path, key, et);
        if (et != GGUF_STRING && et != GGUF_ARRAY) {
            size_t sz = scalar_size(et);
            if (n > g->size / sz) return need(g, g->size + 1, key);
            if ((st = need(g, n * sz, key))) return st;
            g->off += n * sz;
            return HSD_OK;
        }
        for (uint64_t i = 0; i < n; i++)
            if ((st = skip_value(g, et, key, depth + 1))) return st;
        return HSD_OK;
    }
    size_t sz = scalar_size(type);
    if (!sz) return hsd_error(HSD_ERR_PARSE, "%s: metadata '%s' has unknown type %u at byte %zu",
                              g->path, key, type, g->off - 4);
    hsd_status st = need(g, sz, key);
    if (st) return st;
    g->off += sz;
    return HSD_OK;
}

/* An untrusted metadata number as int32: -1 unless integral and in range. */
static int32_t gguf_i32(double v) {
    return v >= 0 && v <= (double)INT32_MAX && v == (double)(int64_t)v ? (int32_t)v : -1;
}

static bool num_get(const gguf_file *g, const char *suffix, double *v) {
    char key[96];
    snprintf(key, sizeof key, "%s.%s", g->arch, suffix);
    for (int i = 0; i < g->n_num; i++)
        if (!strcmp(g->num[i].key, key)) {
            *v = g->num[i].v;
            return true;
        }
    return false;
}

static hsd_status gguf_parse(gguf_file *g) {
    hsd_status s;
    char magic[4];
    if ((s = rd(g, magic, 4, "magic"))) return s;
    if (memcmp(magic, "GGUF", 4))
        return hsd_error(HSD_ERR_PARSE, "%s: bad magic %02x %02x %02x %02x (expected \"GGUF\")", g->path,
                         (uint8_t)magic[0], (uint8_t)magic[1], (uint8_t)magic[2], (uint8_t)magic[3]);
    uint32_t version;
    uint64_t n_kv;
    if ((s = rd(g, &version, 4, "version")) || (s = rd(g, &g->n_tensors, 8, "tensor count")) ||
        (s = rd(g, &n_kv, 8, "metadata count")))
        return s;
    if (version < 2 || version > 3)
        return hsd_error(HSD_ERR_UNSUPPORTED, "%s: GGUF version %u (supported: 2, 3)", g->path, version);
    if (g->n_tensors > g->size / 24 || n_kv > g->size / 12)
        return hsd_error(HSD_ERR_PARSE, "%s: truncated GGUF or corrupt header: it claims %llu tensors and %llu metadata entries, more than %zu bytes can hold",
                         g->path, (unsigned long long)g->n_tensors, (unsigned long long)n_kv, g->size);
    g->alignment = 32;
    for (uint64_t i = 0; i < n_kv; i++) {
        const char *k;
        uint64_t klen;
        uint32_t type;
        if ((s = rd_str(g, &k, &klen, "metadata key")) || (s = rd(g, &type, 4, "metadata type"))) return s;
        char key[96];
        snprintf(key, sizeof key, "%.*s", (int)(klen < 95 ? klen : 95), k);
        if (type == GGUF_STRING && !strcmp(key, "general.architecture")) {
            const char *v;
            uint64_t vlen;
            if ((s = rd_str(g, &v, &vlen, key))) return s;
            snprintf(g->arch, sizeof g->arch, "%.*s", (int)(vlen < 31 ? vlen : 31), v);
            continue;
        }
        if (type < GGUF_NTYPES && scalar_size(type) && type != GGUF_ARRAY) {
            if ((s = need(g, scalar_size(type), key))) return s;
            double v = scalar_value(type, g->p + g->off);
            g->off += scalar_size(type);
            if (!strcmp(key, "general.alignment")) {
                if (v < 1 || v > 65536 || ((uint32_t)v & ((uint32_t)v - 1)))
                    return hsd_error(HSD_ERR_PARSE, "%s: general.alignment %g is not a power of two", g->path, v);
                g->alignment = (uint32_t)v;
            } else if (g->n_num < GGUF_MAX_NUM) {
                snprintf(g->num[g->n_num].key, sizeof g->num[0].key, "%s", key);
                g->num[g->n_num++].v = v;
            }
            continue;
        }
        if ((s = skip_value(g, type, key, 0))) return s;
    }
    g->tensors = calloc(g->n_tensors ? g->n_tensors : 1, sizeof *g->tensors);
    if (!g->tensors) return hsd_error(HSD_ERR_NOMEM, "%s: out of memory", g->path);
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        gguf_tensor *t = &g->tensors[i];
        const char *name;
        uint64_t nlen;
        if ((s = rd_str(g, &name, &nlen, "tensor name"))) return s;
        t->name = malloc(nlen + 1);
        if (!t->name) return hsd_error(HSD_ERR_NOMEM, "%s: out of memory", g->path);
        memcpy(t->name, name, nlen);
        t->name[nlen] = 0;
        if ((s = rd(g, &t->n_dims, 4, t->name))) return s;
        if (t->n_dims < 1 || t->n_dims > 4)
            return hsd_error(HSD_ERR_PARSE, "%s: tensor '%s' has %u dimensions", g->path, t->name, t->n_dims);
        for (uint32_t d = 0; d < t->n_dims; d++)
            if ((s = rd(g, &t->ne[d], 8, t->name))) return s;
        if ((s = rd(g, &t->type, 4, t->name)) || (s = rd(g, &t->offset, 8, t->name))) return s;
    }
    g->data_start = (g->off + g->alignment - 1) / g->alignment * g->alignment;
    return HSD_OK;
}

const char *hsd_gguf_tensor_name(hsd_tkind kind, int32_t layer, char *buf, size_t cap) {
    static const char *glob[] = {"token_embd.weight", "output_norm.weight", "output.weight", "rope_freqs.weight"};
    static const char *per[] = {"attn_norm.weight", "attn_q.weight", "attn_k.weight", "attn_v.weight",
                                "attn_output.weight", "attn_q.bias", "attn_k.bias", "attn_v.bias",
                                "ffn_norm.weight", "ffn_gate.weight", "ffn_down.weight", "ffn_up.weight"};
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
        hsd_dtype dt;
        switch (t->type) {
        case GGML_F32: dt = HSD_DT_F32; break;
        case GGML_F16: dt = HSD_DT_F16; break;
        case GGML_BF16: dt = HSD_DT_BF16; break;
        case GGML_Q8_0: dt = HSD_DT_Q8_0; break;
        default:
            return hsd_error(HSD_ERR_UNSUPPORTED, "%s: tensor '%s' has type %s (%u); supported: F32, F16, BF16, Q8_0",
                             g->path, t->name, ggml_type_name(t->type), t->type);
        }
        if (dt == HSD_DT_Q8_0 && t->ne[0] % HSD_Q8_0_BLOCK)
            return hsd_error(HSD_ERR_PARSE, "%s: tensor '%s': Q8_0 row of %llu elements", g->path, t->name,
                             (unsigned long long)t->ne[0]);
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
    if (g->tensors)
        for (uint64_t i = 0; i < g->n_tensors; i++) free(g->tensors[i].name);
    free(g->tensors);
}

hsd_status hsd_gguf_load(const char *path, const hsd_model_params *params, hsd_transformer **out) {
    *out = NULL;
    hsd_file_map *m;
    hsd_status s = hsd_file_map_open(path, params ? params->use_mmap : true, &m);
    if (s != HSD_OK) return s;
    gguf_file g = {.path = path, .p = m->data, .size = m->size};
    hsd_tf_config c = {0};
    if ((s = gguf_parse(&g))) goto fail;
    if (strcmp(g.arch, "llama") && strcmp(g.arch, "qwen2")) {
        s = hsd_error(HSD_ERR_UNSUPPORTED, "%s: GGUF architecture '%s' (supported: llama, qwen2)", path,
                      g.arch[0] ? g.arch : "(none)");
        goto fail;
    }
    snprintf(c.arch, sizeof c.arch, "%.15s", g.arch);
    double v;
    static const char *required[] = {"embedding_length", "feed_forward_length", "block_count", "attention.head_count"};
    for (int i = 0; i < 4; i++)
        if (!num_get(&g, required[i], &v)) {
            s = hsd_error(HSD_ERR_PARSE, "%s: missing metadata key '%s.%s'", path, g.arch, required[i]);
            goto fail;
        }
    /* metadata numbers are untrusted: out-of-range values become -1, which the shape
     * checks reject (a raw double-to-int cast of 4294967295 is UB; fuzz_model_gguf) */
    num_get(&g, "embedding_length", &v), c.dim = gguf_i32(v);
    num_get(&g, "feed_forward_length", &v), c.hidden_dim = gguf_i32(v);
    num_get(&g, "block_count", &v), c.n_layers = gguf_i32(v);
    num_get(&g, "attention.head_count", &v), c.n_heads = gguf_i32(v);
    c.n_kv_heads = num_get(&g, "attention.head_count_kv", &v) ? gguf_i32(v) : c.n_heads;
    c.head_dim = num_get(&g, "attention.key_length", &v) ? gguf_i32(v) : (c.n_heads > 0 ? c.dim / c.n_heads : 0);
    c.seq_len = num_get(&g, "context_length", &v) ? gguf_i32(v) : 2048;
    c.rope_theta = num_get(&g, "rope.freq_base", &v) ? (float)v : 10000.0f;
    c.norm_eps = num_get(&g, "attention.layer_norm_rms_epsilon", &v) ? (float)v : 1e-5f;
    /* llama.cpp permutes llama's q/k rows for interleaved rope; qwen2 keeps NeoX order */
    c.rope_interleaved = !strcmp(g.arch, "llama");
    c.qkv_bias = !strcmp(g.arch, "qwen2");
    if (num_get(&g, "vocab_size", &v)) {
        c.vocab_size = gguf_i32(v);
    } else {
        hsd_tensor_ref r;
        bool found;
        if ((s = gguf_lookup(&g, HSD_T_TOK_EMB, -1, &r, &found))) goto fail;
        if (!found) {
            s = hsd_error(HSD_ERR_PARSE, "%s: missing tensor 'token_embd.weight'", path);
            goto fail;
        }
        c.vocab_size = r.shape[0] > 0 && r.shape[0] < INT32_MAX ? (int32_t)r.shape[0] : -1;
    }
    s = hsd_tf_create(&c, gguf_lookup, &g, path, params, hsd_file_map_close, m, out);
    gguf_free(&g);
    if (s != HSD_OK) hsd_file_map_close(m);
    return s;
fail:
    gguf_free(&g);
    hsd_file_map_close(m);
    return s;
}
