/* hsd generate and the context (issue 22): -n past the model's context stops there with the
 * stop reason "context" and a notice, without reserving memory for positions never reached;
 * --draft-ctx gives the drafter its own, smaller context, and a text past it keeps drafting
 * (the window slides) with the target's greedy output unchanged.
 *
 * Oracles: the context of stories260K is 512 positions (its llama2.c header, seq_len; see
 * ../shared/models/README.md), so a prompt of P tokens plus BOS leaves exactly 512 - P - 1
 * new tokens; the prompt's token count comes from tok512, whose encoder the tokenizer tests
 * check against HF tokenizers. The greedy text of a speculative run is AR's run. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define TARGET "models/stories260K/stories260K.bin"
#define TOK "models/stories260K/tok512.bin"
#define DRAFT "models/babyllama-tok105/model5000.bin"
#define DTOK "models/babyllama-tok105/tok105.bin"

static int setup(void **state) {
    (void)state;
    return hsd_test_tmpdir_setup("hsd_cli_context");
}
static int teardown(void **state) {
    (void)state;
    return hsd_test_tmpdir_teardown();
}

/* The first `chars` of long_context.jsonl's first prompt, cut at a word start, written to
 * a file; returns its token count under tok512 (without BOS). */
static int write_prompt(const char *file, size_t chars) {
    FILE *fp = fopen(hsd_test_src_path("bench/prompts/long_context.jsonl"), "r");
    assert_non_null(fp);
    char *line = NULL;
    size_t cap = 0;
    assert_true(getline(&line, &cap, fp) > 0);
    fclose(fp);
    json_t *j = json_loads(line, 0, NULL);
    free(line);
    const char *p = json_string_value(json_object_get(j, "prompt"));
    assert_non_null(p);
    size_t n = strlen(p) < chars ? strlen(p) : chars;
    while (n > 0 && p[n] != ' ') n--;
    FILE *out = fopen(file, "w");
    assert_non_null(out);
    fwrite(p, 1, n, out);
    fclose(out);
    hsd_tokenizer *t = NULL;
    assert_int_equal(hsd_tokenizer_load_file(hsd_test_path(TOK), &t), HSD_OK);
    int32_t *ids = NULL;
    size_t k = 0;
    assert_int_equal(hsd_tokenizer_encode_alloc(t, p, n, false, &ids, &k), HSD_OK);
    hsd_free(ids);
    hsd_tokenizer_free(t);
    json_decref(j);
    return (int)k;
}

static json_t *run_json(const char *args, const char *prompt_file, const char *err_file) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "%s generate --target %s --tokenizer %s -p \"$(cat %s)\" --json --threads 1 %s 2>%s",
             hsd_test_cli(), hsd_test_path(TARGET), hsd_test_path(TOK), prompt_file, args,
             err_file);
    char *out = hsd_test_run(cmd);
    json_t *j = json_loads(out, 0, NULL);
    if (!j) fprintf(stderr, "not JSON: %s\n", out);
    assert_non_null(j);
    free(out);
    return j;
}

/* -n 10,000,000 on a 512-position model: it stops at the context with a notice. Sized for
 * prompt + 2N (the old rule) the caches would need ~13 GB: the run would fail. */
static void test_n_past_context_stops_there(void **state) {
    (void)state;
    HSD_REQUIRE_FILE(hsd_test_path(TARGET));
    HSD_REQUIRE_FILE(hsd_test_path(TOK));
    const char *pf = hsd_test_tmp("prompt.txt"), *ef = hsd_test_tmp("stderr.txt");
    int P = write_prompt(pf, 300);
    json_t *j = run_json("-n 10000000 --no-stream --ignore-eos", pf, ef);
    assert_string_equal(json_string_value(json_object_get(j, "stop_reason")), "context");
    assert_int_equal(json_integer_value(json_object_get(j, "n_generated")), 512 - P - 1);
    json_decref(j);
    char *err = hsd_test_read_file(ef, NULL);
    assert_non_null(err);
    if (!strstr(err, "capped at the context")) fprintf(stderr, "stderr: %s\n", err);
    assert_non_null(strstr(err, "capped at the context"));
    free(err);
}

/* A drafter with a 64-position context on a prompt of ~900 of its tokens: drafting goes on
 * (the window slides) and the greedy ids are AR's. */
static void test_draft_ctx_window_lossless(void **state) {
    (void)state;
    HSD_REQUIRE_FILE(hsd_test_path(TARGET));
    HSD_REQUIRE_FILE(hsd_test_path(DRAFT));
    HSD_REQUIRE_FILE(hsd_test_path(DTOK));
    const char *pf = hsd_test_tmp("prompt2.txt"), *ef = hsd_test_tmp("stderr2.txt");
    write_prompt(pf, 900);
    json_t *ar = run_json("-n 48 --algo ar", pf, ef);
    const char *algos[] = {"slem", "tli", "slrs"};
    for (int a = 0; a < 3; a++) {
        char args[1024];
        snprintf(args, sizeof args,
                 "-n 48 --algo %s --draft %s --draft-tokenizer %s --draft-ctx 64", algos[a],
                 hsd_test_path(DRAFT), hsd_test_path(DTOK));
        json_t *j = run_json(args, pf, ef);
        fprintf(stderr, "%s: drafted %lld, accepted %lld\n", algos[a],
                (long long)json_integer_value(json_object_get(j, "drafted")),
                (long long)json_integer_value(json_object_get(j, "accepted")));
        assert_true(json_equal(json_object_get(j, "ids"), json_object_get(ar, "ids")));
        assert_true(json_integer_value(json_object_get(j, "drafted")) > 0);
        assert_true(json_integer_value(json_object_get(j, "accepted")) > 0);
        json_decref(j);
    }
    json_decref(ar);
}

static void test_draft_ctx_needs_draft(void **state) {
    (void)state;
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s generate --target x --tokenizer y -p hi --draft-ctx 64 2>&1",
             hsd_test_cli());
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char buf[4096] = "";
    size_t n = fread(buf, 1, sizeof buf - 1, p);
    buf[n] = 0;
    assert_int_not_equal(pclose(p), 0);
    assert_non_null(strstr(buf, "--draft-ctx needs --draft"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_n_past_context_stops_there),
        cmocka_unit_test(test_draft_ctx_window_lossless),
        cmocka_unit_test(test_draft_ctx_needs_draft),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
