/* hsd pair: vocabulary fit of a target/drafter tokenizer pair and the algorithm to use. */
#include <jansson.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/json_out.h"
#include "cli/cli.h"
#include "hsd.h"
#include "hsd_tools.h"

/* The recommendation as `hsd pair` has always printed it ("SLEM"; the --json field is an
 * interface): hsd_algo_name's name, upper-cased. */
static const char *algo_upper(hsd_algo a) {
    static char buf[16];
    const char *n = hsd_algo_name(a);
    size_t i = 0;
    for (; n[i] && i + 1 < sizeof buf; i++) buf[i] = (char)(n[i] >= 'a' && n[i] <= 'z' ? n[i] - 32 : n[i]);
    buf[i] = 0;
    return buf;
}

static void about_pair(FILE *f) {
    fprintf(f,
            "Reports |T|, |D|, |T∩D| by surface bytes and |T∩D|/|T| (paper Table 9); with a\n"
            "corpus (JSONL {\"text\": ...}) the same ratio over the target tokens used (Table 10)\n"
            "and each tokenizer's round-trip rate; whether T -> D* and D -> T* hold (every token\n"
            "a concatenation of the other side's tokens), with counterexamples.\n"
            "Counting: used ids only; special tokens count in |T| but meet only special tokens\n"
            "of D with the same bytes; text tokens meet text tokens with the same surface bytes.\n"
            "Recommendation (paper Table 4), first rule that applies:\n"
            "  SD    identical vocabularies\n"
            "  TLI   large overlap: |T∩D|/|T| >= %.2f and, with --corpus, >= %.0f%% of the\n"
            "        target tokens used on the corpus are drafter tokens\n"
            "  SLRS  drafter tokens short: every drafter text token <= %d bytes, and psi\n"
            "        cheap: 3 of 4 target tokens need <= %.0f drafter tree nodes (the psi line:\n"
            "        decompositions of each target token into drafter tokens, `hsd psi-stats`)\n"
            "  SLEM  otherwise (works for any pair)\n",
            HSD_PAIR_TLI_MIN_VOCAB, 100 * HSD_PAIR_TLI_MIN_CORPUS, HSD_PAIR_SLRS_MAX_BYTES,
            HSD_PAIR_SLRS_MAX_NODES);
}

/* Counts past DBL_MAX are inf, which JSON cannot hold: written as "inf". */
static json_t *jnum(double v) { return isfinite(v) ? json_real(v) : json_string("inf"); }

static json_t *expr_json(const hsd_tokenizer *a, const hsd_pair_expr *e) {
    json_t *o = json_object(), *ex = json_array();
    json_object_set_new(o, "holds", json_boolean(e->holds));
    json_object_set_new(o, "checked", json_integer(e->checked));
    json_object_set_new(o, "failures", json_integer(e->failures));
    for (int i = 0; i < e->n_examples; i++) {
        json_t *x = json_object();
        size_t len;
        const uint8_t *b = hsd_tokenizer_token_bytes(a, e->example_ids[i], &len);
        json_object_set_new(x, "id", json_integer(e->example_ids[i]));
        json_object_set_new(x, "token", json_string(hsd_tokenizer_id_to_token(a, e->example_ids[i])));
        /* surfaces can be partial UTF-8 (byte tokens): show them as hex then */
        json_t *sv = json_stringn((const char *)b, len);
        if (!sv) {
            char *hex = malloc(len * 2 + 1);
            for (size_t k = 0; hex && k < len; k++) sprintf(hex + 2 * k, "%02x", b[k]);
            sv = json_pack("{s:s}", "hex", hex ? hex : "");
            free(hex);
        }
        json_object_set_new(x, "surface", sv);
        json_array_append_new(ex, x);
    }
    json_object_set_new(o, "counterexamples", ex);
    return o;
}

