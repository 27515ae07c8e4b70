/* Byte-pair encoding with HF tokenizers' exact merge order: the applicable merge of lowest
 * rank is applied first, leftmost on ties (a min-heap of (rank, position), stale entries
 * skipped). Byte-level vocabularies are keyed by raw bytes, so words need no remapping.
 * A word cache (like HF's) makes repeated words cost one hash lookup. */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "lib/base/error.h"
#include "lib/base/utf8.h"
#include "tokenize/json.h"
#include "tokenize/tokenizer.h"

/* ---- word cache: direct-mapped, sharded locks so a shared tokenizer stays thread-safe ---- */
#define CACHE_SLOTS 16384
#define CACHE_KEY 46
#define CACHE_IDS 12
#define CACHE_SHARDS 64

typedef struct {
    uint64_t hash; /* 0 = empty */
    uint8_t klen, nids;
    char key[CACHE_KEY];
    int32_t ids[CACHE_IDS];
} cache_slot;

typedef struct {
    hsd_strmap keys;   /* model-space bytes -> id */
    hsd_u64map merges; /* (left << 32 | right) -> (rank << 32 | new id) */
    int32_t byte_id[256];
    bool byte_level, byte_fallback, fuse_unk, ignore_merges;
    int32_t unk_id;
    char *prefix, *suffix;
    size_t plen, slen;
    cache_slot *cache;
    pthread_mutex_t locks[CACHE_SHARDS];
    /* SentencePiece-style vocabularies (no pre-tokenizer, "▁" marks word starts): when no
     * token contains "X▁" for a char X outside `glue`, no merge can cross the point before
     * such a "▁", so the text is cut there and each word goes through the word cache. */
    bool presplit;
    hsd_u64map glue; /* code points X that do precede "▁" inside some token */
} bpe;

typedef struct {
    int32_t id;
    int32_t prev, next;
    uint32_t len; /* 0 = merged away */
} symbol;

typedef struct {
    symbol *sym;
    size_t sym_cap;
    uint64_t *heap;
    size_t heap_n, heap_cap;
    hsd_buf tmp;
} bpe_scratch;

static void bpe_scratch_free(void *p) {
    bpe_scratch *s = p;
    if (!s) return;
    free(s->sym);
    free(s->heap);
    hsd_buf_free(&s->tmp);
    free(s);
}

static int heap_push(bpe_scratch *s, uint64_t v) {
    if (s->heap_n == s->heap_cap) {
        size_t c = s->heap_cap ? s->heap_cap * 2 : 256;
        uint64_t *h = realloc(s->heap, c * sizeof *h);
        if (!h) return -1;
        s->heap = h;
        s->heap_cap = c;
    }
    size_t i = s->heap_n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (s->heap[p] <= v) break;
        s->heap[i] = s->heap[p];
        i = p;
    }
    s->heap[i] = v;
    return 0;
}

static uint64_t heap_pop(bpe_scratch *s) {
    uint64_t top = s->heap[0], v = s->heap[--s->heap_n];
    size_t i = 0, n = s->heap_n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && s->heap[c + 1] < s->heap[c]) c++;
        if (s->heap[c] >= v) break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    if (n) s->heap[i] = v;
    return top;
}

static inline int try_pair(const bpe *m, bpe_scratch *s, int32_t pos) {
    int32_t nx = s->sym[pos].next;
    if (nx < 0) return 0;
    uint64_t v;
    if (!hsd_u64map_get(&m->merges, (uint64_t)(uint32_t)s->sym[pos].id << 32 |
                                        (uint32_t)s->sym[nx].id, &v))
        return 0;
    return heap_push(s, (v >> 32) << 32 | (uint32_t)pos);
}

static int push_symbol(bpe_scratch *s, size_t *n, int32_t id, uint32_t len) {
    if (*n == s->sym_cap) {
        size_t c = s->sym_cap ? s->sym_cap * 2 : 256;
        symbol *p = realloc(s->sym, c * sizeof *p);
        if (!p) return -1;
        s->sym = p;
        s->sym_cap = c;
    }
    s->sym[*n] = (symbol){id, (int32_t)*n - 1, (int32_t)*n + 1, len};
    (*n)++;
    return 0;
}

/* Splits a word into initial symbols (bytes or characters, with prefix/suffix, unknown
 * handling), applies merges, appends the ids. */
