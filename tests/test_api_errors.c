/* Every public function called wrongly: NULL handles and pointers, out-of-range counts, ids,
 * enums and cache positions. Functions that return a status must fail with the documented
 * status and leave a message in hsd_last_error(); getters must return their documented
 * neutral value. Nothing may crash (this test runs under ASan/UBSan in `make asan`).
 *
 * The table below has one row per function in include/hsd.h, and test_every_function_has_a_row
 * fails when the header declares a function without a row: to cover a new function, write a
 * row_<name> function and add ROW(<name>) to `rows`.
 *
 * Fixtures are built in memory (no shared data needed): two tiny BPE tokenizers with different
 * vocabularies and toy "count up" models through hsd_model_iface. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hsd.h"
#include "lib/base/error.h"
#include "tests/testutil.h"

/* ---- fixtures ------------------------------------------------------------------------ */

#define TOY_SPECIALS                                                                               \
    "\"added_tokens\":[{\"id\":0,\"content\":\"<s>\",\"single_word\":false,\"lstrip\":false,"      \
    "\"rstrip\":false,\"normalized\":false,\"special\":true},{\"id\":1,\"content\":\"</s>\","      \
    "\"single_word\":false,\"lstrip\":false,\"rstrip\":false,\"normalized\":false,"                \
    "\"special\":true}],"
/* target vocabulary: 8 ids */
static const char TOK_T[] =
    "{\"version\":\"1.0\"," TOY_SPECIALS
    "\"normalizer\":null,\"pre_tokenizer\":null,\"post_processor\":null,\"decoder\":null,"
    "\"model\":{\"type\":\"BPE\",\"vocab\":{\"<s>\":0,\"</s>\":1,\"a\":2,\"b\":3,\"c\":4,\" \":5,"
    "\"ab\":6,\"abc\":7},\"merges\":[\"a b\",\"ab c\"]}}";
/* drafter vocabulary: 6 ids, a different split of the same text */
static const char TOK_D[] =
    "{\"version\":\"1.0\"," TOY_SPECIALS
    "\"normalizer\":null,\"pre_tokenizer\":null,\"post_processor\":null,\"decoder\":null,"
    "\"model\":{\"type\":\"BPE\",\"vocab\":{\"<s>\":0,\"</s>\":1,\"c\":2,\"b\":3,\"a\":4,\" \":5},"
    "\"merges\":[]}}";

/* A toy model: the next token after t is t+1 (wrapping past the specials). It keeps its cache
 * as the list of tokens it has seen, so kv_truncate/kv_keep are real operations. */
typedef struct toy {
    int32_t vocab, n_ctx, kv[64], len;
} toy;

static int32_t toy_vocab(void *c) {
    return ((toy *)c)->vocab;
}
static int32_t toy_n_ctx(void *c) {
    return ((toy *)c)->n_ctx;
}
static int32_t toy_kv_len(void *c) {
    return ((toy *)c)->len;
}
static hsd_status toy_forward(void *c, const int32_t *tokens, int32_t n, const int32_t *parents,
                              const int32_t *rows, int32_t n_rows, float *logits) {
    toy *m = c;
    (void)parents;
    for (int32_t i = 0; i < n; i++) m->kv[m->len++] = tokens[i];
    for (int32_t r = 0; r < n_rows; r++) {
        int32_t t = tokens[rows ? rows[r] : r], next = t + 1 < m->vocab ? t + 1 : 2;
        for (int32_t v = 0; v < m->vocab; v++) logits[(size_t)r * m->vocab + v] = v == next ? 5 : 0;
    }
    return HSD_OK;
}
static hsd_status toy_truncate(void *c, int32_t len) {
    ((toy *)c)->len = len;
    return HSD_OK;
}
static hsd_status toy_keep(void *c, int32_t base, const int32_t *keep, int32_t n_keep) {
    toy *m = c;
    for (int32_t j = 0; j < n_keep; j++) m->kv[base + j] = m->kv[base + keep[j]];
    m->len = base + n_keep;
    return HSD_OK;
}

static hsd_model_iface toy_iface(toy *m, int32_t vocab) {
    memset(m, 0, sizeof *m);
    m->vocab = vocab;
    m->n_ctx = 64;
    hsd_model_iface f = {.ctx = m,
                         .vocab_size = toy_vocab,
                         .n_ctx = toy_n_ctx,
                         .forward = toy_forward,
                         .kv_len = toy_kv_len,
                         .kv_truncate = toy_truncate,
                         .kv_keep = toy_keep};
    return f;
}

static hsd_tokenizer *tok_t, *tok_d;
static toy toy_t, toy_d, toy_nokeep;
static hsd_model *model_t, *model_d, *model_nokeep;
static hsd_engine *eng_pair, *eng_ar;

static int setup(void **state) {
    (void)state;
    hsd_model_iface f;
    if (hsd_tokenizer_load_memory(TOK_T, strlen(TOK_T), HSD_TOKENIZER_HF_JSON, "toy-t", &tok_t) ||
        hsd_tokenizer_load_memory(TOK_D, strlen(TOK_D), HSD_TOKENIZER_AUTO, "toy-d", &tok_d))
        return fprintf(stderr, "fixture: %s\n", hsd_last_error()), -1;
    f = toy_iface(&toy_t, 8);
    if (hsd_model_from_iface(&f, &model_t)) return -1;
    f = toy_iface(&toy_d, 6);
    if (hsd_model_from_iface(&f, &model_d)) return -1;
    f = toy_iface(&toy_nokeep, 8);
    f.kv_keep = NULL;
    if (hsd_model_from_iface(&f, &model_nokeep)) return -1;
    if (hsd_engine_init(model_t, tok_t, model_d, tok_d, &eng_pair) ||
        hsd_engine_init(model_nokeep, tok_t, NULL, NULL, &eng_ar))
        return fprintf(stderr, "fixture: %s\n", hsd_last_error()), -1;
    return 0;
}

static int teardown(void **state) {
    (void)state;
    hsd_engine_free(eng_pair);
    hsd_engine_free(eng_ar);
    hsd_model_free(model_t);
    hsd_model_free(model_d);
    hsd_model_free(model_nokeep);
    hsd_tokenizer_free(tok_t);
    hsd_tokenizer_free(tok_d);
    return 0;
}

/* The call must return `want` and leave a non-empty message (cleared before the call, so a
 * stale message from an earlier failure does not count). */
