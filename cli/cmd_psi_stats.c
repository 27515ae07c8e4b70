/* hsd psi-stats: how many drafter-token sequences stand behind each target token (paper
 * Lemma 3.1, Table 5, Figure 2) and the SLRS lookahead n_max, by dynamic programming over the
 * drafter's token trie (lib/analysis/psi_stats.h defines every number printed). */
#include <jansson.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/json_out.h"
#include "cli/cli.h"
#include "cli/svg.h"
#include "hsd.h"

#define DEFAULT_SHORTEST 150000

static void about_psi_stats(FILE *f) {
    fprintf(f,
            "For every target text token (special tokens excluded), by surface bytes:\n"
            "  decompositions  drafter-token sequences whose concatenation is the token (the\n"
            "                  paper's 'combinations'; 0 when there is none)\n"
            "  nodes           tree nodes (drafter positions) needed to score psi(t) (Fig. 1)\n"
            "  n_max           most drafter tokens that may be sampled before the first target\n"
            "                  token is determined (Sec. 3.3); the pair's n_max is the largest\n"
            "Prints a table per token length (count, mean, median, p75, max decompositions,\n"
            "n_max), a Table-5 summary of the shortest N tokens (default %d, or all when the\n"
            "vocabulary is smaller) and one of the whole vocabulary. Sequences of drafter ids\n"
            "are counted (ids sharing a surface count apart) unless --distinct-surfaces.\n"
            "--svg FILE plots decompositions against token length on a log scale (Figure 2).\n",
            DEFAULT_SHORTEST);
}

/* A token's surface for display: its vocabulary string. */
static const char *tok_name(const hsd_tokenizer *t, int32_t id) {
    const char *s = id >= 0 ? hsd_tokenizer_id_to_token(t, id) : NULL;
    return s ? s : "?";
}

/* JSON string of a token's vocabulary string; vocabulary strings that are not UTF-8 (some
 * llama2.c vocabularies) are given as hex. */
static json_t *tok_json(const hsd_tokenizer *t, int32_t id) {
    const char *n = tok_name(t, id);
    json_t *j = json_string(n);
    if (j) return j;
    size_t len = strlen(n);
    char *hex = malloc(len * 2 + 1);
    if (!hex) return json_null();
    for (size_t k = 0; k < len; k++) snprintf(hex + 2 * k, 3, "%02x", (unsigned char)n[k]);
    j = json_pack("{s:s}", "hex", hex);
    free(hex);
    return j;
}

/* A count as JSON: counts past DBL_MAX (surfaces of ~1000+ bytes) are inf, which JSON cannot
 * hold; they are written as the string "inf" rather than dropped. */
static json_t *jnum(double v) {
    return isfinite(v) ? json_real(v) : json_string("inf");
}

static json_t *summary_json(const hsd_psi_summary *s) {
    return json_pack("{s:I,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "n", (json_int_t)s->n, "mean",
                     jnum(s->mean), "sd", jnum(s->sd), "min", jnum(s->min), "p25", jnum(s->p25),
                     "median", jnum(s->median), "p75", jnum(s->p75), "max", jnum(s->max));
}

/* Summaries of length and decompositions over the first n ids of `ids`. */
static int summarize_ids(const hsd_psi_stats *s, const int32_t *ids, size_t n, hsd_psi_summary *len,
                         hsd_psi_summary *count) {
    double *v = malloc((n + 1) * sizeof *v);
    if (!v) return -1;
    for (size_t i = 0; i < n; i++) v[i] = s->len[ids[i]];
    hsd_psi_summarize(v, n, len);
    for (size_t i = 0; i < n; i++) v[i] = s->tok[ids[i]].count;
    hsd_psi_summarize(v, n, count);
    free(v);
    return 0;
}

