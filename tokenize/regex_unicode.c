/* Unicode-version alignment for regexes. HF tokenizers matches pre-tokenizer patterns with
 * Oniguruma, whose tables are Unicode 15.0; Debian's PCRE2 10.42 knows Unicode 14.0, so
 * characters added in 15.0 (new emoji such as U+1FAE8, Kawi, CJK extension H) would not
 * match \p{L}, \p{S}, ... and text around them would split differently. Before compiling,
 * each \p{..} is widened with the ranges of the characters PCRE2 does not know, taken from
 * ICU (Unicode 15.0). Nothing is added when PCRE2 is already as new as Oniguruma. */
#include <pcre2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unicode/uchar.h>
#include <unicode/uset.h>
#include <unicode/ustring.h>

#include "lib/buf.h"
#include "tokenize/tokenizer.h"

#define TARGET_MAJOR 15 /* Unicode version of HF's Oniguruma tables */
#define N_GC 30

static const char *gc_names[N_GC] = {"Cn", "Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Me", "Mc", "Nd",
                                     "Nl", "No", "Zs", "Zl", "Zp", "Cc", "Cf", "Co", "Cs", "Pd",
                                     "Ps", "Pe", "Pc", "Po", "Sm", "Sc", "Sk", "So", "Pi", "Pf"};
/* ICU's UCharCategory values index gc_names (U_UNASSIGNED = 0 ... U_FINAL_PUNCTUATION = 29). */

typedef struct {
    uint32_t lo, hi;
    uint8_t gc;
} range;

static range *extra;
static size_t n_extra;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void add_char(uint32_t c, size_t *cap) {
    uint8_t gc = (uint8_t)u_charType((UChar32)c);
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
    if (pmaj >= TARGET_MAJOR) return;
    /* ICU's Age property is cumulative: [:age=V:] is everything assigned by version V, so
     * the difference is exactly what PCRE2 does not know. */
    char pat[96];
    snprintf(pat, sizeof pat, "[[:age=%d.0:]-[:age=%d.%d:]]", TARGET_MAJOR, pmaj, pmin);
    UChar upat[96];
    u_uastrcpy(upat, pat);
    UErrorCode err = U_ZERO_ERROR;
    USet *set = uset_openPattern(upat, -1, &err);
    if (U_FAILURE(err) || !set) return;
    size_t cap = 0;
    int32_t nr = uset_getItemCount(set);
    for (int32_t i = 0; i < nr; i++) {
        UChar32 lo, hi;
        err = U_ZERO_ERROR;
        if (uset_getItem(set, i, &lo, &hi, NULL, 0, &err) != 0 || U_FAILURE(err)) continue;
        for (UChar32 c = lo; c <= hi; c++) add_char((uint32_t)c, &cap);
    }
    uset_close(set);
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

/* Rewrites pat into out (NUL-terminated). Returns 0, or -1 on allocation failure. */
int hsd_regex_widen(const char *pat, size_t len, hsd_buf *out) {
    pthread_once(&once, build);
    out->n = 0;
    bool in_class = false;
    for (size_t i = 0; i < len;) {
        char c = pat[i];
        if (c == '\\' && i + 1 < len) {
            char k = pat[i + 1];
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

/* Age-limited character classes for the components that HF implements with the
 * unicode_categories crate (BERT normalizer and pre-tokenizer): its tables predate Unicode
 * 9.0, so characters assigned later are not marks, punctuation or "other" there. */
bool hsd_uc_assigned_by_v8(uint32_t cp) {
    UVersionInfo age;
    u_charAge((UChar32)cp, age);
    return age[0] != 0 && age[0] <= 8;
}
