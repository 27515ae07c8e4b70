/* GGUF vocabularies hsd writes (models/gguf_vocab.c) against their source: every shared
 * tokenizer.json family is written to a vocabulary-only GGUF, read back with hsd's GGUF
 * tokenizer, and every corpus line must give the HF tokenizers 0.23.2 outputs
 * (../shared/reference: ids, ids_with_special, decoded) — or the write is refused, with a
 * message naming the stage of the tokenizer.json pipeline that a GGUF cannot hold.
 *
 * Which families are refused is read off their tokenizer.json (the table below says what in
 * each file llama.cpp's vocabulary has no equivalent for); a refusal of any other family,
 * or a refusal with another reason, fails. Padding ids (the model's rows past the tokenizer)
 * must come back unused: no string, no surface, not decodable. Prints one line per family. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "hsd.h"
#include "models/gguf_vocab.h"
#include "tests/testutil.h"

typedef struct family {
    const char *name;
    /* NULL: must be written and reproduce the reference; else the refusal must name this */
    const char *refused_for;
} family;

static const family families[] = {
    {"claude", "normalizer NFKC"},  /* "normalizer": {"type": "NFKC"} */
    {"deepseek_v3", NULL},
    {"gemma3", NULL},
    {"gpt2", NULL},
    /* their Split regex is HF's form of llama.cpp's "gpt-4o", which llama.cpp runs as a rewrite
     * that splits combining marks off (bench/gguf_vocab.sh: 12 of 399 lines differ there) */
    {"gpt4o", "combining marks"},
    {"gptoss", "combining marks"},
    {"llama2", NULL},
    {"llama3", NULL},
    {"llama3_1", NULL},
    {"mistral", NULL},
    {"qwen3", "normalizer NFC"},    /* "normalizer": {"type": "NFC"} */
    {"synthetic_unigram", "model Unigram"},
    {"synthetic_wordpiece", "model WordPiece"},
};

enum { PAD = 7 }; /* rows past the tokenizer's ids, as a model with a padded embedding has */

static int ids_equal(const int32_t *ids, size_t n, json_t *arr) {
    if (!json_is_array(arr) || json_array_size(arr) != n) return 0;
    for (size_t i = 0; i < n; i++)
        if (json_integer_value(json_array_get(arr, i)) != ids[i]) return 0;
    return 1;
}

static int str_equal(const char *s, size_t n, json_t *v) {
    return json_is_string(v) && json_string_length(v) == n && !memcmp(json_string_value(v), s, n);
}

