/* hsd trim: the drafter vocabulary of exact maximal utility U(K) = a C(K) + (1 - a) R(K)
 * subject to C(K) >= c_min (hsd_trim_* in hsd.h), from token frequencies of a corpus tokenized by
 * the target tokenizer. With --draft-tokenizer the candidates are the target tokens the drafter can
 * spell with one token of identical surface bytes (T ∩ D, as TLI drafts), the ids written are the
 * drafter's, and coverage may top out below 1. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/prompts.h"
#include "cli/svg.h"
#include "hsd.h"
#include "hsd_tools.h"

typedef struct trim_opts {
    const char *tok, *corpus, *out, *svg, *draft;
    double alpha, min_coverage, fixed_flops;
    int32_t dim;
} trim_opts;

#define O(f) offsetof(trim_opts, f)
static const hsd_opt trim_table[] = {
    {"tokenizer", 't', HSD_OPT_STRING, O(tok), "TARGET_TOKENIZER", "target tokenizer", 0, 0},
    {"corpus", 0, HSD_OPT_STRING, O(corpus), "C", "JSONL {\"text\"} or plain text", 0, 0},
    {"alpha", 0, HSD_OPT_DOUBLE, O(alpha), "A", "weight of coverage in U, in [0, 1]", 0, 1},
    {"min-coverage", 0, HSD_OPT_DOUBLE, O(min_coverage), "CMIN", "least coverage C(K), in [0, 1]",
     0, 1},
    {"hidden-dim", 0, HSD_OPT_INT, O(dim), "D", "the drafter head's hidden size", 1,
     2147483647.0},
    {"fixed-flops", 0, HSD_OPT_DOUBLE, O(fixed_flops), "F",
     "drafter FLOPs that do not depend on K (default 0: head only)", 0, 1e300},
    {"draft-tokenizer", 0, HSD_OPT_STRING, O(draft), "DT",
     "candidates: the target tokens the drafter spells with one token (T ∩ D)", 0, 0},
    {"", 'o', HSD_OPT_STRING, O(out), "IDS_FILE",
     "write the kept ids (one per line, most frequent first) for --draft-head trim:FILE", 0, 0},
    {"svg", 0, HSD_OPT_STRING, O(svg), "FILE", "plot coverage, saving and utility against K", 0,
     0},
};
#undef O

const hsd_cli_spec hsd_spec_trim = {
    "trim",
    "-t TARGET_TOKENIZER --corpus C --alpha A --min-coverage CMIN --hidden-dim D [OPTIONS]",
    "  Ranks tokens by frequency in C tokenized by the target tokenizer and keeps the K* most\n"
    "  frequent, K* the exact maximiser of U(K) = A*C(K) + (1-A)*R(K) with C(K) >= CMIN, C the\n"
    "  coverage and R(K) = 1 - (F + 2*D*K)/(F + 2*D*V) the drafter FLOP saving.\n",
    NULL, trim_table, HSD_OPTS_N(trim_table), 0,
};

/* Coverage, saving and utility against K (log axis), K* marked. */
static int plot(const char *path, const int64_t *prefix, int32_t n_cand, int64_t total,
                int32_t v_full, const hsd_trim_params *p, const hsd_trim_result *r,
                const char *title) {
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "hsd trim: %s: cannot create\n", path);
        return 1;
    }
    const double W = 760, H = 440, x0 = 60, y0 = 40, pw = 560, ph = 330;
    double lmax = log10((double)v_full);
    hsd_svg_begin(f, W, H);
    hsd_svg_text(f, W / 2, 24, 15, "middle", title);
    hsd_svg_rect(f, x0, y0, pw, ph, "#f8f8f8");
    char buf[96];
    for (int i = 0; i <= 4; i++) { /* y grid: 0, .25, ... 1 */
        double y = y0 + ph - ph * i / 4.0;
        hsd_svg_line(f, x0, y, x0 + pw, y, "#dddddd");
        snprintf(buf, sizeof buf, "%.2f", i / 4.0);
        hsd_svg_text(f, x0 - 6, y + 4, 11, "end", buf);
    }
    for (int e = 0; e <= (int)lmax; e++) { /* x grid: powers of ten */
        double x = x0 + pw * e / (lmax > 0 ? lmax : 1);
        hsd_svg_line(f, x, y0, x, y0 + ph, "#dddddd");
        snprintf(buf, sizeof buf, "1e%d", e);
        hsd_svg_text(f, x, y0 + ph + 16, 11, "middle", buf);
    }
    hsd_svg_text(f, x0 + pw / 2, y0 + ph + 34, 12, "middle", "kept vocabulary size K (log scale)");
    const char *colors[] = {"#1f77b4", "#ff7f0e", "#2ca02c"};
    const char *names[] = {"coverage C(K)", "FLOP saving R(K)", "utility U(K)"};
    for (int curve = 0; curve < 3; curve++) {
        double px = 0, py = 0;
        int steps = 200;
        for (int s = 0; s <= steps; s++) {
            int32_t k = (int32_t)llround(pow(10.0, lmax * s / steps));
            if (k < 1) k = 1;
            if (k > n_cand) k = n_cand;
            hsd_trim_result at = {0};
            (void)hsd_trim_eval(prefix, n_cand, total, v_full, p, k, &at); /* k is in range */
            double v = curve == 0 ? at.coverage : curve == 1 ? at.saving : at.utility;
            double x = x0 + pw * log10((double)k) / (lmax > 0 ? lmax : 1),
                   y = y0 + ph - ph * fmax(0, fmin(1, v));
            if (s) hsd_svg_line(f, px, py, x, y, colors[curve]);
            px = x, py = y;
        }
        hsd_svg_line(f, x0 + pw + 12, y0 + 14 + 18 * curve, x0 + pw + 30, y0 + 14 + 18 * curve,
                     colors[curve]);
        hsd_svg_text(f, x0 + pw + 34, y0 + 18 + 18 * curve, 11, "start", names[curve]);
    }
    double yc = y0 + ph - ph * p->min_coverage;
    if (p->min_coverage > 0) hsd_svg_line(f, x0, yc, x0 + pw, yc, "#999999");
    double xs = x0 + pw * log10((double)r->k) / (lmax > 0 ? lmax : 1);
    hsd_svg_line(f, xs, y0, xs, y0 + ph, "#d62728");
    snprintf(buf, sizeof buf, "K* = %d", r->k);
    hsd_svg_text(f, xs + 4, y0 + 14, 12, "start", buf);
    snprintf(buf, sizeof buf, "C = %.4f", r->coverage);
    hsd_svg_text(f, x0 + pw + 12, y0 + 90, 11, "start", buf);
    snprintf(buf, sizeof buf, "R = %.4f", r->saving);
    hsd_svg_text(f, x0 + pw + 12, y0 + 106, 11, "start", buf);
    snprintf(buf, sizeof buf, "alpha %.3g, c_min %.3g", p->alpha, p->min_coverage);
    hsd_svg_text(f, x0 + pw + 12, y0 + 122, 11, "start", buf);
    hsd_svg_end(f);
    return fclose(f) != 0;
}

