/* Sequence slots and their KV caches: a model holds n_seq slots, each with its own cache of
 * n_ctx positions per layer; the forward (models/forward.c) writes new keys and values through
 * hsd_tf_kv_dest / hsd_tf_kv_commit, and the engine rolls a slot back with truncate / keep. */
#include <stdlib.h>
#include <string.h>

#include "lib/base/error.h"
#include "models/tf_internal.h"
#include "models/transformer.h"

static size_t cache_off(const hsd_transformer *tf, int32_t seq, int32_t layer) {
    return hsd_tf_cache_off(tf, seq, layer);
}

/* The caches of all slots: n_seq x n_layers x n_ctx positions of kv_dim floats each for keys
 * and for values (tf_internal.h: hsd_tf_cache_off), and each slot's length. */
hsd_status hsd_tf_kv_alloc(hsd_transformer *tf) {
    size_t kv = (size_t)tf->n_seq * tf->cfg.n_layers * tf->n_ctx * tf->kv_dim;
    tf->kv_lens = calloc((size_t)tf->n_seq, sizeof *tf->kv_lens);
    tf->segs = calloc((size_t)tf->n_seq, sizeof *tf->segs);
    tf->key_cache = malloc(kv * sizeof(float));
    tf->value_cache = malloc(kv * sizeof(float));
    if (!tf->kv_lens || !tf->segs || !tf->key_cache || !tf->value_cache) return HSD_ERR_NOMEM;
    return HSD_OK;
}

void hsd_tf_kv_free(hsd_transformer *tf) {
    free(tf->key_cache);
    free(tf->value_cache);
    free(tf->kv_lens);
    free(tf->segs);
}

int32_t hsd_tf_kv_len(const hsd_transformer *tf) {
    return tf->kv_lens[tf->cur];
}
int32_t hsd_tf_n_seq(const hsd_transformer *tf) {
    return tf->n_seq;
}

hsd_status hsd_tf_seq_select(hsd_transformer *tf, int32_t seq) {
    if (seq < 0 || seq >= tf->n_seq)
        return hsd_error(HSD_ERR_OUT_OF_RANGE, "seq_select: sequence %d outside 0..%d", seq,
                         tf->n_seq - 1);
    tf->cur = seq;
    return HSD_OK;
}

/* One slot: layer l's new keys and values go straight into its cache; several: into
 * kbuf/vbuf, from where hsd_tf_kv_commit copies each slot's rows to its cache. */
void hsd_tf_kv_dest(hsd_transformer *tf, int32_t l, float **k, float **v) {
    *k = tf->kbuf, *v = tf->vbuf;
    if (tf->n_segs == 1) {
        size_t at = cache_off(tf, tf->segs[0].seq, l) + (size_t)tf->segs[0].L * tf->kv_dim;
        *k = tf->key_cache + at, *v = tf->value_cache + at;
    }
}

void hsd_tf_kv_commit(hsd_transformer *tf, int32_t l, const float *k, const float *v) {
    if (tf->n_segs == 1) return;
    for (int32_t i = 0; i < tf->n_segs; i++) {
        const fw_seg *sg = &tf->segs[i];
        size_t at = cache_off(tf, sg->seq, l) + (size_t)sg->L * tf->kv_dim;
        size_t bytes = (size_t)sg->n * tf->kv_dim * sizeof(float);
        memcpy(tf->key_cache + at, k + (size_t)sg->t0 * tf->kv_dim, bytes);
        memcpy(tf->value_cache + at, v + (size_t)sg->t0 * tf->kv_dim, bytes);
    }
}

hsd_status hsd_tf_kv_truncate(hsd_transformer *tf, int32_t len) {
    int32_t *kv_len = &tf->kv_lens[tf->cur];
    if (len < 0 || len > *kv_len)
        return hsd_error(HSD_ERR_OUT_OF_RANGE, "kv_truncate: length %d outside 0..%d", len,
                         *kv_len);
    *kv_len = len;
    return HSD_OK;
}

hsd_status hsd_tf_kv_keep(hsd_transformer *tf, int32_t base, const int32_t *keep, int32_t n_keep) {
    int32_t *kv_len = &tf->kv_lens[tf->cur];
    if (base < 0 || base > *kv_len || n_keep < 0 || (n_keep > 0 && !keep))
        return hsd_error(HSD_ERR_OUT_OF_RANGE, "kv_keep: base %d, %d entries, kv_len %d", base,
                         n_keep, *kv_len);
    for (int32_t j = 0; j < n_keep; j++)
        if (keep[j] < 0 || base + keep[j] >= *kv_len || (j > 0 && keep[j] <= keep[j - 1]))
            return hsd_error(HSD_ERR_OUT_OF_RANGE,
                             "kv_keep: keep[%d] = %d (must increase and stay below %d)", j, keep[j],
                             *kv_len - base);
    size_t row = (size_t)tf->kv_dim * sizeof(float);
    for (int32_t l = 0; l < tf->cfg.n_layers; l++) {
        size_t loff = cache_off(tf, tf->cur, l);
        for (int32_t j = 0; j < n_keep; j++) {
            if (keep[j] == j) continue;
            size_t dst = loff + (size_t)(base + j) * tf->kv_dim;
            size_t src = loff + (size_t)(base + keep[j]) * tf->kv_dim;
            memcpy(tf->key_cache + dst, tf->key_cache + src, row);
            memcpy(tf->value_cache + dst, tf->value_cache + src, row);
        }
    }
    *kv_len = base + n_keep;
    return HSD_OK;
}
