/* Unicode-version alignment for regexes. HF tokenizers matches pre-tokenizer patterns with
 * Oniguruma, whose tables are Unicode 16.0; Debian's PCRE2 10.42 knows Unicode 14.0, so
 * characters added later (Kawi, CJK extension H and I, Garay, new emoji, ...) would not match
 * \p{L}, \p{S}, ... and text around them would split differently. Before compiling, each
 * \p{..} is widened with the ranges of the characters PCRE2 does not know, with the general
 * category HF's regex engine gives them (unicode_tables.c, generated from HF itself; ICU's
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

#include "lib/buf.h"
#include "tokenize/tokenizer.h"
#include "tokenize/unicode_tables.h"

#define N_GC 30

static const char *gc_names[N_GC] = {"Cn", "Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Me", "Mc", "Nd",
                                     "Nl", "No", "Zs", "Zl", "Zp", "Cc", "Cf", "Co", "Cs", "Pd",
                                     "Ps", "Pe", "Pc", "Po", "Sm", "Sc", "Sk", "So", "Pi", "Pf"};
/* ICU's UCharCategory values index gc_names (U_UNASSIGNED = 0 ... U_FINAL_PUNCTUATION = 29);
 * unicode_tables.c uses the same numbering. */

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
    for (size_t i = 0; i < hsd_uc_n_regex_gc; i++) {
        const hsd_uc_gc_run *r = &hsd_uc_regex_gc[i];
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

/* Does general category gc belong to the property named name (e.g. "L", "Lu", "S")? */
static bool gc_in(uint8_t gc, const char *name, size_t len) {
    if (gc >= N_GC) return false;
    const char *g = gc_names[gc];
    if (len == 1) return g[0] == name[0] && !(name[0] == 'C' && gc == 0);
    if (len == 2) return g[0] == name[0] && g[1] == name[1];
    return false;
}

static int append_ranges(hsd_buf *o, const char *name, size_t len, int *added) {
    char tmp[48];
    for (size_t i = 0; i < n_extra; i++) {
        if (!gc_in(extra[i].gc, name, len)) continue;
        int n = extra[i].lo == extra[i].hi
                    ? snprintf(tmp, sizeof tmp, "\\x{%X}", extra[i].lo)
                    : snprintf(tmp, sizeof tmp, "\\x{%X}-\\x{%X}", extra[i].lo, extra[i].hi);
        if (hsd_buf_append(o, tmp, (size_t)n)) return -1;
        *added = 1;
    }
    return 0;
}

/* The inside of a character class for \w: \p{L}\p{M}\p{Nd}\p{Pc}\p{Nl} (each widened when
 * `widen`) and the extra ranges of Oniguruma's or the Rust regex crate's word class. */
static int word_body(hsd_buf *out, bool rust, bool widen) {
    static const char *const cats[] = {"L", "M", "Nd", "Pc", "Nl"};
    const hsd_uc_range *x = rust ? hsd_uc_rust_word_extra : hsd_uc_onig_word_extra;
    size_t nx = rust ? hsd_uc_n_rust_word_extra : hsd_uc_n_onig_word_extra;
    char tmp[48];
    for (int c = 0; c < 5; c++) {
        int added, n = snprintf(tmp, sizeof tmp, "\\p{%s}", cats[c]);
        if (hsd_buf_append(out, tmp, (size_t)n) ||
            (widen && append_ranges(out, cats[c], strlen(cats[c]), &added)))
            return -1;
    }
    for (size_t r = 0; r < nx; r++) {
        int n = snprintf(tmp, sizeof tmp, "\\x{%X}-\\x{%X}", x[r].lo, x[r].hi);
        if (hsd_buf_append(out, tmp, (size_t)n)) return -1;
    }
    return 0;
}

/* HF's Whitespace pre-tokenizer, \w+|[^\w\s]+, runs on the Rust regex crate, whose \w
 * (UTS #18) differs from Oniguruma's: the pattern is written out with that class. */
int hsd_regex_whitespace_pattern(hsd_buf *out) {
    pthread_once(&once, build);
    out->n = 0;
    if (hsd_buf_push(out, '[') || word_body(out, true, false) || hsd_buf_append(out, "]+|[^", 5) ||
        word_body(out, true, false) || hsd_buf_append(out, "\\s]+", 4))
        return -1;
    return 0;
}

/* Rewrites pat into out (NUL-terminated). Returns 0, or -1 on allocation failure. */
int hsd_regex_widen(const char *pat, size_t len, hsd_buf *out) {
    pthread_once(&once, build);
    out->n = 0;
    bool in_class = false;
    for (size_t i = 0; i < len;) {
        char c = pat[i];
        if (c == '\\' && i + 1 < len) {
            char k = pat[i + 1];
            if (k == 's' || (k == 'S' && !in_class)) {
                const char *w = in_class   ? WHITE_SPACE
                                : k == 's' ? "[" WHITE_SPACE "]"
                                           : "[^" WHITE_SPACE "]";
                if (hsd_buf_append(out, w, strlen(w))) return -1;
                i += 2;
                continue;
            }
            if (k == 'd' || (k == 'D' && !in_class)) {
                /* \d is \p{Nd} in both engines; written out so that it gets widened too */
                int added,
                    bad = !in_class && hsd_buf_append(out, k == 'd' ? "[" : "[^", k == 'd' ? 1 : 2);
                bad = bad || hsd_buf_append(out, "\\p{Nd}", 6) ||
                      append_ranges(out, "Nd", 2, &added) || (!in_class && hsd_buf_push(out, ']'));
                if (bad) return -1;
                i += 2;
                continue;
            }
            if (k == 'w' || (k == 'W' && !in_class)) {
                /* Oniguruma's \w: [\p{L}\p{M}\p{Nd}\p{Pc}\p{Nl}extra], each \p widened */
                int bad =
                    (!in_class && hsd_buf_append(out, k == 'w' ? "[" : "[^", k == 'w' ? 1 : 2)) ||
                    word_body(out, false, true) || (!in_class && hsd_buf_push(out, ']'));
                if (bad) return -1;
                i += 2;
                continue;
            }
            if ((k == 'p' || k == 'P') && i + 2 < len) {
                const char *name;
                size_t nl, span;
                if (pat[i + 2] == '{') {
                    const char *close = memchr(pat + i + 3, '}', len - i - 3);
                    if (!close) goto plain;
                    name = pat + i + 3;
                    nl = (size_t)(close - name);
                    span = (size_t)(close - (pat + i)) + 1;
                } else {
                    name = pat + i + 2;
                    nl = 1;
                    span = 3;
                }
                if (nl < 1 || nl > 2 || (k == 'P' && in_class)) goto plain;
                hsd_buf ranges = {0};
                int added = 0;
                if (append_ranges(&ranges, name, nl, &added)) return -1;
                if (!added) {
                    hsd_buf_free(&ranges);
                    goto plain;
                }
                int bad;
                if (in_class) {
                    bad = hsd_buf_append(out, pat + i, span) ||
                          hsd_buf_append(out, ranges.p, ranges.n);
                } else {
                    /* \p{X} -> [\p{X}ranges]   \P{X} -> [^\p{X}ranges] */
                    bad = hsd_buf_append(out, k == 'P' ? "[^\\p" : "[\\p", k == 'P' ? 4 : 3) ||
                          hsd_buf_append(out, pat + i + 2, span - 2) ||
                          hsd_buf_append(out, ranges.p, ranges.n) || hsd_buf_push(out, ']');
                }
                hsd_buf_free(&ranges);
                if (bad) return -1;
                i += span;
                continue;
            }
        plain:
            if (hsd_buf_append(out, pat + i, 2)) return -1;
            i += 2;
            continue;
        }
        if (!in_class && c == '[') {
            in_class = true;
            if (hsd_buf_push(out, c)) return -1;
            i++;
            /* a ']' right after '[' or '[^' is a literal */
            if (i < len && pat[i] == '^') {
                if (hsd_buf_push(out, '^')) return -1;
                i++;
            }
            if (i < len && pat[i] == ']') {
                if (hsd_buf_push(out, ']')) return -1;
                i++;
            }
            continue;
        }
        if (in_class && c == '[' && i + 1 < len && pat[i + 1] == ':') {
            const char *end = strstr(pat + i + 2, ":]");
            if (end && (size_t)(end - pat) < len) {
                size_t span = (size_t)(end - (pat + i)) + 2;
                if (hsd_buf_append(out, pat + i, span)) return -1;
                i += span;
                continue;
            }
        }
        if (in_class && c == ']') in_class = false;
        if (hsd_buf_push(out, c)) return -1;
        i++;
    }
    if (!out->p && hsd_buf_append(out, "", 0)) return -1;
    return 0;
}

/* HF's normalization forms (the unicode-normalization-alignments crate) have Unicode 9.0
 * tables: characters assigned later are inert there (see normalizer.c). Unassigned code
 * points are inert in every version, so they count as "by 9.0" too. */
bool hsd_uc_assigned_by_v9(uint32_t cp) {
    UVersionInfo age;
    u_charAge((UChar32)cp, age);
    return age[0] <= 9; /* 0: unassigned in ICU */
}
