/* Unicode-version alignment for regexes. HF tokenizers matches pre-tokenizer patterns with
 * Oniguruma, whose tables are Unicode 16.0; Debian's PCRE2 10.42 knows Unicode 14.0, so
 * characters added later (Kawi, CJK extension H and I, Garay, new emoji, ...) would not match
 * \p{L}, \p{S}, ... and text around them would split differently. Before compiling, each
 * \p{..} is widened with the ranges of the characters PCRE2 does not know, with the general
 * category HF's regex engine gives them (unicode_gc_*.c, generated from HF itself; ICU's
 * Age says which characters PCRE2's Unicode version predates). \s is replaced by Unicode's
 * White_Space list, which is Oniguruma's \s (PCRE2 also counts U+180E as a space), and \w
 * by Oniguruma's word class, [\p{L}\p{M}\p{Nd}\p{Pc}\p{Nl}] plus the other Alphabetic
 * characters and joiners of the same tables (PCRE2 10.42's \w is only letters, numbers, _);
 * \d is written as a widened \p{Nd}. (\S, \W, \D inside a class are left to PCRE2: no
 * known pattern has them there.) */
#include <pcre2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unicode/uchar.h>
#include <unicode/uset.h>
#include <unicode/ustring.h>

#include "lib/base/buf.h"
#include "tokenize/tokenizer.h"
#include "tokenize/unicode_tables.h"

#define N_GC 30

static const char *gc_names[N_GC] = {"Cn", "Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Me", "Mc", "Nd",
                                     "Nl", "No", "Zs", "Zl", "Zp", "Cc", "Cf", "Co", "Cs", "Pd",
                                     "Ps", "Pe", "Pc", "Po", "Sm", "Sc", "Sk", "So", "Pi", "Pf"};
/* ICU's UCharCategory values index gc_names (U_UNASSIGNED = 0 ... U_FINAL_PUNCTUATION = 29);
 * unicode_gc_*.c use the same numbering. */

/* White_Space (Oniguruma's \s), as the inside of a character class */
#define WHITE_SPACE                                                                                \
    "\\t-\\r\\x20\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}"            \
    "\\x{205F}\\x{3000}"

typedef struct {
    uint32_t lo, hi;
    uint8_t gc;
} range;

static range *extra;
static size_t n_extra;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void add_char(uint32_t c, uint8_t gc, size_t *cap) {
    if (n_extra && extra[n_extra - 1].gc == gc && extra[n_extra - 1].hi + 1 == c) {
        extra[n_extra - 1].hi = c;
        return;
    }
    if (n_extra == *cap) {
        *cap = *cap ? *cap * 2 : 256;
        range *r = realloc(extra, *cap * sizeof *r);
        if (!r) return; /* keep what we have: patterns just stay narrower */
        extra = r;
    }
    extra[n_extra++] = (range){c, c, gc};
}

static void build(void) {
    char ver[32] = {0};
    pcre2_config(PCRE2_CONFIG_UNICODE_VERSION, ver);
    int pmaj = atoi(ver), pmin = 0;
    const char *dot = strchr(ver, '.');
    if (dot) pmin = atoi(dot + 1);
    size_t cap = 0;
    const hsd_uc_gc_run *const tables[2] = {hsd_uc_regex_gc_bmp, hsd_uc_regex_gc_supp};
    const size_t sizes[2] = {hsd_uc_n_regex_gc_bmp, hsd_uc_n_regex_gc_supp};
    for (int t = 0; t < 2; t++) {
        for (size_t i = 0; i < sizes[t]; i++) {
            const hsd_uc_gc_run *r = &tables[t][i];
            if (r->gc == 17 /* Co: private use, the same in every version */) continue;
            for (uint32_t c = r->lo; c <= r->hi; c++) {
                /* ICU's Age is cumulative: PCRE2 knows c if it was assigned by PCRE2's version.
                 * Characters ICU does not know (age 0) are newer than both. */
                UVersionInfo age;
                u_charAge((UChar32)c, age);
                bool known = age[0] && (age[0] < pmaj || (age[0] == pmaj && age[1] <= pmin));
                if (!known) add_char(c, r->gc, &cap);
            }
        }
    }
}

/* Does general category gc belong to the property named name (e.g. "L", "Lu", "S")? */
static bool gc_in(uint8_t gc, const char *name, size_t len) {
    if (gc >= N_GC) return false;
    const char *g = gc_names[gc];
    if (len == 1) return g[0] == name[0] && !(name[0] == 'C' && gc == 0);
    if (len == 2) return g[0] == name[0] && g[1] == name[1];
    return false;
}

