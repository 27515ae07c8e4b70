/* The thread-safety hsd.h promises for tokenizers: one loaded tokenizer used by several
 * threads at once gives every thread the ids HF tokenizers gives (shared/reference), and
 * each thread's failures stay in its own hsd_last_error(). */
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsd.h"
#include "tests/testutil.h"

#define N_THREADS 4
#define MAX_LINES 400

typedef struct sample {
    const char *text;
    size_t len;
    int32_t *ids;
    size_t n_ids;
} sample;

typedef struct job {
    const hsd_tokenizer *tok;
    const sample *s;
    int n, id;
    int mismatches, errors_seen;
} job;

static void *worker(void *arg) {
    job *j = arg;
    /* an invalid byte at an offset that differs per thread: 2, 4, 6, 8 */
    char bad[32] = "abababab";
    bad[2 * (j->id + 1)] = (char)0xff;
    bad[2 * (j->id + 1) + 1] = 0;
    char want[48];
    snprintf(want, sizeof want, "invalid UTF-8 at byte offset %d", 2 * (j->id + 1));
    for (int round = 0; round < 3; round++)
        for (int i = 0; i < j->n; i++) {
            int32_t *ids = NULL;
            size_t n = 0;
            /* a failure, then a success: the message must stay this thread's own */
            if (hsd_tokenizer_encode_alloc(j->tok, bad, strlen(bad), false, &ids, &n) ==
                HSD_ERR_INVALID_UTF8)
                j->errors_seen++;
            if (hsd_tokenizer_encode_alloc(j->tok, j->s[i].text, j->s[i].len, false, &ids, &n) ||
                n != j->s[i].n_ids || (n && memcmp(ids, j->s[i].ids, n * sizeof *ids)))
                j->mismatches++;
            if (!strstr(hsd_last_error(), want)) j->mismatches++;
            hsd_free(ids);
        }
    return NULL;
}

static void test_one_tokenizer_many_threads(void **state) {
    (void)state;
    const char *tok_path = hsd_test_path("tokenizers/llama3/tokenizer.json");
    const char *ref_path = hsd_test_path("reference/llama3.jsonl");
    HSD_REQUIRE_FILE(tok_path);
    HSD_REQUIRE_FILE(ref_path);
    hsd_tokenizer *tok;
    assert_int_equal(hsd_tokenizer_load_file(tok_path, &tok), HSD_OK);
    static sample s[MAX_LINES];
    json_t *rows[MAX_LINES];
    int n = 0;
    FILE *f = fopen(ref_path, "r");
    assert_non_null(f);
    char *line = NULL;
    size_t cap = 0;
    while (n < MAX_LINES && getline(&line, &cap, f) > 0) {
        json_error_t err;
        rows[n] = json_loads(line, JSON_ALLOW_NUL, &err);
        assert_non_null(rows[n]);
        json_t *text = json_object_get(rows[n], "text"), *ids = json_object_get(rows[n], "ids");
        s[n].text = json_string_value(text);
        s[n].len = json_string_length(text);
        s[n].n_ids = json_array_size(ids);
        s[n].ids = malloc((s[n].n_ids + 1) * sizeof *s[n].ids);
        for (size_t k = 0; k < s[n].n_ids; k++)
            s[n].ids[k] = (int32_t)json_integer_value(json_array_get(ids, k));
        n++;
    }
    free(line);
    fclose(f);
    assert_true(n >= 100);

    pthread_t th[N_THREADS];
    job jobs[N_THREADS];
    for (int t = 0; t < N_THREADS; t++) {
        jobs[t] = (job){tok, s, n, t, 0, 0};
        assert_int_equal(pthread_create(&th[t], NULL, worker, &jobs[t]), 0);
    }
    for (int t = 0; t < N_THREADS; t++) {
        pthread_join(th[t], NULL);
        assert_int_equal(jobs[t].mismatches, 0);
        assert_int_equal(jobs[t].errors_seen, 3 * n);
    }
    for (int i = 0; i < n; i++) {
        free(s[i].ids);
        json_decref(rows[i]);
    }
    hsd_tokenizer_free(tok);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_tokenizer_many_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
