/* Sequence slots and their KV caches: a model holds n_seq slots, each with its own cache of
 * up to n_ctx positions per layer, grown as the slot fills
 * (hsd_tf_kv_reserve); the forward (models/forward.c) stores new keys and values with
 * hsd_tf_kv_commit, and the engine rolls a slot back with truncate / keep. */
#include <stdlib.h>
#include <string.h>

#include "kernels/attention.h"
#include "lib/base/error.h"
#include "models/tf_internal.h"
#include "models/transformer.h"

/* Slot seq's buffers for layer l. */
static size_t slot(const hsd_transformer *tf, int32_t seq, int32_t layer) {
    return (size_t)seq * tf->cfg.n_layers + (size_t)layer;
}

/* The slots' lengths and buffer tables; the buffers themselves come with the first forward
 * that needs them (hsd_tf_kv_reserve), so a model's memory follows what it holds, not n_ctx. */
hsd_status hsd_tf_kv_alloc(hsd_transformer *tf) {
    size_t nb = (size_t)tf->n_seq * tf->cfg.n_layers;
    tf->kv_lens = calloc((size_t)tf->n_seq, sizeof *tf->kv_lens);
    tf->kv_cap = calloc((size_t)tf->n_seq, sizeof *tf->kv_cap);
    tf->segs = calloc(2 * (size_t)tf->n_seq, sizeof *tf->segs); /* a chain and a tree each */
    tf->kc = calloc(nb, sizeof *tf->kc);
    tf->vc = calloc(nb, sizeof *tf->vc);
    if (!tf->kv_lens || !tf->kv_cap || !tf->segs || !tf->kc || !tf->vc) return HSD_ERR_NOMEM;
    return HSD_OK;
}

void hsd_tf_kv_free(hsd_transformer *tf) {
    for (size_t i = 0; tf->kc && i < (size_t)tf->n_seq * tf->cfg.n_layers; i++) {
        free(tf->kc[i]);
        free(tf->vc[i]);
    }
    free(tf->kc);
    free(tf->vc);
    free(tf->kv_cap);
    free(tf->kv_lens);
    free(tf->segs);
}

/* Moves each head's first len rows of a buffer [n_heads][from][row] to [n_heads][to][row]:
 * growing, the last head first; shrinking, the first head first (no head is overwritten
 * before it moved). */
static void relayout(void *buf, int32_t n_heads, size_t row, int32_t from, int32_t to,
                     int32_t len) {
    /* whole tiles (a tile's positions are interleaved across its bytes); capacities are
     * multiples of the tile */
    len = (len + HSD_ATTN_KVTILE - 1) / HSD_ATTN_KVTILE * HSD_ATTN_KVTILE;
    if (len > from) len = from;
    if (len > to) len = to;
    for (int32_t i = 1; i < n_heads && len > 0; i++) {
        int32_t h = to > from ? n_heads - i : i;
        memmove((char *)buf + (size_t)h * to * row, (char *)buf + (size_t)h * from * row,
                (size_t)len * row);
    }
}

/* One buffer regrown from [n_heads][old][row] to [n_heads][cap][row], contents kept (realloc
 * keeps the first old rows in place, relayout moves the heads up). */
static bool grow_buf(void **buf, int32_t n_heads, size_t row, int32_t old, int32_t cap,
                     int32_t len) {
    void *nb = realloc(*buf, (size_t)n_heads * cap * row);
    if (!nb) return false;
    *buf = nb;
    relayout(nb, n_heads, row, old, cap, len);
    return true;
}

