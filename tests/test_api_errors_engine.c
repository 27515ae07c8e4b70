/* Every public engine function called wrongly (see test_api_errors.c for the contract and the
 * guard that every function in include/hsd.h has a row): algorithms, parameters, the engine,
 * generation results, draft heads and timing. Split from test_api_errors.c by concept. */
#include "tests/api_errors_fixture.h"

/* ---- engine --------------------------------------------------------------------------- */

static void row_hsd_algo_name(void **state) {
    (void)state;
    assert_string_equal(hsd_algo_name(HSD_ALGO_SLEM), "slem");
    assert_string_equal(hsd_algo_name((hsd_algo)-1), "?");
    assert_string_equal(hsd_algo_name((hsd_algo)(HSD_ALGO_AUTO + 1)), "?");
}

static void row_hsd_stop_reason_name(void **state) {
    (void)state;
    assert_string_equal(hsd_stop_reason_name(HSD_STOP_EOS), "eos");
    assert_string_equal(hsd_stop_reason_name(HSD_STOP_CALLBACK), "callback");
    assert_string_equal(hsd_stop_reason_name((hsd_stop_reason)-1), "?");
    assert_string_equal(hsd_stop_reason_name((hsd_stop_reason)(HSD_STOP_CALLBACK + 1)), "?");
}

static void row_hsd_algo_parse(void **state) {
    (void)state;
    assert_int_equal(hsd_algo_parse(NULL), -1);
    assert_int_equal(hsd_algo_parse(""), -1);
    assert_int_equal(hsd_algo_parse("SLEM"), -1); /* names are lower case */
    assert_int_equal(hsd_algo_parse("?"), -1);
    assert_int_equal(hsd_algo_parse("tli"), HSD_ALGO_TLI);
}

static void row_hsd_gen_default_params(void **state) {
    (void)state;
    hsd_gen_params p = hsd_gen_default_params();
    assert_int_equal(p.algo, HSD_ALGO_AUTO);
    assert_int_equal(p.max_new_tokens, 128);
    assert_int_equal(p.n_draft, 4);
    assert_int_equal(p.n_stop, 0);
    assert_null(p.stop);
}

static void row_hsd_engine_init(void **state) {
    (void)state;
    hsd_engine *e = (hsd_engine *)1;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_init(model_t, tok_t, NULL, NULL, NULL));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_init(NULL, tok_t, NULL, NULL, &e));
    assert_null(e);
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_init(model_t, NULL, NULL, NULL, &e));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_init(model_t, tok_t, model_d, NULL, &e));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_init(model_t, tok_t, NULL, tok_d, &e));
    /* a model that reports no vocabulary */
    toy z;
    hsd_model_iface f = toy_iface(&z, 0);
    hsd_model *empty;
    assert_int_equal(hsd_model_from_iface(&f, &empty), HSD_OK);
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_init(empty, tok_t, NULL, NULL, &e));
    assert_null(e);
    hsd_model_free(empty);
    /* models without a context size (no n_ctx callback), as target and as drafter */
    toy nc;
    f = toy_iface(&nc, 8);
    f.n_ctx = NULL;
    hsd_model *no_ctx;
    assert_int_equal(hsd_model_from_iface(&f, &no_ctx), HSD_OK);
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_init(no_ctx, tok_t, NULL, NULL, &e));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_init(model_t, tok_t, no_ctx, tok_t, &e));
    assert_non_null(strstr(hsd_last_error(), "drafter"));
    assert_null(e);
    hsd_model_free(no_ctx);
}

static void row_hsd_engine_free(void **state) {
    (void)state;
    hsd_engine_free(NULL);
}

static void row_hsd_engine_auto_algo(void **state) {
    (void)state;
    char reason[160] = "x";
    assert_int_equal(hsd_engine_auto_algo(NULL, reason, sizeof reason), HSD_ALGO_AR);
    assert_non_null(strstr(reason, "no drafter"));
    assert_int_equal(hsd_engine_auto_algo(eng_ar, NULL, 0), HSD_ALGO_AR);
    /* a 1-byte buffer holds just the terminator */
    assert_int_not_equal(hsd_engine_auto_algo(eng_pair, reason, 1), HSD_ALGO_AR);
    assert_int_equal(reason[0], 0);
    hsd_algo a = hsd_engine_auto_algo(eng_pair, reason, 0); /* cap 0: nothing written */
    assert_true(a == HSD_ALGO_TLI || a == HSD_ALGO_SLEM || a == HSD_ALGO_SLRS);
}