static void print_table5(const char *title, const hsd_psi_summary *len,
                         const hsd_psi_summary *count) {
    printf("\n%s\n", title);
    printf("  %-20s %14s %22s\n", "", "length (bytes)", "decompositions");
    const char *names[] = {"mean",         "standard deviation", "minimum", "25% percentile",
                           "50% (median)", "75% percentile",     "maximum"};
    double a[] = {len->mean, len->sd, len->min, len->p25, len->median, len->p75, len->max};
    double b[] = {count->mean,   count->sd,  count->min, count->p25,
                  count->median, count->p75, count->max};
    for (int i = 0; i < 7; i++) printf("  %-20s %14.2f %22.6g\n", names[i], a[i], b[i]);
}

/* log10 of a count for plotting; 0 (no decomposition) sits on the axis. */
static double lg(double v) {
    return v > 1.0 ? (isfinite(v) ? log10(v) : 309.0) : 0.0; /* inf: just above DBL_MAX */
}

/* Figure 2: per length, the min..max range, the p25..p75 box, the median and the mean, on a
 * log scale, with the complete-vocabulary bound 2^(len-1) (Lemma 3.1) for reference. */
static int write_svg(const char *path, const char *title, const hsd_psi_length_row *rows,
                     size_t n_rows) {
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    const double W = 900, H = 520, left = 70, right = 20, top = 40, bottom = 80;
    uint32_t max_len = n_rows ? rows[n_rows - 1].len : 1;
    double top_dec = 1.0;
    for (size_t i = 0; i < n_rows; i++)
        if (lg(rows[i].count.max) > top_dec) top_dec = lg(rows[i].count.max);
    top_dec = ceil(top_dec);
    double pw = W - left - right, ph = H - top - bottom;
#define X(len) (left + ((double)(len)-0.5) / (double)max_len * pw)
#define Y(dec) (top + ph - (dec) / top_dec * ph)
    hsd_svg_begin(f, W, H);
    hsd_svg_text(f, W / 2, 22, 14, "middle", title);
    hsd_svg_line(f, left, top + ph, W - right, top + ph, "black");
    hsd_svg_line(f, left, top, left, top + ph, "black");
    int step = (int)ceil(top_dec / 10.0);
    char lab[64];
    for (int d = 0; d <= (int)top_dec; d += step) {
        hsd_svg_line(f, left, Y(d), W - right, Y(d), "#e0e0e0");
        snprintf(lab, sizeof lab, "1e%d", d);
        hsd_svg_text(f, left - 6, Y(d) + 4, 10, "end", lab);
    }
    int xstep = max_len <= 20 ? 1 : max_len <= 64 ? 4 : 8;
    for (uint32_t l = 1; l <= max_len; l += (uint32_t)xstep) {
        snprintf(lab, sizeof lab, "%u", l);
        hsd_svg_text(f, X(l), top + ph + 14, 10, "middle", lab);
    }
    hsd_svg_text(f, left + pw / 2, top + ph + 32, 12, "middle",
                 "target token length (surface bytes)");
    hsd_svg_text(f, 14, top - 10, 12, "start", "decompositions (log scale)");
    double bw = pw / (double)max_len * 0.6;
    if (bw > 16) bw = 16;
    for (uint32_t l = 1; l < max_len; l++) {
        double a = (double)(l - 1) * log10(2.0), b = (double)l * log10(2.0);
        if (b > top_dec) break;
        hsd_svg_line(f, X(l), Y(a), X(l + 1), Y(b), "#d08080");
    }
    for (size_t i = 0; i < n_rows; i++) {
        const hsd_psi_length_row *r = &rows[i];
        double x = X(r->len);
        hsd_svg_line(f, x, Y(lg(r->count.min)), x, Y(lg(r->count.max)), "#404040");
        double y1 = Y(lg(r->count.p75)), y0 = Y(lg(r->count.p25));
        hsd_svg_rect(f, x - bw / 2, y1, bw, y0 - y1 > 1 ? y0 - y1 : 1, "#6a9fd8");
        hsd_svg_line(f, x - bw / 2, Y(lg(r->count.median)), x + bw / 2, Y(lg(r->count.median)),
                     "black");
        hsd_svg_rect(f, x - 2, Y(lg(r->count.mean)) - 2, 4, 4, "#d03030");
    }
    double ly = H - 12;
    hsd_svg_rect(f, left, ly - 9, 12, 10, "#6a9fd8");
    hsd_svg_text(f, left + 16, ly, 11, "start", "p25..p75, black: median, line: min..max");
    hsd_svg_rect(f, left + 300, ly - 7, 6, 6, "#d03030");
    hsd_svg_text(f, left + 312, ly, 11, "start", "mean");
    hsd_svg_line(f, left + 360, ly - 4, left + 380, ly - 4, "#d08080");
    hsd_svg_text(f, left + 384, ly, 11, "start", "2^(len-1): every split a token (Lemma 3.1)");
#undef X
#undef Y
    hsd_svg_end(f);
    return fclose(f) ? -1 : 0;
}

