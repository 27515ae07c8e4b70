/* hsd injectivity: the corpus check flags exactly the reference's roundtrip=false samples for
 * all 13 families; minimal counterexamples are minimal; causes on hand-built cases; the fuzzer
 * finds a counterexample for qwen3, claude, llama2 and gemma3 and none for gpt2; the CLI's
 * --json interface. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hsd.h"
#include "hsd_tools.h"
#include "lib/analysis/injectivity.h"
#include "tests/testutil.h"

static const char *families[] = {"claude", "deepseek_v3", "gemma3",  "gpt2",
                                 "gpt4o",  "gptoss",      "llama2",  "llama3",
                                 "llama3_1", "mistral",   "qwen3",   "synthetic_unigram",
                                 "synthetic_wordpiece"};

static hsd_tokenizer *load(const char *fam) {
    char rel[256];
    snprintf(rel, sizeof rel, "tokenizers/%s/tokenizer.json", fam);
    const char *p = hsd_test_path(rel);
    assert_true(hsd_test_require(p));
    hsd_tokenizer *t = NULL;
    assert_int_equal(hsd_tokenizer_load_file(p, &t), HSD_OK);
    return t;
}

static bool roundtrips(const hsd_tokenizer *t, const char *s, size_t n) {
    bool same = false;
    assert_int_equal(hsd_inj_roundtrip(t, s, n, NULL, NULL, &same), HSD_OK);
    return same;
}

/* No single character can be removed from m without it round-tripping again. */
static void assert_one_minimal(const hsd_tokenizer *t, const char *m, size_t n) {
    assert_true(n > 0);
    assert_false(roundtrips(t, m, n));
    char buf[256];
    if (n >= sizeof buf) return; /* minimal strings are short; long ones skip this check */
    for (size_t i = 0; i < n;) {
        size_t l = 1;
        while (i + l < n && ((unsigned char)m[i + l] & 0xC0) == 0x80) l++;
        memcpy(buf, m, i);
        memcpy(buf + i, m + i + l, n - i - l);
        if (n - l) assert_true(roundtrips(t, buf, n - l));
        i += l;
    }
}

static void test_corpus_matches_reference(void **state) {
    (void)state;
    const char *cp = hsd_test_path("corpus/corpus.jsonl");
    assert_true(hsd_test_require(cp)); /* missing data fails, never skips */
    hsd_corpus c;
    assert_int_equal(hsd_corpus_load(cp, &c), HSD_OK);
    assert_int_equal(c.n, 399);
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++) {
        hsd_tokenizer *t = load(families[f]);
        char rel[256];
        snprintf(rel, sizeof rel, "reference/%s.jsonl", families[f]);
        FILE *ref = fopen(hsd_test_path(rel), "r");
        assert_non_null(ref);
        bool *expect = calloc(c.n, 1);
        json_t **dec = calloc(c.n, sizeof *dec);
        char *line = NULL;
        size_t cap = 0, i = 0;
        ssize_t n;
        int64_t want = 0;
        while ((n = getline(&line, &cap, ref)) > 0 && i < c.n) {
            json_error_t err;
            json_t *r = json_loadb(line, (size_t)n, JSON_ALLOW_NUL, &err);
            assert_non_null(r);
            json_t *text = json_object_get(r, "text");
            assert_int_equal(json_string_length(text), c.len[i]); /* same sample order */
            assert_memory_equal(json_string_value(text), c.text[i], c.len[i]);
            expect[i] = !json_is_true(json_object_get(r, "roundtrip"));
            want += expect[i];
            dec[i] = json_incref(json_object_get(r, "decoded"));
            json_decref(r);
            i++;
        }
        free(line);
        fclose(ref);
        assert_int_equal(i, c.n);

        hsd_inj_params o = {.size = sizeof(hsd_inj_params), .minimize = true};
        hsd_inj_result r = {0};
        assert_int_equal(hsd_inj_check_corpus(t, &c, &o, &r), HSD_OK);
        printf("%-20s %3lld of %lld samples not injective (reference %lld)\n", families[f],
               (long long)r.non_injective, (long long)r.samples, (long long)want);
        assert_int_equal(r.samples, 399);
        assert_int_equal(r.non_injective, want);
        assert_int_equal(r.n_ex, (size_t)want);
        for (size_t k = 0; k < r.n_ex; k++) {
            const hsd_inj_example *e = &r.ex[k];
            assert_true(e->sample >= 0 && (size_t)e->sample < c.n);
            assert_true(expect[e->sample]);
            /* the decoded text is HF's decoded text */
            assert_int_equal(e->decoded_len, json_string_length(dec[e->sample]));
            assert_memory_equal(e->decoded, json_string_value(dec[e->sample]), e->decoded_len);
            assert_true(e->minimal_len <= e->input_len);
            assert_one_minimal(t, e->minimal, e->minimal_len);
        }
        for (size_t k = 0; k < c.n; k++) json_decref(dec[k]);
        free(dec);
        free(expect);
        hsd_inj_result_free(&r);
        hsd_tokenizer_free(t);
    }
    hsd_corpus_free(&c);
}

