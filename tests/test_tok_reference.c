/* Every shared tokenizer family on every corpus line, id for id against the official HF
 * tokenizers 0.23.2 outputs (../shared/reference): ids, ids_with_special, decoded,
 * decoded_with_special, decoded_skip_special. Prints per-family counts. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "hsd.h"
#include "tests/testutil.h"

static const char *families[] = {"claude", "deepseek_v3", "gemma3",  "gpt2",
                                 "gpt4o",  "gptoss",      "llama2",  "llama3",
                                 "llama3_1", "mistral",   "qwen3",   "synthetic_unigram",
                                 "synthetic_wordpiece"};

static int ids_equal(const int32_t *ids, size_t n, json_t *arr) {
    if (!json_is_array(arr) || json_array_size(arr) != n) return 0;
    for (size_t i = 0; i < n; i++)
        if (json_integer_value(json_array_get(arr, i)) != ids[i]) return 0;
    return 1;
}

static int str_equal(const char *s, size_t n, json_t *v) {
    return json_is_string(v) && json_string_length(v) == n && !memcmp(json_string_value(v), s, n);
}

static void check_family(const char *fam) {
    char tok_rel[256], ref_rel[256];
    snprintf(tok_rel, sizeof tok_rel, "tokenizers/%s/tokenizer.json", fam);
    snprintf(ref_rel, sizeof ref_rel, "reference/%s.jsonl", fam);
    const char *tok_path = hsd_test_path(tok_rel), *ref_path = hsd_test_path(ref_rel);
    assert_true(hsd_test_require(tok_path));
    assert_true(hsd_test_require(ref_path));
    hsd_tokenizer *tok = NULL;
    hsd_status st = hsd_tokenizer_load_file(tok_path, &tok);
    if (st) fprintf(stderr, "%s: %s\n", fam, hsd_last_error());
    assert_int_equal(st, HSD_OK);

    FILE *f = fopen(ref_path, "r");
    assert_non_null(f);
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int lines = 0, bad[5] = {0};
    while ((n = getline(&line, &cap, f)) > 0) {
        json_error_t jerr;
        json_t *r = json_loadb(line, (size_t)n, JSON_ALLOW_NUL, &jerr);
        assert_non_null(r);
        json_t *text = json_object_get(r, "text");
        int32_t *ids = NULL, *ids_sp = NULL;
        size_t nid = 0, nsp = 0;
        char *dec = NULL, *dec_sp = NULL, *dec_skip = NULL;
        size_t ld = 0, lsp = 0, lskip = 0;
        assert_int_equal(hsd_tokenizer_encode_alloc(tok, json_string_value(text),
                                                    json_string_length(text), false, &ids, &nid),
                         HSD_OK);
        assert_int_equal(hsd_tokenizer_encode_alloc(tok, json_string_value(text),
                                                    json_string_length(text), true, &ids_sp, &nsp),
                         HSD_OK);
        assert_int_equal(hsd_tokenizer_decode_alloc(tok, ids, nid, false, &dec, &ld), HSD_OK);
        assert_int_equal(hsd_tokenizer_decode_alloc(tok, ids_sp, nsp, false, &dec_sp, &lsp), HSD_OK);
        assert_int_equal(hsd_tokenizer_decode_alloc(tok, ids_sp, nsp, true, &dec_skip, &lskip),
                         HSD_OK);
        int ok[5] = {ids_equal(ids, nid, json_object_get(r, "ids")),
                     ids_equal(ids_sp, nsp, json_object_get(r, "ids_with_special")),
                     str_equal(dec, ld, json_object_get(r, "decoded")),
                     str_equal(dec_sp, lsp, json_object_get(r, "decoded_with_special")),
                     str_equal(dec_skip, lskip, json_object_get(r, "decoded_skip_special"))};
        for (int k = 0; k < 5; k++)
            if (!ok[k]) {
                if (bad[k]++ < 3)
                    fprintf(stderr, "%s line %d field %d differs: %.60s\n", fam, lines + 1, k,
                            json_string_value(text));
            }
        lines++;
        hsd_free(ids), hsd_free(ids_sp), hsd_free(dec), hsd_free(dec_sp), hsd_free(dec_skip);
        json_decref(r);
    }
    free(line);
    fclose(f);
    printf("%-20s %d lines: ids %d/%d, ids_with_special %d/%d, decoded %d/%d, "
           "decoded_with_special %d/%d, decoded_skip_special %d/%d\n",
           fam, lines, lines - bad[0], lines, lines - bad[1], lines, lines - bad[2], lines,
           lines - bad[3], lines, lines - bad[4], lines);
    hsd_tokenizer_free(tok);
    assert_true(lines > 0);
    for (int k = 0; k < 5; k++) assert_int_equal(bad[k], 0);
}

#define FAMILY_TEST(i)                                                                         \
    static void test_family_##i(void **state) {                                                \
        (void)state;                                                                           \
        check_family(families[i]);                                                             \
    }
FAMILY_TEST(0)
FAMILY_TEST(1)
FAMILY_TEST(2)
FAMILY_TEST(3)
FAMILY_TEST(4)
FAMILY_TEST(5)
FAMILY_TEST(6)
FAMILY_TEST(7)
FAMILY_TEST(8)
FAMILY_TEST(9)
FAMILY_TEST(10)
FAMILY_TEST(11)
FAMILY_TEST(12)

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_family_0),  cmocka_unit_test(test_family_1),
        cmocka_unit_test(test_family_2),  cmocka_unit_test(test_family_3),
        cmocka_unit_test(test_family_4),  cmocka_unit_test(test_family_5),
        cmocka_unit_test(test_family_6),  cmocka_unit_test(test_family_7),
        cmocka_unit_test(test_family_8),  cmocka_unit_test(test_family_9),
        cmocka_unit_test(test_family_10), cmocka_unit_test(test_family_11),
        cmocka_unit_test(test_family_12),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
