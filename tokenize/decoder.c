/* Decoders (HF tokenizers semantics): a chain of steps over the list of token strings, whose
 * concatenation is the decoded text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/error.h"
#include "lib/base/utf8.h"
#include "tokenize/tokenizer.h"

#define OOM() hsd_error(HSD_ERR_NOMEM, "out of memory")

typedef struct {
    hsd_buf text;
    hsd_spans sp;
} strlist;

static int sl_push(strlist *l, const char *s, size_t n) {
    if (hsd_spans_push(&l->sp, (uint32_t)l->text.n, (uint32_t)n, 0)) return -1;
    return hsd_buf_append(&l->text, s, n);
}

/* Appends `s` with every occurrence of pat replaced by rep (to the open last string). */
static int append_replaced(hsd_buf *o, const char *s, size_t n, const char *pat, size_t pl,
                           const char *rep, size_t rl) {
    size_t i = 0, run = 0;
    if (!pl) return hsd_buf_append(o, s, n);
    while (i + pl <= n) {
        if (!memcmp(s + i, pat, pl)) {
            if (hsd_buf_append(o, s + run, i - run) || hsd_buf_append(o, rep, rl)) return -1;
            i += pl;
            run = i;
        } else i++;
    }
    return hsd_buf_append(o, s + run, n - run);
}

static int is_byte_token(const char *s, size_t n, unsigned *v) {
    if (n != 6 || memcmp(s, "<0x", 3) || s[5] != '>') return 0;
    int hi = s[3], lo = s[4];
    int h = (hi >= '0' && hi <= '9') ? hi - '0' : (hi >= 'A' && hi <= 'F') ? hi - 'A' + 10
          : (hi >= 'a' && hi <= 'f') ? hi - 'a' + 10 : -1;
    int l = (lo >= '0' && lo <= '9') ? lo - '0' : (lo >= 'A' && lo <= 'F') ? lo - 'A' + 10
          : (lo >= 'a' && lo <= 'f') ? lo - 'a' + 10 : -1;
    if (h < 0 || l < 0) return 0;
    *v = (unsigned)(h * 16 + l);
    return 1;
}

static int wp_cleanup(hsd_buf *o, const char *s, size_t n) {
    static const char *pairs[][2] = {{" .", "."},    {" ?", "?"},     {" !", "!"},
                                     {" ,", ","},    {" ' ", "'"},    {" n't", "n't"},
                                     {" 'm", "'m"},  {" do not", " don't"}, {" 's", "'s"},
                                     {" 've", "'ve"}, {" 're", "'re"}};
    hsd_buf a = {0}, c = {0};
    if (hsd_buf_append(&a, s, n)) return -1;
    for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; k++) {
        c.n = 0;
        if (append_replaced(&c, a.p, a.n, pairs[k][0], strlen(pairs[k][0]), pairs[k][1],
                            strlen(pairs[k][1]))) {
            hsd_buf_free(&a), hsd_buf_free(&c);
            return -1;
        }
        hsd_buf t = a;
        a = c;
        c = t;
    }
    int r = hsd_buf_append(o, a.p, a.n);
    hsd_buf_free(&a), hsd_buf_free(&c);
    return r;
}

