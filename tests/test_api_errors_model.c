/* Every public model function called wrongly (see test_api_errors.c for the contract and the
 * guard that every function in include/hsd.h has a row): loading, the model interface, the KV
 * cache, sequence slots and batches. Split from test_api_errors.c by concept. */
#include "tests/api_errors_fixture.h"

/* ---- models --------------------------------------------------------------------------- */

static void row_hsd_model_default_params(void **state) {
    (void)state;
    hsd_model_params p = hsd_model_default_params();
    assert_int_equal(p.n_ctx, 0);
    assert_true(p.n_threads >= 0);
    assert_true(p.use_mmap);
}

static void row_hsd_model_load(void **state) {
    (void)state;
    hsd_model *m = (hsd_model *)1;
    hsd_model_params p = hsd_model_default_params();
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_load(NULL, NULL, &m));
    assert_null(m);
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_load("model.bin", NULL, NULL));
    EXPECT(HSD_ERR_IO, hsd_model_load("/nonexistent/model.bin", NULL, &m));
    assert_null(m);
    p.n_ctx = -1;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_load("/nonexistent/model.bin", &p, &m));
    p = hsd_model_default_params();
    p.n_threads = -4;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_load("/nonexistent/model.bin", &p, &m));
    p.n_threads = 1 << 30;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_load("/nonexistent/model.bin", &p, &m));
    /* a file that is no model: 12 bytes of text, too short for any header */
    char path[] = "/tmp/hsd_api_errors_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "not a model\n", 12), 12);
    close(fd);
    hsd_status s = hsd_model_load(path, NULL, &m);
    assert_true(s == HSD_ERR_PARSE || s == HSD_ERR_UNSUPPORTED);
    assert_true(hsd_last_error()[0] != 0);
    assert_null(m);
    unlink(path);
}

static void row_hsd_model_from_iface(void **state) {
    (void)state;
    toy t;
    hsd_model_iface f = toy_iface(&t, 8);
    hsd_model *m = (hsd_model *)1;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_from_iface(NULL, &m));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_from_iface(&f, NULL));
    hsd_model_iface g = f;
    g.forward = NULL;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_from_iface(&g, &m));
    g = f;
    g.vocab_size = NULL;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_from_iface(&g, &m));
    g = f;
    g.kv_len = NULL;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_from_iface(&g, &m));
    g = f;
    g.kv_truncate = NULL;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_from_iface(&g, &m));
}

static void row_hsd_model_free(void **state) {
    (void)state;
    hsd_model_free(NULL);
}