static void row_hsd_engine_overlap(void **state) {
    (void)state;
    assert_int_equal(hsd_engine_overlap(NULL), 0);
    assert_int_equal(hsd_engine_overlap(eng_ar), 0);
    /* "c", "b", "a", " " are in both vocabularies (specials are not counted) */
    assert_int_equal(hsd_engine_overlap(eng_pair), 4);
}

static void row_hsd_engine_reset(void **state) {
    (void)state;
    hsd_engine_reset(NULL);
}

static void row_hsd_engine_set_eos_ids(void **state) {
    (void)state;
    int32_t ids[2] = {1, 2};
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_set_eos_ids(NULL, ids, 2));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_set_eos_ids(eng_ar, NULL, 2));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_set_eos_ids(eng_ar, ids, -1));
    int32_t bad[1] = {1 << 30};
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_set_eos_ids(eng_ar, bad, 1));
    assert_int_equal(hsd_engine_set_eos_ids(eng_ar, ids, 2), HSD_OK);
    assert_int_equal(hsd_engine_set_eos_ids(eng_ar, NULL, 0), HSD_OK); /* cleared */
}

static void row_hsd_engine_generate(void **state) {
    (void)state;
    hsd_engine_reset(eng_pair);
    hsd_gen_result r = HSD_GEN_RESULT_INIT;
    hsd_gen_params p = hsd_gen_default_params();
    p.max_new_tokens = 4;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_generate(NULL, "ab", 2, &p, &r));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_generate(eng_pair, "ab", 2, &p, NULL));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_generate(eng_pair, NULL, 2, &p, &r));
    assert_null(r.ids);
    assert_null(r.text);
    struct {
        const char *what;
        hsd_gen_params p;
    } bad[16];
    int nb = 0;
    for (int i = 0; i < 16; i++) bad[i].p = p;
    bad[nb].what = "max_new_tokens -1", bad[nb++].p.max_new_tokens = -1;
    bad[nb].what = "n_draft 0", bad[nb++].p.n_draft = 0;
    bad[nb].what = "n_draft 64", bad[nb++].p.n_draft = 64;
    bad[nb].what = "k_max 0", bad[nb].p.adaptive_k = true, bad[nb++].p.k_max = 0;
    bad[nb].what = "k_max 1000", bad[nb].p.adaptive_k = true, bad[nb++].p.k_max = 1000;
    bad[nb].what = "algo -1", bad[nb++].p.algo = (hsd_algo)-1;
    bad[nb].what = "algo 99", bad[nb++].p.algo = (hsd_algo)99;
    bad[nb].what = "temp NaN", bad[nb++].p.temp = NAN;
    bad[nb].what = "top_p NaN", bad[nb++].p.top_p = NAN;
    bad[nb].what = "n_stop -1", bad[nb++].p.n_stop = -1;
    bad[nb].what = "stop NULL", bad[nb++].p.n_stop = 2;
    bad[nb].what = "SD across vocabularies", bad[nb++].p.algo = HSD_ALGO_SD;
    bad[nb].what = "n_ctx -1", bad[nb++].p.n_ctx = -1;
    bad[nb].what = "slrs_lookahead 3", bad[nb++].p.slrs_lookahead = 3;
    const char *one[1] = {"ab"};
    for (int i = 0; i < nb; i++) {
        hsd_error_clear();
        hsd_status s = hsd_engine_generate(eng_pair, "ab", 2, &bad[i].p, &r);
        if (s != HSD_ERR_INVALID_ARG)
            fail_msg("%s: got %s (%s)", bad[i].what, hsd_status_str(s), hsd_last_error());
        assert_true(hsd_last_error()[0] != 0);
        assert_null(r.ids);
        /* the batch entry point checks the same (one check for both) */
        hsd_error_clear();
        s = hsd_engine_generate_batch(eng_pair, one, NULL, 1, &bad[i].p, &r);
        if (s != HSD_ERR_INVALID_ARG)
            fail_msg("batch, %s: got %s (%s)", bad[i].what, hsd_status_str(s), hsd_last_error());
        assert_true(hsd_last_error()[0] != 0);
        assert_null(r.ids);
    }
    p.algo = HSD_ALGO_SLEM; /* needs a drafter */
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_generate(eng_ar, "ab", 2, &p, &r));
    p.algo = HSD_ALGO_TLI;
    EXPECT(HSD_ERR_INVALID_UTF8, hsd_engine_generate(eng_pair, "a\x80", 2, &p, &r));
    assert_null(r.ids);
    /* the same engine still works after all those failures; the toy target counts up from
     * the prompt's last id ("ab" = 6), wrapping past the specials: abc, a, b, c */
    p.add_bos = false;
    p.stop_at_eos = false;
    assert_int_equal(hsd_engine_generate(eng_pair, "ab", 2, &p, &r), HSD_OK);
    assert_int_equal(r.n_ids, 4);
    const int32_t want[4] = {7, 2, 3, 4};
    assert_memory_equal(r.ids, want, sizeof want);
    hsd_gen_result_free(&r);
}