static int step(const hsd_dec_step *d, const strlist *in, strlist *out) {
    size_t n = in->sp.n;
#define TOK(i) (in->text.p + in->sp.p[i].off)
#define LEN(i) ((size_t)in->sp.p[i].len)
    switch (d->type) {
    case HSD_DEC_BYTELEVEL: {
        /* Join, map alphabet chars to bytes (a token with a foreign char is kept as its
         * UTF-8), then lossy UTF-8 over the whole byte string. */
        hsd_buf raw = {0};
        int bad = 0;
        for (size_t i = 0; i < n && !bad; i++) {
            size_t before = raw.n;
            if (hsd_bytelevel_to_bytes(TOK(i), LEN(i), &raw)) {
                raw.n = before;
                bad = hsd_buf_append(&raw, TOK(i), LEN(i));
            }
        }
        if (!bad) {
            if (hsd_spans_push(&out->sp, (uint32_t)out->text.n, 0, 0)) bad = 1;
            else {
                size_t start = out->text.n;
                bad = hsd_utf8_lossy_append(&out->text, raw.p ? raw.p : "", raw.n);
                out->sp.p[out->sp.n - 1].len = (uint32_t)(out->text.n - start);
            }
        }
        hsd_buf_free(&raw);
        return bad ? -1 : 0;
    }
    case HSD_DEC_METASPACE:
        for (size_t i = 0; i < n; i++) {
            size_t start = out->text.n;
            if (hsd_spans_push(&out->sp, (uint32_t)start, 0, 0)) return -1;
            bool drop = i == 0 && d->prepend != HSD_PREPEND_NEVER;
            /* HF drops the replacement in the first token (the prefix it added), and turns
             * every other one into a space. */
            if (drop) {
                if (append_replaced(&out->text, TOK(i), LEN(i), d->repl, d->repl_len, "", 0))
                    return -1;
            } else if (append_replaced(&out->text, TOK(i), LEN(i), d->repl, d->repl_len, " ", 1))
                return -1;
            out->sp.p[out->sp.n - 1].len = (uint32_t)(out->text.n - start);
        }
        return 0;
    case HSD_DEC_BYTE_FALLBACK: {
        hsd_buf bytes = {0};
        int bad = 0;
        for (size_t i = 0; i <= n && !bad; i++) {
            unsigned v;
            if (i < n && is_byte_token(TOK(i), LEN(i), &v)) {
                bad = hsd_buf_push(&bytes, (char)v);
                continue;
            }
            if (bytes.n) {
                if (hsd_utf8_valid_prefix(bytes.p, bytes.n) == bytes.n)
                    bad = sl_push(out, bytes.p, bytes.n);
                else /* one U+FFFD per byte, as HF does for an invalid byte run */
                    for (size_t k = 0; k < bytes.n && !bad; k++)
                        bad = sl_push(out, "\xEF\xBF\xBD", 3);
                bytes.n = 0;
            }
            if (i < n && !bad) bad = sl_push(out, TOK(i), LEN(i));
        }
        hsd_buf_free(&bytes);
        return bad ? -1 : 0;
    }
    case HSD_DEC_FUSE: {
        if (hsd_spans_push(&out->sp, (uint32_t)out->text.n, 0, 0)) return -1;
        size_t start = out->text.n;
        for (size_t i = 0; i < n; i++)
            if (hsd_buf_append(&out->text, TOK(i), LEN(i))) return -1;
        out->sp.p[out->sp.n - 1].len = (uint32_t)(out->text.n - start);
        return 0;
    }
    case HSD_DEC_STRIP:
        for (size_t i = 0; i < n; i++) {
            const char *s = TOK(i);
            size_t a = 0, b = LEN(i), cl = d->content_len;
            for (int k = 0; k < d->start && cl && a + cl <= b && !memcmp(s + a, d->content, cl);
                 k++)
                a += cl;
            for (int k = 0; k < d->stop && cl && b >= a + cl && !memcmp(s + b - cl, d->content, cl);
                 k++)
                b -= cl;
            if (sl_push(out, s + a, b - a)) return -1;
        }
        return 0;
    case HSD_DEC_REPLACE:
        for (size_t i = 0; i < n; i++) {
            size_t start = out->text.n;
            if (hsd_spans_push(&out->sp, (uint32_t)start, 0, 0) ||
                append_replaced(&out->text, TOK(i), LEN(i), d->pattern, d->pattern_len,
                                d->content, d->content_len))
                return -1;
            out->sp.p[out->sp.n - 1].len = (uint32_t)(out->text.n - start);
        }
        return 0;
    case HSD_DEC_WORDPIECE:
        for (size_t i = 0; i < n; i++) {
            hsd_buf tok = {0};
            const char *s = TOK(i);
            size_t l = LEN(i);
            int bad = 0;
            if (i != 0) {
                if (l >= d->content_len && !memcmp(s, d->content, d->content_len))
                    bad = hsd_buf_append(&tok, s + d->content_len, l - d->content_len);
                else
                    bad = hsd_buf_push(&tok, ' ') || hsd_buf_append(&tok, s, l);
            } else bad = hsd_buf_append(&tok, s, l);
            size_t start = out->text.n;
            if (!bad) bad = hsd_spans_push(&out->sp, (uint32_t)start, 0, 0);
            if (!bad)
                bad = d->cleanup ? wp_cleanup(&out->text, tok.p ? tok.p : "", tok.n)
                                 : hsd_buf_append(&out->text, tok.p ? tok.p : "", tok.n);
            if (!bad) out->sp.p[out->sp.n - 1].len = (uint32_t)(out->text.n - start);
            hsd_buf_free(&tok);
            if (bad) return -1;
        }
        return 0;
    case HSD_DEC_BPE:
        for (size_t i = 0; i < n; i++) {
            size_t start = out->text.n;
            const char *rep = i + 1 == n ? "" : " ";
            if (hsd_spans_push(&out->sp, (uint32_t)start, 0, 0) ||
                append_replaced(&out->text, TOK(i), LEN(i), d->pattern, d->pattern_len, rep,
                                strlen(rep)))
                return -1;
            out->sp.p[out->sp.n - 1].len = (uint32_t)(out->text.n - start);
        }
        return 0;
    }
#undef TOK
#undef LEN
    return -1;
}

hsd_status hsd_dec_apply(const hsd_tokenizer *t, hsd_scratch *sc, hsd_buf *out) {
    strlist a = {0}, b = {0};
    hsd_status r = HSD_OK;
    if (hsd_buf_append(&a.text, sc->strs.p ? sc->strs.p : "", sc->strs.n)) return OOM();
    for (size_t i = 0; i < sc->str_spans.n; i++)
        if (hsd_spans_push(&a.sp, sc->str_spans.p[i].off, sc->str_spans.p[i].len, 0)) {
            r = OOM();
            goto done;
        }
    for (size_t k = 0; k < t->n_dec; k++) {
        b.text.n = 0;
        b.sp.n = 0;
        /* keep b.text.p non-NULL: steps and the final copy form text.p + off even for empty
         * pieces, and NULL + 0 is undefined behaviour (found by fuzz/fuzz_roundtrip) */
        if (hsd_buf_reserve(&b.text, 0) || step(&t->dec[k], &a, &b)) {
            r = OOM();
            goto done;
        }
        strlist x = a;
        a = b;
        b = x;
    }
    for (size_t i = 0; i < a.sp.n; i++)
        if (hsd_buf_append(out, a.text.p + a.sp.p[i].off, a.sp.p[i].len)) {
            r = OOM();
            goto done;
        }
done:
    hsd_buf_free(&a.text);
    hsd_buf_free(&b.text);
    free(a.sp.p);
    free(b.sp.p);
    return r;
}

void hsd_dec_steps_free(hsd_dec_step *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        free(s[i].pattern);
        free(s[i].content);
    }
    free(s);
}
