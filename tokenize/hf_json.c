/* Loader for HuggingFace tokenizer.json: builds the pipeline stages from their JSON
 * descriptions. Every rejection names the field (e.g. pre_tokenizer.pretokenizers[1].type)
 * and the byte offset in the file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/error.h"
#include "tokenize/json.h"
#include "tokenize/tokenizer.h"

#define GPT2_REGEX "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"

typedef struct {
    hsd_tokenizer *t;
    char path[256]; /* current field path, for messages */
} ctx;

static hsd_status bad(ctx *c, const hj_val *v, const char *what) {
    return hsd_error(HSD_ERR_PARSE, "%s: %s: %s (byte %zu)", c->t->name, c->path, what,
                     v ? v->off : 0);
}

static hsd_status unsupported(ctx *c, const hj_val *v) {
    return hsd_error(HSD_ERR_UNSUPPORTED, "%s: %s: type \"%.*s\" is not supported (byte %zu)",
                     c->t->name, c->path, v ? (int)v->n : 0, v ? v->u.s : "", v ? v->off : 0);
}

static char *dup_str(const hj_val *v, size_t *len) {
    char *s = malloc(v->n + 1);
    if (!s) return NULL;
    memcpy(s, v->u.s, v->n);
    s[v->n] = 0;
    if (len) *len = v->n;
    return s;
}

static bool get_bool(const hj_val *obj, const char *key, bool dflt) {
    const hj_val *v = hj_get(obj, key);
    if (!v || v->type == HJ_NULL) return dflt;
    return v->type == HJ_TRUE;
}

/* {"String": s} or {"Regex": r} → compiled regex (String is matched literally). */
static hsd_status pattern(ctx *c, const hj_val *obj, hsd_regex **re, const hj_val **str) {
    const hj_val *p = hj_get(obj, "pattern");
    if (!p || p->type != HJ_OBJ) return bad(c, p ? p : obj, "missing \"pattern\" object");
    const hj_val *s = hj_get(p, "String"), *r = hj_get(p, "Regex");
    if (str) *str = s && s->type == HJ_STR ? s : NULL;
    char where[512];
    snprintf(where, sizeof where, "%s: %s (byte %zu)", c->t->name, c->path, p->off);
    if (s && s->type == HJ_STR) return hsd_regex_compile(s->u.s, s->n, 1, where, re);
    if (r && r->type == HJ_STR) return hsd_regex_compile(r->u.s, r->n, 0, where, re);
    return bad(c, p, "pattern needs \"String\" or \"Regex\"");
}

static hsd_prepend_scheme prepend_scheme(const hj_val *obj) {
    const hj_val *ps = hj_get(obj, "prepend_scheme");
    if (hj_is_str(ps, "first")) return HSD_PREPEND_FIRST;
    if (hj_is_str(ps, "never")) return HSD_PREPEND_NEVER;
    if (ps && ps->type == HJ_STR) return HSD_PREPEND_ALWAYS;
    /* legacy files: add_prefix_space */
    return get_bool(obj, "add_prefix_space", true) ? HSD_PREPEND_ALWAYS : HSD_PREPEND_NEVER;
}

static hsd_status repl_char(ctx *c, const hj_val *obj, char *out, size_t *len) {
    const hj_val *r = hj_get(obj, "replacement");
    if (!r || r->type != HJ_STR || r->n == 0 || r->n > 7)
        return bad(c, r ? r : obj, "\"replacement\" must be one character");
    memcpy(out, r->u.s, r->n);
    out[r->n] = 0;
    *len = r->n;
    return HSD_OK;
}

/* ------------------------------------------------------------------ normalizers ---- */

static hsd_status add_norm(ctx *c, hsd_norm_step st) {
    hsd_tokenizer *t = c->t;
    hsd_norm_step *p = realloc(t->norm, (t->n_norm + 1) * sizeof *p);
    if (!p) return hsd_error(HSD_ERR_NOMEM, "oom");
    t->norm = p;
    t->norm[t->n_norm++] = st;
    return HSD_OK;
}

