/* The manuals stay current (issues 14 and 20):
 * - every function declared in include/hsd.h has an entry in docs/API.md;
 * - every option of every subcommand (as `hsd help-flags` lists them, from the option tables
 *   that parse the command lines) appears in that subcommand's section of docs/CLI.md
 *   ("## hsd NAME" or "### hsd bench NAME");
 * - every field of every public *_params struct is named in docs/API.md, in a section that
 *   names the struct;
 * - every HSD_* environment variable that the CLI, the server, the benchmarks, the scripts,
 *   .ci/ or the Makefile read is documented in README.md or docs/;
 * - bench/RESULTS.md stays a summary (at most 600 lines), and every link from README.md or
 *   docs/ to one of its anchors finds that anchor.
 * Each failure names what is missing and where. */
#include <ctype.h>
#include <dirent.h>
#include <regex.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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


/* ---- param struct fields ------------------------------------------------------------- */

/* `text` with C comments replaced by spaces (same length, so offsets stay valid). */
static char *strip_comments(const char *text) {
    char *s = strdup(text);
    for (char *p = s; *p; p++) {
        if (p[0] == '/' && p[1] == '*') {
            char *end = strstr(p + 2, "*/");
            char *stop = end ? end + 2 : p + strlen(p);
            memset(p, ' ', (size_t)(stop - p));
            p = stop - 1;
        } else if (p[0] == '/' && p[1] == '/') {
            while (*p && *p != '\n') *p++ = ' ';
            if (!*p) break;
        }
    }
    return s;
}

/* The declared names of one member declaration ("int32_t a, b[4]", "bool (*fn)(void *)"):
 * calls fn for each. */
static void member_names(const char *decl, size_t len, void (*fn)(const char *, void *),
                         void *ctx) {
    char buf[1024];
    if (len >= sizeof buf) len = sizeof buf - 1;
    memcpy(buf, decl, len);
    buf[len] = 0;
    char *fp = strstr(buf, "(*");
    if (fp) { /* function pointer: the name follows "(*" */
        char *n = fp + 2, *e = n;
        while (ident_char(*e)) e++;
        *e = 0;
        if (*n) fn(n, ctx);
        return;
    }
    for (char *save = NULL, *part = strtok_r(buf, ",", &save); part;
         part = strtok_r(NULL, ",", &save)) {
        char *br = strchr(part, '[');
        if (br) *br = 0;
        char *e = part + strlen(part);
        while (e > part && !ident_char(e[-1])) e--;
        char *b = e;
        while (b > part && ident_char(b[-1])) b--;
        if (b < e) {
            char name[256];
            snprintf(name, sizeof name, "%.*s", (int)(e - b), b);
            fn(name, ctx);
        }
    }
}

typedef struct {
    const char *md;     /* docs/API.md */
    const char *header; /* where the struct is declared */
    const char *type;   /* the struct's name */
    int missing, fields;
} field_check;

/* Whether `word` occurs in text[0..len) as code: preceded by a backtick or a '.' (a code span
 * or a member access in an example), with no identifier character after it. */
static bool has_code_word(const char *text, size_t len, const char *word) {
    size_t wl = strlen(word);
    for (const char *p = text; p + wl <= text + len; p++) {
        p = memmem(p, (size_t)(text + len - p), word, wl);
        if (!p) return false;
        bool left = p > text && (p[-1] == '`' || p[-1] == '.');
        bool right = p + wl == text + len || !ident_char(p[wl]);
        if (left && right) return true;
    }
    return false;
}

/* The newline before the next Markdown heading ("#... title") after p, or NULL. */
static const char *next_heading(const char *p) {
    for (; (p = strstr(p, "\n#")); p++) {
        const char *h = p + 1;
        while (*h == '#') h++;
        if (*h == ' ') return p;
    }
    return NULL;
}

/* A field is documented when a section of API.md (from one heading to the next) that names
 * its struct names the field as code, or when "type.field" occurs anywhere. `size` (the ABI
 * prefix every params struct starts with) may be documented once for all of them. */
static void check_field(const char *field, void *vctx) {
    field_check *c = vctx;
    c->fields++;
    char dotted[300];
    snprintf(dotted, sizeof dotted, "%s.%s", c->type, field);
    size_t mdlen = strlen(c->md);
    if (memmem(c->md, mdlen, dotted, strlen(dotted))) return;
    if (!strcmp(field, "size") && has_code_word(c->md, mdlen, "size")) return;
    bool named = false;
    for (const char *sec = c->md; sec && *sec;) {
        const char *end = next_heading(sec + 1);
        size_t slen = end ? (size_t)(end + 1 - sec) : strlen(sec);
        if (has_word(sec, slen, c->type, ident_char)) {
            named = true;
            if (has_code_word(sec, slen, field)) return;
        }
        sec = end ? end + 1 : NULL;
    }
    fprintf(stderr, "docs/API.md does not document %s.%s (declared in %s)%s\n", c->type, field,
            c->header, named ? "" : "; no section of docs/API.md names the struct");
    c->missing++;
}

