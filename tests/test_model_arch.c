/* Architectures (models/arch.c) checked against two oracles:
 *  - a float64 forward written here from the architectures' definitions (HF layout weights
 *    of hsd synth: RMSNorm with Gemma's 1 + w, fused Phi-3 projections, per-head q/k norm,
 *    half-split rope with Llama 3 scaling and Gemma's local base, causal attention with a
 *    sliding window, post norms, SwiGLU / GeGLU, embedding scale, logit soft-capping), run
 *    on each tiny-ARCH shape, in one chunk, in two chunks over the KV cache, and as a tree;
 *  - llama.cpp itself (when built with it: HSD_LLAMA_CPP), on the synth GGUFs hsd writes:
 *    logits of 64 positions, cosine and argmax per position.
 * Plus the errors: unknown architecture, missing metadata key, missing per-arch tensor. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hsd.h"
#include "hsd_tools.h"
#include "models/arch.h"
#include "models/loaders.h"
#include "models/synth.h"
#include "tests/testutil.h"

#ifdef HSD_HAVE_LLAMA_CPP
#include "ggml-backend.h"
#include "llama.h"
#endif

#define NTOK 64

static const char *shapes[] = {"tiny-llama", "tiny-mistral", "tiny-smollm", "tiny-qwen2",
                               "tiny-qwen3", "tiny-gemma3",  "tiny-phi3"};
#define N_SHAPES (sizeof shapes / sizeof shapes[0])

static int setup(void **state) {
    (void)state;
    return hsd_test_tmpdir_setup("hsd_arch");
}
static int teardown(void **state) {
    (void)state;
    return hsd_test_tmpdir_teardown();
}
static const char *tmp(const char *name) { return hsd_test_tmp(name); }

static void tokens(int32_t *t, int32_t n, int32_t V) {
    for (int32_t i = 0; i < n; i++) t[i] = (int32_t)(((int64_t)i * 7919 + 13) % V);
}

/* ---- float64 reference ------------------------------------------------------------------ */

static const float *W(const hsd_synth_model *m, hsd_tkind kind, int32_t layer) {
    for (int32_t i = 0; i < m->n; i++)
        if (m->t[i].kind == kind && m->t[i].layer == layer) return m->t[i].data;
    return NULL;
}

/* out[r] = sum_c w[(r0 + r) * cols + c] x[c] */
static void mv(double *out, const float *w, int64_t r0, int64_t rows, int64_t cols,
               const double *x) {
    for (int64_t r = 0; r < rows; r++) {
        double s = 0;
        for (int64_t c = 0; c < cols; c++) s += (double)w[(r0 + r) * cols + c] * x[c];
        out[r] = s;
    }
}

static void rms(double *o, const double *x, const float *w, int64_t n, double eps,
                bool unit_offset) {
    double ss = 0;
    for (int64_t i = 0; i < n; i++) ss += x[i] * x[i];
    double sc = 1.0 / sqrt(ss / (double)n + eps);
    for (int64_t i = 0; i < n; i++) o[i] = x[i] * sc * ((double)w[i] + (unit_offset ? 1.0 : 0.0));
}

/* The inverse frequency of rope pair i: HF's default, Llama 3's "llama3" scaling on top. */
static double inv_freq(const hsd_tf_config *c, double theta, bool llama3, int32_t i) {
    double f = pow(theta, -2.0 * i / c->head_dim);
    if (llama3 && c->rope_linear > 0) f /= c->rope_linear; /* linear scaling, global layers */
    if (!llama3 || c->rope_scale_factor <= 0) return f;
    double wl = 2 * M_PI / f, lo_wl = c->rope_orig_ctx / c->rope_low_freq_factor,
           hi_wl = c->rope_orig_ctx / c->rope_high_freq_factor;
    if (wl < hi_wl) return f;
    if (wl > lo_wl) return f / c->rope_scale_factor;
    double s = (c->rope_orig_ctx / wl - c->rope_low_freq_factor) /
               (c->rope_high_freq_factor - c->rope_low_freq_factor);
    return (1 - s) * f / c->rope_scale_factor + s * f;
}

/* HF rotate_half: pairs (i, i + hd/2). */
static void rope(double *v, int32_t hd, int32_t pos, const hsd_tf_config *c, double theta,
                 bool llama3) {
    for (int32_t i = 0; i < hd / 2; i++) {
        double a = pos * inv_freq(c, theta, llama3, i), x1 = v[i], x2 = v[i + hd / 2];
        v[i] = x1 * cos(a) - x2 * sin(a);
        v[i + hd / 2] = x2 * cos(a) + x1 * sin(a);
    }
}

/* The cache types a reference or a comparison uses. */
enum { KV_F32, KV_F16, KV_Q8_0, KV_Q4_0 };

/* One head's row of hd keys or values (via fp32) as llama.cpp's CPU backend stores a Q8_0
 * KV cache (ggml-cpu quantize_row_q8_0, restated from its description): per block of 32,
 * d = fp16(amax / 127), q = round-half-even(x * 127 / amax), value q * d; a short last block
 * as if padded with zeros. */
static void q8_0_round(double *x, int64_t hd) {
    for (int64_t b = 0; b < hd; b += 32) {
        const int64_t e = b + 32 < hd ? b + 32 : hd;
        float amax = 0.0f;
        for (int64_t i = b; i < e; i++) amax = fmaxf(amax, fabsf((float)x[i]));
        const float d = hsd_fp16_to_fp32(hsd_fp32_to_fp16(amax / 127.0f)),
                    id = amax > 0.0f ? 127.0f / amax : 0.0f;
        for (int64_t i = b; i < e; i++) x[i] = (double)nearbyintf((float)x[i] * id) * d;
    }
}

/* The same as llama.cpp stores a q4_0 KV cache (ggml quantize_row_q4_0_ref, restated from its
 * description): per block of 32, max = the first element of largest |x|, d = max / -8,
 * n = min(15, trunc(x / d + 8.5)), value (n - 8) * fp16(d). */
static void q4_0_round(double *x, int64_t hd) {
    for (int64_t b = 0; b < hd; b += 32) {
        const int64_t e = b + 32 < hd ? b + 32 : hd;
        float amax = 0.0f, max = 0.0f;
        for (int64_t i = b; i < e; i++)
            if (fabsf((float)x[i]) > amax) amax = fabsf((float)x[i]), max = (float)x[i];
        const float d = max / -8.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        const double dr = hsd_fp16_to_fp32(hsd_fp32_to_fp16(d));
        for (int64_t i = b; i < e; i++) {
            const int t = (int)(int8_t)((float)x[i] * id + 8.5f);
            x[i] = (double)((t < 15 ? t : 15) - 8) * dr;
        }
    }
}

