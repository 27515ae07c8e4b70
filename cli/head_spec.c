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
    hsd_status s = hsd_model_set_head_spec(draft, spec, e, cal, n_cal);
    free(cal);
    if (s != HSD_OK) {
        fprintf(stderr, "hsd %s: %s\n", who, hsd_cli_error(who));
        return 1;
    }
    return 0;
}
