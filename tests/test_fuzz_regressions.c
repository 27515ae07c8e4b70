/* Every input in fuzz/regressions/<harness>/ once made a fuzz harness crash (or hit UB under
 * UBSan). The harnesses are compiled in here unchanged and replayed on those inputs, so a
 * regression aborts this test; under `make asan` the sanitizers check them as well. */
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsd.h"
#include "lib/base/map.h"
#include "tests/testutil.h"

#define HSD_FUZZ_SHARED hsd_test_shared()
#define LLVMFuzzerInitialize roundtrip_init
#define LLVMFuzzerTestOneInput roundtrip_one
#include "fuzz/fuzz_roundtrip.c"
#undef LLVMFuzzerInitialize
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput tokenizer_json_one
#include "fuzz/fuzz_tokenizer_json.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput tokenizer_bin_one
#include "fuzz/fuzz_tokenizer_bin.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput gguf_vocab_one
#include "fuzz/fuzz_gguf_vocab.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput chat_template_one
#include "fuzz/fuzz_chat_template.c"
#undef LLVMFuzzerTestOneInput

#ifndef HSD_SOURCE_DIR
#define HSD_SOURCE_DIR "."
#endif

/* Replays every file of fuzz/regressions/<name>/; returns how many ran. */
static int replay(const char *name, int (*one)(const uint8_t *, size_t)) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/fuzz/regressions/%s", HSD_SOURCE_DIR, name);
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        size_t len = 0;
        char *data = hsd_test_read_file(path, &len);
        assert_non_null(data);
        printf("replay %s/%s (%zu bytes)\n", name, e->d_name, len);
        one((const uint8_t *)data, len);
        free(data);
        n++;
    }
    closedir(d);
    return n;
}

static void test_roundtrip_regressions(void **state) {
    (void)state;
    assert_true(hsd_test_require(hsd_test_path("tokenizers/gemma3/tokenizer.json")));
    roundtrip_init(NULL, NULL);
    assert_true(replay("fuzz_roundtrip", roundtrip_one) >= 1);
}

/* The first find: gemma3 with special tokens added and skipped decodes to nothing, and the
 * decoder used to add 0 to a NULL buffer (tokenize/decoder.c). */
static void test_gemma3_unk_skip_special(void **state) {
    (void)state;
    const char *p = hsd_test_path("tokenizers/gemma3/tokenizer.json");
    assert_true(hsd_test_require(p));
    hsd_tokenizer *t = NULL;
    assert_int_equal(hsd_tokenizer_load_file(p, &t), HSD_OK);
    int32_t *ids = NULL;
    size_t n = 0;
    assert_int_equal(hsd_tokenizer_encode_alloc(t, "<unk>", 5, true, &ids, &n), HSD_OK);
    char *dec = NULL;
    size_t dl = 99;
    assert_int_equal(hsd_tokenizer_decode_alloc(t, ids, n, true, &dec, &dl), HSD_OK);
    assert_int_equal(dl, 0);
    assert_string_equal(dec, "");
    hsd_free(dec);
    hsd_free(ids);
    hsd_tokenizer_free(t);
}

/* Second find: llama2's decoder chain on an empty input, with special tokens added and
 * skipped, formed NULL + 0 in its Strip step. */
static void test_llama2_empty_skip_special(void **state) {
    (void)state;
    const char *p = hsd_test_path("tokenizers/llama2/tokenizer.json");
    assert_true(hsd_test_require(p));
    hsd_tokenizer *t = NULL;
    assert_int_equal(hsd_tokenizer_load_file(p, &t), HSD_OK);
    int32_t *ids = NULL;
    size_t n = 0;
    assert_int_equal(hsd_tokenizer_encode_alloc(t, "", 0, true, &ids, &n), HSD_OK);
    assert_int_equal(n, 1); /* <s> */
    char *dec = NULL;
    size_t dl = 99;
    assert_int_equal(hsd_tokenizer_decode_alloc(t, ids, n, true, &dec, &dl), HSD_OK);
    assert_int_equal(dl, 0);
    hsd_free(dec);
    assert_int_equal(hsd_tokenizer_decode_alloc(t, ids, n, false, &dec, &dl), HSD_OK);
    assert_string_equal(dec, "<s>");
    hsd_free(dec);
    hsd_free(ids);
    hsd_tokenizer_free(t);
}

/* Third find (fuzz_tokenizer_bin): a tokenizer.bin with empty token strings made the string
 * map compare an empty key against its still-NULL arena. */