/* x[0..len) in blocks of nb (a power of two) times the orthonormal Hadamard matrix of
 * Sylvester's construction, written out: H[i][j] = (-1)^popcount(i & j) / sqrt(nb) (what
 * llama.cpp's KV rotation multiplies by, kernels' hsd_hadamard computes it by butterflies). */
static void hadamard_rot(double *x, int64_t len, int64_t nb) {
    double y[256];
    for (int64_t b0 = 0; b0 < len; b0 += nb) {
        for (int64_t i = 0; i < nb; i++) {
            y[i] = 0;
            for (int64_t j = 0; j < nb; j++) y[i] += (__builtin_popcountll((unsigned long long)(i & j)) % 2 ? -1.0 : 1.0) * x[b0 + j];
            y[i] /= sqrt((double)nb);
        }
        memcpy(x + b0, y, (size_t)nb * sizeof(double));
    }
}

/* Logits [n][V] of tokens 0..n-1 from position 0, every layer written out plainly; kv:
 * keys and values exact (KV_F32), or rounded (via fp32) as an F16, Q8_0 or Q4_0 KV cache
 * stores them; a Q8_0 or Q4_0 cache with head_dim a multiple of 64 as llama.cpp rotates it
 * (q and k in Hadamard blocks of the largest power of two dividing head_dim, v and the
 * attention's output in blocks of 64) unless no_rot. */
static double *ref_forward_rot(const hsd_synth_model *m, const int32_t *tok, int32_t n,
                               bool no_window, int kv, bool no_rot) {
    const hsd_tf_config *c = &m->cfg;
    const int64_t d = c->dim, H = c->hidden_dim, hd = c->head_dim, nh = c->n_heads,
                  nkv = c->n_kv_heads, qd = nh * hd, kvd = nkv * hd, V = c->vocab_size;
    const bool u = c->norm_unit_offset;
    int64_t rot_k = 0;
    if ((kv == KV_Q8_0 || kv == KV_Q4_0) && !no_rot && hd % 64 == 0)
        for (rot_k = 64; hd % (2 * rot_k) == 0;) rot_k *= 2;
    double *x = calloc((size_t)(n * d), 8), *h = malloc((size_t)d * 8), *o = malloc((size_t)d * 8);
    double *q = malloc((size_t)(n * qd) * 8), *k = malloc((size_t)(n * kvd) * 8),
           *v = malloc((size_t)(n * kvd) * 8);
    double *a = malloc((size_t)qd * 8), *g = malloc((size_t)H * 8), *up = malloc((size_t)H * 8),
           *sc = malloc((size_t)n * 8);
    double *logits = malloc((size_t)(n * V) * 8);
    const float *emb = W(m, HSD_T_TOK_EMB, -1);
    for (int32_t t = 0; t < n; t++)
        for (int64_t i = 0; i < d; i++)
            x[t * d + i] =
                emb[tok[t] * d + i] * (c->act == HSD_ACT_GELU_TANH ? sqrt((double)d) : 1.0);
    for (int32_t l = 0; l < c->n_layers; l++) {
        bool slides =
            !no_window && c->swa_window > 0 && (c->swa_pattern <= 0 || (l + 1) % c->swa_pattern);
        double theta = slides && c->rope_theta_swa > 0 ? c->rope_theta_swa : c->rope_theta;
        const float *qkv = W(m, HSD_T_WQKV, l);
        for (int32_t t = 0; t < n; t++) {
            rms(h, x + t * d, W(m, HSD_T_ATTN_NORM, l), d, c->norm_eps, u);
            double *qt = q + t * qd, *kt = k + t * kvd, *vt = v + t * kvd;
            if (qkv) {
                mv(qt, qkv, 0, qd, d, h), mv(kt, qkv, qd, kvd, d, h),
                    mv(vt, qkv, qd + kvd, kvd, d, h);
            } else {
                mv(qt, W(m, HSD_T_WQ, l), 0, qd, d, h), mv(kt, W(m, HSD_T_WK, l), 0, kvd, d, h);
                mv(vt, W(m, HSD_T_WV, l), 0, kvd, d, h);
            }
            if (c->qkv_bias)
                for (int64_t i = 0; i < kvd || i < qd; i++) {
                    if (i < qd) qt[i] += W(m, HSD_T_BQ, l)[i];
                    if (i < kvd) kt[i] += W(m, HSD_T_BK, l)[i], vt[i] += W(m, HSD_T_BV, l)[i];
                }
            for (int64_t hh = 0; hh < nh; hh++) {
                if (c->qk_norm)
                    rms(qt + hh * hd, qt + hh * hd, W(m, HSD_T_Q_NORM, l), hd, c->norm_eps, u);
                rope(qt + hh * hd, (int32_t)hd, t, c, theta, !slides);
            }
            for (int64_t hh = 0; hh < nkv; hh++) {
                if (c->qk_norm)
                    rms(kt + hh * hd, kt + hh * hd, W(m, HSD_T_K_NORM, l), hd, c->norm_eps, u);
                rope(kt + hh * hd, (int32_t)hd, t, c, theta, !slides);
            }
            for (int64_t i = 0; kv == KV_F16 && i < kvd; i++) {
                kt[i] = hsd_fp16_to_fp32(hsd_fp32_to_fp16((float)kt[i]));
                vt[i] = hsd_fp16_to_fp32(hsd_fp32_to_fp16((float)vt[i]));
            }
            if (rot_k) {
                hadamard_rot(qt, qd, rot_k), hadamard_rot(kt, kvd, rot_k);
                hadamard_rot(vt, kvd, 64);
            }
            for (int64_t hh = 0; kv == KV_Q8_0 && hh < nkv; hh++)
                q8_0_round(kt + hh * hd, hd), q8_0_round(vt + hh * hd, hd);
            for (int64_t hh = 0; kv == KV_Q4_0 && hh < nkv; hh++)
                q4_0_round(kt + hh * hd, hd), q4_0_round(vt + hh * hd, hd);
            /* the scores against a Q8_0 cache take the query rounded by the same rule, per
             * head (kernels/attention.h; llama.cpp's flash attention converts Q to the K
             * type's dot type the same way) */
            for (int64_t hh = 0; (kv == KV_Q8_0 || kv == KV_Q4_0) && hh < nh; hh++) q8_0_round(qt + hh * hd, hd);
        }
        for (int32_t t = 0; t < n; t++) {
            double scale = c->attn_scale > 0 ? c->attn_scale : 1.0 / sqrt((double)hd);
            for (int64_t hh = 0; hh < nh; hh++) {
                int64_t kh = hh / (nh / nkv);
                int32_t j0 = slides && t - c->swa_window + 1 > 0 ? t - c->swa_window + 1 : 0;
                double mx = -1e300, z = 0;
                for (int32_t j = j0; j <= t; j++) {
                    double s = 0;
                    for (int64_t i = 0; i < hd; i++)
                        s += q[t * qd + hh * hd + i] * k[j * kvd + kh * hd + i];
                    s *= scale;
                    if (c->attn_softcap > 0) s = c->attn_softcap * tanh(s / c->attn_softcap);
                    sc[j] = s, mx = fmax(mx, s);
                }
                for (int32_t j = j0; j <= t; j++) z += sc[j] = exp(sc[j] - mx);
                for (int64_t i = 0; i < hd; i++) {
                    double s = 0;
                    for (int32_t j = j0; j <= t; j++) s += sc[j] / z * v[j * kvd + kh * hd + i];
                    a[hh * hd + i] = s;
                }
            }
            if (rot_k) hadamard_rot(a, qd, 64); /* rotated back */
            mv(o, W(m, HSD_T_WO, l), 0, d, qd, a);
            if (c->post_norms) rms(o, o, W(m, HSD_T_ATTN_POST_NORM, l), d, c->norm_eps, u);
            for (int64_t i = 0; i < d; i++) x[t * d + i] += o[i];
            rms(h, x + t * d, W(m, HSD_T_FFN_NORM, l), d, c->norm_eps, u);
            const float *gu = W(m, HSD_T_W_GATE_UP, l);
            if (gu)
                mv(g, gu, 0, H, d, h), mv(up, gu, H, H, d, h);
            else
                mv(g, W(m, HSD_T_W_GATE, l), 0, H, d, h), mv(up, W(m, HSD_T_W_UP, l), 0, H, d, h);
            for (int64_t i = 0; i < H; i++) {
                double y = g[i];
                g[i] = (c->act == HSD_ACT_GELU_TANH
                            ? 0.5 * y * (1 + tanh(sqrt(2 / M_PI) * (y + 0.044715 * y * y * y)))
                            : y / (1 + exp(-y))) *
                       up[i];
            }
            mv(o, W(m, HSD_T_W_DOWN, l), 0, d, H, g);
            if (c->post_norms) rms(o, o, W(m, HSD_T_FFN_POST_NORM, l), d, c->norm_eps, u);
            for (int64_t i = 0; i < d; i++) x[t * d + i] += o[i];
        }
    }
    const float *cls = W(m, HSD_T_CLS, -1) ? W(m, HSD_T_CLS, -1) : emb;
    for (int32_t t = 0; t < n; t++) {
        rms(h, x + t * d, W(m, HSD_T_OUT_NORM, -1), d, c->norm_eps, u);
        mv(logits + t * V, cls, 0, V, d, h);
        for (int64_t i = 0; c->final_softcap > 0 && i < V; i++)
            logits[t * V + i] = c->final_softcap * tanh(logits[t * V + i] / c->final_softcap);
    }
    free(x), free(h), free(o), free(q), free(k), free(v), free(a), free(g), free(up), free(sc);
    return logits;
}