static hsd_status bpe_word(const hsd_tokenizer *t, const bpe *m, bpe_scratch *s, const char *w,
                           size_t n, hsd_ids *out) {
    if (m->ignore_merges) {
        int32_t id = hsd_strmap_get(&m->keys, w, n);
        if (id >= 0) return hsd_ids_push(out, id) ? hsd_error(HSD_ERR_NOMEM, "oom") : HSD_OK;
    }
    size_t ns = 0;
    const unsigned char *u = (const unsigned char *)w;
    bool affixes = m->plen || m->slen;
    int32_t last_unk = 0; /* 1 if the previous symbol is a fusable unk */
    for (size_t i = 0; i < n;) {
        int k = m->byte_level ? 1 : hsd_utf8_len(u[i]);
        if ((size_t)k > n - i) k = (int)(n - i); /* a cut sequence: never read past the word */
        int32_t id;
        if (!affixes) {
            id = m->byte_level ? m->byte_id[u[i]] : hsd_strmap_get(&m->keys, w + i, (size_t)k);
        } else {
            s->tmp.n = 0;
            if ((i > 0 && hsd_buf_append(&s->tmp, m->prefix, m->plen)) ||
                hsd_buf_append(&s->tmp, w + i, (size_t)k) ||
                (i + (size_t)k == n && hsd_buf_append(&s->tmp, m->suffix, m->slen)))
                return hsd_error(HSD_ERR_NOMEM, "oom");
            id = hsd_strmap_get(&m->keys, s->tmp.p, s->tmp.n);
        }
        if (id >= 0) {
            if (push_symbol(s, &ns, id, (uint32_t)k)) return hsd_error(HSD_ERR_NOMEM, "oom");
            last_unk = 0;
        } else {
            bool done = false;
            if (m->byte_fallback) {
                bool all = true;
                for (int j = 0; j < k; j++) all = all && m->byte_id[u[i + j]] >= 0;
                if (all) {
                    for (int j = 0; j < k; j++)
                        if (push_symbol(s, &ns, m->byte_id[u[i + j]], 1))
                            return hsd_error(HSD_ERR_NOMEM, "oom");
                    done = true;
                    last_unk = 0;
                }
            }
            if (!done && m->unk_id >= 0) {
                if (m->fuse_unk && last_unk) {
                    s->sym[ns - 1].len += (uint32_t)k;
                } else {
                    if (push_symbol(s, &ns, m->unk_id, (uint32_t)k))
                        return hsd_error(HSD_ERR_NOMEM, "oom");
                    last_unk = 1;
                }
            }
            /* no byte fallback and no unk token: HF drops the character */
        }
        i += (size_t)k;
    }
    if (!ns) return HSD_OK;
    s->sym[ns - 1].next = -1;
    s->heap_n = 0;
    for (size_t i = 0; i + 1 < ns; i++)
        if (try_pair(m, s, (int32_t)i)) return hsd_error(HSD_ERR_NOMEM, "oom");
    while (s->heap_n) {
        uint64_t top = heap_pop(s);
        int32_t pos = (int32_t)(uint32_t)top;
        uint32_t rank = (uint32_t)(top >> 32);
        symbol *a = &s->sym[pos];
        if (!a->len || a->next < 0) continue;
        symbol *b = &s->sym[a->next];
        uint64_t v;
        if (!hsd_u64map_get(&m->merges, (uint64_t)(uint32_t)a->id << 32 | (uint32_t)b->id, &v) ||
            (uint32_t)(v >> 32) != rank)
            continue; /* stale: one side was merged since this entry was pushed */
        a->id = (int32_t)(uint32_t)v;
        a->len += b->len;
        b->len = 0;
        a->next = b->next;
        if (a->next >= 0) s->sym[a->next].prev = pos;
        if ((a->prev >= 0 && try_pair(m, s, a->prev)) || try_pair(m, s, pos))
            return hsd_error(HSD_ERR_NOMEM, "oom");
    }
    (void)t;
    for (int32_t i = 0; i >= 0; i = s->sym[i].next)
        if (hsd_ids_push(out, s->sym[i].id)) return hsd_error(HSD_ERR_NOMEM, "oom");
    return HSD_OK;
}

static hsd_status bpe_cached(const hsd_tokenizer *t, bpe *m, const char *w, size_t n,
                             hsd_ids *out, hsd_scratch *sc);

