/* hsd trim (hsd_trim_* in include/hsd_tools.h, cli/cmd_trim.c): the optimum of U(K) = a C(K) + (1 - a) R(K) with
 * C(K) >= c_min equals brute force over every K on real tokenizers and the shared corpus, for
 * several a and c_min, with ties and infeasible constraints; the marginal-gain argument
 * (U is concave in K since ranked counts decrease) gives the same K independently; the CLI's
 * ids file round-trips into a trimmed head. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hsd.h"
#include "hsd_tools.h"
#include "lib/analysis/trim.h"
#include "tests/testutil.h"

static const char *corpus_rel = "corpus/corpus.jsonl";

typedef struct pair_ci {
    int64_t c;
    int32_t id;
} pair_ci;

static int by_count_desc(const void *a, const void *b) {
    const pair_ci *x = a, *y = b;
    if (x->c != y->c) return x->c > y->c ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* The test's own count and ranking of the corpus under tok. */
static void own_ranking(const hsd_tokenizer *tok, const hsd_corpus *c, int64_t *counts,
                        pair_ci *ranked, int64_t *total) {
    int32_t V = hsd_tokenizer_vocab_size(tok);
    memset(counts, 0, (size_t)V * sizeof *counts);
    *total = 0;
    for (size_t i = 0; i < c->n; i++) {
        int32_t *ids;
        size_t n;
        assert_int_equal(hsd_tokenizer_encode_alloc(tok, c->text[i], c->len[i], false, &ids, &n),
                         HSD_OK);
        for (size_t j = 0; j < n; j++) counts[ids[j]]++;
        *total += (int64_t)n;
        hsd_free(ids);
    }
    for (int32_t v = 0; v < V; v++) ranked[v] = (pair_ci){counts[v], v};
    qsort(ranked, (size_t)V, sizeof *ranked, by_count_desc);
}

/* Brute force: U at every K, the first maximum among feasible K. */
static int32_t brute_force(const pair_ci *ranked, int32_t V, int64_t total,
                           const hsd_trim_params *p, double *best_u) {
    int64_t run = 0;
    int32_t best = 0;
    *best_u = -INFINITY;
    for (int32_t k = 1; k <= V; k++) {
        run += ranked[k - 1].c;
        double c = (double)run / (double)total;
        double r = 1.0 - (p->fixed_flops + 2.0 * p->dim * k) / (p->fixed_flops + 2.0 * p->dim * V);
        double u = p->alpha * c + (1 - p->alpha) * r;
        if (c >= p->min_coverage && u > *best_u) *best_u = u, best = k;
    }
    return best;
}