static void print_expr(const char *what, const hsd_tokenizer *a, const hsd_pair_expr *e) {
    printf("%-8s %s (%lld of %lld tokens not expressible)", what, e->holds ? "holds" : "FAILS",
           (long long)e->failures, (long long)e->checked);
    for (int i = 0; i < e->n_examples; i++)
        printf("%s%d '%s'", i ? ", " : "; e.g. ", e->example_ids[i],
               hsd_tokenizer_id_to_token(a, e->example_ids[i]));
    putchar('\n');
}

typedef struct pair_opts {
    const char *tp, *dp, *corpus;
    int json;
} pair_opts;

#define O(f) offsetof(pair_opts, f)
static const hsd_opt pair_table[] = {
    HSD_OPT_ROWS_TOKENIZERS(pair_opts, tp, dp, 'T', 'D'),
    {"corpus", 0, HSD_OPT_STRING, O(corpus), "C", "JSONL {\"text\"} corpus for used-token counts", 0, 0},
    HSD_OPT_ROW_JSON(pair_opts, json),
};
#undef O

const hsd_cli_spec hsd_spec_pair = {
    "pair", "--target-tokenizer T --draft-tokenizer D [--corpus C] [--json]", NULL, about_pair,
    pair_table, HSD_OPTS_N(pair_table), 0,
};