static void test_strmap_empty_keys(void **state) {
    (void)state;
    hsd_strmap m;
    assert_int_equal(hsd_strmap_init(&m, 4), 0);
    assert_int_equal(hsd_strmap_get(&m, "", 0), -1);
    assert_int_equal(hsd_strmap_put(&m, "", 0, 7), 0);
    assert_int_equal(hsd_strmap_put(&m, "", 0, 8), 0); /* overwrite: same empty key */
    assert_int_equal(hsd_strmap_get(&m, "", 0), 8);
    assert_int_equal(hsd_strmap_put(&m, "ab", 2, 9), 0);
    assert_int_equal(hsd_strmap_get(&m, "ab", 2), 9);
    assert_int_equal(hsd_strmap_get(&m, "", 0), 8);
    hsd_strmap_free(&m);
}

/* Fourth find (heap overflow): BPE and Unigram tokenizers used on one thread shared the
 * per-thread model scratch, each taking the other's struct for its own. Alternate the two on
 * the corpus and compare every encoding with the HF reference ids. */
static void check_ids(const hsd_tokenizer *t, json_t *ref_line, const char *fam) {
    json_t *text = json_object_get(ref_line, "text");
    int32_t *ids = NULL;
    size_t n = 0;
    assert_int_equal(hsd_tokenizer_encode_alloc(t, json_string_value(text), json_string_length(text),
                                                false, &ids, &n),
                     HSD_OK);
    json_t *want = json_object_get(ref_line, "ids");
    if (json_array_size(want) != n) fprintf(stderr, "%s: %zu ids, reference %zu\n", fam, n, json_array_size(want));
    assert_int_equal(json_array_size(want), n);
    for (size_t i = 0; i < n; i++) assert_int_equal(json_integer_value(json_array_get(want, i)), ids[i]);
    hsd_free(ids);
}

static void test_bpe_unigram_one_thread(void **state) {
    (void)state;
    static const char *fams[] = {"synthetic_unigram", "gpt2", "synthetic_wordpiece", "qwen3"};
    hsd_tokenizer *t[4];
    FILE *f[4];
    for (int k = 0; k < 4; k++) {
        char rel[256];
        snprintf(rel, sizeof rel, "tokenizers/%s/tokenizer.json", fams[k]);
        assert_true(hsd_test_require(hsd_test_path(rel)));
        assert_int_equal(hsd_tokenizer_load_file(hsd_test_path(rel), &t[k]), HSD_OK);
        snprintf(rel, sizeof rel, "reference/%s.jsonl", fams[k]);
        f[k] = fopen(hsd_test_path(rel), "r");
        assert_non_null(f[k]);
    }
    char *line = NULL;
    size_t cap = 0;
    for (int row = 0; row < 399; row++)
        for (int k = 0; k < 4; k++) {
            ssize_t n = getline(&line, &cap, f[k]);
            assert_true(n > 0);
            json_error_t err;
            json_t *r = json_loadb(line, (size_t)n, JSON_ALLOW_NUL, &err);
            assert_non_null(r);
            check_ids(t[k], r, fams[k]);
            json_decref(r);
        }
    free(line);
    for (int k = 0; k < 4; k++) {
        fclose(f[k]);
        hsd_tokenizer_free(t[k]);
    }
}

/* Fifth find (fuzz_tokenizer_json): an id like 2.7e47 was cast to int32 before being range
 * checked (UB). Every such number must be refused as a parse error. */
static void test_json_huge_numbers(void **state) {
    (void)state;
    static const char *docs[] = {
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 2.7e47}, \"merges\": []}}",
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": -1e300}, \"merges\": []}}",
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0.5}, \"merges\": []}}",
    };
    for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
        hsd_tokenizer *t = NULL;
        hsd_status st = hsd_tokenizer_load_memory(docs[i], strlen(docs[i]), HSD_TOKENIZER_HF_JSON,
                                                  "huge", &t);
        assert_int_equal(st, HSD_ERR_PARSE);
        assert_null(t);
    }
    /* in-range ids still load */
    static const char ok[] =
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1}, \"merges\": []}}";
    hsd_tokenizer *t = NULL;
    assert_int_equal(hsd_tokenizer_load_memory(ok, strlen(ok), HSD_TOKENIZER_HF_JSON, "ok", &t), HSD_OK);
    assert_int_equal(hsd_tokenizer_vocab_size(t), 2);
    hsd_tokenizer_free(t);
}

