/* Normalizers (HF tokenizers semantics), applied to one piece of text at a time. Offsets are
 * not tracked: hsd needs ids and text, not alignments. */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "lib/base/error.h"
#include "lib/base/utf8.h"
#include "tokenize/tokenizer.h"

static bool all_ascii(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] >= 0x80) return false;
    return true;
}

static hsd_status utf8proc_form(const char *s, size_t n, int opts, hsd_buf *out) {
    utf8proc_uint8_t *dst = NULL;
    utf8proc_ssize_t r = utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &dst,
                                      (utf8proc_option_t)(UTF8PROC_STABLE | opts));
    if (r < 0) {
        free(dst);
        return hsd_error(HSD_ERR_INTERNAL, "normalizer: %s", utf8proc_errmsg(r));
    }
    int bad = hsd_buf_append(out, dst, (size_t)r);
    free(dst);
    return bad ? hsd_error(HSD_ERR_NOMEM, "oom") : HSD_OK;
}

/* NFC/NFD/NFKC/NFKD as HF computes them: its normalization tables are Unicode 9.0, so a
 * code point assigned later has no decomposition, combining class 0 and no composition
 * there. Such a character is a starter that nothing composes with, so the text around it
 * normalizes independently: each later character is copied as is and the pieces between
 * them go through utf8proc (Unicode 13+ tables, identical on Unicode 9.0 characters by the
 * normalization stability policy). */
static hsd_status unicode_form(const char *s, size_t n, int opts, hsd_buf *out) {
    if (all_ascii(s, n)) /* every normalization form is the identity on ASCII */
        return hsd_buf_append(out, s, n) ? hsd_error(HSD_ERR_NOMEM, "oom") : HSD_OK;
    const unsigned char *u = (const unsigned char *)s;
    size_t start = 0;
    for (size_t i = 0; i < n;) {
        if (u[i] < 0xCC) { /* below U+0300: everything there is Unicode 1.1 */
            i++;
            continue;
        }
        int k;
        uint32_t cp = hsd_utf8_decode(u + i, &k);
        if (hsd_uc_assigned_by_v9(cp)) {
            i += (size_t)k;
            continue;
        }
        hsd_status st = start < i ? utf8proc_form(s + start, i - start, opts, out) : HSD_OK;
        if (st) return st;
        if (hsd_buf_append(out, s + i, (size_t)k)) return hsd_error(HSD_ERR_NOMEM, "oom");
        i += (size_t)k;
        start = i;
    }
    if (start == n) return HSD_OK;
    return utf8proc_form(s + start, n - start, opts, out);
}

/* Rust char::to_lowercase, from HF's own table (Rust's std follows a newer Unicode than
 * utf8proc). */
static int push_lower(hsd_buf *out, uint32_t cp) {
    uint32_t to[3];
    int n = hsd_uc_lower(cp, to);
    for (int i = 0; i < n; i++)
        if (hsd_buf_push_cp(out, to[i])) return -1;
    return 0;
}

static hsd_status lowercase(const char *s, size_t n, hsd_buf *out) {
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        if (u[i] < 0x80) {
            char c = (char)u[i++];
            if (c >= 'A' && c <= 'Z') c = (char)(c + 32);
            if (hsd_buf_push(out, c)) return hsd_error(HSD_ERR_NOMEM, "oom");
            continue;
        }
        int k;
        uint32_t cp = hsd_utf8_decode(u + i, &k);
        i += (size_t)k;
        if (push_lower(out, cp)) return hsd_error(HSD_ERR_NOMEM, "oom");
    }
    return HSD_OK;
}

/* Filters marks out of (already decomposed) text: StripAccents drops every combining mark
 * of its Unicode 9.0 table, BertNormalizer the non-spacing marks of its older one. */
static hsd_status drop_marks(const char *s, size_t n, bool bert, hsd_buf *out) {
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        int k;
        uint32_t cp = hsd_utf8_decode(u + i, &k);
        bool mark = bert ? hsd_uc_is_bert_mn(cp) : hsd_uc_is_mark(cp);
        if (!mark && hsd_buf_append(out, s + i, (size_t)k))
            return hsd_error(HSD_ERR_NOMEM, "oom");
        i += (size_t)k;
    }
    return HSD_OK;
}

static hsd_status replace_all(const hsd_norm_step *st, const char *s, size_t n, hsd_buf *out,
                              hsd_scratch *sc) {
    size_t pos = 0, ms, me;
    while (pos <= n && hsd_regex_next(st->re, s, n, pos, &ms, &me, sc->md)) {
        if (hsd_buf_append(out, s + pos, ms - pos) ||
            hsd_buf_append(out, st->content, st->content_len))
            return hsd_error(HSD_ERR_NOMEM, "oom");
        pos = me;
    }
    return hsd_buf_append(out, s + pos, n - pos) ? hsd_error(HSD_ERR_NOMEM, "oom") : HSD_OK;
}

static hsd_status strip(const hsd_norm_step *st, const char *s, size_t n, hsd_buf *out) {
    const unsigned char *u = (const unsigned char *)s;
    size_t a = 0, b = n;
    if (st->strip_left)
        while (a < n) {
            int k;
            uint32_t cp = hsd_utf8_decode(u + a, &k);
            if (!hsd_uc_is_whitespace(cp)) break;
            a += (size_t)k;
        }
    if (st->strip_right)
        while (b > a) {
            size_t p = b - 1;
            while (p > a && (u[p] & 0xC0) == 0x80) p--;
            int k;
            if (!hsd_uc_is_whitespace(hsd_utf8_decode(u + p, &k))) break;
            b = p;
        }
    return hsd_buf_append(out, s + a, b - a) ? hsd_error(HSD_ERR_NOMEM, "oom") : HSD_OK;
}

