/* GGUF vocabularies: llama.cpp's own tokenizer test vectors (.inp/.out) pass for gpt-2 and
 * llama-spm, gpt-neox loads and round-trips, hand-built tiny GGUFs encode as designed, and
 * truncated or corrupted files fail with HSD_ERR_PARSE naming the key and byte offset. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsd.h"
#include "tests/testutil.h"

/* ------------------------------------------------------------ vector files ---- */

typedef struct vectors {
    char **text;
    size_t *text_len;
    char **ids_line;
    size_t n;
    char *inp, *out; /* owned buffers */
} vectors;

/* .inp: strings each followed by "\n__ggml_vocab_test__\n"; .out: one line of ids each. */
static void vectors_load(const char *inp_path, const char *out_path, vectors *v) {
    static const char sep[] = "\n__ggml_vocab_test__\n";
    size_t il, ol;
    memset(v, 0, sizeof *v);
    v->inp = hsd_test_read_file(inp_path, &il);
    v->out = hsd_test_read_file(out_path, &ol);
    assert_non_null(v->inp);
    assert_non_null(v->out);
    char *p = v->inp;
    for (;;) {
        char *e = strstr(p, sep);
        if (!e) break;
        v->text = realloc(v->text, (v->n + 1) * sizeof *v->text);
        v->text_len = realloc(v->text_len, (v->n + 1) * sizeof *v->text_len);
        *e = 0;
        v->text[v->n] = p;
        v->text_len[v->n] = (size_t)(e - p);
        v->n++;
        p = e + strlen(sep);
    }
    assert_int_equal(*p, 0); /* nothing after the last separator */
    v->ids_line = calloc(v->n, sizeof *v->ids_line);
    char *q = v->out;
    for (size_t i = 0; i < v->n; i++) {
        char *e = strchr(q, '\n');
        assert_non_null(e);
        *e = 0;
        v->ids_line[i] = q;
        q = e + 1;
    }
    assert_int_equal(*q, 0);
}

static void vectors_free(vectors *v) {
    free(v->text);
    free(v->text_len);
    free(v->ids_line);
    free(v->inp);
    free(v->out);
}

static size_t parse_ids(const char *line, int32_t *ids, size_t cap) {
    size_t n = 0;
    char *end;
    for (;;) {
        long x = strtol(line, &end, 10);
        if (end == line) break;
        assert_true(n < cap);
        ids[n++] = (int32_t)x;
        line = end;
    }
    return n;
}

static hsd_tokenizer *load(const char *rel) {
    hsd_tokenizer *t = NULL;
    hsd_status s = hsd_tokenizer_load_file(hsd_test_path(rel), &t);
    if (s) fprintf(stderr, "load %s: %s\n", rel, hsd_last_error());
    assert_int_equal(s, HSD_OK);
    return t;
}

/* Encodes every vector (no BOS: llama.cpp's test-tokenizer-0 tokenizes with
 * add_special=false, and no .out line starts with a BOS id) and round-trips it. */
static void run_vectors(const char *name) {
    char rel[256], inp[256], out[256];
    snprintf(rel, sizeof rel, "models/vocab-gguf/%s", name);
    snprintf(inp, sizeof inp, "%s.inp", hsd_test_path(rel));
    snprintf(out, sizeof out, "%s.out", hsd_test_path(rel));
    HSD_REQUIRE_FILE(hsd_test_path(rel));
    HSD_REQUIRE_FILE(inp);
    hsd_tokenizer *t = load(rel);
    vectors v;
    vectors_load(inp, out, &v);
    size_t pass = 0, round = 0;
    for (size_t i = 0; i < v.n; i++) {
        int32_t want[4096];
        size_t nw = parse_ids(v.ids_line[i], want, 4096);
        int32_t *got;
        size_t ng;
        assert_int_equal(hsd_tokenizer_encode_alloc(t, v.text[i], v.text_len[i], false, &got, &ng),
                         HSD_OK);
        if (ng == nw && (!nw || !memcmp(got, want, nw * sizeof *got))) {
            pass++;
        } else {
            fprintf(stderr, "%s vector %zu \"%s\":\n  want %s\n  got ", name, i, v.text[i],
                    v.ids_line[i]);
            for (size_t k = 0; k < ng; k++) fprintf(stderr, " %d", got[k]);
            fprintf(stderr, "\n");
        }
        char *dec;
        size_t dl;
        assert_int_equal(hsd_tokenizer_decode_alloc(t, got, ng, false, &dec, &dl), HSD_OK);
        if (dl == v.text_len[i] && !memcmp(dec, v.text[i], dl))
            round++;
        else
            fprintf(stderr, "%s vector %zu: decode gives \"%s\"\n", name, i, dec);
        hsd_free(dec);
        hsd_free(got);
    }
    printf("%s: %zu/%zu llama.cpp vectors pass, %zu/%zu round-trip\n", name, pass, v.n, round, v.n);
    assert_true(v.n >= 40);
    assert_int_equal(pass, v.n);
    assert_int_equal(round, v.n);
    vectors_free(&v);
    hsd_tokenizer_free(t);
}