static void expect_cause(const char *fam, const char *s, hsd_inj_cause want, const char *want_min) {
    hsd_tokenizer *t = load(fam);
    size_t n = strlen(s);
    assert_false(roundtrips(t, s, n));
    char *m = NULL;
    size_t mn = 0;
    assert_int_equal(hsd_inj_minimize(t, s, n, &m, &mn), HSD_OK);
    hsd_inj_cause c;
    assert_int_equal(hsd_inj_classify(t, m, mn, &c), HSD_OK);
    printf("%s: \"%s\" -> minimal \"%s\" [%s]\n", fam, s, m, hsd_inj_cause_name(c));
    assert_string_equal(hsd_inj_cause_name(c), hsd_inj_cause_name(want));
    if (want_min) assert_string_equal(m, want_min);
    assert_one_minimal(t, m, mn);
    free(m);
    hsd_tokenizer_free(t);
}

static void test_classify(void **state) {
    (void)state;
    /* qwen3: NFC composes e + U+0301 */
    expect_cause("qwen3", "the caf\x65\xCC\x81 is open", HSD_INJ_NORMALIZATION, "e\xCC\x81");
    /* claude: NFKC turns the ligature into "fi" */
    expect_cause("claude", "a \xEF\xAC\x81ne day", HSD_INJ_NORMALIZATION, "\xEF\xAC\x81");
    /* llama2: a literal "<s>" becomes the special token and the next word gains a space */
    expect_cause("llama2", "say <s>hello", HSD_INJ_ADDED_TOKEN, NULL);
    /* gemma3: the normalizer writes spaces as U+2581, so a literal U+2581 decodes to " " */
    expect_cause("gemma3", "x\xE2\x96\x81y", HSD_INJ_NORMALIZATION, "\xE2\x96\x81");
    /* synthetic wordpiece: no token for the snowman */
    expect_cause("synthetic_wordpiece", "\xE2\x98\x83\xE2\x98\x83", HSD_INJ_UNK, "\xE2\x98\x83");
    /* synthetic unigram: newline dropped by whitespace splitting */
    expect_cause("synthetic_unigram", "ab\ncd", HSD_INJ_WHITESPACE, "\n");
    assert_string_equal(hsd_inj_cause_name(HSD_INJ_BYTES), "byte_sequence");
}

static void fuzz_one(const char *fam, double seconds, int64_t max_found, hsd_inj_result *r) {
    hsd_tokenizer *t = load(fam);
    hsd_corpus c;
    assert_int_equal(hsd_corpus_load(hsd_test_path("corpus/corpus.jsonl"), &c), HSD_OK);
    hsd_inj_params o = {.size = sizeof(hsd_inj_params), .fuzz_seconds = seconds, .seed = 42, .fuzz_max_found = max_found,
                      .fuzz_seeds = &c, .minimize = true};
    memset(r, 0, sizeof *r);
    assert_int_equal(hsd_inj_fuzz(t, &o, r), HSD_OK);
    printf("fuzz %-8s %.2f s, %lld candidates, %lld found", fam, r->fuzz_seconds,
           (long long)r->fuzz_candidates, (long long)r->fuzz_found);
    if (r->n_ex) printf(", first minimal \"%s\" [%s]", r->ex[0].minimal, hsd_inj_cause_name(r->ex[0].cause));
    printf("\n");
    for (size_t k = 0; k < r->n_ex; k++) {
        assert_true(r->ex[k].sample == -1);
        assert_false(roundtrips(t, r->ex[k].input, r->ex[k].input_len));
        assert_one_minimal(t, r->ex[k].minimal, r->ex[k].minimal_len);
    }
    hsd_corpus_free(&c);
    hsd_tokenizer_free(t);
}

