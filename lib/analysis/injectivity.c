/* Injectivity check, minimizer and classifier (fuzzer in lib/analysis/injectivity_fuzz.c). */
#include "lib/analysis/injectivity.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "lib/base/error.h"
#include "lib/analysis/injectivity_internal.h"
#include "lib/base/utf8.h"
#include "tokenize/tokenizer.h"

hsd_inj_params hsd_inj_default_params(void) {
    return (hsd_inj_params){.minimize = true, .seed = 1};
}

const char *hsd_inj_cause_name(hsd_inj_cause c) {
    switch (c) {
    case HSD_INJ_UNK: return "unk";
    case HSD_INJ_ADDED_TOKEN: return "added_token";
    case HSD_INJ_NORMALIZATION: return "normalization";
    case HSD_INJ_WHITESPACE: return "whitespace";
    case HSD_INJ_BYTES: return "byte_sequence";
    case HSD_INJ_OTHER: return "other";
    }
    return "other";
}

hsd_status hsd_inj_roundtrip(const hsd_tokenizer *tok, const char *s, size_t n, char **decoded,
                             size_t *dlen, bool *same) {
    int32_t *ids = NULL;
    size_t nid = 0;
    char *dec = NULL;
    size_t dl = 0;
    *same = false;
    hsd_status st = hsd_tokenizer_encode_alloc(tok, s, n, false, &ids, &nid);
    if (!st) st = hsd_tokenizer_decode_alloc(tok, ids, nid, false, &dec, &dl);
    hsd_free(ids);
    if (st) return st;
    *same = dl == n && (!n || !memcmp(dec, s, n));
    if (decoded) {
        *decoded = malloc(dl + 1);
        if (!*decoded) {
            hsd_free(dec);
            return hsd_error(HSD_ERR_NOMEM, "injectivity: out of memory");
        }
        memcpy(*decoded, dec, dl + 1);
        if (dlen) *dlen = dl;
    }
    hsd_free(dec);
    return HSD_OK;
}

/* ------------------------------------------------------------------ minimize ---- */

/* Character boundaries of s: off[i] is where character i starts, off[n_chars] == len. */
static size_t *char_offsets(const char *s, size_t n, size_t *n_chars) {
    size_t *off = malloc((n + 1) * sizeof *off), k = 0;
    if (!off) return NULL;
    for (size_t i = 0; i < n; i += (size_t)hsd_utf8_len((unsigned char)s[i])) off[k++] = i;
    off[k] = n;
    *n_chars = k;
    return off;
}

/* The test of ddmin: does the string made of the selected characters fail to round-trip? */
typedef struct ddctx {
    const hsd_tokenizer *tok;
    const char *s;
    const size_t *off;
    hsd_buf buf;
    int64_t tests;
    hsd_status st;
} ddctx;

static bool dd_fails(ddctx *c, const size_t *sel, size_t k) {
    c->buf.n = 0;
    for (size_t i = 0; i < k; i++) {
        size_t a = c->off[sel[i]], b = c->off[sel[i] + 1];
        if (hsd_buf_append(&c->buf, c->s + a, b - a)) {
            c->st = hsd_error(HSD_ERR_NOMEM, "injectivity: out of memory");
            return false;
        }
    }
    c->tests++;
    bool same = true;
    hsd_status st = hsd_inj_roundtrip(c->tok, c->buf.p ? c->buf.p : "", c->buf.n, NULL, NULL, &same);
    if (st) {
        c->st = st;
        return false;
    }
    return !same;
}

/* Bounds the minimizer's work: a 30 kB corpus line needs a few thousand tests. */
#define DD_MAX_TESTS 20000