static void test_vectors_gpt2(void **state) {
    (void)state;
    run_vectors("ggml-vocab-gpt-2.gguf");
}

static void test_vectors_llama_spm(void **state) {
    (void)state;
    run_vectors("ggml-vocab-llama-spm.gguf");
}

/* llama2.c's tokenizer.bin holds the same pieces and scores as the llama-spm GGUF (with real
 * spaces instead of "▁"), so its run.c-style encoder must give llama.cpp's ids too. */
static void test_llama2c_bin_matches_spm_vectors(void **state) {
    (void)state;
    const char *bin = "models/llama2-tokenizer/tokenizer.bin";
    const char *inp = "models/vocab-gguf/ggml-vocab-llama-spm.gguf.inp";
    const char *out = "models/vocab-gguf/ggml-vocab-llama-spm.gguf.out";
    HSD_REQUIRE_FILE(hsd_test_path(bin));
    HSD_REQUIRE_FILE(hsd_test_path(inp));
    hsd_tokenizer *t = load(bin);
    vectors v;
    vectors_load(hsd_test_path(inp), hsd_test_path(out), &v);
    size_t pass = 0;
    for (size_t i = 0; i < v.n; i++) {
        int32_t want[4096], *got;
        size_t nw = parse_ids(v.ids_line[i], want, 4096), ng;
        assert_int_equal(hsd_tokenizer_encode_alloc(t, v.text[i], v.text_len[i], false, &got, &ng),
                         HSD_OK);
        if (ng == nw && (!nw || !memcmp(got, want, nw * sizeof *got)))
            pass++;
        else
            fprintf(stderr, "tokenizer.bin differs on vector %zu \"%s\"\n", i, v.text[i]);
        hsd_free(got);
    }
    printf("llama2 tokenizer.bin: %zu/%zu llama-spm vectors pass\n", pass, v.n);
    assert_int_equal(pass, v.n);
    vectors_free(&v);
    hsd_tokenizer_free(t);
}

static void test_llama_spm_specials(void **state) {
    (void)state;
    const char *rel = "models/vocab-gguf/ggml-vocab-llama-spm.gguf";
    HSD_REQUIRE_FILE(hsd_test_path(rel));
    hsd_tokenizer *t = load(rel);
    assert_int_equal(hsd_tokenizer_vocab_size(t), 32000);
    assert_int_equal(hsd_tokenizer_bos_id(t), 1);
    assert_int_equal(hsd_tokenizer_eos_id(t), 2);
    assert_int_equal(hsd_tokenizer_unk_id(t), 0);
    assert_true(hsd_tokenizer_is_special(t, 0) && hsd_tokenizer_is_special(t, 1) &&
                hsd_tokenizer_is_special(t, 2));
    assert_false(hsd_tokenizer_is_special(t, 15043));
    assert_string_equal(hsd_tokenizer_id_to_token(t, 15043), "\xe2\x96\x81Hello");
    size_t n;
    const uint8_t *b = hsd_tokenizer_token_bytes(t, 15043, &n);
    assert_int_equal(n, 6);
    assert_memory_equal(b, " Hello", 6);
    b = hsd_tokenizer_token_bytes(t, 13, &n); /* <0x0A> */
    assert_int_equal(n, 1);
    assert_int_equal(b[0], '\n');
    /* add_bos_token=true: add_special prepends <s> */
    int32_t ids[16];
    assert_int_equal(hsd_tokenizer_encode(t, "Hello world", 11, true, ids, 16, &n), HSD_OK);
    assert_int_equal(n, 3);
    assert_int_equal(ids[0], 1);
    assert_int_equal(ids[1], 15043);
    assert_int_equal(ids[2], 3186);
    char *s;
    assert_int_equal(hsd_tokenizer_decode_alloc(t, ids, n, true, &s, NULL), HSD_OK);
    assert_string_equal(s, "Hello world");
    hsd_free(s);
    assert_int_equal(hsd_tokenizer_decode_alloc(t, ids, n, false, &s, NULL), HSD_OK);
    assert_string_equal(s, "<s> Hello world");
    hsd_free(s);
    hsd_tokenizer_free(t);
}

