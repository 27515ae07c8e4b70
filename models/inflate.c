/* Function-preserving inflation (hsd inflate). A trained model of hidden size d, FFN size f,
 * n heads of size hd over k KV heads and L layers becomes a model of the target shape (D, F,
 * N heads of HD over K KV heads, L' layers) with the same logits. Why each step is exact:
 *
 * Residual stream. Every vector x of the residual lives in the first d coordinates of R^D;
 * the rest stays exactly 0 because every matrix writing to the residual (embedding, attention
 * output wo, FFN down projection) has zero rows/columns there.
 *
 * RMSNorm. y = w * x / sqrt(mean(x^2) + eps). With x zero-padded, mean_D(x^2) = (d/D) mean_d(x^2).
 * Take eps' = eps * d/D: then sqrt(mean_D + eps') = sqrt(d/D) * sqrt(mean_d + eps), i.e. the
 * normaliser shrinks by sqrt(d/D) and the normalised x grows by sqrt(D/d). Multiplying the
 * weight by sqrt(d/D) (w' = w * sqrt(d_small/d_big)) cancels it: y' = y on the first d
 * coordinates, and 0 on the padding (w' = 0 there).
 *
 * Attention heads. Original query head h of group g = h / (n/k) is placed at a new head h'
 * whose KV head (h' / (N/K)) holds a copy of g's keys and values. When the target has fewer KV
 * heads than the model (qwen2.5-0.5b: K = 2), several original KV heads share one new KV head
 * of size HD >= 2*hd, each in its own block of hd coordinates ("packing"): a query head is
 * non-zero only on its group's block, so q.k only sees its own group's keys, and its wo columns
 * read only that block of the value, so the other groups' values never reach the residual.
 * Heads, KV heads and blocks left over are zero (zero q/k/v rows, zero wo columns).
 *
 * Attention scale. Scores are q.k / sqrt(HD) instead of / sqrt(hd): wq (and bq) are scaled by
 * sqrt(HD/hd).
 *
 * RoPE. Pair i of an original head rotates at frequency inv(i) = theta^(-2i/hd) (with the
 * model's Llama 3 scaling or frequency factors, if any). Pair p of a new head rotates at
 * theta'^(-2p/HD) / factor[p]. The original pair i of block b goes to pair p = b*hd/2 + i in
 * the same layout the writer uses (HuggingFace half-split: coordinates p and p + HD/2; the
 * GGUF writer permutes to llama.cpp's interleaved order, which keeps pairs as pairs), whatever
 * the source layout (interleaved llama2.c/GGUF llama or half-split HF/qwen2). Without packing,
 * theta' = theta^(HD/hd) gives theta'^(-2i/HD) = theta^(-2i/hd) exactly for every i < hd/2,
 * with no extra tensor; with packing (or scaling, or theta^(HD/hd) beyond float range) a
 * rope_freqs tensor (per-pair divisors, which both hsd and llama.cpp's llama architecture
 * apply) sets each used pair to its original frequency. A rotary dimension count below the
 * head size (llama.cpp's rope.dimension_count) would also work for llama.cpp, but hsd's
 * forward rotates whole heads, so the frequency route is the one both run.
 *
 * FFN. gate/up rows beyond f are zero (silu(0) * 0 = 0) and so are the down columns beyond f.
 *
 * Extra layers. Layers L..L'-1 are all zero: attention output and down projection 0, so each
 * adds exactly 0 to the residual (identity). Final norm and classifier are the model's
 * (padded like the embedding), vocabulary and context length stay the model's. */
#include "hsd_tools.h"
#include "models/inflate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernels/quant.h"
#include "lib/base/error.h"
#include "lib/base/params.h"
#include "models/gguf_vocab.h"
#include "models/loaders.h"

typedef struct plan {
    hsd_tf_config s, t; /* source and target */
    bool tied;
    int32_t blocks;            /* original KV heads per new KV head: 1, or HD/hd when packed */
    int32_t *q_head, *q_block; /* [s.n_heads]: new head and block of each original head */
    int32_t *kv_src;           /* [t.n_kv_heads * blocks]: original KV head or -1 */
    float *freq_factors;       /* [HD/2] or NULL when theta' alone is exact */
} plan;

static void plan_free(plan *p) {
    free(p->q_head);
    free(p->q_block);
    free(p->kv_src);
    free(p->freq_factors);
}