/* The extra code points of one pattern atom (a \p, \w, \d or a whole class). */
typedef struct {
    range *p;
    size_t n, cap;
} rlist;

static int rl_add(rlist *l, uint32_t lo, uint32_t hi) {
    if (l->n == l->cap) {
        size_t c = l->cap ? l->cap * 2 : 64;
        range *r = realloc(l->p, c * sizeof *r);
        if (!r) return -1;
        l->p = r;
        l->cap = c;
    }
    l->p[l->n++] = (range){lo, hi, 0};
    return 0;
}

static int rl_add_cat(rlist *l, const char *name, size_t len) {
    for (size_t i = 0; i < n_extra; i++)
        if (gc_in(extra[i].gc, name, len) && rl_add(l, extra[i].lo, extra[i].hi)) return -1;
    return 0;
}

static int by_lo(const void *a, const void *b) {
    uint32_t x = ((const range *)a)->lo, y = ((const range *)b)->lo;
    return x < y ? -1 : x > y;
}

/* Appends an atom whose native PCRE2 form is `native` and which must also match the code
 * points of `ex` (or, when negated, must not). The extra ranges sit behind a one-compare
 * guard on their smallest code point, so that text below it (ASCII, most scripts) costs
 * what the native atom costs: a long range list in the class itself is checked for every
 * character that is not in the property, which made matching 2.5x slower. Unguarded
 * (`guarded` false), the ranges go into the class itself: slower, but a quantifier on a
 * class needs no backtracking stack, while (?:..)+ needs a frame per repetition and runs
 * out of JIT stack on words of ~10k letters; regex.c matches with that form then. */
static int emit_atom(hsd_buf *out, const char *native, size_t nlen, rlist *ex, bool negated,
                     bool guarded) {
    if (!ex->n) return hsd_buf_append(out, native, nlen);
    qsort(ex->p, ex->n, sizeof *ex->p, by_lo);
    size_t w = 0;
    for (size_t i = 1; i < ex->n; i++) {
        if (ex->p[i].lo <= ex->p[w].hi + 1) {
            if (ex->p[i].hi > ex->p[w].hi) ex->p[w].hi = ex->p[i].hi;
        } else
            ex->p[++w] = ex->p[i];
    }
    ex->n = w + 1;
    char tmp[64];
    int n;
    if (!guarded) { /* the ranges inside the class: [native ranges] */
        bool cls = native[0] == '[';
        bool bare_neg = !cls && native[1] == 'P'; /* \P{X} -> [^\p{X}ranges] */
        if (!cls && hsd_buf_append(out, bare_neg ? "[^\\p" : "[\\p", bare_neg ? 4 : 3)) return -1;
        if (hsd_buf_append(out, cls ? native : native + 2, cls ? nlen - 1 : nlen - 2)) return -1;
        for (size_t i = 0; i < ex->n; i++) {
            n = snprintf(tmp, sizeof tmp, "\\x{%X}-\\x{%X}", ex->p[i].lo, ex->p[i].hi);
            if (hsd_buf_append(out, tmp, (size_t)n)) return -1;
        }
        return hsd_buf_push(out, ']');
    }
    n = snprintf(tmp, sizeof tmp, "(?=[\\x{%X}-\\x{10FFFF}])[", ex->p[0].lo);
    /* positive: (?:native|(?=guard)[extra])   negated: (?:(?!(?=guard)[extra])native) */
    if (hsd_buf_append(out, negated ? "(?:(?!" : "(?:", negated ? 6 : 3) ||
        (!negated && (hsd_buf_append(out, native, nlen) || hsd_buf_push(out, '|'))) ||
        hsd_buf_append(out, tmp, (size_t)n))
        return -1;
    for (size_t i = 0; i < ex->n; i++) {
        n = snprintf(tmp, sizeof tmp, "\\x{%X}-\\x{%X}", ex->p[i].lo, ex->p[i].hi);
        if (hsd_buf_append(out, tmp, (size_t)n)) return -1;
    }
    if (hsd_buf_append(out, "])", 2)) return -1;
    if (negated && (hsd_buf_append(out, native, nlen) || hsd_buf_push(out, ')'))) return -1;
    return 0;
}

