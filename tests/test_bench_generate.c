/* hsd bench generate through the CLI binary on the real TinyStories pair: 2 prompts, N = 16,
 * both temperatures. The JSON must carry every reported field, and at temp 0 every
 * algorithm's ids must equal AR's (greedy_mismatches == 0). Also a short bench bridge run. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/testutil.h"


static void test_generate_json(void **state) {
    (void)state;
    const char *tm = hsd_test_path("models/babyllama-tok105/model5000.bin");
    const char *tt = hsd_test_path("models/babyllama-tok105/tok105.bin");
    const char *dm = hsd_test_path("models/stories260K/stories260K.bin");
    const char *dt = hsd_test_path("models/stories260K/tok512.bin");
    const char *pr = hsd_test_src_path("bench/prompts/summarization.jsonl");
    HSD_REQUIRE_FILE(tm);
    HSD_REQUIRE_FILE(dm);
    HSD_REQUIRE_FILE(pr);
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "%s bench generate --target %s --target-tokenizer %s --draft %s --draft-tokenizer %s "
             "--prompts %s --max-prompts 2 -n 16 --temps 0,1 --json",
             hsd_test_cli(), tm, tt, dm, dt, pr);
    char *out = hsd_test_run(cmd);
    json_error_t err;
    json_t *o = json_loads(out, 0, &err);
    assert_non_null(o);
    assert_int_equal(json_integer_value(json_object_get(o, "greedy_mismatches")), 0);
    assert_true(json_is_string(json_object_get(o, "formula")));
    json_t *cost = json_array_get(json_object_get(o, "cost"), 0);
    assert_non_null(cost);
    assert_true(json_number_value(json_object_get(cost, "c_draft_ms")) > 0);
    assert_true(json_array_size(json_object_get(cost, "c_target_ms")) >= 16);
    json_t *res = json_object_get(o, "results");
    /* 5 algorithms x 2 temperatures x (1 set + "all") */
    assert_int_equal(json_array_size(res), 20);
    static const char *fields[] = {"direction", "algo", "temp", "set", "prompts", "tokens_per_s",
                                   "decode_tokens_per_s", "tau", "acceptance_rate", "ttft_ms", "tpot_ms",
                                   "draft_ms", "verify_ms", "bridge_ms", "m", "k_prime",
                                   "predicted_speedup", "measured_speedup", "measured_over_predicted",
                                   "greedy_mismatches"};
    int seen[6] = {0};
    for (size_t i = 0; i < json_array_size(res); i++) {
        json_t *r = json_array_get(res, i);
        for (size_t f = 0; f < sizeof fields / sizeof fields[0]; f++) {
            if (!json_object_get(r, fields[f])) fprintf(stderr, "missing field %s\n", fields[f]);
            assert_non_null(json_object_get(r, fields[f]));
        }
        assert_int_equal(json_integer_value(json_object_get(r, "prompts")), 2);
        assert_int_equal(json_integer_value(json_object_get(r, "greedy_mismatches")), 0);
        assert_true(json_number_value(json_object_get(r, "tokens_per_s")) > 0);
        assert_true(json_number_value(json_object_get(r, "tau")) >= 1.0);
        const char *a = json_string_value(json_object_get(r, "algo"));
        static const char *names[] = {"ar", "sd", "union", "tli", "slem"};
        for (int k = 0; k < 5; k++)
            if (!strcmp(a, names[k])) seen[k]++;
        if (!strcmp(a, "ar")) {
            assert_true(fabs(json_number_value(json_object_get(r, "tau")) - 1.0) < 1e-9);
            assert_true(fabs(json_number_value(json_object_get(r, "measured_speedup")) - 1.0) < 1e-9);
        }
    }
    for (int k = 0; k < 5; k++) assert_int_equal(seen[k], 4);
    json_decref(o);
    free(out);
}

static void test_bridge_bench(void **state) {
    (void)state;
    const char *tt = hsd_test_path("models/babyllama-tok105/tok105.bin");
    const char *dt = hsd_test_path("models/stories260K/tok512.bin");
    const char *corpus = hsd_test_path("corpus/corpus.jsonl");
    HSD_REQUIRE_FILE(tt);
    HSD_REQUIRE_FILE(corpus);
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "%s bench bridge --target-tokenizer %s --draft-tokenizer %s --corpus %s --contexts 100,1000 "
             "--rounds 100 --json",
             hsd_test_cli(), tt, dt, corpus);
    char *out = hsd_test_run(cmd);
    json_error_t err;
    json_t *o = json_loads(out, 0, &err);
    assert_non_null(o);
    assert_int_equal(json_array_size(o), 2);
    for (size_t i = 0; i < 2; i++)
        assert_true(json_number_value(json_object_get(json_array_get(o, i), "median_us")) > 0);
    json_decref(o);
    free(out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_generate_json),
        cmocka_unit_test(test_bridge_bench),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