hsd_status hsd_inflate_load(const char *path, hsd_transformer **out) {
    *out = NULL;
    struct stat st;
    if (stat(path, &st) != 0) return hsd_error(HSD_ERR_IO, "%s: no such file or directory", path);
    hsd_model_params p = hsd_model_default_params();
    p.backend = HSD_BACKEND_CPU;
    size_t n = strlen(path);
    if (S_ISDIR(st.st_mode) || (n > 12 && !strcmp(path + n - 12, ".safetensors")) ||
        (n > 5 && !strcmp(path + n - 5, ".json")))
        return hsd_safetensors_load(path, &p, out);
    char magic[4] = {0};
    FILE *f = fopen(path, "rb");
    if (!f) return hsd_error(HSD_ERR_IO, "%s: cannot open", path);
    size_t got = fread(magic, 1, 4, f);
    fclose(f);
    if (got == 4 && !memcmp(magic, "GGUF", 4)) return hsd_gguf_load(path, &p, out);
    return hsd_llama2c_load(path, &p, out);
}

/* Greedy placement: original KV heads in order, each taking a block of the current new KV
 * head and as many of its query heads as are free, continuing in a copy on the next KV head
 * when they run out. `blocks` = 1 gives every original KV head (copy) a KV head of its own. */
static bool place_heads(plan *p, int32_t blocks) {
    const hsd_tf_config *s = &p->s, *t = &p->t;
    int32_t G = s->n_heads / s->n_kv_heads, Gt = t->n_heads / t->n_kv_heads;
    int32_t slot = 0, used_q = 0, used_b = 0;
    for (int32_t i = 0; i < t->n_kv_heads * blocks; i++) p->kv_src[i] = -1;
    for (int32_t g = 0; g < s->n_kv_heads; g++) {
        int32_t left = G;
        while (left > 0) {
            if (slot >= t->n_kv_heads) return false;
            if (used_q == Gt || used_b == blocks) {
                slot++, used_q = 0, used_b = 0;
                continue;
            }
            int32_t b = used_b++, take = left < Gt - used_q ? left : Gt - used_q;
            p->kv_src[slot * blocks + b] = g;
            for (int32_t r = 0; r < take; r++) {
                int32_t h = g * G + (G - left) + r;
                p->q_head[h] = slot * Gt + used_q + r;
                p->q_block[h] = b;
            }
            used_q += take, left -= take;
        }
    }
    p->blocks = blocks;
    return true;
}

/* The model's inverse frequency of pair i as its forward computes it. The formula (with
 * Llama 3 scaling) is exact; the angle at position 1 of the rope table also carries GGUF
 * frequency factors, which the config does not show, so the table wins where they differ. */
static double src_inv_freq(const hsd_transformer *src, const hsd_tf_config *c, int32_t i) {
    double inv = 1.0 / pow((double)c->rope_theta, 2.0 * i / (double)c->head_dim);
    if (c->rope_scale_factor > 0.0f) {
        double lo = c->rope_low_freq_factor, hi = c->rope_high_freq_factor;
        double orig = c->rope_orig_ctx, wavelen = 2.0 * M_PI / inv;
        if (wavelen > orig / lo)
            inv /= c->rope_scale_factor;
        else if (wavelen >= orig / hi) {
            double sm = (orig / wavelen - lo) / (hi - lo);
            inv = (1.0 - sm) * inv / c->rope_scale_factor + sm * inv;
        }
    }
    if (hsd_tf_n_ctx(src) < 2) return inv;
    const float *cs, *sn;
    if (hsd_tf_rope_tables(src, &cs, &sn) != HSD_OK) return inv;
    int32_t half = c->head_dim / 2;
    double tab = atan2((double)sn[half + i], (double)cs[half + i]);
    return fabs(tab - inv) <= 1e-5 * inv ? inv : tab;
}

