/* HuggingFace checkpoints: config.json (the architectures of models/arch.c) plus
 * model.safetensors or the shards of model.safetensors.index.json, read and written through
 * lib/base/safetensors_io.c. */
#include "hsd_tools.h"
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/base/error.h"
#include "lib/base/safetensors_io.h"
#include "models/arch.h"
#include "models/loaders.h"
#include "models/synth.h"

#define ST_MAX_SHARDS 64

typedef struct st_shard {
    char path[PATH_MAX];
    hsd_file_map *map;
    hsd_st_file st;
} st_shard;

typedef struct st_model {
    hsd_tf_config cfg;
    st_shard shards[ST_MAX_SHARDS];
    int n_shards;
    char name_buf[128];
} st_model;

static void st_release(void *p) {
    st_model *m = p;
    if (!m) return;
    for (int i = 0; i < m->n_shards; i++) {
        hsd_st_close(&m->shards[i].st);
        hsd_file_map_close(m->shards[i].map);
    }
    free(m);
}

static hsd_status st_open_shard(st_model *m, const char *path, bool use_mmap) {
    if (m->n_shards == ST_MAX_SHARDS)
        return hsd_error(HSD_ERR_UNSUPPORTED, "%s: more than %d shards", path, ST_MAX_SHARDS);
    st_shard *sh = &m->shards[m->n_shards];
    snprintf(sh->path, sizeof sh->path, "%s", path);
    hsd_status s = hsd_file_map_open(path, use_mmap, &sh->map);
    if (s != HSD_OK) return s;
    m->n_shards++;
    return hsd_st_open(&sh->st, sh->path, sh->map->data, sh->map->size);
}

static hsd_status st_lookup(void *ctx, hsd_tkind kind, int32_t layer, hsd_tensor_ref *r, bool *found) {
    st_model *m = ctx;
    *found = false;
    const char *name = hsd_arch_hf_tensor_name(&m->cfg, kind, layer, m->name_buf, sizeof m->name_buf);
    if (!*name) return HSD_OK;
    for (int i = 0; i < m->n_shards; i++) {
        st_shard *sh = &m->shards[i];
        hsd_st_tensor t;
        hsd_status s = hsd_st_find(&sh->st, name, &t, found);
        if (s != HSD_OK || !*found) {
            if (s != HSD_OK) return s;
            continue;
        }
        if (((uintptr_t)t.data - (uintptr_t)sh->map->data) % t.elem_size)
            return hsd_error(HSD_ERR_UNSUPPORTED, "%s: tensor '%s' data is not %zu-byte aligned", sh->path, name,
                             t.elem_size);
        r->name = t.name;
        r->type = t.dtype == HSD_ST_F32 ? HSD_DT_F32 : t.dtype == HSD_ST_F16 ? HSD_DT_F16 : HSD_DT_BF16;
        r->n_dims = t.n_dims;
        for (int32_t d = 0; d < t.n_dims; d++) r->shape[d] = t.shape[d];
        r->data = t.data;
        return HSD_OK;
    }
    return HSD_OK;
}

static hsd_status cfg_int(json_t *cfg, const char *path, const char *key, bool required, int32_t def, int32_t *out) {
    json_t *v = json_object_get(cfg, key);
    if (!v || json_is_null(v)) {
        if (required) return hsd_error(HSD_ERR_PARSE, "%s: missing \"%s\"", path, key);
        *out = def;
        return HSD_OK;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT32_MAX)
        return hsd_error(HSD_ERR_PARSE, "%s: \"%s\" is not a non-negative integer", path, key);
    *out = (int32_t)json_integer_value(v);
    return HSD_OK;
}

static float cfg_num(json_t *cfg, const char *key, float def) {
    json_t *v = json_object_get(cfg, key);
    return json_is_number(v) ? (float)json_number_value(v) : def;
}