static void row_hsd_gen_result_free(void **state) {
    (void)state;
    hsd_gen_result_free(NULL);
    hsd_gen_result r = HSD_GEN_RESULT_INIT;
    memset(&r, 0, sizeof r);
    hsd_gen_result_free(&r);
    hsd_gen_result_free(&r); /* twice is harmless */
    assert_null(r.ids);
}

/* ---- draft heads ---- */
static void row_hsd_head_default_params(void **state) {
    (void)state;
    hsd_head_params p = hsd_head_default_params();
    assert_int_equal(p.kind, HSD_HEAD_FULL);
    assert_int_equal(p.top_k, 2048);
    assert_int_equal(p.rank, 0);
    assert_null(p.keep_ids);
    assert_null(p.factors_path);
    assert_null(p.calib_tokens);
}

static void row_hsd_head_kind_name(void **state) {
    (void)state;
    assert_string_equal(hsd_head_kind_name(HSD_HEAD_SPECULATIVE), "speculative");
    assert_string_equal(hsd_head_kind_name((hsd_head_kind)99), "?");
}

static void row_hsd_model_set_head(void **state) {
    (void)state;
    hsd_head_params p = hsd_head_default_params();
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_set_head(NULL, &p));
    EXPECT(HSD_ERR_UNSUPPORTED, hsd_model_set_head(model_t, &p));
    EXPECT(HSD_ERR_UNSUPPORTED, hsd_model_set_head(model_t, NULL));
}

static void row_hsd_model_set_head_spec(void **state) {
    (void)state;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_set_head_spec(NULL, "full", NULL, 0));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_set_head_spec(model_t, NULL, NULL, 0));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_set_head_spec(model_t, "full", NULL, 2));
    const char *bad[] = {
        "",       "bogus",    "full:x",  "trim",    "trim:",      "spec",      "spec:0",
        "spec:x", "spec:8/y", "spec:8:", "lowrank", "lowrank:-1", "lowrank:4x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        EXPECT(HSD_ERR_INVALID_ARG, hsd_model_set_head_spec(model_t, bad[i], NULL, 0));
        assert_non_null(strstr(hsd_last_error(), bad[i])); /* the message names the spec */
    }
    /* the TLI head is not a spec: hsd_engine_set_tli_head is the one way to install it */
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_set_head_spec(model_t, "tli", NULL, 0));
    assert_non_null(strstr(hsd_last_error(), "hsd_engine_set_tli_head"));
    EXPECT(HSD_ERR_IO,
           hsd_model_set_head_spec(model_t, "trim:/nonexistent/ids.txt", NULL, 0));
    char path[] = "/tmp/hsd_api_ids_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "3\n# comment\nfour\n", 18), 18);
    close(fd);
    char spec[64];
    snprintf(spec, sizeof spec, "trim:%s", path);
    EXPECT(HSD_ERR_PARSE, hsd_model_set_head_spec(model_t, spec, NULL, 0));
    assert_non_null(strstr(hsd_last_error(), ":3:")); /* file and line */
    unlink(path);
    /* well-formed, but a caller-provided model has no head to replace */
    EXPECT(HSD_ERR_UNSUPPORTED, hsd_model_set_head_spec(model_t, "full", NULL, 0));
    EXPECT(HSD_ERR_UNSUPPORTED, hsd_model_set_head_spec(model_t, "spec:4/2", NULL, 0));
}

