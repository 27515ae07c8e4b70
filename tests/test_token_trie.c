/* lib/engine/token_trie: every query checked against a linear scan over the vocabulary, on toy
 * vocabularies (shared surfaces, empty and NULL entries, bytes 0x00 and 0xff) and on real
 * tokenizers (qwen3: byte-level BPE; llama2: SentencePiece with byte fallback, where "A" and
 * "<0x41>" share a surface). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsd.h"
#include "lib/engine/token_trie.h"
#include "tests/testutil.h"

/* A vocabulary as plain surfaces: the reference the trie is compared with. */
typedef struct vocab {
    const uint8_t **s;
    size_t *len;
    int32_t n;
} vocab;

static vocab vocab_of_tokenizer(const hsd_tokenizer *t) {
    vocab v;
    v.n = hsd_tokenizer_vocab_size(t);
    v.s = calloc((size_t)v.n, sizeof *v.s);
    v.len = calloc((size_t)v.n, sizeof *v.len);
    assert_non_null(v.s);
    assert_non_null(v.len);
    for (int32_t id = 0; id < v.n; id++) {
        if (!hsd_tokenizer_id_to_token(t, id) || hsd_tokenizer_is_special(t, id)) continue;
        v.s[id] = hsd_tokenizer_token_bytes(t, id, &v.len[id]);
        if (!v.len[id]) v.s[id] = NULL;
    }
    return v;
}

static bool is_prefix(const uint8_t *p, size_t np, const uint8_t *s, size_t ns) {
    return np <= ns && !memcmp(p, s, np);
}

/* Ids with exactly surface s, by scan. */
static size_t scan_exact(const vocab *v, const uint8_t *s, size_t n, int32_t *out) {
    size_t k = 0;
    for (int32_t id = 0; id < v->n; id++)
        if (v->s[id] && v->len[id] && v->len[id] == n && !memcmp(v->s[id], s, n)) out[k++] = id;
    return k;
}

/* Checks every query of the trie for the string s against scans of v. */
static void check_string(const hsd_token_trie *tr, const vocab *v, const uint8_t *s, size_t n,
                         int32_t *scratch) {
    /* walk: reaches a node iff s is a prefix of some surface */
    bool prefix_of_some = false, longer_exists = false;
    for (int32_t id = 0; id < v->n; id++) {
        if (!v->s[id] || !v->len[id] || !is_prefix(s, n, v->s[id], v->len[id])) continue;
        prefix_of_some = true;
        if (v->len[id] > n) longer_exists = true;
    }
    int32_t node = hsd_token_trie_walk(tr, HSD_TOKEN_TRIE_ROOT, s, n);
    assert_int_equal(node >= 0, prefix_of_some);
    if (node >= 0) {
        assert_int_equal(hsd_token_trie_has_children(tr, node), longer_exists);
        size_t nid;
        const int32_t *ids = hsd_token_trie_ids(tr, node, &nid);
        size_t want = scan_exact(v, s, n, scratch);
        assert_int_equal(nid, want);
        for (size_t k = 0; k < nid; k++) assert_int_equal(ids[k], scratch[k]);
    }
    /* prefixes: one entry per distinct surface that is a prefix of s, shortest first */
    size_t cap = hsd_token_trie_max_len(tr) + 1;
    hsd_token_trie_match *m = malloc(cap * sizeof *m);
    assert_non_null(m);
    size_t got = hsd_token_trie_prefixes(tr, s, n, m, cap);
    size_t expect = 0;
    for (size_t len = 1; len <= n; len++) {
        size_t k = scan_exact(v, s, len, scratch);
        if (!k) continue;
        assert_true(expect < got);
        assert_int_equal(m[expect].len, len);
        size_t nid;
        const int32_t *ids = hsd_token_trie_ids(tr, m[expect].node, &nid);
        assert_int_equal(nid, k);
        assert_int_equal(m[expect].n_ids, k);
        for (size_t j = 0; j < k; j++) assert_int_equal(ids[j], scratch[j]);
        expect++;
    }
    assert_int_equal(got, expect);
    /* a cap smaller than the answer still reports the full count and fills what fits */
    if (got > 1) {
        hsd_token_trie_match one;
        assert_int_equal(hsd_token_trie_prefixes(tr, s, n, &one, 1), got);
        assert_int_equal(one.len, m[0].len);
    }
    free(m);
}