static void test_gpt_neox_loads(void **state) {
    (void)state;
    const char *rel = "models/vocab-gguf/ggml-vocab-gpt-neox.gguf";
    const char *inp = "models/vocab-gguf/ggml-vocab-gpt-2.gguf.inp";
    HSD_REQUIRE_FILE(hsd_test_path(rel));
    HSD_REQUIRE_FILE(hsd_test_path(inp));
    hsd_tokenizer *t = load(rel);
    assert_int_equal(hsd_tokenizer_vocab_size(t), 50432);
    assert_int_equal(hsd_tokenizer_token_to_id(t, "<|endoftext|>"), 0);
    assert_true(hsd_tokenizer_is_special(t, 0));
    assert_true(hsd_tokenizer_is_special(t, 1));      /* <|padding|> */
    assert_false(hsd_tokenizer_is_special(t, 50276)); /* user-defined "  " */
    size_t n;
    const uint8_t *b = hsd_tokenizer_token_bytes(t, 50276, &n);
    assert_int_equal(n, 2);
    assert_memory_equal(b, "  ", 2);
    /* byte-level pieces decode to their bytes: "Ġthe" is " the" */
    int32_t the = hsd_tokenizer_token_to_id(t, "\xc4\xa0the");
    assert_true(the > 0);
    b = hsd_tokenizer_token_bytes(t, the, &n);
    assert_int_equal(n, 4);
    assert_memory_equal(b, " the", 4);
    vectors v;
    char out[256];
    snprintf(out, sizeof out, "%s", hsd_test_path("models/vocab-gguf/ggml-vocab-gpt-2.gguf.out"));
    vectors_load(hsd_test_path(inp), out, &v);
    size_t round = 0;
    for (size_t i = 0; i < v.n; i++) {
        int32_t *ids;
        char *dec;
        size_t k, dl;
        assert_int_equal(hsd_tokenizer_encode_alloc(t, v.text[i], v.text_len[i], true, &ids, &k),
                         HSD_OK);
        assert_true(k > 0 || v.text_len[i] == 0);
        assert_int_equal(hsd_tokenizer_decode_alloc(t, ids, k, false, &dec, &dl), HSD_OK);
        if (dl == v.text_len[i] && !memcmp(dec, v.text[i], dl))
            round++;
        else
            fprintf(stderr, "gpt-neox: \"%s\" decodes to \"%s\"\n", v.text[i], dec);
        hsd_free(dec);
        hsd_free(ids);
    }
    printf("ggml-vocab-gpt-neox.gguf: %zu/%zu texts round-trip\n", round, v.n);
    assert_int_equal(round, v.n);
    vectors_free(&v);
    hsd_tokenizer_free(t);
}

/* ------------------------------------------------------------ tiny GGUF writer ---- */

typedef struct gw {
    unsigned char *p;
    size_t n, cap;
} gw;

static void put(gw *w, const void *s, size_t n) {
    if (w->n + n > w->cap) {
        w->cap = (w->n + n) * 2 + 64;
        w->p = realloc(w->p, w->cap);
    }
    memcpy(w->p + w->n, s, n);
    w->n += n;
}
static void u32(gw *w, uint32_t v) {
    unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 24)};
    put(w, b, 4);
}
static void u64(gw *w, uint64_t v) {
    u32(w, (uint32_t)v);
    u32(w, (uint32_t)(v >> 32));
}
static void str(gw *w, const char *s) {
    u64(w, strlen(s));
    put(w, s, strlen(s));
}
static void key(gw *w, const char *k, uint32_t type) {
    str(w, k);
    u32(w, type);
}

