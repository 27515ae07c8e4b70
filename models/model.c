/* The public hsd_model API: format detection and a thin wrapper over hsd_model_iface so
 * built-in transformers and caller-provided models look the same to the engine. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hsd.h"
#include "lib/base/error.h"
#include "lib/base/log.h"
#include "lib/base/params.h"
#include "kernels/cpu_features.h"
#include "models/cuda_model.h"
#include "models/forward_check.h"
#include "models/head.h"
#include "models/loaders.h"
#include "models/model.h"

/* More worker threads than this is a caller's mistake (e.g. an uninitialised field), not a
 * machine hsd will meet. */
#define HSD_MAX_THREADS 1024

struct hsd_model {
    hsd_model_iface iface;
    hsd_backend backend;
    char desc[640];
    hsd_transformer
        *tf;     /* the built-in CPU transformer behind iface, NULL for caller and CUDA models */
    int32_t cur; /* selected sequence slot */
    int32_t n_ctx_train; /* the context the model was trained for (0: unknown) */
    int32_t format_eos;  /* models/model.h: hsd_model_format_eos */
};

hsd_model_params hsd_model_default_params(void) {
    hsd_model_params p = {.size = sizeof(hsd_model_params),
                          .n_ctx = 0,
                          .n_threads = 2,
                          .use_mmap = true,
                          .backend = HSD_BACKEND_AUTO,
                          .device_weights = HSD_FTYPE_AUTO,
                          .n_seq = 1,
                          .cpu_kernels = HSD_CPU_KERNELS_AUTO,
                          .no_pack = false,
                          .no_blas = false,
                          .kv_type = HSD_KV_F16};
    return p;
}

const char *hsd_cpu_kernels_name(hsd_cpu_kernels k) {
    static const char *names[] = {"auto", "scalar", "avx2", "avx512", "amx"};
    return (unsigned)k <= HSD_CPU_KERNELS_AMX ? names[k] : "?";
}

int hsd_cpu_kernels_parse(const char *name) {
    for (int k = 0; name && k <= HSD_CPU_KERNELS_AMX; k++)
        if (!strcmp(name, hsd_cpu_kernels_name((hsd_cpu_kernels)k))) return k;
    return -1;
}

/* hsd_cpu_kernels is hsd_cpu_level + 1 (kernels/cpu_features.h), AUTO aside */
hsd_cpu_kernels hsd_cpu_kernels_active(void) {
    return (hsd_cpu_kernels)(hsd_cpu_level_active() + 1);
}

const char *hsd_cpu_kernels_features(void) {
    return hsd_cpu_features_get()->desc;
}

const char *hsd_backend_name(hsd_backend b) {
    switch (b) {
    case HSD_BACKEND_AUTO:
        return "auto";
    case HSD_BACKEND_CPU:
        return "cpu";
    case HSD_BACKEND_CUDA:
        return "cuda";
    }
    return "?";
}

int hsd_backend_parse(const char *name) {
    if (!name) return -1;
    for (int b = HSD_BACKEND_AUTO; b <= HSD_BACKEND_CUDA; b++)
        if (!strcmp(name, hsd_backend_name((hsd_backend)b))) return b;
    return -1;
}

/* iface is the library's own (a caller's is read into one first, hsd_model_from_iface). */
static hsd_status wrap(const hsd_model_iface *iface, const char *desc, hsd_model **out) {
    hsd_model *m = calloc(1, sizeof *m);
    if (!m) return hsd_error(HSD_ERR_NOMEM, "out of memory");
    m->iface = *iface;
    m->iface.size = sizeof m->iface;
    m->backend = HSD_BACKEND_CPU;
    m->format_eos = -1;
    snprintf(m->desc, sizeof m->desc, "%s", desc);
    *out = m;
    return HSD_OK;
}

static bool ends_with(const char *s, const char *suf) {
    size_t n = strlen(s), k = strlen(suf);
    return n >= k && !strcmp(s + n - k, suf);
}