hsd_status hsd_inj_minimize(const hsd_tokenizer *tok, const char *s, size_t n, char **out,
                            size_t *out_len) {
    size_t nc = 0;
    size_t *off = char_offsets(s, n, &nc);
    size_t *cur = calloc(nc + 1, sizeof *cur), *tmp = calloc(nc + 1, sizeof *tmp);
    if (!off || !cur || !tmp) {
        free(off);
        free(cur);
        free(tmp);
        return hsd_error(HSD_ERR_NOMEM, "injectivity: out of memory");
    }
    for (size_t i = 0; i < nc; i++) cur[i] = i;
    size_t k = nc;
    ddctx c = {.tok = tok, .s = s, .off = off};
    if (dd_fails(&c, cur, k)) {
        /* ddmin (Zeller & Hildebrandt): try each chunk alone, then each complement; refine
         * the granularity when neither fails. */
        size_t gran = 2;
        while (k >= 2 && !c.st && c.tests < DD_MAX_TESTS) {
            size_t chunk = (k + gran - 1) / gran;
            bool reduced = false;
            for (size_t a = 0; a < k && !reduced; a += chunk) {
                size_t b = a + chunk < k ? a + chunk : k;
                if (dd_fails(&c, cur + a, b - a)) {
                    memmove(cur, cur + a, (b - a) * sizeof *cur);
                    k = b - a;
                    gran = 2;
                    reduced = true;
                }
            }
            for (size_t a = 0; a < k && !reduced && gran > 2; a += chunk) {
                size_t b = a + chunk < k ? a + chunk : k, m = 0;
                for (size_t i = 0; i < k; i++)
                    if (i < a || i >= b) tmp[m++] = cur[i];
                if (dd_fails(&c, tmp, m)) {
                    memcpy(cur, tmp, m * sizeof *cur);
                    k = m;
                    gran = gran - 1 > 2 ? gran - 1 : 2;
                    reduced = true;
                }
            }
            if (!reduced) {
                if (gran >= k) break;
                gran = gran * 2 < k ? gran * 2 : k;
            }
        }
        /* Final 1-minimality pass (ddmin with gran == k already did it unless it ran out of
         * tests): drop single characters while the failure persists. */
        for (size_t i = 0; i < k && !c.st && c.tests < DD_MAX_TESTS && k > 1;) {
            size_t m = 0;
            for (size_t j = 0; j < k; j++)
                if (j != i) tmp[m++] = cur[j];
            if (dd_fails(&c, tmp, m)) {
                memcpy(cur, tmp, m * sizeof *cur);
                k = m;
            } else {
                i++;
            }
        }
    } else {
        k = nc;
        for (size_t i = 0; i < nc; i++) cur[i] = i;
    }
    hsd_status st = c.st;
    hsd_buf r = {0};
    for (size_t i = 0; !st && i < k; i++)
        if (hsd_buf_append(&r, s + off[cur[i]], off[cur[i] + 1] - off[cur[i]]))
            st = hsd_error(HSD_ERR_NOMEM, "injectivity: out of memory");
    if (!st && !r.p && hsd_buf_append(&r, "", 0)) st = hsd_error(HSD_ERR_NOMEM, "oom");
    hsd_buf_free(&c.buf);
    free(off);
    free(cur);
    free(tmp);
    if (st) {
        hsd_buf_free(&r);
        return st;
    }
    *out = r.p;
    *out_len = r.n;
    return HSD_OK;
}

/* ------------------------------------------------------------------ classify ---- */

/* The tokenizer's own normalizer, applied outside an encode call (private scratch). */
static hsd_status tok_normalize(const hsd_tokenizer *t, const char *s, size_t n, hsd_buf *out) {
    out->n = 0;
    if (!t->n_norm) return hsd_buf_append(out, s, n) ? HSD_ERR_NOMEM : HSD_OK;
    hsd_scratch sc;
    memset(&sc, 0, sizeof sc);
    sc.md = hsd_scratch_md_new();
    if (!sc.md) return hsd_error(HSD_ERR_NOMEM, "injectivity: out of memory");
    hsd_status st = hsd_norm_apply(t, s, n, out, &sc);
    hsd_buf_free(&sc.a);
    hsd_buf_free(&sc.b);
    hsd_buf_free(&sc.c);
    hsd_scratch_md_free(sc.md);
    return st;
}