typedef struct cmp_stats {
    double min_cos, max_rel;
    int32_t agree, near; /* near: argmax differs, but the reference's own gap between the two
                          * tokens is within the two sides' largest logit difference there */
} cmp_stats;

static cmp_stats compare(const float *got, const double *want, int32_t n, int32_t V) {
    cmp_stats st = {1.0, 0, 0, 0};
    for (int32_t t = 0; t < n; t++) {
        const float *a = got + (size_t)t * V;
        const double *b = want + (size_t)t * V;
        double ab = 0, aa = 0, bb = 0, mx = 0, scale = 1e-9;
        int32_t ia = 0, ib = 0;
        for (int32_t i = 0; i < V; i++) {
            ab += a[i] * b[i], aa += (double)a[i] * a[i], bb += b[i] * b[i];
            mx = fmax(mx, fabs(a[i] - b[i])), scale = fmax(scale, fabs(b[i]));
            if (a[i] > a[ia]) ia = i;
            if (b[i] > b[ib]) ib = i;
        }
        st.min_cos = fmin(st.min_cos, ab / sqrt(aa * bb));
        st.max_rel = fmax(st.max_rel, mx / scale);
        st.agree += ia == ib;
        st.near += ia != ib && b[ib] - b[ia] <= mx;
    }
    return st;
}

/* hsd's logits of all n tokens: one chunk, or two chunks over the KV cache (the second as a
 * chain-shaped tree when `tree`). */
static float *hsd_logits(hsd_transformer *tf, const int32_t *tok, int32_t n, int32_t split,
                         bool tree) {
    int32_t V = hsd_tf_get_config(tf)->vocab_size;
    float *lg = malloc((size_t)n * V * sizeof *lg);
    assert_int_equal(hsd_tf_kv_truncate(tf, 0), HSD_OK);
    if (!split) {
        assert_int_equal(hsd_tf_forward(tf, tok, n, NULL, NULL, n, lg), HSD_OK);
        return lg;
    }
    int32_t parents[NTOK];
    for (int32_t i = 0; i < n - split; i++) parents[i] = i - 1;
    assert_int_equal(hsd_tf_forward(tf, tok, split, NULL, NULL, split, lg), HSD_OK);
    assert_int_equal(hsd_tf_forward(tf, tok + split, n - split, tree ? parents : NULL, NULL,
                                    n - split, lg + (size_t)split * V),
                     HSD_OK);
    return lg;
}

static double *ref_forward(const hsd_synth_model *m, const int32_t *tok, int32_t n, bool no_window,
                           int kv) {
    return ref_forward_rot(m, tok, n, no_window, kv, false);
}

