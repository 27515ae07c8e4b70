/* Token trie (lib/engine/token_trie.h). Built in two passes without sorting the vocabulary:
 *   1. insert every surface into a temporary trie whose child lists are linked lists kept in
 *      byte order, switching to 256-entry tables for wide nodes (the root among them);
 *   2. renumber the nodes breadth-first so that each node's children become one consecutive,
 *      byte-sorted run, and lay the ids out per node, smallest id first.
 * Node arrays are sized once from the total surface length; only the wide-node tables grow. */
#include "lib/engine/token_trie.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "lib/base/error.h"

/* Everything one step reads about a node, in one 12-byte record (one cache miss, not four);
 * the child bytes sit apart in byte[] so a child search scans a dense run. */
typedef struct trie_node {
    int32_t first;   /* index of the first child (children are consecutive) */
    int32_t id_off;  /* the node's ids are ids[id_off .. id_off + n_ids) */
    uint16_t nchild; /* at most 256 */
    uint16_t n_ids;  /* ids sharing this surface */
} trie_node;

struct hsd_token_trie {
    int32_t n_nodes, n_tokens;
    size_t max_len;
    int32_t root[256]; /* child of the root per byte, -1 if none */
    uint8_t *byte;     /* [n_nodes] the byte on the edge into the node */
    trie_node *node;   /* [n_nodes] */
    int32_t *ids;      /* [n_tokens] */
};

/* Large build arrays ask for transparent huge pages: a 151k-token vocabulary touches ~10 MB,
 * and taking that as 2500 small page faults costs more than the insertion itself. */
static void *big_alloc(size_t n) {
#ifdef MADV_HUGEPAGE
    const size_t huge = (size_t)1 << 21;
    if (n >= huge) {
        size_t sz = (n + huge - 1) & ~(huge - 1);
        void *p = aligned_alloc(huge, sz);
        if (p) madvise(p, sz, MADV_HUGEPAGE);
        return p;
    }
#endif
    return malloc(n);
}

/* The temporary trie of pass 1. Child lists are linked lists in byte order while short; a node
 * that gets more than DENSE_AT children switches to a 256-entry table (the root has one from
 * the start), so that wide nodes (the byte after a leading space) cost one lookup per token. */
#define DENSE_AT 8
typedef struct build_node {
    int32_t child, sibling; /* first child / next sibling in byte order, -1 = none */
    int32_t dense;          /* table index of a wide node, -1 = none */
    uint8_t byte;
    uint8_t nchild; /* children counted up to DENSE_AT + 1 */
} build_node;       /* one record per node: an insertion step touches one cache line */

typedef struct build_trie {
    build_node *node;
    int32_t *tables; /* n_tables * 256 child entries, -1 = none */
    int32_t n, n_tables, cap_tables;
} build_trie;

static int32_t build_new(build_trie *b, uint8_t c) {
    int32_t k = b->n++;
    b->node[k] = (build_node){-1, -1, -1, c, 0};
    return k;
}

/* Gives `node` a 256-entry table holding its current children; -1 on allocation failure. */
static int build_densify(build_trie *b, int32_t node) {
    if (b->n_tables == b->cap_tables) {
        int32_t cap = b->cap_tables ? b->cap_tables * 2 : 256;
        int32_t *p = realloc(b->tables, (size_t)cap * 256 * sizeof *p);
        if (!p) return -1;
        b->tables = p;
        b->cap_tables = cap;
    }
    int32_t *tab = b->tables + (size_t)b->n_tables * 256;
    memset(tab, 0xff, 256 * sizeof *tab);
    for (int32_t c = b->node[node].child; c >= 0; c = b->node[c].sibling) tab[b->node[c].byte] = c;
    b->node[node].dense = b->n_tables++;
    return 0;
}

/* The child of `node` along c, created when missing; -1 on allocation failure. */
static int32_t build_child(build_trie *b, int32_t node, uint8_t c) {
    build_node *nd = &b->node[node];
    if (nd->dense >= 0) {
        int32_t *slot = &b->tables[(size_t)nd->dense * 256 + c];
        if (*slot < 0) *slot = build_new(b, c);
        return *slot;
    }
    int32_t *link = &nd->child;
    while (*link >= 0 && b->node[*link].byte < c) link = &b->node[*link].sibling;
    if (*link >= 0 && b->node[*link].byte == c) return *link;
    int32_t k = build_new(b, c);
    b->node[k].sibling = *link;
    *link = k;
    if (++b->node[node].nchild > DENSE_AT && build_densify(b, node)) return -1;
    return k;
}

void hsd_token_trie_free(hsd_token_trie *t) {
    if (!t) return;
    free(t->byte);
    free(t->node);
    free(t->ids);
    free(t);
}

/* Surfaces come from a callback so that tokenizers and plain string lists share one builder. */
typedef const uint8_t *(*surface_fn)(const void *src, int32_t id, size_t *len);