static hsd_status parse_norm(ctx *c, const hj_val *v) {
    if (!v || v->type == HJ_NULL) return HSD_OK;
    const hj_val *ty = hj_get(v, "type");
    if (!ty || ty->type != HJ_STR) return bad(c, v, "missing \"type\"");
    hsd_norm_step st;
    memset(&st, 0, sizeof st);
    size_t plen = strlen(c->path);
    if (hj_is_str(ty, "Sequence")) {
        const hj_val *arr = hj_get(v, "normalizers");
        if (!arr || arr->type != HJ_ARR) return bad(c, v, "Sequence needs \"normalizers\"");
        for (uint32_t i = 0; i < arr->n; i++) {
            snprintf(c->path + plen, sizeof c->path - plen, ".normalizers[%u]", i);
            hsd_status s = parse_norm(c, &arr->u.items[i]);
            if (s) return s;
            c->path[plen] = 0;
        }
        return HSD_OK;
    }
    if (hj_is_str(ty, "NFC")) st.type = HSD_NORM_NFC;
    else if (hj_is_str(ty, "NFD")) st.type = HSD_NORM_NFD;
    else if (hj_is_str(ty, "NFKC")) st.type = HSD_NORM_NFKC;
    else if (hj_is_str(ty, "NFKD")) st.type = HSD_NORM_NFKD;
    else if (hj_is_str(ty, "Lowercase")) st.type = HSD_NORM_LOWERCASE;
    else if (hj_is_str(ty, "StripAccents")) st.type = HSD_NORM_STRIP_ACCENTS;
    else if (hj_is_str(ty, "Nmt")) st.type = HSD_NORM_NMT;
    else if (hj_is_str(ty, "Strip")) {
        st.type = HSD_NORM_STRIP;
        st.strip_left = get_bool(v, "strip_left", true);
        st.strip_right = get_bool(v, "strip_right", true);
    } else if (hj_is_str(ty, "Replace")) {
        st.type = HSD_NORM_REPLACE;
        hsd_status s = pattern(c, v, &st.re, NULL);
        if (s) return s;
        const hj_val *ct = hj_get(v, "content");
        if (!ct || ct->type != HJ_STR) {
            hsd_regex_free(st.re);
            return bad(c, v, "Replace needs \"content\"");
        }
        st.content = dup_str(ct, &st.content_len);
    } else if (hj_is_str(ty, "Prepend")) {
        st.type = HSD_NORM_PREPEND;
        const hj_val *p = hj_get(v, "prepend");
        if (!p || p->type != HJ_STR) return bad(c, v, "Prepend needs \"prepend\"");
        st.content = dup_str(p, &st.content_len);
    } else if (hj_is_str(ty, "BertNormalizer")) {
        st.type = HSD_NORM_BERT;
        st.bert_clean = get_bool(v, "clean_text", true);
        st.bert_chinese = get_bool(v, "handle_chinese_chars", true);
        st.bert_lowercase = get_bool(v, "lowercase", true);
        /* strip_accents: null means "same as lowercase" */
        st.bert_strip_accents = get_bool(v, "strip_accents", st.bert_lowercase);
    } else if (hj_is_str(ty, "Precompiled")) {
        const hj_val *m = hj_get(v, "precompiled_charsmap");
        if (m && m->type == HJ_STR && m->n > 0) return unsupported(c, ty);
        return HSD_OK; /* an empty charsmap is the identity */
    } else {
        return unsupported(c, ty);
    }
    return add_norm(c, st);
}

/* ------------------------------------------------------------------ pre-tokenizers ---- */

static hsd_status add_pre(ctx *c, hsd_pre_step st) {
    hsd_tokenizer *t = c->t;
    hsd_pre_step *p = realloc(t->pre, (t->n_pre + 1) * sizeof *p);
    if (!p) return hsd_error(HSD_ERR_NOMEM, "oom");
    t->pre = p;
    t->pre[t->n_pre++] = st;
    return HSD_OK;
}

