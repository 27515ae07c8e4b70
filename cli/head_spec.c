/* --draft-head for the CLI: calibration tokens from a corpus, then the library's
 * hsd_model_set_head_spec. */
#include "cli/head_spec.h"
#include "cli/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/prompts.h"

int hsd_cli_calib_ids(const char *path, const hsd_tokenizer *tok, int32_t n_max, int32_t **out,
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

/* An ids file as `hsd trim -o` writes it (one id per line, '#' starts a comment), for
 * --draft-head tli:IDS_FILE; 1 with the error printed (file, line) on failure. */
static int read_ids_file(const char *path, int32_t **ids, int32_t *n) {
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "hsd: %s: cannot open the ids file\n", path);
        return 1;
    }
    char line[256];
    int32_t cap = 0;
    long lineno = 0;
    *ids = NULL, *n = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *p = line, *end;
        while (*p == ' ' || *p == '\t') p++;
        if (!*p || *p == '#' || *p == '\n' || *p == '\r') continue;
        long v = strtol(p, &end, 10);
        while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n') end++;
        int32_t *q = *n == cap ? realloc(*ids, (size_t)(cap = cap ? 2 * cap : 1024) * sizeof *q)
                               : *ids;
        if (end == p || (*end && *end != '#') || v < 0 || v > 0x7fffffff || !q) {
            line[strcspn(line, "\r\n")] = 0;
            fprintf(stderr, "hsd: %s:%ld: %s: '%s'\n", path, lineno,
                    q ? "not a token id" : "out of memory", line);
            if (q) *ids = q;
            fclose(f);
            free(*ids);
            *ids = NULL;
            return 1;
        }
        *ids = q;
        (*ids)[(*n)++] = (int32_t)v;
    }
    fclose(f);
    return 0;
}

bool hsd_cli_head_is_svd(const char *spec) {
    const char *c = strchr(spec, ':');
    return (!strncmp(spec, "spec:", 5) || !strncmp(spec, "lowrank:", 8)) && !strchr(c + 1, ':');
}

int hsd_cli_head_apply(const char *who, const char *spec, hsd_model *draft,
                       const hsd_tokenizer *draft_tok, hsd_engine *e, const char *calib,
                       int32_t calib_tokens) {
    int32_t *cal = NULL, n_cal = 0;
    if (calib && draft_tok && hsd_cli_head_is_svd(spec) &&
        hsd_cli_calib_ids(calib, draft_tok, calib_tokens > 0 ? calib_tokens : 4096, &cal, &n_cal))
        return 1;
    hsd_status s;
    if (!strcmp(spec, "tli") || !strncmp(spec, "tli:", 4)) {
        /* tli[:IDS_FILE]: the engine's T ∩ D rows (hsd_engine_set_tli_head, the one way to
         * install a TLI head), within the file's ids when one is given */
        int32_t *ids = NULL, n = 0;
        if (spec[3] == ':' && read_ids_file(spec + 4, &ids, &n)) {
            free(cal);
            return 1;
        }
        s = e ? hsd_engine_set_tli_head(e, ids, n) : HSD_ERR_INVALID_ARG;
        if (!e) fprintf(stderr, "hsd %s: draft head '%s': tli needs the target and the drafter\n",
                        who, spec);
        free(ids);
        if (!e) {
            free(cal);
            return 1;
        }
    } else {
        s = hsd_model_set_head_spec(draft, spec, cal, n_cal);
    }
    free(cal);
    if (s != HSD_OK) {
        fprintf(stderr, "hsd %s: %s\n", who, hsd_cli_error(who));
        return 1;
    }
    return 0;
}