static hsd_status trie_build(const void *src, int32_t n_ids, surface_fn surface,
                             hsd_token_trie **out) {
    size_t total = 0;
    int32_t n_tok = 0;
    for (int32_t id = 0; id < n_ids; id++) {
        size_t len = 0;
        if (surface(src, id, &len) && len) {
            total += len;
            n_tok++;
        }
    }
    if (total >= (size_t)INT32_MAX)
        return hsd_error(HSD_ERR_UNSUPPORTED, "token trie: %zu surface bytes exceed 2^31", total);
    size_t cap = total + 1;
    build_trie b = {0};
    b.node = big_alloc(cap * sizeof *b.node);
    int32_t *end_node = malloc(((size_t)n_tok + 1) * sizeof *end_node);
    int32_t *order = big_alloc(cap * sizeof *order); /* new number -> build node */
    int32_t *renum = big_alloc(cap * sizeof *renum); /* build node -> new number */
    hsd_token_trie *t = calloc(1, sizeof *t);
    hsd_status st = HSD_OK;
    if (!b.node || !end_node || !order || !renum || !t) {
        st = hsd_error(HSD_ERR_NOMEM, "token trie: out of memory for %zu bytes", total);
        goto done;
    }
    build_new(&b, 0);
    if (build_densify(&b, 0)) {
        st = hsd_error(HSD_ERR_NOMEM, "token trie: out of memory");
        goto done;
    }

    /* pass 1: insert */
    int32_t k = 0;
    for (int32_t id = 0; id < n_ids; id++) {
        size_t len = 0;
        const uint8_t *s = surface(src, id, &len);
        if (!s || !len) continue;
        int32_t node = 0;
        for (size_t i = 0; i < len && node >= 0; i++) node = build_child(&b, node, s[i]);
        if (node < 0) {
            st = hsd_error(HSD_ERR_NOMEM, "token trie: out of memory at id %d", id);
            goto done;
        }
        end_node[k++] = node;
        if (len > t->max_len) t->max_len = len;
    }

    /* pass 2: breadth-first renumbering; order[] doubles as the queue */
    t->n_nodes = b.n;
    t->n_tokens = n_tok;
    t->byte = big_alloc((size_t)b.n);
    t->node = big_alloc((size_t)b.n * sizeof *t->node);
    if (t->node) memset(t->node, 0, (size_t)b.n * sizeof *t->node);
    t->ids = malloc(((size_t)n_tok + 1) * sizeof *t->ids);
    if (!t->byte || !t->node || !t->ids) {
        st = hsd_error(HSD_ERR_NOMEM, "token trie: out of memory for %d nodes", b.n);
        goto done;
    }
    int32_t next = 1;
    order[0] = 0;
    renum[0] = 0;
    for (int32_t u = 0; u < next; u++) {
        int32_t bu = order[u];
        t->byte[u] = b.node[bu].byte;
        t->node[u].first = next;
        int32_t nc = 0;
        if (b.node[bu].dense >= 0) {
            const int32_t *tab = b.tables + (size_t)b.node[bu].dense * 256;
            for (int c = 0; c < 256; c++)
                if (tab[c] >= 0) {
                    order[next] = tab[c];
                    renum[tab[c]] = next++;
                    nc++;
                }
        } else {
            for (int32_t c = b.node[bu].child; c >= 0; c = b.node[c].sibling) {
                order[next] = c;
                renum[c] = next++;
                nc++;
            }
        }
        t->node[u].nchild = (uint16_t)nc;
    }
    for (int c = 0; c < 256; c++) t->root[c] = b.tables[c] >= 0 ? renum[b.tables[c]] : -1;

    /* ids per node: count, prefix-sum, fill in id order (so smallest id first) */
    for (int32_t j = 0; j < n_tok; j++) {
        end_node[j] = renum[end_node[j]];
        if (t->node[end_node[j]].n_ids == UINT16_MAX) {
            st = hsd_error(HSD_ERR_UNSUPPORTED, "token trie: more than %d ids share a surface",
                           UINT16_MAX - 1);
            goto done;
        }
        t->node[end_node[j]].n_ids++;
    }
    int32_t *fill = renum; /* reuse: renum is no longer needed once end_node is translated */
    for (int32_t u = 0, off = 0; u < b.n; u++) {
        t->node[u].id_off = fill[u] = off;
        off += t->node[u].n_ids;
    }
    k = 0;
    for (int32_t id = 0; id < n_ids; id++) {
        size_t len = 0;
        const uint8_t *s = surface(src, id, &len);
        if (!s || !len) continue;
        t->ids[fill[end_node[k++]]++] = id;
    }
done:
    free(b.node);
    free(b.tables);
    free(end_node);
    free(order);
    free(renum);
    if (st) {
        hsd_token_trie_free(t);
        t = NULL;
    }
    *out = t;
    return st;
}

