/* T ∩ D by surface bytes, built once per pair (lib/engine/vocab_map.h states the rule). */
#include "lib/engine/vocab_map.h"

#include <stdlib.h>
#include <string.h>

#include "lib/base/error.h"
#include "lib/base/map.h"
#include "tokenize/tokenizer.h"

/* Does `a` represent a surface better than `b` (both spelling it)? The one tie-breaking rule:
 * not a byte-fallback token first, then the smaller id. */
static bool better(const hsd_tokenizer *tok, int32_t a, int32_t b) {
    bool ba = hsd_tok_is_byte(tok, a), bb = hsd_tok_is_byte(tok, b);
    if (ba != bb) return !ba;
    return a < b;
}

/* The surface of `id` when it can match (used, non-empty; special only with `specials`). */
static const uint8_t *surface(const hsd_tokenizer *tok, int32_t id, bool specials, size_t *len) {
    if (!hsd_tokenizer_id_to_token(tok, id)) return NULL;
    if (hsd_tokenizer_is_special(tok, id) && !specials) return NULL;
    const uint8_t *b = hsd_tokenizer_token_bytes(tok, id, len);
    return b && *len ? b : NULL;
}

/* surface -> representative id, text and special surfaces apart */
typedef struct reps {
    hsd_strmap text, special;
} reps;

static hsd_status reps_build(const hsd_tokenizer *tok, bool specials, reps *r) {
    int32_t n = hsd_tokenizer_vocab_size(tok);
    if (hsd_strmap_init(&r->text, (size_t)n) || hsd_strmap_init(&r->special, 64))
        return hsd_error(HSD_ERR_NOMEM, "vocabulary map: out of memory (%d ids)", (int)n);
    for (int32_t id = 0; id < n; id++) {
        size_t len;
        const uint8_t *b = surface(tok, id, specials, &len);
        if (!b) continue;
        hsd_strmap *m = hsd_tokenizer_is_special(tok, id) ? &r->special : &r->text;
        int32_t cur = hsd_strmap_get(m, b, len);
        /* hsd_strmap_put replaces the value of a key already there */
        if ((cur < 0 || better(tok, id, cur)) && hsd_strmap_put(m, b, len, id))
            return hsd_error(HSD_ERR_NOMEM, "vocabulary map: out of memory");
    }
    return HSD_OK;
}

static void reps_free(reps *r) {
    hsd_strmap_free(&r->text);
    hsd_strmap_free(&r->special);
}

/* to[id] = the other side's representative of id's surface, or -1; returns the count */
static int32_t fill(const hsd_tokenizer *tok, bool specials, const reps *other, int32_t *to) {
    int32_t n = hsd_tokenizer_vocab_size(tok), k = 0;
    for (int32_t id = 0; id < n; id++) {
        size_t len;
        const uint8_t *b = surface(tok, id, specials, &len);
        to[id] = !b ? -1
                    : hsd_strmap_get(hsd_tokenizer_is_special(tok, id) ? &other->special
                                                                        : &other->text,
                                     b, len);
        k += to[id] >= 0;
    }
    return k;
}

static bool vocab_identical(const hsd_tokenizer *t, const hsd_tokenizer *d) {
    int32_t n = hsd_tokenizer_vocab_size(t);
    if (n != hsd_tokenizer_vocab_size(d)) return false;
    for (int32_t id = 0; id < n; id++) {
        const char *a = hsd_tokenizer_id_to_token(t, id), *b = hsd_tokenizer_id_to_token(d, id);
        if (!a != !b) return false;
        if (!a) continue;
        size_t la, lb;
        const uint8_t *sa = hsd_tokenizer_token_bytes(t, id, &la);
        const uint8_t *sb = hsd_tokenizer_token_bytes(d, id, &lb);
        if (strcmp(a, b) || la != lb || (la && memcmp(sa, sb, la))) return false;
    }
    return true;
}

hsd_status hsd_vocab_map_build(const hsd_tokenizer *t, const hsd_tokenizer *d, bool specials,
                               hsd_vocab_map *out) {
    if (!t || !d || !out)
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_vocab_map_build: %s is NULL",
                         !t ? "target tokenizer" : !d ? "drafter tokenizer" : "out");
    memset(out, 0, sizeof *out);
    out->n_t = hsd_tokenizer_vocab_size(t);
    out->n_d = hsd_tokenizer_vocab_size(d);
    reps rt = {0}, rd = {0};
    out->d2t = malloc((size_t)(out->n_d > 0 ? out->n_d : 1) * sizeof *out->d2t);
    out->t2d = malloc((size_t)(out->n_t > 0 ? out->n_t : 1) * sizeof *out->t2d);
    hsd_status s = !out->d2t || !out->t2d
                       ? hsd_error(HSD_ERR_NOMEM, "vocabulary map: out of memory")
                       : HSD_OK;
    if (!s) s = reps_build(t, specials, &rt);
    if (!s) s = reps_build(d, specials, &rd);
    if (!s) {
        out->n_d_mapped = fill(d, specials, &rt, out->d2t);
        out->n_t_mapped = fill(t, specials, &rd, out->t2d);
        /* a shared surface is one whose target representative is itself mapped */
        for (int32_t id = 0; id < out->n_t; id++)
            if (out->t2d[id] >= 0 && out->d2t[out->t2d[id]] == id) out->n_shared++;
        out->identical = vocab_identical(t, d);
    }
    reps_free(&rt);
    reps_free(&rd);
    if (s) hsd_vocab_map_free(out);
    return s;
}

void hsd_vocab_map_free(hsd_vocab_map *m) {
    if (!m) return;
    free(m->d2t);
    free(m->t2d);
    memset(m, 0, sizeof *m);
}
