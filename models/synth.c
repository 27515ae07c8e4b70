#include "hsd_tools.h"
#include "models/synth.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/error.h"
#include "lib/base/params.h"
#include "lib/base/rng.h"
#include "models/arch.h"

typedef struct synth_shape {
    const char *name, *arch;
    int32_t dim, hidden, layers, heads, kv_heads, head_dim, vocab, seq;
    float theta, eps;
    bool tied;
    float scale_factor, low, high; /* Llama 3 rope scaling */
    int32_t orig_ctx;
    int32_t swa_window, swa_pattern; /* Gemma 3 */
    float final_softcap;
    float rope_linear; /* Gemma 3 4B+ */
} synth_shape;

static const synth_shape shapes[] = {
    /* tiny test shapes: every width a multiple of 32 so Q8_0 applies; "tiny" has Llama 3
     * rope scaling so that rope_freqs round-trips through GGUF */
    {"tiny", "llama", 64, 192, 2, 4, 2, 16, 256, 128, 10000.0f, 1e-5f, false, 4.0f, 1.0f, 4.0f, 32, 0, 0, 0, 0},
    {"tiny-qwen2", "qwen2", 64, 192, 2, 4, 2, 16, 320, 128, 1e6f, 1e-6f, true, 0, 0, 0, 0, 0, 0, 0, 0},
    /* one tiny shape per architecture for the llama.cpp comparisons: widths multiples of 256
     * so that every k-quant applies; tiny-gemma3 slides over 8 positions on layer 0 and is
     * global on layer 1 (with linear rope scaling 2), and soft-caps its logits at 30 */
    {"tiny-llama", "llama", 256, 512, 2, 4, 2, 64, 512, 256, 500000.0f, 1e-5f, false, 8.0f, 1.0f, 4.0f, 64, 0, 0, 0, 0},
    {"tiny-mistral", "mistral", 256, 512, 2, 4, 2, 64, 512, 256, 1e6f, 1e-5f, false, 0, 0, 0, 0, 0, 0, 0, 0},
    {"tiny-smollm", "smollm", 256, 512, 2, 4, 2, 64, 512, 256, 100000.0f, 1e-5f, true, 0, 0, 0, 0, 0, 0, 0, 0},
    {"tiny-qwen3", "qwen3", 256, 512, 2, 4, 2, 64, 512, 256, 1e6f, 1e-6f, true, 0, 0, 0, 0, 0, 0, 0, 0},
    {"tiny-gemma3", "gemma3", 256, 512, 2, 4, 2, 64, 512, 256, 1e6f, 1e-6f, true, 0, 0, 0, 0, 8, 2, 30.0f, 2.0f},
    {"tiny-phi3", "phi3", 256, 512, 2, 4, 4, 64, 512, 256, 10000.0f, 1e-5f, false, 0, 0, 0, 0, 0, 0, 0, 0},
    /* a tiny model with room for any real tokenizer (gemma3's 262145 tokens the largest);
     * with a tokenizer, it gets exactly the tokenizer's rows as every tiny-* shape does */
    {"tiny-262k", "llama", 32, 64, 1, 2, 1, 16, 262208, 4096, 10000.0f, 1e-5f, true, 0, 0, 0, 0, 0, 0, 0, 0},
    /* big enough (256 x 256 projections) that f32 multi-token forwards take the sgemm path */
    {"small", "llama", 256, 768, 2, 4, 2, 64, 512, 256, 10000.0f, 1e-5f, false, 0, 0, 0, 0, 0, 0, 0, 0},
    {"llama-3.2-1b", "llama", 2048, 8192, 16, 32, 8, 64, 128256, 131072, 500000.0f, 1e-5f, true, 32.0f, 1.0f, 4.0f, 8192, 0, 0, 0, 0},
    {"qwen2.5-0.5b", "qwen2", 896, 4864, 24, 14, 2, 64, 151936, 32768, 1e6f, 1e-6f, true, 0, 0, 0, 0, 0, 0, 0, 0},
    {"qwen3-0.6b", "qwen3", 1024, 3072, 28, 16, 8, 128, 151936, 40960, 1e6f, 1e-6f, true, 0, 0, 0, 0, 0, 0, 0, 0},
    {"gemma-3-1b", "gemma3", 1152, 6912, 26, 4, 1, 256, 262144, 32768, 1e6f, 1e-6f, true, 0, 0, 0, 0, 512, 6, 0, 0},
    {"phi-3-mini", "phi3", 3072, 8192, 32, 32, 32, 96, 32064, 4096, 10000.0f, 1e-5f, false, 0, 0, 0, 0, 0, 0, 0, 0},
    {"mistral-7b", "mistral", 4096, 14336, 32, 32, 8, 128, 32768, 32768, 1e6f, 1e-5f, false, 0, 0, 0, 0, 0, 0, 0, 0},
    /* SmolLM-135M (HuggingFaceTB): the realistic-cost drafter shape of hsd inflate, ~9x fewer
     * weight bytes than llama-3.2-1b without their vocabularies */
    {"smollm-135m", "llama", 576, 1536, 30, 9, 3, 64, 49152, 2048, 10000.0f, 1e-5f, true, 0, 0, 0, 0, 0, 0, 0, 0},
    {"smollm2-135m", "smollm", 576, 1536, 30, 9, 3, 64, 49152, 8192, 100000.0f, 1e-5f, true, 0, 0, 0, 0, 0, 0, 0, 0},
    /* the LM-head cost of a 7B-class drafter over Qwen2's vocabulary: d=4096, V=152064 */
    {"drafter-head-152k", "llama", 4096, 14336, 1, 32, 8, 128, 152064, 32768, 1e6f, 1e-5f, false, 0, 0, 0, 0, 0, 0, 0, 0},
};