static void row_hsd_model_vocab_size(void **state) {
    (void)state;
    assert_int_equal(hsd_model_vocab_size(NULL), 0);
    assert_int_equal(hsd_model_vocab_size(model_t), 8);
}
static void row_hsd_model_n_ctx(void **state) {
    (void)state;
    assert_int_equal(hsd_model_n_ctx(NULL), 0);
    assert_int_equal(hsd_model_n_ctx(model_t), 64);
}
static void row_hsd_model_n_ctx_train(void **state) {
    (void)state;
    assert_int_equal(hsd_model_n_ctx_train(NULL), 0);
    /* a caller-provided model does not say what it was trained for */
    assert_int_equal(hsd_model_n_ctx_train(model_t), 0);
}
static void row_hsd_model_desc(void **state) {
    (void)state;
    assert_string_equal(hsd_model_desc(NULL), "");
    assert_true(strlen(hsd_model_desc(model_t)) > 0);
}
static void row_hsd_model_backend(void **state) {
    (void)state;
    assert_int_equal(hsd_model_backend(NULL), HSD_BACKEND_CPU);
    /* a caller-provided model runs wherever its callbacks run: reported as CPU */
    assert_int_equal(hsd_model_backend(model_t), HSD_BACKEND_CPU);
}
static void row_hsd_backend_name(void **state) {
    (void)state;
    assert_string_equal(hsd_backend_name(HSD_BACKEND_CUDA), "cuda");
    assert_string_equal(hsd_backend_name((hsd_backend)-1), "?");
    assert_string_equal(hsd_backend_name((hsd_backend)(HSD_BACKEND_CUDA + 1)), "?");
}
static void row_hsd_backend_parse(void **state) {
    (void)state;
    assert_int_equal(hsd_backend_parse(NULL), -1);
    assert_int_equal(hsd_backend_parse(""), -1);
    assert_int_equal(hsd_backend_parse("CUDA"), -1);
    assert_int_equal(hsd_backend_parse("cpu"), HSD_BACKEND_CPU);
}
static void row_hsd_cpu_kernels_name(void **state) {
    (void)state;
    assert_string_equal(hsd_cpu_kernels_name(HSD_CPU_KERNELS_AMX), "amx");
    assert_string_equal(hsd_cpu_kernels_name(HSD_CPU_KERNELS_AUTO), "auto");
    assert_string_equal(hsd_cpu_kernels_name((hsd_cpu_kernels)-1), "?");
    assert_string_equal(hsd_cpu_kernels_name((hsd_cpu_kernels)(HSD_CPU_KERNELS_AMX + 1)), "?");
}
static void row_hsd_cpu_kernels_parse(void **state) {
    (void)state;
    assert_int_equal(hsd_cpu_kernels_parse(NULL), -1);
    assert_int_equal(hsd_cpu_kernels_parse(""), -1);
    assert_int_equal(hsd_cpu_kernels_parse("AVX2"), -1);
    assert_int_equal(hsd_cpu_kernels_parse("avx512"), HSD_CPU_KERNELS_AVX512);
    assert_int_equal(hsd_cpu_kernels_parse("scalar"), HSD_CPU_KERNELS_SCALAR);
}
static void row_hsd_cpu_kernels_active(void **state) {
    (void)state;
    hsd_cpu_kernels k = hsd_cpu_kernels_active();
    assert_true(k >= HSD_CPU_KERNELS_SCALAR && k <= HSD_CPU_KERNELS_AMX); /* never AUTO */
    /* an unknown level is refused by the load, before the file is looked at */
    hsd_model_params p = hsd_model_default_params();
    hsd_model *m = (hsd_model *)1;
    p.cpu_kernels = (hsd_cpu_kernels)(HSD_CPU_KERNELS_AMX + 1);
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_load("/nonexistent/model.bin", &p, &m));
    assert_null(m);
    assert_int_equal(hsd_cpu_kernels_active(), k); /* and changes nothing */
}
static void row_hsd_cpu_kernels_features(void **state) {
    (void)state;
    const char *f = hsd_cpu_kernels_features();
    assert_non_null(f);
    assert_true(strlen(f) > 0);
    /* the level is consistent with the features named */
    if (hsd_cpu_kernels_active() == HSD_CPU_KERNELS_AMX) assert_non_null(strstr(f, "amx_int8"));
    if (hsd_cpu_kernels_active() >= HSD_CPU_KERNELS_AVX2) assert_non_null(strstr(f, "avx2"));
}
/* ---- sequence slots and batches ---- */
static void row_hsd_model_n_seq(void **state) {
    (void)state;
    assert_int_equal(hsd_model_n_seq(NULL), 0);
    assert_int_equal(hsd_model_n_seq(model_t), 1); /* an iface without slots has one */
}
static void row_hsd_model_seq_current(void **state) {
    (void)state;
    assert_int_equal(hsd_model_seq_current(NULL), 0);
    assert_int_equal(hsd_model_seq_current(model_t), 0);
}
static void row_hsd_model_seq_select(void **state) {
    (void)state;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_seq_select(NULL, 0));
    EXPECT(HSD_ERR_OUT_OF_RANGE, hsd_model_seq_select(model_t, 1));
    EXPECT(HSD_ERR_OUT_OF_RANGE, hsd_model_seq_select(model_t, -1));
    assert_int_equal(hsd_model_seq_select(model_t, 0), HSD_OK);
}
static void row_hsd_model_forward_batch(void **state) {
    (void)state;
    hsd_engine_reset(eng_pair);
    assert_int_equal(hsd_model_kv_truncate(model_t, 0), HSD_OK);
    const int32_t tok[2] = {2, 3}, oob[1] = {8};
    float logits[2 * 8];
    hsd_model_batch_seq one = {.size = sizeof(hsd_model_batch_seq), .seq = 0, .tokens = tok, .n = 2, .n_rows = 2};
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_forward_batch(NULL, &one, 1, logits));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_forward_batch(model_t, NULL, 1, logits));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_forward_batch(model_t, &one, 0, logits));
    hsd_model_batch_seq bad = one;
    bad.seq = 1; /* the toy model has one slot */
    EXPECT(HSD_ERR_OUT_OF_RANGE, hsd_model_forward_batch(model_t, &bad, 1, logits));
    hsd_model_batch_seq twice[2] = {one, one};
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_forward_batch(model_t, twice, 2, logits));
    bad = one;
    bad.tokens = oob, bad.n = 1, bad.n_rows = 1;
    EXPECT(HSD_ERR_OUT_OF_RANGE, hsd_model_forward_batch(model_t, &bad, 1, logits));
    assert_int_equal(hsd_model_kv_len(model_t), 0);
    assert_int_equal(hsd_model_forward_batch(model_t, &one, 1, logits), HSD_OK);
    assert_int_equal(hsd_model_kv_len(model_t), 2);
    assert_int_equal(hsd_model_kv_truncate(model_t, 0), HSD_OK);
}
static void row_hsd_engine_generate_batch(void **state) {
    (void)state;
    hsd_engine_reset(eng_pair);
    hsd_gen_result r[2];
    hsd_gen_results_init(r, 2);
    hsd_gen_params p = hsd_gen_default_params();
    p.max_new_tokens = 4;
    const char *prompts[2] = {"ab", "ba"};
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_generate_batch(NULL, prompts, NULL, 1, &p, r));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_generate_batch(eng_pair, NULL, NULL, 1, &p, r));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_generate_batch(eng_pair, prompts, NULL, 1, &p, NULL));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_generate_batch(eng_pair, prompts, NULL, 0, &p, r));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_generate_batch(eng_pair, prompts, NULL, -3, &p, r));
    /* the toy models have one slot: two prompts need two */
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_generate_batch(eng_pair, prompts, NULL, 2, &p, r));
    p.max_new_tokens = -1;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_generate_batch(eng_pair, prompts, NULL, 1, &p, r));
    assert_null(r[0].ids);
    p.max_new_tokens = 4;
    /* the checks hsd_engine_generate makes, made once for both (issue 14: the batch copy
     * skipped these and dereferenced the NULL stop list) */
    p.n_stop = 2;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_generate_batch(eng_pair, prompts, NULL, 1, &p, r));
    p.n_stop = 0;
    p.temp = NAN;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_generate_batch(eng_pair, prompts, NULL, 1, &p, r));
    p.temp = 0;
    p.n_ctx = -1;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_generate_batch(eng_pair, prompts, NULL, 1, &p, r));
    p.n_ctx = 0;
    p.slrs_lookahead = 3;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_generate_batch(eng_pair, prompts, NULL, 1, &p, r));
    p.slrs_lookahead = 0;
    assert_null(r[0].ids);
    p.algo = HSD_ALGO_AR;
    assert_int_equal(hsd_engine_generate_batch(eng_pair, prompts, NULL, 1, &p, r), HSD_OK);
    assert_int_equal(r[0].n_ids, 4);
    assert_int_equal(r[0].stop_reason, HSD_STOP_MAX_TOKENS);
    hsd_gen_result_free(&r[0]);
}

