/* lib/analysis/psi_stats on the whole qwen3 vocabulary (invariants and the paper's Table 5) and
 * `hsd psi-stats` (the CLI's --json checked for consistency; bad arguments). Split from
 * test_psi_stats.c (the DP against a recursive enumeration) by concept. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hsd.h"
#include "lib/base/map.h"
#include "lib/analysis/psi_stats.h"
#include "tests/testutil.h"

/* ---- real tokenizers ----------------------------------------------------------------------- */

static hsd_tokenizer *load(const char *rel) {
    const char *p = hsd_test_path(rel);
    if (!hsd_test_require(p)) return NULL;
    hsd_tokenizer *t = NULL;
    assert_int_equal(hsd_tokenizer_load_file(p, &t), HSD_OK);
    return t;
}

/* Whole qwen3 vocabulary over itself: invariants, and the paper's Table 5 (Qwen2-7B, the
 * 150,000 shortest tokens; Qwen3 shares the base vocabulary). */
static void test_qwen3_table5(void **state) {
    (void)state;
    hsd_tokenizer *t = load("tokenizers/qwen3/tokenizer.json");
    if (!t) skip();
    hsd_token_trie *tr = NULL;
    assert_int_equal(hsd_token_trie_build(t, &tr), HSD_OK);
    hsd_psi_stats s;
    assert_int_equal(hsd_psi_stats_compute(t, tr, NULL, &s), HSD_OK);
    assert_int_equal(s.n_tokens, hsd_token_trie_n_tokens(tr));
    assert_int_equal(s.n_none, 0); /* every token is at least its own decomposition */
    int32_t n_max = 0, saturated = 0;
    for (int32_t id = 0; id < s.n_ids; id++) {
        if (!s.len[id]) continue;
        const hsd_psi_token *k = &s.tok[id];
        assert_true(k->count >= 1);
        /* Lemma 3.1: at most 2^(len-1) */
        assert_true(k->count <= ldexp(1.0, (int)s.len[id] - 1));
        /* qwen3 has all 256 single bytes: the longest split is byte by byte */
        assert_int_equal(k->parts_max, (int)s.len[id]);
        assert_int_equal(k->n_max, (int)s.len[id]);
        assert_true(k->nodes >= 1);
        if (k->count >= 18446744073709551616.0) {
            saturated++;
            assert_true(k->count_u64 == UINT64_MAX);
        } else if (k->count < 9007199254740992.0) {
            assert_true((double)k->count_u64 == k->count);
        }
        if (k->n_max > n_max) n_max = k->n_max;
    }
    assert_int_equal(saturated, s.n_saturated);
    assert_int_equal(n_max, s.n_max);
    assert_int_equal(s.n_max, (int)s.max_len);

    int32_t *ids;
    size_t n;
    assert_int_equal(hsd_psi_ids_by_length(&s, &ids, &n), HSD_OK);
    assert_int_equal(n, (size_t)s.n_tokens);
    for (size_t i = 1; i < n; i++)
        assert_true(s.len[ids[i - 1]] < s.len[ids[i]] ||
                    (s.len[ids[i - 1]] == s.len[ids[i]] && ids[i - 1] < ids[i]));
    const size_t N = 150000;
    double *v = malloc(N * sizeof *v);
    for (size_t i = 0; i < N; i++) v[i] = s.len[ids[i]];
    hsd_psi_summary len;
    hsd_psi_summarize(v, N, &len);
    for (size_t i = 0; i < N; i++) v[i] = s.tok[ids[i]].count;
    hsd_psi_summary cnt;
    hsd_psi_summarize(v, N, &cnt);
    printf("shortest 150000: length mean %.2f sd %.2f; decompositions mean %.2f sd %.2f min %g "
           "p25 %g median %g p75 %g max %g\n",
           len.mean, len.sd, cnt.mean, cnt.sd, cnt.min, cnt.p25, cnt.median, cnt.p75, cnt.max);
    /* Table 5, token length: mean 6.21, sd 2.87, min 1, p25 4, median 6, p75 8, max 17 */
    assert_true(fabs(len.mean - 6.21) < 0.005);
    assert_true(fabs(len.sd - 2.87) < 0.005);
    assert_true(len.min == 1 && len.p25 == 4 && len.median == 6 && len.p75 == 8 && len.max == 17);
    /* Table 5, combinations: min 1, p25 7, median 15, p75 56, max 65,536 */
    assert_true(cnt.min == 1 && cnt.p25 == 7 && cnt.median == 15 && cnt.p75 == 56);
    assert_true(cnt.max == 65536);
    /* mean 144.31: which of the 310 tokens of 17 bytes fall into the 150,000 is a tie the
     * paper does not break; the paper's mean must lie between the lightest and the heaviest
     * choice of them */
    uint32_t last = s.len[ids[N - 1]];
    size_t lo = 0, hi;
    while (s.len[ids[lo]] < last) lo++;
    for (hi = lo; hi < n && s.len[ids[hi]] == last; hi++) {
    }
    double base = 0;
    for (size_t i = 0; i < lo; i++) base += s.tok[ids[i]].count;
    double *tie = malloc((hi - lo) * sizeof *tie);
    for (size_t i = lo; i < hi; i++) tie[i - lo] = s.tok[ids[i]].count;
    hsd_psi_summary tmp;
    hsd_psi_summarize(tie, hi - lo, &tmp); /* sorts */
    double light = base, heavy = base;
    for (size_t i = 0; i < N - lo; i++) {
        light += tie[i];
        heavy += tie[hi - lo - 1 - i];
    }
    printf("tie at %u bytes: %zu of %zu taken; mean between %.2f and %.2f (paper 144.31)\n", last,
           N - lo, hi - lo, light / N, heavy / N);
    assert_true(light / N <= 144.31 && 144.31 <= heavy / N);
    free(tie);
    free(v);
    free(ids);

    /* per-length rows agree with the per-token results */
    hsd_psi_length_row *rows;
    size_t nr;
    assert_int_equal(hsd_psi_by_length(&s, &rows, &nr), HSD_OK);
    int64_t total = 0;
    for (size_t i = 0; i < nr; i++) {
        total += rows[i].tokens;
        assert_int_equal(rows[i].n_max, (int)rows[i].len);
        assert_true(rows[i].count.max <= ldexp(1.0, (int)rows[i].len - 1));
        if (i) assert_true(rows[i].len > rows[i - 1].len);
    }
    assert_int_equal(total, s.n_tokens);
    assert_int_equal(rows[0].len, 1);
    assert_int_equal(rows[0].tokens, 256); /* the byte alphabet */
    assert_true(rows[0].count.mean == 1);
    free(rows);
    hsd_psi_stats_free(&s);
    hsd_token_trie_free(tr);
    hsd_tokenizer_free(t);
}