static hsd_status parse_config(const char *path, hsd_tf_config *c, bool *tied) {
    json_error_t err;
    json_t *cfg = json_load_file(path, 0, &err);
    if (!cfg) {
        struct stat st;
        if (stat(path, &st) != 0) return hsd_error(HSD_ERR_IO, "%s: missing (needed next to the safetensors)", path);
        return hsd_error(HSD_ERR_PARSE, "%s: line %d: %s", path, err.line, err.text);
    }
    hsd_status s = HSD_OK;
    memset(c, 0, sizeof *c);
    const char *cls = json_string_value(json_array_get(json_object_get(cfg, "architectures"), 0));
    const char *mt = json_string_value(json_object_get(cfg, "model_type"));
    const char *arch = hsd_arch_from_hf(mt, cls);
    if (!arch) {
        s = hsd_error(HSD_ERR_UNSUPPORTED, "%s: unknown architecture '%s' (supported: %s)", path,
                      cls ? cls : mt ? mt : "(none)", hsd_arch_list());
        goto done;
    }
    if (json_is_object(json_object_get(cfg, "text_config"))) { /* Gemma 3 VLM: the text part */
        json_t *tc = json_incref(json_object_get(cfg, "text_config"));
        json_decref(cfg);
        cfg = tc;
    }
    if (json_is_true(json_object_get(cfg, "attention_bias")) || json_is_true(json_object_get(cfg, "mlp_bias"))) {
        s = hsd_error(HSD_ERR_UNSUPPORTED, "%s: attention_bias/mlp_bias in a %s model", path, arch);
        goto done;
    }
    if ((s = cfg_int(cfg, path, "hidden_size", true, 0, &c->dim)) ||
        (s = cfg_int(cfg, path, "intermediate_size", true, 0, &c->hidden_dim)) ||
        (s = cfg_int(cfg, path, "num_hidden_layers", true, 0, &c->n_layers)) ||
        (s = cfg_int(cfg, path, "num_attention_heads", true, 0, &c->n_heads)) ||
        (s = cfg_int(cfg, path, "vocab_size", true, 0, &c->vocab_size)) ||
        (s = cfg_int(cfg, path, "num_key_value_heads", false, c->n_heads, &c->n_kv_heads)) ||
        (s = cfg_int(cfg, path, "head_dim", false, c->n_heads ? c->dim / c->n_heads : 0, &c->head_dim)) ||
        (s = cfg_int(cfg, path, "max_position_embeddings", false, 2048, &c->seq_len)))
        goto done;
    c->rope_theta = cfg_num(cfg, "rope_theta", 10000.0f);
    c->norm_eps = cfg_num(cfg, "rms_norm_eps", 1e-6f);
    json_t *tie = json_object_get(cfg, "tie_word_embeddings");
    *tied = json_is_true(tie) || (!tie && !strcmp(arch, "gemma3")); /* Gemma's default */
    json_t *sw = json_object_get(cfg, "sliding_window");
    if (json_is_integer(sw) && json_integer_value(sw) > 0 && json_integer_value(sw) < INT32_MAX &&
        (!strcmp(arch, "gemma3") || !strcmp(arch, "mistral")))
        c->swa_window = (int32_t)json_integer_value(sw);
    if (!strcmp(arch, "gemma3")) {
        c->swa_pattern = (int32_t)cfg_num(cfg, "sliding_window_pattern", 6);
        c->rope_theta_swa = cfg_num(cfg, "rope_local_base_freq", 10000.0f);
        c->final_softcap = cfg_num(cfg, "final_logit_softcapping", 0);
        c->attn_softcap = cfg_num(cfg, "attn_logit_softcapping", 0);
        float qs = cfg_num(cfg, "query_pre_attn_scalar", 0);
        if (qs > 0) c->attn_scale = 1.0f / sqrtf(qs);
    }
    if ((s = hsd_arch_init(c, arch, false, path))) goto done;
    if (!strcmp(arch, "mistral")) c->swa_pattern = 0; /* every layer slides */
    json_t *rs = json_object_get(cfg, "rope_scaling");
    if (json_is_object(rs)) {
        const char *type = json_string_value(json_object_get(rs, "rope_type"));
        if (!type) type = json_string_value(json_object_get(rs, "type"));
        if (type && !strcmp(type, "llama3")) {
            c->rope_scale_factor = cfg_num(rs, "factor", 8.0f);
            c->rope_low_freq_factor = cfg_num(rs, "low_freq_factor", 1.0f);
            c->rope_high_freq_factor = cfg_num(rs, "high_freq_factor", 4.0f);
            c->rope_orig_ctx = (int32_t)cfg_num(rs, "original_max_position_embeddings", 8192);
        } else if (type && !strcmp(type, "linear")) {
            c->rope_linear = cfg_num(rs, "factor", 1.0f);
            if (c->rope_linear == 1.0f) c->rope_linear = 0;
        } else if (!type || strcmp(type, "default")) {
            s = hsd_error(HSD_ERR_UNSUPPORTED, "%s: rope_scaling type '%s' (supported: llama3, linear, default)", path,
                          type ? type : "(none)");
        }
    }
done:
    json_decref(cfg);
    return s;
}