#define WORD_MARK "\xE2\x96\x81" /* U+2581 ▁ */

static hsd_status bpe_tokenize(const hsd_tokenizer *t, const char *w, size_t n, hsd_ids *out,
                               hsd_scratch *sc) {
    bpe *m = t->model.impl;
    if (!m->presplit) return bpe_cached(t, m, w, n, out, sc);
    size_t start = 0, i = 0;
    uint32_t prev = 0x2581;
    while (i < n) {
        int k;
        uint32_t cp = hsd_utf8_decode((const unsigned char *)w + i, &k);
        uint64_t dummy;
        if (cp == 0x2581 && prev != 0x2581 && i > start && !hsd_u64map_get(&m->glue, prev, &dummy)) {
            hsd_status st = bpe_cached(t, m, w + start, i - start, out, sc);
            if (st) return st;
            start = i;
        }
        prev = cp;
        i += (size_t)k;
    }
    return bpe_cached(t, m, w + start, n - start, out, sc);
}

static hsd_status bpe_cached(const hsd_tokenizer *t, bpe *m, const char *w, size_t n,
                             hsd_ids *out, hsd_scratch *sc) {
    /* the per-thread scratch is shared by every tokenizer on this thread: if another model
     * type (BPE vs Unigram) left its own scratch there, replace it rather than misuse it */
    if (sc->model_scratch && sc->model_scratch_free != bpe_scratch_free) {
        if (sc->model_scratch_free) sc->model_scratch_free(sc->model_scratch);
        sc->model_scratch = NULL;
        sc->model_scratch_free = NULL;
    }
    if (!sc->model_scratch) {
        sc->model_scratch = calloc(1, sizeof(bpe_scratch));
        if (!sc->model_scratch) return hsd_error(HSD_ERR_NOMEM, "oom");
        sc->model_scratch_free = bpe_scratch_free;
    }
    bpe_scratch *s = sc->model_scratch;
    if (n > CACHE_KEY || !m->cache) return bpe_word(t, m, s, w, n, out);

    uint64_t h = XXH3_64bits(w, n) | 1;
    size_t slot = h & (CACHE_SLOTS - 1);
    pthread_mutex_t *lk = &m->locks[slot & (CACHE_SHARDS - 1)];
    cache_slot *c = &m->cache[slot];
    pthread_mutex_lock(lk);
    if (c->hash == h && c->klen == n && !memcmp(c->key, w, n)) {
        size_t k = c->nids;
        int bad = hsd_ids_reserve(out, k);
        if (!bad) {
            if (k) memcpy(out->p + out->n, c->ids, k * sizeof(int32_t)); /* out->p may be NULL */
            out->n += k;
        }
        pthread_mutex_unlock(lk);
        return bad ? hsd_error(HSD_ERR_NOMEM, "oom") : HSD_OK;
    }
    pthread_mutex_unlock(lk);
    size_t before = out->n;
    hsd_status st = bpe_word(t, m, s, w, n, out);
    size_t k = out->n - before;
    if (!st && k <= CACHE_IDS) {
        pthread_mutex_lock(lk);
        c->hash = h;
        c->klen = (uint8_t)n;
        c->nids = (uint8_t)k;
        memcpy(c->key, w, n);
        if (k) memcpy(c->ids, out->p + before, k * sizeof(int32_t)); /* out->p NULL when no ids */
        pthread_mutex_unlock(lk);
    }
    return st;
}

static void bpe_free(void *p) {
    bpe *m = p;
    if (!m) return;
    hsd_strmap_free(&m->keys);
    hsd_u64map_free(&m->merges);
    hsd_u64map_free(&m->glue);
    free(m->prefix);
    free(m->suffix);
    if (m->cache)
        for (int i = 0; i < CACHE_SHARDS; i++) pthread_mutex_destroy(&m->locks[i]);
    free(m->cache);
    free(m);
}