static hsd_status rope_plan(plan *p, const hsd_transformer *src) {
    const hsd_tf_config *s = &p->s;
    hsd_tf_config *t = &p->t;
    int32_t hs = s->head_dim / 2, ht = t->head_dim / 2;
    double theta = s->rope_theta, ratio = (double)t->head_dim / s->head_dim;
    double theta_t = pow(theta, ratio);
    bool plain = p->blocks == 1 && theta_t < 1e37; /* float range */
    t->rope_theta = (float)(plain ? theta_t : theta);
    t->rope_scale_factor = 0, t->rope_low_freq_factor = 0, t->rope_high_freq_factor = 0;
    t->rope_orig_ctx = 0;
    float *f = malloc((size_t)ht * sizeof *f);
    if (!f) return hsd_error(HSD_ERR_NOMEM, "inflate: out of memory");
    bool needed = false;
    for (int32_t q = 0; q < ht; q++) {
        double base = 1.0 / pow((double)t->rope_theta, 2.0 * q / (double)t->head_dim);
        f[q] = 1.0f;
        if (q < p->blocks * hs) f[q] = (float)(base / src_inv_freq(src, s, q % hs));
        if (fabs(f[q] - 1.0) > 1e-6) needed = true;
    }
    if (needed)
        p->freq_factors = f;
    else
        free(f);
    return HSD_OK;
}

static hsd_status make_plan(const hsd_transformer *src, const char *shape, int32_t n_layers,
                            hsd_dtype dtype, plan *p) {
    memset(p, 0, sizeof *p);
    p->s = *hsd_tf_get_config(src);
    const hsd_tf_config *s = &p->s;
    hsd_tf_config *t = &p->t;
    bool shape_tied;
    hsd_status st = hsd_synth_shape(shape, t, &shape_tied);
    if (st != HSD_OK) return st;
    if (strcmp(s->arch, "llama") && strcmp(s->arch, "llama2c") && strcmp(s->arch, "qwen2"))
        return hsd_error(
            HSD_ERR_UNSUPPORTED,
            "inflate: cannot inflate architecture '%s' (supported: llama, llama2c, qwen2)",
            s->arch);
    /* options of later architectures (set only by their loaders) would need their own
     * construction (q/k norms, softcaps, embedding scale, sliding windows) */
    if (s->qk_norm || s->post_norms || s->fused_qkv || s->fused_gate_up || s->emb_scale != 0 ||
        s->attn_scale != 0 || s->attn_softcap != 0 || s->final_softcap != 0 || s->swa_window != 0)
        return hsd_error(HSD_ERR_UNSUPPORTED,
                         "inflate: model '%s' uses q/k norms, post-norms, fused projections, "
                         "scales, softcaps or sliding windows, which inflate does not handle",
                         s->arch);
    if (n_layers < 0 || n_layers > 4096)
        return hsd_error(HSD_ERR_INVALID_ARG, "inflate: --layers %d out of range 1..4096",
                         n_layers);
    if (n_layers > 0) t->n_layers = n_layers;
    struct {
        const char *what;
        int32_t model, shape;
    } dims[] = {{"hidden size", s->dim, t->dim},
                {"FFN size", s->hidden_dim, t->hidden_dim},
                {"layer count", s->n_layers, t->n_layers},
                {"attention heads", s->n_heads, t->n_heads},
                {"head dimension", s->head_dim, t->head_dim}};
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
        if (dims[i].shape < dims[i].model)
            return hsd_error(
                HSD_ERR_INVALID_ARG,
                "inflate: shape %s%s is smaller than the model in %s: model %d, shape %d", shape,
                n_layers > 0 && i == 2 ? " (--layers)" : "", dims[i].what, dims[i].model,
                dims[i].shape);
    /* (q4_k_m: widths that are not multiples of 256 take Q5_0 / Q8_0, mat_type) */
    if ((dtype == HSD_DT_Q8_0 || dtype == HSD_DT_Q4_K) &&
        (t->dim % 32 || t->hidden_dim % 32 || (t->n_heads * t->head_dim) % 32))
        return hsd_error(
            HSD_ERR_INVALID_ARG,
            "inflate: %s needs widths that are multiples of 32 (shape %s: %d, %d, %d)",
            dtype == HSD_DT_Q8_0 ? "q8_0" : "q4_k_m", shape, t->dim, t->hidden_dim,
            t->n_heads * t->head_dim);
    /* vocabulary, context and architecture stay the model's */
    snprintf(t->arch, sizeof t->arch, "%s", s->qkv_bias ? "qwen2" : "llama");
    t->vocab_size = s->vocab_size, t->seq_len = s->seq_len;
    t->qkv_bias = s->qkv_bias, t->rope_interleaved = false; /* built half-split (HF) */
    t->act = s->act; /* any activation: act(gate) * 0 = 0 on the padded FFN units */
    t->norm_eps = (float)((double)s->norm_eps * s->dim / t->dim);
    p->tied =
        hsd_tf_matrix(src, HSD_T_CLS, -1)->data == hsd_tf_matrix(src, HSD_T_TOK_EMB, -1)->data;
    int32_t pack = t->head_dim / s->head_dim;
    p->q_head = malloc((size_t)s->n_heads * sizeof *p->q_head);
    p->q_block = malloc((size_t)s->n_heads * sizeof *p->q_block);
    p->kv_src = malloc((size_t)t->n_kv_heads * pack * sizeof *p->kv_src);
    if (!p->q_head || !p->q_block || !p->kv_src)
        return hsd_error(HSD_ERR_NOMEM, "inflate: out of memory");
    if (!place_heads(p, 1) && !place_heads(p, pack))
        return hsd_error(
            HSD_ERR_INVALID_ARG,
            "inflate: the model's %d heads over %d KV heads (head dimension %d) do not fit "
            "shape %s's %d heads over %d KV heads (head dimension %d, %d KV heads per block)",
            s->n_heads, s->n_kv_heads, s->head_dim, shape, t->n_heads, t->n_kv_heads, t->head_dim,
            pack);
    return rope_plan(p, src);
}

