/* SentencePiece-style score-driven BPE (see spm.h).
 *
 * run.c rescans every adjacent pair after each merge, which is O(n^2) on long texts. Here the
 * symbols form a doubly linked list and candidate pairs sit in a binary max-heap ordered by
 * (score, leftmost position); a popped pair is used only if both symbols are still exactly
 * the ones it was built from, so the merge order is the same as run.c's full rescan:
 * O(n log n) overall. */
#include "tokenize/spm.h"

#include <stdlib.h>
#include <string.h>

#include "lib/base/error.h"
#include "lib/base/utf8.h"

typedef struct spm_impl {
    float *scores;        /* per id */
    int32_t byte_id[256]; /* id of "<0xNN>" or -1 */
    bool has_bytes;
    bool escape;
} spm_impl;

typedef struct spm_sym {
    uint32_t start, len; /* bytes of the working text; len 0 = merged away */
    int32_t prev, next;  /* -1 at the ends */
} spm_sym;

typedef struct spm_pair {
    float score;
    int32_t left, right;
    uint32_t len; /* combined length when queued; a mismatch later means it is stale */
} spm_pair;

typedef struct spm_heap {
    spm_pair *p;
    size_t n, cap;
} spm_heap;

/* Higher score first; on equal scores the leftmost pair, as run.c's strict '>' scan picks. */
static inline bool pair_before(const spm_pair *a, const spm_pair *b) {
    return a->score > b->score || (a->score == b->score && a->left < b->left);
}

static int heap_push(spm_heap *h, spm_pair v) {
    if (h->n == h->cap) {
        size_t c = h->cap ? h->cap * 2 : 64;
        spm_pair *p = realloc(h->p, c * sizeof *p);
        if (!p) return -1;
        h->p = p;
        h->cap = c;
    }
    size_t i = h->n++;
    while (i > 0) {
        size_t up = (i - 1) / 2;
        if (!pair_before(&v, &h->p[up])) break;
        h->p[i] = h->p[up];
        i = up;
    }
    h->p[i] = v;
    return 0;
}

static spm_pair heap_pop(spm_heap *h) {
    spm_pair top = h->p[0];
    spm_pair last = h->p[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && pair_before(&h->p[c + 1], &h->p[c])) c++;
        if (!pair_before(&h->p[c], &last)) break;
        h->p[i] = h->p[c];
        i = c;
    }
    if (h->n) h->p[i] = last;
    return top;
}