hsd_status hsd_bpe_build(hsd_tokenizer *t, const hsd_bpe_opts *o, size_t n_merges,
                         const char *const *left, const uint32_t *left_len,
                         const char *const *right, const uint32_t *right_len) {
    bpe *m = calloc(1, sizeof *m);
    if (!m) return hsd_error(HSD_ERR_NOMEM, "oom");
    t->model = (hsd_tok_model){HSD_MODEL_BPE, m, bpe_tokenize, bpe_free};
    m->byte_level = t->byte_level;
    m->byte_fallback = o->byte_fallback;
    m->fuse_unk = o->fuse_unk;
    m->ignore_merges = o->ignore_merges;
    m->unk_id = o->unk_id;
    if (o->cont_prefix && *o->cont_prefix) {
        m->prefix = strdup(o->cont_prefix);
        m->plen = strlen(o->cont_prefix);
    }
    if (o->eow_suffix && *o->eow_suffix) {
        m->suffix = strdup(o->eow_suffix);
        m->slen = strlen(o->eow_suffix);
    }
    for (int i = 0; i < 256; i++) m->byte_id[i] = -1;
    if (hsd_strmap_init(&m->keys, (size_t)t->n_ids) || hsd_u64map_init(&m->merges, n_merges))
        return hsd_error(HSD_ERR_NOMEM, "oom");

    /* model-space keys */
    hsd_buf tmp = {0};
    for (int32_t id = 0; id < t->n_ids; id++) {
        if (t->flags[id] & HSD_TOKF_UNUSED) continue;
        size_t n;
        const char *s = hsd_tok_str(t, id, &n);
        const char *key = s;
        size_t kl = n;
        if (m->byte_level) {
            tmp.n = 0;
            if (hsd_bytelevel_to_bytes(s, n, &tmp)) continue; /* not producible from bytes */
            key = tmp.p;
            kl = tmp.n;
            if (kl == 1 && !m->plen && !m->slen) m->byte_id[(uint8_t)key[0]] = id;
        }
        if (m->byte_fallback && n == 6 && !memcmp(s, "<0x", 3) && s[5] == '>') {
            char hex[3] = {s[3], s[4], 0};
            char *end;
            long v = strtol(hex, &end, 16);
            if (*end == 0 && v >= 0 && v < 256) {
                m->byte_id[v] = id;
                t->flags[id] |= HSD_TOKF_BYTE;
            }
        }
        if (hsd_strmap_put(&m->keys, key, kl, id)) {
            hsd_buf_free(&tmp);
            return hsd_error(HSD_ERR_NOMEM, "oom");
        }
    }
    /* merges: ids of both sides and of the result (left + right without its prefix) */
    for (size_t i = 0; i < n_merges; i++) {
        int32_t a = hsd_strmap_get(&t->str_to_id, left[i], left_len[i]);
        int32_t b = hsd_strmap_get(&t->str_to_id, right[i], right_len[i]);
        const char *r = right[i];
        size_t rl = right_len[i];
        if (m->plen && rl >= m->plen && !memcmp(r, m->prefix, m->plen)) r += m->plen, rl -= m->plen;
        tmp.n = 0;
        if (hsd_buf_append(&tmp, left[i], left_len[i]) || hsd_buf_append(&tmp, r, rl)) {
            hsd_buf_free(&tmp);
            return hsd_error(HSD_ERR_NOMEM, "oom");
        }
        int32_t c = hsd_strmap_get(&t->str_to_id, tmp.p, tmp.n);
        if (a < 0 || b < 0 || c < 0) {
            hsd_error(HSD_ERR_PARSE, "%s: model.merges[%zu] (\"%.*s\" \"%.*s\") uses a token that "
                      "is not in the vocabulary", t->name, i, (int)left_len[i], left[i],
                      (int)right_len[i], right[i]);
            hsd_buf_free(&tmp);
            return HSD_ERR_PARSE;
        }
        if (hsd_u64map_put(&m->merges, (uint64_t)(uint32_t)a << 32 | (uint32_t)b,
                           (uint64_t)i << 32 | (uint32_t)c)) {
            hsd_buf_free(&tmp);
            return hsd_error(HSD_ERR_NOMEM, "oom");
        }
    }
    hsd_buf_free(&tmp);
    /* presplit applies to character-level vocabularies that use "▁" */
    if (!m->byte_level && !m->plen && !m->slen && !m->ignore_merges &&
        hsd_strmap_get(&m->keys, WORD_MARK, 3) >= 0) {
        if (hsd_u64map_init(&m->glue, 16)) return hsd_error(HSD_ERR_NOMEM, "oom");
        m->presplit = true;
        for (int32_t id = 0; id < t->n_ids; id++) {
            if (t->flags[id] & HSD_TOKF_UNUSED) continue;
            size_t n;
            const unsigned char *u = (const unsigned char *)hsd_tok_str(t, id, &n);
            uint32_t prev = 0x2581;
            for (size_t i = 0; i < n;) {
                int k;
                uint32_t cp = hsd_utf8_decode(u + i, &k);
                if (cp == 0x2581 && prev != 0x2581 && hsd_u64map_put(&m->glue, prev, 1))
                    return hsd_error(HSD_ERR_NOMEM, "oom");
                prev = cp;
                i += (size_t)k;
            }
        }
    }
    m->cache = calloc(CACHE_SLOTS, sizeof *m->cache);
    if (!m->cache) return hsd_error(HSD_ERR_NOMEM, "oom");
    for (int i = 0; i < CACHE_SHARDS; i++) pthread_mutex_init(&m->locks[i], NULL);
    return HSD_OK;
}

