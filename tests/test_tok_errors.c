/* Bad input gets a clear error that names the file, field or byte offset; nothing crashes.
 * (Runs under ASan+UBSan with `make asan`.) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsd.h"
#include "tests/testutil.h"

static hsd_status load_str(const char *json, hsd_tokenizer **t) {
    return hsd_tokenizer_load_memory(json, strlen(json), HSD_TOKENIZER_HF_JSON, "bad.json", t);
}

/* A minimal valid tokenizer.json the error cases are derived from. */
#define MINI_MODEL                                                                             \
    "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\"ab\":2},\"merges\":[\"a b\"]}"

static void expect_error(const char *json, hsd_status want, const char *needle) {
    hsd_tokenizer *t = (hsd_tokenizer *)1;
    hsd_status s = load_str(json, &t);
    if (s != want || !strstr(hsd_last_error(), needle))
        fprintf(stderr, "status %s, message: %s\n(wanted %s containing '%s')\n", hsd_status_str(s),
                hsd_last_error(), hsd_status_str(want), needle);
    assert_int_equal(s, want);
    assert_null(t);
    assert_non_null(strstr(hsd_last_error(), needle));
    assert_non_null(strstr(hsd_last_error(), "bad.json"));
}

static void test_minimal_valid(void **state) {
    (void)state;
    hsd_tokenizer *t = NULL;
    assert_int_equal(load_str("{" MINI_MODEL "}", &t), HSD_OK);
    int32_t ids[4];
    size_t n;
    assert_int_equal(hsd_tokenizer_encode(t, "abab", 4, false, ids, 4, &n), HSD_OK);
    assert_int_equal(n, 2);
    assert_int_equal(ids[0], 2);
    assert_int_equal(ids[1], 2);
    hsd_tokenizer_free(t);
}

static void test_json_syntax(void **state) {
    (void)state;
    expect_error("{\"model\": {\"type\": \"BPE\",", HSD_ERR_PARSE, "byte");
    expect_error("{\"model\": tru}", HSD_ERR_PARSE, "byte 10");
    expect_error("{\"a\":\"\\uD800\"}", HSD_ERR_PARSE, "surrogate");
    expect_error("{\"a\":1} x", HSD_ERR_PARSE, "trailing");
    expect_error("[1,2,]", HSD_ERR_PARSE, "unexpected character");
}

static void test_truncations_never_crash(void **state) {
    (void)state;
    const char *full = "{\"normalizer\":{\"type\":\"NFC\"},\"pre_tokenizer\":{\"type\":\"ByteLevel\"},"
                       "\"added_tokens\":[{\"id\":3,\"content\":\"<s>\",\"special\":true}]," MINI_MODEL
                       ",\"decoder\":{\"type\":\"ByteLevel\"}}";
    size_t n = strlen(full);
    for (size_t k = 0; k < n; k++) {
        hsd_tokenizer *t = NULL;
        hsd_status s = hsd_tokenizer_load_memory(full, k, HSD_TOKENIZER_HF_JSON, "bad.json", &t);
        assert_int_not_equal(s, HSD_OK);
        assert_null(t);
        assert_true(strlen(hsd_last_error()) > 0);
    }
    hsd_tokenizer *t = NULL;
    assert_int_equal(hsd_tokenizer_load_memory(full, n, HSD_TOKENIZER_HF_JSON, "ok", &t), HSD_OK);
    hsd_tokenizer_free(t);
}

