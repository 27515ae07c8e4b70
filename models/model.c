/* The public hsd_model API: format detection and a thin wrapper over hsd_model_iface so
 * built-in transformers and caller-provided models look the same to the engine. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hsd.h"
#include "lib/error.h"
#include "models/loaders.h"

struct hsd_model {
    hsd_model_iface iface;
    char desc[384];
    int32_t cur; /* selected sequence slot */
};

hsd_model_params hsd_model_default_params(void) {
    hsd_model_params p = {0, 2, true, 1};
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
    return s;
}

hsd_status hsd_model_from_iface(const hsd_model_iface *iface, hsd_model **out) {
    if (!iface || !out || !iface->vocab_size || !iface->forward || !iface->kv_len ||
        !iface->kv_truncate)
        return hsd_error(HSD_ERR_INVALID_ARG,
                         "hsd_model_from_iface: vocab_size, forward, kv_len and kv_truncate are required");
    int32_t n_seq = iface->n_seq ? iface->n_seq(iface->ctx) : 1;
    if (n_seq < 1 || (n_seq > 1 && !iface->seq_select))
        return hsd_error(HSD_ERR_INVALID_ARG,
                         "hsd_model_from_iface: n_seq() = %d (needs >= 1, and seq_select when > 1)",
                         n_seq);
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

int32_t hsd_model_n_seq(const hsd_model *m) {
    return m && m->iface.n_seq ? m->iface.n_seq(m->iface.ctx) : (m ? 1 : 0);
}

int32_t hsd_model_seq_current(const hsd_model *m) {
    return m ? m->cur : 0;
}

hsd_status hsd_model_seq_select(hsd_model *m, int32_t seq) {
    if (!m) return hsd_error(HSD_ERR_INVALID_ARG, "hsd_model_seq_select: NULL model");
    int32_t n = hsd_model_n_seq(m);
    if (seq < 0 || seq >= n)
        return hsd_error(HSD_ERR_OUT_OF_RANGE, "hsd_model_seq_select: sequence %d outside 0..%d",
                         seq, n - 1);
    if (m->iface.seq_select) {
        hsd_status s = m->iface.seq_select(m->iface.ctx, seq);
        if (s) return s;
    }
    m->cur = seq;
    return HSD_OK;
}

hsd_status hsd_model_forward_batch(hsd_model *m, const hsd_model_batch_seq *seqs, int32_t n_seqs,
                                   float *logits) {
    if (!m || !seqs || n_seqs < 1)
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_model_forward_batch: %s",
                         !m      ? "NULL model"
                         : !seqs ? "NULL seqs"
                                 : "n_seqs < 1");
    if (m->iface.forward_batch) return m->iface.forward_batch(m->iface.ctx, seqs, n_seqs, logits);
    /* no batched forward: one forward per entry on its slot, then the selection is restored */
    int32_t n = hsd_model_n_seq(m), V = hsd_model_vocab_size(m);
    for (int32_t i = 0; i < n_seqs; i++) {
        if (seqs[i].seq < 0 || seqs[i].seq >= n)
            return hsd_error(HSD_ERR_OUT_OF_RANGE,
                             "hsd_model_forward_batch: entry %d: sequence %d outside 0..%d", i,
                             seqs[i].seq, n - 1);
        for (int32_t k = 0; k < i; k++)
            if (seqs[k].seq == seqs[i].seq)
                return hsd_error(
                    HSD_ERR_INVALID_ARG,
                    "hsd_model_forward_batch: sequence %d listed twice (entries %d and %d)",
                    seqs[i].seq, k, i);
    }
    int32_t cur = m->cur;
    hsd_status s = HSD_OK;
    size_t off = 0;
    for (int32_t i = 0; !s && i < n_seqs; i++) {
        const hsd_model_batch_seq *e = &seqs[i];
        if (m->iface.seq_select) s = m->iface.seq_select(m->iface.ctx, e->seq);
        if (!s)
            s = m->iface.forward(m->iface.ctx, e->tokens, e->n, e->parents, e->rows, e->n_rows,
                                 e->n_rows > 0 && logits ? logits + off : NULL);
        off += (size_t)(e->n_rows > 0 ? e->n_rows : 0) * (size_t)V;
    }
    if (m->iface.seq_select && m->iface.seq_select(m->iface.ctx, cur) && !s)
        s = hsd_error(HSD_ERR_INTERNAL, "hsd_model_forward_batch: cannot reselect sequence %d",
                      cur);
    return s;
}
