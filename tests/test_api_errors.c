/* Every public function called wrongly: NULL handles and pointers, out-of-range counts, ids,
 * enums and cache positions. Functions that return a status must fail with the documented
 * status and leave a message in hsd_last_error(); getters must return their documented
 * neutral value. Nothing may crash (this test runs under ASan/UBSan in `make asan`).
 *
 * This file: errors, library-wide functions and tokenizers; models are in
 * test_api_errors_model.c, the engine and draft heads in test_api_errors_engine.c. The row
 * lists in tests/api_errors_fixture.h have one row per function in include/hsd.h, and
 * test_every_function_has_a_row (here) fails when the header declares a function without a
 * row in any part: to cover a new function, write a row_<name> function in the part of its
 * concept and add X(<name>) to that part's list. */
#include "tests/api_errors_fixture.h"

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

static void row_hsd_struct_size(void **state) {
    (void)state;
    assert_int_equal(hsd_struct_size(NULL), 0);
    assert_int_equal(hsd_struct_size("hsd_no_such_struct"), 0);
    /* the library was built from this header: the sizes agree with the compiler's */
    assert_int_equal(hsd_struct_size("hsd_model_params"), sizeof(hsd_model_params));
    assert_int_equal(hsd_struct_size("hsd_gen_result"), sizeof(hsd_gen_result));
    assert_int_equal(hsd_struct_size("hsd_model_iface"), sizeof(hsd_model_iface));
    assert_int_equal(hsd_struct_size("hsd_batch_event"), sizeof(hsd_batch_event));
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

/* ---- chat templates ------------------------------------------------------------------- */

static void row_hsd_chat_default_params(void **state) {
    (void)state;
    hsd_chat_params p = hsd_chat_default_params();
    assert_int_equal(p.size, sizeof p);
    assert_true(p.now_unix < 0); /* the current time */
}

static void row_hsd_chat_template_load(void **state) {
    (void)state;
    hsd_chat_template *t = (hsd_chat_template *)1;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_chat_template_load(NULL, NULL, &t));
    assert_null(t);
    EXPECT(HSD_ERR_INVALID_ARG, hsd_chat_template_load("x.jinja", NULL, NULL));
    EXPECT(HSD_ERR_IO, hsd_chat_template_load("/nonexistent/x.jinja", NULL, &t));
    assert_null(t);
    EXPECT(HSD_ERR_IO, hsd_chat_template_load("", NULL, &t));
    EXPECT(HSD_ERR_IO, hsd_chat_template_load("/", NULL, &t)); /* no //tokenizer_config.json */
    assert_null(t);
}

static void row_hsd_chat_template_from_string(void **state) {
    (void)state;
    hsd_chat_template *t = (hsd_chat_template *)1;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_chat_template_from_string(NULL, &t));
    assert_null(t);
    EXPECT(HSD_ERR_INVALID_ARG, hsd_chat_template_from_string("x", NULL));
    EXPECT(HSD_ERR_PARSE, hsd_chat_template_from_string("{% if %}", &t));
    assert_null(t);
    EXPECT(HSD_ERR_INVALID_UTF8, hsd_chat_template_from_string("\xc3(", &t));
    assert_null(t);
}

static void row_hsd_chat_template_free(void **state) {
    (void)state;
    hsd_chat_template_free(NULL);
}

static void row_hsd_chat_template_bos(void **state) {
    (void)state;
    assert_null(hsd_chat_template_bos(NULL));
    hsd_chat_template *t;
    assert_int_equal(hsd_chat_template_from_string("x", &t), HSD_OK);
    assert_null(hsd_chat_template_bos(t)); /* a bare template carries no tokens */
    hsd_chat_template_free(t);
}

static void row_hsd_chat_template_eos(void **state) {
    (void)state;
    assert_null(hsd_chat_template_eos(NULL));
}