static hsd_status behavior(ctx *c, const hj_val *v, hsd_split_behavior *b) {
    const hj_val *bh = hj_get(v, "behavior");
    if (hj_is_str(bh, "Removed")) *b = HSD_SPLIT_REMOVED;
    else if (hj_is_str(bh, "Isolated")) *b = HSD_SPLIT_ISOLATED;
    else if (hj_is_str(bh, "MergedWithPrevious")) *b = HSD_SPLIT_MERGED_WITH_PREVIOUS;
    else if (hj_is_str(bh, "MergedWithNext")) *b = HSD_SPLIT_MERGED_WITH_NEXT;
    else if (hj_is_str(bh, "Contiguous")) *b = HSD_SPLIT_CONTIGUOUS;
    else return bad(c, bh ? bh : v, "unknown split behavior");
    return HSD_OK;
}

static hsd_status parse_pre(ctx *c, const hj_val *v) {
    if (!v || v->type == HJ_NULL) return HSD_OK;
    const hj_val *ty = hj_get(v, "type");
    if (!ty || ty->type != HJ_STR) return bad(c, v, "missing \"type\"");
    hsd_pre_step st;
    memset(&st, 0, sizeof st);
    hsd_status s = HSD_OK;
    size_t plen = strlen(c->path);
    if (hj_is_str(ty, "Sequence")) {
        const hj_val *arr = hj_get(v, "pretokenizers");
        if (!arr || arr->type != HJ_ARR) return bad(c, v, "Sequence needs \"pretokenizers\"");
        for (uint32_t i = 0; i < arr->n; i++) {
            snprintf(c->path + plen, sizeof c->path - plen, ".pretokenizers[%u]", i);
            if ((s = parse_pre(c, &arr->u.items[i]))) return s;
            c->path[plen] = 0;
        }
        return HSD_OK;
    }
    if (hj_is_str(ty, "Split")) {
        st.type = HSD_PRE_SPLIT;
        if ((s = behavior(c, v, &st.behavior))) return s;
        st.invert = get_bool(v, "invert", false);
        if ((s = pattern(c, v, &st.re, NULL))) return s;
    } else if (hj_is_str(ty, "ByteLevel")) {
        st.type = HSD_PRE_BYTELEVEL;
        st.add_prefix_space = get_bool(v, "add_prefix_space", true);
        if (get_bool(v, "use_regex", true) &&
            (s = hsd_regex_compile(GPT2_REGEX, strlen(GPT2_REGEX), 0, c->path, &st.re)))
            return s;
        c->t->byte_level = true;
    } else if (hj_is_str(ty, "Metaspace")) {
        st.type = HSD_PRE_METASPACE;
        if ((s = repl_char(c, v, st.repl, &st.repl_len))) return s;
        st.prepend = prepend_scheme(v);
        st.split = get_bool(v, "split", true);
    } else if (hj_is_str(ty, "Whitespace")) {
        st.type = HSD_PRE_WHITESPACE;
        /* \w+|[^\w\s]+ with the Rust regex crate's \w (a hand-counted length once made
         * this pattern end in a NUL, so non-word runs never matched) */
        hsd_buf pat = {0};
        if (hsd_regex_whitespace_pattern(&pat)) return hsd_error(HSD_ERR_NOMEM, "oom");
        s = hsd_regex_compile(pat.p, pat.n, 0, c->path, &st.re);
        hsd_buf_free(&pat);
        if (s) return s;
    } else if (hj_is_str(ty, "WhitespaceSplit")) {
        st.type = HSD_PRE_WHITESPACE_SPLIT;
    } else if (hj_is_str(ty, "UnicodeScripts")) {
        st.type = HSD_PRE_UNICODE_SCRIPTS;
    } else if (hj_is_str(ty, "BertPreTokenizer")) {
        st.type = HSD_PRE_BERT;
    } else if (hj_is_str(ty, "Digits")) {
        st.type = HSD_PRE_DIGITS;
        st.individual_digits = get_bool(v, "individual_digits", false);
    } else if (hj_is_str(ty, "Punctuation")) {
        st.type = HSD_PRE_PUNCTUATION;
        st.behavior = HSD_SPLIT_ISOLATED;
        if (hj_get(v, "behavior") && (s = behavior(c, v, &st.behavior))) return s;
    } else {
        return unsupported(c, ty);
    }
    return add_pre(c, st);
}