#define EXPECT(want, call)                                                                         \
    do {                                                                                           \
        hsd_error_clear();                                                                         \
        hsd_status got_ = (call);                                                                  \
        if (got_ != (want))                                                                        \
            fail_msg("%s returned %s, expected %s (%s)", #call, hsd_status_str(got_),              \
                     hsd_status_str(want), hsd_last_error());                                      \
        assert_true(hsd_last_error()[0] != '\0');                                                  \
    } while (0)

/* ---- errors and library-wide functions ------------------------------------------------ */

static void *other_thread_error(void *arg) {
    (void)arg;
    return (void *)hsd_last_error();
}

static void row_hsd_last_error(void **state) {
    (void)state;
    hsd_error_clear();
    assert_string_equal(hsd_last_error(), "");
    hsd_tokenizer *t;
    assert_int_equal(hsd_tokenizer_load_file("/nonexistent/tokenizer.json", &t), HSD_ERR_IO);
    assert_non_null(strstr(hsd_last_error(), "/nonexistent/tokenizer.json"));
    /* thread-local: a new thread has no message although this one has */
    pthread_t th;
    void *msg;
    assert_int_equal(pthread_create(&th, NULL, other_thread_error, NULL), 0);
    pthread_join(th, &msg);
    assert_non_null(msg);
    assert_int_equal(((const char *)msg)[0], 0);
    assert_true(hsd_last_error()[0] != 0);
}

static void row_hsd_status_str(void **state) {
    (void)state;
    assert_string_equal(hsd_status_str(HSD_OK), "HSD_OK");
    assert_string_equal(hsd_status_str(HSD_ERR_BUFFER_TOO_SMALL), "HSD_ERR_BUFFER_TOO_SMALL");
    assert_string_equal(hsd_status_str((hsd_status)-1), "HSD_ERR_UNKNOWN");
    assert_string_equal(hsd_status_str((hsd_status)10000), "HSD_ERR_UNKNOWN");
}

static void row_hsd_version(void **state) {
    (void)state;
    assert_string_equal(hsd_version(), HSD_VERSION_STRING);
}

static int log_calls;
static void count_log(hsd_log_level l, const char *m, void *u) {
    (void)l, (void)m, (void)u;
    log_calls++;
}

static void row_hsd_log_set(void **state) {
    (void)state;
    hsd_log_set(NULL, NULL);               /* discard: the default */
    hsd_log_set(count_log, &log_calls);    /* install */
    hsd_log_set(NULL, (void *)&log_calls); /* a user pointer without a function: discard */
    hsd_log_set(NULL, NULL);
    assert_int_equal(log_calls, 0); /* nothing above logs */
}

static void row_hsd_free(void **state) {
    (void)state;
    hsd_free(NULL);
}

/* ---- tokenizers ----------------------------------------------------------------------- */

static void row_hsd_tokenizer_load_file(void **state) {
    (void)state;
    hsd_tokenizer *t = (hsd_tokenizer *)1;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_tokenizer_load_file(NULL, &t));
    assert_null(t);
    EXPECT(HSD_ERR_INVALID_ARG, hsd_tokenizer_load_file("x.json", NULL));
    EXPECT(HSD_ERR_IO, hsd_tokenizer_load_file("/nonexistent/x.json", &t));
    assert_null(t);
    EXPECT(HSD_ERR_IO, hsd_tokenizer_load_file("", &t));
    /* a directory is not a tokenizer file */
    EXPECT(HSD_ERR_IO, hsd_tokenizer_load_file("/", &t));
    assert_null(t);
}

static void row_hsd_tokenizer_load_memory(void **state) {
    (void)state;
    hsd_tokenizer *t = (hsd_tokenizer *)1;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_tokenizer_load_memory(NULL, 5, HSD_TOKENIZER_AUTO, NULL, &t));
    assert_null(t);
    EXPECT(HSD_ERR_INVALID_ARG,
           hsd_tokenizer_load_memory(TOK_T, sizeof TOK_T - 1, HSD_TOKENIZER_AUTO, NULL, NULL));
    EXPECT(HSD_ERR_PARSE, hsd_tokenizer_load_memory("", 0, HSD_TOKENIZER_AUTO, "empty", &t));
    EXPECT(HSD_ERR_INVALID_ARG,
           hsd_tokenizer_load_memory(TOK_T, sizeof TOK_T - 1, (hsd_tokenizer_format)99, NULL, &t));
    EXPECT(HSD_ERR_INVALID_ARG,
           hsd_tokenizer_load_memory(TOK_T, sizeof TOK_T - 1, (hsd_tokenizer_format)-1, NULL, &t));
    EXPECT(HSD_ERR_PARSE,
           hsd_tokenizer_load_memory("{\"model\":", 9, HSD_TOKENIZER_AUTO, NULL, &t));
    EXPECT(HSD_ERR_PARSE, hsd_tokenizer_load_memory("GGUF", 4, HSD_TOKENIZER_GGUF, NULL, &t));
    EXPECT(HSD_ERR_PARSE, hsd_tokenizer_load_memory("\1\0", 2, HSD_TOKENIZER_LLAMA2C, NULL, &t));
    assert_null(t);
}

static void row_hsd_tokenizer_free(void **state) {
    (void)state;
    hsd_tokenizer_free(NULL);
}

static void row_hsd_tokenizer_encode(void **state) {
    (void)state;
    int32_t ids[8];
    size_t n = 99;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_tokenizer_encode(NULL, "ab", 2, false, ids, 8, &n));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_tokenizer_encode(tok_t, "ab", 2, false, ids, 8, NULL));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_tokenizer_encode(tok_t, NULL, 2, false, ids, 8, &n));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_tokenizer_encode(tok_t, "ab", 2, false, NULL, 8, &n));
    EXPECT(HSD_ERR_INVALID_UTF8, hsd_tokenizer_encode(tok_t, "a\xff", 2, false, ids, 8, &n));
    assert_non_null(strstr(hsd_last_error(), "1")); /* names the byte offset */
    /* "abc ab c" is 5 ids: with room for 2 the needed size comes back */
    EXPECT(HSD_ERR_BUFFER_TOO_SMALL, hsd_tokenizer_encode(tok_t, "abc ab c", 8, false, ids, 2, &n));
    assert_int_equal(n, 5);
    /* cap 0 with ids NULL asks for the size */
    EXPECT(HSD_ERR_BUFFER_TOO_SMALL,
           hsd_tokenizer_encode(tok_t, "abc ab c", 8, false, NULL, 0, &n));
    assert_int_equal(n, 5);
    /* the valid call, so the row proves the fixture encodes */
    assert_int_equal(hsd_tokenizer_encode(tok_t, "abc ab c", 8, false, ids, 8, &n), HSD_OK);
    assert_int_equal(n, 5);
    assert_int_equal(ids[0], 7);
}