hsd_status hsd_model_load(const char *path, const hsd_model_params *params, hsd_model **out) {
    if (!out) return hsd_error(HSD_ERR_INVALID_ARG, "hsd_model_load: out is NULL");
    *out = NULL;
    if (!path) return hsd_error(HSD_ERR_INVALID_ARG, "hsd_model_load: path is NULL");
    /* the caller's params (any header version) as the library's own, defaults in the tail */
    hsd_model_params own = hsd_model_default_params();
    hsd_status ps = hsd_params_read(&own, sizeof own, params, "hsd_model_load", "params",
                                    "hsd_model_default_params()");
    if (ps) return ps;
    if (params) params = &own;
    if (params &&
        (params->n_ctx < 0 || params->n_threads < 0 || params->n_threads > HSD_MAX_THREADS))
        return hsd_error(HSD_ERR_INVALID_ARG,
                         "hsd_model_load: n_ctx %d must be >= 0 and n_threads %d in 0..%d",
                         params->n_ctx, params->n_threads, HSD_MAX_THREADS);
    struct stat st;
    if (params &&
        (params->backend < HSD_BACKEND_AUTO || params->backend > HSD_BACKEND_CUDA ||
         params->device_weights < HSD_FTYPE_AUTO || params->device_weights > HSD_FTYPE_BF16))
        return hsd_error(HSD_ERR_INVALID_ARG,
                         "hsd_model_load: backend %d or device weights %d unknown",
                         (int)params->backend, (int)params->device_weights);
    if (params && ((int)params->cpu_kernels < HSD_CPU_KERNELS_AUTO ||
                   params->cpu_kernels > HSD_CPU_KERNELS_AMX))
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_model_load: cpu_kernels %d unknown",
                         (int)params->cpu_kernels);
    if (stat(path, &st) != 0) return hsd_error(HSD_ERR_IO, "%s: no such file or directory", path);
    if (params && params->cpu_kernels != HSD_CPU_KERNELS_AUTO) /* before any packing */
        hsd_cpu_level_limit((hsd_cpu_level)(params->cpu_kernels - 1));
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
    const int32_t n_ctx_train = hsd_tf_get_config(tf)->seq_len;
    /* llama2.c trains on stories delimited by BOS (id 1): run.c stops there */
    const int32_t format_eos = !strcmp(hsd_tf_get_config(tf)->arch, "llama2c") ? 1 : -1;
    hsd_model_iface iface;
    memset(&iface, 0, sizeof iface);
    hsd_model_params p = params ? *params : hsd_model_default_params();
    if (p.backend != HSD_BACKEND_CPU) {
        /* AUTO and CUDA alike: the device when there is one, else the CPU with a notice */
        char desc[640];
        s = hsd_cuda_model_create(tf, &p, &iface, desc, sizeof desc);
        if (s == HSD_OK) {
            hsd_tf_free(tf); /* everything the device needs was copied */
            s = wrap(&iface, desc, out);
            if (s != HSD_OK) {
                iface.free(iface.ctx);
                return s;
            }
            (*out)->backend = HSD_BACKEND_CUDA;
            (*out)->n_ctx_train = n_ctx_train;
            (*out)->format_eos = format_eos;
            return HSD_OK;
        }
        if (s != HSD_ERR_UNSUPPORTED) {
            hsd_tf_free(tf);
            return s;
        }
        /* say why: "no CUDA device (...)", "built without CUDA", or what the device model
         * cannot run (an architecture, a weight type): a user with a GPU must not be told
         * there is none */
        hsd_log(HSD_LOG_INFO, "CUDA backend not used (%s); using CPU", hsd_last_error());
        hsd_error_clear();
    }
    hsd_tf_set_cpu_options(tf, p.no_pack, p.no_blas);
    hsd_tf_pack(tf); /* on the CPU for good: the products' weight copies are load time */
    hsd_tf_iface(tf, &iface);
    s = wrap(&iface, hsd_tf_desc(tf), out);
    if (s != HSD_OK)
        hsd_tf_free(tf);
    else
        (*out)->tf = tf, (*out)->n_ctx_train = n_ctx_train, (*out)->format_eos = format_eos;
    return s;
}