const char *hsd_synth_shape_list(void) {
    return "tiny, tiny-qwen2, tiny-llama, tiny-mistral, tiny-smollm, tiny-qwen3, tiny-gemma3, tiny-phi3, "
           "tiny-262k, small, llama-3.2-1b, qwen2.5-0.5b, qwen3-0.6b, gemma-3-1b, phi-3-mini, mistral-7b, "
           "smollm-135m, smollm2-135m, drafter-head-152k";
}

hsd_status hsd_synth_shape(const char *name, hsd_tf_config *cfg, bool *tied) {
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const synth_shape *s = &shapes[i];
        if (strcmp(name, s->name)) continue;
        memset(cfg, 0, sizeof *cfg);
        cfg->dim = s->dim, cfg->hidden_dim = s->hidden, cfg->n_layers = s->layers;
        cfg->n_heads = s->heads, cfg->n_kv_heads = s->kv_heads, cfg->head_dim = s->head_dim;
        cfg->vocab_size = s->vocab, cfg->seq_len = s->seq;
        cfg->rope_theta = s->theta, cfg->norm_eps = s->eps;
        cfg->rope_scale_factor = s->scale_factor, cfg->rope_low_freq_factor = s->low;
        cfg->rope_high_freq_factor = s->high, cfg->rope_orig_ctx = s->orig_ctx;
        cfg->swa_window = s->swa_window, cfg->swa_pattern = s->swa_pattern;
        cfg->final_softcap = s->final_softcap, cfg->rope_linear = s->rope_linear;
        *tied = s->tied;
        return hsd_arch_init(cfg, s->arch, false, "synth");
    }
    return hsd_error(HSD_ERR_INVALID_ARG, "synth: unknown shape '%s' (known: %s)", name,
                     hsd_synth_shape_list());
}

/* Fills a tensor with uniform values in center ± amp, stored in its type. Each tensor draws
 * from its own Philox stream, so the values do not depend on the order of generation. */
