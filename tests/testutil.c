#include "tests/testutil.h"

#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "lib/engine/sample.h"

const char *hsd_test_shared(void) {
    const char *s = getenv("HSD_SHARED");
    if (s && *s) return s;
    s = getenv("HSD_SHARED_DEFAULT");
    if (s && *s) return s;
    return "../shared";
}

const char *hsd_test_path(const char *rel) {
    static char bufs[8][4096];
    static int slot;
    char *b = bufs[slot++ & 7];
    snprintf(b, 4096, "%s/%s", hsd_test_shared(), rel);
    return b;
}

int hsd_test_require(const char *path) {
    struct stat st;
    if (stat(path, &st) == 0) return 1;
    fprintf(stderr, "SKIP: shared data missing: %s (set HSD_SHARED to the shared directory)\n",
            path);
    return 0;
}

char *hsd_test_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = malloc((size_t)n + 1);
    if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
        free(p);
        p = NULL;
    }
    fclose(f);
    if (p) {
        p[n] = 0;
        if (len) *len = (size_t)n;
    }
    return p;
}

const char *hsd_test_src_path(const char *rel) {
    static char bufs[4][4096];
    static int slot;
    char *b = bufs[slot++ & 3];
    const char *root = getenv("HSD_SOURCE_DIR");
    snprintf(b, 4096, "%s/%s", root && *root ? root : ".", rel);
    return b;
}

/* Regularized upper incomplete gamma Q(a, x): series below a+1, continued fraction above
 * (Lentz), both to ~1e-14. */
static double gamma_q(double a, double x) {
    if (x <= 0) return 1.0;
    double lg = lgamma(a);
    if (x < a + 1) {
        double sum = 1.0 / a, term = sum;
        for (int n = 1; n < 100000; n++) {
            term *= x / (a + n);
            sum += term;
            if (fabs(term) < fabs(sum) * 1e-15) break;
        }
        return 1.0 - sum * exp(-x + a * log(x) - lg);
    }
    double b = x + 1 - a, c = 1e300, d = 1 / b, h = d;
    for (int i = 1; i < 100000; i++) {
        double an = -i * (i - a);
        b += 2;
        d = an * d + b;
        if (fabs(d) < 1e-300) d = 1e-300;
        c = b + an / c;
        if (fabs(c) < 1e-300) c = 1e-300;
        d = 1 / d;
        double del = d * c;
        h *= del;
        if (fabs(del - 1) < 1e-15) break;
    }
    return exp(-x + a * log(x) - lg) * h;
}

double hsd_test_chi2_pvalue(double chi2, int df) {
    if (df <= 0) return 1.0;
    if (isinf(chi2)) return 0.0;
    return gamma_q(df / 2.0, chi2 / 2.0);
}

/* Cells with expected count < 5 are pooled, smallest first, until the pool reaches 5; an
 * observation in a cell of probability 0 is impossible under the null (statistic +inf). */
double hsd_test_chi2(const long *obs, const double *prob, int n, long total, int *df) {
    double tot = 0, stat = 0;
    for (int i = 0; i < n; i++) tot += prob[i];
    int *idx = malloc((size_t)(n > 0 ? n : 1) * sizeof *idx), m = 0;
    for (int i = 0; i < n; i++) {
        if (prob[i] <= 0) {
            if (obs[i] > 0) {
                free(idx);
                *df = 1;
                return INFINITY;
            }
            continue;
        }
        idx[m++] = i;
    }
    for (int i = 1; i < m; i++) /* insertion sort by expected count */
        for (int j = i; j > 0 && prob[idx[j]] < prob[idx[j - 1]]; j--) {
            int t = idx[j];
            idx[j] = idx[j - 1];
            idx[j - 1] = t;
        }
    double pe = 0, po = 0;
    int i = 0, cells = 0;
    while (i < m && (total * prob[idx[i]] / tot < 5 || (pe > 0 && pe < 5))) {
        pe += total * prob[idx[i]] / tot;
        po += (double)obs[idx[i]];
        i++;
    }
    if (pe > 0) {
        stat += (po - pe) * (po - pe) / pe;
        cells++;
    }
    for (; i < m; i++) {
        double e = total * prob[idx[i]] / tot, o = (double)obs[idx[i]];
        stat += (o - e) * (o - e) / e;
        cells++;
    }
    free(idx);
    *df = cells - 1;
    return stat;
}

