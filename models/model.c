/* The public hsd_model API: format detection and a thin wrapper over hsd_model_iface so
 * built-in transformers and caller-provided models look the same to the engine. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hsd.h"
#include "lib/error.h"
#include "models/head.h"
#include "models/loaders.h"

struct hsd_model {
    hsd_model_iface iface;
    char desc[384];
    hsd_transformer *tf; /* the built-in transformer behind iface, NULL for caller models */
};

hsd_model_params hsd_model_default_params(void) {
    hsd_model_params p = {0, 2, true};
    return p;
}

static hsd_status wrap(const hsd_model_iface *iface, const char *desc, hsd_model **out) {
    hsd_model *m = calloc(1, sizeof *m);
    if (!m) return hsd_error(HSD_ERR_NOMEM, "out of memory");
    m->iface = *iface;
    snprintf(m->desc, sizeof m->desc, "%s", desc);
    *out = m;
    return HSD_OK;
}

static bool ends_with(const char *s, const char *suf) {
    size_t n = strlen(s), k = strlen(suf);
    return n >= k && !strcmp(s + n - k, suf);
}

hsd_status hsd_model_load(const char *path, const hsd_model_params *params, hsd_model **out) {
    if (!path || !out) return hsd_error(HSD_ERR_INVALID_ARG, "hsd_model_load: NULL argument");
    *out = NULL;
    struct stat st;
    if (stat(path, &st) != 0) return hsd_error(HSD_ERR_IO, "%s: no such file or directory", path);
    hsd_transformer *tf = NULL;
    hsd_status s;
    if (S_ISDIR(st.st_mode) || ends_with(path, ".safetensors") || ends_with(path, ".json")) {
        s = hsd_safetensors_load(path, params, &tf);
    } else {
        char magic[4] = {0};
        FILE *f = fopen(path, "rb");
        if (!f) return hsd_error(HSD_ERR_IO, "%s: cannot open", path);
        size_t got = fread(magic, 1, 4, f);
        fclose(f);
        if ((got == 4 && !memcmp(magic, "GGUF", 4)) || ends_with(path, ".gguf"))
            s = hsd_gguf_load(path, params, &tf);
        else
            s = hsd_llama2c_load(path, params, &tf);
    }
    if (s != HSD_OK) return s;
    hsd_model_iface iface;
    hsd_tf_iface(tf, &iface);
    s = wrap(&iface, hsd_tf_desc(tf), out);
    if (s != HSD_OK) hsd_tf_free(tf);
    else
        (*out)->tf = tf;
    return s;
}

hsd_status hsd_model_from_iface(const hsd_model_iface *iface, hsd_model **out) {
    if (!iface || !out || !iface->vocab_size || !iface->forward || !iface->kv_len ||
        !iface->kv_truncate)
        return hsd_error(HSD_ERR_INVALID_ARG,
                         "hsd_model_from_iface: vocab_size, forward, kv_len and kv_truncate are required");
    return wrap(iface, "caller-provided model", out);
}

void hsd_model_free(hsd_model *m) {
    if (!m) return;
    if (m->iface.free) m->iface.free(m->iface.ctx);
    free(m);
}

int32_t hsd_model_vocab_size(const hsd_model *m) { return m ? m->iface.vocab_size(m->iface.ctx) : 0; }
int32_t hsd_model_n_ctx(const hsd_model *m) {
    return m && m->iface.n_ctx ? m->iface.n_ctx(m->iface.ctx) : 0;
}
const char *hsd_model_desc(const hsd_model *m) { return m ? m->desc : ""; }

hsd_status hsd_model_forward(hsd_model *m, const int32_t *tokens, int32_t n, const int32_t *parents,
                             const int32_t *rows, int32_t n_rows, float *logits) {
    if (!m) return hsd_error(HSD_ERR_INVALID_ARG, "hsd_model_forward: NULL model");
    return m->iface.forward(m->iface.ctx, tokens, n, parents, rows, n_rows, logits);
}

int32_t hsd_model_kv_len(const hsd_model *m) { return m ? m->iface.kv_len(m->iface.ctx) : 0; }

hsd_status hsd_model_kv_truncate(hsd_model *m, int32_t len) {
    if (!m) return hsd_error(HSD_ERR_INVALID_ARG, "hsd_model_kv_truncate: NULL model");
    return m->iface.kv_truncate(m->iface.ctx, len);
}

hsd_status hsd_model_kv_keep(hsd_model *m, int32_t base, const int32_t *keep, int32_t n_keep) {
    if (!m) return hsd_error(HSD_ERR_INVALID_ARG, "hsd_model_kv_keep: NULL model");
    if (!m->iface.kv_keep)
        return hsd_error(HSD_ERR_UNSUPPORTED, "hsd_model_kv_keep: this model has no kv_keep");
    return m->iface.kv_keep(m->iface.ctx, base, keep, n_keep);
}

