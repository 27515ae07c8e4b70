/* Unigram language-model tokenization: the Viterbi best segmentation under piece scores,
 * with unknown characters scored min_score - 10 and consecutive unknowns fused (HF's
 * Unigram::encode_optimized). Pieces are found with a byte trie. */
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/error.h"
#include "lib/base/utf8.h"
#include "tokenize/json.h"
#include "tokenize/tokenizer.h"

typedef struct {
    hsd_u64map edges; /* (node << 8 | byte) -> child */
    int32_t *node_id; /* node -> piece id or -1 */
    size_t n_nodes, cap;
    double *score; /* per id */
    double unk_score;
    int32_t unk_id;
    bool byte_fallback;
    int32_t byte_id[256];
} unigram;

typedef struct {
    double score;
    int32_t start; /* -1: unreached */
    int32_t id;
} node_best;

typedef struct {
    node_best *best;
    size_t cap;
} uni_scratch;

static void uni_scratch_free(void *p) {
    uni_scratch *s = p;
    if (s) free(s->best);
    free(s);
}

static hsd_status emit(const unigram *m, const char *w, int32_t a, int32_t b, int32_t id,
                       hsd_ids *out) {
    if (id == m->unk_id && m->byte_fallback) {
        bool all = true;
        for (int32_t i = a; i < b; i++) all = all && m->byte_id[(uint8_t)w[i]] >= 0;
        if (all) {
            for (int32_t i = a; i < b; i++)
                if (hsd_ids_push(out, m->byte_id[(uint8_t)w[i]])) return hsd_error(HSD_ERR_NOMEM, "oom");
            return HSD_OK;
        }
    }
    return hsd_ids_push(out, id) ? hsd_error(HSD_ERR_NOMEM, "oom") : HSD_OK;
}

static hsd_status uni_tokenize(const hsd_tokenizer *t, const char *w, size_t n, hsd_ids *out,
                               hsd_scratch *sc) {
    const unigram *m = t->model.impl;
    /* the per-thread scratch is shared by every tokenizer on this thread: if another model
     * type (BPE vs Unigram) left its own scratch there, replace it rather than misuse it */
    if (sc->model_scratch && sc->model_scratch_free != uni_scratch_free) {
        if (sc->model_scratch_free) sc->model_scratch_free(sc->model_scratch);
        sc->model_scratch = NULL;
        sc->model_scratch_free = NULL;
    }
    if (!sc->model_scratch) {
        sc->model_scratch = calloc(1, sizeof(uni_scratch));
        if (!sc->model_scratch) return hsd_error(HSD_ERR_NOMEM, "oom");
        sc->model_scratch_free = uni_scratch_free;
    }
    uni_scratch *us = sc->model_scratch;
    if (us->cap < n + 1) {
        node_best *p = realloc(us->best, (n + 1) * sizeof *p);
        if (!p) return hsd_error(HSD_ERR_NOMEM, "oom");
        us->best = p;
        us->cap = n + 1;
    }
    node_best *best = us->best;
    for (size_t i = 0; i <= n; i++) best[i] = (node_best){0, -1, -1};
    best[0].start = 0;
    const unsigned char *u = (const unsigned char *)w;
    for (size_t st = 0; st < n;) {
        double base = best[st].score;
        size_t mblen = (size_t)hsd_utf8_len(u[st]);
        if (mblen > n - st) mblen = n - st; /* a cut sequence ends the lattice, never past it */
        bool single = false;
        uint64_t node = 0, child;
        for (size_t j = st; j < n; j++) {
            if (!hsd_u64map_get(&m->edges, node << 8 | u[j], &child)) break;
            node = child;
            int32_t id = m->node_id[node];
            if (id < 0) continue;
            size_t end = j + 1;
            double cand = base + m->score[id];
            if (best[end].start < 0 || cand > best[end].score)
                best[end] = (node_best){cand, (int32_t)st, id};
            if (end - st == mblen) single = true;
        }
        if (!single) {
            size_t end = st + mblen;
            double cand = base + m->unk_score;
            if (best[end].start < 0 || cand > best[end].score)
                best[end] = (node_best){cand, (int32_t)st, m->unk_id};
        }
        st += mblen;
    }
    if (m->unk_id < 0)
        for (size_t i = 1; i <= n; i++)
            if (best[i].start >= 0 && best[i].id < 0)
                return hsd_error(HSD_ERR_PARSE, "%s: Unigram model has no unk_id for unknown text",
                                 t->name);
    /* Backtrack into a reversed list of (start, end, id), fusing runs of unknowns. */
    size_t first = out->n;
    int32_t end = (int32_t)n, run_end = -1;
    hsd_ids segs = {0};
    while (end > 0) {
        const node_best *b = &best[end];
        if (b->id == m->unk_id) {
            if (run_end < 0) run_end = end;
        } else {
            if (run_end >= 0) {
                if (hsd_ids_push(&segs, end) || hsd_ids_push(&segs, run_end) ||
                    hsd_ids_push(&segs, m->unk_id))
                    goto oom;
                run_end = -1;
            }
            if (hsd_ids_push(&segs, b->start) || hsd_ids_push(&segs, end) ||
                hsd_ids_push(&segs, b->id))
                goto oom;
        }
        end = b->start;
    }
    if (run_end >= 0 &&
        (hsd_ids_push(&segs, 0) || hsd_ids_push(&segs, run_end) || hsd_ids_push(&segs, m->unk_id)))
        goto oom;
    for (size_t k = segs.n; k >= 3; k -= 3) {
        hsd_status s = emit(m, w, segs.p[k - 3], segs.p[k - 2], segs.p[k - 1], out);
        if (s) {
            hsd_ids_free(&segs);
            return s;
        }
    }
    (void)first;
    hsd_ids_free(&segs);
    return HSD_OK;
oom:
    hsd_ids_free(&segs);
    return hsd_error(HSD_ERR_NOMEM, "oom");
}