typedef struct tiny_opts {
    const char *model; /* "llama" or "gpt2" */
    int drop_scores;   /* write this many fewer scores than tokens */
    int omit_tokens;   /* leave tokenizer.ggml.tokens out */
    int nest;          /* add a key holding arrays nested this deep */
    int scores_as_int; /* store scores as an int32 array */
    const char *pre;   /* tokenizer.ggml.pre, or NULL for none */
} tiny_opts;

typedef struct tiny_offsets {
    size_t n_kv, first_key_len, first_type, tokens_count, model_len;
} tiny_offsets;

static const char *const SPM_TOKENS[] = {"<unk>",
                                         "<s>",
                                         "</s>",
                                         "<0x0A>",
                                         "\xe2\x96\x81",
                                         "a",
                                         "b",
                                         "\xe2\x96\x81"
                                         "a",
                                         "ab",
                                         "\xe2\x96\x81"
                                         "ab",
                                         "aa",
                                         "c"};
static const float SPM_SCORES[] = {0, 0, 0, 0, -1, -2, -3, -4, -5, -6, -5, -7};
static const int32_t SPM_TYPES[] = {2, 3, 3, 6, 1, 1, 1, 1, 1, 1, 1, 1};
static const char *const BPE_TOKENS[] = {"a",
                                         "b",
                                         "c",
                                         "\xc4\xa0",
                                         "ab",
                                         "\xc4\xa0"
                                         "a",
                                         "\xc4\xa0"
                                         "ab",
                                         "<|endoftext|>",
                                         "!",
                                         "!a",
                                         "!ab",
                                         "ca" /* no merge makes it */};
static const int32_t BPE_TYPES[] = {1, 1, 1, 1, 1, 1, 1, 3, 1, 1, 1, 1};
/* rank order matters: "Ġ a" and "! a" come before "a b" so that " ab" and "!ab" (when one
 * piece) become "Ġab" and "!ab", not "Ġ"/"!" + "ab" */
static const char *const BPE_MERGES[] = {"\xc4\xa0 a",
                                         "\xc4\xa0"
                                         "a b",
                                         "! a", "!a b", "a b"};
#define N_BPE_MERGES (sizeof BPE_MERGES / sizeof *BPE_MERGES)

static unsigned char *tiny_gguf(const tiny_opts *o, size_t *len, tiny_offsets *off) {
    gw w = {0};
    bool spm = !strcmp(o->model, "llama");
    size_t nt =
        spm ? sizeof SPM_TOKENS / sizeof *SPM_TOKENS : sizeof BPE_TOKENS / sizeof *BPE_TOKENS;
    const char *const *toks = spm ? SPM_TOKENS : BPE_TOKENS;
    put(&w, "GGUF", 4);
    u32(&w, 3);
    u64(&w, 0);
    size_t nkv_at = w.n;
    u64(&w, 0); /* patched below */
    uint64_t nkv = 0;
    if (off) off->first_key_len = w.n;
    key(&w, "general.architecture", 8);
    if (off) off->first_type = w.n - 4;
    str(&w, spm ? "llama" : "gpt2");
    nkv++;
    key(&w, "tokenizer.ggml.model", 8);
    if (off) off->model_len = w.n;
    str(&w, o->model);
    nkv++;
    if (!o->omit_tokens) {
        key(&w, "tokenizer.ggml.tokens", 9);
        u32(&w, 8);
        if (off) off->tokens_count = w.n;
        u64(&w, nt);
        for (size_t i = 0; i < nt; i++) str(&w, toks[i]);
        nkv++;
    }
    key(&w, "tokenizer.ggml.token_type", 9);
    u32(&w, 5);
    u64(&w, nt);
    for (size_t i = 0; i < nt; i++) u32(&w, (uint32_t)(spm ? SPM_TYPES[i] : BPE_TYPES[i]));
    nkv++;
    if (spm) {
        key(&w, "tokenizer.ggml.scores", 9);
        u32(&w, o->scores_as_int ? 5 : 6);
        u64(&w, nt - (size_t)o->drop_scores);
        for (size_t i = 0; i < nt - (size_t)o->drop_scores; i++) {
            uint32_t b;
            memcpy(&b, &SPM_SCORES[i], 4);
            u32(&w, b);
        }
        nkv++;
        key(&w, "tokenizer.ggml.bos_token_id", 4);
        u32(&w, 1);
        nkv++;
        key(&w, "tokenizer.ggml.add_bos_token", 7);
        put(&w, "\1", 1);
        nkv++;
    } else {
        key(&w, "tokenizer.ggml.merges", 9);
        u32(&w, 8);
        u64(&w, N_BPE_MERGES);
        for (size_t i = 0; i < N_BPE_MERGES; i++) str(&w, BPE_MERGES[i]);
        nkv++;
        if (o->pre) {
            key(&w, "tokenizer.ggml.pre", 8);
            str(&w, o->pre);
            nkv++;
        }
        key(&w, "tokenizer.ggml.eos_token_id", 4);
        u32(&w, 7);
        nkv++;
    }
    if (o->nest) {
        key(&w, "test.nested", 9);
        for (int i = 1; i < o->nest; i++) {
            u32(&w, 9);
            u64(&w, 1);
        }
        u32(&w, 4);
        u64(&w, 1);
        u32(&w, 7);
        nkv++;
    }
    for (int i = 0; i < 8; i++) w.p[nkv_at + (size_t)i] = (unsigned char)(nkv >> (8 * i));
    if (off) off->n_kv = nkv_at;
    *len = w.n;
    return w.p;
}

