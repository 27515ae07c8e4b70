/* hsd injectivity: which strings does a tokenizer not give back? (lib/analysis/injectivity.h) */
#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/json_out.h"
#include "cli/cli.h"
#include "hsd.h"

typedef struct inj_cli_opts {
    const char *path, *corpus;
    double fuzz;
    uint64_t seed;
    int32_t max_found, max_report, prefix;
    int json, no_minimize;
} inj_cli_opts;

#define O(f) offsetof(inj_cli_opts, f)
static const hsd_opt inj_table[] = {
    {"tokenizer", 't', HSD_OPT_STRING, O(path), "TOKENIZER", "the tokenizer to check", 0, 0},
    {"corpus", 0, HSD_OPT_STRING, O(corpus), "C", "JSONL file of {\"text\": ...} lines: check each sample", 0, 0},
    {"prefix", 0, HSD_OPT_INT, O(prefix), "CHARS",
     "check only the first CHARS characters of each sample (paper: 100)", 0, 2147483647.0},
    {"fuzz", 0, HSD_OPT_DOUBLE, O(fuzz), "SECONDS",
     "then generate adversarial text for this long; progress on stderr", 0, 1e9},
    {"seed", 0, HSD_OPT_U64, O(seed), "S", "fuzzer seed (default 1)", 0, 0},
    {"max-found", 0, HSD_OPT_INT, O(max_found), "N",
     "stop fuzzing after N distinct minimal counterexamples", 0, 2147483647.0},
    {"max-report", 0, HSD_OPT_INT, O(max_report), "N",
     "list at most N fuzz finds (default 100; 0 = all)", 0, 2147483647.0},
    {"no-minimize", 0, HSD_OPT_FLAG, O(no_minimize), NULL,
     "skip shrinking failures (faster; no minimal/cause)", 0, 0},
    {"json", 0, HSD_OPT_FLAG, O(json), NULL,
     "one JSON object: samples, non_injective, injectivity_rate, counterexamples, fuzz", 0, 0},
};
#undef O

const hsd_cli_spec hsd_spec_injectivity = {
    "injectivity",
    "-t TOKENIZER [--corpus C] [--fuzz SECONDS] [OPTIONS]",
    "Finds strings s with decode(encode(s, add_special=false), skip_special=false) != s.\n"
    "Each failure is shrunk to a minimal counterexample (delta debugging over characters)\n"
    "and its cause found by experiment: unk, added_token, normalization, whitespace,\n"
    "byte_sequence or other.\n",
    NULL, inj_table, HSD_OPTS_N(inj_table), 0,
};

static void progress(void *ctx, double frac, int64_t cands, int64_t found) {
    (void)ctx;
    if (frac > 1) frac = 1;
    int w = 30, k = (int)(frac * w);
    fprintf(stderr, "\rfuzz [%.*s%*s] %3.0f%%  %lld tried  %lld found", k,
            "##############################", w - k, "", 100 * frac, (long long)cands,
            (long long)found);
    if (frac >= 1) fputc('\n', stderr);
}

static json_t *example_json(const hsd_inj_example *e, bool minimized) {
    json_t *o = json_object();
    json_object_set_new(o, "input", json_stringn(e->input, e->input_len));
    json_object_set_new(o, "decoded", json_stringn(e->decoded, e->decoded_len));
    if (minimized) {
        json_object_set_new(o, "minimal", json_stringn(e->minimal, e->minimal_len));
        json_object_set_new(o, "cause", json_string(hsd_inj_cause_name(e->cause)));
    } else {
        json_object_set_new(o, "minimal", json_null());
        json_object_set_new(o, "cause", json_null());
    }
    json_object_set_new(o, "source", json_string(e->sample >= 0 ? "corpus" : "fuzz"));
    if (e->sample >= 0) json_object_set_new(o, "sample", json_integer(e->sample));
    return o;
}

/* Shows text on one line with escapes, so whitespace differences are visible. */
static void print_escaped(const char *s, size_t n, size_t max) {
    putchar('"');
    for (size_t i = 0; i < n && i < max; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\n') fputs("\\n", stdout);
        else if (c == '\t') fputs("\\t", stdout);
        else if (c == '"' || c == '\\') printf("\\%c", c);
        else if (c < 0x20 || c == 0x7f) printf("\\x%02x", c);
        else putchar(c);
    }
    fputs(n > max ? "\"..." : "\"", stdout);
}