static void check_family(const family *fam) {
    char tok_rel[256], ref_rel[256], out[4096];
    snprintf(tok_rel, sizeof tok_rel, "tokenizers/%s/tokenizer.json", fam->name);
    snprintf(ref_rel, sizeof ref_rel, "reference/%s.jsonl", fam->name);
    const char *tok_path = hsd_test_path(tok_rel);
    if (!hsd_test_require(tok_path)) skip();
    char ref_path[4096];
    snprintf(ref_path, sizeof ref_path, "%s", hsd_test_path(ref_rel));
    if (!hsd_test_require(ref_path)) skip();
    snprintf(out, sizeof out, "%s", hsd_test_tmp(fam->name));

    hsd_tokenizer *src = NULL;
    assert_int_equal(hsd_tokenizer_load_file(tok_path, &src), HSD_OK);
    int32_t n_src = hsd_tokenizer_vocab_size(src);
    hsd_gguf_vocab v;
    hsd_status st = hsd_gguf_vocab_from_tokenizer(src, n_src + PAD, 0, &v);
    hsd_tokenizer_free(src);
    if (fam->refused_for) {
        const char *msg = hsd_last_error();
        printf("%-20s refused: %s\n", fam->name, st ? msg : "(not refused)");
        assert_int_equal(st, HSD_ERR_UNSUPPORTED);
        assert_non_null(strstr(msg, fam->refused_for));
        assert_non_null(strstr(msg, "GGUF"));
        return;
    }
    if (st) fprintf(stderr, "%s: %s\n", fam->name, hsd_last_error());
    assert_int_equal(st, HSD_OK);
    st = hsd_gguf_vocab_write_file(&v, out);
    const char *model = v.model, *pre = v.pre[0] ? v.pre : "-";
    char kind[64];
    snprintf(kind, sizeof kind, "%s/%s", model, pre);
    hsd_gguf_vocab_free(&v);
    assert_int_equal(st, HSD_OK);

    hsd_tokenizer *tok = NULL;
    st = hsd_tokenizer_load_file(out, &tok);
    if (st) fprintf(stderr, "%s: %s\n", fam->name, hsd_last_error());
    assert_int_equal(st, HSD_OK);
    assert_int_equal(hsd_tokenizer_vocab_size(tok), n_src + PAD);
    /* the padding rows are no tokens: nothing to show, nothing to decode, no surface */
    for (int32_t id = n_src; id < n_src + PAD; id++) {
        assert_null(hsd_tokenizer_id_to_token(tok, id));
        size_t len = 1;
        hsd_tokenizer_token_bytes(tok, id, &len);
        assert_int_equal(len, 0);
        char *text;
        assert_int_equal(hsd_tokenizer_decode_alloc(tok, &id, 1, false, &text, NULL),
                         HSD_ERR_OUT_OF_RANGE);
    }

    FILE *f = fopen(ref_path, "r");
    assert_non_null(f);
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int lines = 0, bad[3] = {0};
    while ((n = getline(&line, &cap, f)) > 0) {
        json_error_t jerr;
        json_t *r = json_loadb(line, (size_t)n, JSON_ALLOW_NUL, &jerr);
        assert_non_null(r);
        json_t *text = json_object_get(r, "text");
        int32_t *ids = NULL, *ids_sp = NULL;
        size_t nid = 0, nsp = 0;
        char *dec = NULL;
        size_t ld = 0;
        assert_int_equal(hsd_tokenizer_encode_alloc(tok, json_string_value(text),
                                                    json_string_length(text), false, &ids, &nid),
                         HSD_OK);
        assert_int_equal(hsd_tokenizer_encode_alloc(tok, json_string_value(text),
                                                    json_string_length(text), true, &ids_sp, &nsp),
                         HSD_OK);
        /* decoding the reference's own ids checks the decoder apart from the encoder */
        json_t *ref_ids = json_object_get(r, "ids");
        size_t nr = json_array_size(ref_ids);
        int32_t *rid = malloc((nr ? nr : 1) * sizeof *rid);
        assert_non_null(rid);
        for (size_t i = 0; i < nr; i++) rid[i] = (int32_t)json_integer_value(json_array_get(ref_ids, i));
        assert_int_equal(hsd_tokenizer_decode_alloc(tok, rid, nr, false, &dec, &ld), HSD_OK);
        int ok[3] = {ids_equal(ids, nid, ref_ids),
                     ids_equal(ids_sp, nsp, json_object_get(r, "ids_with_special")),
                     str_equal(dec, ld, json_object_get(r, "decoded"))};
        static const char *what[3] = {"ids", "ids_with_special", "decoded"};
        for (int k = 0; k < 3; k++)
            if (!ok[k] && bad[k]++ < 3)
                fprintf(stderr, "%s line %d: %s differ: %.60s\n", fam->name, lines + 1, what[k],
                        json_string_value(text));
        lines++;
        free(rid);
        hsd_free(ids), hsd_free(ids_sp), hsd_free(dec);
        json_decref(r);
    }
    free(line);
    fclose(f);
    hsd_tokenizer_free(tok);
    unlink(out);
    printf("%-20s written as %-18s %d lines: ids %d/%d, ids_with_special %d/%d, decoded %d/%d\n",
           fam->name, kind, lines, lines - bad[0], lines, lines - bad[1], lines, lines - bad[2],
           lines);
    assert_true(lines > 0);
    for (int k = 0; k < 3; k++) assert_int_equal(bad[k], 0);
}

#define FAMILY_TEST(i)                                                                         \
    static void test_family_##i(void **state) {                                                \
        (void)state;                                                                           \
        check_family(&families[i]);                                                            \
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

/* A vocabulary larger than the model's rows names the id and the row count. */
static void test_too_many_ids(void **state) {
    (void)state;
    const char *tok_path = hsd_test_path("tokenizers/gpt2/tokenizer.json");
    if (!hsd_test_require(tok_path)) skip();
    hsd_tokenizer *t = NULL;
    assert_int_equal(hsd_tokenizer_load_file(tok_path, &t), HSD_OK);
    hsd_gguf_vocab v;
    assert_int_equal(hsd_gguf_vocab_from_tokenizer(t, 50000, 0, &v), HSD_ERR_INVALID_ARG);
    const char *msg = hsd_last_error();
    assert_non_null(strstr(msg, "50256"));
    assert_non_null(strstr(msg, "50000"));
    hsd_tokenizer_free(t);
}

static int setup(void **state) {
    (void)state;
    return hsd_test_tmpdir_setup("tok_gguf_write");
}

static int teardown(void **state) {
    (void)state;
    return hsd_test_tmpdir_teardown();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_family_0),  cmocka_unit_test(test_family_1),
        cmocka_unit_test(test_family_2),  cmocka_unit_test(test_family_3),
        cmocka_unit_test(test_family_4),  cmocka_unit_test(test_family_5),
        cmocka_unit_test(test_family_6),  cmocka_unit_test(test_family_7),
        cmocka_unit_test(test_family_8),  cmocka_unit_test(test_family_9),
        cmocka_unit_test(test_family_10), cmocka_unit_test(test_family_11),
        cmocka_unit_test(test_family_12), cmocka_unit_test(test_too_many_ids),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