hsd_status hsd_tf_kv_reserve(hsd_transformer *tf, int32_t seq, int32_t need) {
    const int32_t old = tf->kv_cap[seq], len = tf->kv_lens[seq], nh = tf->cfg.n_kv_heads;
    if (need <= old) return HSD_OK;
    /* 1.5x steps (amortised copies) in multiples of 64 positions, never past n_ctx */
    int64_t c64 = (int64_t)old + old / 2;
    if (c64 < need) c64 = need;
    c64 = (c64 + 63) / 64 * 64;
    /* n_ctx rounded up to whole tiles (kernels/attention.h), so that every head's
     * keys and values start a tile and the last tile is whole */
    const int64_t top = ((int64_t)tf->n_ctx + HSD_ATTN_KVTILE - 1) / HSD_ATTN_KVTILE * HSD_ATTN_KVTILE;
    const int32_t cap = c64 > top ? (int32_t)top : (int32_t)c64;
    const size_t row = hsd_attn_row_bytes(tf->kv_type, tf->cfg.head_dim);
    for (size_t b = 0; b < 2 * (size_t)tf->cfg.n_layers; b++) {
        void **buf = b % 2 ? &tf->vc[slot(tf, seq, (int32_t)(b / 2))] : &tf->kc[slot(tf, seq, (int32_t)(b / 2))];
        if (grow_buf(buf, nh, row, old, cap, len)) continue;
        /* out of memory: the buffers grown so far go back to the old layout (their larger
         * allocations stay), so the slot stays whole at its old capacity */
        for (size_t u = 0; u < b; u++)
            relayout(u % 2 ? tf->vc[slot(tf, seq, (int32_t)(u / 2))] : tf->kc[slot(tf, seq, (int32_t)(u / 2))],
                     nh, row, cap, old, len);
        return hsd_error(HSD_ERR_NOMEM,
                         "forward: out of memory growing the KV cache of sequence %d from %d to %d "
                         "positions (%d layers x %d KV heads x head_dim %d, %s)",
                         seq, old, cap, tf->cfg.n_layers, nh, tf->cfg.head_dim,
                         hsd_dtype_name(tf->kv_type));
    }
    tf->kv_cap[seq] = cap;
    return HSD_OK;
}

void hsd_tf_kv_head(const hsd_transformer *tf, int32_t seq, int32_t l, int32_t h, const void **k,
                    const void **v) {
    size_t i = slot(tf, seq, l),
           at = (size_t)h * tf->kv_cap[seq] * hsd_attn_row_bytes(tf->kv_type, tf->cfg.head_dim);
    if (!tf->kc[i]) { /* nothing stored yet (no pointer arithmetic on NULL) */
        *k = *v = NULL;
        return;
    }
    *k = (const char *)tf->kc[i] + at;
    *v = (const char *)tf->vc[i] + at;
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

/* Layer l's new keys and values (fp32 rows of kv_dim, token row t0 + i of each segment) go
 * to their slots at positions L + i, split by head and converted to the cache type. */
void hsd_tf_kv_commit(hsd_transformer *tf, int32_t l, const float *k, const float *v) {
    const int32_t hd = tf->cfg.head_dim;
    for (int32_t i = 0; i < tf->n_segs; i++) {
        const fw_seg *sg = &tf->segs[i];
        for (int32_t h = 0; h < tf->cfg.n_kv_heads; h++) {
            const void *kh, *vh;
            hsd_tf_kv_head(tf, sg->seq, l, h, &kh, &vh);
            for (int32_t t = 0; t < sg->n; t++) {
                size_t src = (size_t)(sg->t0 + t) * tf->kv_dim + (size_t)h * hd;
                hsd_attn_store_at(tf->kv_type, tf->kv_tiled, false, (void *)(uintptr_t)kh, sg->L + t, k + src, hd);
                hsd_attn_store_at(tf->kv_type, tf->kv_tiled, true, (void *)(uintptr_t)vh, sg->L + t, v + src, hd);
            }
        }
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
    for (int32_t l = 0; l < tf->cfg.n_layers; l++)
        for (int32_t h = 0; h < tf->cfg.n_kv_heads; h++) {
            const void *kh, *vh;
            hsd_tf_kv_head(tf, tf->cur, l, h, &kh, &vh);
            for (int32_t j = 0; j < n_keep; j++) {
                if (keep[j] == j) continue;
                hsd_attn_copy_at(tf->kv_type, tf->kv_tiled, false, (void *)(uintptr_t)kh, base + j, base + keep[j],
                                 tf->cfg.head_dim);
                hsd_attn_copy_at(tf->kv_type, tf->kv_tiled, true, (void *)(uintptr_t)vh, base + j, base + keep[j],
                                 tf->cfg.head_dim);
            }
        }
    *kv_len = base + n_keep;
    return HSD_OK;
}
