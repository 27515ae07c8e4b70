/* llama2.c tokenizer.bin: encodings match the run.c oracle in reference_outputs.json, the
 * heap-based merger equals a naive run.c-style rescan on random texts, decode follows run.c,
 * special ids behave, tok105 maps unknown characters to <unk>, and broken files fail cleanly. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hsd.h"
#include "tests/testutil.h"

static const struct {
    const char *key, *path;
} MODELS[] = {
    {"stories260K", "models/stories260K/tok512.bin"},
    {"babyllama-tok105", "models/babyllama-tok105/tok105.bin"},
    {"llama2-tokenizer", "models/llama2-tokenizer/tokenizer.bin"},
};

static hsd_tokenizer *load(const char *rel) {
    hsd_tokenizer *t = NULL;
    hsd_status s = hsd_tokenizer_load_file(hsd_test_path(rel), &t);
    if (s) fprintf(stderr, "load %s: %s\n", rel, hsd_last_error());
    assert_int_equal(s, HSD_OK);
    return t;
}

static void assert_ids(const int32_t *got, size_t n_got, const json_t *want, const char *what) {
    size_t n = json_array_size(want);
    int ok = n == n_got;
    for (size_t i = 0; ok && i < n; i++) ok = got[i] == json_integer_value(json_array_get(want, i));
    if (!ok) {
        fprintf(stderr, "%s: got %zu ids:", what, n_got);
        for (size_t i = 0; i < n_got; i++) fprintf(stderr, " %d", got[i]);
        fprintf(stderr, "\n  want %zu ids:", n);
        for (size_t i = 0; i < n; i++)
            fprintf(stderr, " %lld", (long long)json_integer_value(json_array_get(want, i)));
        fprintf(stderr, "\n");
    }
    assert_true(ok);
}

/* Encodes `text` with BOS and checks against the oracle ids. */
static void check_encode(hsd_tokenizer *t, const char *text, const json_t *want, const char *what) {
    int32_t *ids;
    size_t n;
    assert_int_equal(hsd_tokenizer_encode_alloc(t, text, strlen(text), true, &ids, &n), HSD_OK);
    assert_ids(ids, n, want, what);
    hsd_free(ids);
}

static void test_reference_encodings(void **state) {
    (void)state;
    const char *ref = hsd_test_path("models/reference_outputs.json");
    HSD_REQUIRE_FILE(ref);
    json_error_t err;
    json_t *root = json_load_file(ref, 0, &err);
    assert_non_null(root);
    int total = 0;
    for (size_t m = 0; m < sizeof MODELS / sizeof *MODELS; m++) {
        const char *path = hsd_test_path(MODELS[m].path);
        HSD_REQUIRE_FILE(path);
        hsd_tokenizer *t = load(MODELS[m].path);
        json_t *model = json_object_get(root, MODELS[m].key);
        assert_non_null(model);
        int passed = 0;
        const char *text;
        json_t *ids;
        json_object_foreach(json_object_get(model, "encode_examples"), text, ids) {
            check_encode(t, text, ids, text);
            passed++;
        }
        json_t *story = json_object_get(model, "story_text");
        if (story) {
            check_encode(t, json_string_value(story), json_object_get(model, "story_ids"),
                         "story_text");
            passed++;
        }
        /* run.c prints the greedy continuation after BOS with its leading space dropped:
         * decoding the ids (no BOS) must give exactly that text */
        json_t *greedy = json_object_get(model, "greedy_ids");
        if (greedy) {
            size_t n = json_array_size(greedy);
            int32_t *g = malloc(n * sizeof *g);
            for (size_t i = 0; i < n; i++)
                g[i] = (int32_t)json_integer_value(json_array_get(greedy, i));
            char *txt;
            assert_int_equal(hsd_tokenizer_decode_alloc(t, g, n, true, &txt, NULL), HSD_OK);
            assert_string_equal(txt, json_string_value(json_object_get(model, "greedy_text")));
            hsd_free(txt);
            free(g);
            passed++;
        }
        printf("%s: %d reference checks passed\n", MODELS[m].key, passed);
        assert_true(passed >= 3);
        total += passed;
        hsd_tokenizer_free(t);
    }
    printf("llama2.c reference checks: %d passed\n", total);
    json_decref(root);
}

