/* hsd_model_set_head_spec: a draft head written as one string (the CLI's --draft-head),
 * parsed and installed by the library, so that every client (CLI, bindings, a user's
 * program) reads the same forms. The TLI head is not one of them: it needs the engine's
 * T ∩ D, and hsd_engine_set_tli_head is the one way to install it. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsd.h"
#include "lib/base/error.h"

/* An ids file: one id per line, '#' starts a comment (as `hsd trim -o` writes it). */
static hsd_status read_ids(const char *path, int32_t **ids, int32_t *n) {
    *ids = NULL;
    *n = 0;
    FILE *f = fopen(path, "r");
    if (!f) return hsd_error(HSD_ERR_IO, "%s: cannot open the ids file", path);
    char line[256];
    int32_t cap = 0;
    long lineno = 0;
    hsd_status s = HSD_OK;
    while (s == HSD_OK && fgets(line, sizeof line, f)) {
        lineno++;
        char *p = line;
        while (isspace((unsigned char)*p)) p++;
        if (!*p || *p == '#') continue;
        char *end;
        long v = strtol(p, &end, 10);
        while (isspace((unsigned char)*end)) end++;
        if (end == p || (*end && *end != '#') || v < 0 || v > 0x7fffffff) {
            line[strcspn(line, "\r\n")] = 0;
            s = hsd_error(HSD_ERR_PARSE, "%s:%ld: not a token id: '%s'", path, lineno, line);
            break;
        }
        if (*n == cap) {
            cap = cap ? 2 * cap : 1024;
            int32_t *q = realloc(*ids, (size_t)cap * sizeof *q);
            if (!q) {
                s = hsd_error(HSD_ERR_NOMEM, "%s: out of memory reading ids", path);
                break;
            }
            *ids = q;
        }
        (*ids)[(*n)++] = (int32_t)v;
    }
    fclose(f);
    if (s == HSD_OK && *n == 0) s = hsd_error(HSD_ERR_PARSE, "%s: no ids", path);
    if (s != HSD_OK) {
        free(*ids);
        *ids = NULL;
        *n = 0;
    }
    return s;
}

/* "K[/R][:FILE]" (spec) or "R[:FILE]" (lowrank). */
static int parse_sizes(const char *arg, bool with_k, hsd_head_params *p) {
    char *end;
    long a = strtol(arg, &end, 10), r = 0;
    if (end == arg || a < (with_k ? 1 : 0) || a > 0x7fffffff) return 1;
    if (with_k && *end == '/') {
        const char *rs = end + 1;
        r = strtol(rs, &end, 10);
        if (end == rs || r < 0 || r > 0x7fffffff) return 1;
    }
    if (*end && *end != ':') return 1;
    if (with_k)
        p->top_k = (int32_t)a, p->rank = (int32_t)r;
    else
        p->rank = (int32_t)a;
    if (*end == ':') {
        if (!end[1]) return 1;
        p->factors_path = end + 1;
    }
    return 0;
}

hsd_status hsd_model_set_head_spec(hsd_model *draft, const char *spec,
                                   const int32_t *calib_tokens, int32_t n_calib) {
    if (!draft || !spec)
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_model_set_head_spec: NULL %s",
                         draft ? "spec" : "model");
    if (n_calib < 0 || (n_calib > 0 && !calib_tokens))
        return hsd_error(HSD_ERR_INVALID_ARG,
                         "hsd_model_set_head_spec: %d calibration ids but no array", n_calib);
    hsd_head_params p = hsd_head_default_params();
    const char *colon = strchr(spec, ':');
    size_t kl = colon ? (size_t)(colon - spec) : strlen(spec);
    const char *arg = colon ? colon + 1 : NULL;
    int32_t *file_ids = NULL, n_file = 0;
    hsd_status s = HSD_OK;
    bool bad = false;
    if (kl == 4 && !strncmp(spec, "full", 4) && !arg) {
        p.kind = HSD_HEAD_FULL;
    } else if (kl == 4 && !strncmp(spec, "trim", 4) && arg && *arg) {
        p.kind = HSD_HEAD_TRIMMED;
        s = read_ids(arg, &file_ids, &n_file);
        p.keep_ids = file_ids, p.n_keep = n_file;
    } else if (kl == 4 && !strncmp(spec, "spec", 4) && arg) {
        p.kind = HSD_HEAD_SPECULATIVE;
        bad = parse_sizes(arg, true, &p);
    } else if (kl == 7 && !strncmp(spec, "lowrank", 7) && arg) {
        p.kind = HSD_HEAD_LOWRANK;
        bad = parse_sizes(arg, false, &p);
    } else {
        bad = true;
    }
    if (bad)
        return hsd_error(HSD_ERR_INVALID_ARG,
                         "draft head '%s': expected full | trim:IDS_FILE | "
                         "spec:K[/R][:FILE] | lowrank:R[:FILE] (the TLI head: "
                         "hsd_engine_set_tli_head)",
                         spec);
    if (s == HSD_OK && !p.factors_path &&
        (p.kind == HSD_HEAD_SPECULATIVE || p.kind == HSD_HEAD_LOWRANK))
        p.calib_tokens = calib_tokens, p.n_calib = n_calib;
    if (s == HSD_OK && (s = hsd_model_set_head(draft, &p)) != HSD_OK)
        hsd_error_prefix(s, "draft head '%s': ", spec);
    free(file_ids);
    return s;
}
