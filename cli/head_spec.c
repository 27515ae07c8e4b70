#include "cli/head_spec.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/analysis/corpus.h"

int hsd_cli_read_ids(const char *path, int32_t **ids, int32_t *n) {
    *ids = NULL;
    *n = 0;
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "hsd: %s: cannot open the ids file\n", path);
        return 1;
    }
    char line[256];
    int32_t cap = 0, lineno = 0;
    int rc = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *p = line;
        while (isspace((unsigned char)*p)) p++;
        if (!*p || *p == '#') continue;
        char *end;
        long v = strtol(p, &end, 10);
        while (isspace((unsigned char)*end)) end++;
        if (end == p || (*end && *end != '#') || v < 0 || v > 0x7fffffff) {
            fprintf(stderr, "hsd: %s:%d: not a token id: %s", path, (int)lineno, line);
            rc = 1;
            break;
        }
        if (*n == cap) {
            cap = cap ? 2 * cap : 1024;
            int32_t *q = realloc(*ids, (size_t)cap * sizeof *q);
            if (!q) {
                rc = 1;
                break;
            }
            *ids = q;
        }
        (*ids)[(*n)++] = (int32_t)v;
    }
    fclose(f);
    if (!rc && *n == 0) {
        fprintf(stderr, "hsd: %s: no ids\n", path);
        rc = 1;
    }
    if (rc) {
        free(*ids);
        *ids = NULL;
        *n = 0;
    }
    return rc;
}

int hsd_cli_load_corpus(const char *path, char ***texts, size_t **lens, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "hsd: %s: cannot open the corpus\n", path);
        return 1;
    }
    int c;
    while ((c = fgetc(f)) != EOF && isspace(c)) {
    }
    if (c == '{') {
        fclose(f);
        hsd_corpus cp;
        if (hsd_corpus_load(path, &cp) != HSD_OK) {
            fprintf(stderr, "hsd: %s\n", hsd_last_error());
            return 1;
        }
        *texts = cp.text;
        *lens = cp.len;
        *n = cp.n;
        return 0;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)(size > 0 ? size : 0) + 1);
    *texts = malloc(sizeof **texts);
    *lens = malloc(sizeof **lens);
    if (!buf || !*texts || !*lens || size < 0 || fread(buf, 1, (size_t)size, f) != (size_t)size) {
        fclose(f);
        free(buf), free(*texts), free(*lens);
        fprintf(stderr, "hsd: %s: cannot read\n", path);
        return 1;
    }
    fclose(f);
    buf[size] = 0;
    (*texts)[0] = buf;
    (*lens)[0] = (size_t)size;
    *n = 1;
    return 0;
}

void hsd_cli_free_corpus(char **texts, size_t *lens, size_t n) {
    hsd_corpus cp = {texts, lens, n};
    hsd_corpus_free(&cp);
}

int hsd_cli_head_parse(const char *spec, hsd_cli_head *h) {
    memset(h, 0, sizeof *h);
    h->p = hsd_head_default_params();
    snprintf(h->label, sizeof h->label, "%s", spec);
    const char *colon = strchr(spec, ':');
    size_t kl = colon ? (size_t)(colon - spec) : strlen(spec);
    const char *arg = colon ? colon + 1 : NULL;
    char *end;
    if (kl == 4 && !strncmp(spec, "full", 4) && !arg) return 0;
    if (kl == 4 && !strncmp(spec, "trim", 4) && arg && *arg) {
        h->p.kind = HSD_HEAD_TRIMMED;
        return hsd_cli_read_ids(arg, &h->ids, &h->n_ids);
    }
    if (kl == 3 && !strncmp(spec, "tli", 3)) {
        h->p.kind = HSD_HEAD_TRIMMED;
        h->tli = true;
        return arg && *arg ? hsd_cli_read_ids(arg, &h->ids, &h->n_ids) : 0;
    }
    if (kl == 4 && !strncmp(spec, "spec", 4) && arg) {
        h->p.kind = HSD_HEAD_SPECULATIVE;
        long k = strtol(arg, &end, 10), r = 0;
        if (*end == '/') r = strtol(end + 1, &end, 10);
        if (end == arg || k < 1 || r < 0 || (*end && *end != ':')) goto bad;
        h->p.top_k = (int32_t)k;
        h->p.rank = (int32_t)r;
        if (*end == ':') h->p.factors_path = end + 1;
        return 0;
    }
    if (kl == 7 && !strncmp(spec, "lowrank", 7) && arg) {
        h->p.kind = HSD_HEAD_LOWRANK;
        long r = strtol(arg, &end, 10);
        if (end == arg || r < 0 || (*end && *end != ':')) goto bad;
        h->p.rank = (int32_t)r;
        if (*end == ':') h->p.factors_path = end + 1;
        return 0;
    }
bad:
    fprintf(stderr,
            "hsd: bad head '%s' (full | trim:IDS_FILE | tli[:IDS_FILE] | spec:K[/R][:FILE] | "
            "lowrank:R[:FILE])\n",
            spec);
    return 1;
}