static void check_tokenizer(const char *rel, const hsd_corpus *corpus) {
    const char *path = hsd_test_path(rel);
    if (!hsd_test_require(path)) skip();
    hsd_tokenizer *tok;
    assert_int_equal(hsd_tokenizer_load_file(path, &tok), HSD_OK);
    int32_t V = hsd_tokenizer_vocab_size(tok);
    int64_t *counts = calloc((size_t)V, sizeof *counts), *own = malloc((size_t)V * sizeof *own),
            total, own_total;
    int64_t *prefix = malloc(((size_t)V + 1) * sizeof *prefix);
    int32_t *order = malloc((size_t)V * sizeof *order);
    pair_ci *ranked = malloc((size_t)V * sizeof *ranked);
    assert_int_equal(hsd_trim_count(tok, corpus, counts, &total), HSD_OK);
    own_ranking(tok, corpus, own, ranked, &own_total);
    assert_int_equal(total, own_total);
    assert_memory_equal(counts, own, (size_t)V * sizeof *own);
    assert_int_equal(hsd_trim_rank(counts, V, order), HSD_OK);
    for (int32_t i = 0; i < V; i++) assert_int_equal(order[i], ranked[i].id);
    hsd_trim_prefix(counts, order, V, prefix);
    int32_t distinct = 0;
    for (int32_t v = 0; v < V; v++) distinct += counts[v] > 0;

    const double alphas[] = {0.0, 0.05, 0.5, 0.9, 0.99, 0.999, 1.0};
    const double cmins[] = {0.0, 0.5, 0.8, 0.95, 0.999, 1.0};
    const int32_t dims[] = {64, 4096};
    const double fixed[] = {0.0, 1e9};
    int checked = 0;
    for (size_t ai = 0; ai < sizeof alphas / sizeof *alphas; ai++)
        for (size_t ci = 0; ci < sizeof cmins / sizeof *cmins; ci++)
            for (int di = 0; di < 2; di++) {
                hsd_trim_params p = {sizeof(hsd_trim_params), alphas[ai], cmins[ci], dims[di], fixed[di]};
                hsd_trim_result r;
                assert_int_equal(hsd_trim_optimum(prefix, V, total, V, &p, &r), HSD_OK);
                double bu;
                int32_t bk = brute_force(ranked, V, total, &p, &bu);
                if (r.k != bk)
                    fprintf(stderr, "%s: alpha %g c_min %g: K* %d, brute force %d\n", rel, p.alpha,
                            p.min_coverage, r.k, bk);
                assert_int_equal(r.k, bk);
                assert_true(r.utility == bu);
                assert_true(r.coverage >= p.min_coverage);
                /* ties: coverage-only utility is flat once every seen id is kept -> the
                 * smallest such K; latency-only utility -> the smallest feasible K */
                if (p.alpha == 1.0)
                    assert_int_equal(r.k,
                                     distinct > r.k_min_feasible ? distinct : r.k_min_feasible);
                if (p.alpha == 0.0) assert_int_equal(r.k, r.k_min_feasible);
                /* the marginal argument: with decreasing counts U is concave, so the
                 * unconstrained optimum is the last K whose count still pays for its row
                 * (a f_K / N > (1 - a) 2d / (F + 2dV)); the constraint lifts it to k_min */
                double cost = (1 - p.alpha) * 2.0 * p.dim / (p.fixed_flops + 2.0 * p.dim * V);
                int32_t k_unc = 1;
                bool near_tie = false;
                for (int32_t k = 2; k <= V; k++) {
                    double gain = p.alpha * (double)ranked[k - 1].c / (double)total;
                    if (fabs(gain - cost) < 1e-12 * (gain + cost)) near_tie = true;
                    if (gain > cost) k_unc = k;
                }
                if (!near_tie) {
                    assert_int_equal(r.k, k_unc > r.k_min_feasible ? k_unc : r.k_min_feasible);
                    checked++;
                }
            }
    printf("%s: V %d, %lld tokens, %d distinct; %d (alpha, c_min, d) settings match brute force, "
           "%d also the "
           "marginal rule\n",
           rel, V, (long long)total, distinct,
           (int)(sizeof alphas / sizeof *alphas * sizeof cmins / sizeof *cmins * 2), checked);
    assert_true(checked > 0);

    /* infeasible and invalid constraints are clear errors */
    hsd_trim_params p = {sizeof(hsd_trim_params), 0.5, 1.0001, 64, 0};
    hsd_trim_result r;
    assert_int_equal(hsd_trim_optimum(prefix, V, total, V, &p, &r), HSD_ERR_OUT_OF_RANGE);
    assert_non_null(strstr(hsd_last_error(), "infeasible"));
    /* candidates restricted to the 10 most frequent ids cover less than everything */
    p.min_coverage = hsd_trim_coverage(prefix, total, 10) + 1e-9;
    assert_int_equal(hsd_trim_optimum(prefix, 10, total, V, &p, &r), HSD_ERR_OUT_OF_RANGE);
    p.min_coverage = hsd_trim_coverage(prefix, total, 10);
    assert_int_equal(hsd_trim_optimum(prefix, 10, total, V, &p, &r), HSD_OK);
    assert_int_equal(r.k, 10);
    p = (hsd_trim_params){sizeof(hsd_trim_params), 1.5, 0.5, 64, 0};
    assert_int_equal(hsd_trim_optimum(prefix, V, total, V, &p, &r), HSD_ERR_INVALID_ARG);
    p = (hsd_trim_params){sizeof(hsd_trim_params), 0.5, 0.5, 0, 0};
    assert_int_equal(hsd_trim_optimum(prefix, V, total, V, &p, &r), HSD_ERR_INVALID_ARG);
    p = (hsd_trim_params){sizeof(hsd_trim_params), 0.5, NAN, 64, 0};
    assert_int_equal(hsd_trim_optimum(prefix, V, total, V, &p, &r), HSD_ERR_INVALID_ARG);
    p = (hsd_trim_params){sizeof(hsd_trim_params), 0.5, 0.5, 64, 0};
    assert_int_equal(hsd_trim_optimum(prefix, V, 0, V, &p, &r),
                     HSD_ERR_OUT_OF_RANGE); /* empty corpus */

    free(counts), free(own), free(prefix), free(order), free(ranked);
    hsd_tokenizer_free(tok);
}

static hsd_corpus corpus;