hsd_status hsd_inflate_check(const hsd_transformer *src, const char *shape, int32_t n_layers,
                             hsd_dtype dtype, hsd_tf_config *out_cfg) {
    plan p;
    hsd_status s = make_plan(src, shape, n_layers, dtype, &p);
    if (s == HSD_OK && out_cfg) *out_cfg = p.t;
    plan_free(&p);
    return s;
}

/* ---- building ------------------------------------------------------------------------- */

static const char *hf_suffix(hsd_tkind k) {
    switch (k) {
    case HSD_T_ATTN_NORM:
        return "input_layernorm.weight";
    case HSD_T_WQ:
        return "self_attn.q_proj.weight";
    case HSD_T_WK:
        return "self_attn.k_proj.weight";
    case HSD_T_WV:
        return "self_attn.v_proj.weight";
    case HSD_T_WO:
        return "self_attn.o_proj.weight";
    case HSD_T_BQ:
        return "self_attn.q_proj.bias";
    case HSD_T_BK:
        return "self_attn.k_proj.bias";
    case HSD_T_BV:
        return "self_attn.v_proj.bias";
    case HSD_T_FFN_NORM:
        return "post_attention_layernorm.weight";
    case HSD_T_W_GATE:
        return "mlp.gate_proj.weight";
    case HSD_T_W_DOWN:
        return "mlp.down_proj.weight";
    case HSD_T_W_UP:
        return "mlp.up_proj.weight";
    case HSD_T_TOK_EMB:
        return "model.embed_tokens.weight";
    case HSD_T_OUT_NORM:
        return "model.norm.weight";
    case HSD_T_CLS:
        return "lm_head.weight";
    case HSD_T_ROPE_FREQS:
        return "rope_freqs.weight";
    default:
        return "?";
    }
}

/* Appends a tensor (rows 0 = vector) taking ownership of data (freed on failure too). */
static hsd_status push(hsd_synth_model *m, hsd_tkind kind, int32_t layer, hsd_dtype type,
                       int64_t rows, int64_t cols, void *data, size_t nbytes) {
    if (!data) return hsd_error(HSD_ERR_NOMEM, "inflate: out of memory (%zu bytes)", nbytes);
    hsd_synth_tensor *t = &m->t[m->n++];
    if (layer >= 0)
        snprintf(t->name, sizeof t->name, "model.layers.%d.%s", layer, hf_suffix(kind));
    else
        snprintf(t->name, sizeof t->name, "%s", hf_suffix(kind));
    t->kind = kind, t->layer = layer, t->type = type;
    t->n_dims = rows > 0 ? 2 : 1;
    t->shape[0] = rows > 0 ? rows : cols;
    t->shape[1] = rows > 0 ? cols : 0;
    t->data = data, t->nbytes = nbytes;
    return HSD_OK;
}

/* The storage type of a matrix of `cols` columns in a file of type `type`: the Q4_K_M mix
 * (type Q4_K) gives the output matrix Q6_K (the token embedding when they are tied, as
 * llama.cpp does), and attn_v and ffn_down Q6_K in the layers llama.cpp's Q4_K_M favours (its
 * use_more_bits: the first and last eighth, and every third layer between). Rows that 256-
 * column super-blocks cannot hold (a 576- or 896-wide model) take llama.cpp's fallbacks, Q5_0
 * for Q4_K and Q8_0 for Q6_K, so a small drafter's Q4_K_M file is what llama.cpp would write. */
