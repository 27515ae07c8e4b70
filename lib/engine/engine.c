/* The engine as a pair of models: the drafter-to-target vocabulary map, AUTO's choice of
 * algorithm, and the names and defaults of the public parameters. Generation itself is the
 * driver's (lib/engine/driver.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsd.h"
#include "lib/engine/engine.h"
#include "lib/base/error.h"
#include "lib/analysis/recommend.h"
#include "lib/engine/vocab_map.h"
#include "models/model.h"
#include "tokenize/tokenizer.h"

const char *hsd_algo_name(hsd_algo a) {
    static const char *names[] = {"ar", "sd", "union", "tli", "slem", "slrs", "auto"};
    return (unsigned)a <= HSD_ALGO_AUTO ? names[a] : "?";
}

const char *hsd_stop_reason_name(hsd_stop_reason r) {
    static const char *names[] = {"max_tokens", "eos", "stop_string", "context", "callback"};
    return (unsigned)r <= HSD_STOP_CALLBACK ? names[r] : "?";
}

int hsd_algo_parse(const char *name) {
    for (int a = 0; a <= HSD_ALGO_AUTO; a++)
        if (name && !strcmp(name, hsd_algo_name((hsd_algo)a))) return a;
    return -1;
}

hsd_gen_params hsd_gen_default_params(void) {
    hsd_gen_params p;
    memset(&p, 0, sizeof p);
    p.size = sizeof p;
    p.algo = HSD_ALGO_AUTO;
    p.max_new_tokens = 128;
    p.n_draft = 4;
    p.k_max = 16;
    p.top_p = 1.0f;
    p.stop_at_eos = true;
    p.add_bos = true;
    p.slrs_top_k = 2;
    p.slrs_top_p = 0.95f;
    p.slrs_max_nodes = 16;
    return p;
}

/* Maps draft ids to target ids by surface bytes (lib/engine/vocab_map.h: its one
 * tie-breaking rule; special tokens left out, they never travel through text), within the
 * models' rows, and makes `--algo auto`'s choice from the same map with the rule `hsd pair`
 * uses (lib/analysis/recommend.h). */
static hsd_status build_map(hsd_engine *e) {
    hsd_vocab_map vm;
    /* with specials: the recommender's counts (docs/PAIR.md); d2t leaves them out below */
    hsd_status s = hsd_vocab_map_build(e->tt, e->dt, true, &vm);
    if (s) return s;
    e->d2t = malloc((size_t)(e->vd > 0 ? e->vd : 1) * sizeof *e->d2t);
    uint8_t *hit = calloc((size_t)e->vt, 1);
    if (!e->d2t || !hit) {
        free(hit);
        hsd_vocab_map_free(&vm);
        return hsd_error(HSD_ERR_NOMEM, "engine: out of memory mapping %d drafter ids", (int)e->vd);
    }
    e->overlap = e->overlap_t = 0;
    for (int32_t d = 0; d < e->vd; d++) {
        int32_t t = d < vm.n_d && !hsd_tokenizer_is_special(e->dt, d) ? vm.d2t[d] : -1;
        e->d2t[d] = t >= 0 && t < e->vt ? t : -1;
        if (e->d2t[d] < 0) continue;
        e->overlap++;
        /* several drafter ids can spell one string (e.g. "A" and its byte-fallback <0x41>):
         * the share of T that can be drafted counts each target id once */
        if (!hit[t]) hit[t] = 1, e->overlap_t++;
    }
    free(hit);
    /* the mapped drafter ids as a list and a 0/1 mask, once per pair: drafting restricts and
     * maps rows over them alone */
    e->d_mapped = malloc((size_t)(e->overlap > 0 ? e->overlap : 1) * sizeof *e->d_mapped);
    e->d_mask = malloc((size_t)(e->vd > 0 ? e->vd : 1) * sizeof *e->d_mask);
    if (!e->d_mapped || !e->d_mask) {
        hsd_vocab_map_free(&vm);
        return hsd_error(HSD_ERR_NOMEM, "engine: out of memory mapping %d drafter ids", (int)e->vd);
    }
    e->n_d_mapped = 0;
    for (int32_t d = 0; d < e->vd; d++) {
        e->d_mask[d] = e->d2t[d] >= 0 ? 1.0f : 0.0f;
        if (e->d2t[d] >= 0) e->d_mapped[e->n_d_mapped++] = d;
    }
    /* identical vocabularies (SD's condition): the same ids over the same model rows */
    e->same_vocab = vm.identical && e->vt == e->vd;
    hsd_pair_report facts;
    memset(&facts, 0, sizeof facts);
    s = hsd_recommend_facts(e->tt, e->dt, &vm, false, &facts);
    hsd_vocab_map_free(&vm);
    if (s) return s;
    facts.identical = e->same_vocab;
    e->auto_algo = hsd_recommend(&facts, e->auto_reason, sizeof e->auto_reason);
    return HSD_OK;
}

