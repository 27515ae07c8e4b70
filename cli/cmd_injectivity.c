/* hsd injectivity: which strings does a tokenizer not give back? (lib/injectivity.h) */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "hsd.h"
#include "lib/analysis/injectivity.h"

static void usage_injectivity(void) {
    fprintf(stderr,
            "usage: hsd injectivity -t TOKENIZER [--corpus C] [--fuzz SECONDS] [--seed S]\n"
            "                       [--max-found N] [--max-report N] [--prefix CHARS] [--no-minimize]\n"
            "                       [--json]\n"
            "Finds strings s with decode(encode(s, add_special=false), skip_special=false) != s.\n"
            "  --corpus C      JSONL file of {\"text\": ...} lines: check each sample\n"
            "  --prefix CHARS  check only the first CHARS characters of each sample (paper: 100)\n"
            "  --fuzz SECONDS  then generate adversarial text (ICU UnicodeSets, mutations of the\n"
            "                  corpus and of failures) for this long; progress on stderr\n"
            "  --seed S        fuzzer seed (default 1); the same seed tries the same strings\n"
            "  --max-found N   stop fuzzing after N distinct minimal counterexamples\n"
            "  --max-report N  list at most N fuzz finds (default 100; all are counted; 0 = all)\n"
            "  --no-minimize   skip shrinking failures (faster; no minimal/cause)\n"
            "  --json          one JSON object: samples, non_injective, injectivity_rate,\n"
            "                  counterexamples [{input, decoded, minimal, cause, source}], fuzz\n"
            "Each failure is shrunk to a minimal counterexample (delta debugging over characters)\n"
            "and its cause found by experiment: unk, added_token, normalization, whitespace,\n"
            "byte_sequence or other.\n");
}

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
    const char *path = NULL, *corpus_path = NULL;
    double fuzz = 0;
    unsigned long long seed = 1;
    long long max_found = 0, prefix = 0, max_report = 100;
    bool json = false, minimize = true;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has = i + 1 < argc;
        if ((!strcmp(a, "-t") || !strcmp(a, "--tokenizer")) && has) path = argv[++i];
        else if (!strcmp(a, "--corpus") && has) corpus_path = argv[++i];
        else if (!strcmp(a, "--fuzz") && has) fuzz = atof(argv[++i]);
        else if (!strcmp(a, "--seed") && has) seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(a, "--max-found") && has) max_found = atoll(argv[++i]);
        else if (!strcmp(a, "--max-report") && has) max_report = atoll(argv[++i]);
        else if (!strcmp(a, "--prefix") && has) prefix = atoll(argv[++i]);
        else if (!strcmp(a, "--json")) json = true;
        else if (!strcmp(a, "--no-minimize")) minimize = false;
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage_injectivity();
            return 0;
        } else {
            fprintf(stderr, "hsd injectivity: unknown or incomplete option '%s'\n", a);
            usage_injectivity();
            return 2;
        }
    }
    if (!path || (!corpus_path && fuzz <= 0) || prefix < 0 || max_found < 0) {
        usage_injectivity();
        return 2;
    }
    hsd_tokenizer *tok = NULL;
    if (hsd_tokenizer_load_file(path, &tok)) {
        fprintf(stderr, "hsd injectivity: %s\n", hsd_last_error());
        return 1;
    }
    hsd_corpus corpus = {0};
    hsd_inj_result r = {0};
    hsd_inj_opts o = {.prefix_chars = (size_t)prefix, .minimize = minimize, .fuzz_seconds = fuzz,
                      .seed = seed, .fuzz_max_found = max_found,
                      .fuzz_max_report = max_report};
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
        char *s = json_dumps(out, JSON_INDENT(1) | JSON_ENSURE_ASCII);
        if (s) puts(s);
        free(s);
        json_decref(out);
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