hsd_status hsd_safetensors_load(const char *path, const hsd_model_params *params, hsd_transformer **out) {
    *out = NULL;
    char dir[PATH_MAX], cfg_path[PATH_MAX + 16], file[PATH_MAX + 64];
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(dir, sizeof dir, "%s", path);
    } else {
        snprintf(dir, sizeof dir, "%s", path);
        char *slash = strrchr(dir, '/');
        if (slash) *slash = 0; else snprintf(dir, sizeof dir, ".");
    }
    snprintf(cfg_path, sizeof cfg_path, "%s/config.json", dir);
    hsd_tf_config c;
    bool tied = false;
    hsd_status s = parse_config(cfg_path, &c, &tied);
    if (s != HSD_OK) return s;
    bool use_mmap = params ? params->use_mmap : true;
    st_model *m = calloc(1, sizeof *m);
    if (!m) return hsd_error(HSD_ERR_NOMEM, "%s: out of memory", path);
    m->cfg = c;
    const char *src = path;
    if (!S_ISDIR(st.st_mode) && strstr(path, ".safetensors") && !strstr(path, ".index.json")) {
        s = st_open_shard(m, path, use_mmap);
    } else {
        snprintf(file, sizeof file, "%s/model.safetensors", dir);
        if (stat(file, &st) == 0) {
            s = st_open_shard(m, file, use_mmap);
            src = m->shards[0].path;
        } else {
            snprintf(file, sizeof file, "%s/model.safetensors.index.json", dir);
            json_error_t err;
            json_t *idx = json_load_file(file, 0, &err);
            json_t *wm = json_object_get(idx, "weight_map");
            if (!json_is_object(wm)) {
                s = idx ? hsd_error(HSD_ERR_PARSE, "%s: no \"weight_map\" object", file)
                        : hsd_error(HSD_ERR_IO, "%s: neither model.safetensors nor model.safetensors.index.json", dir);
            } else {
                const char *k;
                json_t *v;
                json_object_foreach(wm, k, v) {
                    const char *shard = json_string_value(v);
                    char sp[PATH_MAX + 300];
                    if (!shard) continue;
                    snprintf(sp, sizeof sp, "%s/%s", dir, shard);
                    bool seen = false;
                    for (int i = 0; i < m->n_shards; i++) seen |= !strcmp(m->shards[i].path, sp);
                    if (!seen && (s = st_open_shard(m, sp, use_mmap)) != HSD_OK) break;
                }
            }
            json_decref(idx);
        }
    }
    if (s == HSD_OK) {
        if (tied) {
            /* honour tie_word_embeddings even if an lm_head copy is present */
            for (int i = 0; i < m->n_shards; i++) json_object_del(m->shards[i].st.hdr, "lm_head.weight");
        }
        s = hsd_tf_create(&c, st_lookup, m, src, params, st_release, m, out);
    }
    if (s != HSD_OK) st_release(m);
    return s;
}

/* ---- writer ------------------------------------------------------------------------ */