/* SentencePiece's NMT normalization: drop some control characters, map others to space. */
static hsd_status nmt(const char *s, size_t n, hsd_buf *out) {
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        int k;
        uint32_t c = hsd_utf8_decode(u + i, &k);
        i += (size_t)k;
        if ((c >= 0x1 && c <= 0x8) || c == 0xB || (c >= 0xE && c <= 0x1F) || c == 0x7F ||
            c == 0x8F || c == 0x9F)
            continue;
        if (c == 0x9 || c == 0xA || c == 0xC || c == 0xD || c == 0x1680 ||
            (c >= 0x200B && c <= 0x200F) || c == 0x2028 || c == 0x2029 || c == 0x2581 ||
            c == 0xFEFF || c == 0xFFFD)
            c = ' ';
        if (hsd_buf_push_cp(out, c)) return hsd_error(HSD_ERR_NOMEM, "oom");
    }
    return HSD_OK;
}

static bool is_chinese_char(uint32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
           (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
           (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

static hsd_status bert(const hsd_norm_step *st, const char *s, size_t n, hsd_buf *out,
                       hsd_scratch *sc) {
    hsd_buf *t1 = &sc->b;
    t1->n = 0;
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        int k;
        uint32_t c = hsd_utf8_decode(u + i, &k);
        i += (size_t)k;
        if (st->bert_clean) {
            if (hsd_uc_is_bert_control(c)) continue;
            if (hsd_uc_is_whitespace(c)) c = ' ';
        }
        int bad;
        if (st->bert_chinese && is_chinese_char(c)) {
            bad = hsd_buf_push(t1, ' ') || hsd_buf_push_cp(t1, c) || hsd_buf_push(t1, ' ');
        } else {
            bad = hsd_buf_push_cp(t1, c);
        }
        if (bad) return hsd_error(HSD_ERR_NOMEM, "oom");
    }
    hsd_status r;
    if (st->bert_strip_accents) {
        hsd_buf nfd = {0};
        r = unicode_form(t1->p ? t1->p : "", t1->n, UTF8PROC_DECOMPOSE, &nfd);
        t1->n = 0;
        if (!r) r = drop_marks(nfd.p ? nfd.p : "", nfd.n, true, t1);
        hsd_buf_free(&nfd);
        if (r) return r;
    }
    if (st->bert_lowercase) return lowercase(t1->p ? t1->p : "", t1->n, out);
    return hsd_buf_append(out, t1->p ? t1->p : "", t1->n) ? hsd_error(HSD_ERR_NOMEM, "oom")
                                                          : HSD_OK;
}

static hsd_status apply_step(const hsd_norm_step *st, const char *s, size_t n, hsd_buf *out,
                             hsd_scratch *sc) {
    switch (st->type) {
    case HSD_NORM_NFC: return unicode_form(s, n, UTF8PROC_COMPOSE, out);
    case HSD_NORM_NFD: return unicode_form(s, n, UTF8PROC_DECOMPOSE, out);
    case HSD_NORM_NFKC: return unicode_form(s, n, UTF8PROC_COMPOSE | UTF8PROC_COMPAT, out);
    case HSD_NORM_NFKD: return unicode_form(s, n, UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT, out);
    case HSD_NORM_LOWERCASE: return lowercase(s, n, out);
    case HSD_NORM_STRIP_ACCENTS: return drop_marks(s, n, false, out);
    case HSD_NORM_REPLACE: return replace_all(st, s, n, out, sc);
    case HSD_NORM_PREPEND:
        if (n && !sc->cont && hsd_buf_append(out, st->content, st->content_len))
            return hsd_error(HSD_ERR_NOMEM, "oom");
        return hsd_buf_append(out, s, n) ? hsd_error(HSD_ERR_NOMEM, "oom") : HSD_OK;
    case HSD_NORM_STRIP: return strip(st, s, n, out);
    case HSD_NORM_NMT: return nmt(s, n, out);
    case HSD_NORM_BERT: return bert(st, s, n, out, sc);
    }
    return hsd_error(HSD_ERR_INTERNAL, "normalizer: unknown step");
}

hsd_status hsd_norm_apply(const hsd_tokenizer *t, const char *s, size_t n, hsd_buf *out,
                          hsd_scratch *sc) {
    if (t->n_norm == 1) return apply_step(&t->norm[0], s, n, out, sc);
    /* Ping-pong between two private buffers, then copy into `out`. */
    hsd_buf tmp = {0}, cur = {0};
    hsd_status r = HSD_OK;
    if (hsd_buf_append(&cur, s, n)) return hsd_error(HSD_ERR_NOMEM, "oom");
    for (size_t i = 0; i < t->n_norm && !r; i++) {
        tmp.n = 0;
        r = apply_step(&t->norm[i], cur.p, cur.n, &tmp, sc);
        hsd_buf x = cur;
        cur = tmp;
        tmp = x;
        if (!cur.p && hsd_buf_append(&cur, "", 0)) r = hsd_error(HSD_ERR_NOMEM, "oom");
    }
    if (!r && hsd_buf_append(out, cur.p, cur.n)) r = hsd_error(HSD_ERR_NOMEM, "oom");
    hsd_buf_free(&tmp);
    hsd_buf_free(&cur);
    return r;
}

void hsd_norm_steps_free(hsd_norm_step *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        hsd_regex_free(s[i].re);
        free(s[i].content);
    }
    free(s);
}