/* Sixth find (fuzz_tokenizer_json): a tokenizer.json whose strings were not UTF-8 (a Replace
 * normalizer's content of one byte 0xF7) loaded, and its invalid sequence reached Unigram's
 * Viterbi, which stepped past the end of its lattice (heap overflow under ASan). JSON is
 * UTF-8, and HF's loader refuses anything else (it reads the file into a Rust String), so
 * every such string is refused at load, naming the byte. */
static void test_json_invalid_utf8(void **state) {
    (void)state;
    /* in each, the first byte at or above 0x80 starts the invalid sequence */
    static const char *docs[] = {
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\xF7\": 0}, \"merges\": []}}",
        "{\"normalizer\": {\"type\": \"Replace\", \"pattern\": {\"String\": \"a\"}, \"content\": \"\xF7 \"}}",
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"\xC0\x80\": 0}, \"merges\": []}}",     /* overlong */
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"\xED\xA0\x80\": 0}, \"merges\": []}}", /* surrogate */
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"\xE4\xB8\": 0}, \"merges\": []}}",     /* cut */
        "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"x\x80\": 0}, \"merges\": []}}",        /* lone continuation */
    };
    for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
        size_t bad = 0;
        while ((unsigned char)docs[i][bad] < 0x80) bad++;
        hsd_tokenizer *t = NULL;
        hsd_status st = hsd_tokenizer_load_memory(docs[i], strlen(docs[i]), HSD_TOKENIZER_HF_JSON,
                                                  "bad.json", &t);
        assert_int_equal(st, HSD_ERR_PARSE);
        assert_null(t);
        char want[64];
        snprintf(want, sizeof want, "invalid UTF-8 in string at byte %zu", bad);
        if (!strstr(hsd_last_error(), want)) fail_msg("doc %zu: \"%s\" lacks \"%s\"", i, hsd_last_error(), want);
        assert_non_null(strstr(hsd_last_error(), "bad.json"));
    }
    /* valid multi-byte strings, raw and escaped, still load */
    static const char ok[] = "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"caf\xC3\xA9\": 0, \"\xE4\xB8\xAD\": 1, "
                             "\"\\u00e9\xF0\x9F\x98\x80\": 2}, \"merges\": []}}";
    hsd_tokenizer *t = NULL;
    assert_int_equal(hsd_tokenizer_load_memory(ok, strlen(ok), HSD_TOKENIZER_HF_JSON, "ok", &t), HSD_OK);
    assert_int_equal(hsd_tokenizer_vocab_size(t), 3);
    hsd_tokenizer_free(t);
}

static void test_loader_regressions(void **state) {
    (void)state;
    /* replays every saved loader crash input (tokenizer.bin: empty token strings) */
    int n = replay("fuzz_tokenizer_json", tokenizer_json_one) +
            replay("fuzz_tokenizer_bin", tokenizer_bin_one) + replay("fuzz_gguf_vocab", gguf_vocab_one);
    printf("%d loader regression inputs replayed\n", n);
    assert_true(n >= 5);
    /* and the harnesses themselves work on a real file of each format */
    size_t len;
    char *data = hsd_test_read_file(hsd_test_path("models/stories260K/tok512.bin"), &len);
    assert_non_null(data);
    tokenizer_bin_one((const uint8_t *)data, len);
    free(data);
    data = hsd_test_read_file(hsd_test_path("tokenizers/synthetic_wordpiece/tokenizer.json"), &len);
    assert_non_null(data);
    tokenizer_json_one((const uint8_t *)data, len);
    free(data);
    data = hsd_test_read_file(hsd_test_path("models/vocab-gguf/ggml-vocab-llama-spm.gguf"), &len);
    assert_non_null(data);
    gguf_vocab_one((const uint8_t *)data, len);
    free(data);
}

/* fuzz_chat_template: parse + render inputs that once crashed (UB under UBSan) */
static void test_chat_template_regressions(void **state) {
    (void)state;
    assert_true(replay("fuzz_chat_template", chat_template_one) >= 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gemma3_unk_skip_special),
        cmocka_unit_test(test_llama2_empty_skip_special),
        cmocka_unit_test(test_strmap_empty_keys),
        cmocka_unit_test(test_bpe_unigram_one_thread),
        cmocka_unit_test(test_json_huge_numbers),
        cmocka_unit_test(test_json_invalid_utf8),
        cmocka_unit_test(test_roundtrip_regressions),
        cmocka_unit_test(test_loader_regressions),
        cmocka_unit_test(test_chat_template_regressions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