static void test_float64_reference(void **state) {
    (void)state;
    for (size_t s = 0; s < N_SHAPES; s++) {
        hsd_synth_model *sm;
        assert_int_equal(hsd_synth_create(shapes[s], HSD_DT_F32, 7, &sm), HSD_OK);
        const int32_t V = sm->cfg.vocab_size, n = 48;
        int32_t tok[NTOK];
        tokens(tok, n, V);
        /* the F32 cache against the exact reference, the F16 cache (the default) and the Q8_0
         * cache against the references that round keys and values as they store them */
        double *ref = ref_forward(sm, tok, n, false, KV_F32),
               *ref16 = ref_forward(sm, tok, n, false, KV_F16),
               *ref8 = ref_forward(sm, tok, n, false, KV_Q8_0),
               *ref4 = ref_forward(sm, tok, n, false, KV_Q4_0),
               *ref4n = ref_forward_rot(sm, tok, n, false, KV_Q4_0, true);
        hsd_transformer *tf = NULL, *tf16, *tf8, *tf4, *tf4n;
        hsd_model_params p32 = hsd_model_default_params(), p8 = hsd_model_default_params(),
                         p4 = hsd_model_default_params(), p4n = hsd_model_default_params();
        p32.kv_type = HSD_KV_F32;
        p8.kv_type = HSD_KV_Q8_0;
        p4.kv_type = p4n.kv_type = HSD_KV_Q4_0;
        p4n.kv_no_rotate = true;
        assert_int_equal(hsd_synth_to_transformer(sm, &p32, &tf), HSD_OK);
        assert_int_equal(hsd_synth_to_transformer(sm, NULL, &tf16), HSD_OK);
        assert_int_equal(hsd_synth_to_transformer(sm, &p8, &tf8), HSD_OK);
        assert_int_equal(hsd_synth_to_transformer(sm, &p4, &tf4), HSD_OK);
        assert_int_equal(hsd_synth_to_transformer(sm, &p4n, &tf4n), HSD_OK);
        static const char *how[3] = {"one chunk", "30 + 18 cached", "30 + 18 tree"};
        /* the quantised caches rotated where llama.cpp rotates them (head_dim 64 here, but
         * tiny-qwen2's 16), and the Q4_0 one also without the rotation */
        static const char *kvn[5] = {"F32", "F16", "Q8_0", "Q4_0", "Q4_0 no rotation"};
        hsd_transformer *tfs[5] = {tf, tf16, tf8, tf4, tf4n};
        const double *refs[5] = {ref, ref16, ref8, ref4, ref4n};
        for (int kv = 0; kv < 5; kv++)
            for (int mode = 0; mode < 3; mode++) {
                float *lg = hsd_logits(tfs[kv], tok, n, mode ? 30 : 0, mode == 2);
                cmp_stats st = compare(lg, refs[kv], n, V);
                printf("%-13s %-15s %-4s KV vs float64: min cosine %.9f, max rel err %.2e, argmax %d/%d\n",
                       shapes[s], how[mode], kvn[kv], st.min_cos, st.max_rel, st.agree, n);
                /* Q8_0: the query's quants are rounded from hsd's fp32 q and the reference's
                 * float64 q, and where the two straddle a rounding boundary one quant moves by a
                 * step (amax / 127 of its block): up to ~7e-4 of the largest logit on these
                 * shapes (tiny-qwen3). Q4_0: its keys and values are rounded from them too, and
                 * a straddled boundary moves a key or value by a whole step, amax / 8 of its
                 * block (these 48 tokens put 1-9 elements per shape within 1e-4 of a step of a
                 * boundary; tiny-phi3's logits move up to 5.5e-3, cosine 0.99998). A wrong
                 * block, scale or offset moves whole rows (tests/test_attention.c holds the
                 * kernel itself to float64 over the stored values). */
                assert_true(st.min_cos > (kv >= 3 ? 0.9999 : 0.99999));
                assert_true(st.max_rel < (kv >= 3 ? 1.5e-2 : kv == 2 ? 4e-3 : 1e-3));
                /* Q8_0: that error may flip a near tie, and only a near tie: a flip is
                 * allowed where the reference's top two are closer than the row's largest
                 * difference (the tiled cache's int16 value weights add ~1e-5 of the values'
                 * scale to it: kernels/attention.h) */
                if (kv >= 2 && st.agree < n)
                    printf("%-13s %-15s %s: %d of %d argmax flips are near ties\n", shapes[s], how[mode],
                           kvn[kv], st.near, n - st.agree);
                assert_int_equal(st.agree + (kv >= 2 ? st.near : 0), n);
                free(lg);
            }
        hsd_tf_free(tf16), hsd_tf_free(tf8), hsd_tf_free(tf4), hsd_tf_free(tf4n);
        free(ref16), free(ref8), free(ref4), free(ref4n);
        if (sm->cfg.swa_window >
            0) { /* the window matters here: without it the reference differs */
            double *full = ref_forward(sm, tok, n, true, KV_F32);
            float *lg = hsd_logits(tf, tok, n, 0, false);
            cmp_stats st = compare(lg, full, n, V);
            printf("%-13s without the window the reference is off: max rel err %.2e\n", shapes[s],
                   st.max_rel);
            assert_true(st.max_rel > 1e-2);
            free(lg), free(full);
        }
        hsd_tf_free(tf);
        free(ref);
        hsd_synth_free(sm);
    }
}

/* The GGUF and safetensors files of every architecture load to the in-memory model. */
static void test_file_roundtrip(void **state) {
    (void)state;
    for (size_t s = 0; s < N_SHAPES; s++) {
        hsd_synth_model *sm;
        assert_int_equal(hsd_synth_create(shapes[s], HSD_DT_BF16, 3, &sm), HSD_OK);
        const int32_t V = sm->cfg.vocab_size, n = 20;
        int32_t tok[NTOK];
        tokens(tok, n, V);
        hsd_transformer *mem, *tf;
        assert_int_equal(hsd_synth_to_transformer(sm, NULL, &mem), HSD_OK);
        float *want = hsd_logits(mem, tok, n, 0, false);
        double *wd = malloc((size_t)n * V * sizeof *wd);
        for (size_t i = 0; i < (size_t)n * V; i++) wd[i] = want[i];
        for (int fmt = 0; fmt < 2; fmt++) {
            char name[64];
            snprintf(name, sizeof name, "%s.%s", shapes[s], fmt ? "gguf" : "st");
            const char *p = tmp(name);
            if (fmt) {
                assert_int_equal(hsd_synth_write_gguf(sm, p), HSD_OK);
                assert_int_equal(hsd_gguf_load(p, NULL, &tf), HSD_OK);
            } else {
                assert_int_equal(hsd_synth_write_safetensors(sm, p), HSD_OK);
                assert_int_equal(hsd_safetensors_load(p, NULL, &tf), HSD_OK);
            }
            /* GGUF knows Mistral and SmolLM as "llama", a HF config SmolLM as llama */
            assert_string_equal(hsd_tf_get_config(tf)->arch,
                                fmt ? hsd_arch_gguf_name(sm->cfg.arch)
                                    : hsd_arch_from_hf(hsd_arch_hf_model_type(sm->cfg.arch), NULL));
            float *got = hsd_logits(tf, tok, n, 0, false);
            cmp_stats st = compare(got, wd, n, V);
            /* The same weights in the same order give the same bits. llama's GGUF permutes the
             * q/k rows for interleaved rope (llama.cpp's converter), so q·k sums its terms in
             * another order; with activations rounded to bf16 before each product (BF16
             * weights under AVX-512), a last-bit difference can move one activation by a bf16
             * step (2^-8 relative): close, not equal. */
            bool reordered = hsd_tf_get_config(tf)->rope_interleaved != hsd_tf_get_config(mem)->rope_interleaved;
            printf("%-13s %-11s loaded vs in-memory: max rel err %.2e, min cosine %.9f%s\n", shapes[s],
                   fmt ? "GGUF" : "safetensors", st.max_rel, st.min_cos,
                   reordered ? " (q/k rows permuted)" : "");
            if (reordered)
                assert_true(st.max_rel < 1e-2 && st.min_cos > 0.99999 && st.agree == n);
            else
                assert_true(st.max_rel == 0);
            free(got);
            hsd_tf_free(tf);
        }
        free(want), free(wd);
        hsd_tf_free(mem);
        hsd_synth_free(sm);
    }
}

