/* The hsd CLI end to end: generate --json reproduces the reference greedy ids of stories260K
 * (the empty prompt: BOS alone, as the reference run), synth writes loadable models, bench
 * forward reports ratios. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/testutil.h"


static void test_generate_json_greedy(void **state) {
    (void)state;
    char model[1024], tok[1024];
    snprintf(model, sizeof model, "%s", hsd_test_path("models/stories260K/stories260K.bin"));
    snprintf(tok, sizeof tok, "%s", hsd_test_path("models/stories260K/tok512.bin"));
    const char *refp = hsd_test_path("models/reference_outputs.json");
    HSD_REQUIRE_FILE(model);
    HSD_REQUIRE_FILE(tok);
    HSD_REQUIRE_FILE(refp);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s generate --model %s --tokenizer %s -p '' -n 60 --json",
             hsd_test_cli(), model, tok);
    char *out = hsd_test_run(cmd);
    json_error_t err;
    json_t *o = json_loads(out, 0, &err), *ref = json_load_file(refp, 0, &err);
    assert_non_null(o);
    assert_non_null(ref);
    json_t *ids = json_object_get(o, "ids"), *want = json_object_get(json_object_get(ref, "stories260K"), "greedy_ids");
    assert_int_equal(json_array_size(ids), 60);
    for (size_t i = 0; i < 60; i++)
        assert_int_equal(json_integer_value(json_array_get(ids, i)), json_integer_value(json_array_get(want, i)));
    assert_true(json_is_string(json_object_get(o, "text")));
    assert_true(json_number_value(json_object_get(o, "ttft_ms")) > 0);
    assert_true(json_number_value(json_object_get(o, "tpot_ms")) > 0);
    assert_true(json_number_value(json_object_get(o, "tokens_per_s")) > 0);
    /* sampling: same seed, same ids; another seed, other ids */
    snprintf(cmd, sizeof cmd, "%s generate --model %s --tokenizer %s -p '' -n 40 --temp 1 --top-p 0.9 --seed 3 --json",
             hsd_test_cli(), model, tok);
    char *a = hsd_test_run(cmd), *b = hsd_test_run(cmd);
    json_t *ja = json_loads(a, 0, &err), *jb = json_loads(b, 0, &err);
    assert_true(json_equal(json_object_get(ja, "ids"), json_object_get(jb, "ids")));
    snprintf(cmd, sizeof cmd, "%s generate --model %s --tokenizer %s -p '' -n 40 --temp 1 --top-p 0.9 --seed 4 --json",
             hsd_test_cli(), model, tok);
    char *c = hsd_test_run(cmd);
    json_t *jc = json_loads(c, 0, &err);
    assert_false(json_equal(json_object_get(ja, "ids"), json_object_get(jc, "ids")));
    json_decref(o), json_decref(ref), json_decref(ja), json_decref(jb), json_decref(jc);
    free(out), free(a), free(b), free(c);
}

static void test_synth_and_bench(void **state) {
    (void)state;
    char dir[256], cmd[1024];
    snprintf(dir, sizeof dir, "%s/hsd_cli_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    assert_non_null(mkdtemp(dir));
    snprintf(cmd, sizeof cmd, "%s synth --shape tiny-qwen2 --format gguf --dtype q8_0 -o %s/g", hsd_test_cli(), dir);
    free(hsd_test_run(cmd));
    snprintf(cmd, sizeof cmd, "%s synth --shape tiny --format safetensors --dtype bf16 -o %s/s", hsd_test_cli(), dir);
    free(hsd_test_run(cmd));
    snprintf(cmd, sizeof cmd, "%s bench forward --model %s/g/model.gguf --n 1,4 --reps 3", hsd_test_cli(), dir);
    char *out = hsd_test_run(cmd);
    assert_non_null(strstr(out, "Q8_0"));
    assert_non_null(strstr(out, "1.00x"));
    free(out);
    /* the safetensors one loads and runs too (it has no tokenizer to generate text with) */
    snprintf(cmd, sizeof cmd, "%s bench forward --model %s/s --n 1,2 --reps 3", hsd_test_cli(), dir);
    out = hsd_test_run(cmd);
    assert_non_null(strstr(out, "1.00x"));
    free(out);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* Streaming: the text printed as it becomes final is the --json text; --no-stream prints the
 * same. Without --ctx generation stops at the trained context (stories260K: 512 positions). */
static void test_generate_stream_and_context(void **state) {
    (void)state;
    char model[1024], tok[1024], cmd[4096];
    snprintf(model, sizeof model, "%s", hsd_test_path("models/stories260K/stories260K.bin"));
    snprintf(tok, sizeof tok, "%s", hsd_test_path("models/stories260K/tok512.bin"));
    HSD_REQUIRE_FILE(model);
    HSD_REQUIRE_FILE(tok);
    const char *base = "%s generate --model %s --tokenizer %s -p 'Once upon a time' -n %d %s";
    snprintf(cmd, sizeof cmd, base, hsd_test_cli(), model, tok, 48, "--json");
    char *js = hsd_test_run(cmd);
    json_error_t err;
    json_t *o = json_loads(js, 0, &err);
    assert_non_null(o);
    const char *text = json_string_value(json_object_get(o, "text"));
    size_t len = json_string_length(json_object_get(o, "text"));
    assert_true(len > 20);
    assert_string_equal(json_string_value(json_object_get(o, "stop_reason")), "max_tokens");
    const char *modes[] = {"", "--no-stream"};
    for (int m = 0; m < 2; m++) {
        snprintf(cmd, sizeof cmd, base, hsd_test_cli(), model, tok, 48, modes[m]);
        char *out = hsd_test_run(cmd);
        assert_memory_equal(out, text, len);
        assert_true(!strncmp(out + len, "\n\nalgo ar", 9));
        free(out);
    }
    json_decref(o);
    free(js);
    /* -n far past the context: a clean stop at 512 positions (prompt + generated); the story
     * ends (id 1, a llama2.c checkpoint's end) before that, so --ignore-eos */
    snprintf(cmd, sizeof cmd, base, hsd_test_cli(), model, tok, 5000, "--json --ignore-eos");
    js = hsd_test_run(cmd);
    o = json_loads(js, 0, &err);
    assert_non_null(o);
    assert_string_equal(json_string_value(json_object_get(o, "stop_reason")), "context");
    json_int_t n = json_integer_value(json_object_get(o, "n_generated"));
    assert_true(n > 400 && n < 512);
    json_decref(o);
    free(js);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_generate_json_greedy),
        cmocka_unit_test(test_synth_and_bench),
        cmocka_unit_test(test_generate_stream_and_context),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