/* ------------------------------------------------------------------ decoders ---- */

static hsd_status add_dec(ctx *c, hsd_dec_step st) {
    hsd_tokenizer *t = c->t;
    hsd_dec_step *p = realloc(t->dec, (t->n_dec + 1) * sizeof *p);
    if (!p) return hsd_error(HSD_ERR_NOMEM, "oom");
    t->dec = p;
    t->dec[t->n_dec++] = st;
    return HSD_OK;
}

static hsd_status parse_dec(ctx *c, const hj_val *v) {
    if (!v || v->type == HJ_NULL) return HSD_OK;
    const hj_val *ty = hj_get(v, "type");
    if (!ty || ty->type != HJ_STR) return bad(c, v, "missing \"type\"");
    c->t->has_decoder = true;
    hsd_dec_step st;
    memset(&st, 0, sizeof st);
    hsd_status s;
    size_t plen = strlen(c->path);
    if (hj_is_str(ty, "Sequence")) {
        const hj_val *arr = hj_get(v, "decoders");
        if (!arr || arr->type != HJ_ARR) return bad(c, v, "Sequence needs \"decoders\"");
        for (uint32_t i = 0; i < arr->n; i++) {
            snprintf(c->path + plen, sizeof c->path - plen, ".decoders[%u]", i);
            if ((s = parse_dec(c, &arr->u.items[i]))) return s;
            c->path[plen] = 0;
        }
        return HSD_OK;
    }
    if (hj_is_str(ty, "ByteLevel")) st.type = HSD_DEC_BYTELEVEL;
    else if (hj_is_str(ty, "ByteFallback")) st.type = HSD_DEC_BYTE_FALLBACK;
    else if (hj_is_str(ty, "Fuse")) st.type = HSD_DEC_FUSE;
    else if (hj_is_str(ty, "Metaspace")) {
        st.type = HSD_DEC_METASPACE;
        if ((s = repl_char(c, v, st.repl, &st.repl_len))) return s;
        st.prepend = prepend_scheme(v);
    } else if (hj_is_str(ty, "Strip")) {
        st.type = HSD_DEC_STRIP;
        const hj_val *ct = hj_get(v, "content"), *a = hj_get(v, "start"), *b = hj_get(v, "stop");
        if (!ct || ct->type != HJ_STR || !a || a->type != HJ_NUM || !b || b->type != HJ_NUM)
            return bad(c, v, "Strip needs \"content\", \"start\", \"stop\"");
        st.content = dup_str(ct, &st.content_len);
        st.start = hj_num_i32(a, 0);
        st.stop = hj_num_i32(b, 0);
    } else if (hj_is_str(ty, "Replace")) {
        st.type = HSD_DEC_REPLACE;
        const hj_val *p = hj_get(v, "pattern"), *ct = hj_get(v, "content");
        const hj_val *ps = hj_get(p, "String");
        if (!ps || ps->type != HJ_STR) {
            if (hj_get(p, "Regex")) return hsd_error(HSD_ERR_UNSUPPORTED,
                                                      "%s: %s: Replace decoder with a Regex pattern is not supported (byte %zu)",
                                                      c->t->name, c->path, v->off);
            return bad(c, v, "Replace needs pattern.String");
        }
        if (!ct || ct->type != HJ_STR) return bad(c, v, "Replace needs \"content\"");
        st.pattern = dup_str(ps, &st.pattern_len);
        st.content = dup_str(ct, &st.content_len);
    } else if (hj_is_str(ty, "WordPiece")) {
        st.type = HSD_DEC_WORDPIECE;
        const hj_val *p = hj_get(v, "prefix");
        if (p && p->type == HJ_STR) st.content = dup_str(p, &st.content_len);
        else st.content = strdup("##"), st.content_len = 2;
        st.cleanup = get_bool(v, "cleanup", true);
    } else if (hj_is_str(ty, "BPEDecoder")) {
        st.type = HSD_DEC_BPE;
        const hj_val *p = hj_get(v, "suffix");
        if (p && p->type == HJ_STR) st.pattern = dup_str(p, &st.pattern_len);
        else st.pattern = strdup("</w>"), st.pattern_len = 4;
    } else {
        return unsupported(c, ty);
    }
    return add_dec(c, st);
}

