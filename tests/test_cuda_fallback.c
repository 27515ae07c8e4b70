/* The CUDA backend where there is no device (this machine, CI): AUTO and CUDA load the model
 * on the CPU, say "no CUDA device, using CPU" through the log callback, and generate exactly
 * the reference ids; an explicit CPU backend says nothing. On a machine with a device the
 * same tests check that the model went to the device and still matches the reference.
 * The host-side argument checks of the CUDA kernels need no device and are tested in both
 * builds (with and without nvcc). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsd.h"
#include "kernels/cuda_ops.h"
#include "models/cuda_model.h"
#include "tests/testutil.h"

typedef struct log_capture {
    int n_notice; /* "CUDA backend not used (<why>); using CPU" at HSD_LOG_INFO */
    char last[512];
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
    if (level == HSD_LOG_INFO && is_fallback_notice(msg)) c->n_notice++;
    snprintf(c->last, sizeof c->last, "%s", msg);
}

static const char *stories(void) {
    return hsd_test_path("models/stories260K/stories260K.bin");
}

static int32_t *ref_greedy(size_t *n) {
    json_error_t err;
    json_t *root = json_load_file(hsd_test_path("models/reference_outputs.json"), 0, &err);
    assert_non_null(root);
    json_t *arr = json_object_get(json_object_get(root, "stories260K"), "greedy_ids");
    assert_true(json_is_array(arr));
    *n = json_array_size(arr);
    int32_t *ids = malloc(*n * sizeof *ids);
    for (size_t i = 0; i < *n; i++) ids[i] = (int32_t)json_integer_value(json_array_get(arr, i));
    json_decref(root);
    return ids;
}

/* Loads stories260K with `backend`, checks where it landed and what was logged, then
 * decodes greedily from BOS and compares with reference_outputs.json. */
static void check_backend(hsd_backend backend) {
    HSD_REQUIRE_FILE(stories());
    HSD_REQUIRE_FILE(hsd_test_path("models/reference_outputs.json"));
    bool device = hsd_cuda_device_count() > 0;
    log_capture cap = {0};
    hsd_log_set(on_log, &cap);
    hsd_model_params p = hsd_model_default_params();
    p.backend = backend;
    hsd_model *m = NULL;
    hsd_status s = hsd_model_load(stories(), &p, &m);
    hsd_log_set(NULL, NULL);
    if (s != HSD_OK) fprintf(stderr, "load: %s\n", hsd_last_error());
    assert_int_equal(s, HSD_OK);
    if (backend == HSD_BACKEND_CPU || !device) {
        assert_int_equal(hsd_model_backend(m), HSD_BACKEND_CPU);
        assert_int_equal(cap.n_notice, backend == HSD_BACKEND_CPU ? 0 : 1);
        /* the notice names why: no device here, or a build without CUDA */
        if (backend != HSD_BACKEND_CPU)
            assert_true(strstr(cap.last, "no CUDA device") || strstr(cap.last, "without CUDA"));
        assert_null(strstr(hsd_model_desc(m), "cuda"));
    } else {
        assert_int_equal(hsd_model_backend(m), HSD_BACKEND_CUDA);
        assert_int_equal(cap.n_notice, 0);
        assert_non_null(strstr(hsd_model_desc(m), "cuda"));
    }
    size_t n_ref;
    int32_t *want = ref_greedy(&n_ref);
    int32_t V = hsd_model_vocab_size(m);
    assert_int_equal(V, 512);
    float *logits = malloc((size_t)V * sizeof *logits);
    int32_t tok = 1; /* BOS */
    for (size_t i = 0; i < n_ref; i++) {
        assert_int_equal(hsd_model_forward(m, &tok, 1, NULL, NULL, 1, logits), HSD_OK);
        int32_t best = 0;
        for (int32_t j = 1; j < V; j++)
            if (logits[j] > logits[best]) best = j;
        if (best != want[i]) fprintf(stderr, "step %zu: got %d, want %d\n", i, best, want[i]);
        assert_int_equal(best, want[i]);
        tok = best;
    }
    assert_int_equal(hsd_model_kv_len(m), (int)n_ref);
    free(logits);
    free(want);
    hsd_model_free(m);
}

static void test_backend_auto(void **state) {
    (void)state;
    check_backend(HSD_BACKEND_AUTO);
}
static void test_backend_cuda(void **state) {
    (void)state;
    check_backend(HSD_BACKEND_CUDA);
}
static void test_backend_cpu(void **state) {
    (void)state;
    check_backend(HSD_BACKEND_CPU);
}