/* Within a 60 s budget each non-injective tokenizer yields a minimal counterexample. */
static void test_fuzz_finds(void **state) {
    (void)state;
    assert_true(hsd_test_require(hsd_test_path("corpus/corpus.jsonl"))); /* missing data fails, never skips */
    static const char *fams[] = {"qwen3", "claude", "llama2", "gemma3"};
    for (size_t i = 0; i < 4; i++) {
        hsd_inj_result r;
        fuzz_one(fams[i], 60, 1, &r);
        assert_int_equal(r.fuzz_found, 1);
        assert_int_equal(r.n_ex, 1);
        assert_true(r.fuzz_seconds < 60);
        hsd_inj_result_free(&r);
    }
}

/* Byte-level BPE without a normalizer is injective: 8 s of fuzzing finds nothing. */
static void test_fuzz_gpt2_none(void **state) {
    (void)state;
    assert_true(hsd_test_require(hsd_test_path("corpus/corpus.jsonl"))); /* missing data fails, never skips */
    hsd_inj_result r;
    fuzz_one("gpt2", 8, 0, &r);
    assert_int_equal(r.fuzz_found, 0);
    assert_int_equal(r.n_ex, 0);
    assert_true(r.fuzz_candidates > 10000);
    hsd_inj_result_free(&r);
}

/* The same seed tries the same candidates: the first finds agree. */
static void test_fuzz_deterministic(void **state) {
    (void)state;
    assert_true(hsd_test_require(hsd_test_path("corpus/corpus.jsonl"))); /* missing data fails, never skips */
    hsd_inj_result a, b;
    fuzz_one("claude", 30, 5, &a);
    fuzz_one("claude", 30, 5, &b);
    assert_int_equal(a.n_ex, 5);
    assert_int_equal(b.n_ex, 5);
    assert_int_equal(a.fuzz_candidates, b.fuzz_candidates);
    for (size_t k = 0; k < 5; k++) {
        assert_string_equal(a.ex[k].input, b.ex[k].input);
        assert_string_equal(a.ex[k].minimal, b.ex[k].minimal);
    }
    hsd_inj_result_free(&a);
    hsd_inj_result_free(&b);
}

/* `hsd injectivity --json` prints samples, non_injective and counterexamples[{input, decoded,
 * minimal, cause}] — the interface used to check the project on unseen text. */
static void test_cli_json(void **state) {
    (void)state;
    const char *cli = getenv("HSD_CLI");
    const char *tok = hsd_test_path("tokenizers/qwen3/tokenizer.json");
    assert_true(hsd_test_require(tok)); /* missing data fails, never skips */
    if (!cli || access(cli, X_OK)) {
        fprintf(stderr, "HSD_CLI not set (run under ctest)\n");
        fail();
    }
    char path[] = "/tmp/hsd_inj_cli_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("{\"text\": \"plain ascii\"}\n{\"text\": \"cafe\\u0301 au lait\"}\n"
          "{\"text\": \"\\u00c5ngstr\\u00f6m\"}\n{\"text\": \"A\\u030angstro\\u0308m\"}\n",
          f);
    fclose(f);
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' injectivity -t '%s' --corpus '%s' --json", cli, tok, path);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    json_error_t err;
    json_t *o = json_loadf(p, 0, &err);
    assert_int_equal(pclose(p), 0);
    unlink(path);
    assert_non_null(o);
    assert_int_equal(json_integer_value(json_object_get(o, "samples")), 4);
    assert_int_equal(json_integer_value(json_object_get(o, "non_injective")), 2);
    json_t *ce = json_object_get(o, "counterexamples");
    assert_int_equal(json_array_size(ce), 2);
    json_t *e = json_array_get(ce, 0);
    assert_string_equal(json_string_value(json_object_get(e, "input")), "cafe\xCC\x81 au lait");
    assert_string_equal(json_string_value(json_object_get(e, "decoded")), "caf\xC3\xA9 au lait");
    assert_string_equal(json_string_value(json_object_get(e, "minimal")), "e\xCC\x81");
    assert_string_equal(json_string_value(json_object_get(e, "cause")), "normalization");
    e = json_array_get(ce, 1);
    assert_string_equal(json_string_value(json_object_get(e, "cause")), "normalization");
    json_decref(o);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_classify),
        cmocka_unit_test(test_cli_json),
        cmocka_unit_test(test_corpus_matches_reference),
        cmocka_unit_test(test_fuzz_finds),
        cmocka_unit_test(test_fuzz_gpt2_none),
        cmocka_unit_test(test_fuzz_deterministic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
