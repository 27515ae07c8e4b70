/* Pre-tokenizers (HF tokenizers semantics): each step splits every not-yet-resolved piece
 * into smaller pieces. Pieces are spans of one working buffer; steps that rewrite text
 * (Metaspace, ByteLevel's prefix space) append the new text to the buffer. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/error.h"
#include "lib/base/utf8.h"
#include "tokenize/tokenizer.h"

#define OOM() hsd_error(HSD_ERR_NOMEM, "out of memory")

/* Turns the (range, is_match) list in `m` (ids: 1 = match) into output pieces following
 * HF's SplitDelimiterBehavior, dropping empty pieces. */
static int emit_behavior(const hsd_spans *m, hsd_split_behavior beh, bool invert,
                         hsd_spans *out) {
    size_t first_out = out->n;
    bool prev_match = false;
    switch (beh) {
    case HSD_SPLIT_REMOVED:
        for (size_t i = 0; i < m->n; i++) {
            bool is_m = (m->p[i].id == 1) != invert;
            if (!is_m && hsd_spans_push(out, m->p[i].off, m->p[i].len, -1)) return -1;
        }
        break;
    case HSD_SPLIT_ISOLATED:
        for (size_t i = 0; i < m->n; i++)
            if (hsd_spans_push(out, m->p[i].off, m->p[i].len, -1)) return -1;
        break;
    case HSD_SPLIT_MERGED_WITH_PREVIOUS:
        for (size_t i = 0; i < m->n; i++) {
            bool is_m = (m->p[i].id == 1) != invert;
            if (is_m && !prev_match && out->n > first_out) {
                hsd_span *l = &out->p[out->n - 1];
                l->len = m->p[i].off + m->p[i].len - l->off;
            } else if (hsd_spans_push(out, m->p[i].off, m->p[i].len, -1)) return -1;
            prev_match = is_m;
        }
        break;
    case HSD_SPLIT_MERGED_WITH_NEXT: {
        /* Walk backwards, merging a match into the piece after it, then reverse. */
        for (size_t i = m->n; i-- > 0;) {
            bool is_m = (m->p[i].id == 1) != invert;
            if (is_m && !prev_match && out->n > first_out) {
                hsd_span *l = &out->p[out->n - 1];
                l->len = l->off + l->len - m->p[i].off;
                l->off = m->p[i].off;
            } else if (hsd_spans_push(out, m->p[i].off, m->p[i].len, -1)) return -1;
            prev_match = is_m;
        }
        for (size_t a = first_out, b = out->n; a + 1 < b; a++, b--) {
            hsd_span x = out->p[a];
            out->p[a] = out->p[b - 1];
            out->p[b - 1] = x;
        }
        break;
    }
    case HSD_SPLIT_CONTIGUOUS:
        for (size_t i = 0; i < m->n; i++) {
            bool is_m = (m->p[i].id == 1) != invert;
            if (is_m == prev_match && out->n > first_out) {
                hsd_span *l = &out->p[out->n - 1];
                l->len = m->p[i].off + m->p[i].len - l->off;
            } else if (hsd_spans_push(out, m->p[i].off, m->p[i].len, -1)) return -1;
            prev_match = is_m;
        }
        break;
    }
    /* drop empty pieces */
    size_t w = first_out;
    for (size_t i = first_out; i < out->n; i++)
        if (out->p[i].len) out->p[w++] = out->p[i];
    out->n = w;
    return 0;
}

/* (range, is_match) list of regex matches inside span sp. */
static int regex_matches(const hsd_regex *re, const hsd_buf *b, const hsd_span *sp,
                         hsd_scratch *sc, hsd_spans *m) {
    const char *s = b->p + sp->off;
    size_t n = sp->len, pos = 0, ms, me;
    m->n = 0;
    while (pos < n && hsd_regex_next(re, s, n, pos, &ms, &me, sc->md)) {
        if (ms > pos && hsd_spans_push(m, sp->off + (uint32_t)pos, (uint32_t)(ms - pos), 0))
            return -1;
        if (hsd_spans_push(m, sp->off + (uint32_t)ms, (uint32_t)(me - ms), 1)) return -1;
        pos = me;
    }
    if (pos < n && hsd_spans_push(m, sp->off + (uint32_t)pos, (uint32_t)(n - pos), 0)) return -1;
    return 0;
}

