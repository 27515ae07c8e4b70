/* Chat templates against the oracle: every template of tests/data/chat_templates (33 public
 * ones and the 5 shared tokenizer_config.json ones) over every conversation of
 * tests/data/chat_conversations, with add_generation_prompt false and true, must render
 * byte-identically to Python Jinja2 configured as transformers' apply_chat_template, and
 * raise where Jinja2 raises. The references come from tests/oracle/chat_ref.py (ctest runs
 * it first, as the chat_template_refs fixture, into $HSD_CHAT_REF); without Python Jinja2
 * the corpus test skips and says how to install it. Expected values here never come from hsd.
 * The other tests check the contract around rendering: errors with line and column, the
 * raise_exception message verbatim, limits, loading sources, malformed input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsd.h"
#include "tests/testutil.h"

#define NOW_2024_07_26 1721952000 /* the oracle's fixed strftime_now day, 00:00:00 UTC */

static const char *ref_dir(void) {
    const char *d = getenv("HSD_CHAT_REF");
    return d && *d ? d : "chat_ref";
}

static char *ref_file(const char *dir, const char *cas, const char *ext, size_t *len) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s%s", dir, cas, ext);
    return hsd_test_read_file(path, len);
}

typedef struct tcache {
    char *path;
    hsd_chat_template *t;
    hsd_status st;
} tcache;