static void row_hsd_tokenizer_encode_alloc(void **state) {
    (void)state;
    int32_t *ids = (int32_t *)1;
    size_t n;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_tokenizer_encode_alloc(NULL, "a", 1, false, &ids, &n));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_tokenizer_encode_alloc(tok_t, "a", 1, false, NULL, &n));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_tokenizer_encode_alloc(tok_t, "a", 1, false, &ids, NULL));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_tokenizer_encode_alloc(tok_t, NULL, 3, false, &ids, &n));
    ids = (int32_t *)1;
    EXPECT(HSD_ERR_INVALID_UTF8, hsd_tokenizer_encode_alloc(tok_t, "\xc3(", 2, false, &ids, &n));
    assert_null(ids);
    /* empty text is valid */
    assert_int_equal(hsd_tokenizer_encode_alloc(tok_t, NULL, 0, false, &ids, &n), HSD_OK);
    assert_int_equal(n, 0);
    hsd_free(ids);
}

static void row_hsd_tokenizer_decode_alloc(void **state) {
    (void)state;
    const int32_t good[] = {2, 3}, bad[] = {2, -1}, big[] = {8}, huge[] = {INT32_MAX};
    char *text = (char *)1;
    size_t len = 7;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_tokenizer_decode_alloc(NULL, good, 2, false, &text, &len));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_tokenizer_decode_alloc(tok_t, good, 2, false, NULL, &len));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_tokenizer_decode_alloc(tok_t, NULL, 2, false, &text, &len));
    EXPECT(HSD_ERR_OUT_OF_RANGE, hsd_tokenizer_decode_alloc(tok_t, bad, 2, false, &text, &len));
    assert_null(text);
    EXPECT(HSD_ERR_OUT_OF_RANGE, hsd_tokenizer_decode_alloc(tok_t, big, 1, true, &text, NULL));
    EXPECT(HSD_ERR_OUT_OF_RANGE, hsd_tokenizer_decode_alloc(tok_t, huge, 1, true, &text, &len));
    assert_null(text);
    assert_int_equal(len, 0);
}

static void row_hsd_tokenizer_vocab_size(void **state) {
    (void)state;
    assert_int_equal(hsd_tokenizer_vocab_size(NULL), 0);
    assert_int_equal(hsd_tokenizer_vocab_size(tok_t), 8);
}

static void row_hsd_tokenizer_id_to_token(void **state) {
    (void)state;
    assert_null(hsd_tokenizer_id_to_token(NULL, 2));
    assert_null(hsd_tokenizer_id_to_token(tok_t, -1));
    assert_null(hsd_tokenizer_id_to_token(tok_t, 8));
    assert_null(hsd_tokenizer_id_to_token(tok_t, INT32_MIN));
    assert_string_equal(hsd_tokenizer_id_to_token(tok_t, 7), "abc");
}

static void row_hsd_tokenizer_token_to_id(void **state) {
    (void)state;
    assert_int_equal(hsd_tokenizer_token_to_id(NULL, "a"), -1);
    assert_int_equal(hsd_tokenizer_token_to_id(tok_t, NULL), -1);
    assert_int_equal(hsd_tokenizer_token_to_id(tok_t, "zzz"), -1);
    assert_int_equal(hsd_tokenizer_token_to_id(tok_t, ""), -1);
    assert_int_equal(hsd_tokenizer_token_to_id(tok_t, "ab"), 6);
}

static void row_hsd_tokenizer_token_bytes(void **state) {
    (void)state;
    size_t len = 99;
    assert_null(hsd_tokenizer_token_bytes(NULL, 2, &len));
    assert_int_equal(len, 0);
    len = 99;
    assert_null(hsd_tokenizer_token_bytes(tok_t, -1, &len));
    assert_int_equal(len, 0);
    assert_null(hsd_tokenizer_token_bytes(tok_t, 8, NULL)); /* len may be NULL */
    const uint8_t *b = hsd_tokenizer_token_bytes(tok_t, 6, &len);
    assert_int_equal(len, 2);
    assert_memory_equal(b, "ab", 2);
}

static void row_hsd_tokenizer_is_special(void **state) {
    (void)state;
    assert_false(hsd_tokenizer_is_special(NULL, 0));
    assert_false(hsd_tokenizer_is_special(tok_t, -1));
    assert_false(hsd_tokenizer_is_special(tok_t, 8));
    assert_true(hsd_tokenizer_is_special(tok_t, 1));
    assert_false(hsd_tokenizer_is_special(tok_t, 2));
}

static void row_hsd_tokenizer_bos_id(void **state) {
    (void)state;
    assert_int_equal(hsd_tokenizer_bos_id(NULL), -1);
}
static void row_hsd_tokenizer_eos_id(void **state) {
    (void)state;
    assert_int_equal(hsd_tokenizer_eos_id(NULL), -1);
}
static void row_hsd_tokenizer_unk_id(void **state) {
    (void)state;
    assert_int_equal(hsd_tokenizer_unk_id(NULL), -1);
    assert_int_equal(hsd_tokenizer_unk_id(tok_t), -1); /* the toy BPE has no unk token */
}

/* ---- models --------------------------------------------------------------------------- */

static void row_hsd_model_default_params(void **state) {
    (void)state;
    hsd_model_params p = hsd_model_default_params();
    assert_int_equal(p.n_ctx, 0);
    assert_true(p.n_threads >= 0);
    assert_true(p.use_mmap);
}

static void row_hsd_model_load(void **state) {
    (void)state;
    hsd_model *m = (hsd_model *)1;
    hsd_model_params p = hsd_model_default_params();
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_load(NULL, NULL, &m));
    assert_null(m);
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_load("model.bin", NULL, NULL));
    EXPECT(HSD_ERR_IO, hsd_model_load("/nonexistent/model.bin", NULL, &m));
    assert_null(m);
    p.n_ctx = -1;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_load("/nonexistent/model.bin", &p, &m));
    p = hsd_model_default_params();
    p.n_threads = -4;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_load("/nonexistent/model.bin", &p, &m));
    p.n_threads = 1 << 30;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_load("/nonexistent/model.bin", &p, &m));
    /* a file that is no model: 12 bytes of text, too short for any header */
    char path[] = "/tmp/hsd_api_errors_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "not a model\n", 12), 12);
    close(fd);
    hsd_status s = hsd_model_load(path, NULL, &m);
    assert_true(s == HSD_ERR_PARSE || s == HSD_ERR_UNSUPPORTED);
    assert_true(hsd_last_error()[0] != 0);
    assert_null(m);
    unlink(path);
}