/* hsd_eng_check_vocab (engine.h): a tokenizer belongs to a model when the model has a row for
 * each of its ids and at most padding beyond them (checkpoints round their rows up: Qwen3 267
 * past its tokenizer, Gemma 3 63, DeepSeek V3 465). Caught here, naming the side, rather than as an id out of range in
 * some later forward, or never: a 512-id tokenizer on a 151,936-row model would run. */
#define HSD_ENG_MAX_PAD_ROWS 1024

hsd_status hsd_eng_check_vocab(const char *fn, const char *side, const hsd_tokenizer *tok,
                               int32_t rows) {
    int32_t ids = hsd_tokenizer_vocab_size(tok);
    if (ids > rows)
        return hsd_error(HSD_ERR_INVALID_ARG,
                         "%s: the %s tokenizer (%s) has %d ids but the %s model has %d rows: ids "
                         "%d and up cannot be fed to it (not this model's tokenizer?)",
                         fn, side, hsd_tok_name(tok), (int)ids, side, (int)rows, (int)rows);
    if (rows - ids > HSD_ENG_MAX_PAD_ROWS)
        return hsd_error(HSD_ERR_INVALID_ARG,
                         "%s: the %s tokenizer (%s) has %d ids but the %s model has %d rows, %d "
                         "more than padding explains (at most %d): not this model's tokenizer",
                         fn, side, hsd_tok_name(tok), (int)ids, side, (int)rows, (int)(rows - ids),
                         HSD_ENG_MAX_PAD_ROWS);
    return HSD_OK;
}

hsd_status hsd_engine_init(hsd_model *target, const hsd_tokenizer *target_tok, hsd_model *draft,
                           const hsd_tokenizer *draft_tok, hsd_engine **out) {
    if (!out) return hsd_error(HSD_ERR_INVALID_ARG, "hsd_engine_init: out is NULL");
    *out = NULL;
    if (!target || !target_tok)
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_engine_init: target model and tokenizer are required");
    if ((draft == NULL) != (draft_tok == NULL))
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_engine_init: a drafter needs its tokenizer");
    hsd_engine *e = calloc(1, sizeof *e);
    if (!e) return hsd_error(HSD_ERR_NOMEM, "out of memory");
    e->tm = target;
    e->tt = target_tok;
    e->dm = draft;
    e->dt = draft_tok;
    e->vt = hsd_model_vocab_size(target);
    e->t_format_eos = hsd_model_format_eos(target);
    if (e->vt <= 0) {
        free(e);
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_engine_init: target has no vocabulary");
    }
    /* generation stops where the context ends: a model without one (an hsd_model_iface
     * with no n_ctx callback) would silently generate nothing */
    if (hsd_model_n_ctx(target) <= 0 || (draft && hsd_model_n_ctx(draft) <= 0)) {
        free(e);
        return hsd_error(HSD_ERR_INVALID_ARG,
                         "hsd_engine_init: the %s reports no context size (hsd_model_iface.n_ctx)",
                         hsd_model_n_ctx(target) <= 0 ? "target" : "drafter");
    }
    hsd_status s = hsd_eng_check_vocab("hsd_engine_init", "target", target_tok, e->vt);
    if (!s && draft)
        s = hsd_eng_check_vocab("hsd_engine_init", "drafter", draft_tok, hsd_model_vocab_size(draft));
    if (s) {
        free(e);
        return s;
    }
    if (draft) {
        e->vd = hsd_model_vocab_size(draft);
        s = build_map(e);
        if (!s) s = hsd_eng_slem_prepare(e); /* pair tables, not per request */
        if (s) {
            hsd_engine_free(e);
            return s;
        }
    }
    *out = e;
    return HSD_OK;
}

void hsd_engine_free(hsd_engine *e) {
    if (!e) return;
    hsd_ids_free(&e->t_cached);
    hsd_ids_free(&e->d_cached);
    hsd_eng_slrs_release(e);
    hsd_eng_slem_release(e);
    free(e->d2t);
    free(e->d_mapped);
    free(e->d_mask);
    free(e->eos_extra);
    free(e);
}

