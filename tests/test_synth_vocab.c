/* `hsd synth --tokenizer` with real vocabularies: a tiny shape takes exactly the tokenizer's
 * ids as embedding rows (a small model with a real vocabulary, counted from the
 * tokenizer.json itself), gemma3's id 262144 gets its row, the written GGUF's tokenizer
 * encodes like HF tokenizers (the shared reference), and a refused vocabulary (qwen3's NFC,
 * a Unigram model) fails naming what GGUF cannot hold and leaves no output directory or
 * file behind — for inflate as for synth. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "hsd.h"
#include "tests/testutil.h"

/* The tokenizer.json's ids: one past the highest id of model.vocab and added_tokens. */
static int32_t json_ids(const char *path) {
    json_error_t err;
    json_t *j = json_load_file(path, 0, &err);
    assert_non_null(j);
    int64_t top = -1;
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(json_object_get(j, "model"), "vocab"), k, v)
        if (json_integer_value(v) > top) top = json_integer_value(v);
    size_t i;
    json_array_foreach(json_object_get(j, "added_tokens"), i, v)
        if (json_integer_value(json_object_get(v, "id")) > top)
            top = json_integer_value(json_object_get(v, "id"));
    json_decref(j);
    return (int32_t)(top + 1);
}

static bool exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0;
}

/* runs cmd, returning its exit status and (2>&1) output in *out */
static int run(const char *cmd, char **out) {
    char full[8192];
    snprintf(full, sizeof full, "%s 2>&1; echo \"rc=$?\"", cmd);
    *out = hsd_test_run(full);
    assert_non_null(*out);
    const char *rc = strstr(*out, "rc=");
    assert_non_null(rc);
    while (strstr(rc + 1, "rc=")) rc = strstr(rc + 1, "rc=");
    return atoi(rc + 3);
}

/* synth a tiny model for `family`; checks its rows and (lines > 0) its tokenizer's ids */
static void synth_ok(const char *shape, const char *family, int lines) {
    char rel[256], tok[4096], dir[4096], model[4200], cmd[12000];
    snprintf(rel, sizeof rel, "tokenizers/%s/tokenizer.json", family);
    snprintf(tok, sizeof tok, "%s", hsd_test_path(rel));
    if (!hsd_test_require(tok)) skip();
    snprintf(dir, sizeof dir, "%s", hsd_test_tmp(family));
    snprintf(model, sizeof model, "%s/model.gguf", dir);
    snprintf(cmd, sizeof cmd, "'%s' synth --shape %s --format gguf --dtype q8_0 -o '%s' --tokenizer '%s'",
             hsd_test_cli(), shape, dir, tok);
    char *out;
    int rc = run(cmd, &out);
    if (rc) fprintf(stderr, "%s\n", out);
    free(out);
    assert_int_equal(rc, 0);

    hsd_model *m = NULL;
    hsd_model_params mp = hsd_model_default_params();
    assert_int_equal(hsd_model_load(model, &mp, &m), HSD_OK);
    int32_t want = json_ids(tok);
    printf("synth %s --tokenizer %s: %d rows, the tokenizer.json's ids %d\n", shape, family,
           hsd_model_vocab_size(m), want);
    assert_int_equal(hsd_model_vocab_size(m), want);
    hsd_model_free(m);

    if (lines <= 0) return;
    hsd_tokenizer *t = NULL;
    assert_int_equal(hsd_tokenizer_load_file(model, &t), HSD_OK);
    snprintf(rel, sizeof rel, "reference/%s.jsonl", family);
    FILE *f = fopen(hsd_test_path(rel), "r");
    if (!f) {
        hsd_tokenizer_free(t);
        skip();
    }
    char *line = NULL;
    size_t cap = 0;
    for (int i = 0; i < lines && getline(&line, &cap, f) > 0; i++) {
        json_error_t err;
        json_t *r = json_loadb(line, strlen(line), JSON_ALLOW_NUL, &err);
        assert_non_null(r);
        json_t *text = json_object_get(r, "text"), *ref = json_object_get(r, "ids");
        int32_t *ids;
        size_t n;
        assert_int_equal(hsd_tokenizer_encode_alloc(t, json_string_value(text),
                                                    json_string_length(text), false, &ids, &n),
                         HSD_OK);
        assert_int_equal(n, json_array_size(ref));
        for (size_t k = 0; k < n; k++) assert_int_equal(ids[k], json_integer_value(json_array_get(ref, k)));
        hsd_free(ids);
        json_decref(r);
    }
    free(line);
    fclose(f);
    hsd_tokenizer_free(t);
}

static void test_tiny_llama2(void **state) {
    (void)state;
    synth_ok("tiny", "llama2", 40);
}

/* gemma3's <image_soft_token> is id 262144: its row exists */
static void test_tiny_gemma3(void **state) {
    (void)state;
    synth_ok("tiny", "gemma3", 0);
}

/* A refused vocabulary: the message names the stage, nothing is left at -o. */
static void refused(const char *family, const char *why, const char *extra) {
    char rel[256], tok[4096], dir[4096], cmd[12000];
    snprintf(rel, sizeof rel, "tokenizers/%s/tokenizer.json", family);
    snprintf(tok, sizeof tok, "%s", hsd_test_path(rel));
    if (!hsd_test_require(tok)) skip();
    snprintf(dir, sizeof dir, "%s", hsd_test_tmp("refused"));
    snprintf(cmd, sizeof cmd, "'%s' synth --shape tiny --format gguf -o '%s' --tokenizer '%s'%s",
             hsd_test_cli(), dir, tok, extra);
    char *out;
    int rc = run(cmd, &out);
    printf("synth --tokenizer %s: %s", family, out);
    assert_int_not_equal(rc, 0);
    assert_non_null(strstr(out, why));
    assert_null(strstr(out, "synth: synth:"));
    free(out);
    assert_false(exists(dir));
}