static void row_hsd_model_head_desc(void **state) {
    (void)state;
    assert_string_equal(hsd_model_head_desc(NULL), "full");
    assert_string_equal(hsd_model_head_desc(model_t), "full");
}

static void row_hsd_model_save_head(void **state) {
    (void)state;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_save_head(NULL, "/tmp/x.safetensors"));
    EXPECT(HSD_ERR_UNSUPPORTED, hsd_model_save_head(model_t, "/tmp/x.safetensors"));
}

static void row_hsd_model_get_timing(void **state) {
    (void)state;
    hsd_model_timing t;
    memset(&t, 0xff, sizeof t);
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_get_timing(NULL, &t));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_get_timing(model_t, NULL));
    EXPECT(HSD_ERR_UNSUPPORTED, hsd_model_get_timing(model_t, &t));
    assert_int_equal(t.n_forward, 0);
    assert_true(t.head_ms == 0 && t.backbone_ms == 0);
}

static void row_hsd_model_reset_timing(void **state) {
    (void)state;
    hsd_model_reset_timing(NULL);
    hsd_model_reset_timing(model_t);
}

static void row_hsd_engine_overlap_ids(void **state) {
    (void)state;
    int32_t ids[8], n = -1;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_overlap_ids(NULL, ids, 8, &n));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_overlap_ids(eng_pair, ids, 8, NULL));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_overlap_ids(eng_pair, NULL, 8, &n));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_overlap_ids(eng_ar, ids, 8, &n));
    EXPECT(HSD_ERR_BUFFER_TOO_SMALL, hsd_engine_overlap_ids(eng_pair, NULL, 0, &n));
    assert_int_equal(n, 4);
    EXPECT(HSD_ERR_BUFFER_TOO_SMALL, hsd_engine_overlap_ids(eng_pair, ids, 3, &n));
    assert_int_equal(hsd_engine_overlap_ids(eng_pair, ids, 8, &n), HSD_OK);
    assert_int_equal(n, 4);
    for (int i = 0; i < 4; i++) assert_int_equal(ids[i], 2 + i);
}

static void row_hsd_engine_set_tli_head(void **state) {
    (void)state;
    const int32_t some[2] = {2, 3};
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_set_tli_head(NULL, NULL, 0));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_set_tli_head(eng_ar, NULL, 0)); /* no drafter */
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_set_tli_head(eng_pair, NULL, 2));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_set_tli_head(eng_pair, some, -1));
    const int32_t outside[1] = {0}; /* not in T ∩ D (the toy pair's overlap is 2..5) */
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_set_tli_head(eng_pair, outside, 1));
    /* the toy drafter is caller-provided: it has no head to replace */
    EXPECT(HSD_ERR_UNSUPPORTED, hsd_engine_set_tli_head(eng_pair, some, 2));
}

/* ---- running batch (behaviour on real models: test_engine_step.c) ---------------------- */

static void row_hsd_batch_default_params(void **state) {
    (void)state;
    hsd_batch_params p = hsd_batch_default_params();
    assert_int_equal(p.size, sizeof p);
    assert_int_equal(p.n_slots, 0);
}