hsd_status hsd_model_from_iface(const hsd_model_iface *caller, hsd_model **out) {
    if (!caller || !out)
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_model_from_iface: %s is NULL",
                         !caller ? "iface" : "out");
    /* read min(caller's size, ours): an older caller's iface is shorter, and the members it
     * does not have stay NULL (never read past its end) */
    hsd_model_iface own;
    memset(&own, 0, sizeof own);
    own.size = sizeof own;
    hsd_status ps = hsd_params_read(&own, sizeof own, caller, "hsd_model_from_iface", "iface",
                                    "HSD_MODEL_IFACE_INIT");
    if (ps) return ps;
    const hsd_model_iface *iface = &own;
    if (!iface->vocab_size || !iface->forward || !iface->kv_len || !iface->kv_truncate)
        return hsd_error(
            HSD_ERR_INVALID_ARG,
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

int32_t hsd_model_vocab_size(const hsd_model *m) {
    return m ? m->iface.vocab_size(m->iface.ctx) : 0;
}
int32_t hsd_model_n_ctx_train(const hsd_model *m) { return m ? m->n_ctx_train : 0; }

int32_t hsd_model_format_eos(const hsd_model *m) { return m ? m->format_eos : -1; }

int32_t hsd_model_n_ctx(const hsd_model *m) {
    return m && m->iface.n_ctx ? m->iface.n_ctx(m->iface.ctx) : 0;
}
const char *hsd_model_desc(const hsd_model *m) {
    return m ? m->desc : "";
}
hsd_backend hsd_model_backend(const hsd_model *m) {
    return m ? m->backend : HSD_BACKEND_CPU;
}

/* The wrapper checks every argument the interface documents before it calls the
 * implementation, so a caller-provided model never sees a malformed call and the built-in
 * transformer's own checks are a second line. */
/* The checks a forward of n tokens on the selected slot must pass before an implementation
 * sees it (caller models get only well-formed calls). */
static hsd_status check_forward(const hsd_model *m, const char *who, const int32_t *tokens,
                                int32_t n, const int32_t *parents, const int32_t *rows,
                                int32_t n_rows, const float *logits) {
    if (!m) return hsd_error(HSD_ERR_INVALID_ARG, "%s: NULL model", who);
    return hsd_forward_check(who, tokens, n, parents, rows, n_rows, logits != NULL,
                             m->iface.vocab_size(m->iface.ctx), m->iface.kv_len(m->iface.ctx),
                             m->iface.n_ctx ? m->iface.n_ctx(m->iface.ctx) : 0);
}

hsd_status hsd_model_forward(hsd_model *m, const int32_t *tokens, int32_t n, const int32_t *parents,
                             const int32_t *rows, int32_t n_rows, float *logits) {
    if (!m) return hsd_error(HSD_ERR_INVALID_ARG, "hsd_model_forward: NULL model");
    hsd_status s = check_forward(m, "hsd_model_forward", tokens, n, parents, rows, n_rows, logits);
    if (s) return s;
    return m->iface.forward(m->iface.ctx, tokens, n, parents, rows, n_rows, logits);
}

int32_t hsd_model_kv_len(const hsd_model *m) {
    return m ? m->iface.kv_len(m->iface.ctx) : 0;
}

hsd_status hsd_model_kv_truncate(hsd_model *m, int32_t len) {
    if (!m) return hsd_error(HSD_ERR_INVALID_ARG, "hsd_model_kv_truncate: NULL model");
    int32_t kv = m->iface.kv_len(m->iface.ctx);
    if (len < 0 || len > kv)
        return hsd_error(HSD_ERR_OUT_OF_RANGE, "hsd_model_kv_truncate: length %d outside 0..%d",
                         len, kv);
    return m->iface.kv_truncate(m->iface.ctx, len);
}

hsd_status hsd_model_kv_keep(hsd_model *m, int32_t base, const int32_t *keep, int32_t n_keep) {
    if (!m) return hsd_error(HSD_ERR_INVALID_ARG, "hsd_model_kv_keep: NULL model");
    if (n_keep < 0 || (n_keep > 0 && !keep))
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_model_kv_keep: %d entries with keep %s", n_keep,
                         keep ? "given" : "NULL");
    if (!m->iface.kv_keep)
        return hsd_error(HSD_ERR_UNSUPPORTED, "hsd_model_kv_keep: this model has no kv_keep");
    int32_t kv = m->iface.kv_len(m->iface.ctx);
    if (base < 0 || base > kv)
        return hsd_error(HSD_ERR_OUT_OF_RANGE, "hsd_model_kv_keep: base %d outside 0..%d", base,
                         kv);
    for (int32_t j = 0; j < n_keep; j++)
        if (keep[j] < 0 || keep[j] >= kv - base || (j > 0 && keep[j] <= keep[j - 1]))
            return hsd_error(HSD_ERR_OUT_OF_RANGE,
                             "hsd_model_kv_keep: keep[%d] = %d (must increase and stay below %d)",
                             j, keep[j], kv - base);
    return m->iface.kv_keep(m->iface.ctx, base, keep, n_keep);
}