static int setup(void **state) {
    (void)state;
    const char *path = hsd_test_path(corpus_rel);
    if (!hsd_test_require(path)) return 0; /* the tests skip with the reason */
    return hsd_corpus_load(path, &corpus) == HSD_OK ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    hsd_corpus_free(&corpus);
    return 0;
}

#define NEED_CORPUS()                                                                              \
    do {                                                                                           \
        if (!corpus.n && !hsd_test_require(hsd_test_path(corpus_rel))) skip();                     \
    } while (0)

static void test_optimum_tok512(void **state) {
    (void)state;
    NEED_CORPUS();
    check_tokenizer("models/stories260K/tok512.bin", &corpus);
}
static void test_optimum_llama2(void **state) {
    (void)state;
    NEED_CORPUS();
    check_tokenizer("models/llama2-tokenizer/tokenizer.bin", &corpus);
}
static void test_optimum_gpt2(void **state) {
    (void)state;
    NEED_CORPUS();
    check_tokenizer("models/vocab-gguf/ggml-vocab-gpt-2.gguf", &corpus);
}
static void test_optimum_qwen3(void **state) {
    (void)state;
    NEED_CORPUS();
    check_tokenizer("tokenizers/qwen3/tokenizer.json", &corpus);
}

/* The CLI writes K* ids, most frequent first, that a trimmed head accepts; --draft-tokenizer
 * writes drafter ids of the same bytes; an infeasible c_min fails with the reason. */