static void row_hsd_model_kv_len(void **state) {
    (void)state;
    assert_int_equal(hsd_model_kv_len(NULL), 0);
}

static void row_hsd_model_forward(void **state) {
    (void)state;
    hsd_engine_reset(eng_pair); /* the engine rows share model_t */
    assert_int_equal(hsd_model_kv_truncate(model_t, 0), HSD_OK);
    const int32_t tok[3] = {2, 3, 4}, oob[2] = {2, 8}, neg[1] = {-1};
    const int32_t rows_bad[1] = {3}, par_bad[3] = {-1, 1, 0}, par_neg[3] = {-1, -2, 0};
    float logits[3 * 8];
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_forward(NULL, tok, 3, NULL, NULL, 3, logits));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_forward(model_t, NULL, 3, NULL, NULL, 3, logits));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_forward(model_t, tok, 0, NULL, NULL, 0, logits));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_forward(model_t, tok, -1, NULL, NULL, 0, logits));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_forward(model_t, tok, 3, NULL, NULL, -1, logits));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_forward(model_t, tok, 3, NULL, NULL, 4, logits));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_forward(model_t, tok, 3, NULL, NULL, 2, logits));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_forward(model_t, tok, 3, NULL, NULL, 3, NULL));
    EXPECT(HSD_ERR_OUT_OF_RANGE, hsd_model_forward(model_t, oob, 2, NULL, NULL, 2, logits));
    EXPECT(HSD_ERR_OUT_OF_RANGE, hsd_model_forward(model_t, neg, 1, NULL, NULL, 1, logits));
    EXPECT(HSD_ERR_OUT_OF_RANGE, hsd_model_forward(model_t, tok, 3, NULL, rows_bad, 1, logits));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_forward(model_t, tok, 3, par_bad, NULL, 3, logits));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_forward(model_t, tok, 3, par_neg, NULL, 3, logits));
    int32_t many[65];
    for (int i = 0; i < 65; i++) many[i] = 2;
    EXPECT(HSD_ERR_OUT_OF_RANGE, hsd_model_forward(model_t, many, 65, NULL, NULL, 0, NULL));
    /* none of the failures touched the cache */
    assert_int_equal(hsd_model_kv_len(model_t), 0);
    assert_int_equal(hsd_model_forward(model_t, tok, 3, NULL, NULL, 3, logits), HSD_OK);
    assert_int_equal(hsd_model_kv_len(model_t), 3);
    assert_true(logits[2 * 8 + 5] > logits[2 * 8 + 4]); /* after 4 comes 5 */
}