/* ---- draft heads (models/head.h) --------------------------------------------------- */

static hsd_status need_tf(const hsd_model *m, const char *fn) {
    if (!m) return hsd_error(HSD_ERR_INVALID_ARG, "%s: NULL model", fn);
    if (!m->tf && m->backend == HSD_BACKEND_CUDA)
        return hsd_error(HSD_ERR_UNSUPPORTED,
                         "%s: draft heads and timings are on the CPU backend only (this model runs "
                         "on the CUDA device; load the drafter with backend cpu)",
                         fn);
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
    hsd_head_params p = hsd_head_default_params();
    s = hsd_params_read(&p, sizeof p, params, "hsd_model_set_head", "params",
                        "hsd_head_default_params()");
    if (s) return s;
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

static hsd_status forward_batch(hsd_model *m, const hsd_model_batch_seq *seqs, int32_t n_seqs,
                                float *logits);

hsd_status hsd_model_forward_batch(hsd_model *m, const hsd_model_batch_seq *seqs, int32_t n_seqs,
                                   float *logits) {
    if (!m || !seqs || n_seqs < 1)
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_model_forward_batch: %s",
                         !m      ? "NULL model"
                         : !seqs ? "NULL seqs"
                                 : "n_seqs < 1");
    /* The caller's entries stride by their size (its header's); the models read the
     * library's own layout, so a caller of another size gets a converted copy. */
    size_t size = seqs->size;
    if (size < HSD_PARAMS_MIN_SIZE)
        return hsd_error(HSD_ERR_INVALID_ARG,
                         "hsd_model_forward_batch: seqs[0].size is %zu (set it to "
                         "sizeof(hsd_model_batch_seq))",
                         size);
    for (int32_t i = 1; i < n_seqs; i++)
        if (hsd_params_size(hsd_params_at(seqs, size, (size_t)i)) != size)
            return hsd_error(HSD_ERR_INVALID_ARG,
                             "hsd_model_forward_batch: seqs[%d].size differs from seqs[0].size "
                             "%zu (one size per array)",
                             (int)i, size);
    if (size == sizeof *seqs) return forward_batch(m, seqs, n_seqs, logits);
    hsd_model_batch_seq *own = calloc((size_t)n_seqs, sizeof *own);
    if (!own) return hsd_error(HSD_ERR_NOMEM, "hsd_model_forward_batch: out of memory");
    hsd_status s = HSD_OK;
    for (int32_t i = 0; !s && i < n_seqs; i++)
        s = hsd_params_read(&own[i], sizeof own[i], hsd_params_at(seqs, size, (size_t)i),
                            "hsd_model_forward_batch", "seqs[i]", "sizeof(hsd_model_batch_seq)");
    if (!s) s = forward_batch(m, own, n_seqs, logits);
    free(own);
    return s;
}

/* seqs in the library's own layout. */
static hsd_status forward_batch(hsd_model *m, const hsd_model_batch_seq *seqs, int32_t n_seqs,
                                float *logits) {
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
    /* every entry is checked against its own slot before anything runs, as a single forward
     * is, so a caller's implementation only sees well-formed batches */
    int32_t cur = m->cur;
    hsd_status s = HSD_OK;
    for (int32_t i = 0; !s && i < n_seqs; i++) {
        const hsd_model_batch_seq *e = &seqs[i];
        char who[64];
        snprintf(who, sizeof who, "hsd_model_forward_batch: entry %d (sequence %d)", i, e->seq);
        if (m->iface.seq_select) s = m->iface.seq_select(m->iface.ctx, e->seq);
        if (!s) s = check_forward(m, who, e->tokens, e->n, e->parents, e->rows, e->n_rows, logits);
    }
    if (m->iface.seq_select && m->iface.seq_select(m->iface.ctx, cur) && !s)
        s = hsd_error(HSD_ERR_INTERNAL, "hsd_model_forward_batch: cannot reselect sequence %d",
                      cur);
    if (s) return s;
    if (m->iface.forward_batch) return m->iface.forward_batch(m->iface.ctx, seqs, n_seqs, logits);
    /* no batched forward: one forward per entry on its slot, then the selection is restored */
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