static const uint8_t *tokenizer_surface(const void *src, int32_t id, size_t *len) {
    const hsd_tokenizer *tok = src;
    *len = 0;
    if (!hsd_tokenizer_id_to_token(tok, id) || hsd_tokenizer_is_special(tok, id)) return NULL;
    return hsd_tokenizer_token_bytes(tok, id, len);
}

hsd_status hsd_token_trie_build(const hsd_tokenizer *tok, hsd_token_trie **out) {
    if (!out) return hsd_error(HSD_ERR_INVALID_ARG, "hsd_token_trie_build: out is NULL");
    *out = NULL;
    if (!tok) return hsd_error(HSD_ERR_INVALID_ARG, "hsd_token_trie_build: tokenizer is NULL");
    return trie_build(tok, hsd_tokenizer_vocab_size(tok), tokenizer_surface, out);
}

typedef struct string_list {
    const uint8_t *const *strs;
    const size_t *lens;
} string_list;

static const uint8_t *list_surface(const void *src, int32_t id, size_t *len) {
    const string_list *l = src;
    *len = l->strs[id] ? l->lens[id] : 0;
    return l->strs[id];
}

hsd_status hsd_token_trie_build_strings(const uint8_t *const *strs, const size_t *lens, int32_t n,
                                        hsd_token_trie **out) {
    if (!out) return hsd_error(HSD_ERR_INVALID_ARG, "token trie: NULL out");
    *out = NULL;
    if (n < 0 || (n > 0 && (!strs || !lens)))
        return hsd_error(HSD_ERR_INVALID_ARG, "token trie: NULL strings or lengths for %d entries",
                         n);
    string_list l = {strs, lens};
    return trie_build(&l, n, list_surface, out);
}

int32_t hsd_token_trie_n_nodes(const hsd_token_trie *t) {
    return t ? t->n_nodes : 0;
}
int32_t hsd_token_trie_n_tokens(const hsd_token_trie *t) {
    return t ? t->n_tokens : 0;
}
size_t hsd_token_trie_max_len(const hsd_token_trie *t) {
    return t ? t->max_len : 0;
}

static inline int32_t step(const hsd_token_trie *t, int32_t node, uint8_t c) {
    if (node == 0) return t->root[c];
    if (node < 0 || node >= t->n_nodes) return -1;
    int32_t lo = t->node[node].first, hi = lo + t->node[node].nchild, end = hi;
    const uint8_t *by = t->byte;
    /* most nodes have a handful of children: scan; wide ones: binary search */
    if (hi - lo <= 8) {
        for (int32_t i = lo; i < hi; i++)
            if (by[i] >= c) return by[i] == c ? i : -1;
        return -1;
    }
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (by[mid] < c)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < end && by[lo] == c ? lo : -1;
}

int32_t hsd_token_trie_step(const hsd_token_trie *t, int32_t node, uint8_t c) {
    return t ? step(t, node, c) : -1;
}

int32_t hsd_token_trie_walk(const hsd_token_trie *t, int32_t node, const uint8_t *s, size_t n) {
    if (!t || (!s && n)) return -1;
    for (size_t i = 0; i < n && node >= 0; i++) node = step(t, node, s[i]);
    return node;
}

const int32_t *hsd_token_trie_ids(const hsd_token_trie *t, int32_t node, size_t *n) {
    if (!t || node < 0 || node >= t->n_nodes) {
        if (n) *n = 0;
        return NULL;
    }
    if (n) *n = t->node[node].n_ids;
    return t->ids + t->node[node].id_off;
}

int32_t hsd_token_trie_children(const hsd_token_trie *t, int32_t node, int32_t *first) {
    *first = 0;
    if (!t || node < 0 || node >= t->n_nodes) return 0;
    *first = t->node[node].first;
    return t->node[node].nchild;
}

uint8_t hsd_token_trie_byte(const hsd_token_trie *t, int32_t node) {
    return t && node > 0 && node < t->n_nodes ? t->byte[node] : 0;
}

bool hsd_token_trie_has_children(const hsd_token_trie *t, int32_t node) {
    return t && node >= 0 && node < t->n_nodes && t->node[node].nchild > 0;
}

size_t hsd_token_trie_prefixes(const hsd_token_trie *t, const uint8_t *s, size_t n,
                               hsd_token_trie_match *out, size_t cap) {
    size_t found = 0;
    int32_t node = 0;
    if (!t || (!s && n) || (!out && cap)) return 0;
    for (size_t i = 0; i < n; i++) {
        node = step(t, node, s[i]);
        if (node < 0) break;
        uint32_t k = t->node[node].n_ids;
        if (k) {
            if (found < cap) out[found] = (hsd_token_trie_match){node, (uint32_t)(i + 1), k};
            found++;
        }
    }
    return found;
}
