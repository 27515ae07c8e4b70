/* The CUDA model's orchestration (models/cuda_model.c) without a GPU: this test links
 * tests/cuda_emu.c, the whole kernel interface of kernels/cuda_ops.h as plain host code
 * written from the header's contracts, so the linker takes those definitions instead of the
 * library's (the .cu files or the no-CUDA stub). The "device" is host memory. Then the CUDA model
 * must give the CPU transformer's logits through prefill, token trees, kv_keep, decode steps,
 * truncation and row subsets, for Llama and Qwen2 shapes; it must say so when graph capture is
 * refused and fall back to eager steps; and hsd_model_load with backend CUDA must put a real model
 * on this "device" and reproduce its reference greedy ids. What it does not test is the CUDA
 * kernels themselves: bench/gpu.sh checks those on a GPU. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsd.h"
#include "hsd_tools.h"
#include "kernels/cpu_ops.h"
#include "kernels/cuda_ops.h"
#include "kernels/matmul.h"
#include "lib/base/error.h"
#include "models/cuda_model.h"
#include "models/synth.h"
#include "models/transformer.h"
#include "tests/cuda_emu.h"
#include "tests/testutil.h"

/* ---- tests ------------------------------------------------------------------------- */

typedef struct log_capture {
    int n_graph_warn, n_notice, n_kv_notice;
} log_capture;

/* The fallback notice names its reason: no device (CUDA's own words), a build without CUDA,
 * or what the device model cannot run. */
static bool is_fallback_notice(const char *msg) {
    const char *head = "CUDA backend not used (", *tail = "); using CPU";
    size_t n = strlen(msg), nt = strlen(tail);
    return !strncmp(msg, head, strlen(head)) && n > strlen(head) + nt &&
           !strcmp(msg + n - nt, tail);
}

static void on_log(hsd_log_level level, const char *msg, void *user) {
    log_capture *c = user;
    if (level == HSD_LOG_WARN && strstr(msg, "graph capture failed")) c->n_graph_warn++;
    if (is_fallback_notice(msg)) c->n_notice++;
    if (strstr(msg, "KV cache runs on the CPU only; the device keeps an F16 cache")) c->n_kv_notice++;
}

static double max_rel(const float *a, const float *b, size_t n) {
    double d = 0, m = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(a[i])) return INFINITY;
        d = fmax(d, fabs((double)a[i] - b[i]));
        m = fmax(m, fabs((double)b[i]));
    }
    return m > 0 ? d / m : INFINITY;
}