static void row_hsd_model_from_iface(void **state) {
    (void)state;
    toy t;
    hsd_model_iface f = toy_iface(&t, 8);
    hsd_model *m = (hsd_model *)1;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_from_iface(NULL, &m));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_from_iface(&f, NULL));
    hsd_model_iface g = f;
    g.forward = NULL;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_from_iface(&g, &m));
    g = f;
    g.vocab_size = NULL;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_from_iface(&g, &m));
    g = f;
    g.kv_len = NULL;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_from_iface(&g, &m));
    g = f;
    g.kv_truncate = NULL;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_from_iface(&g, &m));
}

static void row_hsd_model_free(void **state) {
    (void)state;
    hsd_model_free(NULL);
}

static void row_hsd_model_vocab_size(void **state) {
    (void)state;
    assert_int_equal(hsd_model_vocab_size(NULL), 0);
    assert_int_equal(hsd_model_vocab_size(model_t), 8);
}
static void row_hsd_model_n_ctx(void **state) {
    (void)state;
    assert_int_equal(hsd_model_n_ctx(NULL), 0);
    assert_int_equal(hsd_model_n_ctx(model_t), 64);
}
static void row_hsd_model_n_ctx_train(void **state) {
    (void)state;
    assert_int_equal(hsd_model_n_ctx_train(NULL), 0);
    /* a caller-provided model does not say what it was trained for */
    assert_int_equal(hsd_model_n_ctx_train(model_t), 0);
}
static void row_hsd_model_desc(void **state) {
    (void)state;
    assert_string_equal(hsd_model_desc(NULL), "");
    assert_true(strlen(hsd_model_desc(model_t)) > 0);
}
static void row_hsd_model_backend(void **state) {
    (void)state;
    assert_int_equal(hsd_model_backend(NULL), HSD_BACKEND_CPU);
    /* a caller-provided model runs wherever its callbacks run: reported as CPU */
    assert_int_equal(hsd_model_backend(model_t), HSD_BACKEND_CPU);
}
static void row_hsd_backend_name(void **state) {
    (void)state;
    assert_string_equal(hsd_backend_name(HSD_BACKEND_CUDA), "cuda");
    assert_string_equal(hsd_backend_name((hsd_backend)-1), "?");
    assert_string_equal(hsd_backend_name((hsd_backend)(HSD_BACKEND_CUDA + 1)), "?");
}
static void row_hsd_backend_parse(void **state) {
    (void)state;
    assert_int_equal(hsd_backend_parse(NULL), -1);
    assert_int_equal(hsd_backend_parse(""), -1);
    assert_int_equal(hsd_backend_parse("CUDA"), -1);
    assert_int_equal(hsd_backend_parse("cpu"), HSD_BACKEND_CPU);
}
/* ---- sequence slots and batches ---- */
static void row_hsd_model_n_seq(void **state) {
    (void)state;
    assert_int_equal(hsd_model_n_seq(NULL), 0);
    assert_int_equal(hsd_model_n_seq(model_t), 1); /* an iface without slots has one */
}
static void row_hsd_model_seq_current(void **state) {
    (void)state;
    assert_int_equal(hsd_model_seq_current(NULL), 0);
    assert_int_equal(hsd_model_seq_current(model_t), 0);
}
static void row_hsd_model_seq_select(void **state) {
    (void)state;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_seq_select(NULL, 0));
    EXPECT(HSD_ERR_OUT_OF_RANGE, hsd_model_seq_select(model_t, 1));
    EXPECT(HSD_ERR_OUT_OF_RANGE, hsd_model_seq_select(model_t, -1));
    assert_int_equal(hsd_model_seq_select(model_t, 0), HSD_OK);
}
static void row_hsd_model_forward_batch(void **state) {
    (void)state;
    hsd_engine_reset(eng_pair);
    assert_int_equal(hsd_model_kv_truncate(model_t, 0), HSD_OK);
    const int32_t tok[2] = {2, 3}, oob[1] = {8};
    float logits[2 * 8];
    hsd_model_batch_seq one = {.seq = 0, .tokens = tok, .n = 2, .n_rows = 2};
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_forward_batch(NULL, &one, 1, logits));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_forward_batch(model_t, NULL, 1, logits));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_forward_batch(model_t, &one, 0, logits));
    hsd_model_batch_seq bad = one;
    bad.seq = 1; /* the toy model has one slot */
    EXPECT(HSD_ERR_OUT_OF_RANGE, hsd_model_forward_batch(model_t, &bad, 1, logits));
    hsd_model_batch_seq twice[2] = {one, one};
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_forward_batch(model_t, twice, 2, logits));
    bad = one;
    bad.tokens = oob, bad.n = 1, bad.n_rows = 1;
    EXPECT(HSD_ERR_OUT_OF_RANGE, hsd_model_forward_batch(model_t, &bad, 1, logits));
    assert_int_equal(hsd_model_kv_len(model_t), 0);
    assert_int_equal(hsd_model_forward_batch(model_t, &one, 1, logits), HSD_OK);
    assert_int_equal(hsd_model_kv_len(model_t), 2);
    assert_int_equal(hsd_model_kv_truncate(model_t, 0), HSD_OK);
}
static void row_hsd_engine_generate_batch(void **state) {
    (void)state;
    hsd_engine_reset(eng_pair);
    hsd_gen_result r[2];
    memset(r, 0, sizeof r);
    hsd_gen_params p = hsd_gen_default_params();
    p.max_new_tokens = 4;
    const char *prompts[2] = {"ab", "ba"};
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_generate_batch(NULL, prompts, NULL, 1, &p, r));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_generate_batch(eng_pair, NULL, NULL, 1, &p, r));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_generate_batch(eng_pair, prompts, NULL, 1, &p, NULL));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_generate_batch(eng_pair, prompts, NULL, 0, &p, r));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_generate_batch(eng_pair, prompts, NULL, -3, &p, r));
    /* the toy models have one slot: two prompts need two */
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_generate_batch(eng_pair, prompts, NULL, 2, &p, r));
    p.max_new_tokens = -1;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_generate_batch(eng_pair, prompts, NULL, 1, &p, r));
    assert_null(r[0].ids);
    p.max_new_tokens = 4;
    /* the checks hsd_engine_generate makes, made once for both (issue 14: the batch copy
     * skipped these and dereferenced the NULL stop list) */
    p.n_stop = 2;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_generate_batch(eng_pair, prompts, NULL, 1, &p, r));
    p.n_stop = 0;
    p.temp = NAN;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_generate_batch(eng_pair, prompts, NULL, 1, &p, r));
    p.temp = 0;
    p.n_ctx = -1;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_generate_batch(eng_pair, prompts, NULL, 1, &p, r));
    p.n_ctx = 0;
    p.slrs_lookahead = 3;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_generate_batch(eng_pair, prompts, NULL, 1, &p, r));
    p.slrs_lookahead = 0;
    assert_null(r[0].ids);
    p.algo = HSD_ALGO_AR;
    assert_int_equal(hsd_engine_generate_batch(eng_pair, prompts, NULL, 1, &p, r), HSD_OK);
    assert_int_equal(r[0].n_ids, 4);
    assert_int_equal(r[0].stop_reason, HSD_STOP_MAX_TOKENS);
    hsd_gen_result_free(&r[0]);
}