/* ---- the CLI ------------------------------------------------------------------------------- */

/* Runs a command that must fail: returns its exit status; *err gets stderr+stdout. */
static int run_failing(const char *cmd, char *err, size_t cap) {
    char full[2048];
    snprintf(full, sizeof full, "%s 2>&1", cmd);
    FILE *p = popen(full, "r");
    assert_non_null(p);
    size_t n = fread(err, 1, cap - 1, p);
    err[n] = 0;
    int rc = pclose(p);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static void test_cli_json(void **state) {
    (void)state;
    const char *tp = hsd_test_path("models/stories260K/tok512.bin");
    const char *dp = hsd_test_path("models/babyllama-tok105/tok105.bin");
    HSD_REQUIRE_FILE(tp);
    HSD_REQUIRE_FILE(dp);
    char svg[] = "/tmp/hsd_psi_svg_XXXXXX";
    int fd = mkstemp(svg);
    assert_true(fd >= 0);
    close(fd);
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "'%s' psi-stats --target-tokenizer '%s' --draft-tokenizer '%s' "
             "--json --svg '%s' --shortest 300",
             hsd_test_cli(), tp, dp, svg);
    char *out = hsd_test_run(cmd);
    json_error_t e;
    json_t *o = json_loads(out, 0, &e);
    if (!o) fprintf(stderr, "bad JSON (%s): %s\n", e.text, out);
    assert_non_null(o);

    /* the same numbers in process */
    hsd_tokenizer *t = NULL, *d = NULL;
    assert_int_equal(hsd_tokenizer_load_file(tp, &t), HSD_OK);
    assert_int_equal(hsd_tokenizer_load_file(dp, &d), HSD_OK);
    hsd_token_trie *tr = NULL;
    assert_int_equal(hsd_token_trie_build(d, &tr), HSD_OK);
    hsd_psi_stats s;
    assert_int_equal(hsd_psi_stats_compute(t, tr, NULL, &s), HSD_OK);

    int tokens = (int)json_integer_value(json_object_get(o, "target_tokens"));
    assert_int_equal(tokens, s.n_tokens);
    assert_int_equal(json_integer_value(json_object_get(o, "no_decomposition")), s.n_none);
    assert_int_equal(json_integer_value(json_object_get(o, "n_max")), s.n_max);
    assert_string_equal(json_string_value(json_object_get(o, "count_mode")), "ids");
    /* tok105 is character-level with no byte fallback: the tok512 tokens it cannot spell are
     * exactly the 168 of `hsd pair`'s T -> D* check (docs/PAIR.md), all single bytes */
    assert_int_equal(s.n_none, 168);
    json_t *rows = json_object_get(o, "by_length");
    assert_true(json_is_array(rows));
    int sum = 0, none = 0, n_max = 0;
    double max = 0;
    for (size_t i = 0; i < json_array_size(rows); i++) {
        json_t *r = json_array_get(rows, i);
        sum += (int)json_integer_value(json_object_get(r, "tokens"));
        none += (int)json_integer_value(json_object_get(r, "none"));
        int nm = (int)json_integer_value(json_object_get(r, "n_max"));
        if (nm > n_max) n_max = nm;
        double mx = json_real_value(json_object_get(r, "max"));
        if (mx > max) max = mx;
        assert_true(json_real_value(json_object_get(r, "median")) <= mx);
    }
    assert_int_equal(sum, tokens);
    assert_int_equal(none, s.n_none);
    assert_int_equal(n_max, s.n_max);
    json_t *all = json_object_get(o, "all"), *sh = json_object_get(o, "shortest");
    assert_int_equal(json_integer_value(json_object_get(all, "n")), tokens);
    assert_int_equal(json_integer_value(json_object_get(sh, "n")), 300);
    double all_max =
        json_real_value(json_object_get(json_object_get(all, "decompositions"), "max"));
    assert_true(all_max == max);
    assert_true(all_max == json_real_value(
                               json_object_get(json_object_get(o, "max_decompositions"), "count")));
    assert_true(json_real_value(json_object_get(json_object_get(sh, "length"), "max")) <=
                json_real_value(json_object_get(json_object_get(all, "length"), "max")));
    /* the SVG has one box per length row */
    char *svgtext = hsd_test_read_file(svg, NULL);
    assert_non_null(svgtext);
    assert_non_null(strstr(svgtext, "<svg"));
    assert_non_null(strstr(svgtext, "</svg>"));
    size_t boxes = 0;
    for (const char *q = svgtext; (q = strstr(q, "fill=\"#6a9fd8\"")); q++) boxes++;
    assert_int_equal(boxes, json_array_size(rows) + 1); /* + the legend's */
    free(svgtext);
    unlink(svg);

    /* `hsd pair` reports the same ψ numbers */
    snprintf(cmd, sizeof cmd, "'%s' pair --target-tokenizer '%s' --draft-tokenizer '%s' --json",
             hsd_test_cli(), tp, dp);
    char *pout = hsd_test_run(cmd);
    json_t *po = json_loads(pout, JSON_ALLOW_NUL, &e); /* counterexample "\u0000" */
    assert_non_null(po);
    json_t *psi = json_object_get(po, "psi_cost");
    assert_true(json_is_object(psi));
    assert_int_equal(json_integer_value(json_object_get(psi, "target_tokens")), s.n_tokens);
    assert_int_equal(json_integer_value(json_object_get(psi, "no_decomposition")), s.n_none);
    assert_int_equal(json_integer_value(json_object_get(psi, "n_max")), s.n_max);
    assert_true(json_real_value(json_object_get(psi, "max")) == all_max);
    assert_true(json_real_value(json_object_get(psi, "median")) ==
                json_real_value(json_object_get(json_object_get(all, "decompositions"), "median")));
    json_decref(po);
    free(pout);

    hsd_psi_stats_free(&s);
    hsd_token_trie_free(tr);
    hsd_tokenizer_free(t);
    hsd_tokenizer_free(d);
    json_decref(o);
    free(out);
}