/* Unicode normal forms through utf8proc; returns a malloc'ed string or NULL on failure. */
static char *nf(const char *s, size_t n, int opts, size_t *out_n) {
    utf8proc_uint8_t *dst = NULL;
    utf8proc_ssize_t r = utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &dst,
                                      (utf8proc_option_t)(opts | UTF8PROC_STABLE));
    if (r < 0) return NULL;
    *out_n = (size_t)r;
    return (char *)dst;
}

static bool eq(const char *a, size_t na, const char *b, size_t nb) {
    return na == nb && (!na || !memcmp(a, b, na));
}

/* Is there a normal form f with f(s) != s and f(s) == f(d)? */
static bool nf_explains(const char *s, size_t n, const char *d, size_t dn) {
    static const int forms[] = {
        UTF8PROC_COMPOSE,                                            /* NFC */
        UTF8PROC_COMPOSE | UTF8PROC_COMPAT,                          /* NFKC */
        UTF8PROC_COMPOSE | UTF8PROC_COMPAT | UTF8PROC_CASEFOLD,      /* NFKC + casefold */
        UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT | UTF8PROC_CASEFOLD | UTF8PROC_STRIPMARK, /* BERT */
    };
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        size_t a_n = 0, b_n = 0;
        char *a = nf(s, n, forms[i], &a_n), *b = nf(d, dn, forms[i], &b_n);
        bool ok = a && b && !eq(a, a_n, s, n) && eq(a, a_n, b, b_n);
        free(a);
        free(b);
        if (ok) return true;
    }
    return false;
}

/* s without whitespace, control and format characters. */
static int strip_ws(const char *s, size_t n, hsd_buf *out) {
    out->n = 0;
    for (size_t i = 0; i < n;) {
        int l;
        uint32_t cp = hsd_utf8_decode((const unsigned char *)s + i, &l);
        utf8proc_category_t cat = utf8proc_category((utf8proc_int32_t)cp);
        bool drop = hsd_uc_is_whitespace(cp) || cat == UTF8PROC_CATEGORY_CC ||
                    cat == UTF8PROC_CATEGORY_CF || cat == UTF8PROC_CATEGORY_ZS;
        if (!drop && hsd_buf_append(out, s + i, (size_t)l)) return -1;
        i += (size_t)l;
    }
    return hsd_buf_append(out, "", 0);
}

static bool contains(const char *h, size_t hn, const char *nd, size_t nn) {
    return nn && nn <= hn && memmem(h, hn, nd, nn) != NULL;
}

hsd_status hsd_inj_classify(const hsd_tokenizer *tok, const char *s, size_t n, hsd_inj_cause *cause) {
    *cause = HSD_INJ_OTHER;
    int32_t *ids = NULL;
    size_t nid = 0;
    char *d = NULL;
    size_t dn = 0;
    hsd_status st = hsd_tokenizer_encode_alloc(tok, s, n, false, &ids, &nid);
    if (!st) st = hsd_tokenizer_decode_alloc(tok, ids, nid, false, &d, &dn);
    if (st) goto done;

    for (size_t k = 0; k < tok->n_added; k++) {
        const hsd_added_token *a = &tok->added[k];
        if (!contains(s, n, a->content, a->len)) continue;
        for (size_t i = 0; i < nid; i++)
            if (ids[i] == a->id) {
                *cause = HSD_INJ_ADDED_TOKEN;
                goto done;
            }
    }
    int32_t unk = hsd_tokenizer_unk_id(tok);
    for (size_t i = 0; unk >= 0 && i < nid; i++)
        if (ids[i] == unk) {
            *cause = HSD_INJ_UNK;
            goto done;
        }
    hsd_buf x = {0}, y = {0};
    if ((st = tok_normalize(tok, s, n, &x)) || (st = tok_normalize(tok, d, dn, &y))) {
        hsd_buf_free(&x);
        hsd_buf_free(&y);
        goto done;
    }
    /* The tokenizer's normalizer maps input and output to the same string: it is what
     * made them collide (NFC/NFKC, Replace(" "→"▁") meeting a literal "▁", lowercasing). */
    bool norm = tok->n_norm && eq(x.p, x.n, y.p, y.n);
    if (!norm) norm = nf_explains(s, n, d, dn);
    if (norm) *cause = HSD_INJ_NORMALIZATION;
    if (!norm) {
        if (strip_ws(s, n, &x) || strip_ws(d, dn, &y)) {
            st = hsd_error(HSD_ERR_NOMEM, "injectivity: out of memory");
        } else if (eq(x.p, x.n, y.p, y.n)) {
            *cause = HSD_INJ_WHITESPACE;
        } else if (contains(d, dn, "\xEF\xBF\xBD", 3) && !contains(s, n, "\xEF\xBF\xBD", 3)) {
            *cause = HSD_INJ_BYTES;
        }
    }
    hsd_buf_free(&x);
    hsd_buf_free(&y);
done:
    hsd_free(ids);
    hsd_free(d);
    return st;
}

