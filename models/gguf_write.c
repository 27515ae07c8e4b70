/* hsd synth's GGUF writer: files llama.cpp loads unmodified. Tensors get llama.cpp's names
 * and layout (q/k rows of "llama" permuted for interleaved rope, vectors in F32, Llama 3 rope
 * scaling as rope_freqs), the metadata llama.cpp's loader requires (general.architecture,
 * general.file_type, the hparams under the architecture's prefix) and a tokenizer: the one
 * given, or a placeholder vocabulary of the model's size. */
#include "hsd_tools.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/error.h"
#include "lib/base/gguf.h"
#include "lib/base/gguf_writer.h"
#include "models/arch.h"
#include "models/gguf_vocab.h"
#include "models/loaders.h"
#include "models/synth.h"

/* llama.cpp's llama_ftype of a file whose matrices all have one type (Q4_K: the Q4_K_M mix) */
enum { FTYPE_F32 = 0, FTYPE_F16 = 1, FTYPE_Q8_0 = 7, FTYPE_Q4_K_M = 15, FTYPE_BF16 = 32 };

static uint32_t ggml_type(hsd_dtype t) {
    return t == HSD_DT_F32    ? HSD_GGML_F32
           : t == HSD_DT_F16  ? HSD_GGML_F16
           : t == HSD_DT_BF16 ? HSD_GGML_BF16
           : t == HSD_DT_Q4_K ? HSD_GGML_Q4_K
           : t == HSD_DT_Q6_K ? HSD_GGML_Q6_K
           : t == HSD_DT_Q5_0 ? HSD_GGML_Q5_0 /* Q4_K_M's rows too narrow for Q4_K */
                              : HSD_GGML_Q8_0;
}
static uint32_t file_type(hsd_dtype t) {
    return t == HSD_DT_F32    ? FTYPE_F32
           : t == HSD_DT_F16  ? FTYPE_F16
           : t == HSD_DT_BF16 ? FTYPE_BF16
           : t == HSD_DT_Q4_K ? FTYPE_Q4_K_M
                              : FTYPE_Q8_0;
}

static void kv_u32(hsd_gguf_writer *w, const char *arch, const char *k, uint32_t v) {
    char key[96];
    snprintf(key, sizeof key, "%s.%s", arch, k);
    hsd_gguf_w_u32(w, key, v);
}
static void kv_f32(hsd_gguf_writer *w, const char *arch, const char *k, float v) {
    char key[96];
    snprintf(key, sizeof key, "%s.%s", arch, k);
    hsd_gguf_w_f32(w, key, v);
}

/* Llama 3 scaling as llama.cpp stores it: per rope pair, the factor the frequency is divided by. */
static float *rope_freq_factors(const hsd_tf_config *c) {
    int32_t half = c->head_dim / 2;
    float *f = malloc((size_t)half * sizeof *f);
    if (!f) return NULL;
    for (int32_t i = 0; i < half; i++) {
        double inv = 1.0 / pow(c->rope_theta, 2.0 * i / c->head_dim), wl = 2.0 * M_PI / inv;
        double orig = c->rope_orig_ctx, lo = c->rope_low_freq_factor, hi = c->rope_high_freq_factor;
        double scaled = inv;
        if (wl > orig / lo)
            scaled = inv / c->rope_scale_factor;
        else if (wl >= orig / hi) {
            double sm = (orig / wl - lo) / (hi - lo);
            scaled = (1 - sm) * inv / c->rope_scale_factor + sm * inv;
        }
        f[i] = (float)(inv / scaled);
    }
    return f;
}

static bool is_norm(hsd_tkind k) {
    return k == HSD_T_OUT_NORM || k == HSD_T_ATTN_NORM || k == HSD_T_FFN_NORM ||
           k == HSD_T_Q_NORM || k == HSD_T_K_NORM || k == HSD_T_ATTN_POST_NORM ||
           k == HSD_T_FFN_POST_NORM;
}