static void uni_free(void *p) {
    unigram *m = p;
    if (!m) return;
    hsd_u64map_free(&m->edges);
    free(m->node_id);
    free(m->score);
    free(m);
}

hsd_status hsd_unigram_create(hsd_tokenizer *t, const void *json_model) {
    const hj_val *jm = json_model, *vocab = hj_get(jm, "vocab"), *unk = hj_get(jm, "unk_id");
    unigram *m = calloc(1, sizeof *m);
    if (!m) return hsd_error(HSD_ERR_NOMEM, "oom");
    t->model = (hsd_tok_model){HSD_MODEL_UNIGRAM, m, uni_tokenize, uni_free};
    m->unk_id = hj_num_i32(unk, -1);
    m->byte_fallback = hj_truthy(hj_get(jm, "byte_fallback"));
    for (int i = 0; i < 256; i++) m->byte_id[i] = -1;
    m->score = calloc((size_t)t->n_ids, sizeof *m->score);
    m->cap = 1024;
    m->node_id = malloc(m->cap * sizeof *m->node_id);
    if (!m->score || !m->node_id || hsd_u64map_init(&m->edges, vocab->n * 4))
        return hsd_error(HSD_ERR_NOMEM, "oom");
    m->node_id[0] = -1;
    m->n_nodes = 1;
    double min_score = DBL_MAX;
    for (uint32_t i = 0; i < vocab->n; i++) {
        const hj_val *e = &vocab->u.items[i];
        if (e->type != HJ_ARR || e->n != 2 || e->u.items[0].type != HJ_STR ||
            e->u.items[1].type != HJ_NUM)
            return hsd_error(HSD_ERR_PARSE, "%s: model.vocab[%u] must be [piece, score] (byte %zu)",
                             t->name, i, e->off);
        const hj_val *piece = &e->u.items[0];
        double sc = e->u.items[1].u.num;
        hsd_status s = hsd_tok_set_token(t, (int32_t)i, piece->u.s, piece->n);
        if (s) return s;
        m->score[i] = sc;
        if (sc < min_score) min_score = sc;
        if (piece->n == 6 && !memcmp(piece->u.s, "<0x", 3) && piece->u.s[5] == '>') {
            char hex[3] = {piece->u.s[3], piece->u.s[4], 0}, *end;
            long v = strtol(hex, &end, 16);
            if (!*end && v >= 0 && v < 256) m->byte_id[v] = (int32_t)i;
        }
        uint64_t node = 0, child;
        for (uint32_t j = 0; j < piece->n; j++) {
            uint8_t c = (uint8_t)piece->u.s[j];
            if (!hsd_u64map_get(&m->edges, node << 8 | c, &child)) {
                if (m->n_nodes == m->cap) {
                    m->cap *= 2;
                    int32_t *p = realloc(m->node_id, m->cap * sizeof *p);
                    if (!p) return hsd_error(HSD_ERR_NOMEM, "oom");
                    m->node_id = p;
                }
                child = m->n_nodes++;
                m->node_id[child] = -1;
                if (hsd_u64map_put(&m->edges, node << 8 | c, child))
                    return hsd_error(HSD_ERR_NOMEM, "oom");
            }
            node = child;
        }
        if (piece->n) m->node_id[node] = (int32_t)i;
    }
    if (m->unk_id >= (int32_t)vocab->n)
        return hsd_error(HSD_ERR_PARSE, "%s: model.unk_id %d outside the vocabulary", t->name,
                         m->unk_id);
    m->unk_score = min_score - 10.0;
    t->unk_id = m->unk_id;
    return HSD_OK;
}