/* ---- a naive run.c encode (full rescan per merge) as an oracle for the heap merger ---- */

typedef struct naive_vocab {
    int n;
    char **str;
    int *len;
    float *score;
} naive_vocab;

static void naive_load(const char *path, naive_vocab *v) {
    size_t len;
    unsigned char *d = (unsigned char *)hsd_test_read_file(path, &len);
    assert_non_null(d);
    size_t off = 4;
    v->n = 0;
    v->str = NULL;
    v->len = NULL;
    v->score = NULL;
    while (off + 8 <= len) {
        float sc;
        int32_t l;
        memcpy(&sc, d + off, 4);
        memcpy(&l, d + off + 4, 4);
        v->str = realloc(v->str, (size_t)(v->n + 1) * sizeof *v->str);
        v->len = realloc(v->len, (size_t)(v->n + 1) * sizeof *v->len);
        v->score = realloc(v->score, (size_t)(v->n + 1) * sizeof *v->score);
        v->str[v->n] = malloc((size_t)l + 1);
        memcpy(v->str[v->n], d + off + 8, (size_t)l);
        v->len[v->n] = l;
        v->score[v->n] = sc;
        v->n++;
        off += 8 + (size_t)l;
    }
    free(d);
}

static void naive_free(naive_vocab *v) {
    for (int i = 0; i < v->n; i++) free(v->str[i]);
    free(v->str);
    free(v->len);
    free(v->score);
}

static int naive_lookup(const naive_vocab *v, const char *s, size_t n) {
    for (int i = 0; i < v->n; i++)
        if ((size_t)v->len[i] == n && !memcmp(v->str[i], s, n)) return i;
    return -1;
}

/* run.c encode(): per-character lookup (byte+3 fallback when there are byte tokens, else
 * <unk>), then merge the best-scoring pair (strict '>', so the leftmost wins ties). */
static size_t naive_encode(const naive_vocab *v, const char *text, int32_t *out, bool bytes) {
    size_t n = 0, tl = strlen(text);
    char *buf = malloc(2 * tl + 8);
    if (tl) out[n++] = naive_lookup(v, " ", 1);
    for (size_t i = 0; i < tl;) {
        size_t cl = 1;
        while (i + cl < tl && ((unsigned char)text[i + cl] & 0xC0) == 0x80 && cl < 4) cl++;
        int id = naive_lookup(v, text + i, cl);
        if (id >= 0)
            out[n++] = id;
        else if (bytes)
            for (size_t k = 0; k < cl; k++) out[n++] = (unsigned char)text[i + k] + 3;
        else
            out[n++] = 0;
        i += cl;
    }
    for (;;) {
        float best = -1e10f;
        int best_id = -1;
        size_t best_i = 0;
        for (size_t i = 0; i + 1 < n; i++) {
            int a = out[i], b = out[i + 1];
            memcpy(buf, v->str[a], (size_t)v->len[a]);
            memcpy(buf + v->len[a], v->str[b], (size_t)v->len[b]);
            int id = naive_lookup(v, buf, (size_t)(v->len[a] + v->len[b]));
            if (id >= 0 && v->score[id] > best) {
                best = v->score[id];
                best_id = id;
                best_i = i;
            }
        }
        if (best_id < 0) break;
        out[best_i] = best_id;
        memmove(out + best_i + 1, out + best_i + 2, (n - best_i - 2) * sizeof *out);
        n--;
    }
    free(buf);
    return n;
}