static hsd_dtype mat_type(const hsd_synth_model *m, hsd_dtype type, hsd_tkind kind, int32_t layer,
                          int64_t cols) {
    if (type != HSD_DT_Q4_K) return type;
    const int32_t n = m->cfg.n_layers;
    bool more = layer >= 0 && (layer < n / 8 || layer >= 7 * n / 8 || (layer - n / 8) % 3 == 2);
    hsd_dtype t = kind == HSD_T_CLS || (kind == HSD_T_TOK_EMB && m->tied) ||
                          ((kind == HSD_T_WV || kind == HSD_T_W_DOWN) && more)
                      ? HSD_DT_Q6_K
                      : HSD_DT_Q4_K;
    if (cols % HSD_QK_K) t = t == HSD_DT_Q6_K ? HSD_DT_Q8_0 : HSD_DT_Q5_0;
    return t;
}

/* A zero matrix: 0 is all-zero bytes in F32, F16, BF16, Q8_0, Q5_0, Q4_K and Q6_K (scale 0) alike. */
static hsd_status push_zero(hsd_synth_model *m, hsd_tkind kind, int32_t layer, hsd_dtype type,
                            int64_t rows, int64_t cols) {
    if (rows > 0) type = mat_type(m, type, kind, layer, cols);
    size_t nb = hsd_dtype_row_bytes(type, cols) * (size_t)(rows > 0 ? rows : 1);
    return push(m, kind, layer, type, rows, cols, calloc(1, nb ? nb : 1), nb);
}

/* Converts an fp32 staging matrix to `type` and appends it (frees x). */
static hsd_status push_f32(hsd_synth_model *m, hsd_tkind kind, int32_t layer, hsd_dtype type,
                           int64_t rows, int64_t cols, float *x) {
    if (!x) return hsd_error(HSD_ERR_NOMEM, "inflate: out of memory");
    int64_t n_rows = rows > 0 ? rows : 1; /* rows 0: a vector */
    if (rows > 0) type = mat_type(m, type, kind, layer, cols);
    size_t rb = hsd_dtype_row_bytes(type, cols), nb = rb * (size_t)n_rows;
    if (type == HSD_DT_F32) return push(m, kind, layer, type, rows, cols, x, nb);
    uint8_t *out = malloc(nb);
    if (out)
        for (int64_t r = 0; r < n_rows; r++) {
            const float *xr = x + r * cols;
            uint8_t *o = out + (size_t)r * rb;
            if (type == HSD_DT_Q8_0)
                hsd_q8_0_quantize_row(xr, cols, o);
            else if (type == HSD_DT_Q4_K || type == HSD_DT_Q6_K || type == HSD_DT_Q5_0)
                (void)hsd_quant_row(type, xr, cols, o); /* widths checked by make_plan */
            else
                for (int64_t j = 0; j < cols; j++)
                    ((uint16_t *)(void *)o)[j] =
                        type == HSD_DT_F16 ? hsd_fp32_to_fp16(xr[j]) : hsd_fp32_to_bf16(xr[j]);
        }
    free(x);
    return push(m, kind, layer, type, rows, cols, out, nb);
}

/* The source matrix as fp32 [rows][cols] (malloc'd; NULL when out of memory). */
static float *src_f32(const hsd_mat *w) {
    float *x = malloc((size_t)w->rows * w->cols * sizeof *x);
    if (x) hsd_mat_rows_f32(w, 0, w->rows, x);
    return x;
}

/* Row of coordinate j of an original head in the new head (half-split layout), block b. */
static int32_t head_row(const plan *p, int32_t j, int32_t b) {
    int32_t hs = p->s.head_dim / 2, i, side;
    if (p->s.rope_interleaved)
        i = j / 2, side = j % 2;
    else
        i = j % hs, side = j / hs;
    return side * (p->t.head_dim / 2) + b * hs + i;
}

/* Copies the [rows][cols] source into the top-left corner of a zero [R][C] matrix, scaled. */
static float *pad(const float *x, int64_t rows, int64_t cols, int64_t R, int64_t C, float scale) {
    float *y = x ? calloc((size_t)R * C, sizeof *y) : NULL;
    if (y)
        for (int64_t r = 0; r < rows; r++)
            for (int64_t j = 0; j < cols; j++) y[r * C + j] = scale * x[r * cols + j];
    return y;
}

