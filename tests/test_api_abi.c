/* The binary interface of libhsd.so: the dynamic symbol table holds exactly the functions
 * declared in include/hsd.h (all hsd_*, nothing internal), the SONAME carries the major
 * version, and the version macros, hsd_version() and CMake's project version agree. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsd.h"
#include "tests/testutil.h"

/* The shared library under test: $HSD_LIBRARY (set by CMake for every test). */
static const char *shared_lib(void) {
    const char *p = getenv("HSD_LIBRARY");
    return p && *p ? p : "libhsd.so";
}

static bool in_list(char **list, size_t n, const char *s) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(list[i], s)) return true;
    return false;
}

static void test_exported_symbols_are_the_header(void **state) {
    (void)state;
    char **decl;
    size_t n_decl = hsd_test_header_functions(&decl);
    /* the parser must see the header; 40 functions at the time of writing */
    assert_true(n_decl >= 40);
    assert_true(in_list(decl, n_decl, "hsd_engine_generate"));

    char cmd[4200];
    snprintf(cmd, sizeof cmd, "nm -D --defined-only '%s'", shared_lib());
    char *out = hsd_test_run(cmd);
    char **exp = NULL;
    size_t n_exp = 0;
    int bad = 0;
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
        char addr[64], type[8], name[256];
        if (sscanf(line, "%63s %7s %255s", addr, type, name) != 3) continue;
        if (strncmp(name, "hsd_", 4) != 0) {
            fprintf(stderr, "exported symbol outside the hsd_ namespace: %s\n", name);
            bad++;
            continue;
        }
        exp = realloc(exp, (n_exp + 1) * sizeof *exp);
        exp[n_exp++] = strdup(name);
    }
    for (size_t i = 0; i < n_decl; i++)
        if (!in_list(exp, n_exp, decl[i])) {
            fprintf(stderr, "declared in hsd.h but not exported (missing HSD_API?): %s\n", decl[i]);
            bad++;
        }
    for (size_t i = 0; i < n_exp; i++)
        if (!in_list(decl, n_decl, exp[i])) {
            fprintf(stderr, "exported but not declared in hsd.h (internal symbol leak): %s\n",
                    exp[i]);
            bad++;
        }
    assert_int_equal(bad, 0);
    assert_int_equal(n_exp, n_decl);
    hsd_test_free_names(exp, n_exp);
    hsd_test_free_names(decl, n_decl);
    free(out);
}

static void test_soname_has_major_version(void **state) {
    (void)state;
    char cmd[4200], want[64];
    snprintf(cmd, sizeof cmd, "readelf -d '%s'", shared_lib());
    char *out = hsd_test_run(cmd);
    snprintf(want, sizeof want, "[libhsd.so.%d]", HSD_VERSION_MAJOR);
    const char *so = strstr(out, "(SONAME)");
    assert_non_null(so);
    const char *eol = strchr(so, '\n');
    const char *hit = strstr(so, want);
    assert_true(hit && (!eol || hit < eol));
    free(out);
}

static void test_version_agrees(void **state) {
    (void)state;
    char mmp[64];
    snprintf(mmp, sizeof mmp, "%d.%d.%d", HSD_VERSION_MAJOR, HSD_VERSION_MINOR, HSD_VERSION_PATCH);
    assert_string_equal(HSD_VERSION_STRING, mmp);
    assert_string_equal(hsd_version(), mmp);
    /* project(VERSION) in CMakeLists.txt, passed in by the build */
    assert_string_equal(HSD_PROJECT_VERSION, mmp);
    assert_int_equal(HSD_VERSION_NUMBER,
                     HSD_VERSION_MAJOR * 10000 + HSD_VERSION_MINOR * 100 + HSD_VERSION_PATCH);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exported_symbols_are_the_header),
        cmocka_unit_test(test_soname_has_major_version),
        cmocka_unit_test(test_version_agrees),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
