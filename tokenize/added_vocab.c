/* Added tokens: matched in the input before the model sees it, as HF's AddedVocabulary does.
 * Tokens with normalized=false are matched on the raw text, the others on normalized text
 * (their content normalized by the tokenizer's normalizer). Matching is leftmost-longest. */
#include <stdlib.h>
#include <string.h>

#include "lib/base/error.h"
#include "lib/base/utf8.h"
#include "tokenize/tokenizer.h"

static hsd_status matcher_build(hsd_tokenizer *t, hsd_added_matcher *m, bool normalized) {
    memset(m, 0, sizeof *m);
    size_t cap = 64;
    m->accept = malloc(cap * sizeof *m->accept);
    m->keys = calloc(t->n_added ? t->n_added : 1, sizeof *m->keys);
    m->key_lens = calloc(t->n_added ? t->n_added : 1, sizeof *m->key_lens);
    if (!m->accept || !m->keys || !m->key_lens || hsd_u64map_init(&m->edges, 256))
        return hsd_error(HSD_ERR_NOMEM, "out of memory");
    m->accept[0] = -1;
    m->n_nodes = 1;
    hsd_scratch sc = {0};
    for (size_t i = 0; i < t->n_added; i++) {
        const hsd_added_token *a = &t->added[i];
        if (a->normalized != normalized || !a->len) continue;
        hsd_buf key = {0};
        if (normalized && t->n_norm) {
            /* needs match data for regex-based normalizers */
            if (!sc.md) sc.md = hsd_scratch_md_new();
            hsd_status s = hsd_norm_apply(t, a->content, a->len, &key, &sc);
            if (s) return s;
        } else if (hsd_buf_append(&key, a->content, a->len))
            return hsd_error(HSD_ERR_NOMEM, "oom");
        m->keys[i] = key.p;
        m->key_lens[i] = key.n;
        if (!key.n) continue;
        uint64_t node = 0;
        for (size_t j = 0; j < key.n; j++) {
            uint8_t c = (uint8_t)key.p[j];
            if (j == 0) m->first[c >> 3] |= (uint8_t)(1u << (c & 7));
            uint64_t child;
            if (!hsd_u64map_get(&m->edges, node << 8 | c, &child)) {
                if (m->n_nodes == cap) {
                    cap *= 2;
                    int32_t *p = realloc(m->accept, cap * sizeof *p);
                    if (!p) return hsd_error(HSD_ERR_NOMEM, "oom");
                    m->accept = p;
                }
                child = m->n_nodes++;
                m->accept[child] = -1;
                if (hsd_u64map_put(&m->edges, node << 8 | c, child))
                    return hsd_error(HSD_ERR_NOMEM, "oom");
            }
            node = child;
        }
        m->accept[node] = (int32_t)i; /* a later duplicate wins, like HF's map insert */
    }
    if (sc.md) hsd_scratch_md_free(sc.md);
    hsd_buf_free(&sc.a), hsd_buf_free(&sc.b), hsd_buf_free(&sc.c);
    return HSD_OK;
}

hsd_status hsd_added_build(hsd_tokenizer *t) {
    bool any_raw = false, any_norm = false;
    for (size_t i = 0; i < t->n_added; i++) {
        if (!t->added[i].len) continue;
        if (t->added[i].normalized) any_norm = true;
        else any_raw = true;
    }
    hsd_status s;
    if (any_raw) {
        if ((s = matcher_build(t, &t->raw_match, false))) return s;
        t->has_raw_match = true;
    }
    if (any_norm) {
        if ((s = matcher_build(t, &t->norm_match, true))) return s;
        t->has_norm_match = true;
    }
    return HSD_OK;
}

static void matcher_free(hsd_added_matcher *m, size_t n) {
    hsd_u64map_free(&m->edges);
    free(m->accept);
    if (m->keys)
        for (size_t i = 0; i < n; i++) free(m->keys[i]);
    free(m->keys);
    free(m->key_lens);
}

void hsd_added_free(hsd_tokenizer *t) {
    if (t->has_raw_match) matcher_free(&t->raw_match, t->n_added);
    if (t->has_norm_match) matcher_free(&t->norm_match, t->n_added);
    for (size_t i = 0; i < t->n_added; i++) free(t->added[i].content);
    free(t->added);
}

/* Longest token starting at s[pos]; returns its index or -1, with its length in *mlen. */
static int32_t longest_at(const hsd_added_matcher *m, const unsigned char *s, size_t n,
                          size_t pos, size_t *mlen) {
    uint8_t c = s[pos];
    if (!(m->first[c >> 3] & (1u << (c & 7)))) return -1;
    uint64_t node = 0, child;
    int32_t best = -1;
    for (size_t j = pos; j < n; j++) {
        if (!hsd_u64map_get(&m->edges, node << 8 | s[j], &child)) break;
        node = child;
        if (m->accept[node] >= 0) {
            best = m->accept[node];
            *mlen = j + 1 - pos;
        }
    }
    return best;
}

static bool is_word_char(uint32_t cp) { return hsd_uc_is_alnum_word(cp); }

static uint32_t cp_before(const unsigned char *s, size_t pos) {
    size_t p = pos - 1;
    while (p > 0 && (s[p] & 0xC0) == 0x80) p--;
    int k;
    return hsd_utf8_decode(s + p, &k);
}

hsd_status hsd_added_split(const hsd_tokenizer *t, const hsd_added_matcher *m, const hsd_buf *b,
                           const hsd_spans *in, hsd_spans *out) {
    for (size_t i = 0; i < in->n; i++) {
        hsd_span sp = in->p[i];
        if (sp.id >= 0) {
            if (hsd_spans_push(out, sp.off, sp.len, sp.id)) goto oom;
            continue;
        }
        const unsigned char *s = (const unsigned char *)b->p + sp.off;
        size_t n = sp.len, gap = 0, pos = 0;
        while (pos < n) {
            size_t mlen = 0;
            int32_t k = longest_at(m, s, n, pos, &mlen);
            if (k < 0) {
                pos++;
                continue;
            }
            const hsd_added_token *a = &t->added[k];
            size_t ms = pos, me = pos + mlen;
            if (a->single_word) {
                int kk;
                bool start_ok = ms == 0 || !is_word_char(cp_before(s, ms));
                bool stop_ok = me == n || !is_word_char(hsd_utf8_decode(s + me, &kk));
                if (!start_ok || !stop_ok) {
                    pos++;
                    continue;
                }
            }
            if (a->lstrip)
                while (ms > gap) {
                    size_t p = ms - 1;
                    while (p > gap && (s[p] & 0xC0) == 0x80) p--;
                    int kk;
                    if (!hsd_uc_is_whitespace(hsd_utf8_decode(s + p, &kk))) break;
                    ms = p;
                }
            if (a->rstrip)
                while (me < n) {
                    int kk;
                    uint32_t cp = hsd_utf8_decode(s + me, &kk);
                    if (!hsd_uc_is_whitespace(cp)) break;
                    me += (size_t)kk;
                }
            if (ms > gap && hsd_spans_push(out, sp.off + (uint32_t)gap, (uint32_t)(ms - gap), -1))
                goto oom;
            if (hsd_spans_push(out, sp.off + (uint32_t)ms, (uint32_t)(me - ms), a->id)) goto oom;
            gap = pos = me;
        }
        if (n > gap && hsd_spans_push(out, sp.off + (uint32_t)gap, (uint32_t)(n - gap), -1))
            goto oom;
    }
    return HSD_OK;
oom:
    return hsd_error(HSD_ERR_NOMEM, "out of memory");
}