int hsd_spm_byte_token(const char *s, size_t n) {
    if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>') return -1;
    int v = 0;
    for (int i = 3; i < 5; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                       : -1;
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    return v;
}

/* Queues (left, right) if their concatenation is a vocabulary string. */
static int try_pair(const hsd_tokenizer *t, const spm_impl *m, const char *text, const spm_sym *sy,
                    int32_t left, spm_heap *h) {
    if (left < 0 || sy[left].next < 0) return 0;
    int32_t right = sy[left].next;
    uint32_t len = sy[left].len + sy[right].len;
    int32_t id = hsd_strmap_get(&t->str_to_id, text + sy[left].start, len);
    if (id < 0) return 0;
    return heap_push(h, (spm_pair){m->scores[id], left, right, len});
}

static hsd_status spm_tokenize(const hsd_tokenizer *t, const char *s, size_t n, hsd_ids *out,
                               hsd_scratch *sc) {
    /* the scratch buffers belong to the pipeline; a piece needs its own memory */
    const spm_impl *m = t->model.impl;
    hsd_buf text = {0};
    spm_sym *sy = NULL;
    spm_heap heap = {0};
    hsd_status st = HSD_OK;
    static const char meta[] = "\xe2\x96\x81"; /* U+2581 */

    /* 1. working text: dummy prefix, spaces spelled as the vocabulary spells them */
    if (hsd_buf_reserve(&text, n + 3)) goto oom;
    if (t->spm_add_dummy_prefix && !sc->cont && n &&
        (m->escape ? hsd_buf_append(&text, meta, 3) : hsd_buf_push(&text, ' ')))
        goto oom;
    for (size_t i = 0; i < n; i++) {
        int r =
            m->escape && s[i] == ' ' ? hsd_buf_append(&text, meta, 3) : hsd_buf_push(&text, s[i]);
        if (r) goto oom;
    }
    if (text.n > INT32_MAX) {
        st = hsd_error(HSD_ERR_INVALID_ARG, "%s: encode: piece of %zu bytes is too long", t->name,
                       text.n);
        goto done;
    }

    /* 2. one symbol per UTF-8 character (the pipeline has validated the text) */
    sy = malloc((text.n ? text.n : 1) * sizeof *sy);
    if (!sy) goto oom;
    int32_t n_sym = 0;
    for (size_t i = 0; i < text.n;) {
        size_t cl = (size_t)hsd_utf8_len((unsigned char)text.p[i]);
        if (cl > text.n - i) cl = text.n - i;
        sy[n_sym] = (spm_sym){(uint32_t)i, (uint32_t)cl, n_sym - 1, n_sym + 1};
        n_sym++;
        i += cl;
    }
    if (n_sym) sy[n_sym - 1].next = -1;

    /* 3. merge the best pair until none is in the vocabulary */
    for (int32_t i = 0; i + 1 < n_sym; i++)
        if (try_pair(t, m, text.p, sy, i, &heap)) goto oom;
    while (heap.n) {
        spm_pair b = heap_pop(&heap);
        spm_sym *l = &sy[b.left], *r = &sy[b.right];
        if (!l->len || !r->len || l->next != b.right || l->len + r->len != b.len) continue;
        l->len += r->len;
        r->len = 0;
        l->next = r->next;
        if (r->next >= 0) sy[r->next].prev = b.left;
        if (try_pair(t, m, text.p, sy, l->prev, &heap) || try_pair(t, m, text.p, sy, b.left, &heap))
            goto oom;
    }

    /* 4. emit: a symbol is a token, or (a single character missing from the vocabulary)
     *    its bytes as byte tokens, or <unk> when there are none */
    for (int32_t i = n_sym ? 0 : -1; i >= 0; i = sy[i].next) {
        const char *p = text.p + sy[i].start;
        int32_t id = hsd_strmap_get(&t->str_to_id, p, sy[i].len);
        if (id >= 0) {
            if (hsd_ids_push(out, id)) goto oom;
            continue;
        }
        for (uint32_t k = 0; k < (m->has_bytes ? sy[i].len : 1); k++) {
            id = m->has_bytes ? m->byte_id[(unsigned char)p[k]] : -1;
            if (id < 0) id = t->unk_id;
            if (id < 0) {
                st = hsd_error(HSD_ERR_UNSUPPORTED,
                               "%s: encode: character at byte %u of a piece is not in the "
                               "vocabulary, which has neither byte tokens nor <unk>",
                               t->name, sy[i].start);
                goto done;
            }
            if (hsd_ids_push(out, id)) goto oom;
        }
    }
    goto done;
oom:
    st = hsd_error(HSD_ERR_NOMEM, "%s: encode: out of memory", t->name);
done:
    hsd_buf_free(&text);
    free(sy);
    free(heap.p);
    return st;
}

static void spm_free(void *p) {
    spm_impl *m = p;
    if (!m) return;
    free(m->scores);
    free(m);
}

hsd_status hsd_spm_build(hsd_tokenizer *t, const float *scores, const hsd_spm_opts *o) {
    spm_impl *m = calloc(1, sizeof *m);
    if (!m) return hsd_error(HSD_ERR_NOMEM, "%s: out of memory", t->name);
    m->scores = malloc((size_t)t->n_ids * sizeof *m->scores);
    if (!m->scores) {
        free(m);
        return hsd_error(HSD_ERR_NOMEM, "%s: out of memory", t->name);
    }
    memcpy(m->scores, scores, (size_t)t->n_ids * sizeof *m->scores);
    m->escape = o && o->escape_spaces;
    for (int i = 0; i < 256; i++) m->byte_id[i] = -1;
    for (int32_t id = 0; id < t->n_ids; id++) {
        if (t->flags[id] & HSD_TOKF_UNUSED) continue;
        size_t n;
        const char *s = hsd_tok_str(t, id, &n);
        int b = hsd_spm_byte_token(s, n);
        if (b >= 0 && m->byte_id[b] < 0) {
            m->byte_id[b] = id;
            m->has_bytes = true;
        }
    }
    if (t->model.free) t->model.free(t->model.impl);
    t->model = (hsd_tok_model){HSD_MODEL_SPM, m, spm_tokenize, spm_free};
    return HSD_OK;
}

const float *hsd_spm_scores(const hsd_tokenizer *t, bool *escape_spaces) {
    const spm_impl *m = t->model.impl;
    *escape_spaces = m->escape;
    return m->scores;
}