int hsd_cmd_injectivity(int argc, char **argv) {
    inj_cli_opts op = {0};
    op.seed = 1, op.max_report = 100;
    HSD_OPTS_PARSE(&hsd_spec_injectivity, &op, argc, argv, NULL);
    if (!op.path || (!op.corpus && op.fuzz <= 0))
        return hsd_opts_fail(&hsd_spec_injectivity, "-t and --corpus or --fuzz are required");
    const char *path = op.path, *corpus_path = op.corpus;
    double fuzz = op.fuzz;
    unsigned long long seed = op.seed;
    long long max_found = op.max_found, prefix = op.prefix, max_report = op.max_report;
    bool json = op.json, minimize = !op.no_minimize;
    hsd_tokenizer *tok = NULL;
    if (hsd_tokenizer_load_file(path, &tok)) {
        fprintf(stderr, "hsd injectivity: %s\n", hsd_last_error());
        return 1;
    }
    hsd_corpus corpus = {0};
    hsd_inj_result r = {0};
    hsd_inj_params o = hsd_inj_default_params();
    o.prefix_chars = (size_t)prefix, o.minimize = minimize, o.fuzz_seconds = fuzz, o.seed = seed;
    o.fuzz_max_found = max_found, o.fuzz_max_report = max_report;
    int rc = 0;
    if (corpus_path && hsd_corpus_load(corpus_path, &corpus)) goto fail;
    if (corpus_path && hsd_inj_check_corpus(tok, &corpus, &o, &r)) goto fail;
    if (fuzz > 0) {
        o.fuzz_seeds = corpus_path ? &corpus : NULL;
        if (isatty(2)) o.progress = progress;
        if (hsd_inj_fuzz(tok, &o, &r)) goto fail;
    }
    if (json) {
        json_t *out = json_object(), *list = json_array();
        json_object_set_new(out, "tokenizer", json_string(path));
        json_object_set_new(out, "samples", json_integer(r.samples));
        json_object_set_new(out, "non_injective", json_integer(r.non_injective));
        json_object_set_new(out, "injectivity_rate",
                            r.samples ? json_real((double)(r.samples - r.non_injective) /
                                                  (double)r.samples)
                                      : json_null());
        for (size_t i = 0; i < r.n_ex; i++) json_array_append_new(list, example_json(&r.ex[i], minimize));
        json_object_set_new(out, "counterexamples", list);
        if (fuzz > 0) {
            json_t *fz = json_object();
            json_object_set_new(fz, "seconds", json_real(r.fuzz_seconds));
            json_object_set_new(fz, "seed", json_integer((json_int_t)seed));
            json_object_set_new(fz, "candidates", json_integer(r.fuzz_candidates));
            json_object_set_new(fz, "found", json_integer(r.fuzz_found));
            json_object_set_new(out, "fuzz", fz);
        }
        hsd_cli_put_json(out, JSON_INDENT(1) | JSON_ENSURE_ASCII);
    } else {
        if (corpus_path)
            printf("%s: %lld of %lld samples round-trip (%.2f%%); %lld do not\n", path,
                   (long long)(r.samples - r.non_injective), (long long)r.samples,
                   r.samples ? 100.0 * (double)(r.samples - r.non_injective) / (double)r.samples
                             : 0.0,
                   (long long)r.non_injective);
        if (fuzz > 0)
            printf("fuzz: %lld candidates in %.1f s, %lld new minimal counterexamples\n",
                   (long long)r.fuzz_candidates, r.fuzz_seconds, (long long)r.fuzz_found);
        for (size_t i = 0; i < r.n_ex; i++) {
            const hsd_inj_example *e = &r.ex[i];
            if (e->sample >= 0) printf("sample %lld", (long long)e->sample);
            else printf("fuzz");
            if (minimize) {
                printf(" [%s] minimal ", hsd_inj_cause_name(e->cause));
                print_escaped(e->minimal, e->minimal_len, 80);
            }
            printf("\n  input   ");
            print_escaped(e->input, e->input_len, 100);
            printf("\n  decoded ");
            print_escaped(e->decoded, e->decoded_len, 100);
            putchar('\n');
        }
    }
    goto done;
fail:
    fprintf(stderr, "hsd injectivity: %s\n", hsd_last_error());
    rc = 1;
done:
    hsd_inj_result_free(&r);
    hsd_corpus_free(&corpus);
    hsd_tokenizer_free(tok);
    return rc;
}