static void test_toy(void **state) {
    (void)state;
    static const char *words[] = {"a",   "aa",  "ab",          "",       NULL,
                                  "abc", "b",   "ab",          "hello_", "world",
                                  "wo",  "rld", "hello_world", "\xff",   "\x00z"};
    const int32_t n = (int32_t)(sizeof words / sizeof words[0]);
    const uint8_t *s[sizeof words / sizeof words[0]];
    size_t len[sizeof words / sizeof words[0]];
    for (int32_t i = 0; i < n; i++) {
        s[i] = (const uint8_t *)words[i];
        len[i] = words[i] ? (i == n - 1 ? 2 : strlen(words[i])) : 0;
    }
    hsd_token_trie *tr = NULL;
    assert_int_equal(hsd_token_trie_build_strings(s, len, n, &tr), HSD_OK);
    vocab v = {s, len, n};
    assert_int_equal(hsd_token_trie_n_tokens(tr), n - 2); /* "" and NULL left out */
    assert_int_equal(hsd_token_trie_max_len(tr), strlen("hello_world"));
    int32_t scratch[32];
    const char *probes[] = {"a",   "ab",          "abc",    "abcd",         "aaa", "b",   "c",
                            "hel", "hello_world", "hello_", "hello_worldx", "wor", "\xff"};
    for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++)
        check_string(tr, &v, (const uint8_t *)probes[i], strlen(probes[i]), scratch);
    check_string(tr, &v, (const uint8_t *)"\x00z", 2, scratch);
    check_string(tr, &v, (const uint8_t *)"\x00", 1, scratch);
    check_string(tr, &v, (const uint8_t *)"", 0, scratch);
    /* "ab" is stored twice (ids 2 and 7): both behind one node, smallest first */
    size_t nid;
    const int32_t *ids =
        hsd_token_trie_ids(tr, hsd_token_trie_walk(tr, 0, (const uint8_t *)"ab", 2), &nid);
    assert_int_equal(nid, 2);
    assert_int_equal(ids[0], 2);
    assert_int_equal(ids[1], 7);
    /* out-of-range nodes are answered, not crashed on */
    assert_int_equal(hsd_token_trie_step(tr, -5, 'a'), -1);
    assert_int_equal(hsd_token_trie_step(tr, hsd_token_trie_n_nodes(tr), 'a'), -1);
    assert_null(hsd_token_trie_ids(tr, -1, &nid));
    assert_int_equal(nid, 0);
    assert_false(hsd_token_trie_has_children(tr, 1 << 30));
    /* a NULL trie is "nothing there", not a crash */
    assert_int_equal(hsd_token_trie_step(NULL, 0, 'a'), -1);
    assert_int_equal(hsd_token_trie_walk(NULL, 0, (const uint8_t *)"a", 1), -1);
    assert_null(hsd_token_trie_ids(NULL, 0, &nid));
    assert_int_equal(nid, 0);
    assert_false(hsd_token_trie_has_children(NULL, 0));
    hsd_token_trie_match mm;
    assert_int_equal(hsd_token_trie_prefixes(NULL, (const uint8_t *)"a", 1, &mm, 1), 0);
    assert_int_equal(hsd_token_trie_n_nodes(NULL), 0);
    hsd_token_trie_free(tr);

    /* bad arguments */
    assert_int_equal(hsd_token_trie_build_strings(NULL, NULL, 3, &tr), HSD_ERR_INVALID_ARG);
    assert_non_null(strstr(hsd_last_error(), "token trie"));
    assert_null(tr);
    assert_int_equal(hsd_token_trie_build_strings(s, len, n, NULL), HSD_ERR_INVALID_ARG);
    assert_int_equal(hsd_token_trie_build(NULL, &tr), HSD_ERR_INVALID_ARG);
    /* an empty vocabulary is a trie with only a root */
    assert_int_equal(hsd_token_trie_build_strings(NULL, NULL, 0, &tr), HSD_OK);
    assert_int_equal(hsd_token_trie_n_nodes(tr), 1);
    assert_int_equal(hsd_token_trie_walk(tr, 0, (const uint8_t *)"a", 1), -1);
    hsd_token_trie_free(tr);
}