hsd_status hsd_engine_set_eos_ids(hsd_engine *e, const int32_t *ids, int32_t n) {
    if (!e || n < 0 || (!ids && n > 0))
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_engine_set_eos_ids: NULL engine or ids, or n < 0");
    for (int32_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= e->vt)
            return hsd_error(HSD_ERR_INVALID_ARG,
                             "hsd_engine_set_eos_ids: id %d (index %d) outside the target's vocabulary of %d",
                             (int)ids[i], (int)i, (int)e->vt);
    int32_t *v = NULL;
    if (n > 0) {
        v = malloc((size_t)n * sizeof *v);
        if (!v) return hsd_error(HSD_ERR_NOMEM, "hsd_engine_set_eos_ids: out of memory");
        memcpy(v, ids, (size_t)n * sizeof *v);
    }
    free(e->eos_extra);
    e->eos_extra = v;
    e->n_eos_extra = n;
    return HSD_OK;
}

void hsd_engine_reset(hsd_engine *e) {
    if (e) e->t_cached.n = e->d_cached.n = 0;
}

int32_t hsd_engine_overlap(const hsd_engine *e) { return e ? e->overlap : 0; }

hsd_status hsd_engine_overlap_ids(const hsd_engine *e, int32_t *ids, int32_t cap, int32_t *n) {
    if (!e || !n || (cap > 0 && !ids))
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_engine_overlap_ids: NULL argument");
    if (!e->dm)
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_engine_overlap_ids: the engine has no drafter");
    int32_t k = 0;
    for (int32_t d = 0; d < e->vd; d++)
        if (e->d2t[d] >= 0) {
            if (k < cap) ids[k] = d;
            k++;
        }
    *n = k;
    return k > cap ? hsd_error(HSD_ERR_BUFFER_TOO_SMALL,
                               "hsd_engine_overlap_ids: %d ids, room for %d", k, cap)
                   : HSD_OK;
}

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

hsd_status hsd_engine_set_tli_head(hsd_engine *e, const int32_t *keep_ids, int32_t n_keep) {
    if (!e || n_keep < 0 || (n_keep > 0 && !keep_ids))
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_engine_set_tli_head: %s",
                         !e ? "NULL engine" : "keep_ids NULL or n_keep < 0");
    if (!e->dm)
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_engine_set_tli_head: the engine has no drafter");
    int32_t *keep = malloc((size_t)(e->vd > 0 ? e->vd : 1) * sizeof *keep), n = 0;
    int32_t *sorted = n_keep ? malloc((size_t)n_keep * sizeof *sorted) : NULL;
    if (!keep || (n_keep && !sorted)) {
        free(keep), free(sorted);
        return hsd_error(HSD_ERR_NOMEM, "hsd_engine_set_tli_head: out of memory");
    }
    if (n_keep) {
        memcpy(sorted, keep_ids, (size_t)n_keep * sizeof *sorted);
        qsort(sorted, (size_t)n_keep, sizeof *sorted, cmp_i32);
    }
    /* T ∩ D (ids in increasing order), within keep_ids when given */
    for (int32_t d = 0; d < e->vd; d++)
        if (e->d2t[d] >= 0 &&
            (!n_keep || bsearch(&d, sorted, (size_t)n_keep, sizeof *sorted, cmp_i32)))
            keep[n++] = d;
    free(sorted);
    hsd_status s;
    if (!n) {
        s = hsd_error(HSD_ERR_INVALID_ARG,
                      "hsd_engine_set_tli_head: no drafter id is both in T ∩ D and in the %d "
                      "ids given",
                      (int)n_keep);
    } else {
        hsd_head_params p = hsd_head_default_params();
        p.kind = HSD_HEAD_TRIMMED;
        p.keep_ids = keep;
        p.n_keep = n;
        s = hsd_model_set_head(e->dm, &p);
    }
    free(keep);
    return s;
}

hsd_algo hsd_engine_auto_algo(const hsd_engine *e, char *reason, size_t cap) {
    char tmp[1];
    if (!reason || !cap) reason = tmp, cap = sizeof tmp;
    if (!e || !e->dm) {
        snprintf(reason, cap, "no drafter: autoregressive");
        return HSD_ALGO_AR;
    }
    snprintf(reason, cap, "%s", e->auto_reason);
    return e->auto_algo;
}