static void fill(hsd_synth_tensor *t, uint64_t seed, uint64_t stream, float center, float amp) {
    hsd_rng r;
    hsd_rng_init(&r, seed, stream);
    int64_t rows = t->n_dims == 2 ? t->shape[0] : 1, cols = t->n_dims == 2 ? t->shape[1] : t->shape[0];
    size_t rb = hsd_dtype_row_bytes(t->type, cols);
    float *tmp = malloc((size_t)cols * sizeof *tmp);
    if (!tmp) return;
    for (int64_t i = 0; i < rows; i++) {
        for (int64_t j = 0; j < cols; j++) tmp[j] = center + amp * (2.0f * hsd_rng_uniform(&r) - 1.0f);
        uint8_t *row = (uint8_t *)t->data + (size_t)i * rb;
        switch (t->type) {
        case HSD_DT_F32: memcpy(row, tmp, (size_t)cols * 4); break;
        case HSD_DT_F16:
            for (int64_t j = 0; j < cols; j++) ((uint16_t *)(void *)row)[j] = hsd_fp32_to_fp16(tmp[j]);
            break;
        case HSD_DT_BF16:
            for (int64_t j = 0; j < cols; j++) ((uint16_t *)(void *)row)[j] = hsd_fp32_to_bf16(tmp[j]);
            break;
        case HSD_DT_Q8_0: hsd_q8_0_quantize_row(tmp, cols, row); break;
        default: break; /* synth writes F32/F16/BF16/Q8_0; other types come from llama.cpp */
        }
    }
    free(tmp);
}

static hsd_status add(hsd_synth_model *m, hsd_tkind kind, int32_t layer, const char *name,
                      hsd_dtype type, int64_t rows, int64_t cols, uint64_t seed, float center, float amp) {
    hsd_synth_tensor *t = &m->t[m->n];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->kind = kind, t->layer = layer, t->type = type;
    t->n_dims = rows > 0 ? 2 : 1;
    t->shape[0] = rows > 0 ? rows : cols;
    t->shape[1] = rows > 0 ? cols : 0;
    t->nbytes = hsd_dtype_row_bytes(type, cols) * (size_t)(rows > 0 ? rows : 1);
    t->data = malloc(t->nbytes);
    if (!t->data) return hsd_error(HSD_ERR_NOMEM, "synth: out of memory for %s (%zu bytes)", name, t->nbytes);
    fill(t, seed, (uint64_t)m->n + 1, center, amp);
    m->n++;
    return HSD_OK;
}

hsd_status hsd_synth_create(const char *shape, hsd_dtype dtype, uint64_t seed, hsd_synth_model **out) {
    return hsd_synth_create_vocab(shape, dtype, seed, 0, out);
}