static hsd_status load_mem(const void *p, size_t n, hsd_tokenizer **t) {
    return hsd_tokenizer_load_memory(p, n, HSD_TOKENIZER_AUTO, "tiny.gguf", t);
}

static void expect_ids(hsd_tokenizer *t, const char *text, const int32_t *want, size_t nw) {
    int32_t ids[64];
    size_t n;
    assert_int_equal(hsd_tokenizer_encode(t, text, strlen(text), false, ids, 64, &n), HSD_OK);
    if (n != nw || memcmp(ids, want, nw * sizeof *ids)) {
        fprintf(stderr, "\"%s\":", text);
        for (size_t i = 0; i < n; i++) fprintf(stderr, " %d", ids[i]);
        fprintf(stderr, "\n");
    }
    assert_int_equal(n, nw);
    assert_memory_equal(ids, want, nw * sizeof *ids);
}

static void test_tiny_spm(void **state) {
    (void)state;
    tiny_opts o = {.model = "llama"};
    size_t len;
    unsigned char *p = tiny_gguf(&o, &len, NULL);
    hsd_tokenizer *t = NULL;
    assert_int_equal(load_mem(p, len, &t), HSD_OK);
    /* "▁ab": ▁+a (-4) merges before a+b (-5), then ▁a+b (-6) */
    expect_ids(t, "ab", (int32_t[]){9}, 1);
    /* ▁a first, then a+a (-5) */
    expect_ids(t, "aaa", (int32_t[]){7, 10}, 2);
    /* a tie between "aa" and "ab" (both -5) goes to the leftmost pair */
    expect_ids(t, "caab", (int32_t[]){4, 11, 10, 6}, 4);
    expect_ids(t, "b aab", (int32_t[]){4, 6, 7, 8}, 4);
    /* byte fallback for "\n", <unk> for a byte without a byte token */
    expect_ids(t, "\nx", (int32_t[]){4, 3, 0}, 3);
    /* spaces are ▁ in the vocabulary */
    expect_ids(t, "c ab", (int32_t[]){4, 11, 9}, 3);
    int32_t ids[8];
    size_t n;
    assert_int_equal(hsd_tokenizer_encode(t, "ab", 2, true, ids, 8, &n), HSD_OK);
    assert_int_equal(n, 2);
    assert_int_equal(ids[0], 1);
    hsd_tokenizer_free(t);
    free(p);
}