/* Every token's own surface, and its extensions/truncations, against scans. A scan per query
 * over 150k tokens is slow, so a deterministic sample of ids is checked. */
static void check_family(const char *fam, int32_t stride) {
    char rel[128];
    snprintf(rel, sizeof rel, "tokenizers/%s/tokenizer.json", fam);
    const char *p = hsd_test_path(rel);
    HSD_REQUIRE_FILE(p);
    hsd_tokenizer *t = NULL;
    assert_int_equal(hsd_tokenizer_load_file(p, &t), HSD_OK);
    hsd_token_trie *tr = NULL;
    assert_int_equal(hsd_token_trie_build(t, &tr), HSD_OK);
    vocab v = vocab_of_tokenizer(t);

    /* totals: ids stored = text ids with a surface; longest surface agrees */
    int32_t n_text = 0;
    size_t max_len = 0;
    for (int32_t id = 0; id < v.n; id++) {
        if (!v.s[id]) continue;
        n_text++;
        if (v.len[id] > max_len) max_len = v.len[id];
        /* every stored surface walks to a node listing its id */
        size_t nid;
        const int32_t *ids =
            hsd_token_trie_ids(tr, hsd_token_trie_walk(tr, 0, v.s[id], v.len[id]), &nid);
        bool found = false;
        for (size_t k = 0; k < nid; k++) found |= ids[k] == id;
        assert_true(found);
    }
    assert_int_equal(hsd_token_trie_n_tokens(tr), n_text);
    assert_int_equal(hsd_token_trie_max_len(tr), max_len);
    /* special tokens are not in the trie */
    int32_t eos = hsd_tokenizer_eos_id(t);
    if (eos >= 0 && hsd_tokenizer_is_special(t, eos)) {
        size_t len, nid;
        const uint8_t *b = hsd_tokenizer_token_bytes(t, eos, &len);
        const int32_t *ids = hsd_token_trie_ids(tr, hsd_token_trie_walk(tr, 0, b, len), &nid);
        for (size_t k = 0; k < nid; k++) assert_int_not_equal(ids[k], eos);
    }

    int32_t *scratch = malloc((size_t)v.n * sizeof *scratch);
    uint8_t buf[512];
    int checked = 0;
    for (int32_t id = 0; id < v.n; id += stride) {
        if (!v.s[id] || v.len[id] + 2 > sizeof buf) continue;
        memcpy(buf, v.s[id], v.len[id]);
        check_string(tr, &v, buf, v.len[id], scratch);
        check_string(tr, &v, buf, v.len[id] - 1, scratch);
        buf[v.len[id]] = 's';
        check_string(tr, &v, buf, v.len[id] + 1, scratch);
        checked++;
    }
    printf("%s: %d text tokens, %d trie nodes, %d tokens checked against scans\n", fam, n_text,
           hsd_token_trie_n_nodes(tr), checked);
    assert_true(checked > 50);
    free(scratch);
    free(v.s);
    free(v.len);
    hsd_token_trie_free(tr);
    hsd_tokenizer_free(t);
}

static void test_qwen3(void **state) {
    (void)state;
    check_family("qwen3", 1009);
}

static void test_llama2(void **state) {
    (void)state;
    check_family("llama2", 211);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_toy),
        cmocka_unit_test(test_qwen3),
        cmocka_unit_test(test_llama2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
