/* Byte tries over target and draft surfaces, walked together (see slrs_shape.h). */
#include "lib/engine/slrs_shape.h"

#include <stdlib.h>
#include <string.h>

#include "lib/error.h"

static int32_t trie_new(hsd_byte_trie *t, uint8_t byte) {
    if (t->len == t->cap) {
        int32_t c = t->cap ? t->cap * 2 : 256;
        hsd_trie_node *p = realloc(t->n, (size_t)c * sizeof *p);
        if (!p) return -1;
        t->n = p;
        t->cap = c;
    }
    t->n[t->len] = (hsd_trie_node){-1, -1, -1, byte, false};
    return t->len++;
}

static int32_t trie_child(const hsd_byte_trie *t, int32_t node, uint8_t b) {
    for (int32_t c = t->n[node].first; c >= 0; c = t->n[c].next)
        if (t->n[c].byte == b) return c;
    return -1;
}

static hsd_status trie_build(hsd_byte_trie *t, const hsd_tokenizer *tok) {
    t->len = 0;
    if (trie_new(t, 0) < 0) return hsd_error(HSD_ERR_NOMEM, "out of memory");
    for (int32_t id = 0; id < hsd_tokenizer_vocab_size(tok); id++) {
        size_t len;
        const uint8_t *b = hsd_tokenizer_token_bytes(tok, id, &len);
        if (!b || !len || hsd_tokenizer_is_special(tok, id)) continue;
        int32_t node = 0;
        for (size_t i = 0; i < len; i++) {
            t->n[node].longer = true;
            int32_t c = trie_child(t, node, b[i]);
            if (c < 0) {
                if ((c = trie_new(t, b[i])) < 0) return hsd_error(HSD_ERR_NOMEM, "out of memory");
                t->n[c].next = t->n[node].first;
                t->n[node].first = c;
            }
            node = c;
        }
        if (t->n[node].tok < 0) t->n[node].tok = id;
    }
    return HSD_OK;
}

hsd_status hsd_slrs_shape_init(hsd_slrs_shape *s, const hsd_tokenizer *target,
                               const hsd_tokenizer *draft) {
    if (!s || !target || !draft)
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_slrs_shape_init: NULL argument");
    memset(s, 0, sizeof *s);
    hsd_status st = trie_build(&s->target, target);
    if (!st) st = trie_build(&s->draft, draft);
    if (st) hsd_slrs_shape_free(s);
    return st;
}

void hsd_slrs_shape_free(hsd_slrs_shape *s) {
    if (!s) return;
    free(s->target.n);
    free(s->draft.n);
    memset(s, 0, sizeof *s);
}

int32_t hsd_slrs_shape_walk(const hsd_slrs_shape *s, int32_t node, const char *b, size_t n) {
    for (size_t i = 0; i < n && node >= 0; i++) node = trie_child(&s->target, node, (uint8_t)b[i]);
    return node;
}

/* Depth-first over byte paths present in both tries below (tnode, dnode). */
static void walk_both(const hsd_slrs_shape *s, int32_t tnode, int32_t dnode, int32_t *toks,
                      int32_t *tnodes, int32_t cap, int32_t *found) {
    for (int32_t d = s->draft.n[dnode].first; d >= 0; d = s->draft.n[d].next) {
        int32_t t = trie_child(&s->target, tnode, s->draft.n[d].byte);
        if (t < 0 || !s->target.n[t].longer) continue; /* x ⊕ bytes is no proper prefix */
        if (s->draft.n[d].tok >= 0) {
            if (*found < cap) {
                toks[*found] = s->draft.n[d].tok;
                tnodes[*found] = t;
            }
            (*found)++;
        }
        walk_both(s, t, d, toks, tnodes, cap, found);
    }
}

int32_t hsd_slrs_shape_children(const hsd_slrs_shape *s, int32_t tnode, int32_t *toks,
                                int32_t *tnodes, int32_t cap) {
    int32_t found = 0;
    if (s && tnode >= 0 && tnode < s->target.len && s->target.n[tnode].longer)
        walk_both(s, tnode, 0, toks, tnodes, cap, &found);
    return found;
}