/* ------------------------------------------------------------------ post-processor ---- */

static hsd_status push_ids(int32_t **arr, size_t *n, const int32_t *ids, size_t k, bool front) {
    int32_t *p = realloc(*arr, (*n + k + 1) * sizeof *p);
    if (!p) return hsd_error(HSD_ERR_NOMEM, "oom");
    if (!k) {
        *arr = p;
        return HSD_OK;
    }
    if (front) {
        memmove(p + k, p, *n * sizeof *p);
        memcpy(p, ids, k * sizeof *p);
    } else memcpy(p + *n, ids, k * sizeof *p);
    *arr = p;
    *n += k;
    return HSD_OK;
}

static hsd_status token_id_of(ctx *c, const hj_val *pair, int32_t *id) {
    /* ["[CLS]", 101] */
    if (!pair || pair->type != HJ_ARR || pair->n != 2 || pair->u.items[1].type != HJ_NUM)
        return bad(c, pair, "expected [token, id]");
    *id = hj_num_i32(&pair->u.items[1], -1);
    return HSD_OK;
}

/* Adds the processor's special tokens around what earlier processors produced. */
static hsd_status parse_post(ctx *c, const hj_val *v) {
    if (!v || v->type == HJ_NULL) return HSD_OK;
    hsd_tokenizer *t = c->t;
    const hj_val *ty = hj_get(v, "type");
    if (!ty || ty->type != HJ_STR) return bad(c, v, "missing \"type\"");
    hsd_status s;
    size_t plen = strlen(c->path);
    if (hj_is_str(ty, "Sequence")) {
        const hj_val *arr = hj_get(v, "processors");
        if (!arr || arr->type != HJ_ARR) return bad(c, v, "Sequence needs \"processors\"");
        for (uint32_t i = 0; i < arr->n; i++) {
            snprintf(c->path + plen, sizeof c->path - plen, ".processors[%u]", i);
            if ((s = parse_post(c, &arr->u.items[i]))) return s;
            c->path[plen] = 0;
        }
        return HSD_OK;
    }
    if (hj_is_str(ty, "ByteLevel")) return HSD_OK; /* offsets only */
    if (hj_is_str(ty, "BertProcessing") || hj_is_str(ty, "RobertaProcessing")) {
        int32_t cls, sep;
        if ((s = token_id_of(c, hj_get(v, "cls"), &cls)) || (s = token_id_of(c, hj_get(v, "sep"), &sep)))
            return s;
        if ((s = push_ids(&t->post_prefix, &t->n_post_prefix, &cls, 1, true))) return s;
        return push_ids(&t->post_suffix, &t->n_post_suffix, &sep, 1, false);
    }
    if (hj_is_str(ty, "TemplateProcessing")) {
        const hj_val *single = hj_get(v, "single"), *specials = hj_get(v, "special_tokens");
        if (!single || single->type != HJ_ARR) return bad(c, v, "TemplateProcessing needs \"single\"");
        int32_t *pre = NULL, *suf = NULL;
        size_t npre = 0, nsuf = 0;
        bool seen_seq = false;
        s = HSD_OK;
        for (uint32_t i = 0; i < single->n && !s; i++) {
            const hj_val *item = &single->u.items[i];
            const hj_val *sp = hj_get(item, "SpecialToken");
            if (hj_get(item, "Sequence")) {
                seen_seq = true;
                continue;
            }
            const hj_val *name = hj_get(sp, "id");
            if (!name || name->type != HJ_STR) {
                s = bad(c, item, "template item must be SpecialToken or Sequence");
                break;
            }
            /* special_tokens: {name: {"ids": [...]}} */
            const hj_val *entry = NULL;
            if (specials && specials->type == HJ_OBJ)
                for (uint32_t k = 0; k < specials->n; k++) {
                    const hj_val *key = &specials->u.items[2 * k];
                    if (key->n == name->n && !memcmp(key->u.s, name->u.s, name->n))
                        entry = &specials->u.items[2 * k + 1];
                }
            const hj_val *ids = hj_get(entry, "ids");
            if (!ids || ids->type != HJ_ARR) {
                s = hsd_error(HSD_ERR_PARSE, "%s: %s: special token \"%.*s\" missing from special_tokens (byte %zu)",
                              t->name, c->path, (int)name->n, name->u.s, item->off);
                break;
            }
            for (uint32_t k = 0; k < ids->n && !s; k++) {
                int32_t id = hj_num_i32(&ids->u.items[k], -1);
                if (ids->u.items[k].type != HJ_NUM || id < 0 || id >= t->n_ids)
                    s = bad(c, &ids->u.items[k], "special token id out of range");
                else
                    s = seen_seq ? push_ids(&suf, &nsuf, &id, 1, false)
                                 : push_ids(&pre, &npre, &id, 1, false);
            }
        }
        if (!s) s = push_ids(&t->post_prefix, &t->n_post_prefix, pre, npre, true);
        if (!s) s = push_ids(&t->post_suffix, &t->n_post_suffix, suf, nsuf, false);
        free(pre);
        free(suf);
        return s;
    }
    return unsupported(c, ty);
}