/* tokenizer.json "model" of type BPE: vocab {token: id}, merges ["a b"] or [["a","b"]]. */
hsd_status hsd_bpe_create(hsd_tokenizer *t, const void *json_model) {
    const hj_val *jm = json_model;
    const hj_val *vocab = hj_get(jm, "vocab"), *merges = hj_get(jm, "merges");
    if (!vocab || vocab->type != HJ_OBJ)
        return hsd_error(HSD_ERR_PARSE, "%s: model.vocab must be an object", t->name);
    if (merges && merges->type != HJ_ARR && merges->type != HJ_NULL)
        return hsd_error(HSD_ERR_PARSE, "%s: model.merges must be an array", t->name);
    for (uint32_t i = 0; i < vocab->n; i++) {
        const hj_val *k = &vocab->u.items[2 * i], *v = &vocab->u.items[2 * i + 1];
        if (v->type != HJ_NUM || v->u.num < 0 || v->u.num >= t->n_ids || v->u.num != (int32_t)v->u.num)
            return hsd_error(HSD_ERR_PARSE, "%s: model.vocab[\"%.*s\"] is not a valid id (byte %zu)",
                             t->name, (int)k->n, k->u.s, v->off);
        hsd_status s = hsd_tok_set_token(t, (int32_t)v->u.num, k->u.s, k->n);
        if (s) return s;
    }
    size_t nm = merges && merges->type == HJ_ARR ? merges->n : 0;
    const char **l = malloc((nm + 1) * sizeof *l), **r = malloc((nm + 1) * sizeof *r);
    uint32_t *ll = malloc((nm + 1) * sizeof *ll), *rl = malloc((nm + 1) * sizeof *rl);
    hsd_status s = HSD_OK;
    if (!l || !r || !ll || !rl) s = hsd_error(HSD_ERR_NOMEM, "oom");
    for (size_t i = 0; i < nm && !s; i++) {
        const hj_val *e = &merges->u.items[i];
        if (e->type == HJ_STR) {
            const char *sp = memchr(e->u.s, ' ', e->n);
            if (!sp) {
                s = hsd_error(HSD_ERR_PARSE, "%s: model.merges[%zu] \"%.*s\" has no space (byte %zu)",
                              t->name, i, (int)e->n, e->u.s, e->off);
                break;
            }
            l[i] = e->u.s;
            ll[i] = (uint32_t)(sp - e->u.s);
            r[i] = sp + 1;
            rl[i] = e->n - ll[i] - 1;
        } else if (e->type == HJ_ARR && e->n == 2 && e->u.items[0].type == HJ_STR &&
                   e->u.items[1].type == HJ_STR) {
            l[i] = e->u.items[0].u.s;
            ll[i] = e->u.items[0].n;
            r[i] = e->u.items[1].u.s;
            rl[i] = e->u.items[1].n;
        } else {
            s = hsd_error(HSD_ERR_PARSE, "%s: model.merges[%zu] must be \"a b\" or [\"a\", \"b\"] (byte %zu)",
                          t->name, i, e->off);
        }
    }
    if (!s) {
        hsd_bpe_opts o = {0};
        o.byte_fallback = hj_truthy(hj_get(jm, "byte_fallback"));
        o.fuse_unk = hj_truthy(hj_get(jm, "fuse_unk"));
        o.ignore_merges = hj_truthy(hj_get(jm, "ignore_merges"));
        o.unk_id = -1;
        const hj_val *unk = hj_get(jm, "unk_token");
        char *pre = NULL, *suf = NULL;
        if (unk && unk->type == HJ_STR) {
            o.unk_id = hsd_strmap_get(&t->str_to_id, unk->u.s, unk->n);
            if (o.unk_id < 0)
                s = hsd_error(HSD_ERR_PARSE, "%s: model.unk_token \"%.*s\" is not in the vocabulary",
                              t->name, (int)unk->n, unk->u.s);
        }
        const hj_val *p = hj_get(jm, "continuing_subword_prefix"), *x = hj_get(jm, "end_of_word_suffix");
        if (p && p->type == HJ_STR) pre = strndup(p->u.s, p->n);
        if (x && x->type == HJ_STR) suf = strndup(x->u.s, x->n);
        o.cont_prefix = pre;
        o.eow_suffix = suf;
        if (!s) s = hsd_bpe_build(t, &o, nm, l, ll, r, rl);
        if (!s) t->unk_id = o.unk_id;
        free(pre);
        free(suf);
    }
    free(l), free(r), free(ll), free(rl);
    return s;
}