typedef bool (*char_pred)(uint32_t cp);

/* Every character satisfying pred is one match, as HF's split on a char predicate. */
static int pred_matches(char_pred pred, const hsd_buf *b, const hsd_span *sp, hsd_spans *m) {
    const unsigned char *u = (const unsigned char *)b->p + sp->off;
    size_t n = sp->len, i = 0, gap = 0;
    m->n = 0;
    while (i < n) {
        int k;
        uint32_t cp = hsd_utf8_decode(u + i, &k);
        if (pred(cp)) {
            if (i > gap && hsd_spans_push(m, sp->off + (uint32_t)gap, (uint32_t)(i - gap), 0))
                return -1;
            if (hsd_spans_push(m, sp->off + (uint32_t)i, (uint32_t)k, 1)) return -1;
            gap = i + (size_t)k;
        }
        i += (size_t)k;
    }
    if (n > gap && hsd_spans_push(m, sp->off + (uint32_t)gap, (uint32_t)(n - gap), 0)) return -1;
    return 0;
}

static bool is_ws(uint32_t c) { return hsd_uc_is_whitespace(c); }
static bool is_bert_punct(uint32_t c) { return hsd_uc_is_bert_punct(c); }
static bool is_numeric(uint32_t c) { return hsd_uc_is_numeric(c); }

/* UnicodeScripts (HF): a piece starts at every character whose script differs from the
 * last non-"Any" script seen; "Any" characters (the space) before the first piece are
 * dropped, and a piece of only "Any" characters yields nothing. */
static int unicode_scripts(const hsd_buf *b, const hsd_span *sp, hsd_spans *out) {
    const unsigned char *u = (const unsigned char *)b->p + sp->off;
    size_t n = sp->len, start = SIZE_MAX;
    int last = -1;
    for (size_t i = 0; i < n;) {
        int k;
        int s = hsd_uc_script(hsd_utf8_decode(u + i, &k));
        if (s != 0 && s != last) {
            if (start != SIZE_MAX &&
                hsd_spans_push(out, sp->off + (uint32_t)start, (uint32_t)(i - start), -1))
                return -1;
            start = i;
        }
        if (s != 0) last = s;
        i += (size_t)k;
    }
    if (start != SIZE_MAX &&
        hsd_spans_push(out, sp->off + (uint32_t)start, (uint32_t)(n - start), -1))
        return -1;
    return 0;
}

/* Metaspace: spaces become the replacement, optional prefix, then split before each
 * replacement (MergedWithNext). */
static int metaspace(const hsd_pre_step *st, hsd_buf *b, const hsd_span *sp, bool first,
                     hsd_scratch *sc, hsd_spans *out) {
    uint32_t off = (uint32_t)b->n;
    size_t n0 = sp->len, src = sp->off;
    bool prepend = !sc->cont && (st->prepend == HSD_PREPEND_ALWAYS ||
                                 (st->prepend == HSD_PREPEND_FIRST && first));
    if (prepend && n0 &&
        !(n0 >= st->repl_len && !memcmp(b->p + src, st->repl, st->repl_len)) &&
        b->p[src] != ' ')
        if (hsd_buf_append(b, st->repl, st->repl_len)) return -1;
    for (size_t i = 0; i < n0; i++) {
        char c = b->p[src + i];
        if (c == ' ' ? hsd_buf_append(b, st->repl, st->repl_len) : hsd_buf_push(b, c)) return -1;
    }
    hsd_span whole = {off, (uint32_t)(b->n - off), -1};
    if (!st->split) return whole.len ? hsd_spans_push(out, whole.off, whole.len, -1) : 0;
    /* split: every occurrence of the replacement starts a new piece */
    hsd_spans *m = &sc->s3;
    m->n = 0;
    size_t gap = 0, i = 0, n = whole.len;
    const char *s = b->p + off;
    while (i < n) {
        if (i + st->repl_len <= n && !memcmp(s + i, st->repl, st->repl_len)) {
            if (i > gap && hsd_spans_push(m, off + (uint32_t)gap, (uint32_t)(i - gap), 0))
                return -1;
            if (hsd_spans_push(m, off + (uint32_t)i, (uint32_t)st->repl_len, 1)) return -1;
            i += st->repl_len;
            gap = i;
        } else i++;
    }
    if (n > gap && hsd_spans_push(m, off + (uint32_t)gap, (uint32_t)(n - gap), 0)) return -1;
    return emit_behavior(m, HSD_SPLIT_MERGED_WITH_NEXT, false, out);
}