void hsd_cli_head_free(hsd_cli_head *h) {
    free(h->ids);
    h->ids = NULL;
}

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* The first n_max drafter tokens of the corpus, BOS before each text. */
static int calib_ids(const char *path, const hsd_tokenizer *tok, int32_t n_max, int32_t **out,
                     int32_t *n) {
    char **texts;
    size_t *lens, nt;
    if (hsd_cli_load_corpus(path, &texts, &lens, &nt)) return 1;
    int32_t *ids = malloc((size_t)n_max * sizeof *ids), bos = hsd_tokenizer_bos_id(tok);
    *n = 0;
    for (size_t i = 0; ids && i < nt && *n < n_max; i++) {
        int32_t *v;
        size_t m;
        if (hsd_tokenizer_encode_alloc(tok, texts[i], lens[i], false, &v, &m) != HSD_OK) continue;
        if (bos >= 0 && *n < n_max) ids[(*n)++] = bos;
        for (size_t j = 0; j < m && *n < n_max; j++) ids[(*n)++] = v[j];
        hsd_free(v);
    }
    hsd_cli_free_corpus(texts, lens, nt);
    if (!ids || *n == 0) {
        fprintf(stderr, "hsd: %s: no calibration tokens\n", path);
        free(ids);
        return 1;
    }
    *out = ids;
    return 0;
}

int hsd_cli_head_apply(const hsd_cli_head *h, hsd_model *draft, const hsd_tokenizer *draft_tok,
                       const hsd_engine *e, const char *calib, int32_t calib_tokens) {
    hsd_head_params p = h->p;
    int32_t *keep = NULL, *cal = NULL;
    int rc = 1;
    if (h->tli) {
        int32_t n = 0, V = hsd_model_vocab_size(draft);
        keep = malloc((size_t)V * sizeof *keep);
        if (!e || !keep || hsd_engine_overlap_ids(e, keep, V, &n) != HSD_OK) {
            fprintf(stderr, "hsd: tli head: %s\n",
                    e ? hsd_last_error() : "needs a target and a drafter");
            goto done;
        }
        if (h->ids) { /* T ∩ D ∩ the frequency-trimmed ids */
            int32_t *sorted = malloc((size_t)h->n_ids * sizeof *sorted), m = 0;
            if (!sorted) goto done;
            memcpy(sorted, h->ids, (size_t)h->n_ids * sizeof *sorted);
            qsort(sorted, (size_t)h->n_ids, sizeof *sorted, cmp_i32);
            for (int32_t i = 0; i < n; i++)
                if (bsearch(&keep[i], sorted, (size_t)h->n_ids, sizeof *sorted, cmp_i32))
                    keep[m++] = keep[i];
            free(sorted);
            n = m;
        }
        p.keep_ids = keep;
        p.n_keep = n;
    } else if (p.kind == HSD_HEAD_TRIMMED) {
        p.keep_ids = h->ids;
        p.n_keep = h->n_ids;
    }
    if (calib && (p.kind == HSD_HEAD_SPECULATIVE || p.kind == HSD_HEAD_LOWRANK) &&
        !p.factors_path) {
        if (calib_ids(calib, draft_tok, calib_tokens > 0 ? calib_tokens : 4096, &cal, &p.n_calib))
            goto done;
        p.calib_tokens = cal;
    }
    if (hsd_model_set_head(draft, &p) != HSD_OK) {
        fprintf(stderr, "hsd: draft head '%s': %s\n", h->label, hsd_last_error());
        goto done;
    }
    rc = 0;
done:
    free(keep);
    free(cal);
    return rc;
}