static void test_tiny_bpe(void **state) {
    (void)state;
    tiny_opts o = {.model = "gpt2"};
    size_t len;
    unsigned char *p = tiny_gguf(&o, &len, NULL);
    hsd_tokenizer *t = NULL;
    hsd_status s = load_mem(p, len, &t);
    if (s) fprintf(stderr, "%s\n", hsd_last_error());
    assert_int_equal(s, HSD_OK);
    expect_ids(t, "ab ab", (int32_t[]){4, 6}, 2);
    expect_ids(t, "c a", (int32_t[]){2, 5}, 2);
    assert_true(hsd_tokenizer_is_special(t, 7));
    assert_int_equal(hsd_tokenizer_eos_id(t), 7);
    assert_int_equal(hsd_tokenizer_bos_id(t), -1);
    char *dec;
    assert_int_equal(hsd_tokenizer_decode_alloc(t, (int32_t[]){4, 6, 2}, 3, false, &dec, NULL),
                     HSD_OK);
    assert_string_equal(dec, "ab abc");
    hsd_free(dec);
    /* GPT-2 regex: punctuation and letters are separate pieces */
    expect_ids(t, "!ab", (int32_t[]){8, 4}, 2);
    expect_ids(t, "ca", (int32_t[]){2, 0}, 2);
    hsd_tokenizer_free(t);
    free(p);

    /* llama-3 regex: one non-letter may lead a run of letters */
    o.pre = "llama-bpe";
    p = tiny_gguf(&o, &len, NULL);
    s = load_mem(p, len, &t);
    if (s) fprintf(stderr, "%s\n", hsd_last_error());
    assert_int_equal(s, HSD_OK);
    expect_ids(t, "!ab", (int32_t[]){10}, 1);
    expect_ids(t, "ab ab", (int32_t[]){4, 6}, 2);
    /* ...and ignore_merges: a piece that is a token is taken whole */
    expect_ids(t, "ca", (int32_t[]){11}, 1);
    hsd_tokenizer_free(t);
    free(p);

    /* a llama.cpp pre-tokenizer name hsd has no pipeline for is refused by name */
    o.pre = "tekken";
    p = tiny_gguf(&o, &len, NULL);
    assert_int_equal(load_mem(p, len, &t), HSD_ERR_UNSUPPORTED);
    assert_non_null(strstr(hsd_last_error(), "tekken"));
    free(p);
}

/* ------------------------------------------------------------ broken files ---- */

static void expect_parse_error(const void *p, size_t n, const char *needle) {
    hsd_tokenizer *t = (hsd_tokenizer *)1;
    hsd_status s = hsd_tokenizer_load_memory(p, n, HSD_TOKENIZER_GGUF, "bad.gguf", &t);
    if (s != HSD_ERR_PARSE || (needle && !strstr(hsd_last_error(), needle)))
        fprintf(stderr, "status %s, message \"%s\", wanted \"%s\"\n", hsd_status_str(s),
                hsd_last_error(), needle ? needle : "");
    assert_int_equal(s, HSD_ERR_PARSE);
    assert_null(t);
    assert_non_null(strstr(hsd_last_error(), "bad.gguf"));
    if (needle) assert_non_null(strstr(hsd_last_error(), needle));
}

/* Every proper prefix of the tiny files is a parse error; copies are exact-size so that
 * ASan catches any read past the end. */
static void test_every_prefix(void **state) {
    (void)state;
    const char *models[] = {"llama", "gpt2"};
    for (int m = 0; m < 2; m++) {
        tiny_opts o = {.model = models[m]};
        size_t len;
        unsigned char *p = tiny_gguf(&o, &len, NULL);
        for (size_t cut = 0; cut < len; cut++) {
            unsigned char *c = malloc(cut ? cut : 1);
            memcpy(c, p, cut);
            hsd_tokenizer *t = NULL;
            hsd_status s = hsd_tokenizer_load_memory(c, cut, HSD_TOKENIZER_GGUF, "bad.gguf", &t);
            assert_int_equal(s, HSD_ERR_PARSE);
            assert_null(t);
            if (cut >= 24) assert_non_null(strstr(hsd_last_error(), "byte"));
            free(c);
        }
        printf("tiny %s GGUF: all %zu proper prefixes rejected\n", models[m], len);
        free(p);
    }
}

/* Prefixes of a real file, cut inside the header, the token strings, scores and types. */
static void test_real_file_prefixes(void **state) {
    (void)state;
    const char *path = hsd_test_path("models/vocab-gguf/ggml-vocab-llama-spm.gguf");
    HSD_REQUIRE_FILE(path);
    size_t len;
    char *data = hsd_test_read_file(path, &len);
    assert_non_null(data);
    int n = 0;
    for (size_t cut = 0; cut < len; cut = cut < 64 ? cut + 1 : cut + 1 + cut / 8 + 997) {
        char *c = malloc(cut ? cut : 1);
        memcpy(c, data, cut);
        hsd_tokenizer *t = NULL;
        assert_int_equal(hsd_tokenizer_load_memory(c, cut, HSD_TOKENIZER_GGUF, "bad.gguf", &t),
                         HSD_ERR_PARSE);
        free(c);
        n++;
    }
    /* the last byte missing */
    char *c = malloc(len - 1);
    memcpy(c, data, len - 1);
    expect_parse_error(c, len - 1, "byte");
    free(c);
    printf("llama-spm GGUF: %d truncations rejected\n", n + 1);
    free(data);
}