static void test_matches_naive_runc(void **state) {
    (void)state;
    /* pieces that create many equal-score and overlapping merge candidates */
    static const char *const atoms[] = {" ",  "  ",   "a",    "aa",          "the", " the", "e",
                                        "ll", "o",    "Lily", ".",           ",",   "\n",   "\t",
                                        "é",  "世界", "🙂", "ab",          "ba",  "ing",  "er",
                                        "0",  "12",   "!",    "\xe2\x80\x8a"};
    const size_t n_atoms = sizeof atoms / sizeof *atoms;
    for (size_t m = 0; m < sizeof MODELS / sizeof *MODELS; m++) {
        const char *path = hsd_test_path(MODELS[m].path);
        HSD_REQUIRE_FILE(path);
        naive_vocab v;
        naive_load(path, &v);
        hsd_tokenizer *t = load(MODELS[m].path);
        bool bytes = hsd_tokenizer_token_to_id(t, "<0x41>") >= 0;
        unsigned seed = 12345u + (unsigned)m;
        int cases = m == 2 ? 60 : 300; /* the naive lookup is linear in the 32k vocab */
        for (int c = 0; c < cases; c++) {
            char text[512] = "";
            size_t len = 0;
            int parts = (int)(rand_r(&seed) % 30);
            for (int p = 0; p < parts; p++) {
                const char *a = atoms[rand_r(&seed) % n_atoms];
                size_t al = strlen(a);
                if (len + al >= sizeof text) break;
                memcpy(text + len, a, al);
                len += al;
                text[len] = 0;
            }
            int32_t want[2048];
            size_t nw = naive_encode(&v, text, want, bytes);
            int32_t *got;
            size_t ng;
            assert_int_equal(hsd_tokenizer_encode_alloc(t, text, len, false, &got, &ng), HSD_OK);
            int ok = ng == nw && (!nw || !memcmp(got, want, nw * sizeof *got));
            if (!ok) fprintf(stderr, "%s: mismatch on \"%s\"\n", MODELS[m].key, text);
            assert_true(ok);
            hsd_free(got);
        }
        printf("%s: %d random texts equal the naive run.c encoder\n", MODELS[m].key, cases);
        hsd_tokenizer_free(t);
        naive_free(&v);
    }
}

static void test_special_and_decode(void **state) {
    (void)state;
    const char *path = hsd_test_path(MODELS[2].path);
    HSD_REQUIRE_FILE(path);
    hsd_tokenizer *t = load(MODELS[2].path);
    assert_int_equal(hsd_tokenizer_vocab_size(t), 32000);
    assert_int_equal(hsd_tokenizer_bos_id(t), 1);
    assert_int_equal(hsd_tokenizer_eos_id(t), 2);
    assert_int_equal(hsd_tokenizer_unk_id(t), 0);
    assert_true(hsd_tokenizer_is_special(t, 1));
    assert_true(hsd_tokenizer_is_special(t, 2));
    assert_false(hsd_tokenizer_is_special(t, 9038));
    assert_string_equal(hsd_tokenizer_id_to_token(t, 1), "\n<s>\n");
    assert_string_equal(hsd_tokenizer_id_to_token(t, 9038), " Once");
    assert_int_equal(hsd_tokenizer_token_to_id(t, " Once"), 9038);

    /* surface bytes: byte tokens are their byte, pieces are their text */
    size_t n;
    const uint8_t *b = hsd_tokenizer_token_bytes(t, 0x41 + 3, &n);
    assert_int_equal(n, 1);
    assert_int_equal(b[0], 0x41);
    b = hsd_tokenizer_token_bytes(t, 9038, &n);
    assert_int_equal(n, 5);
    assert_memory_equal(b, " Once", 5);

    /* empty text: BOS only with add_special, nothing without (no dummy prefix) */
    int32_t ids[64];
    size_t k;
    assert_int_equal(hsd_tokenizer_encode(t, "", 0, true, ids, 64, &k), HSD_OK);
    assert_int_equal(k, 1);
    assert_int_equal(ids[0], 1);
    assert_int_equal(hsd_tokenizer_encode(t, "", 0, false, ids, 64, &k), HSD_OK);
    assert_int_equal(k, 0);
    /* buffer too small reports the size needed */
    assert_int_equal(hsd_tokenizer_encode(t, "Once upon a time", 16, true, ids, 2, &k),
                     HSD_ERR_BUFFER_TOO_SMALL);
    assert_int_equal(k, 5);

    /* byte fallback: a character missing from the vocabulary becomes byte+3 ids */
    const char *rare = "\xf0\x9f\x99\x82"; /* U+1F642 */
    assert_int_equal(hsd_tokenizer_token_to_id(t, rare), -1);
    assert_int_equal(hsd_tokenizer_encode(t, rare, 4, false, ids, 64, &k), HSD_OK);
    assert_int_equal(k, 5);
    assert_int_equal(ids[0], hsd_tokenizer_token_to_id(t, " "));
    for (int i = 0; i < 4; i++) assert_int_equal(ids[1 + i], (unsigned char)rare[i] + 3);

    /* decode: BOS/EOS dropped by skip_special, kept otherwise; leading space stripped */
    const char *text = "Hello 世界 🙂, byte\tfallback\nand   spaces ";
    int32_t *enc;
    assert_int_equal(hsd_tokenizer_encode_alloc(t, text, strlen(text), true, &enc, &k), HSD_OK);
    assert_int_equal(enc[0], 1);
    enc = realloc(enc, (k + 1) * sizeof *enc);
    enc[k++] = 2;
    char *out;
    size_t out_len;
    assert_int_equal(hsd_tokenizer_decode_alloc(t, enc, k, true, &out, &out_len), HSD_OK);
    assert_string_equal(out, text);
    assert_int_equal(out_len, strlen(text));
    hsd_free(out);
    assert_int_equal(hsd_tokenizer_decode_alloc(t, enc, k, false, &out, NULL), HSD_OK);
    assert_non_null(strstr(out, "\n<s>\n"));
    assert_non_null(strstr(out, "\n</s>\n"));
    hsd_free(out);
    hsd_free(enc);

    /* a lone byte token that is not UTF-8 decodes to U+FFFD */
    int32_t lone[] = {0xE4 + 3};
    assert_int_equal(hsd_tokenizer_decode_alloc(t, lone, 1, true, &out, NULL), HSD_OK);
    assert_string_equal(out, "\xef\xbf\xbd");
    hsd_free(out);

    int32_t bad[] = {32000};
    assert_int_equal(hsd_tokenizer_decode_alloc(t, bad, 1, true, &out, NULL), HSD_ERR_OUT_OF_RANGE);
    hsd_tokenizer_free(t);
}