/* ------------------------------------------------------------------- results ---- */

hsd_status hsd_inj_result_add(hsd_inj_result *r, const hsd_tokenizer *tok, const char *s,
                              size_t n, int64_t sample, bool minimize) {
    if (r->n_ex == r->cap_ex) {
        size_t c = r->cap_ex ? r->cap_ex * 2 : 16;
        hsd_inj_example *p = realloc(r->ex, c * sizeof *p);
        if (!p) return hsd_error(HSD_ERR_NOMEM, "injectivity: out of memory");
        r->ex = p;
        r->cap_ex = c;
    }
    hsd_inj_example *e = &r->ex[r->n_ex];
    memset(e, 0, sizeof *e);
    e->sample = sample;
    e->cause = HSD_INJ_OTHER;
    e->input = malloc(n + 1);
    if (!e->input) return hsd_error(HSD_ERR_NOMEM, "injectivity: out of memory");
    memcpy(e->input, s, n);
    e->input[n] = 0;
    e->input_len = n;
    bool same;
    hsd_status st = hsd_inj_roundtrip(tok, s, n, &e->decoded, &e->decoded_len, &same);
    if (!st && minimize) st = hsd_inj_minimize(tok, s, n, &e->minimal, &e->minimal_len);
    if (!st && minimize) st = hsd_inj_classify(tok, e->minimal, e->minimal_len, &e->cause);
    if (st) {
        free(e->input);
        free(e->decoded);
        free(e->minimal);
        return st;
    }
    r->n_ex++;
    return HSD_OK;
}

hsd_status hsd_inj_check_corpus(const hsd_tokenizer *tok, const hsd_corpus *c,
                                const hsd_inj_params *o, hsd_inj_result *r) {
    if (!tok || !c || !o || !r)
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_inj_check_corpus: %s is NULL",
                         !tok ? "tokenizer"
                         : !c ? "corpus"
                         : !o ? "params"
                              : "result");
    for (size_t i = 0; i < c->n; i++) {
        size_t n = c->len[i];
        if (o->prefix_chars) { /* Appendix F: the first N characters of each sample */
            size_t chars = 0, b = 0;
            while (b < n && chars < o->prefix_chars) {
                b += (size_t)hsd_utf8_len((unsigned char)c->text[i][b]);
                chars++;
            }
            n = b < n ? b : n;
        }
        bool same;
        hsd_status st = hsd_inj_roundtrip(tok, c->text[i], n, NULL, NULL, &same);
        if (st) return hsd_error_prefix(st, "corpus sample %zu: ", i);
        r->samples++;
        if (same) continue;
        r->non_injective++;
        if ((st = hsd_inj_result_add(r, tok, c->text[i], n, (int64_t)i, o->minimize))) return st;
    }
    return HSD_OK;
}

void hsd_inj_result_free(hsd_inj_result *r) {
    if (!r) return;
    for (size_t i = 0; i < r->n_ex; i++) {
        free(r->ex[i].input);
        free(r->ex[i].decoded);
        free(r->ex[i].minimal);
    }
    free(r->ex);
    memset(r, 0, sizeof *r);
}