static void row_hsd_model_kv_truncate(void **state) {
    (void)state;
    hsd_engine_reset(eng_pair);
    const int32_t tok[3] = {2, 3, 4};
    assert_int_equal(hsd_model_kv_truncate(model_t, 0), HSD_OK);
    assert_int_equal(hsd_model_forward(model_t, tok, 3, NULL, NULL, 0, NULL), HSD_OK);
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_kv_truncate(NULL, 0));
    EXPECT(HSD_ERR_OUT_OF_RANGE, hsd_model_kv_truncate(model_t, -1));
    EXPECT(HSD_ERR_OUT_OF_RANGE, hsd_model_kv_truncate(model_t, 4));
    EXPECT(HSD_ERR_OUT_OF_RANGE, hsd_model_kv_truncate(model_t, INT32_MAX));
    assert_int_equal(hsd_model_kv_len(model_t), 3);
    assert_int_equal(hsd_model_kv_truncate(model_t, 1), HSD_OK);
    assert_int_equal(hsd_model_kv_len(model_t), 1);
}

static void row_hsd_model_kv_keep(void **state) {
    (void)state;
    hsd_engine_reset(eng_pair);
    const int32_t tok[4] = {2, 3, 4, 5}, k_ok[2] = {0, 2}, k_oob[1] = {3}, k_neg[1] = {-1},
                  k_dec[2] = {1, 0}, k_dup[2] = {1, 1};
    assert_int_equal(hsd_model_kv_truncate(model_t, 0), HSD_OK);
    assert_int_equal(hsd_model_forward(model_t, tok, 4, NULL, NULL, 0, NULL), HSD_OK);
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_kv_keep(NULL, 1, k_ok, 2));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_kv_keep(model_t, 1, NULL, 2));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_kv_keep(model_t, 1, k_ok, -1));
    EXPECT(HSD_ERR_OUT_OF_RANGE, hsd_model_kv_keep(model_t, -1, k_ok, 2));
    EXPECT(HSD_ERR_OUT_OF_RANGE, hsd_model_kv_keep(model_t, 5, k_ok, 2));
    EXPECT(HSD_ERR_OUT_OF_RANGE, hsd_model_kv_keep(model_t, 1, k_oob, 1)); /* 1 + 3 = kv_len */
    EXPECT(HSD_ERR_OUT_OF_RANGE, hsd_model_kv_keep(model_t, 1, k_neg, 1));
    EXPECT(HSD_ERR_OUT_OF_RANGE, hsd_model_kv_keep(model_t, 1, k_dec, 2));
    EXPECT(HSD_ERR_OUT_OF_RANGE, hsd_model_kv_keep(model_t, 1, k_dup, 2));
    EXPECT(HSD_ERR_UNSUPPORTED, hsd_model_kv_keep(model_nokeep, 0, NULL, 0));
    assert_int_equal(hsd_model_kv_len(model_t), 4);
    /* keep entries 1+0 and 1+2 of [2 3 4 5]: the cache becomes [2 3 5] */
    assert_int_equal(hsd_model_kv_keep(model_t, 1, k_ok, 2), HSD_OK);
    assert_int_equal(hsd_model_kv_len(model_t), 3);
    assert_int_equal(toy_t.kv[2], 5);
}

int main(void) {
    const struct CMUnitTest rows[] = {HSD_API_ROWS_MODEL(HSD_API_ROW_CASE)};
    return hsd_api_rows_run("api_errors_model", NULL, rows, sizeof rows / sizeof rows[0]);
}