/* The model loaded with NULL params is AUTO too: same notice, same result as the CPU. */
static void test_default_params_fall_back(void **state) {
    (void)state;
    HSD_REQUIRE_FILE(stories());
    if (hsd_cuda_device_count() > 0) skip();
    log_capture cap = {0};
    hsd_log_set(on_log, &cap);
    hsd_model *m = NULL;
    assert_int_equal(hsd_model_load(stories(), NULL, &m), HSD_OK);
    hsd_log_set(NULL, NULL);
    assert_int_equal(cap.n_notice, 1);
    assert_int_equal(hsd_model_backend(m), HSD_BACKEND_CPU);
    /* after the fallback the error message of the failed device open is not left behind */
    assert_string_equal(hsd_last_error(), "");
    hsd_model_free(m);
}

/* The library reads no environment (the CLI maps HSD_BACKEND onto params.backend): with
 * HSD_BACKEND=cpu set, AUTO still tries the device and, without one, says so once. */
static void test_env_ignored(void **state) {
    (void)state;
    HSD_REQUIRE_FILE(stories());
    if (hsd_cuda_device_count() > 0) skip();
    setenv("HSD_BACKEND", "cpu", 1);
    log_capture cap = {0};
    hsd_log_set(on_log, &cap);
    hsd_model *m = NULL;
    assert_int_equal(hsd_model_load(stories(), NULL, &m), HSD_OK);
    assert_int_equal(cap.n_notice, 1); /* AUTO looked for a device: the variable did not apply */
    assert_int_equal(hsd_model_backend(m), HSD_BACKEND_CPU);
    hsd_model_free(m);
    hsd_log_set(NULL, NULL);
    unsetenv("HSD_BACKEND");
}

static void test_bad_backend(void **state) {
    (void)state;
    HSD_REQUIRE_FILE(stories());
    hsd_model_params p = hsd_model_default_params();
    p.backend = (hsd_backend)7;
    hsd_model *m = (hsd_model *)1;
    assert_int_equal(hsd_model_load(stories(), &p, &m), HSD_ERR_INVALID_ARG);
    assert_null(m);
    assert_non_null(strstr(hsd_last_error(), "backend 7"));
    p = hsd_model_default_params();
    p.device_weights = (hsd_ftype)-1;
    assert_int_equal(hsd_model_load(stories(), &p, &m), HSD_ERR_INVALID_ARG);
}

static void test_backend_names(void **state) {
    (void)state;
    assert_int_equal(hsd_backend_parse("auto"), HSD_BACKEND_AUTO);
    assert_int_equal(hsd_backend_parse("cpu"), HSD_BACKEND_CPU);
    assert_int_equal(hsd_backend_parse("cuda"), HSD_BACKEND_CUDA);
    assert_int_equal(hsd_backend_parse("gpu"), -1);
    assert_int_equal(hsd_backend_parse(NULL), -1);
    assert_string_equal(hsd_backend_name(HSD_BACKEND_CUDA), "cuda");
    assert_int_equal(hsd_model_backend(NULL), HSD_BACKEND_CPU);
}

/* Device weight types: AUTO keeps half types, widens Q8_0 to BF16, and keeps F32 only for
 * tiny models; explicit choices win. */
static void test_weight_type_choice(void **state) {
    (void)state;
    assert_int_equal(hsd_cuda_model_weight_type(HSD_FTYPE_AUTO, HSD_DT_F32, 64), HSD_DT_F32);
    assert_int_equal(hsd_cuda_model_weight_type(HSD_FTYPE_AUTO, HSD_DT_F32, 2048), HSD_DT_BF16);
    assert_int_equal(hsd_cuda_model_weight_type(HSD_FTYPE_AUTO, HSD_DT_F16, 2048), HSD_DT_F16);
    assert_int_equal(hsd_cuda_model_weight_type(HSD_FTYPE_AUTO, HSD_DT_BF16, 64), HSD_DT_BF16);
    assert_int_equal(hsd_cuda_model_weight_type(HSD_FTYPE_AUTO, HSD_DT_Q8_0, 64), HSD_DT_BF16);
    assert_int_equal(hsd_cuda_model_weight_type(HSD_FTYPE_F32, HSD_DT_BF16, 4096), HSD_DT_F32);
    assert_int_equal(hsd_cuda_model_weight_type(HSD_FTYPE_F16, HSD_DT_F32, 64), HSD_DT_F16);
    assert_int_equal(hsd_cuda_model_weight_type(HSD_FTYPE_BF16, HSD_DT_F32, 64), HSD_DT_BF16);
}

