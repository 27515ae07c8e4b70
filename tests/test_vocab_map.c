/* The vocabulary map (lib/engine/vocab_map.h: T ∩ D by surface bytes, one tie-breaking rule)
 * against an independent reference: tests/oracle/vocab_map_ref.py derives every token's
 * surface from the tokenizer.json files alone (GPT-2's byte table, SentencePiece's "▁" and
 * <0xNN>) and applies the documented rule. Both full maps (d2t, t2d) must be equal, with and
 * without special tokens, on pairs where the tie-breaking rule matters (SentencePiece byte
 * fallback twins) and across pipelines (byte-level against SentencePiece). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsd.h"
#include "lib/engine/engine.h"
#include "lib/engine/vocab_map.h"
#include "tests/testutil.h"

static const char *tok_json(const char *family) {
    static char buf[4][1024];
    static int k;
    char rel[256];
    snprintf(rel, sizeof rel, "tokenizers/%s/tokenizer.json", family);
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s", hsd_test_path(rel));
    return buf[k];
}

/* parses "NAME v0 v1 ..." from the oracle's output into out[0..n); returns the count */
static int32_t parse_line(const char *text, const char *name, int32_t *out, int32_t cap) {
    char key[16];
    snprintf(key, sizeof key, "%s ", name);
    const char *p = strstr(text, key);
    assert_non_null(p);
    p += strlen(key);
    int32_t n = 0;
    while (*p && *p != '\n') {
        char *end;
        long v = strtol(p, &end, 10);
        assert_true(end != p);
        if (n < cap) out[n] = (int32_t)v;
        n++;
        p = end;
        while (*p == ' ') p++;
    }
    return n;
}

static int python_ok = -1;

static void check_pair(const char *tf, const char *df, bool specials) {
    const char *tp = tok_json(tf), *dp = tok_json(df);
    HSD_REQUIRE_FILE(tp);
    HSD_REQUIRE_FILE(dp);
    if (python_ok < 0) python_ok = system("python3 -c 'import json' >/dev/null 2>&1") == 0;
    if (!python_ok) {
        printf("SKIP: python3 not found (the oracle tests/oracle/vocab_map_ref.py needs it)\n");
        skip();
    }
    hsd_tokenizer *t = NULL, *d = NULL;
    assert_int_equal(hsd_tokenizer_load_file(tp, &t), HSD_OK);
    assert_int_equal(hsd_tokenizer_load_file(dp, &d), HSD_OK);
    hsd_vocab_map vm;
    assert_int_equal(hsd_vocab_map_build(t, d, specials, &vm), HSD_OK);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "python3 '%s' '%s' '%s' %s",
             hsd_test_src_path("tests/oracle/vocab_map_ref.py"), tp, dp,
             specials ? "specials" : "text");
    char *out = hsd_test_run(cmd);
    assert_non_null(out);
    int32_t *d2t = malloc((size_t)vm.n_d * sizeof *d2t), *t2d = malloc((size_t)vm.n_t * sizeof *t2d);
    assert_non_null(d2t);
    assert_non_null(t2d);
    /* the oracle sizes the vocabulary by its largest id: the same as hsd's */
    assert_int_equal(parse_line(out, "d2t", d2t, vm.n_d), vm.n_d);
    assert_int_equal(parse_line(out, "t2d", t2d, vm.n_t), vm.n_t);
    int32_t bad = 0, mapped_d = 0, mapped_t = 0, shared = 0, ties = 0;
    for (int32_t i = 0; i < vm.n_d; i++) {
        if (vm.d2t[i] != d2t[i] && bad++ < 5)
            printf("%s -> %s: d2t[%d] = %d, oracle %d\n", tf, df, i, vm.d2t[i], d2t[i]);
        mapped_d += d2t[i] >= 0;
    }
    for (int32_t i = 0; i < vm.n_t; i++) {
        if (vm.t2d[i] != t2d[i] && bad++ < 10)
            printf("%s -> %s: t2d[%d] = %d, oracle %d\n", tf, df, i, vm.t2d[i], t2d[i]);
        mapped_t += t2d[i] >= 0;
        shared += t2d[i] >= 0 && d2t[t2d[i]] == i;
        ties += t2d[i] >= 0 && d2t[t2d[i]] != i; /* a second id of a shared surface */
    }
    printf("%s -> %s (%s): |D| %d, |T| %d, drafter ids mapped %d, target ids mapped %d, "
           "shared surfaces %d, target twins %d\n",
           tf, df, specials ? "specials" : "text", vm.n_d, vm.n_t, mapped_d, mapped_t, shared,
           ties);
    assert_int_equal(bad, 0);
    assert_int_equal(vm.n_d_mapped, mapped_d);
    assert_int_equal(vm.n_t_mapped, mapped_t);
    assert_int_equal(vm.n_shared, shared);
    assert_true(shared > 0);
    free(d2t);
    free(t2d);
    free(out);
    hsd_vocab_map_free(&vm);
    hsd_tokenizer_free(t);
    hsd_tokenizer_free(d);
}