/* ------------------------------------------------------------------ added tokens ---- */

static hsd_status parse_added(ctx *c, const hj_val *arr) {
    hsd_tokenizer *t = c->t;
    if (!arr || arr->type == HJ_NULL) return HSD_OK;
    if (arr->type != HJ_ARR) return bad(c, arr, "added_tokens must be an array");
    t->added = calloc(arr->n ? arr->n : 1, sizeof *t->added);
    if (!t->added) return hsd_error(HSD_ERR_NOMEM, "oom");
    for (uint32_t i = 0; i < arr->n; i++) {
        const hj_val *a = &arr->u.items[i];
        snprintf(c->path, sizeof c->path, "added_tokens[%u]", i);
        const hj_val *id = hj_get(a, "id"), *content = hj_get(a, "content");
        if (!id || id->type != HJ_NUM || !content || content->type != HJ_STR)
            return bad(c, a, "needs \"id\" and \"content\"");
        if (id->u.num < 0 || id->u.num >= t->n_ids) return bad(c, id, "id out of range");
        hsd_added_token *at = &t->added[t->n_added++];
        at->id = (int32_t)id->u.num;
        at->content = dup_str(content, &at->len);
        if (!at->content) return hsd_error(HSD_ERR_NOMEM, "oom");
        at->special = get_bool(a, "special", false);
        at->normalized = get_bool(a, "normalized", !at->special);
        at->lstrip = get_bool(a, "lstrip", false);
        at->rstrip = get_bool(a, "rstrip", false);
        at->single_word = get_bool(a, "single_word", false);
        hsd_status s = hsd_tok_set_token(t, at->id, at->content, at->len);
        if (s) return s;
        t->flags[at->id] |= HSD_TOKF_ADDED | (at->special ? HSD_TOKF_SPECIAL : 0);
    }
    return HSD_OK;
}

/* ------------------------------------------------------------------ model ---- */