/* A llama2.c tokenizer.bin with a 1,500-byte token over {a, aa}: its count (about 1e313)
 * is past DBL_MAX; the CLI still writes valid JSON ("inf") and an SVG. */
static void write_entry(FILE *f, const char *s, int32_t len) {
    float score = 0.0f;
    assert_int_equal(fwrite(&score, sizeof score, 1, f), 1);
    assert_int_equal(fwrite(&len, sizeof len, 1, f), 1);
    assert_int_equal(fwrite(s, 1, (size_t)len, f), (size_t)len);
}

static void test_cli_huge_count(void **state) {
    (void)state;
    char path[] = "/tmp/hsd_psi_tok_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "wb");
    assert_non_null(f);
    static char run[1500];
    memset(run, 'a', sizeof run);
    int32_t max_len = (int32_t)sizeof run;
    assert_int_equal(fwrite(&max_len, sizeof max_len, 1, f), 1);
    write_entry(f, "<unk>", 5);
    write_entry(f, "\n<s>\n", 5);
    write_entry(f, "\n</s>\n", 6);
    write_entry(f, "a", 1);
    write_entry(f, "aa", 2);
    write_entry(f, run, max_len);
    assert_int_equal(fclose(f), 0);
    char bin[64], svg[64], cmd[1024];
    snprintf(bin, sizeof bin, "%s.bin", path);
    assert_int_equal(rename(path, bin), 0);
    snprintf(svg, sizeof svg, "%s.svg", path);
    snprintf(cmd, sizeof cmd, "'%s' psi-stats -T '%s' -D '%s' --json --svg '%s'", hsd_test_cli(),
             bin, bin, svg);
    char *out = hsd_test_run(cmd);
    json_error_t e;
    json_t *o = json_loads(out, 0, &e);
    if (!o) fprintf(stderr, "bad JSON (%s): %s\n", e.text, out);
    assert_non_null(o);
    json_t *mx = json_object_get(o, "max_decompositions");
    assert_int_equal(json_integer_value(json_object_get(mx, "len")), 1500);
    assert_string_equal(json_string_value(json_object_get(mx, "count")), "inf");
    assert_int_equal(json_integer_value(json_object_get(o, "above_uint64")), 1);
    assert_int_equal(json_integer_value(json_object_get(o, "n_max")), 1500);
    /* "aa": a a, aa */
    json_t *rows = json_object_get(o, "by_length");
    assert_int_equal(json_array_size(rows), 3);
    assert_true(json_real_value(json_object_get(json_array_get(rows, 1), "max")) == 2);
    char *svgtext = hsd_test_read_file(svg, NULL);
    assert_non_null(svgtext);
    assert_null(strstr(svgtext, "nan"));
    assert_null(strstr(svgtext, "inf"));
    free(svgtext);
    json_decref(o);
    free(out);
    unlink(bin);
    unlink(svg);
}