static void row_hsd_model_kv_len(void **state) {
    (void)state;
    assert_int_equal(hsd_model_kv_len(NULL), 0);
}

static void row_hsd_model_forward(void **state) {
    (void)state;
    hsd_engine_reset(eng_pair); /* the engine rows share model_t */
    assert_int_equal(hsd_model_kv_truncate(model_t, 0), HSD_OK);
    const int32_t tok[3] = {2, 3, 4}, oob[2] = {2, 8}, neg[1] = {-1};
    const int32_t rows_bad[1] = {3}, par_bad[3] = {-1, 1, 0}, par_neg[3] = {-1, -2, 0};
    float logits[3 * 8];
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_forward(NULL, tok, 3, NULL, NULL, 3, logits));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_forward(model_t, NULL, 3, NULL, NULL, 3, logits));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_forward(model_t, tok, 0, NULL, NULL, 0, logits));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_forward(model_t, tok, -1, NULL, NULL, 0, logits));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_forward(model_t, tok, 3, NULL, NULL, -1, logits));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_forward(model_t, tok, 3, NULL, NULL, 4, logits));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_forward(model_t, tok, 3, NULL, NULL, 2, logits));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_forward(model_t, tok, 3, NULL, NULL, 3, NULL));
    EXPECT(HSD_ERR_OUT_OF_RANGE, hsd_model_forward(model_t, oob, 2, NULL, NULL, 2, logits));
    EXPECT(HSD_ERR_OUT_OF_RANGE, hsd_model_forward(model_t, neg, 1, NULL, NULL, 1, logits));
    EXPECT(HSD_ERR_OUT_OF_RANGE, hsd_model_forward(model_t, tok, 3, NULL, rows_bad, 1, logits));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_forward(model_t, tok, 3, par_bad, NULL, 3, logits));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_forward(model_t, tok, 3, par_neg, NULL, 3, logits));
    int32_t many[65];
    for (int i = 0; i < 65; i++) many[i] = 2;
    EXPECT(HSD_ERR_OUT_OF_RANGE, hsd_model_forward(model_t, many, 65, NULL, NULL, 0, NULL));
    /* none of the failures touched the cache */
    assert_int_equal(hsd_model_kv_len(model_t), 0);
    assert_int_equal(hsd_model_forward(model_t, tok, 3, NULL, NULL, 3, logits), HSD_OK);
    assert_int_equal(hsd_model_kv_len(model_t), 3);
    assert_true(logits[2 * 8 + 5] > logits[2 * 8 + 4]); /* after 4 comes 5 */
}

static void row_hsd_model_kv_truncate(void **state) {
    (void)state;
    hsd_engine_reset(eng_pair);
    const int32_t tok[3] = {2, 3, 4};
    assert_int_equal(hsd_model_kv_truncate(model_t, 0), HSD_OK);
    assert_int_equal(hsd_model_forward(model_t, tok, 3, NULL, NULL, 0, NULL), HSD_OK);
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_kv_truncate(NULL, 0));
    EXPECT(HSD_ERR_OUT_OF_RANGE, hsd_model_kv_truncate(model_t, -1));
    EXPECT(HSD_ERR_OUT_OF_RANGE, hsd_model_kv_truncate(model_t, 4));
    EXPECT(HSD_ERR_OUT_OF_RANGE, hsd_model_kv_truncate(model_t, INT32_MAX));
    assert_int_equal(hsd_model_kv_len(model_t), 3);
    assert_int_equal(hsd_model_kv_truncate(model_t, 1), HSD_OK);
    assert_int_equal(hsd_model_kv_len(model_t), 1);
}

static void row_hsd_model_kv_keep(void **state) {
    (void)state;
    hsd_engine_reset(eng_pair);
    const int32_t tok[4] = {2, 3, 4, 5}, k_ok[2] = {0, 2}, k_oob[1] = {3}, k_neg[1] = {-1},
                  k_dec[2] = {1, 0}, k_dup[2] = {1, 1};
    assert_int_equal(hsd_model_kv_truncate(model_t, 0), HSD_OK);
    assert_int_equal(hsd_model_forward(model_t, tok, 4, NULL, NULL, 0, NULL), HSD_OK);
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_kv_keep(NULL, 1, k_ok, 2));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_kv_keep(model_t, 1, NULL, 2));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_kv_keep(model_t, 1, k_ok, -1));
    EXPECT(HSD_ERR_OUT_OF_RANGE, hsd_model_kv_keep(model_t, -1, k_ok, 2));
    EXPECT(HSD_ERR_OUT_OF_RANGE, hsd_model_kv_keep(model_t, 5, k_ok, 2));
    EXPECT(HSD_ERR_OUT_OF_RANGE, hsd_model_kv_keep(model_t, 1, k_oob, 1)); /* 1 + 3 = kv_len */
    EXPECT(HSD_ERR_OUT_OF_RANGE, hsd_model_kv_keep(model_t, 1, k_neg, 1));
    EXPECT(HSD_ERR_OUT_OF_RANGE, hsd_model_kv_keep(model_t, 1, k_dec, 2));
    EXPECT(HSD_ERR_OUT_OF_RANGE, hsd_model_kv_keep(model_t, 1, k_dup, 2));
    EXPECT(HSD_ERR_UNSUPPORTED, hsd_model_kv_keep(model_nokeep, 0, NULL, 0));
    assert_int_equal(hsd_model_kv_len(model_t), 4);
    /* keep entries 1+0 and 1+2 of [2 3 4 5]: the cache becomes [2 3 5] */
    assert_int_equal(hsd_model_kv_keep(model_t, 1, k_ok, 2), HSD_OK);
    assert_int_equal(hsd_model_kv_len(model_t), 3);
    assert_int_equal(toy_t.kv[2], 5);
}