hsd_status hsd_synth_create_vocab(const char *shape, hsd_dtype dtype, uint64_t seed,
                                  int32_t tokenizer_ids, hsd_synth_model **out) {
    if (dtype != HSD_DT_F32 && dtype != HSD_DT_F16 && dtype != HSD_DT_BF16 && dtype != HSD_DT_Q8_0) {
        if (out) *out = NULL;
        return hsd_error(HSD_ERR_UNSUPPORTED,
                         "synth: random weights in %s are not made (f32, f16, bf16, q8_0; "
                         "q4_k_m through hsd inflate)", hsd_dtype_name(dtype));
    }
    if (!out) return hsd_error(HSD_ERR_INVALID_ARG, "synth: out is NULL");
    *out = NULL;
    if (!shape)
        return hsd_error(HSD_ERR_INVALID_ARG, "synth: no shape given (known: %s)",
                         hsd_synth_shape_list());
    hsd_synth_model *m = calloc(1, sizeof *m);
    if (!m) return hsd_error(HSD_ERR_NOMEM, "synth: out of memory");
    hsd_status s = hsd_synth_shape(shape, &m->cfg, &m->tied);
    if (s != HSD_OK) {
        free(m);
        return s;
    }
    snprintf(m->shape_name, sizeof m->shape_name, "%s", shape);
    /* rows for every id of the tokenizer: a tiny test shape takes exactly the tokenizer's
     * ids (a small model with a real vocabulary); a real shape keeps its padded rows (Qwen's
     * 151936) and grows only past them (gemma-3-1b's 262144 rows and gemma3's
     * <image_soft_token> at id 262144), so that every id the tokenizer can produce has a row */
    if (tokenizer_ids < 0) {
        free(m);
        return hsd_error(HSD_ERR_INVALID_ARG, "synth: tokenizer_ids %d is negative", tokenizer_ids);
    }
    if (tokenizer_ids > 0 && (!strncmp(shape, "tiny", 4) || tokenizer_ids > m->cfg.vocab_size))
        m->cfg.vocab_size = tokenizer_ids;
    const hsd_tf_config *c = &m->cfg;
    m->t = calloc((size_t)c->n_layers * HSD_T_COUNT + 4, sizeof *m->t);
    if (!m->t) {
        free(m);
        return hsd_error(HSD_ERR_NOMEM, "synth: out of memory");
    }
    /* vectors share the matrices' 16-bit type (as HF checkpoints do) so that every format
     * stores them exactly; Q8_0 is for matrices only */
    hsd_dtype vt = dtype == HSD_DT_Q8_0 ? HSD_DT_F32 : dtype;
    int64_t d = c->dim, H = c->hidden_dim, q = (int64_t)c->n_heads * c->head_dim,
            kv = (int64_t)c->n_kv_heads * c->head_dim, hd = c->head_dim;
    float a_d = sqrtf(3.0f / (float)d), a_q = sqrtf(3.0f / (float)q), a_h = sqrtf(3.0f / (float)H);
    /* norm weights near 1 as the layer uses them (Gemma's HF convention stores w for 1 + w) */
    float n1 = c->norm_unit_offset ? 0.0f : 1.0f;
    char name[96];
    if ((s = add(m, HSD_T_TOK_EMB, -1, "model.embed_tokens.weight", dtype, c->vocab_size, d, seed, 0, 1.0f)))
        goto fail;
    for (int32_t l = 0; l < c->n_layers; l++) {
#define ADD(kind, type, rows, cols, center, amp)                                                 \
    do {                                                                                       \
        hsd_arch_hf_tensor_name(c, kind, l, name, sizeof name);                                \
        if ((s = add(m, kind, l, name, type, rows, cols, seed, center, amp))) goto fail;       \
    } while (0);
        ADD(HSD_T_ATTN_NORM, vt, 0, d, n1, 0.2f)
        if (c->fused_qkv) {
            ADD(HSD_T_WQKV, dtype, q + 2 * kv, d, 0, a_d)
        } else {
            ADD(HSD_T_WQ, dtype, q, d, 0, a_d)
            ADD(HSD_T_WK, dtype, kv, d, 0, a_d)
            ADD(HSD_T_WV, dtype, kv, d, 0, a_d)
        }
        if (c->qkv_bias) {
            ADD(HSD_T_BQ, vt, 0, q, 0, 0.5f)
            ADD(HSD_T_BK, vt, 0, kv, 0, 0.5f)
            ADD(HSD_T_BV, vt, 0, kv, 0, 0.5f)
        }
        if (c->qk_norm) {
            ADD(HSD_T_Q_NORM, vt, 0, hd, n1, 0.2f)
            ADD(HSD_T_K_NORM, vt, 0, hd, n1, 0.2f)
        }
        ADD(HSD_T_WO, dtype, d, q, 0, a_q)
        if (c->post_norms) ADD(HSD_T_ATTN_POST_NORM, vt, 0, d, n1, 0.2f)
        ADD(HSD_T_FFN_NORM, vt, 0, d, n1, 0.2f)
        if (c->fused_gate_up) {
            ADD(HSD_T_W_GATE_UP, dtype, 2 * H, d, 0, a_d)
        } else {
            ADD(HSD_T_W_GATE, dtype, H, d, 0, a_d)
            ADD(HSD_T_W_UP, dtype, H, d, 0, a_d)
        }
        ADD(HSD_T_W_DOWN, dtype, d, H, 0, a_h)
        if (c->post_norms) ADD(HSD_T_FFN_POST_NORM, vt, 0, d, n1, 0.2f)
#undef ADD
    }
    if ((s = add(m, HSD_T_OUT_NORM, -1, "model.norm.weight", vt, 0, d, seed, n1, 0.2f))) goto fail;
    if (!m->tied && (s = add(m, HSD_T_CLS, -1, "lm_head.weight", dtype, c->vocab_size, d, seed, 0, a_d)))
        goto fail;
    *out = m;
    return HSD_OK;
fail:
    hsd_synth_free(m);
    return s;
}