static void test_cli_errors(void **state) {
    (void)state;
    const char *dp = hsd_test_path("models/babyllama-tok105/tok105.bin");
    HSD_REQUIRE_FILE(dp);
    char cmd[2048], err[8192];
    snprintf(cmd, sizeof cmd,
             "'%s' psi-stats --draft-tokenizer '%s' --target-tokenizer "
             "/nonexistent/tok.json",
             hsd_test_cli(), dp);
    assert_int_equal(run_failing(cmd, err, sizeof err), 1);
    assert_non_null(strstr(err, "/nonexistent/tok.json"));
    assert_non_null(strstr(err, "target tokenizer"));

    snprintf(cmd, sizeof cmd, "'%s' psi-stats --draft-tokenizer '%s'", hsd_test_cli(), dp);
    assert_int_equal(run_failing(cmd, err, sizeof err), 2);
    assert_non_null(strstr(err, "--target-tokenizer"));

    snprintf(cmd, sizeof cmd, "'%s' psi-stats -D '%s' -T '%s' --shortest x", hsd_test_cli(), dp,
             dp);
    assert_int_equal(run_failing(cmd, err, sizeof err), 2);
    assert_non_null(strstr(err, "--shortest"));

    snprintf(cmd, sizeof cmd, "'%s' psi-stats -D '%s' -T '%s' --bogus", hsd_test_cli(), dp, dp);
    assert_int_equal(run_failing(cmd, err, sizeof err), 2);
    assert_non_null(strstr(err, "--bogus"));

    snprintf(cmd, sizeof cmd, "'%s' psi-stats -D '%s' -T '%s' --svg /nonexistent/dir/f.svg",
             hsd_test_cli(), dp, dp);
    assert_int_equal(run_failing(cmd, err, sizeof err), 1);
    assert_non_null(strstr(err, "/nonexistent/dir/f.svg"));

    /* a file that is not a tokenizer */
    snprintf(cmd, sizeof cmd, "'%s' psi-stats -D '%s' -T '%s'", hsd_test_cli(), dp,
             hsd_test_src_path("CMakeLists.txt"));
    assert_int_equal(run_failing(cmd, err, sizeof err), 1);
    assert_non_null(strstr(err, "hsd psi-stats: target tokenizer"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qwen3_table5),
        cmocka_unit_test(test_cli_json),
        cmocka_unit_test(test_cli_huge_count),
        cmocka_unit_test(test_cli_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