/* \w: Oniguruma's word class, or the Rust regex crate's (`rust`): \p{L}\p{M}\p{Nd}\p{Pc}\p{Nl}
 * (as the inside of a class) plus the extra ranges of unicode_classes.c; the characters PCRE2
 * does not know go to `ex` (NULL: leave them out). */
static int word_body(hsd_buf *out, bool rust, rlist *ex) {
    static const char *const cats[] = {"L", "M", "Nd", "Pc", "Nl"};
    const hsd_uc_range *x = rust ? hsd_uc_rust_word_extra : hsd_uc_onig_word_extra;
    size_t nx = rust ? hsd_uc_n_rust_word_extra : hsd_uc_n_onig_word_extra;
    char tmp[48];
    for (int c = 0; c < 5; c++) {
        int n = snprintf(tmp, sizeof tmp, "\\p{%s}", cats[c]);
        if (hsd_buf_append(out, tmp, (size_t)n) || (ex && rl_add_cat(ex, cats[c], strlen(cats[c]))))
            return -1;
    }
    for (size_t r = 0; r < nx; r++) {
        int n = snprintf(tmp, sizeof tmp, "\\x{%X}-\\x{%X}", x[r].lo, x[r].hi);
        if (hsd_buf_append(out, tmp, (size_t)n)) return -1;
    }
    return 0;
}

/* HF's Whitespace pre-tokenizer, \w+|[^\w\s]+, runs on the Rust regex crate, whose \w
 * (UTS #18) differs from Oniguruma's: the pattern is written out with that class (the
 * \p{..} in it are widened when it is compiled). */
int hsd_regex_whitespace_pattern(hsd_buf *out) {
    pthread_once(&once, build);
    out->n = 0;
    if (hsd_buf_push(out, '[') || word_body(out, true, NULL) || hsd_buf_append(out, "]+|[^", 5) ||
        word_body(out, true, NULL) || hsd_buf_append(out, "\\s]+", 4))
        return -1;
    return 0;
}

/* One escape at pat[i] ('\\'): appends its native form (`in_class`: as the inside of a
 * class) to `nat` and its extra code points to `ex`; *neg is set for \P \W \D \S outside a
 * class. Returns the bytes consumed, or 0 when the escape is copied as is, -1 on no memory. */
static long escape(const char *pat, size_t i, size_t len, bool in_class, hsd_buf *nat, rlist *ex,
                   bool *neg) {
    char k = pat[i + 1];
    bool upper = k == 'P' || k == 'W' || k == 'D' || k == 'S';
    if (upper && in_class) return 0; /* negated items inside a class: left to PCRE2 */
    *neg = upper;
    if (k == 's' || k == 'S') {
        if (!in_class && hsd_buf_push(nat, '[')) return -1;
        if (hsd_buf_append(nat, WHITE_SPACE, strlen(WHITE_SPACE))) return -1;
        if (!in_class && hsd_buf_push(nat, ']')) return -1;
        *neg = false; /* written as a class, no extras: [^WS] is fine as it is */
        if (k == 'S') {
            nat->n -= strlen(WHITE_SPACE) + 1;
            if (hsd_buf_push(nat, '^') || hsd_buf_append(nat, WHITE_SPACE, strlen(WHITE_SPACE)) ||
                hsd_buf_push(nat, ']'))
                return -1;
        }
        return 2;
    }
    if (k == 'd' || k == 'D') {
        if (hsd_buf_append(nat, k == 'd' ? "\\p{Nd}" : "\\P{Nd}", 6) || rl_add_cat(ex, "Nd", 2))
            return -1;
        return 2;
    }
    if (k == 'w' || k == 'W') {
        if (!in_class && hsd_buf_append(nat, k == 'w' ? "[" : "[^", k == 'w' ? 1 : 2)) return -1;
        if (word_body(nat, false, ex) || (!in_class && hsd_buf_push(nat, ']'))) return -1;
        return 2;
    }
    if ((k == 'p' || k == 'P') && i + 2 < len) {
        const char *name;
        size_t nl, span;
        if (pat[i + 2] == '{') {
            const char *close = memchr(pat + i + 3, '}', len - i - 3);
            if (!close) return 0;
            name = pat + i + 3;
            nl = (size_t)(close - name);
            span = (size_t)(close - (pat + i)) + 1;
        } else {
            name = pat + i + 2;
            nl = 1;
            span = 3;
        }
        if (nl < 1 || nl > 2) return 0; /* scripts etc.: PCRE2's own */
        if (hsd_buf_append(nat, pat + i, span) || rl_add_cat(ex, name, nl)) return -1;
        return (long)span;
    }
    return 0;
}