/* ---- engine --------------------------------------------------------------------------- */

static void row_hsd_algo_name(void **state) {
    (void)state;
    assert_string_equal(hsd_algo_name(HSD_ALGO_SLEM), "slem");
    assert_string_equal(hsd_algo_name((hsd_algo)-1), "?");
    assert_string_equal(hsd_algo_name((hsd_algo)(HSD_ALGO_AUTO + 1)), "?");
}

static void row_hsd_stop_reason_name(void **state) {
    (void)state;
    assert_string_equal(hsd_stop_reason_name(HSD_STOP_EOS), "eos");
    assert_string_equal(hsd_stop_reason_name(HSD_STOP_CALLBACK), "callback");
    assert_string_equal(hsd_stop_reason_name((hsd_stop_reason)-1), "?");
    assert_string_equal(hsd_stop_reason_name((hsd_stop_reason)(HSD_STOP_CALLBACK + 1)), "?");
}

static void row_hsd_algo_parse(void **state) {
    (void)state;
    assert_int_equal(hsd_algo_parse(NULL), -1);
    assert_int_equal(hsd_algo_parse(""), -1);
    assert_int_equal(hsd_algo_parse("SLEM"), -1); /* names are lower case */
    assert_int_equal(hsd_algo_parse("?"), -1);
    assert_int_equal(hsd_algo_parse("tli"), HSD_ALGO_TLI);
}

static void row_hsd_gen_default_params(void **state) {
    (void)state;
    hsd_gen_params p = hsd_gen_default_params();
    assert_int_equal(p.algo, HSD_ALGO_AUTO);
    assert_int_equal(p.max_new_tokens, 128);
    assert_int_equal(p.n_draft, 4);
    assert_int_equal(p.n_stop, 0);
    assert_null(p.stop);
}

static void row_hsd_engine_init(void **state) {
    (void)state;
    hsd_engine *e = (hsd_engine *)1;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_init(model_t, tok_t, NULL, NULL, NULL));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_init(NULL, tok_t, NULL, NULL, &e));
    assert_null(e);
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_init(model_t, NULL, NULL, NULL, &e));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_init(model_t, tok_t, model_d, NULL, &e));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_init(model_t, tok_t, NULL, tok_d, &e));
    /* a model that reports no vocabulary */
    toy z;
    hsd_model_iface f = toy_iface(&z, 0);
    hsd_model *empty;
    assert_int_equal(hsd_model_from_iface(&f, &empty), HSD_OK);
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_init(empty, tok_t, NULL, NULL, &e));
    assert_null(e);
    hsd_model_free(empty);
    /* models without a context size (no n_ctx callback), as target and as drafter */
    toy nc;
    f = toy_iface(&nc, 8);
    f.n_ctx = NULL;
    hsd_model *no_ctx;
    assert_int_equal(hsd_model_from_iface(&f, &no_ctx), HSD_OK);
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_init(no_ctx, tok_t, NULL, NULL, &e));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_init(model_t, tok_t, no_ctx, tok_t, &e));
    assert_non_null(strstr(hsd_last_error(), "drafter"));
    assert_null(e);
    hsd_model_free(no_ctx);
}

static void row_hsd_engine_free(void **state) {
    (void)state;
    hsd_engine_free(NULL);
}

static void row_hsd_engine_auto_algo(void **state) {
    (void)state;
    char reason[160] = "x";
    assert_int_equal(hsd_engine_auto_algo(NULL, reason, sizeof reason), HSD_ALGO_AR);
    assert_non_null(strstr(reason, "no drafter"));
    assert_int_equal(hsd_engine_auto_algo(eng_ar, NULL, 0), HSD_ALGO_AR);
    /* a 1-byte buffer holds just the terminator */
    assert_int_not_equal(hsd_engine_auto_algo(eng_pair, reason, 1), HSD_ALGO_AR);
    assert_int_equal(reason[0], 0);
    hsd_algo a = hsd_engine_auto_algo(eng_pair, reason, 0); /* cap 0: nothing written */
    assert_true(a == HSD_ALGO_TLI || a == HSD_ALGO_SLEM);
}

static void row_hsd_engine_overlap(void **state) {
    (void)state;
    assert_int_equal(hsd_engine_overlap(NULL), 0);
    assert_int_equal(hsd_engine_overlap(eng_ar), 0);
    /* "c", "b", "a", " " are in both vocabularies (specials are not counted) */
    assert_int_equal(hsd_engine_overlap(eng_pair), 4);
}

static void row_hsd_engine_reset(void **state) {
    (void)state;
    hsd_engine_reset(NULL);
}

