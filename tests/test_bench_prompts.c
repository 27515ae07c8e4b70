/* bench/prompts/ (three .jsonl files): exactly 30 JSON objects per file, {"id", "kind", "prompt"}, unique
 * ids, non-empty prompts made only of the characters TinyStories vocabularies cover:
 * [A-Za-z0-9 .,!?'"\n:;-]. The directory is found from this source file's path (CMake
 * compiles with absolute paths), or from $HSD_BENCH_PROMPTS. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/testutil.h"

#define NPROMPTS 30

static const char *prompts_dir(void) {
    static char dir[4096];
    const char *e = getenv("HSD_BENCH_PROMPTS");
    if (e && *e) return e;
    snprintf(dir, sizeof dir, "%s", __FILE__);
    char *slash = strrchr(dir, '/'); /* .../tests/test_bench_prompts.c -> .../tests */
    if (!slash) return "bench/prompts";
    *slash = 0;
    slash = strrchr(dir, '/'); /* -> repository root */
    if (slash)
        *slash = 0;
    else
        snprintf(dir, sizeof dir, ".");
    strncat(dir, "/bench/prompts", sizeof dir - strlen(dir) - 1);
    return dir;
}

static int allowed_char(unsigned char c) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) return 1;
    return c != 0 && strchr(" .,!?'\"\n:;-", c) != NULL;
}

static void check_file(const char *name, const char *kind, size_t min_len, size_t max_len) {
    char path[4600];
    snprintf(path, sizeof path, "%s/%s", prompts_dir(), name);
    size_t len = 0;
    char *text = hsd_test_read_file(path, &len);
    if (!text) fail_msg("cannot read %s", path);
    assert_true(len > 0 && text[len - 1] == '\n'); /* every line ends with a newline */
    if (strstr(text, "\n\n") || text[0] == '\n') fail_msg("%s: empty line", name);
    char *ids[NPROMPTS] = {0};
    int lines = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (lines >= NPROMPTS) fail_msg("%s: more than %d lines", name, NPROMPTS);
        json_error_t err;
        json_t *o = json_loads(line, JSON_REJECT_DUPLICATES, &err);
        if (!o) fail_msg("%s:%d: invalid JSON: %s", name, lines + 1, err.text);
        assert_true(json_is_object(o));
        assert_int_equal(json_object_size(o), 3);
        json_t *id = json_object_get(o, "id"), *k = json_object_get(o, "kind"),
               *p = json_object_get(o, "prompt");
        assert_true(json_is_string(id) && json_is_string(k) && json_is_string(p));
        assert_true(json_string_length(id) > 0);
        assert_string_equal(json_string_value(k), kind);
        const char *s = json_string_value(p);
        size_t n = json_string_length(p);
        assert_int_equal(strlen(s), n); /* no embedded NUL */
        if (n == 0) fail_msg("%s:%d: empty prompt", name, lines + 1);
        for (size_t i = 0; i < n; i++)
            if (!allowed_char((unsigned char)s[i]))
                fail_msg("%s:%d: character 0x%02x at %zu is outside [A-Za-z0-9 .,!?'\"\\n:;-]", name,
                         lines + 1, (unsigned char)s[i], i);
        if (n < min_len || n > max_len)
            fail_msg("%s:%d: prompt has %zu characters, want %zu..%zu", name, lines + 1, n, min_len, max_len);
        ids[lines] = strdup(json_string_value(id));
        for (int j = 0; j < lines; j++)
            if (strcmp(ids[j], ids[lines]) == 0) fail_msg("%s: duplicate id %s", name, ids[j]);
        json_decref(o);
        lines++;
    }
    assert_int_equal(lines, NPROMPTS);
    for (int j = 0; j < lines; j++) free(ids[j]);
    free(text);
}

static void test_summarization(void **state) {
    (void)state;
    check_file("summarization.jsonl", "summarization", 1, 4000);
}

static void test_code(void **state) {
    (void)state;
    check_file("code.jsonl", "code", 1, 4000);
}

static void test_long_context(void **state) {
    (void)state;
    check_file("long_context.jsonl", "long_context", 1000, 1500);
}

static void test_allowed_chars(void **state) {
    (void)state;
    const char *ok = "Aa0 .,!?'\"\n:;-zZ9";
    for (const char *c = ok; *c; c++) assert_true(allowed_char((unsigned char)*c));
    const char *bad = "()[]{}#*/\\\t\r_&%$@~`^<>|=+";
    for (const char *c = bad; *c; c++) assert_false(allowed_char((unsigned char)*c));
    assert_false(allowed_char(0xc3));
    assert_false(allowed_char(0));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allowed_chars),
        cmocka_unit_test(test_summarization),
        cmocka_unit_test(test_code),
        cmocka_unit_test(test_long_context),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
