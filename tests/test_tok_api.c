/* Tokenizer API facts checked against the shared tokenizer files: vocabulary sizes (HF
 * get_vocab_size(with_added_tokens)), surface bytes, special ids, and that one tokenizer
 * shared by several threads gives the same ids as a single thread. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsd.h"
#include "tests/testutil.h"

static hsd_tokenizer *load(const char *family) {
    char rel[256];
    snprintf(rel, sizeof rel, "tokenizers/%s/tokenizer.json", family);
    const char *p = hsd_test_path(rel);
    if (!hsd_test_require(p)) return NULL;
    hsd_tokenizer *t = NULL;
    if (hsd_tokenizer_load_file(p, &t)) fprintf(stderr, "%s\n", hsd_last_error());
    return t;
}

static void expect_surface(const hsd_tokenizer *t, const char *token, const char *bytes,
                           size_t blen) {
    int32_t id = hsd_tokenizer_token_to_id(t, token);
    assert_true(id >= 0);
    size_t n;
    const uint8_t *b = hsd_tokenizer_token_bytes(t, id, &n);
    assert_non_null(b);
    assert_int_equal(n, blen);
    assert_memory_equal(b, bytes, blen);
}

static void test_vocab_sizes(void **state) {
    (void)state;
    /* largest id + 1: STATS.md "total" (gpt4o: max added id 200018 + 1, with 19 unused ids) */
    struct {
        const char *fam;
        int32_t total;
    } want[] = {{"llama3", 128256}, {"gemma3", 262145}, {"qwen3", 151669}, {"gpt2", 50257},
                {"gpt4o", 200019},  {"llama2", 32000},  {"synthetic_unigram", 5197},
                {"synthetic_wordpiece", 9244}, {"deepseek_v3", 128815}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        hsd_tokenizer *t = load(want[i].fam);
        if (!t) skip();
        if (hsd_tokenizer_vocab_size(t) != want[i].total)
            fprintf(stderr, "%s: %d != %d\n", want[i].fam, hsd_tokenizer_vocab_size(t), want[i].total);
        assert_int_equal(hsd_tokenizer_vocab_size(t), want[i].total);
        hsd_tokenizer_free(t);
    }
}

static void test_surface_bytes(void **state) {
    (void)state;
    hsd_tokenizer *l3 = load("llama3"), *l2 = load("llama2"), *wp = load("synthetic_wordpiece"),
                  *g3 = load("gemma3");
    if (!l3 || !l2 || !wp || !g3) skip();
    expect_surface(l3, "\xC4\xA0hello", " hello", 6); /* Ġhello */
    expect_surface(l3, "\xC4\x8A", "\n", 1);          /* Ċ */
    expect_surface(l3, "<|begin_of_text|>", "<|begin_of_text|>", 17);
    expect_surface(l2, "\xE2\x96\x81hello", " hello", 6); /* ▁hello */
    expect_surface(l2, "<0x41>", "A", 1);
    expect_surface(l2, "<0x0A>", "\n", 1);
    expect_surface(g3, "\xE2\x96\x81the", " the", 4);
    expect_surface(wp, "##ing", "ing", 3);
    /* the same text meets across vocabularies by bytes, whatever the spelling */
    size_t a, b;
    const uint8_t *x = hsd_tokenizer_token_bytes(l3, hsd_tokenizer_token_to_id(l3, "\xC4\xA0world"), &a);
    const uint8_t *y = hsd_tokenizer_token_bytes(l2, hsd_tokenizer_token_to_id(l2, "\xE2\x96\x81world"), &b);
    assert_int_equal(a, b);
    assert_memory_equal(x, y, a);
    /* a byte-level token that is not valid UTF-8 on its own keeps its raw byte */
    const uint8_t *z = hsd_tokenizer_token_bytes(l3, hsd_tokenizer_token_to_id(l3, "\xC3\xA4"), &a);
    assert_int_equal(a, 1);
    assert_int_equal(z[0], 0xE4);
    hsd_tokenizer_free(l3), hsd_tokenizer_free(l2), hsd_tokenizer_free(wp), hsd_tokenizer_free(g3);
}

static void test_special_ids(void **state) {
    (void)state;
    hsd_tokenizer *l3 = load("llama3_1"), *l2 = load("llama2"), *g2 = load("gpt2");
    if (!l3 || !l2 || !g2) skip();
    assert_int_equal(hsd_tokenizer_bos_id(l3), 128000);
    assert_true(hsd_tokenizer_is_special(l3, 128000));
    assert_false(hsd_tokenizer_is_special(l3, 100));
    assert_int_equal(hsd_tokenizer_bos_id(l2), 1);
    assert_int_equal(hsd_tokenizer_eos_id(l2), 2);
    assert_int_equal(hsd_tokenizer_unk_id(l2), 0);
    assert_int_equal(hsd_tokenizer_eos_id(g2), 50256);
    assert_string_equal(hsd_tokenizer_id_to_token(l2, 1), "<s>");
    hsd_tokenizer_free(l3), hsd_tokenizer_free(l2), hsd_tokenizer_free(g2);
}

typedef struct {
    const hsd_tokenizer *t;
    char **texts;
    size_t n;
    int32_t **ids;
    size_t *nids;
} job;

static void *encode_all(void *arg) {
    job *j = arg;
    for (size_t i = 0; i < j->n; i++)
        if (hsd_tokenizer_encode_alloc(j->t, j->texts[i], strlen(j->texts[i]), false, &j->ids[i],
                                       &j->nids[i]))
            return (void *)1;
    return NULL;
}

static void test_threads_share_one_tokenizer(void **state) {
    (void)state;
    hsd_tokenizer *t = load("qwen3");
    if (!t) skip();
    /* varied texts: words, numbers, non-Latin scripts, repeated so caches get contended */
    enum { N = 400, T = 4 };
    char *texts[N];
    for (int i = 0; i < N; i++) {
        texts[i] = malloc(128);
        snprintf(texts[i], 128, "word%d, Ünïcödé %d — 東京 %x tokens\n", i % 37, i * 7919, i);
    }
    job jobs[T + 1];
    pthread_t th[T];
    for (int k = 0; k <= T; k++) {
        jobs[k] = (job){t, texts, N, calloc(N, sizeof(int32_t *)), calloc(N, sizeof(size_t))};
    }
    assert_null(encode_all(&jobs[T])); /* reference, single thread */
    for (int k = 0; k < T; k++) pthread_create(&th[k], NULL, encode_all, &jobs[k]);
    for (int k = 0; k < T; k++) {
        void *r;
        pthread_join(th[k], &r);
        assert_null(r);
        for (int i = 0; i < N; i++) {
            assert_int_equal(jobs[k].nids[i], jobs[T].nids[i]);
            assert_memory_equal(jobs[k].ids[i], jobs[T].ids[i], jobs[T].nids[i] * sizeof(int32_t));
        }
    }
    for (int k = 0; k <= T; k++) {
        for (int i = 0; i < N; i++) hsd_free(jobs[k].ids[i]);
        free(jobs[k].ids);
        free(jobs[k].nids);
    }
    for (int i = 0; i < N; i++) free(texts[i]);
    hsd_tokenizer_free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vocab_sizes),
        cmocka_unit_test(test_surface_bytes),
        cmocka_unit_test(test_special_ids),
        cmocka_unit_test(test_threads_share_one_tokenizer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