const char *hsd_test_cli(void) {
    const char *c = getenv("HSD_CLI");
    return c && *c ? c : "./hsd";
}

char *hsd_test_run(const char *cmd) {
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t cap = 1 << 16, n = 0, got;
    char *out = malloc(cap);
    while ((got = fread(out + n, 1, cap - n - 1, p)) > 0) {
        n += got;
        if (n + 1 == cap) out = realloc(out, cap *= 2);
    }
    out[n] = 0;
    int rc = pclose(p);
    if (rc != 0) fprintf(stderr, "command failed (%d): %s\n%s\n", rc, cmd, out);
    assert_int_equal(rc, 0);
    return out;
}

/* Reads include/hsd.h and include/hsd_tools.h (the public API), strips C comments and
 * preprocessor lines, then takes every hsd_* identifier that is directly followed by '(' — a
 * declaration, since the headers have no code. Function-pointer typedefs
 * (`(*hsd_log_fn)(...)`) are followed by ')', and a return type before a function-pointer
 * member by "(*": both stay out. */
size_t hsd_test_header_functions(char ***names) {
    *names = NULL;
    /* the public API: hsd.h and the tools header it includes */
    size_t l1 = 0, l2 = 0;
    char *h1 = hsd_test_read_file(hsd_test_src_path("include/hsd.h"), &l1);
    char *h2 = hsd_test_read_file(hsd_test_src_path("include/hsd_tools.h"), &l2);
    char *src = h1 && h2 ? malloc(l1 + l2 + 2) : NULL;
    if (src) {
        memcpy(src, h1, l1);
        src[l1] = '\n';
        memcpy(src + l1 + 1, h2, l2);
        src[l1 + l2 + 1] = 0;
    }
    free(h1);
    free(h2);
    if (!src) return 0;
    size_t n = strlen(src), w = 0;
    bool line_start = true;
    for (size_t i = 0; i < n;) {
        if (src[i] == '/' && src[i + 1] == '*') {
            char *end = strstr(src + i + 2, "*/");
            i = end ? (size_t)(end - src) + 2 : n;
            src[w++] = ' ';
        } else if (src[i] == '/' && src[i + 1] == '/') {
            while (i < n && src[i] != '\n') i++;
        } else if (line_start && src[i] == '#') {
            while (i < n && (src[i] != '\n' || src[i - 1] == '\\')) i++;
        } else {
            if (src[i] == '\n')
                line_start = true;
            else if (src[i] != ' ' && src[i] != '\t')
                line_start = false;
            src[w++] = src[i++];
        }
    }
    src[w] = 0;
    size_t count = 0, cap = 0;
    char **out = NULL;
    for (char *p = src; (p = strstr(p, "hsd_")) != NULL;) {
        bool word_start = p == src || !(isalnum((unsigned char)p[-1]) || p[-1] == '_');
        char *e = p;
        while (isalnum((unsigned char)*e) || *e == '_') e++;
        char *q = e;
        while (isspace((unsigned char)*q)) q++;
        char *r = q + (*q == '(');
        while (isspace((unsigned char)*r)) r++;
        /* `hsd_status (*forward)(...)`: a return type before a function pointer */
        if (word_start && *q == '(' && *r != '*') {
            size_t len = (size_t)(e - p);
            bool dup = false;
            for (size_t k = 0; k < count && !dup; k++)
                dup = strlen(out[k]) == len && !strncmp(out[k], p, len);
            if (!dup) {
                if (count == cap) {
                    cap = cap ? 2 * cap : 64;
                    out = realloc(out, cap * sizeof *out);
                }
                out[count++] = strndup(p, len);
            }
        }
        p = e;
    }
    free(src);
    *names = out;
    return count;
}