int hsd_cmd_trim(int argc, char **argv) {
    trim_opts o = {0};
    o.alpha = -1, o.min_coverage = -1;
    HSD_OPTS_PARSE(&hsd_spec_trim, &o, argc, argv, NULL);
    if (!o.tok || !o.corpus || o.alpha < 0 || o.min_coverage < 0 || o.dim <= 0)
        return hsd_opts_fail(&hsd_spec_trim,
                             "-t, --corpus, --alpha, --min-coverage and --hidden-dim are required");
    const char *tok_path = o.tok, *corpus_path = o.corpus, *out_path = o.out, *svg_path = o.svg,
               *draft_path = o.draft;
    hsd_trim_params p = {sizeof(hsd_trim_params), o.alpha, o.min_coverage, o.dim, o.fixed_flops};
    int rc = 1;
    hsd_tokenizer *tok = NULL, *dtok = NULL;
    char **texts = NULL;
    size_t *lens = NULL, n_texts = 0;
    int64_t *counts = NULL, *prefix = NULL, total = 0;
    int32_t *order = NULL, *map = NULL;
    if (hsd_tokenizer_load_file(tok_path, &tok) ||
        (draft_path && hsd_tokenizer_load_file(draft_path, &dtok))) {
        fprintf(stderr, "hsd trim: %s\n", hsd_cli_error("trim"));
        goto done;
    }
    if (hsd_cli_load_corpus(corpus_path, &texts, &lens, &n_texts)) goto done;
    int32_t V = hsd_tokenizer_vocab_size(tok);
    counts = calloc((size_t)V, sizeof *counts);
    order = malloc((size_t)V * sizeof *order);
    prefix = malloc(((size_t)V + 1) * sizeof *prefix);
    if (!counts || !order || !prefix) goto done;
    hsd_corpus cp = {texts, lens, n_texts};
    if (hsd_trim_count(tok, &cp, counts, &total)) {
        fprintf(stderr, "hsd trim: %s: %s\n", corpus_path, hsd_last_error());
        goto done;
    }
    if (hsd_trim_rank(counts, V, order)) {
        fprintf(stderr, "hsd trim: %s\n", hsd_cli_error("trim"));
        goto done;
    }
    int32_t n_cand = V, v_full = V;
    if (dtok) {
        map = malloc((size_t)V * sizeof *map);
        if (!map) goto done;
        if (hsd_trim_candidates(tok, dtok, order, V, map, &n_cand)) {
            fprintf(stderr, "hsd trim: %s\n", hsd_cli_error("trim"));
            goto done;
        }
        v_full = hsd_tokenizer_vocab_size(dtok);
    }
    prefix[0] = 0; /* prefix[k]: the counts of the k first ranked candidates */
    for (int32_t k = 1; k <= n_cand; k++) prefix[k] = prefix[k - 1] + counts[order[k - 1]];
    hsd_trim_result r;
    if (hsd_trim_optimum(prefix, n_cand, total, v_full, &p, &r)) {
        fprintf(stderr, "hsd trim: %s\n", hsd_cli_error("trim"));
        goto done;
    }
    int32_t seen = 0;
    for (int32_t i = 0; i < V; i++) seen += counts[i] > 0;
    printf("corpus %s: %zu texts, %lld tokens, %d distinct of %d ids\n", corpus_path, n_texts,
           (long long)total, seen, V);
    if (dtok)
        printf("candidates: %d target ids with a drafter token of the same bytes (drafter head %d "
               "rows)\n",
               n_cand, v_full);
    printf("K* = %d of %d (%.2f%% kept)\ncoverage C(K*) = %.6f\nFLOP saving R(K*) = %.6f (head "
           "%.2fx cheaper)\n"
           "utility U(K*) = %.6f (alpha %g, c_min %g, d %d, F_fixed %g)\nsmallest K with C >= "
           "c_min: %d\n",
           r.k, v_full, 100.0 * r.k / v_full, r.coverage, r.saving, (double)v_full / r.k, r.utility,
           p.alpha, p.min_coverage, p.dim, p.fixed_flops, r.k_min_feasible);
    if (out_path) {
        FILE *f = fopen(out_path, "w");
        if (!f) {
            fprintf(stderr, "hsd trim: %s: cannot create\n", out_path);
            goto done;
        }
        fprintf(
            f,
            "# hsd trim: %s ids, K* = %d, coverage %.6f, saving %.6f, alpha %g, c_min %g, d %d\n",
            dtok ? "drafter" : "target", r.k, r.coverage, r.saving, p.alpha, p.min_coverage, p.dim);
        for (int32_t i = 0; i < r.k; i++) fprintf(f, "%d\n", dtok ? map[i] : order[i]);
        if (fclose(f) != 0) {
            fprintf(stderr, "hsd trim: %s: write failed\n", out_path);
            goto done;
        }
    }
    if (svg_path) {
        char title[160];
        /* short names: the tokenizer's directory and the corpus file */
        const char *cb = strrchr(corpus_path, '/'), *tb = strrchr(tok_path, '/'), *td = tok_path;
        if (tb)
            for (td = tb; td > tok_path && td[-1] != '/';) td--;
        int tl = tb && td < tb ? (int)(tb - td) : (int)strlen(tok_path);
        if (!(tb && td < tb)) td = tok_path;
        snprintf(title, sizeof title, "coverage-latency trade-off: %.*s tokens of %s", tl, td,
                 cb ? cb + 1 : corpus_path);
        if (plot(svg_path, prefix, n_cand, total, v_full, &p, &r, title)) goto done;
    }
    rc = 0;
done:
    if (texts) hsd_cli_free_corpus(texts, lens, n_texts);
    free(counts), free(order), free(prefix), free(map);
    hsd_tokenizer_free(tok);
    hsd_tokenizer_free(dtok);
    return rc;
}
