/* Rows of tests/test_api_errors.c (main, API branch) for the draft-head API of include/hsd.h:
 * every function called wrongly. That file fails for a public function without a row, so on
 * merging put `#include "tests/api_rows_heads.h"` after its fixtures and EXPECT, and
 * HSD_API_ROWS_HEADS at the end of its `rows` table. Uses its fixtures: model_t (a
 * caller-provided toy model: no heads, no timings), eng_pair (drafter ids 2..5 spell "c", "b",
 * "a", " ", all in the target) and eng_ar (no drafter). */
#ifndef HSD_TESTS_API_ROWS_HEADS_H
#define HSD_TESTS_API_ROWS_HEADS_H

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

#define HSD_API_ROWS_HEADS                                                                         \
    ROW(hsd_head_default_params), ROW(hsd_head_kind_name), ROW(hsd_model_set_head),                \
        ROW(hsd_model_head_desc), ROW(hsd_model_save_head), ROW(hsd_model_get_timing),             \
        ROW(hsd_model_reset_timing), ROW(hsd_engine_overlap_ids)

#endif