typedef struct psi_opts {
    const char *tp, *dp, *svg;
    int json, distinct;
    int32_t shortest;
} psi_opts;

#define O(f) offsetof(psi_opts, f)
static const hsd_opt psi_table[] = {
    HSD_OPT_ROWS_TOKENIZERS(psi_opts, tp, dp, 'T', 'D'),
    HSD_OPT_ROW_JSON(psi_opts, json),
    {"svg", 0, HSD_OPT_STRING, O(svg), "FILE", "plot decompositions against token length", 0, 0},
    {"shortest", 0, HSD_OPT_INT, O(shortest), "N", "tokens in the Table-5 summary (150000)", 1,
     2147483647.0},
    {"distinct-surfaces", 0, HSD_OPT_FLAG, O(distinct), NULL,
     "count drafter ids sharing a surface once", 0, 0},
};
#undef O

const hsd_cli_spec hsd_spec_psi_stats = {
    "psi-stats",
    "--draft-tokenizer D --target-tokenizer T [--json] [--svg FILE] [--shortest N] "
    "[--distinct-surfaces]",
    NULL, about_psi_stats, psi_table, HSD_OPTS_N(psi_table), 0,
};

int hsd_cmd_psi_stats(int argc, char **argv) {
    psi_opts o = {0};
    o.shortest = DEFAULT_SHORTEST;
    HSD_OPTS_PARSE(&hsd_spec_psi_stats, &o, argc, argv, NULL);
    if (!o.tp || !o.dp)
        return hsd_opts_fail(&hsd_spec_psi_stats,
                             "both --draft-tokenizer and --target-tokenizer are needed");
    const char *tp = o.tp, *dp = o.dp, *svg = o.svg;
    bool json = o.json;
    hsd_psi_params params = hsd_psi_default_params();
    params.distinct_surfaces = o.distinct;
    long shortest = o.shortest;
    hsd_tokenizer *t = NULL, *d = NULL;
    hsd_token_trie *trie = NULL;
    hsd_psi_stats s = {0};
    hsd_psi_length_row *rows = NULL;
    int32_t *ids = NULL;
    size_t n_rows = 0, n_ids = 0;
    int rc = 0;
    double t0 = hsd_timer_ms(), c0 = hsd_timer_cpu_ms();
    if (hsd_tokenizer_load_file(tp, &t)) {
        fprintf(stderr, "hsd psi-stats: target tokenizer: %s\n", hsd_last_error());
        rc = 1;
        goto done;
    }
    double t1 = hsd_timer_ms(), c1 = hsd_timer_cpu_ms();
    /* draft = target (the paper's Table 5 setting): one tokenizer serves both sides */
    if (!strcmp(dp, tp))
        d = t;
    else if (hsd_tokenizer_load_file(dp, &d)) {
        fprintf(stderr, "hsd psi-stats: draft tokenizer: %s\n", hsd_last_error());
        rc = 1;
        goto done;
    }
    double t2 = hsd_timer_ms(), c2 = hsd_timer_cpu_ms();
    hsd_status st = hsd_token_trie_build(d, &trie);
    double t3 = hsd_timer_ms(), c3 = hsd_timer_cpu_ms();
    if (!st) st = hsd_psi_stats_compute(t, trie, &params, &s);
    double t4 = hsd_timer_ms(), c4 = hsd_timer_cpu_ms();
    if (!st) st = hsd_psi_by_length(&s, &rows, &n_rows);
    if (!st) st = hsd_psi_ids_by_length(&s, &ids, &n_ids);
    hsd_psi_summary sh_len, sh_count, all_len, all_count;
    size_t n_short = (size_t)shortest < n_ids ? (size_t)shortest : n_ids;
    if (!st && (summarize_ids(&s, ids, n_short, &sh_len, &sh_count) ||
                summarize_ids(&s, ids, n_ids, &all_len, &all_count)))
        st = HSD_ERR_NOMEM;
    double t5 = hsd_timer_ms(), c5 = hsd_timer_cpu_ms();
    if (st) {
        fprintf(stderr, "hsd psi-stats: %s\n", hsd_last_error());
        rc = 1;
        goto done;
    }
    if (s.n_tokens == 0) {
        fprintf(stderr, "hsd psi-stats: %s has no text tokens to decompose\n", tp);
        rc = 1;
        goto done;
    }
    if (svg) {
        char title[512];
        snprintf(title, sizeof title, "decompositions of %d target tokens into drafter tokens",
                 s.n_tokens);
        if (write_svg(svg, title, rows, n_rows)) {
            fprintf(stderr, "hsd psi-stats: cannot write --svg file '%s'\n", svg);
            rc = 1;
            goto done;
        }
    }
    const hsd_psi_token *mx = &s.tok[s.max_count_id];
    if (json) {
        json_t *o = json_object(), *arr = json_array();
        json_object_set_new(o, "target", json_string(tp));
        json_object_set_new(o, "draft", json_string(dp));
        json_object_set_new(o, "count_mode",
                            json_string(params.distinct_surfaces ? "surfaces" : "ids"));
        json_object_set_new(o, "target_tokens", json_integer(s.n_tokens));
        json_object_set_new(o, "draft_tokens", json_integer(hsd_token_trie_n_tokens(trie)));
        json_object_set_new(o, "draft_trie_nodes", json_integer(hsd_token_trie_n_nodes(trie)));
        json_object_set_new(o, "no_decomposition", json_integer(s.n_none));
        json_object_set_new(o, "above_uint64", json_integer(s.n_saturated));
        json_object_set_new(o, "above_2p53", json_integer(s.n_inexact));
        json_object_set_new(o, "n_max", json_integer(s.n_max));
        json_object_set_new(o, "n_max_token",
                            json_pack("{s:i,s:o,s:i}", "id", s.n_max_id, "token",
                                      tok_json(t, s.n_max_id), "len", (int)s.len[s.n_max_id]));
        json_object_set_new(o, "max_decompositions",
                            json_pack("{s:i,s:o,s:i,s:o,s:o}", "id", s.max_count_id, "token",
                                      tok_json(t, s.max_count_id), "len",
                                      (int)s.len[s.max_count_id], "count", jnum(mx->count), "nodes",
                                      jnum(mx->nodes)));
        for (size_t i = 0; i < n_rows; i++) {
            const hsd_psi_length_row *r = &rows[i];
            json_array_append_new(
                arr,
                json_pack("{s:i,s:i,s:i,s:o,s:o,s:o,s:o,s:o,s:o,s:i,s:o}", "len", (int)r->len,
                          "tokens", r->tokens, "none", r->none, "mean", jnum(r->count.mean),
                          "median", jnum(r->count.median), "p25", jnum(r->count.p25), "p75",
                          jnum(r->count.p75), "min", jnum(r->count.min), "max", jnum(r->count.max),
                          "n_max", r->n_max, "nodes_mean", jnum(r->nodes_mean)));
        }
        json_object_set_new(o, "by_length", arr);
        json_object_set_new(o, "shortest",
                            json_pack("{s:I,s:o,s:o}", "n", (json_int_t)n_short, "length",
                                      summary_json(&sh_len), "decompositions",
                                      summary_json(&sh_count)));
        json_object_set_new(o, "all",
                            json_pack("{s:I,s:o,s:o}", "n", (json_int_t)n_ids, "length",
                                      summary_json(&all_len), "decompositions",
                                      summary_json(&all_count)));
        json_object_set_new(o, "cpu_ms",
                            json_pack("{s:f,s:f,s:f,s:f,s:f}", "load_target", c1 - c0, "load_draft",
                                      c2 - c1, "trie", c3 - c2, "dp", c4 - c3, "summaries",
                                      c5 - c4));
        json_object_set_new(o, "time_ms",
                            json_pack("{s:f,s:f,s:f,s:f,s:f}", "load_target", t1 - t0, "load_draft",
                                      t2 - t1, "trie", t3 - t2, "dp", t4 - t3, "summaries",
                                      t5 - t4));
        hsd_cli_put_json(o, JSON_INDENT(1) | JSON_ENSURE_ASCII);
    } else {
        printf("target   %s: %d text tokens, 1..%u bytes\n", tp, s.n_tokens, s.max_len);
        printf("draft    %s: %d text tokens, trie of %d nodes\n", dp, hsd_token_trie_n_tokens(trie),
               hsd_token_trie_n_nodes(trie));
        printf("counting %s; %d target tokens have no decomposition (counted as 0); %d exceed "
               "2^53 and %d exceed 2^64 (statistics use doubles)\n",
               params.distinct_surfaces ? "distinct drafter surfaces" : "drafter id sequences",
               s.n_none, s.n_inexact, s.n_saturated);
        printf("n_max    %d (pair lookahead; reached by id %d '%s', %u bytes)\n", s.n_max,
               s.n_max_id, tok_name(t, s.n_max_id), s.len[s.n_max_id]);
        printf("max      %.6g decompositions, %.6g tree nodes: id %d '%s', %u bytes\n", mx->count,
               mx->nodes, s.max_count_id, tok_name(t, s.max_count_id), s.len[s.max_count_id]);
        printf("time     load target %.1f ms, load draft %.1f ms, trie %.1f ms, DP %.1f ms, "
               "summaries %.1f ms (wall)\n",
               t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4);
        printf("cpu      load target %.1f ms, load draft %.1f ms, trie %.1f ms, DP %.1f ms, "
               "summaries %.1f ms (this thread)\n",
               c1 - c0, c2 - c1, c3 - c2, c4 - c3, c5 - c4);
        printf("\n%5s %8s %6s %12s %10s %10s %12s %6s %12s\n", "len", "tokens", "none", "mean",
               "median", "p75", "max", "n_max", "nodes mean");
        for (size_t i = 0; i < n_rows; i++) {
            const hsd_psi_length_row *r = &rows[i];
            printf("%5u %8d %6d %12.6g %10.6g %10.6g %12.6g %6d %12.6g\n", r->len, r->tokens,
                   r->none, r->count.mean, r->count.median, r->count.p75, r->count.max, r->n_max,
                   r->nodes_mean);
        }
        char title[128];
        snprintf(title, sizeof title, "shortest %zu of %zu target tokens (paper Table 5):", n_short,
                 n_ids);
        print_table5(title, &sh_len, &sh_count);
        snprintf(title, sizeof title, "all %zu target tokens:", n_ids);
        print_table5(title, &all_len, &all_count);
    }
done:
    free(ids);
    free(rows);
    hsd_psi_stats_free(&s);
    hsd_token_trie_free(trie);
    hsd_tokenizer_free(t);
    if (d != t) hsd_tokenizer_free(d);
    return rc;
}