static void test_api_md_has_every_params_field(void **state) {
    (void)state;
    char *md = hsd_test_read_file(hsd_test_src_path("docs/API.md"), NULL);
    assert_non_null(md);
    const char *headers[] = {"include/hsd.h", "include/hsd_tools.h"};
    int missing = 0, structs = 0, fields = 0;
    for (size_t h = 0; h < sizeof headers / sizeof *headers; h++) {
        char *raw = hsd_test_read_file(hsd_test_src_path(headers[h]), NULL);
        if (!raw) {
            if (h == 0) fail_msg("cannot read %s", headers[h]);
            continue; /* the tools header may be folded into others */
        }
        char *src = strip_comments(raw);
        free(raw);
        /* "typedef struct NAME_params {" ... "} NAME_params;" */
        for (char *p = src; (p = strstr(p, "struct ")); p++) {
            char *n = p + 7, *e = n;
            while (ident_char(*e)) e++;
            if (e - n < 8 || strncmp(e - 7, "_params", 7)) continue;
            char *b = e;
            while (*b == ' ' || *b == '\n') b++;
            if (*b != '{') continue;
            char type[256];
            snprintf(type, sizeof type, "%.*s", (int)(e - n), n);
            char *close = strchr(b, '}');
            assert_non_null(close);
            field_check c = {md, headers[h], type, 0, 0};
            for (char *d = b + 1; d < close;) {
                char *semi = memchr(d, ';', (size_t)(close - d));
                if (!semi) break;
                member_names(d, (size_t)(semi - d), check_field, &c);
                d = semi + 1;
            }
            if (c.fields == 0) fprintf(stderr, "%s: no fields parsed in %s\n", headers[h], type);
            structs++;
            fields += c.fields;
            missing += c.missing + (c.fields == 0);
            p = close;
        }
        free(src);
    }
    free(md);
    assert_true(structs >= 5 && fields >= 30); /* the headers were found and parsed */
    assert_int_equal(missing, 0);
}


/* README.md and every Markdown page of docs/, as paths relative to the source tree. */
typedef struct {
    char names[64][272]; /* "docs/" + a file name of up to 255 bytes */
    size_t n;
} doc_list;

static void doc_files(doc_list *l) {
    l->n = 0;
    snprintf(l->names[l->n++], sizeof l->names[0], "README.md");
    DIR *d = opendir(hsd_test_src_path("docs"));
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d)) && l->n < 64;) {
        size_t len = strlen(e->d_name);
        if (len > 3 && !strcmp(e->d_name + len - 3, ".md"))
            snprintf(l->names[l->n++], sizeof l->names[0], "docs/%s", e->d_name);
    }
    closedir(d);
}

/* ---- environment variables ----------------------------------------------------------- */

typedef struct {
    char *docs;      /* README.md and the pages of docs/, concatenated */
    size_t docs_len;
    int missing, vars;
} env_check;

/* Whether `name` is documented: a whole word in README.md or docs/. A name ending in '_' is a
 * prefix read with a suffix (HSD_VLLM_<KEY>): the prefix must appear. */
static bool env_documented(const env_check *c, const char *name) {
    size_t nl = strlen(name);
    if (name[nl - 1] == '_') return memmem(c->docs, c->docs_len, name, nl) != NULL;
    return has_word(c->docs, c->docs_len, name, ident_char);
}

static void scan_env_file(env_check *c, const char *path, const char *rel) {
    size_t len;
    char *text = hsd_test_read_file(path, &len);
    if (!text || memchr(text, 0, len)) { /* unreadable or binary */
        free(text);
        return;
    }
    /* C getenv("HSD_X"), Python os.environ.get/os.environ[/os.getenv("HSD_X"), shell $HSD_X
     * and ${HSD_X...}, make $(HSD_X) */
    regex_t re;
    int rc = regcomp(&re,
                     "(getenv\\(|environ\\.get\\(|environ\\[)[\"'](HSD_[A-Z0-9_]+)[\"']"
                     "|\\$[{(]?(HSD_[A-Z0-9_]+)",
                     REG_EXTENDED);
    assert_int_equal(rc, 0);
    int line = 1;
    const char *lp = text;
    regmatch_t m[4];
    for (const char *p = text; regexec(&re, p, 4, m, p == text ? 0 : REG_NOTBOL) == 0;
         p += m[0].rm_eo) {
        int g = m[2].rm_so >= 0 ? 2 : 3;
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)(m[g].rm_eo - m[g].rm_so), p + m[g].rm_so);
        for (; lp < p + m[0].rm_so; lp++)
            if (*lp == '\n') line++;
        c->vars++;
        if (!env_documented(c, name)) {
            fprintf(stderr, "%s:%d reads %s, which neither README.md nor docs/ documents\n", rel,
                    line, name);
            c->missing++;
        }
    }
    regfree(&re);
    free(text);
}