/* Rewrites pat into out (NUL-terminated). Returns 0, or -1 on allocation failure. */
int hsd_regex_widen(const char *pat, size_t len, bool guarded, hsd_buf *out) {
    pthread_once(&once, build);
    out->n = 0;
    hsd_buf nat = {0};
    rlist ex = {0};
    int rc = -1;
    for (size_t i = 0; i < len;) {
        char c = pat[i];
        nat.n = 0;
        ex.n = 0;
        bool neg = false;
        if (c == '\\' && i + 1 < len) {
            long used = escape(pat, i, len, false, &nat, &ex, &neg);
            if (used < 0) goto done;
            if (used == 0) {
                if (hsd_buf_append(out, pat + i, 2)) goto done;
                i += 2;
                continue;
            }
            if (emit_atom(out, nat.p, nat.n, &ex, neg, guarded)) goto done;
            i += (size_t)used;
            continue;
        }
        if (c != '[') {
            if (hsd_buf_push(out, c)) goto done;
            i++;
            continue;
        }
        /* a class: its items, natively, and the union of their extras */
        if (hsd_buf_push(&nat, '[')) goto done;
        i++;
        if (i < len && pat[i] == '^') {
            neg = true;
            if (hsd_buf_push(&nat, '^')) goto done;
            i++;
        }
        if (i < len && pat[i] == ']') { /* a ']' right after '[' or '[^' is a literal */
            if (hsd_buf_push(&nat, ']')) goto done;
            i++;
        }
        while (i < len && pat[i] != ']') {
            if (pat[i] == '\\' && i + 1 < len) {
                bool dummy;
                long used = escape(pat, i, len, true, &nat, &ex, &dummy);
                if (used < 0) goto done;
                if (used == 0) {
                    if (hsd_buf_append(&nat, pat + i, 2)) goto done;
                    used = 2;
                }
                i += (size_t)used;
                continue;
            }
            if (pat[i] == '[' && i + 1 < len && pat[i + 1] == ':') {
                const char *end = strstr(pat + i + 2, ":]");
                if (end && (size_t)(end - pat) < len) {
                    size_t span = (size_t)(end - (pat + i)) + 2;
                    if (hsd_buf_append(&nat, pat + i, span)) goto done;
                    i += span;
                    continue;
                }
            }
            if (hsd_buf_push(&nat, pat[i])) goto done;
            i++;
        }
        if (i < len) i++; /* the closing ']' (an unclosed class is left to PCRE2's error) */
        if (hsd_buf_push(&nat, ']') || emit_atom(out, nat.p, nat.n, &ex, neg, guarded)) goto done;
    }
    if (!out->p && hsd_buf_append(out, "", 0)) goto done;
    rc = 0;
done:
    hsd_buf_free(&nat);
    free(ex.p);
    return rc;
}

/* HF's normalization forms (the unicode-normalization-alignments crate) have Unicode 9.0
 * tables: characters assigned later are inert there (see normalizer.c). A bitmap of those
 * characters, built once from ICU's Age: calling u_charAge per character halved NFC's
 * speed on non-Latin text. Unassigned code points are inert in every version, so they
 * count as "by 9.0" too. */
static uint8_t after_v9[0x110000 / 8]; /* zero pages stay untouched until read */
static pthread_once_t v9_once = PTHREAD_ONCE_INIT;

static void v9_build(void) {
    UChar upat[64];
    u_uastrcpy(upat, "[[:^age=9.0:]-[:Cn:]]");
    UErrorCode err = U_ZERO_ERROR;
    USet *set = uset_openPattern(upat, -1, &err);
    if (U_FAILURE(err) || !set) return; /* then everything counts as 9.0: utf8proc alone */
    int32_t nr = uset_getItemCount(set);
    for (int32_t i = 0; i < nr; i++) {
        UChar32 lo, hi;
        err = U_ZERO_ERROR;
        if (uset_getItem(set, i, &lo, &hi, NULL, 0, &err) != 0 || U_FAILURE(err)) continue;
        for (UChar32 c = lo; c <= hi && c < 0x110000; c++)
            after_v9[c >> 3] |= (uint8_t)(1u << (c & 7));
    }
    uset_close(set);
}

bool hsd_uc_assigned_by_v9(uint32_t cp) {
    pthread_once(&v9_once, v9_build);
    return cp >= 0x110000 || !(after_v9[cp >> 3] & (1u << (cp & 7)));
}