void hsd_test_free_names(char **names, size_t n) {
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
}

char *hsd_test_clip_prompt(const char *p, size_t clip) {
    size_t n = strlen(p), start = n > clip ? n - clip : 0;
    while (start > 0 && start < n && p[start - 1] != ' ') start++;
    return strdup(p + start);
}

int hsd_test_bench_prompts(char **out, int cap, size_t clip) {
    const char *files[] = {"bench/prompts/summarization.jsonl", "bench/prompts/code.jsonl",
                           "bench/prompts/long_context.jsonl"};
    int n = 0;
    for (int f = 0; f < 3; f++) {
        FILE *fp = fopen(hsd_test_src_path(files[f]), "r");
        if (!fp) {
            fprintf(stderr, "missing %s\n", hsd_test_src_path(files[f]));
            continue;
        }
        char *line = NULL;
        size_t lcap = 0;
        while (n < cap && getline(&line, &lcap, fp) > 0) {
            json_t *j = json_loads(line, 0, NULL);
            const char *p = json_string_value(json_object_get(j, "prompt"));
            if (p) out[n++] = hsd_test_clip_prompt(p, clip);
            json_decref(j);
        }
        free(line);
        fclose(fp);
    }
    return n;
}

static char test_tmpdir[512];

int hsd_test_tmpdir_setup(const char *prefix) {
    snprintf(test_tmpdir, sizeof test_tmpdir, "%s/%s_XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", prefix);
    return mkdtemp(test_tmpdir) ? 0 : -1;
}

int hsd_test_tmpdir_teardown(void) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", test_tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

const char *hsd_test_tmp(const char *name) {
    static char buf[4][700];
    static int slot;
    char *b = buf[slot++ & 3];
    snprintf(b, sizeof buf[0], "%s/%s", test_tmpdir, name);
    return b;
}

/* Exact law of the first generated token: softmax of the target's logits after the prompt. */
void hsd_test_first_token_law(hsd_model *m, const hsd_tokenizer *t, const char *prompt,
                              double *law) {
    int32_t *ids;
    size_t n;
    assert_int_equal(hsd_tokenizer_encode_alloc(t, prompt, strlen(prompt), false, &ids, &n),
                     HSD_OK);
    int32_t *all = malloc((n + 1) * sizeof *all);
    all[0] = hsd_tokenizer_bos_id(t);
    memcpy(all + 1, ids, n * sizeof *ids);
    int32_t V = hsd_model_vocab_size(m), row = (int32_t)n;
    float *logits = malloc((size_t)V * sizeof *logits), *probs = malloc((size_t)V * sizeof *probs);
    assert_int_equal(hsd_model_kv_truncate(m, 0), HSD_OK);
    assert_int_equal(hsd_model_forward(m, all, (int32_t)n + 1, NULL, &row, 1, logits), HSD_OK);
    hsd_sampler_params sp = {1.0f, 0, 1.0f};
    assert_int_equal(hsd_sample_probs(logits, V, &sp, probs), HSD_OK);
    for (int32_t i = 0; i < V; i++) law[i] = probs[i];
    free(all), free(logits), free(probs), hsd_free(ids);
}

int hsd_test_load_lm(hsd_test_lm *x, const char *model, const char *tok, int32_t n_seq) {
    const char *mp = hsd_test_path(model), *tp = hsd_test_path(tok);
    if (!hsd_test_require(mp) || !hsd_test_require(tp)) return -1;
    hsd_model_params prm = hsd_model_default_params();
    prm.n_threads = 1;
    prm.n_seq = n_seq;
    if (hsd_model_load(mp, &prm, &x->m) || hsd_tokenizer_load_file(tp, &x->t)) {
        fprintf(stderr, "%s\n", hsd_last_error());
        return -1;
    }
    return 0;
}