/* wq/wk/wv (rows = heads x head_dim over the model dim) and their biases (cols = 1). */
static float *place_rows(const plan *p, const float *x, int64_t cols, int64_t C, hsd_tkind kind) {
    const hsd_tf_config *s = &p->s, *t = &p->t;
    bool q = kind == HSD_T_WQ || kind == HSD_T_BQ, v = kind == HSD_T_WV || kind == HSD_T_BV;
    int64_t R = (int64_t)(q ? t->n_heads : t->n_kv_heads) * t->head_dim;
    float *y = x ? calloc((size_t)R * C, sizeof *y) : NULL;
    if (!y) return NULL;
    float scale = q ? (float)sqrt((double)t->head_dim / s->head_dim) : 1.0f;
    int32_t hd = s->head_dim, n = q ? s->n_heads : t->n_kv_heads * p->blocks;
    for (int32_t u = 0; u < n; u++) {
        int32_t src_h, dst_h, b;
        if (q)
            src_h = u, dst_h = p->q_head[u], b = p->q_block[u];
        else if ((src_h = p->kv_src[u]) < 0)
            continue;
        else
            dst_h = u / p->blocks, b = u % p->blocks;
        for (int32_t j = 0; j < hd; j++) {
            /* values are not rotated: a plain block offset, matching wo's columns */
            int64_t dr = (int64_t)dst_h * t->head_dim + (v ? b * hd + j : head_row(p, j, b));
            const float *xr = x + ((int64_t)src_h * hd + j) * cols;
            for (int64_t c = 0; c < cols; c++) y[dr * C + c] = scale * xr[c];
        }
    }
    return y;
}

/* wo [model dim][heads x head_dim]: original head h's columns go to its new head's block. */
static float *place_wo(const plan *p, const float *x) {
    const hsd_tf_config *s = &p->s, *t = &p->t;
    int64_t C = (int64_t)t->n_heads * t->head_dim, sc = (int64_t)s->n_heads * s->head_dim;
    float *y = x ? calloc((size_t)t->dim * C, sizeof *y) : NULL;
    if (!y) return NULL;
    for (int32_t r = 0; r < s->dim; r++)
        for (int32_t h = 0; h < s->n_heads; h++)
            for (int32_t j = 0; j < s->head_dim; j++)
                y[r * C + (int64_t)p->q_head[h] * t->head_dim + p->q_block[h] * s->head_dim + j] =
                    x[r * sc + (int64_t)h * s->head_dim + j];
    return y;
}

static float *norm_vec(const float *w, int32_t d, int32_t D) {
    float *y = calloc((size_t)D, sizeof *y);
    float k = (float)sqrt((double)d / D); /* see the RMSNorm paragraph at the top */
    if (y)
        for (int32_t i = 0; i < d; i++) y[i] = w[i] * k;
    return y;
}