static hsd_status max_id(ctx *c, const hj_val *model, const hj_val *added, int32_t *out) {
    double mx = -1;
    const hj_val *ty = hj_get(model, "type"), *vocab = hj_get(model, "vocab");
    if (!vocab) return bad(c, model, "model has no \"vocab\"");
    if (hj_is_str(ty, "Unigram")) {
        if (vocab->type != HJ_ARR) return bad(c, vocab, "Unigram vocab must be an array");
        mx = (double)vocab->n - 1;
    } else {
        if (vocab->type != HJ_OBJ) return bad(c, vocab, "vocab must be an object");
        for (uint32_t i = 0; i < vocab->n; i++) {
            const hj_val *k = &vocab->u.items[2 * i], *v = &vocab->u.items[2 * i + 1];
            if (hj_num_i32(v, -1) < 0)
                return hsd_error(HSD_ERR_PARSE,
                                 "%s: model.vocab[\"%.*s\"] is not a valid id (byte %zu)",
                                 c->t->name, (int)k->n, k->u.s, v->off);
            if (v->u.num > mx) mx = v->u.num;
        }
    }
    if (added && added->type == HJ_ARR)
        for (uint32_t i = 0; i < added->n; i++) {
            const hj_val *id = hj_get(&added->u.items[i], "id");
            if (id && id->type == HJ_NUM && id->u.num > mx) mx = id->u.num;
        }
    if (mx < 0 || mx >= (double)(1 << 26)) return bad(c, vocab, "empty vocabulary or id out of range");
    *out = (int32_t)mx + 1;
    return HSD_OK;
}

static int32_t find_added(const hsd_tokenizer *t, const char *const *names) {
    for (const char *const *n = names; *n; n++)
        for (size_t i = 0; i < t->n_added; i++)
            if (!strcmp(t->added[i].content, *n)) return t->added[i].id;
    return -1;
}

hsd_status hsd_tok_load_hf_json(const char *data, size_t len, const char *name,
                                hsd_tokenizer **out) {
    *out = NULL;
    hj_doc doc;
    hsd_status s = hj_parse(data, len, name, &doc);
    if (s) return s;
    hsd_tokenizer *t = hsd_tok_alloc(name);
    if (!t) {
        hj_free(&doc);
        return hsd_error(HSD_ERR_NOMEM, "out of memory");
    }
    ctx c = {t, "model"};
    const hj_val *root = doc.root;
    const hj_val *model = hj_get(root, "model"), *added = hj_get(root, "added_tokens");
    const hj_val *mty = hj_get(model, "type");
    int32_t n_ids = 0;
    if (root->type != HJ_OBJ) s = bad(&c, root, "top level must be an object");
    else if (!model || model->type != HJ_OBJ) s = bad(&c, root, "missing \"model\" object");
    if (!s) s = max_id(&c, model, added, &n_ids);
    if (!s) s = hsd_tok_set_size(t, n_ids);
    if (!s) {
        strcpy(c.path, "normalizer");
        s = parse_norm(&c, hj_get(root, "normalizer"));
    }
    if (!s) {
        strcpy(c.path, "pre_tokenizer");
        s = parse_pre(&c, hj_get(root, "pre_tokenizer"));
    }
    if (!s) {
        strcpy(c.path, "decoder");
        s = parse_dec(&c, hj_get(root, "decoder"));
    }
    if (!s) {
        strcpy(c.path, "model");
        if (hj_is_str(mty, "BPE") || (!mty && hj_get(model, "merges"))) s = hsd_bpe_create(t, model);
        else if (hj_is_str(mty, "Unigram")) s = hsd_unigram_create(t, model);
        else if (hj_is_str(mty, "WordPiece")) s = hsd_wordpiece_create(t, model);
        else s = mty ? unsupported(&c, mty) : bad(&c, model, "missing model \"type\"");
    }
    if (!s) s = parse_added(&c, added);
    if (!s) {
        strcpy(c.path, "post_processor");
        s = parse_post(&c, hj_get(root, "post_processor"));
    }
    if (!s) s = hsd_added_build(t);
    if (!s) {
        static const char *const bos[] = {"<s>", "<bos>", "<|begin_of_text|>",
                                          "<｜begin▁of▁sentence｜>", "[CLS]", "<|startoftext|>",
                                          NULL};
        static const char *const eos[] = {"</s>", "<eos>", "<|end_of_text|>", "<|endoftext|>",
                                          "<｜end▁of▁sentence｜>", "[SEP]", "<EOT>", NULL};
        t->bos_id = t->n_post_prefix ? t->post_prefix[0] : find_added(t, bos);
        t->eos_id = find_added(t, eos);
        s = hsd_tok_finish(t);
    }
    hj_free(&doc);
    if (s) {
        hsd_tok_destroy(t);
        return s;
    }
    *out = t;
    return HSD_OK;
}