/* The CPU transformer and the CUDA model over the same synth weights, step by step. */
static void compare_shape_kv(const char *shape, hsd_dtype dt, hsd_ftype dev_w, hsd_kv_type kv,
                             double tol) {
    hsd_synth_model *sm;
    assert_int_equal(hsd_synth_create(shape, dt, 11, &sm), HSD_OK);
    hsd_model_params p = hsd_model_default_params();
    p.n_ctx = 40;
    p.device_weights = dev_w;
    p.kv_type = kv; /* the same cache type on both sides */
    hsd_transformer *tf;
    assert_int_equal(hsd_synth_to_transformer(sm, &p, &tf), HSD_OK);
    hsd_model_iface c, g;
    hsd_tf_iface(tf, &c);
    char desc[512];
    int live_before = hsd_emu_live_allocs;
    assert_int_equal(hsd_cuda_model_create(tf, &p, &g, desc, sizeof desc), HSD_OK);
    assert_non_null(strstr(desc, "cuda: host emulation"));
    const char *kv_desc = kv == HSD_KV_F32 ? "F32 KV on device" : kv == HSD_KV_BF16 ? "BF16 KV on device" : "F16 KV on device";
    assert_non_null(strstr(desc, kv_desc));
    assert_int_equal(g.vocab_size(g.ctx), c.vocab_size(c.ctx));
    assert_int_equal(g.n_ctx(g.ctx), 40);
    int32_t V = c.vocab_size(c.ctx), toks[16];
    for (int i = 0; i < 16; i++) toks[i] = (i * 37 + 5) % V;
    float *lc = malloc(sizeof(float) * 16 * V), *lg = malloc(sizeof(float) * 16 * V);
    log_capture cap = {0};
    hsd_log_set(on_log, &cap);

    /* prefill, all rows */
    assert_int_equal(c.forward(c.ctx, toks, 9, NULL, NULL, 9, lc), HSD_OK);
    assert_int_equal(g.forward(g.ctx, toks, 9, NULL, NULL, 9, lg), HSD_OK);
    assert_true(max_rel(lg, lc, (size_t)9 * V) < tol);
    /* a token tree with two roots, then keep one path of it */
    int32_t parents[6] = {-1, 0, 0, 1, 2, -1}, keep[3] = {0, 2, 4};
    assert_int_equal(c.forward(c.ctx, toks + 9, 6, parents, NULL, 6, lc), HSD_OK);
    assert_int_equal(g.forward(g.ctx, toks + 9, 6, parents, NULL, 6, lg), HSD_OK);
    assert_true(max_rel(lg, lc, (size_t)6 * V) < tol);
    assert_int_equal(c.kv_keep(c.ctx, 9, keep, 3), HSD_OK);
    assert_int_equal(g.kv_keep(g.ctx, 9, keep, 3), HSD_OK);
    assert_int_equal(g.kv_len(g.ctx), 12);
    /* decode steps: the graph path, refused here, so eager after one warning */
    for (int s = 0; s < 4; s++) {
        assert_int_equal(c.forward(c.ctx, toks + s, 1, NULL, NULL, 1, lc), HSD_OK);
        assert_int_equal(g.forward(g.ctx, toks + s, 1, NULL, NULL, 1, lg), HSD_OK);
        assert_true(max_rel(lg, lc, V) < tol);
    }
    assert_int_equal(cap.n_graph_warn, 1);
    /* truncate, then a chain with a subset of rows in a new order, and one without logits */
    assert_int_equal(c.kv_truncate(c.ctx, 5), HSD_OK);
    assert_int_equal(g.kv_truncate(g.ctx, 5), HSD_OK);
    int32_t rows[3] = {3, 0, 3};
    assert_int_equal(c.forward(c.ctx, toks + 4, 4, NULL, rows, 3, lc), HSD_OK);
    assert_int_equal(g.forward(g.ctx, toks + 4, 4, NULL, rows, 3, lg), HSD_OK);
    assert_true(max_rel(lg, lc, (size_t)3 * V) < tol);
    assert_int_equal(c.forward(c.ctx, toks, 2, NULL, NULL, 0, NULL), HSD_OK);
    assert_int_equal(g.forward(g.ctx, toks, 2, NULL, NULL, 0, NULL), HSD_OK);
    assert_int_equal(c.forward(c.ctx, toks + 1, 1, NULL, NULL, 1, lc), HSD_OK);
    assert_int_equal(g.forward(g.ctx, toks + 1, 1, NULL, NULL, 1, lg), HSD_OK);
    assert_true(max_rel(lg, lc, V) < tol);
    /* the same argument errors as the CPU path */
    int32_t bad = V;
    assert_int_equal(g.forward(g.ctx, &bad, 1, NULL, NULL, 1, lg), HSD_ERR_OUT_OF_RANGE);
    assert_non_null(strstr(hsd_last_error(), "outside the vocabulary"));
    int32_t bad_parents[2] = {-1, 1};
    assert_int_equal(g.forward(g.ctx, toks, 2, bad_parents, NULL, 2, lg), HSD_ERR_INVALID_ARG);
    assert_int_equal(g.kv_truncate(g.ctx, 99), HSD_ERR_OUT_OF_RANGE);
    int32_t bad_keep[2] = {1, 1};
    assert_int_equal(g.kv_keep(g.ctx, 0, bad_keep, 2), HSD_ERR_OUT_OF_RANGE);
    int32_t many[40] = {0};
    assert_int_equal(g.forward(g.ctx, many, 40, NULL, NULL, 0, NULL), HSD_ERR_OUT_OF_RANGE);
    assert_non_null(strstr(hsd_last_error(), "exceed the context of 40"));
    hsd_log_set(NULL, NULL);

    g.free(g.ctx);
    assert_int_equal(hsd_emu_live_allocs, live_before); /* every device buffer freed */
    free(lc), free(lg);
    hsd_tf_free(tf);
    hsd_synth_free(sm);
}

static void compare_shape(const char *shape, hsd_dtype dt, hsd_ftype dev_w, double tol) {
    compare_shape_kv(shape, dt, dev_w, HSD_KV_F32, tol);
}

static void test_llama_f32(void **state) {
    (void)state;
    compare_shape("tiny", HSD_DT_F32, HSD_FTYPE_AUTO, 1e-4);
}
static void test_qwen2_f32_bias_tied(void **state) {
    (void)state;
    compare_shape("tiny-qwen2", HSD_DT_F32, HSD_FTYPE_AUTO, 1e-4);
}
/* Qwen3: per-head q/k RMSNorm before rope (hsd_cuda_head_norm), tied embeddings. */
static void test_qwen3_f32_qk_norm(void **state) {
    (void)state;
    compare_shape("tiny-qwen3", HSD_DT_F32, HSD_FTYPE_AUTO, 1e-4);
}
/* Phi-3: fused q/k/v and gate/up in the file, restacked on upload as for every model. */
static void test_phi3_f32_fused(void **state) {
    (void)state;
    compare_shape("tiny-phi3", HSD_DT_F32, HSD_FTYPE_AUTO, 1e-4);
}
/* BF16 file, BF16 on the device: the same stored values on both sides; but on an AVX-512
 * BF16 CPU the CPU kernels round the activations to bf16 (vdpbf16ps, kernels/matmul.h) where
 * the emulated device multiplies fp32 ones: 2^-9 relative per product, ~1e-3 in logits. */
