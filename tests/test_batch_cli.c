/* The batch options of the CLI on the real TinyStories pair:
 *   - hsd generate --batch-file: one JSON object per prompt (JSONL, with index and prompt),
 *     each equal to `hsd generate -p` on that prompt (greedy SLEM and AR); plain-text and
 *     JSON-object lines; empty lines skipped;
 *   - hsd bench generate --batch: batched vs one by one, all fields, no mismatch;
 *   - hsd bench forward --batch: B forwards vs one batched forward. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/testutil.h"

static char *tm, *tt, *dm, *dt; /* hsd_test_path's buffers rotate: keep copies */

static int setup(void **state) {
    (void)state;
    tm = strdup(hsd_test_path("models/babyllama-tok105/model5000.bin"));
    tt = strdup(hsd_test_path("models/babyllama-tok105/tok105.bin"));
    dm = strdup(hsd_test_path("models/stories260K/stories260K.bin"));
    dt = strdup(hsd_test_path("models/stories260K/tok512.bin"));
    return 0;
}

static int teardown(void **state) {
    (void)state;
    free(tm), free(tt), free(dm), free(dt);
    return 0;
}

/* ids of `hsd generate -p PROMPT ... --json` */
static json_t *single(const char *algo, const char *prompt) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "%s generate --target %s --target-tokenizer %s --draft %s --draft-tokenizer %s --algo "
             "%s -n 24 "
             "-p '%s' --json",
             hsd_test_cli(), tm, tt, dm, dt, algo, prompt);
    char *out = hsd_test_run(cmd);
    json_t *o = json_loads(out, 0, NULL);
    free(out);
    assert_non_null(o);
    json_t *ids = json_incref(json_object_get(o, "ids"));
    json_decref(o);
    return ids;
}

static void test_generate_batch_file(void **state) {
    (void)state;
    HSD_REQUIRE_FILE(tm);
    HSD_REQUIRE_FILE(dm);
    char path[] = "/tmp/hsd_batch_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    const char *prompts[3] = {"Once upon a time", "The little dog was", "Lily and Tom"};
    fprintf(f, "%s\n\n{\"prompt\": \"%s\", \"id\": 7}\n%s\n", prompts[0], prompts[1], prompts[2]);
    fclose(f);
    const char *algos[2] = {"slem", "ar"};
    for (int a = 0; a < 2; a++) {
        char cmd[4096];
        snprintf(cmd, sizeof cmd,
                 "%s generate --target %s --target-tokenizer %s --draft %s --draft-tokenizer %s "
                 "--algo %s -n 24 "
                 "--batch-file %s --json",
                 hsd_test_cli(), tm, tt, dm, dt, algos[a], path);
        char *out = hsd_test_run(cmd);
        int lines = 0;
        for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n"), lines++) {
            json_t *o = json_loads(line, 0, NULL);
            assert_non_null(o);
            assert_int_equal(json_integer_value(json_object_get(o, "index")), lines);
            assert_string_equal(json_string_value(json_object_get(o, "prompt")), prompts[lines]);
            assert_string_equal(json_string_value(json_object_get(o, "algo")), algos[a]);
            static const char *fields[] = {
                "text", "ids",          "n_generated", "rounds",  "acceptance_rate",
                "tau",  "tokens_per_s", "ttft_ms",     "tpot_ms", "total_ms"};
            for (size_t k = 0; k < sizeof fields / sizeof *fields; k++)
                assert_non_null(json_object_get(o, fields[k]));
            json_t *ids = single(algos[a], prompts[lines]);
            assert_true(json_equal(ids, json_object_get(o, "ids")));
            json_decref(ids);
            json_decref(o);
        }
        assert_int_equal(lines, 3);
        free(out);
    }
    /* text output ends with the batch summary */
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s generate --target %s --target-tokenizer %s -n 8 --batch-file %s",
             hsd_test_cli(), tm, tt, path);
    char *out = hsd_test_run(cmd);
    assert_non_null(strstr(out, "=== [2] Lily and Tom"));
    assert_non_null(strstr(out, "batch of 3 prompts"));
    free(out);
    unlink(path);
}