/* ---- errors ------------------------------------------------------------------------------ */

static char *slurp(const char *path, size_t *len) {
    return hsd_test_read_file(path, len);
}
static void spit(const char *path, const void *p, size_t len) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, len, f), len);
    fclose(f);
}
/* Replaces the first `from` in the file by `to` (same length) and loads it. */
static void expect_edit_fails(const char *good, const char *from, const char *to, hsd_status want,
                              const char *n1, const char *n2) {
    size_t len;
    char *raw = slurp(good, &len);
    char *at = memmem(raw, len, from, strlen(from));
    assert_non_null(at);
    memcpy(at, to, strlen(to));
    const char *p = tmp("edited.gguf");
    spit(p, raw, len);
    hsd_transformer *tf = NULL;
    hsd_status s = hsd_gguf_load(p, NULL, &tf);
    printf("  %s -> %s\n", to, hsd_last_error());
    assert_int_equal(s, want);
    assert_null(tf);
    assert_non_null(strstr(hsd_last_error(), n1));
    if (n2) assert_non_null(strstr(hsd_last_error(), n2));
    free(raw);
}

static void test_errors(void **state) {
    (void)state;
    hsd_synth_model *sm;
    assert_int_equal(hsd_synth_create("tiny-gemma3", HSD_DT_F32, 1, &sm), HSD_OK);
    const char *good = tmp("good.gguf");
    assert_int_equal(hsd_synth_write_gguf(sm, good), HSD_OK);
    hsd_synth_free(sm);
    /* general.architecture is the first "gemma3" in the file */
    expect_edit_fails(good, "gemma3", "gemmaX", HSD_ERR_UNSUPPORTED,
                      "unknown architecture 'gemmaX'", "edited.gguf");
    expect_edit_fails(good, "gemma3.block_count", "gemma3.block_cnt_", HSD_ERR_PARSE,
                      "missing metadata key", "'gemma3.block_count'");
    expect_edit_fails(good, "blk.0.post_ffw_norm", "blk.0.post_ffw_xorm", HSD_ERR_PARSE,
                      "post-FFN norm", "layer 0");
    expect_edit_fails(good, "blk.1.attn_q_norm", "blk.1.attn_q_xorm", HSD_ERR_PARSE, "q norm",
                      "layer 1");
    /* a synth shape of an unknown architecture cannot exist: hsd_arch_init names it */
    hsd_tf_config c = {.dim = 64};
    assert_int_equal(hsd_arch_init(&c, "mamba", true, "x.gguf"), HSD_ERR_UNSUPPORTED);
    assert_non_null(strstr(hsd_last_error(), "'mamba'"));
}

/* ---- llama.cpp as the oracle --------------------------------------------------------------- */

