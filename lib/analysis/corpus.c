/* A text corpus: JSONL, one {"text": "..."} object per line (other fields ignored); used by
 * the pair advisor (Table 10 token usage), the injectivity checker and trimming. Public API:
 * hsd_corpus_load / hsd_corpus_free (include/hsd_tools.h). */
#include "hsd.h"
#include "hsd_tools.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/error.h"

static hsd_status push(hsd_corpus *c, size_t *cap, const char *s, size_t n) {
    if (c->n == *cap) {
        size_t nc = *cap ? *cap * 2 : 256;
        char **t = realloc(c->text, nc * sizeof *t);
        if (!t) return HSD_ERR_NOMEM;
        c->text = t;
        size_t *l = realloc(c->len, nc * sizeof *l);
        if (!l) return HSD_ERR_NOMEM;
        c->len = l;
        *cap = nc;
    }
    char *p = malloc(n + 1);
    if (!p) return HSD_ERR_NOMEM;
    if (n) memcpy(p, s, n);
    p[n] = 0;
    c->text[c->n] = p;
    c->len[c->n++] = n;
    return HSD_OK;
}

hsd_status hsd_corpus_load(const char *path, hsd_corpus *out) {
    if (!out) return hsd_error(HSD_ERR_INVALID_ARG, "hsd_corpus_load: out is NULL");
    memset(out, 0, sizeof *out);
    if (!path) return hsd_error(HSD_ERR_INVALID_ARG, "hsd_corpus_load: path is NULL");
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f) return hsd_error(HSD_ERR_IO, "%s: cannot open corpus", path);
    char *line = NULL;
    size_t lcap = 0, cap = 0;
    ssize_t n;
    long lineno = 0;
    hsd_status st = HSD_OK;
    while ((n = getline(&line, &lcap, f)) >= 0) {
        lineno++;
        size_t k = (size_t)n;
        while (k && (line[k - 1] == '\n' || line[k - 1] == '\r' || line[k - 1] == ' ')) k--;
        if (!k) continue;
        json_error_t jerr;
        json_t *o = json_loadb(line, k, JSON_ALLOW_NUL, &jerr);
        json_t *t = o ? json_object_get(o, "text") : NULL;
        if (!t || !json_is_string(t)) {
            st = hsd_error(HSD_ERR_PARSE, "%s:%ld: expected a JSON object with a string \"text\"%s%s",
                           path, lineno, o ? "" : ": ", o ? "" : jerr.text);
            json_decref(o);
            break;
        }
        st = push(out, &cap, json_string_value(t), json_string_length(t));
        json_decref(o);
        if (st) {
            hsd_error(st, "%s: out of memory reading the corpus", path);
            break;
        }
    }
    free(line);
    fclose(f);
    if (st) hsd_corpus_free(out);
    return st;
}

void hsd_corpus_free(hsd_corpus *c) {
    if (!c) return;
    for (size_t i = 0; i < c->n; i++) free(c->text[i]);
    free(c->text);
    free(c->len);
    memset(c, 0, sizeof *c);
}