/* SentencePiece both sides: "A" and <0x41> spell one surface, so the rule decides */
static void test_spm_pair(void **state) {
    (void)state;
    check_pair("mistral", "llama2", false);
    check_pair("llama2", "mistral", true);
}

/* byte-level against SentencePiece, both directions */
static void test_bytelevel_spm(void **state) {
    (void)state;
    check_pair("gpt2", "llama2", false);
    check_pair("llama2", "gpt2", true);
}

/* an identical pair is identical; a different one is not */
static void test_identical(void **state) {
    (void)state;
    const char *p = tok_json("llama2"), *q = tok_json("mistral");
    HSD_REQUIRE_FILE(p);
    HSD_REQUIRE_FILE(q);
    hsd_tokenizer *a = NULL, *b = NULL, *c = NULL;
    assert_int_equal(hsd_tokenizer_load_file(p, &a), HSD_OK);
    assert_int_equal(hsd_tokenizer_load_file(p, &b), HSD_OK);
    assert_int_equal(hsd_tokenizer_load_file(q, &c), HSD_OK);
    hsd_vocab_map vm;
    assert_int_equal(hsd_vocab_map_build(a, b, false, &vm), HSD_OK);
    assert_true(vm.identical);
    /* every id maps to an id of the same bytes: itself, or for a byte-fallback twin the text
     * token that spells the byte (the rule's first key) */
    for (int32_t i = 0; i < vm.n_d; i++)
        if (vm.d2t[i] >= 0 && vm.d2t[i] != i) {
            size_t la, lb;
            const uint8_t *x = hsd_tokenizer_token_bytes(a, i, &la);
            const uint8_t *y = hsd_tokenizer_token_bytes(a, vm.d2t[i], &lb);
            assert_int_equal(la, lb);
            assert_memory_equal(x, y, la);
        }
    hsd_vocab_map_free(&vm);
    assert_int_equal(hsd_vocab_map_build(a, c, false, &vm), HSD_OK);
    assert_false(vm.identical);
    hsd_vocab_map_free(&vm);
    assert_int_equal(hsd_vocab_map_build(NULL, c, false, &vm), HSD_ERR_INVALID_ARG);
    assert_non_null(strstr(hsd_last_error(), "target tokenizer"));
    hsd_tokenizer_free(a);
    hsd_tokenizer_free(b);
    hsd_tokenizer_free(c);
}

/* SLEM's drafter ids by surface bytes (a radix sort, then runs of equal 8-byte keys): the
 * same list as sorting by the definition, memcmp over the common length, the shorter first,
 * then the id, on every shared family, Gemma 3's 262k tokens included. */
typedef struct idb {
    const uint8_t *b;
    size_t len;
    int32_t id;
} idb;
static int cmp_def(const void *x, const void *y) {
    const idb *a = x, *b = y;
    int c = memcmp(a->b, b->b, a->len < b->len ? a->len : b->len);
    if (c) return c;
    if (a->len != b->len) return a->len < b->len ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}
static void test_ids_by_bytes(void **state) {
    (void)state;
    static const char *fam[] = {"gemma3", "llama3", "qwen3", "gpt2", "llama2", "deepseek_v3",
                                "synthetic_unigram", "synthetic_wordpiece"};
    for (size_t f = 0; f < sizeof fam / sizeof *fam; f++) {
        const char *path = tok_json(fam[f]);
        HSD_REQUIRE_FILE(path);
        hsd_tokenizer *t = NULL;
        assert_int_equal(hsd_tokenizer_load_file(path, &t), HSD_OK);
        const int32_t n = hsd_tokenizer_vocab_size(t);
        int32_t *ids = malloc((size_t)n * sizeof *ids), got = 0;
        idb *ref = malloc((size_t)n * sizeof *ref);
        assert_int_equal(hsd_eng_ids_by_bytes(t, n, ids, &got), HSD_OK);
        int32_t m = 0;
        for (int32_t i = 0; i < n; i++) {
            size_t len;
            const uint8_t *b = hsd_tokenizer_is_special(t, i) ? NULL : hsd_tokenizer_token_bytes(t, i, &len);
            if (b) ref[m++] = (idb){b, len, i};
        }
        qsort(ref, (size_t)m, sizeof *ref, cmp_def);
        assert_int_equal(got, m);
        int32_t long_ties = 0; /* neighbours equal in their first 8 bytes: the runs' part */
        for (int32_t i = 0; i < m; i++) {
            assert_int_equal(ids[i], ref[i].id);
            if (i && ref[i].len > 8 && ref[i - 1].len >= 8 && !memcmp(ref[i].b, ref[i - 1].b, 8))
                long_ties++;
        }
        printf("%-20s %6d ids by bytes = the definition's order (%d neighbours share 8 bytes)\n",
               fam[f], m, long_ties);
        /* every family here has tokens longer than 8 bytes that share their first 8: the
         * sort's second stage (runs of equal keys) is exercised, not only the radix passes */
        assert_true(long_ties > 0);
        free(ids), free(ref);
        hsd_tokenizer_free(t);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spm_pair),
        cmocka_unit_test(test_bytelevel_spm),
        cmocka_unit_test(test_identical),
        cmocka_unit_test(test_ids_by_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