/* ---- draft heads (models/head.h) --------------------------------------------------- */

static hsd_status need_tf(const hsd_model *m, const char *fn) {
    if (!m) return hsd_error(HSD_ERR_INVALID_ARG, "%s: NULL model", fn);
    if (!m->tf)
        return hsd_error(HSD_ERR_UNSUPPORTED,
                         "%s: only models loaded by hsd_model_load have draft heads and timings",
                         fn);
    return HSD_OK;
}

/* Runs the model over the calibration ids and collects the hidden states its classifier sees
 * (a capture head stands in for the classifier meanwhile). Windows of the context length
 * start from an empty cache; the cache is left empty. */
static hsd_status collect_hidden(hsd_model *m, const int32_t *ids, int32_t n, hsd_head **cap_out) {
    const hsd_tf_config *c = hsd_tf_get_config(m->tf);
    hsd_head *cap;
    hsd_status s = hsd_head_capture_create(c->dim, c->vocab_size, n, &cap);
    if (s) return s;
    hsd_head *old = hsd_tf_swap_head(m->tf, cap);
    int32_t n_ctx = hsd_model_n_ctx(m), step = 64;
    float dummy = 0; /* the capture head writes no logits */
    for (int32_t off = 0; !s && off < n;) {
        int32_t w = n - off < n_ctx ? n - off : n_ctx;
        if ((s = hsd_tf_kv_truncate(m->tf, 0))) break;
        for (int32_t j = 0; !s && j < w; j += step) {
            int32_t b = w - j < step ? w - j : step;
            s = hsd_tf_forward(m->tf, ids + off + j, b, NULL, NULL, b, &dummy);
        }
        off += w;
    }
    hsd_tf_swap_head(m->tf, old);
    hsd_status s2 = hsd_tf_kv_truncate(m->tf, 0);
    if (!s) s = s2;
    if (s) {
        hsd_head_free(cap);
        return hsd_error_prefix(s, "head calibration: ");
    }
    *cap_out = cap;
    return HSD_OK;
}

hsd_status hsd_model_set_head(hsd_model *m, const hsd_head_params *params) {
    hsd_status s = need_tf(m, "hsd_model_set_head");
    if (s) return s;
    hsd_head_params p = params ? *params : hsd_head_default_params();
    if (p.kind == HSD_HEAD_FULL) {
        hsd_head_free(hsd_tf_swap_head(m->tf, NULL));
        return HSD_OK;
    }
    if (p.n_calib < 0 || (p.n_calib > 0 && !p.calib_tokens))
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_model_set_head: %d calibration ids but no array",
                         p.n_calib);
    hsd_head *cap = NULL;
    const float *calib = NULL;
    int32_t n_calib = 0;
    bool factors = p.kind == HSD_HEAD_SPECULATIVE || p.kind == HSD_HEAD_LOWRANK;
    if (factors && !p.factors_path && p.n_calib > 0) {
        if ((s = collect_hidden(m, p.calib_tokens, p.n_calib, &cap))) return s;
        calib = hsd_head_captured(cap, &n_calib);
    }
    hsd_head *h = NULL;
    s = hsd_head_create(hsd_tf_classifier(m->tf), &p, calib, n_calib, m->desc, &h);
    hsd_head_free(cap);
    if (s) return s;
    hsd_head_free(hsd_tf_swap_head(m->tf, h));
    return HSD_OK;
}

const char *hsd_model_head_desc(const hsd_model *m) {
    return m && m->tf && hsd_tf_head(m->tf) ? hsd_head_desc(hsd_tf_head(m->tf)) : "full";
}

hsd_status hsd_model_save_head(const hsd_model *m, const char *path) {
    hsd_status s = need_tf(m, "hsd_model_save_head");
    if (s) return s;
    if (!path) return hsd_error(HSD_ERR_INVALID_ARG, "hsd_model_save_head: NULL path");
    if (!hsd_tf_head(m->tf))
        return hsd_error(HSD_ERR_INVALID_ARG,
                         "hsd_model_save_head: the model has the full head (no factors)");
    return hsd_head_save(hsd_tf_head(m->tf), path);
}

hsd_status hsd_model_get_timing(const hsd_model *m, hsd_model_timing *out) {
    hsd_status s = need_tf(m, "hsd_model_get_timing");
    if (!out) return hsd_error(HSD_ERR_INVALID_ARG, "hsd_model_get_timing: NULL output");
    memset(out, 0, sizeof *out);
    if (s) return s;
    hsd_tf_timing(m->tf, out);
    return HSD_OK;
}

void hsd_model_reset_timing(hsd_model *m) {
    if (m && m->tf) hsd_tf_reset_timing(m->tf);
}