hsd_status hsd_synth_write_safetensors(const hsd_synth_model *m, const char *dir) {
    if (!m || !dir)
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_synth_write_safetensors: %s is NULL",
                         !m ? "model" : "dir");
    const hsd_tf_config *c = &m->cfg;
    char path[PATH_MAX];
    hsd_status s = HSD_OK;
    for (int32_t i = 0; i < m->n; i++)
        if (m->t[i].type == HSD_DT_Q8_0)
            return hsd_error(HSD_ERR_UNSUPPORTED, "%s: safetensors has no Q8_0 (tensor '%s'); use gguf", dir,
                             m->t[i].name);
    /* config.json */
    json_t *cfg = json_object();
    json_object_set_new(cfg, "architectures", json_pack("[s]", hsd_arch_hf_class(c->arch)));
    json_object_set_new(cfg, "model_type", json_string(hsd_arch_hf_model_type(c->arch)));
    if (c->swa_window > 0) {
        json_object_set_new(cfg, "sliding_window", json_integer(c->swa_window));
        json_object_set_new(cfg, "sliding_window_pattern", json_integer(c->swa_pattern));
    }
    if (c->rope_theta_swa > 0) json_object_set_new(cfg, "rope_local_base_freq", json_real(c->rope_theta_swa));
    if (c->final_softcap > 0) json_object_set_new(cfg, "final_logit_softcapping", json_real(c->final_softcap));
    if (c->attn_softcap > 0) json_object_set_new(cfg, "attn_logit_softcapping", json_real(c->attn_softcap));
    if (c->attn_scale > 0)
        json_object_set_new(cfg, "query_pre_attn_scalar", json_real(1.0 / ((double)c->attn_scale * c->attn_scale)));
    json_object_set_new(cfg, "hidden_size", json_integer(c->dim));
    json_object_set_new(cfg, "intermediate_size", json_integer(c->hidden_dim));
    json_object_set_new(cfg, "num_hidden_layers", json_integer(c->n_layers));
    json_object_set_new(cfg, "num_attention_heads", json_integer(c->n_heads));
    json_object_set_new(cfg, "num_key_value_heads", json_integer(c->n_kv_heads));
    json_object_set_new(cfg, "head_dim", json_integer(c->head_dim));
    json_object_set_new(cfg, "vocab_size", json_integer(c->vocab_size));
    json_object_set_new(cfg, "max_position_embeddings", json_integer(c->seq_len));
    json_object_set_new(cfg, "rms_norm_eps", json_real(c->norm_eps));
    json_object_set_new(cfg, "rope_theta", json_real(c->rope_theta));
    json_object_set_new(cfg, "tie_word_embeddings", json_boolean(m->tied));
    json_object_set_new(cfg, "hidden_act", json_string(c->act == HSD_ACT_GELU_TANH ? "gelu_pytorch_tanh" : "silu"));
    json_object_set_new(cfg, "torch_dtype", json_string(m->t[0].type == HSD_DT_F32 ? "float32"
                                                        : m->t[0].type == HSD_DT_F16 ? "float16" : "bfloat16"));
    if (c->rope_linear > 0)
        json_object_set_new(cfg, "rope_scaling", json_pack("{s:s, s:f}", "rope_type", "linear", "factor",
                                                           (double)c->rope_linear));
    if (c->rope_scale_factor > 0)
        json_object_set_new(cfg, "rope_scaling",
                            json_pack("{s:s, s:f, s:f, s:f, s:i}", "rope_type", "llama3", "factor",
                                      (double)c->rope_scale_factor, "low_freq_factor", (double)c->rope_low_freq_factor,
                                      "high_freq_factor", (double)c->rope_high_freq_factor,
                                      "original_max_position_embeddings", c->rope_orig_ctx));
    /* a failure leaves nothing behind: config.json, and the directory if this call made it */
    const bool made = mkdir(dir, 0755) == 0;
    char cfg_path[PATH_MAX];
    snprintf(cfg_path, sizeof cfg_path, "%s/config.json", dir);
    if (json_dump_file(cfg, cfg_path, JSON_INDENT(2)) != 0)
        s = hsd_error(HSD_ERR_IO, "%s: cannot write", cfg_path);
    json_decref(cfg);

    hsd_st_writer w;
    hsd_st_w_init(&w, "pt");
    for (int32_t i = 0; i < m->n; i++) {
        const hsd_synth_tensor *t = &m->t[i];
        hsd_st_w_tensor(&w, t->name, hsd_dtype_name(t->type), t->n_dims, t->shape, t->data, t->nbytes);
    }
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (s == HSD_OK) s = hsd_st_w_write(&w, path);
    hsd_st_w_free(&w);
    if (s != HSD_OK) {
        remove(cfg_path);
        if (made) rmdir(dir);
    }
    return s;
}
