/* The manuals stay current (issue 14): every function declared in include/hsd.h has an entry
 * in docs/API.md, and every option of every subcommand (as `hsd help-flags` lists them, from
 * the option tables that parse the command lines) appears in that subcommand's section of
 * docs/CLI.md ("## hsd NAME" or "### hsd bench NAME"). */
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/testutil.h"

static bool ident_char(char c) {
    return isalnum((unsigned char)c) || c == '_';
}
static bool flag_char(char c) {
    return isalnum((unsigned char)c) || c == '-' || c == '_';
}

/* Whether `word` occurs in text[0..len) with no word character (per `inside`) on either side. */
static bool has_word(const char *text, size_t len, const char *word, bool (*inside)(char)) {
    size_t wl = strlen(word);
    for (const char *p = text; p + wl <= text + len; p++) {
        p = memmem(p, (size_t)(text + len - p), word, wl);
        if (!p) return false;
        bool left = p == text || !inside(p[-1]);
        bool right = p + wl == text + len || !inside(p[wl]);
        if (left && right) return true;
    }
    return false;
}

static void test_api_md_has_every_function(void **state) {
    (void)state;
    char **names;
    size_t n = hsd_test_header_functions(&names);
    assert_true(n >= 40); /* the header was found and parsed */
    size_t len;
    char *md = hsd_test_read_file(hsd_test_src_path("docs/API.md"), &len);
    assert_non_null(md);
    int missing = 0;
    for (size_t i = 0; i < n; i++)
        if (!has_word(md, len, names[i], ident_char)) {
            fprintf(stderr, "docs/API.md has no entry for %s (declared in include/hsd.h)\n",
                    names[i]);
            missing++;
        }
    free(md);
    hsd_test_free_names(names, n);
    assert_int_equal(missing, 0);
}

/* HSD_API declarations in one header (one function per HSD_API line). */
static int count_exports(const char *header) {
    char *h = hsd_test_read_file(hsd_test_src_path(header), NULL);
    assert_non_null(h);
    int n = 0;
    for (char *p = h; (p = strstr(p, "\nHSD_API ")); p++) n++;
    free(h);
    return n;
}

/* docs/API.md states how many functions each header exports (the ABI policy); the numbers
 * stay true: counted here from the headers (test_api_abi checks headers == exports). */
static void test_api_md_states_export_counts(void **state) {
    (void)state;
    int core = count_exports("include/hsd.h"), tools = count_exports("include/hsd_tools.h");
    assert_true(core >= 40 && tools >= 10); /* the headers were read */
    char *md = hsd_test_read_file(hsd_test_src_path("docs/API.md"), NULL);
    assert_non_null(md);
    char want[256];
    snprintf(want, sizeof want, "exports %d functions, all `hsd_*`: **%d declared in\n`include/hsd.h`** and **%d in `include/hsd_tools.h`**",
             core + tools, core, tools);
    if (!strstr(md, want))
        fprintf(stderr, "docs/API.md (ABI policy) must say: \"%s\"\n", want);
    assert_non_null(strstr(md, want));
    free(md);
}

/* The section of docs/CLI.md whose heading is "hsd CMD": from that heading to the next one. */
static const char *section(const char *md, const char *cmd, size_t *len) {
    char want[128];
    snprintf(want, sizeof want, " hsd %s\n", cmd);
    for (const char *p = md; (p = strstr(p, want)); p++) {
        const char *line = p;
        while (line > md && line[-1] == '#') line--;
        if (line == p || (line != md && line[-1] != '\n')) continue; /* not a heading */
        const char *body = p + strlen(want), *end = body;
        while ((end = strstr(end, "\n#"))) {
            if (end[2] == '#' || end[2] == ' ') break;
            end++;
        }
        *len = end ? (size_t)(end - body) : strlen(body);
        return body;
    }
    return NULL;
}

static void test_cli_md_has_every_flag(void **state) {
    (void)state;
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s help-flags", hsd_test_cli());
    char *list = hsd_test_run(cmd);
    char *md = hsd_test_read_file(hsd_test_src_path("docs/CLI.md"), NULL);
    assert_non_null(md);
    int missing = 0, flags = 0;
    for (char *save = NULL, *line = strtok_r(list, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        char *tab = strchr(line, '\t');
        assert_non_null(tab);
        *tab = 0;
        char *flag = tab + 1, *type = strchr(flag, '\t'); /* "COMMAND\tFLAG\tTYPE" */
        if (type) *type = 0;
        size_t len = 0;
        const char *sec = section(md, line, &len);
        flags++;
        if (!sec) {
            fprintf(stderr, "docs/CLI.md has no section \"hsd %s\"\n", line);
            missing++;
        } else if (!has_word(sec, len, flag, flag_char)) {
            fprintf(stderr, "docs/CLI.md, section hsd %s: %s is not documented\n", line, flag);
            missing++;
        }
    }
    assert_true(flags > 50); /* the list came through */
    free(md);
    free(list);
    assert_int_equal(missing, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_api_md_has_every_function),
        cmocka_unit_test(test_api_md_states_export_counts),
        cmocka_unit_test(test_cli_md_has_every_flag),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