static void test_bench_generate_batch(void **state) {
    (void)state;
    const char *pr = hsd_test_src_path("bench/prompts/code.jsonl");
    HSD_REQUIRE_FILE(tm);
    HSD_REQUIRE_FILE(dm);
    HSD_REQUIRE_FILE(pr);
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "%s bench generate --target %s --target-tokenizer %s --draft %s --draft-tokenizer %s "
             "--prompts %s "
             "--max-prompts 5 -n 12 --algos ar,slem,tli --temps 0,1 --batch 1,3 --json",
             hsd_test_cli(), tm, tt, dm, dt, pr);
    char *out = hsd_test_run(cmd);
    json_t *o = json_loads(out, 0, NULL);
    assert_non_null(o);
    assert_int_equal(json_integer_value(json_object_get(o, "mismatches")), 0);
    json_t *res = json_object_get(o, "batch_results");
    assert_int_equal(json_array_size(res), 3 * 2 * 2); /* algos x temps x batch sizes */
    static const char *fields[] = {"direction",
                                   "temp",
                                   "algo",
                                   "batch",
                                   "prompts",
                                   "tokens",
                                   "one_by_one_tokens_per_s",
                                   "batched_tokens_per_s",
                                   "speedup",
                                   "batched_decode_tokens_per_s",
                                   "decode_speedup",
                                   "tau",
                                   "mismatches"};
    for (size_t i = 0; i < json_array_size(res); i++) {
        json_t *r = json_array_get(res, i);
        for (size_t k = 0; k < sizeof fields / sizeof *fields; k++)
            assert_non_null(json_object_get(r, fields[k]));
        assert_int_equal(json_integer_value(json_object_get(r, "prompts")), 5);
        assert_true(json_number_value(json_object_get(r, "batched_tokens_per_s")) > 0);
    }
    json_decref(o);
    free(out);
}

static void test_bench_forward_batch(void **state) {
    (void)state;
    HSD_REQUIRE_FILE(dm);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s bench forward --model %s --n 1,3 --batch 1,4 --reps 5 --prefix 8",
             hsd_test_cli(), dm);
    char *out = hsd_test_run(cmd);
    assert_non_null(strstr(out, "1 batched ms"));
    int rows = 0;
    for (char *l = strtok(out, "\n"); l; l = strtok(NULL, "\n")) {
        int n, B;
        double ts, tb;
        if (sscanf(l, "%d %d %lf %lf", &n, &B, &ts, &tb) == 4) {
            assert_true(ts > 0 && tb > 0);
            rows++;
        }
    }
    assert_int_equal(rows, 4);
    free(out);
}

/* --interleave: each depth in its own slot, timed in turn; the first depth's per-round ratio
 * is 1 by definition, every row positive; a lone depth or --batch is refused by name. */
static void test_bench_forward_interleave(void **state) {
    (void)state;
    HSD_REQUIRE_FILE(dm);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s bench forward --model %s --n 1,2 --prefix 4,40 --interleave --reps 5",
             hsd_test_cli(), dm);
    char *out = hsd_test_run(cmd);
    assert_non_null(strstr(out, "5 rounds"));
    int rows = 0;
    for (char *l = strtok(out, "\n"); l; l = strtok(NULL, "\n")) {
        int d;
        double ms, mt, ratio;
        if (sscanf(l, "%d %lf %lf %lfx", &d, &ms, &mt, &ratio) == 4) {
            assert_true(ms > 0 && mt > 0 && ratio > 0);
            if (d == 4) assert_true(ratio == 1.0);
            rows++;
        }
    }
    assert_int_equal(rows, 4); /* 2 n x 2 depths */
    free(out);
    /* a lone depth: refused, naming the flag (status 2; the shell's echo keeps it readable) */
    snprintf(cmd, sizeof cmd, "%s bench forward --model %s --prefix 40 --interleave 2>&1; echo \"rc=$?\"",
             hsd_test_cli(), dm);
    out = hsd_test_run(cmd);
    assert_non_null(strstr(out, "--interleave: a --prefix list"));
    assert_non_null(strstr(out, "rc=2"));
    free(out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_generate_batch_file),
        cmocka_unit_test(test_bench_generate_batch),
        cmocka_unit_test(test_bench_forward_batch),
        cmocka_unit_test(test_bench_forward_interleave),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