/* ---- introspection for writers of other formats (models/gguf_vocab.c) ---- */

void hsd_bpe_info_get(const hsd_tokenizer *t, hsd_bpe_info *out) {
    const bpe *m = t->model.impl;
    *out = (hsd_bpe_info){.byte_fallback = m->byte_fallback,
                          .fuse_unk = m->fuse_unk,
                          .ignore_merges = m->ignore_merges,
                          .affixes = m->plen || m->slen,
                          .unk_id = m->unk_id};
}

static int cmp_rank(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

hsd_status hsd_bpe_merges_get(const hsd_tokenizer *t, int32_t **out, size_t *n) {
    const bpe *m = t->model.impl;
    *out = NULL, *n = 0;
    /* (rank, slot) pairs sorted by rank give the merges back in their file order */
    uint64_t *order = malloc((m->merges.n ? m->merges.n : 1) * sizeof *order);
    int32_t *tri = malloc((m->merges.n ? m->merges.n : 1) * 3 * sizeof *tri);
    if (!order || !tri) {
        free(order);
        free(tri);
        return hsd_error(HSD_ERR_NOMEM, "%s: out of memory", t->name);
    }
    size_t k = 0;
    for (size_t i = 0; i < m->merges.cap; i++)
        if (m->merges.slots[i].key != UINT64_MAX)
            order[k++] = (m->merges.slots[i].val >> 32) << 32 | (uint64_t)i;
    qsort(order, k, sizeof *order, cmp_rank);
    for (size_t i = 0; i < k; i++) {
        const hsd_u64map_slot *sl = &m->merges.slots[(uint32_t)order[i]];
        tri[3 * i] = (int32_t)(sl->key >> 32);
        tri[3 * i + 1] = (int32_t)(uint32_t)sl->key;
        tri[3 * i + 2] = (int32_t)(uint32_t)sl->val;
    }
    free(order);
    *out = tri, *n = k;
    return HSD_OK;
}

hsd_status hsd_bpe_first_unreached(const hsd_tokenizer *t, int32_t *first) {
    const bpe *mm = t->model.impl;
    bpe m = *mm; /* the same model without the whole-word shortcut */
    m.ignore_merges = false;
    bpe_scratch s = {0};
    hsd_buf key = {0};
    hsd_ids ids = {0};
    hsd_status st = HSD_OK;
    *first = -1;
    for (int32_t id = 0; id < t->n_ids && *first < 0 && !st; id++) {
        if (t->flags[id] & (HSD_TOKF_UNUSED | HSD_TOKF_ADDED | HSD_TOKF_BYTE)) continue;
        size_t n;
        const char *str = hsd_tok_str(t, id, &n);
        key.n = 0;
        if (m.byte_level ? hsd_bytelevel_to_bytes(str, n, &key) != 0
                         : hsd_buf_append(&key, str, n) != 0)
            continue; /* not producible from text */
        if (hsd_strmap_get(&m.keys, key.p, key.n) != id) continue; /* a duplicate string */
        ids.n = 0;
        if ((st = bpe_word(t, &m, &s, key.p, key.n, &ids))) break;
        if (ids.n != 1 || ids.p[0] != id) *first = id;
    }
    free(s.sym);
    free(s.heap);
    hsd_buf_free(&s.tmp);
    hsd_buf_free(&key);
    free(ids.p);
    return st;
}