static bool source_file(const char *name) {
    static const char *ext[] = {".c", ".h", ".sh", ".py", ".js", ".mjs", ".cu", ".cmake"};
    const char *dot = strrchr(name, '.');
    if (!dot) return true; /* scripts without an extension (.ci/run style) */
    for (size_t i = 0; i < sizeof ext / sizeof *ext; i++)
        if (!strcmp(dot, ext[i])) return true;
    return false;
}

static void scan_env_dir(env_check *c, const char *rel) {
    DIR *d = opendir(hsd_test_src_path(rel));
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char sub[2048];
        snprintf(sub, sizeof sub, "%s/%s", rel, e->d_name);
        char path[4096];
        snprintf(path, sizeof path, "%s", hsd_test_src_path(sub));
        struct stat st;
        if (lstat(path, &st) != 0) continue;
        if (S_ISDIR(st.st_mode))
            scan_env_dir(c, sub);
        else if (S_ISREG(st.st_mode) && source_file(e->d_name))
            scan_env_file(c, path, sub);
    }
    closedir(d);
}

static void test_env_vars_documented(void **state) {
    (void)state;
    env_check c = {0};
    size_t cap = 1 << 20;
    c.docs = malloc(cap);
    assert_non_null(c.docs);
    doc_list docs;
    doc_files(&docs);
    for (size_t i = 0; i < docs.n; i++) {
        size_t len;
        char *t = hsd_test_read_file(hsd_test_src_path(docs.names[i]), &len);
        assert_non_null(t);
        while (c.docs_len + len + 2 > cap) {
            cap *= 2;
            c.docs = realloc(c.docs, cap);
            assert_non_null(c.docs);
        }
        memcpy(c.docs + c.docs_len, t, len);
        c.docs_len += len;
        c.docs[c.docs_len++] = '\n';
        free(t);
    }
    const char *dirs[] = {"cli", "server", "bench", "scripts", ".ci"};
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) scan_env_dir(&c, dirs[i]);
    scan_env_file(&c, hsd_test_src_path("Makefile"), "Makefile");
    free(c.docs);
    assert_true(c.vars >= 5); /* the sources were found */
    assert_int_equal(c.missing, 0);
}

/* ---- bench/RESULTS.md ---------------------------------------------------------------- */

static void test_results_md_is_a_summary(void **state) {
    (void)state;
    size_t len;
    char *res = hsd_test_read_file(hsd_test_src_path("bench/RESULTS.md"), &len);
    assert_non_null(res);
    int lines = 0;
    for (size_t i = 0; i < len; i++) lines += res[i] == '\n';
    if (lines > 600)
        fprintf(stderr, "bench/RESULTS.md has %d lines (at most 600: it is the summary, one table "
                        "per README claim; move the rest to bench/notes/<topic>.md)\n", lines);
    int missing = 0, links = 0;
    doc_list docs;
    doc_files(&docs);
    for (size_t f = 0; f < docs.n; f++) {
        const char *file = docs.names[f];
        char *md = hsd_test_read_file(hsd_test_src_path(file), NULL);
        assert_non_null(md);
        int line = 1;
        for (const char *p = md; *p; p++) {
            if (*p == '\n') line++;
            if (strncmp(p, "RESULTS.md#", 11)) continue;
            const char *a = p + 11, *e = a;
            while (isalnum((unsigned char)*e) || *e == '-' || *e == '_') e++;
            char want[300];
            snprintf(want, sizeof want, "id=\"%.*s\"", (int)(e - a), a);
            links++;
            if (!strstr(res, want)) {
                fprintf(stderr, "%s:%d links to bench/RESULTS.md#%.*s, which has no such anchor "
                                "(<a id=\"%.*s\"></a>)\n", file, line, (int)(e - a), a,
                        (int)(e - a), a);
                missing++;
            }
        }
        free(md);
    }
    free(res);
    assert_true(links >= 3); /* README links its numbers to RESULTS.md */
    assert_true(lines <= 600);
    assert_int_equal(missing, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_api_md_has_every_function),
        cmocka_unit_test(test_api_md_states_export_counts),
        cmocka_unit_test(test_cli_md_has_every_flag),
        cmocka_unit_test(test_api_md_has_every_params_field),
        cmocka_unit_test(test_env_vars_documented),
        cmocka_unit_test(test_results_md_is_a_summary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