static void test_round_trip_and_long_text(void **state) {
    (void)state;
    const char *path = hsd_test_path(MODELS[2].path);
    HSD_REQUIRE_FILE(path);
    hsd_tokenizer *t = load(MODELS[2].path);
    hsd_tokenizer *t512 = load(MODELS[0].path);
    /* ~1.5 MB: the merger must stay near-linear */
    const char *unit =
        "Once upon a time, there was a little girl named Lily. Ünïcödé 世界 🙂\n";
    size_t ul = strlen(unit), reps = 20000, len = ul * reps;
    char *text = malloc(len + 1);
    for (size_t i = 0; i < reps; i++) memcpy(text + i * ul, unit, ul);
    text[len] = 0;
    hsd_tokenizer *both[] = {t, t512};
    for (int w = 0; w < 2; w++) {
        clock_t c0 = clock();
        int32_t *ids;
        size_t n;
        assert_int_equal(hsd_tokenizer_encode_alloc(both[w], text, len, false, &ids, &n), HSD_OK);
        double secs = (double)(clock() - c0) / CLOCKS_PER_SEC;
        printf("encode %zu bytes -> %zu ids in %.3f s\n", len, n, secs);
        assert_true(secs < 20.0); /* generous for ASan; O(n^2) would take hours */
        char *out;
        size_t out_len;
        assert_int_equal(hsd_tokenizer_decode_alloc(both[w], ids, n, true, &out, &out_len), HSD_OK);
        assert_int_equal(out_len, len);
        assert_true(memcmp(out, text, len) == 0);
        hsd_free(out);
        hsd_free(ids);
    }
    free(text);
    hsd_tokenizer_free(t);
    hsd_tokenizer_free(t512);
}