static hsd_status build_layer(const plan *p, const hsd_transformer *src, int32_t l, hsd_dtype dt,
                              hsd_synth_model *m) {
    const hsd_tf_config *s = &p->s, *t = &p->t;
    int64_t D = t->dim, F = t->hidden_dim, Q = (int64_t)t->n_heads * t->head_dim,
            KV = (int64_t)t->n_kv_heads * t->head_dim;
    hsd_status st;
    if (l >= s->n_layers) { /* identity layer */
        if ((st = push_zero(m, HSD_T_ATTN_NORM, l, HSD_DT_F32, 0, D)) ||
            (st = push_zero(m, HSD_T_WQ, l, dt, Q, D)) ||
            (st = push_zero(m, HSD_T_WK, l, dt, KV, D)) ||
            (st = push_zero(m, HSD_T_WV, l, dt, KV, D)) ||
            (st = push_zero(m, HSD_T_WO, l, dt, D, Q)) ||
            (st = push_zero(m, HSD_T_FFN_NORM, l, HSD_DT_F32, 0, D)) ||
            (st = push_zero(m, HSD_T_W_GATE, l, dt, F, D)) ||
            (st = push_zero(m, HSD_T_W_UP, l, dt, F, D)) ||
            (st = push_zero(m, HSD_T_W_DOWN, l, dt, D, F)))
            return st;
        if (t->qkv_bias && ((st = push_zero(m, HSD_T_BQ, l, HSD_DT_F32, 0, Q)) ||
                            (st = push_zero(m, HSD_T_BK, l, HSD_DT_F32, 0, KV)) ||
                            (st = push_zero(m, HSD_T_BV, l, HSD_DT_F32, 0, KV))))
            return st;
        return HSD_OK;
    }
    static const hsd_tkind qkv[3] = {HSD_T_WQ, HSD_T_WK, HSD_T_WV},
                           bias[3] = {HSD_T_BQ, HSD_T_BK, HSD_T_BV};
    if ((st = push_f32(m, HSD_T_ATTN_NORM, l, HSD_DT_F32, 0, D,
                       norm_vec(hsd_tf_vector(src, HSD_T_ATTN_NORM, l), s->dim, t->dim))))
        return st;
    for (int i = 0; i < 3; i++) {
        float *x = src_f32(hsd_tf_matrix(src, qkv[i], l));
        float *y = place_rows(p, x, s->dim, D, qkv[i]);
        free(x);
        if ((st = push_f32(m, qkv[i], l, dt, i ? KV : Q, D, y))) return st;
        if (!t->qkv_bias) continue;
        /* a bias is a one-column matrix for place_rows */
        y = place_rows(p, hsd_tf_vector(src, bias[i], l), 1, 1, bias[i]);
        if ((st = push_f32(m, bias[i], l, HSD_DT_F32, 0, i ? KV : Q, y))) return st;
    }
    float *x = src_f32(hsd_tf_matrix(src, HSD_T_WO, l));
    float *y = place_wo(p, x);
    free(x);
    if ((st = push_f32(m, HSD_T_WO, l, dt, D, Q, y)) ||
        (st = push_f32(m, HSD_T_FFN_NORM, l, HSD_DT_F32, 0, D,
                       norm_vec(hsd_tf_vector(src, HSD_T_FFN_NORM, l), s->dim, t->dim))))
        return st;
    static const hsd_tkind ffn[3] = {HSD_T_W_GATE, HSD_T_W_UP, HSD_T_W_DOWN};
    for (int i = 0; i < 3; i++) {
        bool down = ffn[i] == HSD_T_W_DOWN;
        x = src_f32(hsd_tf_matrix(src, ffn[i], l));
        y = down ? pad(x, s->dim, s->hidden_dim, D, F, 1.0f)
                 : pad(x, s->hidden_dim, s->dim, F, D, 1.0f);
        free(x);
        if ((st = push_f32(m, ffn[i], l, dt, down ? D : F, down ? F : D, y))) return st;
    }
    return HSD_OK;
}

hsd_status hsd_inflate_build(const hsd_transformer *src, const char *shape, int32_t n_layers,
                             hsd_dtype dtype, hsd_synth_model **out) {
    *out = NULL;
    plan p;
    hsd_status st = make_plan(src, shape, n_layers, dtype, &p);
    hsd_synth_model *m = NULL;
    if (st != HSD_OK) goto done;
    const hsd_tf_config *s = &p.s, *t = &p.t;
    m = calloc(1, sizeof *m);
    if (m) m->t = calloc((size_t)t->n_layers * 12 + 4, sizeof *m->t);
    if (!m || !m->t) {
        st = hsd_error(HSD_ERR_NOMEM, "inflate: out of memory");
        goto done;
    }
    snprintf(m->shape_name, sizeof m->shape_name, "%s-inflated", shape);
    m->cfg = *t;
    m->tied = p.tied;
    float *x = src_f32(hsd_tf_matrix(src, HSD_T_TOK_EMB, -1));
    float *y = pad(x, s->vocab_size, s->dim, t->vocab_size, t->dim, 1.0f);
    free(x);
    if ((st = push_f32(m, HSD_T_TOK_EMB, -1, dtype, t->vocab_size, t->dim, y))) goto done;
    for (int32_t l = 0; l < t->n_layers; l++)
        if ((st = build_layer(&p, src, l, dtype, m))) goto done;
    if ((st = push_f32(m, HSD_T_OUT_NORM, -1, HSD_DT_F32, 0, t->dim,
                       norm_vec(hsd_tf_vector(src, HSD_T_OUT_NORM, -1), s->dim, t->dim))))
        goto done;
    if (!p.tied) {
        x = src_f32(hsd_tf_matrix(src, HSD_T_CLS, -1));
        y = pad(x, s->vocab_size, s->dim, t->vocab_size, t->dim, 1.0f);
        free(x);
        if ((st = push_f32(m, HSD_T_CLS, -1, dtype, t->vocab_size, t->dim, y))) goto done;
    }
    if (p.freq_factors) {
        st = push(m, HSD_T_ROPE_FREQS, -1, HSD_DT_F32, 0, t->head_dim / 2, p.freq_factors,
                  (size_t)(t->head_dim / 2) * sizeof(float));
        p.freq_factors = NULL; /* owned by m now */
        if (st) goto done;
    }
    *out = m;
    m = NULL;
done:
    hsd_synth_free(m);
    plan_free(&p);
    return st;
}