static void row_hsd_batch_init(void **state) {
    (void)state;
    hsd_batch *b = (hsd_batch *)1;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_batch_init(NULL, NULL, &b));
    assert_null(b);
    EXPECT(HSD_ERR_INVALID_ARG, hsd_batch_init(eng_pair, NULL, NULL));
    hsd_batch_params p = hsd_batch_default_params();
    p.n_slots = 2; /* the toy models have one slot */
    EXPECT(HSD_ERR_INVALID_ARG, hsd_batch_init(eng_pair, &p, &b));
    p.n_slots = 0;
    p.size = 1;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_batch_init(eng_pair, &p, &b));
    assert_int_equal(hsd_batch_init(eng_pair, NULL, &b), HSD_OK);
    assert_int_equal(hsd_batch_n_slots(b), 1);
    hsd_batch_free(b);
}

static void row_hsd_batch_free(void **state) {
    (void)state;
    hsd_batch_free(NULL);
}

static void row_hsd_batch_add(void **state) {
    (void)state;
    hsd_batch *b;
    int64_t id;
    assert_int_equal(hsd_batch_init(eng_pair, NULL, &b), HSD_OK);
    EXPECT(HSD_ERR_INVALID_ARG, hsd_batch_add(NULL, "ab", 2, NULL, &id));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_batch_add(b, "ab", 2, NULL, NULL));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_batch_add(b, NULL, 2, NULL, &id));
    EXPECT(HSD_ERR_INVALID_UTF8, hsd_batch_add(b, "a\x80", 2, NULL, &id));
    hsd_gen_params p = hsd_gen_default_params();
    p.n_draft = 64;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_batch_add(b, "ab", 2, &p, &id));
    assert_int_equal(hsd_batch_n_active(b), 0);
    assert_int_equal(hsd_batch_add(b, "ab", 2, NULL, &id), HSD_OK);
    EXPECT(HSD_ERR_BUFFER_TOO_SMALL, hsd_batch_add(b, "ab", 2, NULL, &id)); /* one slot */
    hsd_batch_free(b);
}

static void row_hsd_batch_add_ids(void **state) {
    (void)state;
    hsd_batch *b;
    int64_t id;
    const int32_t bad[1] = {1 << 20};
    assert_int_equal(hsd_batch_init(eng_pair, NULL, &b), HSD_OK);
    EXPECT(HSD_ERR_INVALID_ARG, hsd_batch_add_ids(NULL, bad, 1, NULL, &id));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_batch_add_ids(b, NULL, 1, NULL, &id));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_batch_add_ids(b, bad, 1, NULL, NULL));
    EXPECT(HSD_ERR_OUT_OF_RANGE, hsd_batch_add_ids(b, bad, 1, NULL, &id));
    assert_int_equal(hsd_batch_n_active(b), 0);
    hsd_batch_free(b);
}

static void row_hsd_batch_step(void **state) {
    (void)state;
    const hsd_batch_event *ev = (const hsd_batch_event *)1;
    int32_t n = 5;
    hsd_batch *b;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_batch_step(NULL, &ev, &n));
    assert_null(ev);
    assert_int_equal(n, 0);
    assert_int_equal(hsd_batch_init(eng_pair, NULL, &b), HSD_OK);
    EXPECT(HSD_ERR_INVALID_ARG, hsd_batch_step(b, NULL, &n));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_batch_step(b, &ev, NULL));
    assert_int_equal(hsd_batch_step(b, &ev, &n), HSD_OK); /* nothing active: no events */
    assert_int_equal(n, 0);
    hsd_batch_free(b);
}

static void row_hsd_batch_cancel(void **state) {
    (void)state;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_batch_cancel(NULL, 0));
    hsd_batch *b;
    assert_int_equal(hsd_batch_init(eng_pair, NULL, &b), HSD_OK);
    EXPECT(HSD_ERR_INVALID_ARG, hsd_batch_cancel(b, 0));
    hsd_batch_free(b);
}

static void row_hsd_batch_n_active(void **state) {
    (void)state;
    assert_int_equal(hsd_batch_n_active(NULL), 0);
}

static void row_hsd_batch_n_slots(void **state) {
    (void)state;
    assert_int_equal(hsd_batch_n_slots(NULL), 0);
}

int main(void) {
    const struct CMUnitTest rows[] = {HSD_API_ROWS_ENGINE(HSD_API_ROW_CASE)};
    return hsd_api_rows_run("api_errors_engine", NULL, rows, sizeof rows / sizeof rows[0]);
}