/* tok105 has no byte tokens: characters outside its alphabet are <unk> (0), one per char. */
static void test_tok105_unknown(void **state) {
    (void)state;
    const char *path = hsd_test_path(MODELS[1].path);
    HSD_REQUIRE_FILE(path);
    hsd_tokenizer *t = load(MODELS[1].path);
    assert_int_equal(hsd_tokenizer_vocab_size(t), 105);
    assert_int_equal(hsd_tokenizer_token_to_id(t, "<0x41>"), -1);
    int32_t ids[64];
    size_t k;
    const char *text = "a世🙂b";
    assert_int_equal(hsd_tokenizer_encode(t, text, strlen(text), true, ids, 64, &k), HSD_OK);
    int32_t a = hsd_tokenizer_token_to_id(t, "a"), b = hsd_tokenizer_token_to_id(t, "b"),
            sp = hsd_tokenizer_token_to_id(t, " ");
    assert_true(a > 0 && b > 0 && sp > 0);
    int32_t want[] = {1, sp, a, 0, 0, b};
    assert_int_equal(k, 6);
    assert_memory_equal(ids, want, sizeof want);
    /* decode: <unk> is special and dropped by skip_special */
    char *out;
    assert_int_equal(hsd_tokenizer_decode_alloc(t, ids, k, true, &out, NULL), HSD_OK);
    assert_string_equal(out, "ab");
    hsd_free(out);
    hsd_tokenizer_free(t);
}

/* Every prefix of a real file either fails with HSD_ERR_PARSE or (cut exactly between
 * entries, which the format cannot detect) loads a shorter vocabulary. */
static void test_truncated_and_garbage(void **state) {
    (void)state;
    const char *path = hsd_test_path(MODELS[1].path);
    HSD_REQUIRE_FILE(path);
    size_t len;
    char *data = hsd_test_read_file(path, &len);
    assert_non_null(data);
    int parse_errors = 0, shorter = 0;
    for (size_t cut = 0; cut < len; cut++) {
        char *copy = malloc(cut ? cut : 1); /* exact size so ASan sees any overread */
        memcpy(copy, data, cut);
        hsd_tokenizer *t = NULL;
        hsd_status s =
            hsd_tokenizer_load_memory(copy, cut, HSD_TOKENIZER_LLAMA2C, "tok105.bin", &t);
        if (s == HSD_OK) {
            assert_true(hsd_tokenizer_vocab_size(t) < 105);
            shorter++;
            hsd_tokenizer_free(t);
        } else {
            assert_int_equal(s, HSD_ERR_PARSE);
            assert_null(t);
            assert_non_null(strstr(hsd_last_error(), "tok105.bin"));
            parse_errors++;
        }
        free(copy);
    }
    printf("tok105 prefixes: %d parse errors, %d shorter vocabularies\n", parse_errors, shorter);
    assert_true(parse_errors > (int)len * 3 / 4);

    /* negative max_token_length, negative and huge token lengths */
    unsigned char bad[32];
    memcpy(bad, data, sizeof bad);
    int32_t v = -5;
    memcpy(bad, &v, 4);
    hsd_tokenizer *t = NULL;
    assert_int_equal(hsd_tokenizer_load_memory(bad, sizeof bad, HSD_TOKENIZER_LLAMA2C, "neg", &t),
                     HSD_ERR_PARSE);
    assert_non_null(strstr(hsd_last_error(), "max_token_length"));
    memcpy(bad, data, sizeof bad);
    v = -1;
    memcpy(bad + 8, &v, 4); /* length of token 0 */
    assert_int_equal(
        hsd_tokenizer_load_memory(bad, sizeof bad, HSD_TOKENIZER_LLAMA2C, "neglen", &t),
        HSD_ERR_PARSE);
    assert_non_null(strstr(hsd_last_error(), "byte 8"));
    v = 0x7fffffff;
    memcpy(bad, &v, 4);
    memcpy(bad + 8, &v, 4);
    assert_int_equal(hsd_tokenizer_load_memory(bad, sizeof bad, HSD_TOKENIZER_LLAMA2C, "huge", &t),
                     HSD_ERR_PARSE);
    assert_null(t);
    /* plain text is detected as llama2.c (not JSON, not GGUF) and rejected */
    const char *junk = "this is not a tokenizer at all";
    assert_int_equal(hsd_tokenizer_load_memory(junk, strlen(junk), HSD_TOKENIZER_AUTO, "junk", &t),
                     HSD_ERR_PARSE);
    free(data);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference_encodings), cmocka_unit_test(test_matches_naive_runc),
        cmocka_unit_test(test_special_and_decode),  cmocka_unit_test(test_round_trip_and_long_text),
        cmocka_unit_test(test_tok105_unknown),      cmocka_unit_test(test_truncated_and_garbage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