static void row_hsd_engine_generate(void **state) {
    (void)state;
    hsd_engine_reset(eng_pair);
    hsd_gen_result r;
    hsd_gen_params p = hsd_gen_default_params();
    p.max_new_tokens = 4;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_generate(NULL, "ab", 2, &p, &r));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_generate(eng_pair, "ab", 2, &p, NULL));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_generate(eng_pair, NULL, 2, &p, &r));
    assert_null(r.ids);
    assert_null(r.text);
    struct {
        const char *what;
        hsd_gen_params p;
    } bad[16];
    int nb = 0;
    for (int i = 0; i < 16; i++) bad[i].p = p;
    bad[nb].what = "max_new_tokens -1", bad[nb++].p.max_new_tokens = -1;
    bad[nb].what = "n_draft 0", bad[nb++].p.n_draft = 0;
    bad[nb].what = "n_draft 64", bad[nb++].p.n_draft = 64;
    bad[nb].what = "k_max 0", bad[nb].p.adaptive_k = true, bad[nb++].p.k_max = 0;
    bad[nb].what = "k_max 1000", bad[nb].p.adaptive_k = true, bad[nb++].p.k_max = 1000;
    bad[nb].what = "algo -1", bad[nb++].p.algo = (hsd_algo)-1;
    bad[nb].what = "algo 99", bad[nb++].p.algo = (hsd_algo)99;
    bad[nb].what = "temp NaN", bad[nb++].p.temp = NAN;
    bad[nb].what = "top_p NaN", bad[nb++].p.top_p = NAN;
    bad[nb].what = "n_stop -1", bad[nb++].p.n_stop = -1;
    bad[nb].what = "stop NULL", bad[nb++].p.n_stop = 2;
    bad[nb].what = "SD across vocabularies", bad[nb++].p.algo = HSD_ALGO_SD;
    bad[nb].what = "n_ctx -1", bad[nb++].p.n_ctx = -1;
    bad[nb].what = "slrs_lookahead 3", bad[nb++].p.slrs_lookahead = 3;
    const char *one[1] = {"ab"};
    for (int i = 0; i < nb; i++) {
        hsd_error_clear();
        hsd_status s = hsd_engine_generate(eng_pair, "ab", 2, &bad[i].p, &r);
        if (s != HSD_ERR_INVALID_ARG)
            fail_msg("%s: got %s (%s)", bad[i].what, hsd_status_str(s), hsd_last_error());
        assert_true(hsd_last_error()[0] != 0);
        assert_null(r.ids);
        /* the batch entry point checks the same (one check for both) */
        hsd_error_clear();
        s = hsd_engine_generate_batch(eng_pair, one, NULL, 1, &bad[i].p, &r);
        if (s != HSD_ERR_INVALID_ARG)
            fail_msg("batch, %s: got %s (%s)", bad[i].what, hsd_status_str(s), hsd_last_error());
        assert_true(hsd_last_error()[0] != 0);
        assert_null(r.ids);
    }
    p.algo = HSD_ALGO_SLEM; /* needs a drafter */
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_generate(eng_ar, "ab", 2, &p, &r));
    p.algo = HSD_ALGO_TLI;
    EXPECT(HSD_ERR_INVALID_UTF8, hsd_engine_generate(eng_pair, "a\x80", 2, &p, &r));
    assert_null(r.ids);
    /* the same engine still works after all those failures; the toy target counts up from
     * the prompt's last id ("ab" = 6), wrapping past the specials: abc, a, b, c */
    p.add_bos = false;
    p.stop_at_eos = false;
    assert_int_equal(hsd_engine_generate(eng_pair, "ab", 2, &p, &r), HSD_OK);
    assert_int_equal(r.n_ids, 4);
    const int32_t want[4] = {7, 2, 3, 4};
    assert_memory_equal(r.ids, want, sizeof want);
    hsd_gen_result_free(&r);
}

static void row_hsd_gen_result_free(void **state) {
    (void)state;
    hsd_gen_result_free(NULL);
    hsd_gen_result r;
    memset(&r, 0, sizeof r);
    hsd_gen_result_free(&r);
    hsd_gen_result_free(&r); /* twice is harmless */
    assert_null(r.ids);
}

/* ---- the table ------------------------------------------------------------------------ */

/* ---- draft heads ---- */
static void row_hsd_head_default_params(void **state) {
    (void)state;
    hsd_head_params p = hsd_head_default_params();
    assert_int_equal(p.kind, HSD_HEAD_FULL);
    assert_int_equal(p.top_k, 2048);
    assert_int_equal(p.rank, 0);
    assert_null(p.keep_ids);
    assert_null(p.factors_path);
    assert_null(p.calib_tokens);
}

static void row_hsd_head_kind_name(void **state) {
    (void)state;
    assert_string_equal(hsd_head_kind_name(HSD_HEAD_SPECULATIVE), "speculative");
    assert_string_equal(hsd_head_kind_name((hsd_head_kind)99), "?");
}

static void row_hsd_model_set_head(void **state) {
    (void)state;
    hsd_head_params p = hsd_head_default_params();
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_set_head(NULL, &p));
    EXPECT(HSD_ERR_UNSUPPORTED, hsd_model_set_head(model_t, &p));
    EXPECT(HSD_ERR_UNSUPPORTED, hsd_model_set_head(model_t, NULL));
}

static void row_hsd_model_set_head_spec(void **state) {
    (void)state;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_set_head_spec(NULL, "full", NULL, NULL, 0));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_set_head_spec(model_t, NULL, NULL, NULL, 0));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_set_head_spec(model_t, "full", NULL, NULL, 2));
    const char *bad[] = {"", "bogus", "full:x", "trim", "trim:", "spec", "spec:0", "spec:x",
                         "spec:8/y", "spec:8:", "lowrank", "lowrank:-1", "lowrank:4x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        EXPECT(HSD_ERR_INVALID_ARG, hsd_model_set_head_spec(model_t, bad[i], NULL, NULL, 0));
        assert_non_null(strstr(hsd_last_error(), bad[i])); /* the message names the spec */
    }
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_set_head_spec(model_t, "tli", NULL, NULL, 0));
    EXPECT(HSD_ERR_IO, hsd_model_set_head_spec(model_t, "trim:/nonexistent/ids.txt", NULL, NULL, 0));
    char path[] = "/tmp/hsd_api_ids_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "3\n# comment\nfour\n", 18), 18);
    close(fd);
    char spec[64];
    snprintf(spec, sizeof spec, "trim:%s", path);
    EXPECT(HSD_ERR_PARSE, hsd_model_set_head_spec(model_t, spec, NULL, NULL, 0));
    assert_non_null(strstr(hsd_last_error(), ":3:")); /* file and line */
    unlink(path);
    /* well-formed, but a caller-provided model has no head to replace */
    EXPECT(HSD_ERR_UNSUPPORTED, hsd_model_set_head_spec(model_t, "full", NULL, NULL, 0));
    EXPECT(HSD_ERR_UNSUPPORTED, hsd_model_set_head_spec(model_t, "spec:4/2", NULL, NULL, 0));
}

static void row_hsd_model_head_desc(void **state) {
    (void)state;
    assert_string_equal(hsd_model_head_desc(NULL), "full");
    assert_string_equal(hsd_model_head_desc(model_t), "full");
}

static void row_hsd_model_save_head(void **state) {
    (void)state;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_save_head(NULL, "/tmp/x.safetensors"));
    EXPECT(HSD_ERR_UNSUPPORTED, hsd_model_save_head(model_t, "/tmp/x.safetensors"));
}

static void row_hsd_model_get_timing(void **state) {
    (void)state;
    hsd_model_timing t;
    memset(&t, 0xff, sizeof t);
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_get_timing(NULL, &t));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_model_get_timing(model_t, NULL));
    EXPECT(HSD_ERR_UNSUPPORTED, hsd_model_get_timing(model_t, &t));
    assert_int_equal(t.n_forward, 0);
    assert_true(t.head_ms == 0 && t.backbone_ms == 0);
}