static void test_cli_ids_file(void **state) {
    (void)state;
    NEED_CORPUS();
    const char *tokp = hsd_test_path("models/stories260K/tok512.bin"),
               *modp = hsd_test_path("models/stories260K/stories260K.bin");
    const char *dtokp = hsd_test_path("models/babyllama-tok105/tok105.bin");
    if (!hsd_test_require(tokp) || !hsd_test_require(modp) || !hsd_test_require(dtokp)) skip();
    char ids_path[64], svg_path[64], cmd[2048];
    snprintf(ids_path, sizeof ids_path, "/tmp/hsd_test_trim_%d.ids", (int)getpid());
    snprintf(svg_path, sizeof svg_path, "/tmp/hsd_test_trim_%d.svg", (int)getpid());
    snprintf(
        cmd, sizeof cmd,
        "%s trim -t %s --corpus %s --alpha 0.7 --min-coverage 0.9 --hidden-dim 64 -o %s --svg %s",
        hsd_test_cli(), tokp, hsd_test_path(corpus_rel), ids_path, svg_path);
    char *out = hsd_test_run(cmd);
    const char *ks = strstr(out, "K* = ");
    assert_non_null(ks);
    int k = atoi(ks + 5);
    /* the library's answer for the same settings */
    hsd_tokenizer *tok;
    assert_int_equal(hsd_tokenizer_load_file(tokp, &tok), HSD_OK);
    int32_t V = hsd_tokenizer_vocab_size(tok), order[512];
    int64_t counts[512] = {0}, prefix[513], total;
    assert_int_equal(hsd_trim_count(tok, &corpus, counts, &total), HSD_OK);
    assert_int_equal(hsd_trim_rank(counts, V, order), HSD_OK);
    hsd_trim_prefix(counts, order, V, prefix);
    hsd_trim_params p = {sizeof(hsd_trim_params), 0.7, 0.9, 64, 0};
    hsd_trim_result r;
    assert_int_equal(hsd_trim_optimum(prefix, V, total, V, &p, &r), HSD_OK);
    assert_int_equal(k, r.k);
    /* the ids file: a comment line, then K* ids in rank order */
    size_t len;
    char *text = hsd_test_read_file(ids_path, &len);
    assert_non_null(text);
    int32_t ids[512], n = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
        if (line[0] != '#') ids[n++] = atoi(line);
    assert_int_equal(n, k);
    for (int i = 0; i < n; i++) assert_int_equal(ids[i], order[i]);
    free(text);
    char *svg = hsd_test_read_file(svg_path, &len);
    assert_non_null(svg);
    assert_non_null(strstr(svg, "<svg"));
    assert_non_null(strstr(svg, "K* = "));
    free(svg);
    /* into a trimmed head: exactly those ids get finite logits */
    hsd_model *m;
    assert_int_equal(hsd_model_load(modp, NULL, &m), HSD_OK);
    hsd_head_params hp = hsd_head_default_params();
    hp.kind = HSD_HEAD_TRIMMED;
    hp.keep_ids = ids;
    hp.n_keep = n;
    assert_int_equal(hsd_model_set_head(m, &hp), HSD_OK);
    float logits[512];
    int32_t bos = 1;
    assert_int_equal(hsd_model_forward(m, &bos, 1, NULL, NULL, 1, logits), HSD_OK);
    int finite = 0;
    for (int32_t v = 0; v < V; v++) {
        bool kept = false;
        for (int i = 0; i < n; i++) kept |= ids[i] == v;
        assert_int_equal(isfinite(logits[v]) != 0, kept);
        finite += kept;
    }
    assert_int_equal(finite, n);
    hsd_model_free(m);
    free(out);

    /* drafter ids: tok105's characters for tok512's most frequent tokens */
    snprintf(cmd, sizeof cmd,
             "%s trim -t %s --draft-tokenizer %s --corpus %s --alpha 0.9 --min-coverage 0.3 "
             "--hidden-dim 128 -o %s",
             hsd_test_cli(), tokp, dtokp, hsd_test_path(corpus_rel), ids_path);
    out = hsd_test_run(cmd);
    hsd_tokenizer *dtok;
    assert_int_equal(hsd_tokenizer_load_file(dtokp, &dtok), HSD_OK);
    text = hsd_test_read_file(ids_path, &len);
    bool seen[105] = {false};
    n = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '#') continue;
        int32_t d = atoi(line);
        assert_true(d >= 0 && d < 105 && !seen[d]);
        seen[d] = true;
        size_t dl;
        const uint8_t *db = hsd_tokenizer_token_bytes(dtok, d, &dl);
        bool found = false; /* some target token spells the same bytes */
        for (int32_t t = 0; t < V && !found; t++) {
            size_t tl;
            const uint8_t *tb = hsd_tokenizer_token_bytes(tok, t, &tl);
            found = tb && tl == dl && !memcmp(tb, db, dl) && !hsd_tokenizer_is_special(tok, t);
        }
        assert_true(found);
        n++;
    }
    assert_true(n > 0);
    free(text);
    free(out);
    /* coverage through single characters cannot reach 0.99 of tok512's tokens */
    snprintf(cmd, sizeof cmd,
             "%s trim -t %s --draft-tokenizer %s --corpus %s --alpha 0.5 --min-coverage 0.99 "
             "--hidden-dim 128 2>&1",
             hsd_test_cli(), tokp, dtokp, hsd_test_path(corpus_rel));
    FILE *pp = popen(cmd, "r");
    char buf[4096];
    size_t got = fread(buf, 1, sizeof buf - 1, pp);
    buf[got] = 0;
    assert_int_not_equal(pclose(pp), 0);
    assert_non_null(strstr(buf, "infeasible"));
    /* a plain-text corpus is one text: its token count is the encoding's length */
    char txt_path[64];
    snprintf(txt_path, sizeof txt_path, "/tmp/hsd_test_trim_%d.txt", (int)getpid());
    const char *plain = "Lily and Tom played in the park.\nThey saw a big dog and ran home.\n";
    FILE *tf = fopen(txt_path, "w");
    assert_non_null(tf);
    fputs(plain, tf);
    fclose(tf);
    snprintf(cmd, sizeof cmd,
             "%s trim -t %s --corpus %s --alpha 1 --min-coverage 1 --hidden-dim 64", hsd_test_cli(),
             tokp, txt_path);
    out = hsd_test_run(cmd);
    int32_t *pids;
    size_t pn;
    assert_int_equal(hsd_tokenizer_encode_alloc(tok, plain, strlen(plain), false, &pids, &pn),
                     HSD_OK);
    int32_t distinct = 0;
    for (size_t i = 0; i < pn; i++) {
        bool first = true;
        for (size_t j = 0; j < i; j++) first &= pids[j] != pids[i];
        distinct += first;
    }
    char expect[128];
    snprintf(expect, sizeof expect, "1 texts, %zu tokens, %d distinct", pn, distinct);
    assert_non_null(strstr(out, expect));
    snprintf(expect, sizeof expect, "K* = %d of", distinct); /* alpha 1: every seen token */
    assert_non_null(strstr(out, expect));
    hsd_free(pids);
    free(out);
    unlink(txt_path);
    hsd_tokenizer_free(tok);
    hsd_tokenizer_free(dtok);
    unlink(ids_path);
    unlink(svg_path);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_optimum_tok512), cmocka_unit_test(test_optimum_llama2),
        cmocka_unit_test(test_optimum_gpt2),   cmocka_unit_test(test_optimum_qwen3),
        cmocka_unit_test(test_cli_ids_file),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
