/* WordPiece: greedy longest-match-first over each word, continuation pieces prefixed with
 * "##"; a word with an unmatchable part (or too long) becomes one unknown token. */
#include <stdlib.h>
#include <string.h>

#include "lib/base/error.h"
#include "lib/base/utf8.h"
#include "tokenize/json.h"
#include "tokenize/tokenizer.h"

typedef struct {
    char *prefix;
    size_t plen;
    int32_t unk_id;
    size_t max_chars;
} wordpiece;

static hsd_status wp_tokenize(const hsd_tokenizer *t, const char *w, size_t n, hsd_ids *out,
                              hsd_scratch *sc) {
    const wordpiece *m = t->model.impl;
    size_t nchars = 0;
    for (size_t i = 0; i < n; i += (size_t)hsd_utf8_len((unsigned char)w[i])) nchars++;
    size_t first = out->n;
    hsd_buf *tmp = &sc->c;
    if (nchars <= m->max_chars) {
        size_t start = 0;
        while (start < n) {
            size_t end = n;
            int32_t found = -1;
            while (start < end) {
                tmp->n = 0;
                if ((start > 0 && hsd_buf_append(tmp, m->prefix, m->plen)) ||
                    hsd_buf_append(tmp, w + start, end - start))
                    return hsd_error(HSD_ERR_NOMEM, "oom");
                found = hsd_strmap_get(&t->str_to_id, tmp->p, tmp->n);
                if (found >= 0) break;
                do end--; /* step back one character */
                while (end > start && ((unsigned char)w[end] & 0xC0) == 0x80);
            }
            if (found < 0) break;
            if (hsd_ids_push(out, found)) return hsd_error(HSD_ERR_NOMEM, "oom");
            start = end;
        }
        if (start >= n) return HSD_OK;
    }
    out->n = first;
    if (m->unk_id < 0)
        return hsd_error(HSD_ERR_PARSE, "%s: WordPiece has no unk_token for unknown text", t->name);
    return hsd_ids_push(out, m->unk_id) ? hsd_error(HSD_ERR_NOMEM, "oom") : HSD_OK;
}

static void wp_free(void *p) {
    wordpiece *m = p;
    if (m) free(m->prefix);
    free(m);
}

hsd_status hsd_wordpiece_create(hsd_tokenizer *t, const void *json_model) {
    const hj_val *jm = json_model, *vocab = hj_get(jm, "vocab");
    wordpiece *m = calloc(1, sizeof *m);
    if (!m) return hsd_error(HSD_ERR_NOMEM, "oom");
    t->model = (hsd_tok_model){HSD_MODEL_WORDPIECE, m, wp_tokenize, wp_free};
    for (uint32_t i = 0; i < vocab->n; i++) {
        const hj_val *k = &vocab->u.items[2 * i], *v = &vocab->u.items[2 * i + 1];
        if (v->type != HJ_NUM || v->u.num < 0 || v->u.num >= t->n_ids)
            return hsd_error(HSD_ERR_PARSE, "%s: model.vocab[\"%.*s\"] is not a valid id (byte %zu)",
                             t->name, (int)k->n, k->u.s, v->off);
        hsd_status s = hsd_tok_set_token(t, (int32_t)v->u.num, k->u.s, k->n);
        if (s) return s;
    }
    const hj_val *p = hj_get(jm, "continuing_subword_prefix"), *unk = hj_get(jm, "unk_token"),
                 *mx = hj_get(jm, "max_input_chars_per_word");
    m->prefix = p && p->type == HJ_STR ? strndup(p->u.s, p->n) : strdup("##");
    m->plen = strlen(m->prefix);
    /* negative/NaN → the default; huge → no limit (a direct cast would be UB) */
    m->max_chars = !(mx && mx->type == HJ_NUM && mx->u.num >= 0) ? 100
                   : mx->u.num >= 1e18                          ? SIZE_MAX
                                                                : (size_t)mx->u.num;
    m->unk_id = unk && unk->type == HJ_STR ? hsd_strmap_get(&t->str_to_id, unk->u.s, unk->n) : -1;
    if (unk && unk->type == HJ_STR && m->unk_id < 0)
        return hsd_error(HSD_ERR_PARSE, "%s: model.unk_token \"%.*s\" is not in the vocabulary",
                         t->name, (int)unk->n, unk->u.s);
    t->unk_id = m->unk_id;
    return HSD_OK;
}