static hsd_status run_step(const hsd_pre_step *st, hsd_buf *b, const hsd_spans *in,
                           hsd_spans *out, hsd_scratch *sc) {
    for (size_t i = 0; i < in->n; i++) {
        hsd_span sp = in->p[i];
        if (sp.id >= 0) { /* added tokens pass through untouched */
            if (hsd_spans_push(out, sp.off, sp.len, sp.id)) return OOM();
            continue;
        }
        int bad = 0;
        hsd_spans *m = &sc->s3;
        switch (st->type) {
        case HSD_PRE_SPLIT:
            bad = regex_matches(st->re, b, &sp, sc, m) ||
                  emit_behavior(m, st->behavior, st->invert, out);
            break;
        case HSD_PRE_BYTELEVEL:
            if (st->add_prefix_space && !sc->cont && sp.len && b->p[sp.off] != ' ') {
                uint32_t off = (uint32_t)b->n;
                /* reserve first: the source lies in the buffer being appended to */
                if (hsd_buf_reserve(b, sp.len + 1)) return OOM();
                hsd_buf_push(b, ' ');
                hsd_buf_append(b, b->p + sp.off, sp.len);
                sp.off = off;
                sp.len += 1;
            }
            if (st->re)
                bad = regex_matches(st->re, b, &sp, sc, m) ||
                      emit_behavior(m, HSD_SPLIT_ISOLATED, false, out);
            else if (sp.len)
                bad = hsd_spans_push(out, sp.off, sp.len, -1);
            break;
        case HSD_PRE_METASPACE: bad = metaspace(st, b, &sp, i == 0, sc, out); break;
        case HSD_PRE_WHITESPACE:
            bad = regex_matches(st->re, b, &sp, sc, m) ||
                  emit_behavior(m, HSD_SPLIT_REMOVED, true, out);
            break;
        case HSD_PRE_WHITESPACE_SPLIT:
            bad = pred_matches(is_ws, b, &sp, m) ||
                  emit_behavior(m, HSD_SPLIT_REMOVED, false, out);
            break;
        case HSD_PRE_BERT: {
            hsd_spans tmp = {0};
            bad = pred_matches(is_ws, b, &sp, m) || emit_behavior(m, HSD_SPLIT_REMOVED, false, &tmp);
            for (size_t j = 0; !bad && j < tmp.n; j++)
                bad = pred_matches(is_bert_punct, b, &tmp.p[j], m) ||
                      emit_behavior(m, HSD_SPLIT_ISOLATED, false, out);
            free(tmp.p);
            break;
        }
        case HSD_PRE_DIGITS:
            bad = pred_matches(is_numeric, b, &sp, m) ||
                  emit_behavior(m, st->individual_digits ? HSD_SPLIT_ISOLATED
                                                         : HSD_SPLIT_CONTIGUOUS,
                                false, out);
            break;
        case HSD_PRE_UNICODE_SCRIPTS: bad = unicode_scripts(b, &sp, out); break;
        case HSD_PRE_PUNCTUATION:
            bad = pred_matches(is_bert_punct, b, &sp, m) ||
                  emit_behavior(m, st->behavior, false, out);
            break;
        }
        if (bad) return OOM();
    }
    return HSD_OK;
}

hsd_status hsd_pre_apply(const hsd_tokenizer *t, hsd_buf *b, hsd_spans *pieces,
                         hsd_scratch *sc) {
    for (size_t k = 0; k < t->n_pre; k++) {
        sc->s2.n = 0;
        hsd_status s = run_step(&t->pre[k], b, pieces, &sc->s2, sc);
        if (s) return s;
        hsd_spans tmp = *pieces;
        *pieces = sc->s2;
        sc->s2 = tmp;
    }
    return HSD_OK;
}

void hsd_pre_steps_free(hsd_pre_step *s, size_t n) {
    for (size_t i = 0; i < n; i++) hsd_regex_free(s[i].re);
    free(s);
}
