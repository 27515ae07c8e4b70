/* Architectures by name (see arch.h). Everything one of them changes in the layer is a named
 * field of hsd_tf_config that layer_forward (models/layer.c) reads in one place. */
#include "models/arch.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "lib/base/error.h"

typedef struct arch_info {
    const char *name, *gguf, *hf_type, *hf_class;
    bool gguf_interleaved; /* llama.cpp's converter permutes q/k rows for interleaved rope */
    bool qkv_bias, qk_norm, post_norms, fused, gemma;
} arch_info;

static const arch_info archs[] = {
    {"llama", "llama", "llama", "LlamaForCausalLM", true, false, false, false, false, false},
    {"mistral", "llama", "mistral", "MistralForCausalLM", true, false, false, false, false, false},
    {"smollm", "llama", "llama", "LlamaForCausalLM", true, false, false, false, false, false},
    {"qwen2", "qwen2", "qwen2", "Qwen2ForCausalLM", false, true, false, false, false, false},
    {"qwen3", "qwen3", "qwen3", "Qwen3ForCausalLM", false, false, true, false, false, false},
    {"gemma3", "gemma3", "gemma3_text", "Gemma3ForCausalLM", false, false, true, true, false, true},
    {"phi3", "phi3", "phi3", "Phi3ForCausalLM", false, false, false, false, true, false},
};
#define N_ARCHS (sizeof archs / sizeof archs[0])

static const arch_info *find(const char *name) {
    for (size_t i = 0; name && i < N_ARCHS; i++)
        if (!strcmp(archs[i].name, name)) return &archs[i];
    return NULL;
}

const char *hsd_arch_list(void) {
    return "llama, mistral, smollm, qwen2, qwen3, gemma3, phi3";
}

hsd_status hsd_arch_init(hsd_tf_config *c, const char *arch, bool gguf, const char *src) {
    const arch_info *a = find(arch);
    if (!a)
        return hsd_error(HSD_ERR_UNSUPPORTED, "%s: unknown architecture '%s' (supported: %s)", src,
                         arch && *arch ? arch : "(none)", hsd_arch_list());
    snprintf(c->arch, sizeof c->arch, "%s", a->name);
    c->rope_interleaved = gguf && a->gguf_interleaved;
    c->qkv_bias = a->qkv_bias;
    c->qk_norm = a->qk_norm;
    c->post_norms = a->post_norms;
    c->fused_qkv = c->fused_gate_up = a->fused;
    c->act = HSD_ACT_SILU;
    if (a->gemma) {
        c->act = HSD_ACT_GELU_TANH;
        c->norm_unit_offset = !gguf;
        c->emb_scale = sqrtf((float)c->dim);
        /* Gemma's query_pre_attn_scalar: head_dim, but dim / n_heads for the 27B (62 layers),
         * which llama.cpp recognises by its layer count */
        if (c->n_layers == 62 && c->n_heads > 0)
            c->attn_scale = 1.0f / sqrtf((float)(c->dim / c->n_heads));
        if (c->swa_window > 0 && c->swa_pattern == 0) c->swa_pattern = 6;
        if (c->rope_theta_swa == 0) c->rope_theta_swa = 10000.0f;
    }
    return HSD_OK;
}

const char *hsd_arch_from_hf(const char *model_type, const char *hf_class) {
    /* the class names the architecture when present, model_type otherwise */
    if (hf_class && !strcmp(hf_class, "Gemma3ForConditionalGeneration")) return "gemma3";
    if (!hf_class && model_type && !strcmp(model_type, "gemma3")) return "gemma3";
    for (size_t i = 0; i < N_ARCHS; i++)
        if (hf_class ? !strcmp(archs[i].hf_class, hf_class)
                     : model_type && !strcmp(archs[i].hf_type, model_type))
            return !strcmp(archs[i].name, "smollm") ? "llama" : archs[i].name;
    return NULL;
}

const char *hsd_arch_hf_model_type(const char *arch) {
    const arch_info *a = find(arch);
    return a ? a->hf_type : "llama";
}
const char *hsd_arch_hf_class(const char *arch) {
    const arch_info *a = find(arch);
    return a ? a->hf_class : "LlamaForCausalLM";
}
const char *hsd_arch_gguf_name(const char *arch) {
    const arch_info *a = find(arch);
    return a ? a->gguf : "llama";
}

bool hsd_arch_layer_slides(const hsd_tf_config *c, int32_t layer) {
    if (c->swa_window <= 0) return false;
    if (c->swa_layers_set)
        return layer < HSD_TF_MAX_SWA_LAYERS && (c->swa_layers[layer / 64] >> (layer % 64) & 1);
    return c->swa_pattern <= 0 || (layer + 1) % c->swa_pattern != 0;
}

const char *hsd_arch_hf_tensor_name(const hsd_tf_config *c, hsd_tkind kind, int32_t layer,
                                    char *buf, size_t cap) {
    static const char *glob[] = {"model.embed_tokens.weight", "model.norm.weight", "lm_head.weight",
                                 ""};
    static const char *per[] = {"input_layernorm.weight",
                                "self_attn.q_proj.weight",
                                "self_attn.k_proj.weight",
                                "self_attn.v_proj.weight",
                                "self_attn.o_proj.weight",
                                "self_attn.q_proj.bias",
                                "self_attn.k_proj.bias",
                                "self_attn.v_proj.bias",
                                "post_attention_layernorm.weight",
                                "mlp.gate_proj.weight",
                                "mlp.down_proj.weight",
                                "mlp.up_proj.weight",
                                "self_attn.q_norm.weight",
                                "self_attn.k_norm.weight",
                                "post_attention_layernorm.weight",
                                "post_feedforward_layernorm.weight",
                                "self_attn.qkv_proj.weight",
                                "mlp.gate_up_proj.weight"};
    if (kind <= HSD_T_ROPE_FREQS) return glob[kind];
    const char *n = per[kind - HSD_T_ATTN_NORM];
    /* Gemma: post_attention_layernorm is the post-attention norm; the FFN's own is "pre_" */
    if (c->post_norms && kind == HSD_T_FFN_NORM) n = "pre_feedforward_layernorm.weight";
    snprintf(buf, cap, "model.layers.%d.%s", layer, n);
    return buf;
}