static void test_llama_bf16(void **state) {
    (void)state;
    compare_shape("small", HSD_DT_BF16, HSD_FTYPE_AUTO,
                  hsd_mm_isa_default() >= HSD_MM_AVX512 ? 1e-2 : 1e-4);
}
/* Q8_0 widened to BF16 on upload: now the device's weights differ by BF16 rounding. */
static void test_q8_0_to_bf16(void **state) {
    (void)state;
    compare_shape("tiny", HSD_DT_Q8_0, HSD_FTYPE_AUTO, 3e-2);
}

/* F16 and BF16 caches (F16 is the default on both sides): the device stores k and v rounded
 * as the CPU does, so only the attention's summation order differs */
static void test_f16_cache(void **state) {
    (void)state;
    compare_shape_kv("tiny", HSD_DT_F32, HSD_FTYPE_AUTO, HSD_KV_F16, 1e-4);
}
static void test_bf16_cache(void **state) {
    (void)state;
    compare_shape_kv("tiny-qwen3", HSD_DT_F32, HSD_FTYPE_AUTO, HSD_KV_BF16, 1e-4);
}

/* hsd_model_load with backend CUDA puts a real checkpoint on the "device": no fallback
 * notice, the description says cuda, and greedy decoding gives the reference ids. */
static void test_model_load_on_device(void **state) {
    (void)state;
    const char *path = hsd_test_path("models/stories260K/stories260K.bin");
    HSD_REQUIRE_FILE(path);
    HSD_REQUIRE_FILE(hsd_test_path("models/reference_outputs.json"));
    json_error_t err;
    json_t *root = json_load_file(hsd_test_path("models/reference_outputs.json"), 0, &err);
    assert_non_null(root);
    json_t *arr = json_object_get(json_object_get(root, "stories260K"), "greedy_ids");
    size_t n_ref = json_array_size(arr);
    assert_true(n_ref >= 100);
    log_capture cap = {0};
    hsd_log_set(on_log, &cap);
    hsd_model_params p = hsd_model_default_params();
    p.backend = HSD_BACKEND_CUDA;
    hsd_model *m;
    assert_int_equal(hsd_model_load(path, &p, &m), HSD_OK);
    assert_int_equal(hsd_model_backend(m), HSD_BACKEND_CUDA);
    assert_non_null(strstr(hsd_model_desc(m), "[cuda: host emulation, F32 weights and F16 KV on device]"));
    assert_int_equal(cap.n_notice, 0);
    assert_int_equal(cap.n_kv_notice, 0);
    float logits[512];
    int32_t tok = 1;
    for (size_t i = 0; i < n_ref; i++) {
        assert_int_equal(hsd_model_forward(m, &tok, 1, NULL, NULL, 1, logits), HSD_OK);
        int32_t best = 0;
        for (int32_t j = 1; j < 512; j++)
            if (logits[j] > logits[best]) best = j;
        assert_int_equal(best, (int32_t)json_integer_value(json_array_get(arr, i)));
        tok = best;
    }
    hsd_model_free(m);
    /* a quantised cache has no device kernels: F16 there, and a notice says so */
    p.kv_type = HSD_KV_Q4_0;
    assert_int_equal(hsd_model_load(path, &p, &m), HSD_OK);
    assert_int_equal(hsd_model_backend(m), HSD_BACKEND_CUDA);
    assert_non_null(strstr(hsd_model_desc(m), "F16 KV on device"));
    assert_int_equal(cap.n_kv_notice, 1);
    hsd_log_set(NULL, NULL);
    hsd_model_free(m);
    json_decref(root);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_llama_f32),
        cmocka_unit_test(test_qwen2_f32_bias_tied),
        cmocka_unit_test(test_qwen3_f32_qk_norm),
        cmocka_unit_test(test_phi3_f32_fused),
        cmocka_unit_test(test_llama_bf16),
        cmocka_unit_test(test_q8_0_to_bf16),
        cmocka_unit_test(test_f16_cache),
        cmocka_unit_test(test_bf16_cache),
        cmocka_unit_test(test_model_load_on_device),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