static void test_refused_qwen3(void **state) {
    (void)state;
    refused("qwen3", "normalizer NFC", "");
}

static void test_refused_unigram(void **state) {
    (void)state;
    refused("synthetic_unigram", "model Unigram", " --gguf-drop-normalizer");
}

/* --gguf-drop-normalizer writes qwen3 without NFC: lines that NFC leaves as they are
 * tokenize as HF does */
static void test_qwen3_drop_normalizer(void **state) {
    (void)state;
    char tok[4096], dir[4096], model[4200], cmd[12000];
    snprintf(tok, sizeof tok, "%s", hsd_test_path("tokenizers/qwen3/tokenizer.json"));
    if (!hsd_test_require(tok)) skip();
    snprintf(dir, sizeof dir, "%s", hsd_test_tmp("qwen3_lossy"));
    snprintf(model, sizeof model, "%s/model.gguf", dir);
    snprintf(cmd, sizeof cmd,
             "'%s' synth --shape tiny --format gguf --dtype q8_0 -o '%s' --tokenizer '%s' "
             "--gguf-drop-normalizer",
             hsd_test_cli(), dir, tok);
    char *out;
    int rc = run(cmd, &out);
    free(out);
    assert_int_equal(rc, 0);
    hsd_tokenizer *t = NULL;
    assert_int_equal(hsd_tokenizer_load_file(model, &t), HSD_OK);
    FILE *f = fopen(hsd_test_path("reference/qwen3.jsonl"), "r");
    assert_non_null(f);
    char *line = NULL;
    size_t cap = 0;
    int ascii = 0, same = 0, other = 0, other_same = 0;
    while (getline(&line, &cap, f) > 0) {
        json_error_t err;
        json_t *r = json_loadb(line, strlen(line), JSON_ALLOW_NUL, &err);
        assert_non_null(r);
        json_t *text = json_object_get(r, "text"), *ref = json_object_get(r, "ids");
        const char *s = json_string_value(text);
        size_t len = json_string_length(text);
        int32_t *ids;
        size_t n;
        assert_int_equal(hsd_tokenizer_encode_alloc(t, s, len, false, &ids, &n), HSD_OK);
        bool eq = n == json_array_size(ref);
        for (size_t k = 0; eq && k < n; k++) eq = ids[k] == json_integer_value(json_array_get(ref, k));
        /* NFC leaves ASCII text as it is, so there the ids must be HF's */
        bool is_ascii = true;
        for (size_t k = 0; k < len; k++) is_ascii = is_ascii && (unsigned char)s[k] < 0x80;
        if (is_ascii) ascii++, same += eq;
        else other++, other_same += eq;
        hsd_free(ids);
        json_decref(r);
    }
    printf("qwen3 without NFC: ASCII lines %d/%d identical, other lines %d/%d\n", same, ascii,
           other_same, other);
    assert_true(ascii > 0);
    assert_int_equal(same, ascii);
    free(line);
    fclose(f);
    hsd_tokenizer_free(t);
}

/* an unknown shape: one "synth:" in the message, no directory */
static void test_unknown_shape(void **state) {
    (void)state;
    char dir[4096], cmd[8192];
    snprintf(dir, sizeof dir, "%s", hsd_test_tmp("unknown_shape"));
    snprintf(cmd, sizeof cmd, "'%s' synth --shape no-such-shape --format gguf -o '%s'",
             hsd_test_cli(), dir);
    char *out;
    assert_int_not_equal(run(cmd, &out), 0);
    assert_non_null(strstr(out, "no-such-shape"));
    assert_null(strstr(out, "synth: synth:"));
    free(out);
    assert_false(exists(dir));
}

/* inflate refuses before building (a 1B shape: it would take minutes), and leaves neither OUT
 * nor OUT.tmp */
static void test_inflate_refused(void **state) {
    (void)state;
    char tok[4096], model[4096], out_path[4096], tmp[4200], cmd[16000];
    snprintf(tok, sizeof tok, "%s", hsd_test_path("tokenizers/qwen3/tokenizer.json"));
    snprintf(model, sizeof model, "%s", hsd_test_path("models/stories260K/stories260K.bin"));
    if (!hsd_test_require(tok) || !hsd_test_require(model)) skip();
    snprintf(out_path, sizeof out_path, "%s", hsd_test_tmp("inflated.gguf"));
    snprintf(tmp, sizeof tmp, "%s.tmp", out_path);
    snprintf(cmd, sizeof cmd, "'%s' inflate --model '%s' --tokenizer '%s' --shape llama-3.2-1b --layers 5 -o '%s'",
             hsd_test_cli(), model, tok, out_path);
    char *out;
    int rc = run(cmd, &out);
    printf("inflate --tokenizer qwen3: %s", out);
    assert_int_not_equal(rc, 0);
    assert_non_null(strstr(out, "normalizer NFC"));
    free(out);
    assert_false(exists(out_path));
    assert_false(exists(tmp));
}

static int setup(void **state) {
    (void)state;
    return hsd_test_tmpdir_setup("synth_vocab");
}

static int teardown(void **state) {
    (void)state;
    return hsd_test_tmpdir_teardown();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tiny_llama2),        cmocka_unit_test(test_tiny_gemma3),
        cmocka_unit_test(test_refused_qwen3),      cmocka_unit_test(test_refused_unigram),
        cmocka_unit_test(test_qwen3_drop_normalizer), cmocka_unit_test(test_inflate_refused),
        cmocka_unit_test(test_unknown_shape),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