static void patch64(unsigned char *p, size_t at, uint64_t v) {
    for (int i = 0; i < 8; i++) p[at + (size_t)i] = (unsigned char)(v >> (8 * i));
}
static void patch32(unsigned char *p, size_t at, uint32_t v) {
    for (int i = 0; i < 4; i++) p[at + (size_t)i] = (unsigned char)(v >> (8 * i));
}

static void test_corrupt_fields(void **state) {
    (void)state;
    tiny_opts o = {.model = "llama"};
    tiny_offsets off;
    size_t len;
    unsigned char *good = tiny_gguf(&o, &len, &off);
    unsigned char *p = malloc(len);
#define FRESH() memcpy(p, good, len)

    FRESH();
    memcpy(p, "GGUX", 4);
    expect_parse_error(p, len, "magic");
    FRESH();
    patch32(p, 4, 1);
    expect_parse_error(p, len, "version 1");
    FRESH();
    patch32(p, 4, 4);
    expect_parse_error(p, len, "version 4");
    FRESH();
    patch32(p, 4, 0x03000000u); /* a big-endian v3 file */
    expect_parse_error(p, len, "big-endian");
    FRESH();
    patch64(p, off.n_kv, UINT64_MAX / 2);
    expect_parse_error(p, len, "key/value count");
    FRESH();
    patch64(p, off.first_key_len, UINT64_MAX); /* "negative" length */
    expect_parse_error(p, len, "key of pair 0");
    FRESH();
    patch32(p, off.first_type, 13);
    expect_parse_error(p, len, "invalid value type 13");
    FRESH();
    patch64(p, off.model_len, (uint64_t)1 << 40);
    expect_parse_error(p, len, "'tokenizer.ggml.model'");
    FRESH();
    patch64(p, off.tokens_count, (uint64_t)1 << 62);
    expect_parse_error(p, len, "'tokenizer.ggml.tokens'");
    FRESH();
    patch64(p, off.tokens_count, 13); /* one more string than written: misaligns what follows */
    expect_parse_error(p, len, "byte");
    free(p);
    free(good);
#undef FRESH

    /* well-formed GGUFs with unusable vocabularies */
    struct {
        tiny_opts o;
        hsd_status want;
        const char *needle;
    } cases[] = {
        {{.model = "llama", .drop_scores = 1}, HSD_ERR_PARSE, "'tokenizer.ggml.scores'"},
        {{.model = "llama", .scores_as_int = 1}, HSD_ERR_PARSE, "expected array of float32"},
        {{.model = "llama", .omit_tokens = 1}, HSD_ERR_PARSE, "tokenizer.ggml.tokens"},
        {{.model = "llama", .nest = 3}, HSD_OK, NULL},
        {{.model = "llama", .nest = 8}, HSD_ERR_PARSE, "nested"},
        {{.model = "bert"}, HSD_ERR_UNSUPPORTED, "bert"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        unsigned char *q = tiny_gguf(&cases[i].o, &len, NULL);
        hsd_tokenizer *t = NULL;
        hsd_status s = load_mem(q, len, &t);
        if (s != cases[i].want) fprintf(stderr, "case %zu: %s\n", i, hsd_last_error());
        assert_int_equal(s, cases[i].want);
        if (cases[i].needle) assert_non_null(strstr(hsd_last_error(), cases[i].needle));
        hsd_tokenizer_free(t);
        free(q);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vectors_gpt2),
        cmocka_unit_test(test_vectors_llama_spm),
        cmocka_unit_test(test_llama2c_bin_matches_spm_vectors),
        cmocka_unit_test(test_llama_spm_specials),
        cmocka_unit_test(test_gpt_neox_loads),
        cmocka_unit_test(test_tiny_spm),
        cmocka_unit_test(test_tiny_bpe),
        cmocka_unit_test(test_every_prefix),
        cmocka_unit_test(test_real_file_prefixes),
        cmocka_unit_test(test_corrupt_fields),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