static void test_unknown_components(void **state) {
    (void)state;
    expect_error("{\"normalizer\":{\"type\":\"Fancy\"}," MINI_MODEL "}", HSD_ERR_UNSUPPORTED,
                 "normalizer");
    expect_error("{\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Digits\"},"
                 "{\"type\":\"Nope\"}]}," MINI_MODEL "}",
                 HSD_ERR_UNSUPPORTED, "pre_tokenizer.pretokenizers[1]");
    expect_error("{\"decoder\":{\"type\":\"CTC\"}," MINI_MODEL "}", HSD_ERR_UNSUPPORTED, "decoder");
    expect_error("{\"model\":{\"type\":\"Quantum\",\"vocab\":{\"a\":0}}}", HSD_ERR_UNSUPPORTED,
                 "Quantum");
    expect_error("{\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":{\"Regex\":\"(\"},"
                 "\"behavior\":\"Isolated\"}," MINI_MODEL "}",
                 HSD_ERR_UNSUPPORTED, "regex does not compile");
}

static void test_bad_fields(void **state) {
    (void)state;
    expect_error("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[\"a zz\"]}}",
                 HSD_ERR_PARSE, "model.merges[0]");
    expect_error("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":\"x\"},\"merges\":[]}}",
                 HSD_ERR_PARSE, "model.vocab");
    expect_error("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[\"ab\"]}}",
                 HSD_ERR_PARSE, "has no space");
    expect_error("{\"added_tokens\":[{\"id\":1}]," MINI_MODEL "}", HSD_ERR_PARSE,
                 "added_tokens[0]");
    expect_error("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[],"
                 "\"unk_token\":\"<unk>\"}}",
                 HSD_ERR_PARSE, "unk_token");
    expect_error("{\"nomodel\":1}", HSD_ERR_PARSE, "model");
}

static void test_invalid_utf8_and_ids(void **state) {
    (void)state;
    hsd_tokenizer *t = NULL;
    assert_int_equal(load_str("{" MINI_MODEL "}", &t), HSD_OK);
    int32_t *ids = NULL;
    size_t n = 0;
    const char bad[] = "ab\xC3\x28";
    assert_int_equal(hsd_tokenizer_encode_alloc(t, bad, 4, false, &ids, &n), HSD_ERR_INVALID_UTF8);
    assert_non_null(strstr(hsd_last_error(), "byte offset 2"));
    assert_null(ids);
    const char trunc[] = "a\xE2\x82";
    assert_int_equal(hsd_tokenizer_encode_alloc(t, trunc, 3, false, &ids, &n), HSD_ERR_INVALID_UTF8);
    assert_non_null(strstr(hsd_last_error(), "byte offset 1"));
    int32_t out_of_range[] = {0, 7};
    char *text = NULL;
    assert_int_equal(hsd_tokenizer_decode_alloc(t, out_of_range, 2, false, &text, NULL),
                     HSD_ERR_OUT_OF_RANGE);
    assert_non_null(strstr(hsd_last_error(), "id 7 at index 1"));
    int32_t neg[] = {-1};
    assert_int_equal(hsd_tokenizer_decode_alloc(t, neg, 1, false, &text, NULL), HSD_ERR_OUT_OF_RANGE);
    assert_null(text);
    /* a buffer that is too small reports the size needed */
    int32_t one[1];
    assert_int_equal(hsd_tokenizer_encode(t, "abab", 4, false, one, 1, &n), HSD_ERR_BUFFER_TOO_SMALL);
    assert_int_equal(n, 2);
    /* NULL arguments */
    assert_int_equal(hsd_tokenizer_encode_alloc(NULL, "a", 1, false, &ids, &n), HSD_ERR_INVALID_ARG);
    assert_int_equal(hsd_tokenizer_decode_alloc(t, NULL, 3, false, &text, NULL), HSD_ERR_INVALID_ARG);
    assert_null(hsd_tokenizer_id_to_token(t, 99));
    assert_null(hsd_tokenizer_token_bytes(t, -3, &n));
    hsd_tokenizer_free(t);
    hsd_tokenizer_free(NULL);
}

static void test_missing_file(void **state) {
    (void)state;
    hsd_tokenizer *t = (hsd_tokenizer *)1;
    assert_int_equal(hsd_tokenizer_load_file("/nonexistent/dir/tokenizer.json", &t), HSD_ERR_IO);
    assert_null(t);
    assert_non_null(strstr(hsd_last_error(), "/nonexistent/dir/tokenizer.json"));
    assert_int_equal(hsd_tokenizer_load_file("/tmp", &t), HSD_ERR_IO);
    assert_int_equal(hsd_tokenizer_load_memory("", 0, HSD_TOKENIZER_AUTO, "empty.json", &t),
                     HSD_ERR_PARSE);
    assert_non_null(strstr(hsd_last_error(), "empty.json"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_minimal_valid),   cmocka_unit_test(test_json_syntax),
        cmocka_unit_test(test_truncations_never_crash), cmocka_unit_test(test_unknown_components),
        cmocka_unit_test(test_bad_fields),      cmocka_unit_test(test_invalid_utf8_and_ids),
        cmocka_unit_test(test_missing_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