int hsd_cmd_pair(int argc, char **argv) {
    pair_opts o = {0};
    HSD_OPTS_PARSE(&hsd_spec_pair, &o, argc, argv, NULL);
    if (!o.tp || !o.dp)
        return hsd_opts_fail(&hsd_spec_pair, "--target-tokenizer and --draft-tokenizer are required");
    const char *tp = o.tp, *dp = o.dp, *corpus = o.corpus;
    bool json = o.json;
    hsd_tokenizer *t = NULL, *d = NULL;
    hsd_pair_report r = {0};
    int rc = 0;
    if (hsd_tokenizer_load_file(tp, &t) || hsd_tokenizer_load_file(dp, &d) ||
        hsd_pair_analyze(t, d, corpus, &r)) {
        fprintf(stderr, "hsd pair: %s\n", hsd_cli_error("pair"));
        rc = 1;
        goto done;
    }
    if (json) {
        json_t *o = json_object();
        json_object_set_new(o, "target", json_string(tp));
        json_object_set_new(o, "draft", json_string(dp));
        json_object_set_new(o, "target_size", json_integer(r.t_size));
        json_object_set_new(o, "draft_size", json_integer(r.d_size));
        json_object_set_new(o, "target_special", json_integer(r.t_special));
        json_object_set_new(o, "draft_special", json_integer(r.d_special));
        json_object_set_new(o, "intersection", json_integer(r.intersection));
        json_object_set_new(o, "intersection_ratio", json_real(r.ratio));
        json_object_set_new(o, "identical", json_boolean(r.identical));
        json_object_set_new(o, "target_in_draft_star", expr_json(t, &r.t_in_dstar));
        json_object_set_new(o, "draft_in_target_star", expr_json(d, &r.d_in_tstar));
        json_object_set_new(o, "draft_max_token_bytes", json_integer(r.d_max_surface));
        json_object_set_new(o, "draft_mean_token_bytes", json_real(r.d_mean_surface));
        if (r.has_corpus) {
            json_t *c = json_object();
            json_object_set_new(c, "path", json_string(corpus));
            json_object_set_new(c, "samples", json_integer(r.corpus_samples));
            json_object_set_new(c, "target_used", json_integer(r.t_used));
            json_object_set_new(c, "draft_used", json_integer(r.d_used));
            json_object_set_new(c, "target_used_in_draft", json_integer(r.t_used_in_d));
            json_object_set_new(c, "target_used_in_draft_used", json_integer(r.t_used_in_dused));
            json_object_set_new(c, "ratio", json_real(r.corpus_ratio));
            json_object_set_new(c, "ratio_used_both", json_real(r.corpus_ratio_used));
            json_object_set_new(c, "target_roundtrip", json_integer(r.t_roundtrip));
            json_object_set_new(c, "draft_roundtrip", json_integer(r.d_roundtrip));
            json_object_set_new(c, "target_injectivity_rate",
                                json_real(r.corpus_samples ? (double)r.t_roundtrip / (double)r.corpus_samples : 0));
            json_object_set_new(c, "draft_injectivity_rate",
                                json_real(r.corpus_samples ? (double)r.d_roundtrip / (double)r.corpus_samples : 0));
            json_object_set_new(o, "corpus", c);
        } else {
            json_object_set_new(o, "corpus", json_null());
        }
        if (r.has_psi) {
            json_t *ps = json_object();
            json_object_set_new(ps, "target_tokens", json_integer(r.psi.tokens));
            json_object_set_new(ps, "no_decomposition", json_integer(r.psi.none));
            json_object_set_new(ps, "mean", jnum(r.psi.mean));
            json_object_set_new(ps, "median", jnum(r.psi.median));
            json_object_set_new(ps, "p75", jnum(r.psi.p75));
            json_object_set_new(ps, "max", jnum(r.psi.max));
            json_object_set_new(ps, "max_id", json_integer(r.psi.max_id));
            json_object_set_new(ps, "nodes_mean", jnum(r.psi.nodes_mean));
            json_object_set_new(ps, "nodes_p75", jnum(r.psi.nodes_p75));
            json_object_set_new(ps, "n_max", json_integer(r.psi.n_max));
            json_object_set_new(o, "psi_cost", ps);
        } else {
            json_object_set_new(o, "psi_cost", json_null());
        }
        json_object_set_new(o, "recommendation", json_string(algo_upper(r.algo)));
        json_object_set_new(o, "reason", json_string(r.reason ? r.reason : ""));
        json_object_set_new(o, "warnings", json_string(r.warnings ? r.warnings : ""));
        hsd_cli_put_json(o, JSON_INDENT(1) | JSON_ENSURE_ASCII);
    } else {
        printf("target   %s: |T| = %d ids (%d special)\n", tp, r.t_size, r.t_special);
        printf("draft    %s: |D| = %d ids (%d special); text tokens up to %d bytes, mean %.2f\n",
               dp, r.d_size, r.d_special, r.d_max_surface, r.d_mean_surface);
        printf("overlap  |T∩D| = %d, |T∩D|/|T| = %.4f%s\n", r.intersection, r.ratio,
               r.identical ? " (identical vocabularies)" : "");
        print_expr("T -> D*", t, &r.t_in_dstar);
        print_expr("D -> T*", d, &r.d_in_tstar);
        if (r.has_corpus) {
            printf("corpus   %s: %lld samples; target used %d ids, %d of them in D (%.4f), %d "
                   "among the drafter's used (%.4f); drafter used %d ids\n",
                   corpus, (long long)r.corpus_samples, r.t_used, r.t_used_in_d, r.corpus_ratio,
                   r.t_used_in_dused, r.corpus_ratio_used, r.d_used);
            printf("roundtrip target %lld/%lld, draft %lld/%lld samples\n", (long long)r.t_roundtrip,
                   (long long)r.corpus_samples, (long long)r.d_roundtrip, (long long)r.corpus_samples);
        }
        if (r.has_psi) {
            const char *mx = r.psi.max_id >= 0 ? hsd_tokenizer_id_to_token(t, r.psi.max_id) : NULL;
            printf("psi      drafter sequences per target token: mean %.4g, median %.4g, p75 "
                   "%.4g, max %.4g ('%s'); %d of %d target tokens have none; drafter tree "
                   "nodes per token: p75 %.4g, mean %.4g; n_max %d\n",
                   r.psi.mean, r.psi.median, r.psi.p75, r.psi.max, mx ? mx : "?", r.psi.none,
                   r.psi.tokens, r.psi.nodes_p75, r.psi.nodes_mean, r.psi.n_max);
        } else {
            printf("psi      not computed\n");
        }
        printf("recommend %s: %s\n", algo_upper(r.algo), r.reason);
        if (r.warnings && r.warnings[0]) printf("warning  %s\n", r.warnings);
    }
done:
    hsd_pair_report_free(&r);
    hsd_tokenizer_free(t);
    hsd_tokenizer_free(d);
    return rc;
}