/* HF row (h, s, i) -> GGUF row (h, i, s): rope pairs (i, i + half) become (2i, 2i + 1). */
static void *permute_rows(const hsd_synth_tensor *t, int32_t heads, int32_t hd) {
    size_t rb = hsd_dtype_row_bytes(t->type, t->shape[1]);
    uint8_t *p = malloc(t->nbytes);
    if (!p) return NULL;
    for (int32_t h = 0; h < heads; h++)
        for (int32_t s = 0; s < 2; s++)
            for (int32_t i = 0; i < hd / 2; i++)
                memcpy(p + ((size_t)h * hd + 2 * i + s) * rb,
                       (const uint8_t *)t->data + ((size_t)h * hd + s * (hd / 2) + i) * rb, rb);
    return p;
}

hsd_status hsd_synth_write_gguf_vocab(const hsd_synth_model *m, const char *path,
                                      const char *tokenizer, unsigned flags) {
    if (!m || !path)
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_synth_write_gguf_vocab: %s is NULL",
                         !m ? "model" : "path");
    const hsd_tf_config *c = &m->cfg;
    const char *arch = hsd_arch_gguf_name(c->arch);
    bool permute = !strcmp(arch, "llama");
    hsd_gguf_vocab voc;
    hsd_status s = tokenizer ? hsd_gguf_vocab_from_file(tokenizer, c->vocab_size, flags, &voc)
                             : hsd_gguf_vocab_placeholder(c->vocab_size, &voc);
    if (s) return s;
    void **owned = calloc((size_t)m->n + 1, sizeof *owned);
    if (!owned) {
        hsd_gguf_vocab_free(&voc);
        return hsd_error(HSD_ERR_NOMEM, "%s: out of memory", path);
    }
    hsd_gguf_writer w;
    hsd_gguf_w_init(&w, 32);
    hsd_gguf_w_str(&w, "general.architecture", arch);
    hsd_gguf_w_str(&w, "general.name", m->shape_name);
    hsd_dtype ft = m->n ? m->t[0].type : HSD_DT_F32;
    for (int32_t i = 0; i < m->n; i++) /* the Q4_K_M mix: Q4_K anywhere (its embedding may be Q6_K) */
        if (m->t[i].type == HSD_DT_Q4_K) ft = HSD_DT_Q4_K;
    hsd_gguf_w_u32(&w, "general.file_type", file_type(ft));
    kv_u32(&w, arch, "context_length", (uint32_t)c->seq_len);
    kv_u32(&w, arch, "embedding_length", (uint32_t)c->dim);
    kv_u32(&w, arch, "feed_forward_length", (uint32_t)c->hidden_dim);
    kv_u32(&w, arch, "block_count", (uint32_t)c->n_layers);
    kv_u32(&w, arch, "attention.head_count", (uint32_t)c->n_heads);
    kv_u32(&w, arch, "attention.head_count_kv", (uint32_t)c->n_kv_heads);
    kv_u32(&w, arch, "attention.key_length", (uint32_t)c->head_dim);
    kv_u32(&w, arch, "attention.value_length", (uint32_t)c->head_dim);
    kv_u32(&w, arch, "rope.dimension_count", (uint32_t)c->head_dim);
    kv_u32(&w, arch, "vocab_size", (uint32_t)c->vocab_size);
    kv_f32(&w, arch, "rope.freq_base", c->rope_theta);
    kv_f32(&w, arch, "attention.layer_norm_rms_epsilon", c->norm_eps);
    if (c->swa_window > 0) {
        kv_u32(&w, arch, "attention.sliding_window", (uint32_t)c->swa_window);
        if (c->swa_layers_set) { /* one flag per layer */
            int32_t *flags = malloc((size_t)c->n_layers * sizeof *flags);
            if (!flags) goto nomem;
            for (int32_t l = 0; l < c->n_layers; l++) flags[l] = hsd_arch_layer_slides(c, l);
            char key[96];
            snprintf(key, sizeof key, "%s.attention.sliding_window_pattern", arch);
            hsd_gguf_w_arr_i32(&w, key, flags, (size_t)c->n_layers);
            free(flags);
        } else {
            kv_u32(&w, arch, "attention.sliding_window_pattern", (uint32_t)c->swa_pattern);
        }
    }
    if (c->rope_linear > 0) {
        char key[96];
        snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
        hsd_gguf_w_str(&w, key, "linear");
        kv_f32(&w, arch, "rope.scaling.factor", c->rope_linear);
    }
    if (c->rope_theta_swa > 0) kv_f32(&w, arch, "rope.freq_base_swa", c->rope_theta_swa);
    if (c->final_softcap > 0) kv_f32(&w, arch, "final_logit_softcapping", c->final_softcap);
    if (c->attn_softcap > 0) kv_f32(&w, arch, "attn_logit_softcapping", c->attn_softcap);
    hsd_gguf_vocab_put(&voc, &w);

    for (int32_t i = 0; i < m->n; i++) {
        const hsd_synth_tensor *t = &m->t[i];
        char buf[160];
        const char *name = hsd_gguf_tensor_name(t->kind, t->layer, buf, sizeof buf);
        uint64_t ne[2] = {(uint64_t)(t->n_dims == 2 ? t->shape[1] : t->shape[0]),
                          (uint64_t)t->shape[0]};
        const void *data = t->data;
        size_t nbytes = t->nbytes;
        uint32_t type = ggml_type(t->type);
        bool norm = is_norm(t->kind);
        if (t->n_dims == 1 && (t->type != HSD_DT_F32 || (norm && c->norm_unit_offset))) {
            /* vectors as F32, like llama.cpp; Gemma's norms as 1 + w, like its converter */
            float *v = owned[i] = malloc(ne[0] * sizeof *v);
            if (!v) goto nomem;
            hsd_mat mm = {t->type, 1, (int32_t)ne[0], t->data, NULL};
            hsd_mat_rows_f32(&mm, 0, 1, v);
            for (uint64_t j = 0; norm && c->norm_unit_offset && j < ne[0]; j++) v[j] += 1.0f;
            data = v, nbytes = ne[0] * sizeof *v, type = HSD_GGML_F32;
        }
        if (permute && (t->kind == HSD_T_WQ || t->kind == HSD_T_WK)) {
            data = owned[i] =
                permute_rows(t, t->kind == HSD_T_WQ ? c->n_heads : c->n_kv_heads, c->head_dim);
            if (!data) goto nomem;
        }
        hsd_gguf_w_tensor(&w, name, (uint32_t)t->n_dims, ne, type, data, nbytes);
    }
    if (c->rope_scale_factor > 0) {
        float *f = owned[m->n] = rope_freq_factors(c);
        if (!f) goto nomem;
        uint64_t ne = (uint64_t)c->head_dim / 2;
        hsd_gguf_w_tensor(&w, "rope_freqs.weight", 1, &ne, HSD_GGML_F32, f, ne * sizeof *f);
    }
    s = hsd_gguf_w_write(&w, path);
    goto done;
nomem:
    s = hsd_error(HSD_ERR_NOMEM, "%s: out of memory", path);
done:
    for (int32_t i = 0; i <= m->n; i++) free(owned[i]);
    free(owned);
    hsd_gguf_w_free(&w);
    hsd_gguf_vocab_free(&voc);
    return s;
}

hsd_status hsd_synth_write_gguf_tok(const hsd_synth_model *m, const char *path,
                                    const char *tokenizer) {
    return hsd_synth_write_gguf_vocab(m, path, tokenizer, 0);
}

hsd_status hsd_synth_write_gguf(const hsd_synth_model *m, const char *path) {
    return hsd_synth_write_gguf_tok(m, path, NULL);
}