static void row_hsd_chat_render_json(void **state) {
    (void)state;
    hsd_chat_template *t;
    assert_int_equal(hsd_chat_template_from_string("{{ x }}", &t), HSD_OK);
    char *out = (char *)1;
    size_t n = 7;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_chat_render_json(NULL, "{}", NULL, &out, &n));
    assert_null(out);
    assert_int_equal(n, 0);
    EXPECT(HSD_ERR_INVALID_ARG, hsd_chat_render_json(t, NULL, NULL, &out, NULL));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_chat_render_json(t, "{}", NULL, NULL, NULL));
    hsd_chat_params p = hsd_chat_default_params();
    p.size = 0; /* a caller that did not call hsd_chat_default_params */
    EXPECT(HSD_ERR_INVALID_ARG, hsd_chat_render_json(t, "{}", &p, &out, NULL));
    EXPECT(HSD_ERR_PARSE, hsd_chat_render_json(t, "{", NULL, &out, NULL));
    EXPECT(HSD_ERR_PARSE, hsd_chat_render_json(t, "{\"x\": \"\xff\"}", NULL, &out, NULL));
    assert_null(out);
    /* a smaller (older) params struct: the rest defaults */
    p = hsd_chat_default_params();
    p.size = offsetof(hsd_chat_params, max_output);
    assert_int_equal(hsd_chat_render_json(t, "{\"x\": 1}", &p, &out, &n), HSD_OK);
    assert_string_equal(out, "1");
    assert_int_equal(n, 1);
    hsd_free(out);
    hsd_chat_template_free(t);
}

static void row_hsd_chat_eos_ids(void **state) {
    (void)state;
    int32_t *ids = (int32_t *)1;
    size_t n = 9;
    EXPECT(HSD_ERR_INVALID_ARG, hsd_chat_eos_ids("x", NULL, &ids, &n));
    assert_null(ids);
    assert_int_equal(n, 0);
    EXPECT(HSD_ERR_INVALID_ARG, hsd_chat_eos_ids("x", tok_t, NULL, &n));
    EXPECT(HSD_ERR_INVALID_ARG, hsd_chat_eos_ids("x", tok_t, &ids, NULL));
    /* a missing file adds nothing: the tokenizer's EOS alone (none for the toy BPE) */
    assert_int_equal(hsd_chat_eos_ids("/nonexistent/model.gguf", tok_t, &ids, &n), HSD_OK);
    assert_int_equal(n, (size_t)(hsd_tokenizer_eos_id(tok_t) >= 0));
    hsd_free(ids);
}

/* ---- the table and the guard ---------------------------------------------------------- */

#define NAME_OF(f) #f,
static const char *const all_rows[] = {HSD_API_ROWS_ALL(NAME_OF)};
#define N_ROWS (sizeof all_rows / sizeof all_rows[0])

static void test_every_function_has_a_row(void **state) {
    (void)state;
    char **decl;
    size_t n = hsd_test_header_functions(&decl);
    assert_true(n >= N_ROWS / 2); /* the header was found and parsed */
    int missing = 0;
    for (size_t i = 0; i < n; i++) {
        bool found = false;
        for (size_t r = 0; r < N_ROWS && !found; r++) found = !strcmp(all_rows[r], decl[i]);
        if (!found) {
            fprintf(stderr, "hsd.h declares %s but test_api_errors*.c has no row for it\n",
                    decl[i]);
            missing++;
        }
    }
    for (size_t r = 0; r < N_ROWS; r++) {
        bool found = false;
        for (size_t i = 0; i < n && !found; i++) found = !strcmp(all_rows[r], decl[i]);
        if (!found) {
            fprintf(stderr, "row %s: no such function in hsd.h\n", all_rows[r]);
            missing++;
        }
    }
    hsd_test_free_names(decl, n);
    assert_int_equal(missing, 0);
}

int main(void) {
    const struct CMUnitTest guard = cmocka_unit_test(test_every_function_has_a_row);
    const struct CMUnitTest rows[] = {HSD_API_ROWS_BASE(HSD_API_ROW_CASE)};
    return hsd_api_rows_run("api_errors", &guard, rows, sizeof rows / sizeof rows[0]);
}