static void row_hsd_model_reset_timing(void **state) {
    (void)state;
    hsd_model_reset_timing(NULL);
    hsd_model_reset_timing(model_t);
}

static void row_hsd_engine_overlap_ids(void **state) {
    (void)state;
    int32_t ids[8], n = -1;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_overlap_ids(NULL, ids, 8, &n));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_overlap_ids(eng_pair, ids, 8, NULL));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_overlap_ids(eng_pair, NULL, 8, &n));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_overlap_ids(eng_ar, ids, 8, &n));
    EXPECT(HSD_ERR_BUFFER_TOO_SMALL, hsd_engine_overlap_ids(eng_pair, NULL, 0, &n));
    assert_int_equal(n, 4);
    EXPECT(HSD_ERR_BUFFER_TOO_SMALL, hsd_engine_overlap_ids(eng_pair, ids, 3, &n));
    assert_int_equal(hsd_engine_overlap_ids(eng_pair, ids, 8, &n), HSD_OK);
    assert_int_equal(n, 4);
    for (int i = 0; i < 4; i++) assert_int_equal(ids[i], 2 + i);
}

static void row_hsd_engine_set_tli_head(void **state) {
    (void)state;
    const int32_t some[2] = {2, 3};
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_set_tli_head(NULL, NULL, 0));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_set_tli_head(eng_ar, NULL, 0)); /* no drafter */
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_set_tli_head(eng_pair, NULL, 2));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_set_tli_head(eng_pair, some, -1));
    const int32_t outside[1] = {0}; /* not in T ∩ D (the toy pair's overlap is 2..5) */
    EXPECT(HSD_ERR_INVALID_ARG, hsd_engine_set_tli_head(eng_pair, outside, 1));
    /* the toy drafter is caller-provided: it has no head to replace */
    EXPECT(HSD_ERR_UNSUPPORTED, hsd_engine_set_tli_head(eng_pair, some, 2));
}

typedef struct row {
    const char *name;
    CMUnitTestFunction fn;
} row;
#define ROW(f)                                                                                     \
    { #f, row_##f }

static const row rows[] = {
    ROW(hsd_last_error),
    ROW(hsd_status_str),
    ROW(hsd_version),
    ROW(hsd_log_set),
    ROW(hsd_free),
    ROW(hsd_tokenizer_load_file),
    ROW(hsd_tokenizer_load_memory),
    ROW(hsd_tokenizer_free),
    ROW(hsd_tokenizer_encode),
    ROW(hsd_tokenizer_encode_alloc),
    ROW(hsd_tokenizer_decode_alloc),
    ROW(hsd_tokenizer_vocab_size),
    ROW(hsd_tokenizer_id_to_token),
    ROW(hsd_tokenizer_token_to_id),
    ROW(hsd_tokenizer_token_bytes),
    ROW(hsd_tokenizer_is_special),
    ROW(hsd_tokenizer_bos_id),
    ROW(hsd_tokenizer_eos_id),
    ROW(hsd_tokenizer_unk_id),
    ROW(hsd_model_default_params),
    ROW(hsd_model_load),
    ROW(hsd_model_from_iface),
    ROW(hsd_model_free),
    ROW(hsd_model_vocab_size),
    ROW(hsd_model_n_ctx),
    ROW(hsd_model_n_ctx_train),
    ROW(hsd_model_desc),
    ROW(hsd_model_backend),
    ROW(hsd_backend_name),
    ROW(hsd_backend_parse),
    ROW(hsd_model_forward),
    ROW(hsd_model_kv_len),
    ROW(hsd_model_kv_truncate),
    ROW(hsd_model_kv_keep),
    ROW(hsd_algo_name),
    ROW(hsd_algo_parse),
    ROW(hsd_stop_reason_name),
    ROW(hsd_gen_default_params),
    ROW(hsd_engine_init),
    ROW(hsd_engine_free),
    ROW(hsd_engine_auto_algo),
    ROW(hsd_engine_overlap),
    ROW(hsd_engine_reset),
    ROW(hsd_engine_generate),
    ROW(hsd_gen_result_free),
    ROW(hsd_head_default_params),
    ROW(hsd_head_kind_name),
    ROW(hsd_model_set_head),
    ROW(hsd_model_set_head_spec),
    ROW(hsd_model_head_desc),
    ROW(hsd_model_save_head),
    ROW(hsd_model_get_timing),
    ROW(hsd_model_reset_timing),
    ROW(hsd_engine_overlap_ids),
    ROW(hsd_engine_set_tli_head),
    ROW(hsd_model_n_seq),
    ROW(hsd_model_seq_current),
    ROW(hsd_model_seq_select),
    ROW(hsd_model_forward_batch),
    ROW(hsd_engine_generate_batch),
};
#define N_ROWS (sizeof rows / sizeof rows[0])

static void test_every_function_has_a_row(void **state) {
    (void)state;
    char **decl;
    size_t n = hsd_test_header_functions(&decl);
    assert_true(n >= N_ROWS / 2); /* the header was found and parsed */
    int missing = 0;
    for (size_t i = 0; i < n; i++) {
        bool found = false;
        for (size_t r = 0; r < N_ROWS && !found; r++) found = !strcmp(rows[r].name, decl[i]);
        if (!found) {
            fprintf(stderr, "hsd.h declares %s but test_api_errors.c has no row for it\n", decl[i]);
            missing++;
        }
    }
    for (size_t r = 0; r < N_ROWS; r++) {
        bool found = false;
        for (size_t i = 0; i < n && !found; i++) found = !strcmp(rows[r].name, decl[i]);
        if (!found) {
            fprintf(stderr, "row %s: no such function in hsd.h\n", rows[r].name);
            missing++;
        }
    }
    hsd_test_free_names(decl, n);
    assert_int_equal(missing, 0);
}

int main(void) {
    struct CMUnitTest tests[N_ROWS + 1];
    tests[0] = (struct CMUnitTest)cmocka_unit_test(test_every_function_has_a_row);
    for (size_t r = 0; r < N_ROWS; r++)
        tests[r + 1] = (struct CMUnitTest){rows[r].name, rows[r].fn, NULL, NULL, NULL};
    return _cmocka_run_group_tests("api_errors", tests, N_ROWS + 1, setup, teardown);
}