hsd_inflate_params hsd_inflate_default_params(void) {
    return (hsd_inflate_params){.size = sizeof(hsd_inflate_params),
                                .shape = NULL, .tokenizer = NULL, .n_layers = 0, .type = HSD_FTYPE_F32,
                                .gguf_vocab_flags = 0};
}

hsd_status hsd_inflate_file(const char *in, const hsd_inflate_params *params, const char *out_path,
                            hsd_inflate_info *info) {
    if (!in || !params || !out_path)
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_inflate_file: %s is NULL",
                         !in       ? "input path"
                         : !params ? "params"
                                   : "output path");
    hsd_inflate_params params_own = hsd_inflate_default_params();
    hsd_status params_st = hsd_params_read(&params_own, sizeof params_own, params, "hsd_inflate_file", "params", "hsd_inflate_default_params()");
    if (params_st) return params_st;
    params = &params_own;
    if (!params->shape)
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_inflate_file: no shape given (known: %s)",
                         hsd_synth_shape_list());
    hsd_dtype dtype = HSD_DT_F32;
    if (hsd_synth_ftype(params->type, &dtype))
        return hsd_error_prefix(HSD_ERR_INVALID_ARG, "hsd_inflate_file: ");
    const char *tokenizer = params->tokenizer, *shape = params->shape;
    int32_t n_layers = params->n_layers;
    if (info) memset(info, 0, sizeof *info);
    hsd_tf_config cfg;
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", out_path) >= (int)sizeof tmp)
        return hsd_error(HSD_ERR_INVALID_ARG, "inflate: output path too long: %s", out_path);
    hsd_transformer *src;
    hsd_status st = hsd_inflate_load(in, &src);
    if (st != HSD_OK) return st;
    /* check the plan and the output before spending time and memory on the build */
    if ((st = hsd_inflate_check(src, shape, n_layers, dtype, &cfg))) goto done;
    if (params->tokenizer) { /* a vocabulary GGUF cannot hold is refused before the build */
        hsd_gguf_vocab voc;
        if ((st = hsd_gguf_vocab_from_file(params->tokenizer, cfg.vocab_size,
                                           params->gguf_vocab_flags, &voc))) {
            st = hsd_error_prefix(st, "inflate: --tokenizer ");
            goto done;
        }
        hsd_gguf_vocab_free(&voc);
    }
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        st = hsd_error(HSD_ERR_IO, "inflate: cannot write output %s (creating %s failed)", out_path,
                       tmp);
        goto done;
    }
    fclose(f);
    hsd_synth_model *m;
    if ((st = hsd_inflate_build(src, shape, n_layers, dtype, &m))) goto done;
    if (info)
        *info = (hsd_inflate_info){.dim = cfg.dim,
                                   .hidden_dim = cfg.hidden_dim,
                                   .n_layers = cfg.n_layers,
                                   .n_heads = cfg.n_heads,
                                   .n_kv_heads = cfg.n_kv_heads,
                                   .head_dim = cfg.head_dim,
                                   .vocab_size = cfg.vocab_size,
                                   .weight_bytes = hsd_synth_weight_bytes(m)};
    hsd_tf_free(src);
    src = NULL;
    if (!tokenizer) { /* a GGUF source carries its tokenizer: keep it */
        char magic[4] = {0};
        FILE *g = fopen(in, "rb");
        if (g && fread(magic, 1, 4, g) == 4 && !memcmp(magic, "GGUF", 4)) tokenizer = in;
        if (g) fclose(g);
    }
    st = hsd_synth_write_gguf_vocab(m, tmp, tokenizer, params->gguf_vocab_flags);
    hsd_synth_free(m);
    if (st == HSD_OK && rename(tmp, out_path) != 0)
        st = hsd_error(HSD_ERR_IO, "inflate: cannot rename %s to %s", tmp, out_path);
done:
    if (st != HSD_OK) unlink(tmp);
    hsd_tf_free(src);
    return st;
}