static void test_corpus_matches_jinja2(void **state) {
    (void)state;
    const char *dir = ref_dir();
    char mpath[4096];
    snprintf(mpath, sizeof mpath, "%s/MANIFEST", dir);
    char *manifest = hsd_test_read_file(mpath, NULL);
    if (!manifest) {
        fprintf(stderr,
                "skip: no oracle references in %s (Python Jinja2 missing? apt-get install -y "
                "python3-jinja2, then: python3 tests/oracle/chat_ref.py corpus tests/data %s)\n",
                mpath, dir);
        skip();
    }
    char *version = ref_file(dir, "VERSION", "", NULL);
    fprintf(stderr, "oracle: %s", version ? version : "(no VERSION)\n");
    free(version);
    tcache cache[128];
    int n_t = 0, n_ok = 0, n_err_ok = 0, n_bad = 0, n_cases = 0;
    hsd_chat_params p = hsd_chat_default_params();
    p.now_unix = NOW_2024_07_26;
    char *save = NULL;
    for (char *line = strtok_r(manifest, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *tab1 = strchr(line, '\t'), *tab2 = tab1 ? strchr(tab1 + 1, '\t') : NULL;
        assert_non_null(tab2);
        *tab1 = *tab2 = 0;
        const char *cas = line, *tpath = tab1 + 1, *kind = tab2 + 1;
        n_cases++;
        tcache *c = NULL;
        for (int i = 0; i < n_t; i++)
            if (!strcmp(cache[i].path, tpath)) c = &cache[i];
        if (!c) {
            assert_true(n_t < 128);
            c = &cache[n_t++];
            c->path = strdup(tpath);
            c->t = NULL;
            c->st = hsd_chat_template_load(tpath, NULL, &c->t);
        }
        char *ctx = ref_file(dir, cas, ".ctx.json", NULL);
        assert_non_null(ctx);
        char *out = NULL;
        size_t out_len = 0;
        hsd_status s = c->st ? c->st : hsd_chat_render_json(c->t, ctx, &p, &out, &out_len);
        if (!strcmp(kind, "ok")) {
            size_t want_len;
            char *want = ref_file(dir, cas, ".out", &want_len);
            assert_non_null(want);
            if (s == HSD_OK && out_len == want_len && !memcmp(out, want, want_len)) n_ok++;
            else {
                n_bad++;
                size_t k = 0;
                while (s == HSD_OK && k < out_len && k < want_len && out[k] == want[k]) k++;
                fprintf(stderr, "MISMATCH %s: %s\n", cas,
                        s ? hsd_last_error() : "output differs");
                if (!s)
                    fprintf(stderr, "  at byte %zu: hsd '%.40s' jinja2 '%.40s'\n", k, out + k,
                            want + k);
            }
            free(want);
        } else {
            char *err = ref_file(dir, cas, ".err", NULL);
            assert_non_null(err);
            /* a raise_exception message must reach the caller verbatim */
            const char *msg = !strncmp(err, "TemplateError: ", 15) ? err + 15 : NULL;
            if (s != HSD_OK && (!msg || strstr(hsd_last_error(), msg))) n_err_ok++;
            else {
                n_bad++;
                fprintf(stderr, "MISSED ERROR %s: jinja2 raised '%s', hsd %s\n", cas, err,
                        s ? hsd_last_error() : "rendered");
            }
            free(err);
        }
        hsd_free(out);
        free(ctx);
    }
    for (int i = 0; i < n_t; i++) {
        hsd_chat_template_free(cache[i].t);
        free(cache[i].path);
    }
    free(manifest);
    fprintf(stderr,
            "chat corpus: %d templates, %d cases: %d byte-identical renders, %d errors raised "
            "in both, %d differ\n",
            n_t, n_cases, n_ok, n_err_ok, n_bad);
    assert_true(n_t >= 35);
    assert_int_equal(n_bad, 0);
}

/* ---- contract tests ------------------------------------------------------------------- */
static hsd_status render(const char *src, const char *ctx, char **out) {
    hsd_chat_template *t;
    *out = NULL;
    hsd_status s = hsd_chat_template_from_string(src, &t);
    if (s) return s;
    hsd_chat_params p = hsd_chat_default_params();
    p.now_unix = NOW_2024_07_26;
    p.max_steps = 100000;
    p.max_output = 1 << 20;
    s = hsd_chat_render_json(t, ctx, &p, out, NULL);
    hsd_chat_template_free(t);
    return s;
}

static void expect_fail(const char *src, const char *ctx, hsd_status want, const char *needle) {
    char *out;
    hsd_status s = render(src, ctx, &out);
    if (s != want || !strstr(hsd_last_error(), needle))
        fprintf(stderr, "template %s: got %s '%s', wanted %s containing '%s'\n", src,
                hsd_status_str(s), s ? hsd_last_error() : out, hsd_status_str(want), needle);
    assert_int_equal(s, want);
    assert_null(out);
    assert_non_null(strstr(hsd_last_error(), needle));
}

static void test_parse_errors_name_line_and_column(void **state) {
    (void)state;
    /* positions counted by hand in the sources below */
    expect_fail("a\nb\n  {% if x %}\n{% endfor %}", "{}", HSD_ERR_PARSE, "line 4, column 4");
    expect_fail("{{ x + }}", "{}", HSD_ERR_PARSE, "line 1, column 8");
    expect_fail("ok\n{% frobnicate %}", "{}", HSD_ERR_PARSE, "line 2, column 4: Encountered unknown tag 'frobnicate'");
    expect_fail("{% for x in y %}never closed", "{}", HSD_ERR_PARSE, "expected 'endfor'");
    expect_fail("{{ 'unterminated }}", "{}", HSD_ERR_PARSE, "line 1, column 4: unterminated string");
    expect_fail("{# open comment", "{}", HSD_ERR_PARSE, "missing end of comment tag");
    expect_fail("{{ (1, 2 }}", "{}", HSD_ERR_PARSE, "line 1");
    expect_fail("{{ x }", "{}", HSD_ERR_PARSE, "line 1");
    expect_fail("\xff{{ x }}", "{}", HSD_ERR_INVALID_UTF8, "UTF-8");
}

static void test_raise_exception_is_verbatim(void **state) {
    (void)state;
    expect_fail("{{ raise_exception('Only user and assistant roles are supported! ' ~ messages[0].role) }}",
                "{\"messages\": [{\"role\": \"tool\"}]}", HSD_ERR_INVALID_ARG,
                "Only user and assistant roles are supported! tool");
    char *out;
    assert_int_equal(render("{{ raise_exception('x: ' ~ r) }}", "{\"r\": \"ünï 🌍\"}", &out), HSD_ERR_INVALID_ARG);
    assert_string_equal(hsd_last_error(), "x: ünï 🌍");
}

static void test_limits_are_errors(void **state) {
    (void)state;
    expect_fail("{% for a in range(1000) %}{% for b in range(1000) %}{% endfor %}{% endfor %}", "{}",
                HSD_ERR_OUT_OF_RANGE, "step limit");
    expect_fail("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "{}", HSD_ERR_OUT_OF_RANGE,
                "recursion");
    expect_fail("{% for a in range(30000) %}xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx{% endfor %}", "{}", HSD_ERR_OUT_OF_RANGE,
                "output");
    expect_fail("{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
                "{}", HSD_ERR_OUT_OF_RANGE, "limit");
    expect_fail("{{ 'x' * 100000000 }}", "{}", HSD_ERR_OUT_OF_RANGE, "limit");
    /* the sandbox's range cap, as in Jinja2 */
    expect_fail("{{ range(200000)|length }}", "{}", HSD_ERR_INVALID_ARG, "Range too big");
    /* deep nesting is a parse error, not a stack overflow */
    char deep[4000];
    size_t k = 0;
    k += (size_t)snprintf(deep + k, sizeof deep - k, "{{ ");
    for (int i = 0; i < 1500; i++) deep[k++] = '(';
    deep[k++] = '1';
    for (int i = 0; i < 1500; i++) deep[k++] = ')';
    snprintf(deep + k, sizeof deep - k, " }}");
    expect_fail(deep, "{}", HSD_ERR_PARSE, "nested too deeply");
}

static void test_context_and_api_errors(void **state) {
    (void)state;
    expect_fail("{{ x }}", "{\"x\": ", HSD_ERR_PARSE, "context JSON");
    expect_fail("{{ x }}", "[1, 2]", HSD_ERR_PARSE, "object");
    expect_fail("{{ x.y }}", "{}", HSD_ERR_INVALID_ARG, "UndefinedError: 'x' is undefined");
    expect_fail("{{ 1 + 'a' }}", "{}", HSD_ERR_INVALID_ARG, "TypeError");
    expect_fail("{% set l = [1] %}{{ l.append(2) }}", "{}", HSD_ERR_UNSUPPORTED, "unsafe");
    /* undefined add_generation_prompt stays undefined with a bare context */
    char *out;
    assert_int_equal(render("{{ add_generation_prompt is defined }}", "{}", &out), HSD_OK);
    assert_string_equal(out, "False");
    hsd_free(out);
    /* strftime_now uses the day given */
    assert_int_equal(render("{{ strftime_now('%d %b %Y') }}", "{}", &out), HSD_OK);
    assert_string_equal(out, "26 Jul 2024");
    hsd_free(out);
}

/* Cut every corpus template at every byte and render each piece: errors, never crashes. */
static void test_truncated_templates_never_crash(void **state) {
    (void)state;
    static const char *names[] = {"qwen2_5_instruct_cz", "mistral_small_3_1", "hermes_tool_vllm",
                                  "llama3_2_json_tool_vllm", "gemma3_pythonic_tool_vllm"};
    size_t clen;
    char *ctx = hsd_test_read_file(hsd_test_src_path("tests/data/chat_conversations/tools.json"), &clen);
    assert_non_null(ctx);
    int n_ok = 0, n_err = 0;
    for (size_t f = 0; f < sizeof names / sizeof names[0]; f++) {
        char rel[256];
        snprintf(rel, sizeof rel, "tests/data/chat_templates/%s.jinja", names[f]);
        size_t len;
        char *src = hsd_test_read_file(hsd_test_src_path(rel), &len);
        assert_non_null(src);
        for (size_t cut = 0; cut <= len; cut += 1 + cut % 3) {
            char *piece = malloc(cut + 1);
            memcpy(piece, src, cut);
            piece[cut] = 0;
            char *out;
            hsd_status s = render(piece, ctx, &out);
            if (s == HSD_OK) n_ok++;
            else n_err++;
            hsd_free(out);
            free(piece);
        }
        free(src);
    }
    free(ctx);
    assert_true(n_ok > 0 && n_err > 0);
}

static void test_load_sources(void **state) {
    (void)state;
    assert_int_equal(hsd_test_tmpdir_setup("chat"), 0);
    /* tokenizer_config.json with a list of named templates and AddedToken-shaped tokens */
    const char *cfg = hsd_test_tmp("tokenizer_config.json");
    FILE *f = fopen(cfg, "w");
    assert_non_null(f);
    fputs("{\"bos_token\": {\"content\": \"<s>\", \"lstrip\": false}, \"eos_token\": \"</s>\","
          " \"chat_template\": [{\"name\": \"default\", \"template\": \"D{{ bos_token }}\"},"
          " {\"name\": \"tool_use\", \"template\": \"T{{ eos_token }}\"}]}",
          f);
    fclose(f);
    hsd_chat_template *t;
    assert_int_equal(hsd_chat_template_load(cfg, NULL, &t), HSD_OK);
    assert_string_equal(hsd_chat_template_bos(t), "<s>");
    assert_string_equal(hsd_chat_template_eos(t), "</s>");
    char *out;
    assert_int_equal(hsd_chat_render_json(t, "{\"bos_token\": \"<s>\"}", NULL, &out, NULL), HSD_OK);
    assert_string_equal(out, "D<s>");
    hsd_free(out);
    hsd_chat_template_free(t);
    assert_int_equal(hsd_chat_template_load(cfg, "tool_use", &t), HSD_OK);
    hsd_chat_template_free(t);
    assert_int_equal(hsd_chat_template_load(cfg, "nope", &t), HSD_ERR_INVALID_ARG);
    assert_null(t);
    /* a directory means its tokenizer_config.json */
    const char *dir = hsd_test_path("tokenizers/qwen3");
    if (hsd_test_require(dir)) {
        assert_int_equal(hsd_chat_template_load(dir, NULL, &t), HSD_OK);
        assert_null(hsd_chat_template_bos(t));
        assert_string_equal(hsd_chat_template_eos(t), "<|im_end|>");
        hsd_chat_template_free(t);
        /* a config without a template */
        assert_int_equal(hsd_chat_template_load(hsd_test_path("tokenizers/gpt2/tokenizer_config.json"), NULL, &t),
                         HSD_ERR_UNSUPPORTED);
    }
    assert_int_equal(hsd_chat_template_load("/nonexistent/x.jinja", NULL, &t), HSD_ERR_IO);
    hsd_test_tmpdir_teardown();
}

int main(int argc, char **argv) {
    /* --corpus: the oracle comparison alone, its own ctest entry, which exits 77 (reported
     * Skipped, not Passed) when the references are absent */
    if (argc > 1 && !strcmp(argv[1], "--corpus")) {
        char mpath[4096];
        snprintf(mpath, sizeof mpath, "%s/MANIFEST", ref_dir());
        FILE *m = fopen(mpath, "r");
        if (!m) {
            fprintf(stderr,
                    "skipped: no Jinja2 references at %s: install Python Jinja2 (apt-get install -y "
                    "python3-jinja2) and run ctest again (the chat_template_refs fixture writes them)\n",
                    mpath);
            return 77;
        }
        fclose(m);
        const struct CMUnitTest corpus[] = {cmocka_unit_test(test_corpus_matches_jinja2)};
        return cmocka_run_group_tests(corpus, NULL, NULL);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_errors_name_line_and_column),
        cmocka_unit_test(test_raise_exception_is_verbatim),
        cmocka_unit_test(test_limits_are_errors),
        cmocka_unit_test(test_context_and_api_errors),
        cmocka_unit_test(test_truncated_templates_never_crash),
        cmocka_unit_test(test_load_sources),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