/* Opening a device where there is none: an error naming why, never a crash. */
static void test_open_without_device(void **state) {
    (void)state;
    if (hsd_cuda_device_count() > 0) skip();
    hsd_cuda *cu = (hsd_cuda *)1;
    assert_int_equal(hsd_cuda_open(0, &cu), HSD_ERR_UNSUPPORTED);
    assert_null(cu);
    if (hsd_cuda_compiled())
        assert_non_null(strstr(hsd_last_error(), "no CUDA device"));
    else
        assert_non_null(strstr(hsd_last_error(), "built without CUDA"));
    assert_string_equal(hsd_cuda_device_desc(NULL), hsd_cuda_compiled() ? "" : "no CUDA device");
}

/* Argument checks run on the host before any device call, identically in both builds.
 * Pointers here are never dereferenced: each call must fail in its checks. */
static void test_kernel_argument_checks(void **state) {
    (void)state;
    float *fake = (float *)(uintptr_t)0x1000; /* stands in for a device pointer */
    int32_t *ifake = (int32_t *)(uintptr_t)0x2000;
    hsd_mat U = {HSD_DT_BF16, 1000, 64, fake, NULL};

    assert_int_equal(hsd_cuda_indexed_head(NULL, fake, &U, fake, ifake, 0), HSD_ERR_INVALID_ARG);
    assert_non_null(strstr(hsd_last_error(), "k = 0"));
    assert_int_equal(hsd_cuda_indexed_head(NULL, fake, &U, fake, NULL, 1001), HSD_ERR_INVALID_ARG);
    assert_non_null(strstr(hsd_last_error(), "1000 rows"));
    assert_int_equal(hsd_cuda_indexed_head(NULL, NULL, &U, fake, ifake, 8), HSD_ERR_INVALID_ARG);
    assert_int_equal(hsd_cuda_indexed_head(NULL, fake, NULL, fake, ifake, 8), HSD_ERR_INVALID_ARG);
    hsd_mat q8 = {HSD_DT_Q8_0, 1000, 64, fake, NULL};
    assert_int_equal(hsd_cuda_indexed_head(NULL, fake, &q8, fake, ifake, 8), HSD_ERR_UNSUPPORTED);
    assert_non_null(strstr(hsd_last_error(), "Q8_0"));
    hsd_mat empty = {HSD_DT_F32, 0, 64, fake, NULL};
    assert_int_equal(hsd_cuda_indexed_head(NULL, fake, &empty, fake, ifake, 8),
                     HSD_ERR_INVALID_ARG);
    assert_non_null(strstr(hsd_last_error(), "[0, 64]"));

    assert_int_equal(hsd_cuda_matmul(NULL, fake, 999, fake, 1, &U, fake), HSD_ERR_INVALID_ARG);
    assert_non_null(strstr(hsd_last_error(), "stride 999"));
    assert_int_equal(hsd_cuda_matmul(NULL, fake, 1000, fake, 1, &U, NULL), HSD_ERR_INVALID_ARG);
    assert_non_null(strstr(hsd_last_error(), "half-precision scratch"));
    assert_int_equal(hsd_cuda_matmul(NULL, fake, 1000, fake, 0, &U, fake), HSD_ERR_INVALID_ARG);

    hsd_cuda_attn_shape bad = {6, 4, 64, 128, 0, HSD_DT_F16}, ok = {8, 4, 64, 128, 0, HSD_DT_F16};
    assert_int_equal(hsd_cuda_attention(NULL, fake, fake, fake, fake, &bad, 1, ifake, NULL, NULL, fake, 1 << 20),
                     HSD_ERR_INVALID_ARG);
    assert_non_null(strstr(hsd_last_error(), "6 heads, 4 kv heads"));
    assert_int_equal(hsd_cuda_attention(NULL, fake, fake, fake, fake, &ok, 129, ifake, NULL, NULL, fake, 1 << 20),
                     HSD_ERR_INVALID_ARG);
    assert_int_equal(hsd_cuda_attention(NULL, fake, fake, fake, fake, &ok, 2, ifake, NULL, ifake, fake, 1 << 20),
                     HSD_ERR_INVALID_ARG);
    assert_non_null(strstr(hsd_last_error(), "ancestor lists"));
    /* a cache type the device has no kernels for is named */
    hsd_cuda_attn_shape kq8 = ok;
    kq8.kv_type = HSD_DT_Q8_0;
    assert_int_equal(hsd_cuda_attention(NULL, fake, fake, fake, fake, &kq8, 1, ifake, NULL, NULL, fake, 1 << 20),
                     HSD_ERR_UNSUPPORTED);
    assert_non_null(strstr(hsd_last_error(), "Q8_0 KV cache"));
    /* the chunks (kernels/cuda_ops.h): at least 128 positions, at most 64 a token, and the
     * work buffer holds one token's worth: per query head and chunk, max, sum and head_dim
     * outputs */
    assert_int_equal(hsd_cuda_attn_chunk(1), 128);
    assert_int_equal(hsd_cuda_attn_chunk(8192), 128);
    assert_int_equal(hsd_cuda_attn_chunk(8193), 256);
    assert_int_equal(hsd_cuda_attn_chunk(131072), 2048);
    /* 3 tokens x 4 KV heads of counters (a 256-byte region), then 3 x 8 heads x 1 chunk */
    assert_int_equal(hsd_cuda_attn_work_bytes(&ok, 3), 256 + (size_t)3 * 8 * 1 * (64 + 2) * sizeof(float));
    hsd_cuda_attn_shape deep = ok;
    deep.n_ctx = 131072;
    assert_int_equal(hsd_cuda_attn_work_bytes(&deep, 1), 256 + (size_t)8 * 64 * (64 + 2) * sizeof(float));
    /* the tokens a buffer holds: every size from one token's to 70 tokens' */
    for (int32_t t = 1; t <= 70; t++) {
        size_t b = hsd_cuda_attn_work_bytes(&deep, t);
        assert_int_equal(hsd_cuda_attn_work_tokens(&deep, b), t);
        assert_int_equal(hsd_cuda_attn_work_tokens(&deep, b - 1), t - 1);
    }
    assert_int_equal(hsd_cuda_attn_work_tokens(&deep, 100), 0);
    /* a missing or short work buffer is named with the size it needs */
    assert_int_equal(hsd_cuda_check_attn_work(&deep, fake, hsd_cuda_attn_work_bytes(&deep, 1) - 1), HSD_ERR_INVALID_ARG);
    assert_non_null(strstr(hsd_last_error(), "work buffer"));
    assert_int_equal(hsd_cuda_check_attn_work(&deep, NULL, 1 << 20), HSD_ERR_INVALID_ARG);
    assert_int_equal(hsd_cuda_check_attn_work(&deep, fake, hsd_cuda_attn_work_bytes(&deep, 1)), HSD_OK);
    assert_int_equal(hsd_cuda_attn_work_init(NULL, fake, 64), HSD_ERR_INVALID_ARG);

    assert_int_equal(hsd_cuda_rmsnorm(NULL, fake, fake, fake, NULL, 0, 64, 1e-5f),
                     HSD_ERR_INVALID_ARG);
    assert_int_equal(hsd_cuda_argmax(NULL, ifake, NULL, 1, 10), HSD_ERR_INVALID_ARG);
    assert_int_equal(hsd_cuda_softmax(NULL, fake, 1, 0, 1.0f), HSD_ERR_INVALID_ARG);
    assert_int_equal(hsd_cuda_topk(NULL, ifake, fake, 10, 11), HSD_ERR_INVALID_ARG);
    assert_non_null(strstr(hsd_last_error(), "k = 11 of V = 10"));
    assert_int_equal(hsd_cuda_topk(NULL, NULL, fake, 10, 5), HSD_ERR_INVALID_ARG);

    /* arguments that pass the checks: the call then needs a device handle (CUDA build) or a
     * CUDA build (stub), and says which */
    hsd_status s = hsd_cuda_indexed_head(NULL, fake, &U, fake, ifake, 8);
    if (hsd_cuda_compiled()) {
        assert_int_equal(s, HSD_ERR_INVALID_ARG);
        assert_non_null(strstr(hsd_last_error(), "NULL device handle"));
    } else {
        assert_int_equal(s, HSD_ERR_UNSUPPORTED);
        assert_non_null(strstr(hsd_last_error(), "built without CUDA"));
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_backend_auto),        cmocka_unit_test(test_backend_cuda),
        cmocka_unit_test(test_backend_cpu),         cmocka_unit_test(test_default_params_fall_back),
        cmocka_unit_test(test_env_ignored),        cmocka_unit_test(test_bad_backend),
        cmocka_unit_test(test_backend_names),       cmocka_unit_test(test_weight_type_choice),
        cmocka_unit_test(test_open_without_device), cmocka_unit_test(test_kernel_argument_checks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