#ifdef HSD_HAVE_LLAMA_CPP
static void quiet(enum ggml_log_level level, const char *text, void *ud) {
    (void)ud;
    if (level == GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

/* hsd's parameters for a comparison with llama.cpp: the same KV cache type on both sides
 * (F32 where the comparison measures the weights' arithmetic, since F16 keys round apart
 * where the two arithmetics differ by an ulp and flip near-ties; F16, both defaults, in the
 * cells that measure the default cache). */
static bool cells_no_rot; /* both sides without the quantised caches' rotation */
static hsd_model_params kv_params(int kv) {
    hsd_model_params p = hsd_model_default_params();
    p.kv_no_rotate = cells_no_rot;
    p.kv_type = kv == KV_F16 ? HSD_KV_F16 : kv == KV_Q8_0 ? HSD_KV_Q8_0 : kv == KV_Q4_0 ? HSD_KV_Q4_0 : HSD_KV_F32;
    return p;
}

static float *llama_cpp_logits(const char *path, const int32_t *tok, int32_t n, int32_t V,
                               int kv) {
    struct llama_model_params mp = llama_model_default_params();
    struct llama_model *model = llama_model_load_from_file(path, mp);
    assert_non_null(model);
    assert_int_equal(llama_vocab_n_tokens(llama_model_get_vocab(model)), V);
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 256, cp.n_batch = 256, cp.n_ubatch = 256, cp.n_threads = 2, cp.n_threads_batch = 2;
    /* F32 or F16 (llama.cpp's default) KV without flash attention; Q8_0 KV with it (a
     * quantised V cache needs it) */
    cp.type_k = cp.type_v = kv == KV_F16    ? GGML_TYPE_F16
                            : kv == KV_Q8_0 ? GGML_TYPE_Q8_0
                            : kv == KV_Q4_0 ? GGML_TYPE_Q4_0
                                            : GGML_TYPE_F32;
    cp.flash_attn_type = kv >= KV_Q8_0 ? LLAMA_FLASH_ATTN_TYPE_ENABLED : LLAMA_FLASH_ATTN_TYPE_DISABLED;
    /* llama.cpp reads its switch for the rotation when it builds the cache */
    if (cells_no_rot) setenv("LLAMA_ATTN_ROT_DISABLE", "1", 1);
    struct llama_context *ctx = llama_init_from_model(model, cp);
    unsetenv("LLAMA_ATTN_ROT_DISABLE");
    assert_non_null(ctx);
    struct llama_batch b = llama_batch_init(n, 0, 1);
    for (int32_t i = 0; i < n; i++) {
        b.token[i] = tok[i], b.pos[i] = i, b.n_seq_id[i] = 1, b.seq_id[i][0] = 0, b.logits[i] = 1;
    }
    b.n_tokens = n;
    assert_int_equal(llama_decode(ctx, b), 0);
    float *lg = malloc((size_t)n * V * sizeof *lg);
    for (int32_t i = 0; i < n; i++)
        memcpy(lg + (size_t)i * V, llama_get_logits_ith(ctx, i), (size_t)V * sizeof *lg);
    llama_batch_free(b);
    llama_free(ctx);
    llama_model_free(model);
    return lg;
}

/* One cell: the synth GGUF (F32 or BF16 written by hsd, or F32 quantised by llama.cpp to
 * `ftype`) through llama.cpp and hsd; the bar is cosine >= 0.999 per position and the
 * same argmax on >= 98% of them; F32 files must be far tighter. */
static void llama_cpp_cell(const char *shape, hsd_dtype written, int ftype, const char *tname,
                           double min_cos, int kv) {
    const hsd_model_params kp = kv_params(kv);
    hsd_synth_model *sm;
    assert_int_equal(hsd_synth_create(shape, written, 5, &sm), HSD_OK);
    static const char *kvname[4] = {"F32", "F16", "Q8_0", "Q4_0"};
    if (kv >= KV_Q8_0 && sm->cfg.head_dim % 32) { /* ggml's Q8_0 / Q4_0 rows are whole blocks */
        printf("%-13s %-7s %s KV: skipped, llama.cpp takes no %s cache for head_dim %d\n",
               shape, tname, kvname[kv], kvname[kv], (int)sm->cfg.head_dim);
        hsd_synth_free(sm);
        return;
    }
    const int32_t V = sm->cfg.vocab_size;
    int32_t tok[NTOK];
    tokens(tok, NTOK, V);
    char name[96];
    snprintf(name, sizeof name, "%s-%s.gguf", shape, hsd_dtype_name(written));
    const char *p = tmp(name);
    assert_int_equal(hsd_synth_write_gguf(sm, p), HSD_OK);
    hsd_synth_free(sm);
    if (ftype >= 0) { /* llama.cpp quantises, hsd only reads */
        char q[96];
        snprintf(q, sizeof q, "%s-%s.gguf", shape, tname);
        const char *pq = tmp(q);
        struct llama_model_quantize_params qp = llama_model_quantize_default_params();
        qp.ftype = (enum llama_ftype)ftype;
        qp.nthread = 2;
        assert_int_equal(llama_model_quantize(p, pq, &qp), 0);
        p = pq;
    }
    float *want = llama_cpp_logits(p, tok, NTOK, V, kv);
    hsd_transformer *tf;
    assert_int_equal(hsd_gguf_load(p, &kp, &tf), HSD_OK);
    float *got = hsd_logits(tf, tok, NTOK, 0, false);
    double *wd = malloc((size_t)NTOK * V * sizeof *wd);
    for (size_t i = 0; i < (size_t)NTOK * V; i++) wd[i] = want[i];
    cmp_stats st = compare(got, wd, NTOK, V);
    printf("%-13s %-7s %s KV%s vs llama.cpp: min cosine %.9f, argmax %d/%d (+%d near-tied), max rel "
           "err %.2e\n",
           shape, tname, kvname[kv], cells_no_rot ? " (no rotation)" : "", st.min_cos, st.agree, NTOK, st.near, st.max_rel);
    assert_true(st.min_cos >= min_cos);
    /* the same argmax at >= 98% of the positions outright: hsd multiplies each quantised type
     * with the integer arithmetic llama.cpp's CPU backend uses for it (Q4_0 as its repacked
     * kernels do), so near-ties are no excuse; the near-tied count is printed to say how many
     * of the flips that remain sit at positions llama.cpp itself barely separates */
    assert_true(st.agree >= (int32_t)ceil(0.98 * NTOK));
    free(want), free(got), free(wd);
    hsd_tf_free(tf);
}

/* The llama2.c model m (tokenizer tok) inflated to `shape` (5 layers) twice as Q4_K_M: by
 * `hsd inflate --dtype q4_k_m` into p, and by llama.cpp's own quantiser from the f32
 * inflation into pq. */
static void inflate_q4_k_m_both(const char *m, const char *tok, const char *shape, const char *p,
                                const char *pq) {
    hsd_inflate_params ip = hsd_inflate_default_params();
    ip.shape = shape, ip.tokenizer = tok, ip.n_layers = 5, ip.type = HSD_FTYPE_Q4_K_M;
    assert_int_equal(hsd_inflate_file(m, &ip, p, NULL), HSD_OK);
    ip.type = HSD_FTYPE_F32;
    const char *pf = tmp("inflated-f32.gguf");
    assert_int_equal(hsd_inflate_file(m, &ip, pf, NULL), HSD_OK);
    struct llama_model_quantize_params qp = llama_model_quantize_default_params();
    qp.ftype = LLAMA_FTYPE_MOSTLY_Q4_K_M;
    qp.nthread = 2;
    assert_int_equal(llama_model_quantize(pf, pq, &qp), 0);
    unlink(pf);
}

/* hsd inflate --dtype q4_k_m: the trained babyllama inflated to the llama-3.2-1b width (5
 * layers) as a Q4_K_M GGUF that llama.cpp loads unmodified; llama.cpp and hsd on that file
 * agree as on llama.cpp's own Q4_K_M files (cosine >= 0.999, argmax >= 98%), and the
 * quantised model keeps the exact original's greedy choices (babyllama itself, f32: the
 * inflation is exact, only the quantisation differs) at >= 98% of the positions of a text
 * and no fewer than llama.cpp's own Q4_K_M of the same model (less one), about as closely
 * (worst-position cosine within 0.02 of llama.cpp's quantiser's). */
static void test_inflate_q4_k_m_llama_cpp(void **state) {
    (void)state;
    const char *bm = hsd_test_path("models/babyllama-tok105/model5000.bin"),
               *bt = hsd_test_path("models/babyllama-tok105/tok105.bin");
    HSD_REQUIRE_FILE(bm);
    HSD_REQUIRE_FILE(bt);
    char p[700], pq[700]; /* (tmp's buffer is reused by each call) */
    snprintf(p, sizeof p, "%s", tmp("baby-l1b-q4_k_m.gguf"));
    snprintf(pq, sizeof pq, "%s", tmp("baby-l1b-llama-q4_k_m.gguf"));
    inflate_q4_k_m_both(bm, bt, "llama-3.2-1b", p, pq);
    hsd_transformer *tf, *orig;
    const hsd_model_params kp = kv_params(KV_F32);
    assert_int_equal(hsd_gguf_load(p, &kp, &tf), HSD_OK);
    assert_int_equal(hsd_llama2c_load(bm, &kp, &orig), HSD_OK);
    const int32_t V = hsd_tf_get_config(tf)->vocab_size;
    /* text the model was trained on, not random ids: random ids give flat distributions whose
     * near-ties flip between any two arithmetics (babyllama reads characters) */
    static const char text[] = "Once upon a time, there was a little girl named Lily. She loved "
                               "to play outside in the sun with her dog.";
    hsd_tokenizer *tk;
    assert_int_equal(hsd_tokenizer_load_file(bt, &tk), HSD_OK);
    int32_t *ids = NULL;
    size_t nid = 0;
    assert_int_equal(hsd_tokenizer_encode_alloc(tk, text, strlen(text), true, &ids, &nid), HSD_OK);
    hsd_tokenizer_free(tk);
    assert_true(nid >= NTOK);
    int32_t tok[NTOK];
    memcpy(tok, ids, sizeof tok);
    hsd_free(ids);
    float *want = llama_cpp_logits(p, tok, NTOK, V, KV_F32);
    float *got = hsd_logits(tf, tok, NTOK, 0, false), *ref = hsd_logits(orig, tok, NTOK, 0, false);
    double *wd = calloc((size_t)NTOK * V, sizeof *wd);
    assert_non_null(wd);
    assert_non_null(got);
    assert_non_null(ref);
    for (size_t i = 0; i < (size_t)NTOK * V; i++) wd[i] = want[i];
    cmp_stats st = compare(got, wd, NTOK, V);
    printf("inflated Q4_K_M vs llama.cpp: min cosine %.9f, argmax %d/%d (+%d near-tied)\n",
           st.min_cos, st.agree, NTOK, st.near);
    assert_true(st.min_cos >= 0.999);
    assert_true(st.agree >= (int32_t)ceil(0.98 * NTOK));
    for (size_t i = 0; i < (size_t)NTOK * V; i++) wd[i] = ref[i];
    cmp_stats q = compare(got, wd, NTOK, V);
    printf("inflated Q4_K_M vs babyllama f32: min cosine %.6f, argmax %d/%d (+%d near-tied)\n",
           q.min_cos, q.agree, NTOK, q.near);
    /* llama.cpp's own Q4_K_M quantiser on the same inflated model (written f32), for scale */
    hsd_transformer *lq;
    assert_int_equal(hsd_gguf_load(pq, &kp, &lq), HSD_OK);
    float *lg = hsd_logits(lq, tok, NTOK, 0, false);
    assert_non_null(lg);
    cmp_stats l = compare(lg, wd, NTOK, V);
    printf("llama.cpp's Q4_K_M of it vs babyllama f32: min cosine %.6f, argmax %d/%d (+%d near-tied)\n",
           l.min_cos, l.agree, NTOK, l.near);
    free(lg);
    hsd_tf_free(lq);
    unlink(pq);
    /* the greedy choice survives quantisation as it does llama.cpp's own Q4_K_M (64/64 here),
     * and the worst position's cosine is no worse than llama.cpp's own quantiser's by more
     * than 0.02 (ours 0.954, llama.cpp's 0.921 when written) */
    assert_true(q.agree >= (int32_t)ceil(0.98 * NTOK));
    assert_true(q.agree >= l.agree - 1);
    assert_true(q.min_cos >= l.min_cos - 0.02);
    free(want), free(got), free(ref), free(wd);
    hsd_tf_free(tf), hsd_tf_free(orig);
}

/* hsd inflate --dtype q4_k_m of a model whose widths are not multiples of 256 (stories260K to
 * the smollm-135m shape, 576 wide, 5 layers; the shape of the small drafters whose Q4_K_M
 * files users hold): every matrix gets the type llama.cpp's own Q4_K_M quantiser gives the
 * same model (its fallbacks: Q5_0 for Q4_K, Q8_0 for Q6_K), llama.cpp loads the file
 * unmodified and agrees with hsd on it (cosine >= 0.999, argmax >= 98%), and the greedy
 * choices stay the original's as closely as llama.cpp's own quantisation keeps them. */
static void test_inflate_q4_k_m_narrow_llama_cpp(void **state) {
    (void)state;
    const char *sm = hsd_test_path("models/stories260K/stories260K.bin"),
               *st = hsd_test_path("models/stories260K/tok512.bin");
    HSD_REQUIRE_FILE(sm);
    HSD_REQUIRE_FILE(st);
    char p[700], pq[700];
    snprintf(p, sizeof p, "%s", tmp("stories-smollm-q4_k_m.gguf"));
    snprintf(pq, sizeof pq, "%s", tmp("stories-smollm-llama-q4_k_m.gguf"));
    inflate_q4_k_m_both(sm, st, "smollm-135m", p, pq);
    hsd_transformer *tf, *lq, *orig;
    const hsd_model_params kp = kv_params(KV_F32);
    assert_int_equal(hsd_gguf_load(p, &kp, &tf), HSD_OK);
    assert_int_equal(hsd_gguf_load(pq, &kp, &lq), HSD_OK);
    assert_int_equal(hsd_llama2c_load(sm, &kp, &orig), HSD_OK);
    int n_q5 = 0, n_mats = 0;
    for (int k = 0; k < HSD_T_COUNT; k++)
        for (int32_t l = -1; l < hsd_tf_get_config(tf)->n_layers; l++) {
            const hsd_mat *a = hsd_tf_matrix(tf, (hsd_tkind)k, l),
                          *b = hsd_tf_matrix(lq, (hsd_tkind)k, l);
            if (!a || !b || a->rows <= 1) continue;
            if (a->type != b->type)
                fail_msg("tensor kind %d layer %d: hsd writes %s, llama.cpp's Q4_K_M %s", k, l,
                         hsd_dtype_name(a->type), hsd_dtype_name(b->type));
            n_q5 += a->type == HSD_DT_Q5_0, n_mats++;
        }
    assert_true(n_q5 > 0);
    const int32_t V = hsd_tf_get_config(tf)->vocab_size;
    int32_t tok[NTOK];
    for (int i = 0; i < NTOK; i++) tok[i] = (i * 37 + 5) % V;
    hsd_tokenizer *tk;
    assert_int_equal(hsd_tokenizer_load_file(st, &tk), HSD_OK);
    static const char text[] = "Once upon a time, there was a little girl named Lily. She loved "
                               "to play outside in the sun with her dog. One day, she saw a big "
                               "red ball in the park and ran to get it.";
    int32_t *ids = NULL;
    size_t nid = 0;
    assert_int_equal(hsd_tokenizer_encode_alloc(tk, text, strlen(text), true, &ids, &nid), HSD_OK);
    hsd_tokenizer_free(tk);
    for (size_t i = 0; i < nid && i < NTOK; i++) tok[i] = ids[i]; /* the rest: fixed ids */
    hsd_free(ids);
    float *want = llama_cpp_logits(p, tok, NTOK, V, KV_F32);
    float *got = hsd_logits(tf, tok, NTOK, 0, false), *ref = hsd_logits(orig, tok, NTOK, 0, false),
          *lg = hsd_logits(lq, tok, NTOK, 0, false);
    double *wd = calloc((size_t)NTOK * V, sizeof *wd);
    assert_non_null(wd);
    assert_non_null(got), assert_non_null(ref), assert_non_null(lg);
    for (size_t i = 0; i < (size_t)NTOK * V; i++) wd[i] = want[i];
    cmp_stats c = compare(got, wd, NTOK, V);
    printf("narrow Q4_K_M (%d matrices, %d of them Q5_0, types = llama.cpp's) vs llama.cpp: min "
           "cosine %.9f, argmax %d/%d (+%d near-tied)\n",
           n_mats, n_q5, c.min_cos, c.agree, NTOK, c.near);
    assert_true(c.min_cos >= 0.999);
    assert_true(c.agree >= (int32_t)ceil(0.98 * NTOK));
    for (size_t i = 0; i < (size_t)NTOK * V; i++) wd[i] = ref[i];
    cmp_stats q = compare(got, wd, NTOK, V), l = compare(lg, wd, NTOK, V);
    printf("vs stories260K f32: hsd's Q4_K_M min cosine %.6f, argmax %d/%d; llama.cpp's "
           "%.6f, %d/%d\n",
           q.min_cos, q.agree, NTOK, l.min_cos, l.agree, NTOK);
    assert_true(q.agree >= l.agree - 1);
    assert_true(q.min_cos >= l.min_cos - 0.02);
    unlink(pq);
    free(want), free(got), free(ref), free(lg), free(wd);
    hsd_tf_free(tf), hsd_tf_free(lq), hsd_tf_free(orig);
}

static void test_llama_cpp(void **state) {
    (void)state;
    llama_log_set(quiet, NULL);
    ggml_backend_load_all_from_path(HSD_LLAMA_CPP_LIB);
    llama_backend_init();
    /* llama_ftype values (llama.h) of the files users hold */
    static const struct {
        int ftype;
        const char *name;
    } quant[] = {{7, "Q8_0"}, {18, "Q6_K"}, {17, "Q5_K_M"}, {15, "Q4_K_M"}, {2, "Q4_0"}};
    for (size_t s = 0; s < N_SHAPES; s++) {
        llama_cpp_cell(shapes[s], HSD_DT_F32, -1, "F32", 0.99999, KV_F32);
        llama_cpp_cell(shapes[s], HSD_DT_BF16, -1, "BF16", 0.999, KV_F32);
        /* both defaults: F16 caches (llama.cpp also rounds q and the probabilities to F16
         * in its F16 products, hsd keeps them fp32: hence 1e-4, not 1e-5) */
        llama_cpp_cell(shapes[s], HSD_DT_F32, -1, "F32", 0.9999, KV_F16);
        /* both with Q8_0 caches: the same stored keys and values, but llama.cpp's flash
         * attention also rounds the query to Q8_0 for its integer q.k products (and V's
         * accumulation to F16), hsd keeps both fp32: the bar, 0.999 */
        llama_cpp_cell(shapes[s], HSD_DT_F32, -1, "F32", 0.999, KV_Q8_0);
        /* both with Q4_0 caches: the same 4-bit keys and values (llama.cpp's rounding, after
         * its Hadamard rotation of q, k and v), the query to Q8_0 on both sides; the same bar.
         * Without hsd's rotation this cell read cosine 0.982 and argmax 54 of 64 on
         * tiny-llama: the caches stored different values */
        llama_cpp_cell(shapes[s], HSD_DT_F32, -1, "F32", 0.999, KV_Q4_0);
        /* and both without the rotation (llama.cpp: LLAMA_ATTN_ROT_DISABLE=1) */
        cells_no_rot = true;
        llama_cpp_cell(shapes[s], HSD_DT_F32, -1, "F32", 0.999, KV_Q4_0);
        cells_no_rot = false;
        for (size_t q = 0; q < sizeof quant / sizeof quant[0]; q++)
            llama_cpp_cell(shapes[s], HSD_DT_F32, quant[q].ftype, quant[q].name, 0.999, KV_F32);
    }
    llama_backend_free();
}
#endif /* HSD_HAVE_LLAMA_CPP */

/* GGUF sliding_window_pattern as one flag per layer: writes swa{0,1,2}.gguf (no array; layer 0
 * slides = pattern 2; layer 1 slides) and returns hsd's logits of each in lg[0..3). */
static int32_t swa_files(int32_t *tok, int32_t n, float *lg[3]) {
    hsd_synth_model *sm;
    assert_int_equal(hsd_synth_create("tiny-gemma3", HSD_DT_F32, 9, &sm), HSD_OK);
    const int32_t V = sm->cfg.vocab_size;
    tokens(tok, n, V);
    for (int v = 0; v < 3; v++) {
        char name[32];
        snprintf(name, sizeof name, "swa%d.gguf", v);
        const char *p = tmp(name);
        sm->cfg.swa_layers_set = v > 0;
        memset(sm->cfg.swa_layers, 0, sizeof sm->cfg.swa_layers);
        sm->cfg.swa_layers[0] =
            v == 1 ? 1 : 2; /* v 1: layer 0 slides (= pattern 2); v 2: layer 1 */
        assert_int_equal(hsd_synth_write_gguf(sm, p), HSD_OK);
        hsd_transformer *tf;
        assert_int_equal(hsd_gguf_load(p, NULL, &tf), HSD_OK);
        assert_true(hsd_tf_get_config(tf)->swa_layers_set == (v > 0));
        lg[v] = hsd_logits(tf, tok, n, 0, false);
        hsd_tf_free(tf);
    }
    hsd_synth_free(sm);
    return V;
}

/* The same flags as pattern 2 give the same logits, the opposite flags do not. */
static void test_swa_layer_array(void **state) {
    (void)state;
    const int32_t n = 40;
    int32_t tok[NTOK];
    float *lg[3];
    const int32_t V = swa_files(tok, n, lg);
    assert_memory_equal(lg[0], lg[1], (size_t)n * V * sizeof(float));
    assert_memory_not_equal(lg[0], lg[2], (size_t)n * V * sizeof(float));
    for (int v = 0; v < 3; v++) free(lg[v]);
}

#ifdef HSD_HAVE_LLAMA_CPP
/* llama.cpp reads the per-layer array the same way hsd does. */
static void test_swa_llama_cpp(void **state) {
    (void)state;
    const int32_t n = 40;
    int32_t tok[NTOK];
    float *lg[3];
    const int32_t V = swa_files(tok, n, lg);
    llama_log_set(quiet, NULL);
    ggml_backend_load_all_from_path(HSD_LLAMA_CPP_LIB);
    llama_backend_init();
    for (int v = 1; v < 3; v++) {
        char name[32];
        snprintf(name, sizeof name, "swa%d.gguf", v);
        float *want = llama_cpp_logits(tmp(name), tok, n, V, KV_F32);
        double *wd = malloc((size_t)n * V * sizeof *wd);
        for (size_t i = 0; i < (size_t)n * V; i++) wd[i] = want[i];
        cmp_stats st = compare(lg[v], wd, n, V);
        printf("per-layer flags %d: vs llama.cpp min cosine %.9f, argmax %d/%d\n", v, st.min_cos,
               st.agree, n);
        assert_true(st.min_cos >= 0.99999);
        assert_int_equal(st.agree, n);
        free(want), free(wd);
    }
    llama_backend_free();
    for (int v = 0; v < 3; v++) free(lg[v]);
}
#endif

/* Without arguments: the tests that need nothing outside hsd. With --llama-cpp: the comparisons
 * with llama.cpp (ctest's test_model_arch_llama_cpp), exit 77 (ctest: Skipped) when this build
 * has no llama.cpp. */
int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--llama-cpp")) {
#ifndef HSD_HAVE_LLAMA_CPP
        printf("skipped: llama.cpp not installed; run scripts/install_llama_cpp.sh (then re-run "
               "cmake)\n");
        return 77;
#else
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_swa_llama_cpp),
            cmocka_unit_test(test_inflate_q4_k_m_llama_cpp),
            cmocka_unit_test(test_inflate_q4_k_m_narrow_llama_cpp),
            cmocka_unit_test(test_llama_cpp),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
#endif
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_float64_reference),
        cmocka_unit_test(test_file_roundtrip),
        cmocka_unit_test(test_swa_layer_array),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