void hsd_synth_free(hsd_synth_model *m) {
    if (!m) return;
    for (int32_t i = 0; i < m->n; i++) free(m->t[i].data);
    free(m->t);
    free(m);
}

static hsd_status synth_lookup(void *ctx, hsd_tkind kind, int32_t layer, hsd_tensor_ref *r, bool *found) {
    const hsd_synth_model *m = ctx;
    *found = false;
    for (int32_t i = 0; i < m->n; i++) {
        const hsd_synth_tensor *t = &m->t[i];
        if (t->kind != kind || t->layer != layer) continue;
        r->name = t->name, r->type = t->type, r->n_dims = t->n_dims;
        r->shape[0] = t->shape[0], r->shape[1] = t->shape[1];
        r->data = t->data;
        *found = true;
        break;
    }
    return HSD_OK;
}

hsd_status hsd_synth_to_transformer(const hsd_synth_model *m, const hsd_model_params *p, hsd_transformer **out) {
    char src[64];
    snprintf(src, sizeof src, "synth:%s", m->shape_name);
    return hsd_tf_create(&m->cfg, synth_lookup, (void *)m, src, p, NULL, NULL, out);
}

/* --- public API (include/hsd_tools.h) ---------------------------------------------- */

hsd_status hsd_synth_ftype(hsd_ftype type, hsd_dtype *out) {
    /* indexed by hsd_ftype: AUTO writes F32 */
    static const hsd_dtype types[] = {HSD_DT_F32, HSD_DT_F32,  HSD_DT_F16,
                                      HSD_DT_BF16, HSD_DT_Q8_0, HSD_DT_Q4_K};
    if ((unsigned)type >= sizeof types / sizeof *types)
        return hsd_error(HSD_ERR_INVALID_ARG, "weight type %d outside hsd_ftype", (int)type);
    *out = types[type];
    return HSD_OK;
}

hsd_synth_params hsd_synth_default_params(void) {
    return (hsd_synth_params){.size = sizeof(hsd_synth_params), .shape = NULL, .type = HSD_FTYPE_F32, .seed = 1, .tokenizer_ids = 0};
}

hsd_status hsd_synth_init(const hsd_synth_params *params, hsd_synth_model **out) {
    if (!out) return hsd_error(HSD_ERR_INVALID_ARG, "hsd_synth_init: out is NULL");
    *out = NULL;
    if (!params) return hsd_error(HSD_ERR_INVALID_ARG, "hsd_synth_init: params is NULL");
    hsd_synth_params params_own = hsd_synth_default_params();
    hsd_status params_st = hsd_params_read(&params_own, sizeof params_own, params, "hsd_synth_init", "params", "hsd_synth_default_params()");
    if (params_st) return params_st;
    params = &params_own;
    hsd_dtype dt = HSD_DT_F32;
    if (hsd_synth_ftype(params->type, &dt))
        return hsd_error_prefix(HSD_ERR_INVALID_ARG, "hsd_synth_init: ");
    return hsd_synth_create_vocab(params->shape, dt, params->seed, params->tokenizer_ids, out);
}

size_t hsd_synth_weight_bytes(const hsd_synth_model *m) {
    size_t bytes = 0;
    for (int32_t i = 0; m && i < m->n; i++) bytes += m->t[i].nbytes;
    return bytes;
}
