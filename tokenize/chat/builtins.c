/* Filters, tests, global functions and str/dict/list methods that chat templates use, with
 * the behaviour of Jinja2 3.1 / Python 3 (the sandbox's view: methods that mutate a list or
 * dict are blocked, range() is capped at 100000 items). */
#include "tokenize/chat/chat_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <utf8proc.h>

enum { G_RANGE = 1, G_DICT, G_NAMESPACE, G_RAISE, G_STRFTIME, G_LIPSUM, G_CYCLER, G_JOINER };

int jb_global(const char *n, size_t len) {
    (void)len;
    if (!strcmp(n, "range")) return G_RANGE;
    if (!strcmp(n, "dict")) return G_DICT;
    if (!strcmp(n, "namespace")) return G_NAMESPACE;
    if (!strcmp(n, "raise_exception")) return G_RAISE;
    if (!strcmp(n, "strftime_now")) return G_STRFTIME;
    if (!strcmp(n, "lipsum")) return G_LIPSUM;
    if (!strcmp(n, "cycler")) return G_CYCLER;
    if (!strcmp(n, "joiner")) return G_JOINER;
    return 0;
}

static int argc_err(jctx *x, const char *what, size_t max, size_t got) {
    return jx_fail(x, JX_RT, "TypeError: %s takes at most %zu argument(s) (%zu given)", what, max, got);
}

/* positional-or-keyword argument lookup: i-th positional, else keyword `name`, else NULL */
static const jv *arg(jv *pos, size_t np, const char **kwn, jv *kwv, size_t nk, size_t i, const char *name) {
    if (i < np) return &pos[i];
    for (size_t k = 0; k < nk; k++)
        if (name && !strcmp(kwn[k], name)) return &kwv[k];
    return NULL;
}

static int new_str(jctx *x, jsb *b, jv *out) {
    if (b->oom) { jsb_free(b); return jx_oom(x); }
    char *s = ja_strdup(x->ar, b->p ? b->p : "", b->n);
    size_t n = b->n;
    jsb_free(b);
    if (!s) return jx_oom(x);
    *out = jv_str(s, n);
    return 0;
}

static int need_str(jctx *x, jv v, const char *what) {
    if (v.t == JV_STR) return 0;
    return jx_fail(x, JX_RT, "TypeError: %s expects a string, got '%s'", what, jv_type_name(v));
}

/* ---- globals -------------------------------------------------------------------- */
int jb_call_global(jctx *x, int fn, jv *pos, size_t np, const char **kwn, jv *kwv, size_t nk, jv *out) {
    switch (fn) {
    case G_RANGE: {
        int64_t a[3] = {0, 0, 1};
        if (np < 1 || np > 3 || nk) return jx_fail(x, JX_RT, "TypeError: range expected 1 to 3 integer arguments");
        for (size_t i = 0; i < np; i++) {
            if (pos[i].t == JV_UNDEF) return jx_undefined_error(x, pos[i]);
            if (pos[i].t != JV_INT && pos[i].t != JV_BOOL)
                return jx_fail(x, JX_RT, "TypeError: '%s' object cannot be interpreted as an integer", jv_type_name(pos[i]));
        }
        if (np == 1) a[1] = pos[0].u.i;
        else { a[0] = pos[0].u.i; a[1] = pos[1].u.i; if (np == 3) a[2] = pos[2].u.i; }
        if (a[2] == 0) return jx_fail(x, JX_RT, "ValueError: range() arg 3 must not be zero");
        double cnt = a[2] > 0 ? ceil(((double)a[1] - (double)a[0]) / (double)a[2]) : ceil(((double)a[0] - (double)a[1]) / (double)-a[2]);
        if (cnt < 0) cnt = 0;
        if (cnt > 100000) return jx_fail(x, JX_RT, "OverflowError: Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
        jlist *l = jl_new(x->ar, (size_t)cnt);
        if (!l) return jx_oom(x);
        for (int64_t v = a[0]; a[2] > 0 ? v < a[1] : v > a[1]; v += a[2]) {
            if (l->n >= (size_t)cnt) break;
            l->v[l->n++] = jv_int(v);
        }
        *out = jv_list(l);
        return 0;
    }
    case G_DICT: case G_NAMESPACE: {
        jdict *d = jd_new(x->ar, nk);
        if (!d) return jx_oom(x);
        if (np > 1) return argc_err(x, fn == G_DICT ? "dict" : "namespace", 1, np);
        if (np == 1) {
            if (pos[0].t != JV_DICT) return jx_fail(x, JX_RT, "TypeError: cannot convert '%s' to a dict", jv_type_name(pos[0]));
            for (size_t i = 0; i < pos[0].u.d->n; i++)
                if (jd_set(x->ar, d, pos[0].u.d->k[i], pos[0].u.d->v[i])) return jx_oom(x);
        }
        for (size_t i = 0; i < nk; i++)
            if (jd_set(x->ar, d, jv_str(kwn[i], strlen(kwn[i])), kwv[i])) return jx_oom(x);
        *out = jv_dict(d);
        if (fn == G_NAMESPACE) out->t = JV_NS;
        return 0;
    }
    case G_RAISE: {
        /* the message reaches the caller verbatim */
        jv m = np ? pos[0] : nk ? kwv[0] : jv_none();
        jsb b = {0};
        jv_str_to(&b, m);
        jx_fail(x, JX_RT, "%s", b.p ? b.p : "");
        jsb_free(&b);
        return -1;
    }
    case G_STRFTIME: {
        if (np != 1 || nk) return jx_fail(x, JX_RT, "TypeError: strftime_now() takes one argument");
        if (need_str(x, pos[0], "strftime_now")) return -1;
        struct tm tm;
        time_t t = x->now_unix >= 0 ? (time_t)x->now_unix : time(NULL);
        if (x->now_unix >= 0) gmtime_r(&t, &tm);
        else localtime_r(&t, &tm);
        char fmt[256], buf[512];
        if (pos[0].u.s.n >= sizeof fmt) return jx_fail(x, JX_RT, "strftime_now: format too long");
        memcpy(fmt, pos[0].u.s.p, pos[0].u.s.n);
        fmt[pos[0].u.s.n] = 0;
        size_t n = fmt[0] ? strftime(buf, sizeof buf, fmt, &tm) : 0;
        char *s = ja_strdup(x->ar, buf, n);
        if (!s) return jx_oom(x);
        *out = jv_str(s, n);
        return 0;
    }
    default:
        return jx_fail(x, HSD_ERR_UNSUPPORTED, "this global function is not supported");
    }
}

/* ---- string helpers ------------------------------------------------------------- */
static int map_case(jctx *x, jv s, int mode, jv *out) { /* 0 lower, 1 upper, 2 capitalize, 3 title, 4 swapcase */
    jsb b = {0};
    size_t i = 0;
    int prev_cased = 0, first = 1;
    while (i < s.u.s.n) {
        uint32_t c = ju_dec(s.u.s.p, s.u.s.n, &i);
        uint32_t r = c;
        int cased = utf8proc_tolower((utf8proc_int32_t)c) != (utf8proc_int32_t)c ||
                    utf8proc_toupper((utf8proc_int32_t)c) != (utf8proc_int32_t)c;
        switch (mode) {
        case 0: r = (uint32_t)utf8proc_tolower((utf8proc_int32_t)c); break;
        case 1: r = (uint32_t)utf8proc_toupper((utf8proc_int32_t)c); break;
        case 2: r = first ? (uint32_t)utf8proc_totitle((utf8proc_int32_t)c) : (uint32_t)utf8proc_tolower((utf8proc_int32_t)c); break;
        case 3: r = prev_cased ? (uint32_t)utf8proc_tolower((utf8proc_int32_t)c) : (uint32_t)utf8proc_totitle((utf8proc_int32_t)c); break;
        case 4: r = utf8proc_islower((utf8proc_int32_t)c) ? (uint32_t)utf8proc_toupper((utf8proc_int32_t)c) : (uint32_t)utf8proc_tolower((utf8proc_int32_t)c); break;
        }
        if (c == 0x130 && mode == 0) { ju_enc(&b, 'i'); ju_enc(&b, 0x307); }
        else if (c == 0xDF && (mode == 1)) { ju_enc(&b, 'S'); ju_enc(&b, 'S'); }
        else ju_enc(&b, r);
        prev_cased = cased;
        first = 0;
    }
    return new_str(x, &b, out);
}

static int in_chars(uint32_t c, const jv *chars) {
    if (!chars || chars->t != JV_STR) return ju_isspace(c);
    size_t i = 0;
    while (i < chars->u.s.n)
        if (ju_dec(chars->u.s.p, chars->u.s.n, &i) == c) return 1;
    return 0;
}

static jv do_strip(jv s, const jv *chars, int left, int right) {
    const char *p = s.u.s.p;
    size_t a = 0, b = s.u.s.n;
    if (left)
        while (a < b) {
            size_t k = a;
            uint32_t c = ju_dec(p, b, &k);
            if (!in_chars(c, chars)) break;
            a = k;
        }
    if (right)
        while (b > a) {
            size_t st = b - 1;
            while (st > a && ((unsigned char)p[st] & 0xC0) == 0x80) st--;
            size_t k = st;
            uint32_t c = ju_dec(p, b, &k);
            if (!in_chars(c, chars)) break;
            b = st;
        }
    return jv_str(p + a, b - a);
}

static int do_split(jctx *x, jv s, const jv *sep, int64_t maxsplit, int from_right, jv *out) {
    jlist *l = jl_new(x->ar, 0);
    if (!l) return jx_oom(x);
    const char *p = s.u.s.p;
    size_t n = s.u.s.n;
    if (sep && sep->t == JV_STR) {
        if (!sep->u.s.n) return jx_fail(x, JX_RT, "ValueError: empty separator");
        const char *sp = sep->u.s.p;
        size_t sn = sep->u.s.n;
        if (!from_right) {
            size_t st = 0;
            while (maxsplit < 0 || (int64_t)l->n < maxsplit) {
                const char *f = st <= n ? memmem(p + st, n - st, sp, sn) : NULL;
                if (!f) break;
                if (jl_push(x->ar, l, jv_str(p + st, (size_t)(f - p) - st))) return jx_oom(x);
                st = (size_t)(f - p) + sn;
            }
            if (jl_push(x->ar, l, jv_str(p + st, n - st))) return jx_oom(x);
        } else {
            jv parts[4096];
            size_t np = 0, end = n;
            while ((maxsplit < 0 || (int64_t)np < maxsplit) && np < 4095) {
                size_t found = SIZE_MAX;
                for (size_t k = end >= sn ? end - sn + 1 : 0; k-- > 0;)
                    if (memcmp(p + k, sp, sn) == 0) { found = k; break; }
                if (found == SIZE_MAX) break;
                parts[np++] = jv_str(p + found + sn, end - found - sn);
                end = found;
            }
            if (jl_push(x->ar, l, jv_str(p, end))) return jx_oom(x);
            while (np) if (jl_push(x->ar, l, parts[--np])) return jx_oom(x);
        }
    } else {
        /* runs of whitespace; leading/trailing ignored */
        if (from_right && maxsplit >= 0) {
            /* rare: rsplit() with maxsplit; split everything then rejoin the head */
            jv all;
            if (do_split(x, s, NULL, -1, 0, &all)) return -1;
            jlist *al = all.u.l;
            if ((int64_t)al->n <= maxsplit + 1) { *out = all; return 0; }
            size_t keep = al->n - (size_t)maxsplit;
            const char *hs = al->v[0].u.s.p, *he = al->v[keep - 1].u.s.p + al->v[keep - 1].u.s.n;
            if (jl_push(x->ar, l, jv_str(hs, (size_t)(he - hs)))) return jx_oom(x);
            for (size_t k = keep; k < al->n; k++) if (jl_push(x->ar, l, al->v[k])) return jx_oom(x);
            *out = jv_list(l);
            return 0;
        }
        size_t i = 0;
        for (;;) {
            while (i < n) {
                size_t k = i;
                if (!ju_isspace(ju_dec(p, n, &k))) break;
                i = k;
            }
            if (i >= n) break;
            if (maxsplit >= 0 && (int64_t)l->n >= maxsplit) {
                jv rest = do_strip(jv_str(p + i, n - i), NULL, 0, 1);
                if (jl_push(x->ar, l, rest)) return jx_oom(x);
                break;
            }
            size_t st = i;
            while (i < n) {
                size_t k = i;
                if (ju_isspace(ju_dec(p, n, &k))) break;
                i = k;
            }
            if (jl_push(x->ar, l, jv_str(p + st, i - st))) return jx_oom(x);
        }
    }
    *out = jv_list(l);
    return 0;
}

static int do_replace(jctx *x, jv s, jv old, jv nw, int64_t count, jv *out) {
    if (need_str(x, old, "replace") || need_str(x, nw, "replace")) return -1;
    jsb b = {0};
    const char *p = s.u.s.p;
    size_t n = s.u.s.n, i = 0;
    int64_t done = 0;
    if (old.u.s.n == 0) {
        /* Python inserts the replacement between every character */
        while (count < 0 || done < count) {
            jsb_put(&b, nw.u.s.p, nw.u.s.n);
            done++;
            if (i >= n) break;
            size_t k = i;
            ju_dec(p, n, &k);
            jsb_put(&b, p + i, k - i);
            i = k;
        }
        jsb_put(&b, p + i, n - i);
        return new_str(x, &b, out);
    }
    while (count < 0 || done < count) {
        const char *f = memmem(p + i, n - i, old.u.s.p, old.u.s.n);
        if (!f) break;
        jsb_put(&b, p + i, (size_t)(f - p) - i);
        jsb_put(&b, nw.u.s.p, nw.u.s.n);
        i = (size_t)(f - p) + old.u.s.n;
        done++;
        if (b.n > x->max_output) { jsb_free(&b); return jx_fail(x, HSD_ERR_OUT_OF_RANGE, "string exceeds the output limit"); }
    }
    jsb_put(&b, p + i, n - i);
    return new_str(x, &b, out);
}

static int join_values(jctx *x, jlist *l, jv sep, jv *out) {
    jsb b = {0};
    for (size_t i = 0; i < l->n; i++) {
        if (i) jv_str_to(&b, sep);
        jv_str_to(&b, l->v[i]);
        if (b.n > x->max_output) { jsb_free(&b); return jx_fail(x, HSD_ERR_OUT_OF_RANGE, "string exceeds the output limit"); }
    }
    return new_str(x, &b, out);
}

/* startswith/endswith with a string or a tuple of strings */
static int affix(jctx *x, jv s, jv a, int end, int *res) {
    if (a.t == JV_LIST) {
        *res = 0;
        for (size_t i = 0; i < a.u.l->n; i++) {
            int r;
            if (affix(x, s, a.u.l->v[i], end, &r)) return -1;
            if (r) { *res = 1; break; }
        }
        return 0;
    }
    if (a.t != JV_STR)
        return jx_fail(x, JX_RT, "TypeError: %s first arg must be str or a tuple of str, not %s",
                       end ? "endswith" : "startswith", jv_type_name(a));
    *res = a.u.s.n <= s.u.s.n && memcmp(end ? s.u.s.p + s.u.s.n - a.u.s.n : s.u.s.p, a.u.s.p, a.u.s.n) == 0;
    return 0;
}

static int str_pred(jv s, int kind) { /* 0 digit 1 alpha 2 alnum 3 space 4 lower 5 upper */
    if (!s.u.s.n) return 0;
    size_t i = 0;
    int cased = 0;
    while (i < s.u.s.n) {
        uint32_t c = ju_dec(s.u.s.p, s.u.s.n, &i);
        utf8proc_category_t cat = utf8proc_category((utf8proc_int32_t)c);
        int digit = cat == UTF8PROC_CATEGORY_ND;
        int alpha = cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO;
        switch (kind) {
        case 0: if (!digit) return 0; break;
        case 1: if (!alpha) return 0; break;
        case 2: if (!alpha && !digit && cat != UTF8PROC_CATEGORY_NL && cat != UTF8PROC_CATEGORY_NO) return 0; break;
        case 3: if (!ju_isspace(c)) return 0; break;
        case 4: if (utf8proc_isupper((utf8proc_int32_t)c) || cat == UTF8PROC_CATEGORY_LT) return 0; if (utf8proc_islower((utf8proc_int32_t)c)) cased = 1; break;
        case 5: if (utf8proc_islower((utf8proc_int32_t)c) || cat == UTF8PROC_CATEGORY_LT) return 0; if (utf8proc_isupper((utf8proc_int32_t)c)) cased = 1; break;
        }
    }
    return kind >= 4 ? cased : 1;
}

static int str_find(jv s, jv sub, int rev) {
    if (sub.u.s.n > s.u.s.n) return -1;
    size_t pos = SIZE_MAX;
    if (!rev) {
        const char *f = sub.u.s.n ? memmem(s.u.s.p, s.u.s.n, sub.u.s.p, sub.u.s.n) : s.u.s.p;
        if (f) pos = (size_t)(f - s.u.s.p);
    } else {
        for (size_t k = s.u.s.n - sub.u.s.n + 1; k-- > 0;)
            if (memcmp(s.u.s.p + k, sub.u.s.p, sub.u.s.n) == 0) { pos = k; break; }
    }
    return pos == SIZE_MAX ? -1 : (int)ju_len(s.u.s.p, pos);
}

static int pad_str(jctx *x, jv s, int64_t width, jv fill, int mode, jv *out) { /* 0 left(ljust) 1 right(rjust) 2 center */
    size_t len = ju_len(s.u.s.p, s.u.s.n);
    if (width <= (int64_t)len) { *out = s; return 0; }
    if (width > (int64_t)x->max_output) return jx_fail(x, HSD_ERR_OUT_OF_RANGE, "padding exceeds the output limit");
    size_t total = (size_t)width - len, l = mode == 0 ? 0 : mode == 1 ? total : total / 2 + (total & (size_t)width & 1);
    if (mode == 2) l = total / 2 + ((total & 1) && (width & 1) ? 1 : 0);
    jsb b = {0};
    const char *f = fill.t == JV_STR && fill.u.s.n ? fill.u.s.p : " ";
    size_t fn = fill.t == JV_STR && fill.u.s.n ? fill.u.s.n : 1;
    for (size_t i = 0; i < l; i++) jsb_put(&b, f, fn);
    jsb_put(&b, s.u.s.p, s.u.s.n);
    for (size_t i = l; i < total; i++) jsb_put(&b, f, fn);
    return new_str(x, &b, out);
}

/* str.format: {} {0} {name} {name.attr} {x[key]} with !r/!s; format specs are not supported */
static int str_format(jctx *x, jv s, jv *pos, size_t np, const char **kwn, jv *kwv, size_t nk, jv *out) {
    jsb b = {0};
    const char *p = s.u.s.p;
    size_t n = s.u.s.n, auto_i = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '{' && i + 1 < n && p[i + 1] == '{') { jsb_putc(&b, '{'); i++; continue; }
        if (p[i] == '}' && i + 1 < n && p[i + 1] == '}') { jsb_putc(&b, '}'); i++; continue; }
        if (p[i] != '{') { jsb_putc(&b, p[i]); continue; }
        size_t j = i + 1;
        while (j < n && p[j] != '}') j++;
        if (j >= n) { jsb_free(&b); return jx_fail(x, JX_RT, "ValueError: Single '{' encountered in format string"); }
        char field[128];
        size_t fl = j - i - 1 < sizeof field - 1 ? j - i - 1 : sizeof field - 1;
        memcpy(field, p + i + 1, fl);
        field[fl] = 0;
        char *conv = strchr(field, '!');
        char *spec = strchr(field, ':');
        int repr = conv && conv[1] == 'r';
        if (conv) *conv = 0;
        if (spec) {
            if (spec[1]) { jsb_free(&b); return jx_fail(x, HSD_ERR_UNSUPPORTED, "str.format specs are not supported"); }
            *spec = 0;
        }
        jv v = jv_undef(NULL);
        if (!field[0]) {
            if (auto_i >= np) { jsb_free(&b); return jx_fail(x, JX_RT, "IndexError: Replacement index %zu out of range", auto_i); }
            v = pos[auto_i++];
        } else if (field[0] >= '0' && field[0] <= '9') {
            size_t k = (size_t)atoi(field);
            if (k >= np) { jsb_free(&b); return jx_fail(x, JX_RT, "IndexError: Replacement index %zu out of range", k); }
            v = pos[k];
        } else {
            int found = 0;
            for (size_t k = 0; k < nk; k++)
                if (!strcmp(kwn[k], field)) { v = kwv[k]; found = 1; }
            if (!found) { jsb_free(&b); return jx_fail(x, JX_RT, "KeyError: '%s'", field); }
        }
        if (repr) jv_repr_to(&b, v);
        else jv_str_to(&b, v);
        i = j;
    }
    return new_str(x, &b, out);
}

/* printf-style "fmt % args" */
int jb_percent_format(jctx *x, jv fmt, jv args, jv *out) {
    jsb b = {0};
    const char *p = fmt.u.s.p;
    size_t n = fmt.u.s.n, ai = 0;
    jlist one = {1, 1, &args};
    jlist *al = args.t == JV_LIST && args.tuple ? args.u.l : &one;
    for (size_t i = 0; i < n; i++) {
        if (p[i] != '%') { jsb_putc(&b, p[i]); continue; }
        if (++i >= n) { jsb_free(&b); return jx_fail(x, JX_RT, "ValueError: incomplete format"); }
        if (p[i] == '%') { jsb_putc(&b, '%'); continue; }
        jv v;
        if (p[i] == '(') {
            size_t j = i + 1;
            while (j < n && p[j] != ')') j++;
            if (j >= n || args.t != JV_DICT) { jsb_free(&b); return jx_fail(x, JX_RT, "TypeError: format requires a mapping"); }
            const jv *f = jd_gets(args.u.d, p + i + 1, j - i - 1);
            if (!f) { jsb_free(&b); return jx_fail(x, JX_RT, "KeyError: '%.*s'", (int)(j - i - 1), p + i + 1); }
            v = *f;
            i = j + 1;
        } else {
            if (ai >= al->n) { jsb_free(&b); return jx_fail(x, JX_RT, "TypeError: not enough arguments for format string"); }
            v = al->v[ai++];
        }
        char spec[32];
        size_t sl = 0;
        spec[sl++] = '%';
        while (i < n && strchr("-+ #0123456789.", p[i]) && sl < 24) spec[sl++] = p[i++];
        if (i >= n) { jsb_free(&b); return jx_fail(x, JX_RT, "ValueError: incomplete format"); }
        char c = p[i];
        if (c == 's' || c == 'r') {
            jsb t = {0};
            if (c == 'r') jv_repr_to(&t, v); else jv_str_to(&t, v);
            jsb_put(&b, t.p ? t.p : "", t.n);
            jsb_free(&t);
        } else if (strchr("dixXo", c)) {
            if (!jv_is_num(v)) { jsb_free(&b); return jx_fail(x, JX_RT, "TypeError: %%%c format: a real number is required, not %s", c, jv_type_name(v)); }
            spec[sl++] = 'l'; spec[sl++] = 'l'; spec[sl++] = c == 'i' ? 'd' : c; spec[sl] = 0;
            long long iv = v.t == JV_FLOAT ? (long long)v.u.f : (long long)v.u.i;
            jsb_printf(&b, spec, iv);
        } else if (strchr("feEgG", c)) {
            if (!jv_is_num(v)) { jsb_free(&b); return jx_fail(x, JX_RT, "TypeError: must be real number, not %s", jv_type_name(v)); }
            spec[sl++] = c; spec[sl] = 0;
            jsb_printf(&b, spec, jv_num(v));
        } else { jsb_free(&b); return jx_fail(x, JX_RT, "ValueError: unsupported format character '%c'", c); }
    }
    if (ai < al->n && al != &one) { jsb_free(&b); return jx_fail(x, JX_RT, "TypeError: not all arguments converted during string formatting"); }
    return new_str(x, &b, out);
}

/* ---- methods -------------------------------------------------------------------- */
static const char *STR_METHODS[] = {"startswith", "endswith", "split", "rsplit", "strip", "lstrip", "rstrip",
    "upper", "lower", "title", "capitalize", "swapcase", "replace", "find", "rfind", "index", "rindex", "count",
    "join", "format", "splitlines", "isdigit", "isalpha", "isalnum", "isspace", "islower", "isupper",
    "isnumeric", "isdecimal", "zfill", "center", "ljust", "rjust", "partition", "rpartition",
    "removeprefix", "removesuffix", "casefold", "encode", "expandtabs", "istitle", "isidentifier",
    "isprintable", "isascii", "translate", "maketrans", "format_map", NULL};
static const char *DICT_METHODS[] = {"get", "items", "keys", "values", "copy", "fromkeys", NULL};
static const char *DICT_MUT[] = {"pop", "popitem", "setdefault", "update", "clear", NULL};
static const char *LIST_METHODS[] = {"index", "count", "copy", NULL};
static const char *LIST_MUT[] = {"append", "extend", "insert", "pop", "remove", "reverse", "sort", "clear", NULL};

static int in_set(const char *const *set, const char *n) {
    for (; *set; set++)
        if (!strcmp(*set, n)) return 1;
    return 0;
}

int jb_is_method(jv self, const char *name) {
    switch (self.t) {
    case JV_STR: return in_set(STR_METHODS, name);
    case JV_DICT: return in_set(DICT_METHODS, name) ? 1 : in_set(DICT_MUT, name) ? 2 : 0;
    case JV_LIST:
        if (self.tuple) return !strcmp(name, "index") || !strcmp(name, "count");
        return in_set(LIST_METHODS, name) ? 1 : in_set(LIST_MUT, name) ? 2 : 0;
    default: return 0;
    }
}

#define ARG(i, name) arg(pos, np, kwn, kwv, nk, i, name)

static int64_t int_or(const jv *v, int64_t d) { return v && (v->t == JV_INT || v->t == JV_BOOL) ? v->u.i : d; }

int jb_method(jctx *x, jv self, const char *name, jv *pos, size_t np, const char **kwn, jv *kwv, size_t nk, jv *out) {
    if (self.t == JV_LOOP) {
        jloop *lp = self.u.ptr;
        if (!strcmp(name, "cycle")) {
            if (!np) return jx_fail(x, JX_RT, "TypeError: no items for cycling given");
            *out = pos[lp->i % np];
            return 0;
        }
        /* changed(*values) */
        jlist *l = jl_new(x->ar, np);
        if (!l) return jx_oom(x);
        for (size_t i = 0; i < np; i++) l->v[l->n++] = pos[i];
        jv cur = jv_list(l);
        int ch = !lp->changed_init || !jv_eq(cur, lp->changed_last);
        lp->changed_init = 1;
        lp->changed_last = cur;
        *out = jv_bool(ch);
        return 0;
    }
    if (self.t == JV_DICT) {
        jdict *d = self.u.d;
        if (!strcmp(name, "get")) {
            const jv *k = ARG(0, "key"), *def = ARG(1, "default");
            if (!k) return jx_fail(x, JX_RT, "TypeError: get expected at least 1 argument, got 0");
            const jv *v = jd_get(d, *k);
            *out = v ? *v : def ? *def : jv_none();
            return 0;
        }
        if (!strcmp(name, "items") || !strcmp(name, "keys") || !strcmp(name, "values")) {
            jlist *l = jl_new(x->ar, d->n);
            if (!l) return jx_oom(x);
            for (size_t i = 0; i < d->n; i++) {
                if (name[0] == 'k') l->v[l->n++] = d->k[i];
                else if (name[0] == 'v') l->v[l->n++] = d->v[i];
                else {
                    jlist *pair = jl_new(x->ar, 2);
                    if (!pair) return jx_oom(x);
                    pair->v[0] = d->k[i];
                    pair->v[1] = d->v[i];
                    pair->n = 2;
                    l->v[l->n] = jv_list(pair);
                    l->v[l->n++].tuple = 1;
                }
            }
            *out = jv_list(l);
            return 0;
        }
        if (!strcmp(name, "copy")) { *out = self; return 0; }
        return jx_fail(x, HSD_ERR_UNSUPPORTED, "dict.%s() is not supported", name);
    }
    if (self.t == JV_LIST) {
        jlist *l = self.u.l;
        const jv *a0 = ARG(0, NULL);
        if (!strcmp(name, "copy")) { *out = self; return 0; }
        if (!a0) return jx_fail(x, JX_RT, "TypeError: %s() takes exactly one argument (0 given)", name);
        if (!strcmp(name, "count")) {
            int64_t c = 0;
            for (size_t i = 0; i < l->n; i++) c += jv_eq(l->v[i], *a0);
            *out = jv_int(c);
            return 0;
        }
        for (size_t i = 0; i < l->n; i++)
            if (jv_eq(l->v[i], *a0)) { *out = jv_int((int64_t)i); return 0; }
        return jx_fail(x, JX_RT, "ValueError: value is not in list");
    }
    if (self.t != JV_STR) return jx_fail(x, JX_RT, "'%s' object has no attribute '%s'", jv_type_name(self), name);
    jv s = self;
    const jv *a0 = ARG(0, NULL), *a1 = ARG(1, NULL);
    if (!strcmp(name, "startswith") || !strcmp(name, "endswith")) {
        if (!a0) return jx_fail(x, JX_RT, "TypeError: %s() takes at least 1 argument (0 given)", name);
        int r;
        if (affix(x, s, *a0, name[0] == 'e', &r)) return -1;
        *out = jv_bool(r);
        return 0;
    }
    if (!strcmp(name, "split") || !strcmp(name, "rsplit")) {
        const jv *sep = ARG(0, "sep"), *mx = ARG(1, "maxsplit");
        if (sep && sep->t != JV_STR && sep->t != JV_NONE) return need_str(x, *sep, name);
        return do_split(x, s, sep && sep->t == JV_STR ? sep : NULL, int_or(mx, -1), name[0] == 'r', out);
    }
    if (!strcmp(name, "splitlines")) {
        jlist *l = jl_new(x->ar, 0);
        if (!l) return jx_oom(x);
        const char *p = s.u.s.p;
        size_t n = s.u.s.n, st = 0, i = 0;
        int keep = jv_truthy(ARG(0, "keepends") ? *ARG(0, "keepends") : jv_bool(0));
        while (i < n) {
            size_t k = i;
            uint32_t c = ju_dec(p, n, &k);
            if (c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E ||
                c == 0x85 || c == 0x2028 || c == 0x2029) {
                size_t e = k;
                if (c == '\r' && e < n && p[e] == '\n') e++;
                if (jl_push(x->ar, l, jv_str(p + st, (keep ? e : i) - st))) return jx_oom(x);
                st = i = e;
            } else i = k;
        }
        if (st < n && jl_push(x->ar, l, jv_str(p + st, n - st))) return jx_oom(x);
        *out = jv_list(l);
        return 0;
    }
    if (!strcmp(name, "strip") || !strcmp(name, "lstrip") || !strcmp(name, "rstrip")) {
        const jv *ch = ARG(0, "chars");
        if (ch && ch->t != JV_STR && ch->t != JV_NONE) return need_str(x, *ch, name);
        *out = do_strip(s, ch && ch->t == JV_STR ? ch : NULL, name[0] != 'r', name[0] != 'l');
        return 0;
    }
    if (!strcmp(name, "lower")) return map_case(x, s, 0, out);
    if (!strcmp(name, "upper")) return map_case(x, s, 1, out);
    if (!strcmp(name, "capitalize")) return map_case(x, s, 2, out);
    if (!strcmp(name, "title")) return map_case(x, s, 3, out);
    if (!strcmp(name, "swapcase")) return map_case(x, s, 4, out);
    if (!strcmp(name, "casefold")) return map_case(x, s, 0, out);
    if (!strcmp(name, "replace")) {
        if (!a0 || !a1) return jx_fail(x, JX_RT, "TypeError: replace expected at least 2 arguments");
        return do_replace(x, s, *a0, *a1, int_or(ARG(2, "count"), -1), out);
    }
    if (!strcmp(name, "find") || !strcmp(name, "rfind") || !strcmp(name, "index") || !strcmp(name, "rindex")) {
        if (!a0 || need_str(x, *a0, name)) return a0 ? -1 : jx_fail(x, JX_RT, "TypeError: %s() takes at least 1 argument", name);
        int r = str_find(s, *a0, name[0] == 'r');
        if (r < 0 && (name[0] == 'i' || name[1] == 'i')) return jx_fail(x, JX_RT, "ValueError: substring not found");
        *out = jv_int(r);
        return 0;
    }
    if (!strcmp(name, "count")) {
        if (!a0 || need_str(x, *a0, name)) return -1;
        int64_t c = 0;
        if (!a0->u.s.n) c = (int64_t)ju_len(s.u.s.p, s.u.s.n) + 1;
        else
            for (const char *p = s.u.s.p, *e = p + s.u.s.n; (p = memmem(p, (size_t)(e - p), a0->u.s.p, a0->u.s.n)); p += a0->u.s.n) c++;
        *out = jv_int(c);
        return 0;
    }
    if (!strcmp(name, "join")) {
        if (!a0) return jx_fail(x, JX_RT, "TypeError: join() takes exactly one argument");
        jlist *l;
        if (jx_iter(x, *a0, &l)) return -1;
        for (size_t i = 0; i < l->n; i++)
            if (l->v[i].t != JV_STR)
                return jx_fail(x, JX_RT, "TypeError: sequence item %zu: expected str instance, %s found", i, jv_type_name(l->v[i]));
        return join_values(x, l, s, out);
    }
    if (!strcmp(name, "format")) return str_format(x, s, pos, np, kwn, kwv, nk, out);
    if (!strcmp(name, "isdigit") || !strcmp(name, "isnumeric") || !strcmp(name, "isdecimal")) { *out = jv_bool(str_pred(s, 0)); return 0; }
    if (!strcmp(name, "isalpha")) { *out = jv_bool(str_pred(s, 1)); return 0; }
    if (!strcmp(name, "isalnum")) { *out = jv_bool(str_pred(s, 2)); return 0; }
    if (!strcmp(name, "isspace")) { *out = jv_bool(str_pred(s, 3)); return 0; }
    if (!strcmp(name, "islower")) { *out = jv_bool(str_pred(s, 4)); return 0; }
    if (!strcmp(name, "isupper")) { *out = jv_bool(str_pred(s, 5)); return 0; }
    if (!strcmp(name, "center") || !strcmp(name, "ljust") || !strcmp(name, "rjust") || !strcmp(name, "zfill")) {
        if (!a0 || (a0->t != JV_INT && a0->t != JV_BOOL)) return jx_fail(x, JX_RT, "TypeError: %s() needs an integer width", name);
        if (name[0] == 'z') {
            size_t len = ju_len(s.u.s.p, s.u.s.n);
            if (a0->u.i <= (int64_t)len) { *out = s; return 0; }
            if (a0->u.i > (int64_t)x->max_output) return jx_fail(x, HSD_ERR_OUT_OF_RANGE, "zfill exceeds the output limit");
            jsb b = {0};
            size_t st = 0;
            if (s.u.s.n && (s.u.s.p[0] == '-' || s.u.s.p[0] == '+')) { jsb_putc(&b, s.u.s.p[0]); st = 1; }
            for (int64_t i = (int64_t)len; i < a0->u.i; i++) jsb_putc(&b, '0');
            jsb_put(&b, s.u.s.p + st, s.u.s.n - st);
            return new_str(x, &b, out);
        }
        return pad_str(x, s, a0->u.i, a1 ? *a1 : jv_str(" ", 1), name[0] == 'l' ? 0 : name[0] == 'r' ? 1 : 2, out);
    }
    if (!strcmp(name, "partition") || !strcmp(name, "rpartition")) {
        if (!a0 || need_str(x, *a0, name)) return -1;
        if (!a0->u.s.n) return jx_fail(x, JX_RT, "ValueError: empty separator");
        int r = str_find(s, *a0, name[0] == 'r');
        jlist *l = jl_new(x->ar, 3);
        if (!l) return jx_oom(x);
        if (r < 0) {
            jv e = jv_str("", 0);
            if (name[0] == 'r') { l->v[0] = e; l->v[1] = e; l->v[2] = s; }
            else { l->v[0] = s; l->v[1] = e; l->v[2] = e; }
        } else {
            size_t off = ju_off(s.u.s.p, s.u.s.n, (size_t)r);
            l->v[0] = jv_str(s.u.s.p, off);
            l->v[1] = *a0;
            l->v[2] = jv_str(s.u.s.p + off + a0->u.s.n, s.u.s.n - off - a0->u.s.n);
        }
        l->n = 3;
        *out = jv_list(l);
        out->tuple = 1;
        return 0;
    }
    if (!strcmp(name, "removeprefix") || !strcmp(name, "removesuffix")) {
        if (!a0 || need_str(x, *a0, name)) return -1;
        int r;
        affix(x, s, *a0, name[6] == 's', &r);
        *out = !r ? s : name[6] == 's' ? jv_str(s.u.s.p, s.u.s.n - a0->u.s.n)
                                       : jv_str(s.u.s.p + a0->u.s.n, s.u.s.n - a0->u.s.n);
        return 0;
    }
    return jx_fail(x, HSD_ERR_UNSUPPORTED, "str.%s() is not supported", name);
}

/* ---- tests ---------------------------------------------------------------------- */
int jb_test(jctx *x, const char *name, jv v, jv *args, size_t nargs, int *out) {
    const jv *a0 = nargs ? &args[0] : NULL;
    if (!strcmp(name, "defined")) { *out = v.t != JV_UNDEF; return 0; }
    if (!strcmp(name, "undefined")) { *out = v.t == JV_UNDEF; return 0; }
    if (!strcmp(name, "none")) { *out = v.t == JV_NONE; return 0; }
    if (!strcmp(name, "string")) { *out = v.t == JV_STR; return 0; }
    if (!strcmp(name, "number")) { *out = jv_is_num(v); return 0; }
    if (!strcmp(name, "integer")) { *out = v.t == JV_INT; return 0; }
    if (!strcmp(name, "float")) { *out = v.t == JV_FLOAT; return 0; }
    if (!strcmp(name, "boolean")) { *out = v.t == JV_BOOL; return 0; }
    if (!strcmp(name, "true")) { *out = v.t == JV_BOOL && v.u.i; return 0; }
    if (!strcmp(name, "false")) { *out = v.t == JV_BOOL && !v.u.i; return 0; }
    if (!strcmp(name, "mapping")) { *out = v.t == JV_DICT; return 0; }
    if (!strcmp(name, "sequence")) { *out = v.t == JV_STR || v.t == JV_LIST || v.t == JV_DICT || v.t == JV_UNDEF; return 0; }
    if (!strcmp(name, "iterable")) { *out = v.t == JV_STR || v.t == JV_LIST || v.t == JV_DICT || v.t == JV_UNDEF; return 0; }
    if (!strcmp(name, "callable")) { *out = v.t == JV_MACRO || v.t == JV_FUNC || v.t == JV_METHOD; return 0; }
    if (!strcmp(name, "escaped")) { *out = 0; return 0; }
    if (!strcmp(name, "odd") || !strcmp(name, "even")) {
        if (v.t == JV_UNDEF) return jx_undefined_error(x, v);
        if (v.t != JV_INT && v.t != JV_BOOL) return jx_fail(x, JX_RT, "TypeError: %s test needs an integer", name);
        *out = (int)((v.u.i % 2 != 0) == (name[0] == 'o'));
        return 0;
    }
    if (!strcmp(name, "lower") || !strcmp(name, "upper")) {
        jv s = jx_str_value(x, v);
        *out = str_pred(s, name[0] == 'l' ? 4 : 5);
        return x->status ? -1 : 0;
    }
    if (!a0) return jx_fail(x, JX_RT, "TypeError: test '%s' needs an argument or does not exist", name);
    if (!strcmp(name, "eq") || !strcmp(name, "equalto") || !strcmp(name, "==")) { *out = jv_eq(v, *a0); return 0; }
    if (!strcmp(name, "ne") || !strcmp(name, "!=")) { *out = !jv_eq(v, *a0); return 0; }
    if (!strcmp(name, "sameas")) {
        *out = v.t == a0->t && (v.t == JV_NONE || v.t == JV_UNDEF || (v.t == JV_BOOL && v.u.i == a0->u.i) ||
                                ((v.t == JV_LIST || v.t == JV_DICT) && v.u.ptr == a0->u.ptr));
        return 0;
    }
    if (!strcmp(name, "in")) {
        if (a0->t == JV_STR) {
            if (v.t != JV_STR) return jx_fail(x, JX_RT, "TypeError: 'in <string>' requires string as left operand");
            *out = memmem(a0->u.s.p, a0->u.s.n, v.u.s.p, v.u.s.n) != NULL || !v.u.s.n;
        } else if (a0->t == JV_LIST) {
            *out = 0;
            for (size_t i = 0; i < a0->u.l->n; i++) if (jv_eq(a0->u.l->v[i], v)) *out = 1;
        } else if (a0->t == JV_DICT) *out = jd_get(a0->u.d, v) != NULL;
        else return jx_fail(x, JX_RT, "TypeError: argument of type '%s' is not iterable", jv_type_name(*a0));
        return 0;
    }
    if (!strcmp(name, "divisibleby")) {
        if ((v.t != JV_INT && v.t != JV_BOOL) || (a0->t != JV_INT && a0->t != JV_BOOL))
            return jx_fail(x, JX_RT, "TypeError: divisibleby needs integers");
        if (!a0->u.i) return jx_fail(x, JX_RT, "ZeroDivisionError: integer division or modulo by zero");
        *out = v.u.i % a0->u.i == 0;
        return 0;
    }
    int op = !strcmp(name, "lt") || !strcmp(name, "lessthan") || !strcmp(name, "<") ? 1
           : !strcmp(name, "le") || !strcmp(name, "<=") ? 2
           : !strcmp(name, "gt") || !strcmp(name, "greaterthan") || !strcmp(name, ">") ? 3
           : !strcmp(name, "ge") || !strcmp(name, ">=") ? 4 : 0;
    if (op) {
        if (v.t == JV_UNDEF) return jx_undefined_error(x, v);
        int c = jv_cmp(v, *a0);
        if (c == -2) return jx_fail(x, JX_RT, "TypeError: '%s' not supported between instances of '%s' and '%s'", name, jv_type_name(v), jv_type_name(*a0));
        *out = c == 2 ? 0 : op == 1 ? c < 0 : op == 2 ? c <= 0 : op == 3 ? c > 0 : c >= 0;
        return 0;
    }
    return jx_fail(x, JX_RT, "TemplateAssertionError: No test named '%s'.", name);
}

/* ---- filters -------------------------------------------------------------------- */
/* attribute path "a.b" or "0" as used by map/selectattr/sort/sum */
static int get_attr_path(jctx *x, jv v, jv path, jv *out) {
    if (path.t == JV_INT) return jx_getitem(x, v, path, out);
    if (path.t != JV_STR) return jx_fail(x, JX_RT, "TypeError: attribute must be a string");
    const char *p = path.u.s.p, *e = p + path.u.s.n;
    *out = v;
    while (p <= e) {
        const char *d = memchr(p, '.', (size_t)(e - p));
        if (!d) d = e;
        jv key;
        char *endp;
        char buf[32];
        size_t kl = (size_t)(d - p);
        if (kl && kl < sizeof buf) { memcpy(buf, p, kl); buf[kl] = 0; }
        long long iv = kl && kl < sizeof buf ? strtoll(buf, &endp, 10) : 0;
        if (kl && kl < sizeof buf && *endp == 0 && buf[0] >= '0' && buf[0] <= '9') key = jv_int(iv);
        else key = jv_str(p, kl);
        /* environment.getitem: item first */
        if (out->t == JV_UNDEF) return jx_undefined_error(x, *out);
        if (jx_getitem(x, *out, key, out)) return -1;
        p = d + 1;
        if (d == e) break;
    }
    return 0;
}

static int to_list(jctx *x, jv v, jlist **out) { return jx_iter(x, v, out); }

static int sort_values(jctx *x, jv *v, size_t n, jv *keys, int reverse, int casesens) {
    /* stable insertion/merge sort with Python ordering; strings compared case-insensitively
       unless case_sensitive (Jinja's sort/dictsort default) */
    (void)casesens;
    for (size_t i = 1; i < n; i++) {
        jv kv = keys[i], vv = v[i];
        size_t j = i;
        while (j > 0) {
            jv a = keys[j - 1], b = kv;
            int c = jv_cmp(a, b);
            if (c == -2) return jx_fail(x, JX_RT, "TypeError: '<' not supported between instances of '%s' and '%s'", jv_type_name(b), jv_type_name(a));
            if (reverse ? c >= 0 : c <= 0) break;
            keys[j] = keys[j - 1];
            v[j] = v[j - 1];
            j--;
        }
        keys[j] = kv;
        v[j] = vv;
    }
    return 0;
}

static int sort_key(jctx *x, jv v, const jv *attr, int casesens, jv *key) {
    if (attr && attr->t != JV_NONE) {
        if (get_attr_path(x, v, *attr, &v)) return -1;
    }
    if (!casesens && v.t == JV_STR) return map_case(x, v, 0, key);
    *key = v;
    return 0;
}

static int select_like(jctx *x, jv v, jv *pos, size_t np, int attr_mode, int reject, jv *out) {
    jlist *l;
    if (to_list(x, v, &l)) return -1;
    jlist *r = jl_new(x->ar, l->n);
    if (!r) return jx_oom(x);
    size_t ti = attr_mode ? 1 : 0;
    if (attr_mode && !np) return jx_fail(x, JX_RT, "TypeError: Missing parameter for attribute name");
    for (size_t i = 0; i < l->n; i++) {
        jv item = l->v[i];
        if (attr_mode && get_attr_path(x, item, pos[0], &item)) return -1;
        int ok;
        if (np > ti) {
            if (pos[ti].t != JV_STR) return jx_fail(x, JX_RT, "TypeError: test name must be a string");
            char *tn = ja_strdup(x->ar, pos[ti].u.s.p, pos[ti].u.s.n);
            if (!tn) return jx_oom(x);
            if (jb_test(x, tn, item, pos + ti + 1, np - ti - 1, &ok)) return -1;
        } else ok = jv_truthy(item);
        if (ok != reject) r->v[r->n++] = l->v[i];
    }
    *out = jv_list(r);
    return 0;
}

static int dumps_filter(jctx *x, jv v, jv *pos, size_t np, const char **kwn, jv *kwv, size_t nk, jv *out) {
    const jv *ea = ARG(0, "ensure_ascii"), *ind = ARG(1, "indent"), *sep = ARG(2, "separators"),
             *sk = ARG(3, "sort_keys");
    (void)ea;
    char ibuf[64];
    const char *istr = NULL;
    size_t ilen = 0;
    int has_indent = 0;
    if (ind && ind->t != JV_NONE) {
        has_indent = 1;
        if (ind->t == JV_INT) {
            int64_t k = ind->u.i < 0 ? 0 : ind->u.i > 60 ? 60 : ind->u.i;
            memset(ibuf, ' ', (size_t)k);
            istr = ibuf;
            ilen = (size_t)k;
        } else if (ind->t == JV_STR) {
            istr = ind->u.s.p;
            ilen = ind->u.s.n;
        } else return jx_fail(x, JX_RT, "TypeError: indent must be an int or a string");
    }
    const char *item_sep = has_indent ? "," : ", ", *key_sep = ": ";
    char *isep = NULL, *ksep = NULL;
    if (sep && sep->t != JV_NONE) {
        if (sep->t != JV_LIST || sep->u.l->n != 2 || sep->u.l->v[0].t != JV_STR || sep->u.l->v[1].t != JV_STR)
            return jx_fail(x, JX_RT, "ValueError: separators must be a (item_separator, key_separator) pair of strings");
        isep = ja_strdup(x->ar, sep->u.l->v[0].u.s.p, sep->u.l->v[0].u.s.n);
        ksep = ja_strdup(x->ar, sep->u.l->v[1].u.s.p, sep->u.l->v[1].u.s.n);
        if (!isep || !ksep) return jx_oom(x);
        item_sep = isep;
        key_sep = ksep;
    }
    jsb b = {0};
    int ascii = ea && jv_truthy(*ea);
    if (jj_dumps(x, &b, v, istr, ilen, has_indent | (ascii << 1), item_sep, key_sep, sk && jv_truthy(*sk), 0)) {
        jsb_free(&b);
        return -1;
    }
    return new_str(x, &b, out);
}

static int escape_html(jctx *x, jv v, jv *out) {
    jv s = jx_str_value(x, v);
    if (x->status) return -1;
    jsb b = {0};
    for (size_t i = 0; i < s.u.s.n; i++) {
        char c = s.u.s.p[i];
        switch (c) {
        case '&': jsb_puts(&b, "&amp;"); break;
        case '<': jsb_puts(&b, "&lt;"); break;
        case '>': jsb_puts(&b, "&gt;"); break;
        case '"': jsb_puts(&b, "&#34;"); break;
        case '\'': jsb_puts(&b, "&#39;"); break;
        default: jsb_putc(&b, c);
        }
    }
    return new_str(x, &b, out);
}

int jb_filter(jctx *x, const char *name, jv v, jv *pos, size_t np, const char **kwn, jv *kwv, size_t nk, jv *out) {
    if (!strcmp(name, "default") || !strcmp(name, "d")) {
        const jv *dv = ARG(0, "default_value"), *bo = ARG(1, "boolean");
        int use = v.t == JV_UNDEF || (bo && jv_truthy(*bo) && !jv_truthy(v));
        *out = use ? (dv ? *dv : jv_str("", 0)) : v;
        return 0;
    }
    if (!strcmp(name, "length") || !strcmp(name, "count")) {
        switch (v.t) {
        case JV_UNDEF: *out = jv_int(0); return 0;
        case JV_STR: *out = jv_int((int64_t)ju_len(v.u.s.p, v.u.s.n)); return 0;
        case JV_LIST: *out = jv_int((int64_t)v.u.l->n); return 0;
        case JV_DICT: case JV_NS: *out = jv_int((int64_t)v.u.d->n); return 0;
        case JV_LOOP: *out = jv_int((int64_t)((jloop *)v.u.ptr)->n); return 0;
        default: return jx_fail(x, JX_RT, "TypeError: object of type '%s' has no len()", jv_type_name(v));
        }
    }
    if (!strcmp(name, "tojson")) return dumps_filter(x, v, pos, np, kwn, kwv, nk, out);
    if (!strcmp(name, "safe")) { *out = v; return 0; }
    if (!strcmp(name, "string")) { *out = jx_str_value(x, v); return x->status ? -1 : 0; }
    if (!strcmp(name, "escape") || !strcmp(name, "e") || !strcmp(name, "forceescape")) return escape_html(x, v, out);
    if (!strcmp(name, "trim") || !strcmp(name, "upper") || !strcmp(name, "lower") || !strcmp(name, "capitalize") ||
        !strcmp(name, "title") || !strcmp(name, "replace") || !strcmp(name, "wordcount") ||
        !strcmp(name, "center") || !strcmp(name, "indent") || !strcmp(name, "format")) {
        jv s = jx_str_value(x, v);
        if (x->status) return -1;
        if (!strcmp(name, "trim")) {
            const jv *ch = ARG(0, "chars");
            *out = do_strip(s, ch && ch->t == JV_STR ? ch : NULL, 1, 1);
            return 0;
        }
        if (!strcmp(name, "upper")) return map_case(x, s, 1, out);
        if (!strcmp(name, "lower")) return map_case(x, s, 0, out);
        if (!strcmp(name, "capitalize")) return map_case(x, s, 2, out);
        if (!strcmp(name, "title")) {
            /* Jinja: the first letter of each word (after start, whitespace or -({[<) upper, rest lower */
            jsb b = {0};
            size_t i = 0;
            int start = 1;
            while (i < s.u.s.n) {
                uint32_t c = ju_dec(s.u.s.p, s.u.s.n, &i);
                uint32_t r = start ? (uint32_t)utf8proc_toupper((utf8proc_int32_t)c) : (uint32_t)utf8proc_tolower((utf8proc_int32_t)c);
                ju_enc(&b, r);
                start = ju_isspace(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
            }
            return new_str(x, &b, out);
        }
        if (!strcmp(name, "replace")) {
            const jv *o = ARG(0, "old"), *n2 = ARG(1, "new"), *c = ARG(2, "count");
            if (!o || !n2) return jx_fail(x, JX_RT, "TypeError: replace needs old and new");
            jv os = jx_str_value(x, *o), ns = jx_str_value(x, *n2);
            return do_replace(x, s, os, ns, c && c->t != JV_NONE ? int_or(c, -1) : -1, out);
        }
        if (!strcmp(name, "wordcount")) {
            jv parts;
            if (do_split(x, s, NULL, -1, 0, &parts)) return -1;
            *out = jv_int((int64_t)parts.u.l->n);
            return 0;
        }
        if (!strcmp(name, "center")) return pad_str(x, s, int_or(ARG(0, "width"), 80), jv_str(" ", 1), 2, out);
        if (!strcmp(name, "format")) { /* soft_str(value) % (kwargs or args) */
            if (nk) {
                jdict *d = jd_new(x->ar, nk);
                if (!d) return jx_oom(x);
                for (size_t k = 0; k < nk; k++)
                    if (jd_set(x->ar, d, jv_str(kwn[k], strlen(kwn[k])), kwv[k])) return jx_oom(x);
                return jb_percent_format(x, s, jv_dict(d), out);
            }
            jlist *t = jl_new(x->ar, np);
            if (!t) return jx_oom(x);
            for (size_t k = 0; k < np; k++) t->v[t->n++] = pos[k];
            jv tv = jv_list(t);
            tv.tuple = 1;
            return jb_percent_format(x, s, tv, out);
        }
        /* indent(width=4, first=False, blank=False) */
        const jv *w = ARG(0, "width"), *first = ARG(1, "first"), *blank = ARG(2, "blank");
        jv ind = w && w->t == JV_STR ? *w : jv_str("    ", 4);
        jsb ib = {0};
        if (w && (w->t == JV_INT)) { for (int64_t k = 0; k < w->u.i && k < 1000; k++) jsb_putc(&ib, ' '); }
        else jsb_put(&ib, ind.u.s.p, ind.u.s.n);
        jsb b = {0};
        const char *p = s.u.s.p;
        size_t n = s.u.s.n, i = 0;
        int line_no = 0;
        /* Jinja appends "\n" if the text ends with one; lines split with splitlines() */
        while (i <= n) {
            const char *nl = i < n ? memchr(p + i, '\n', n - i) : NULL;
            size_t e = nl ? (size_t)(nl - p) : n;
            if (i == n && !nl && line_no > 0) break;
            int empty = e == i;
            int do_ind = line_no == 0 ? (first && jv_truthy(*first)) : (blank && jv_truthy(*blank)) || !empty;
            if (line_no == 0 && !(first && jv_truthy(*first))) do_ind = 0;
            if (do_ind && (!empty || (blank && jv_truthy(*blank)) || line_no == 0)) jsb_put(&b, ib.p ? ib.p : "", ib.n);
            jsb_put(&b, p + i, e - i);
            if (!nl) break;
            jsb_putc(&b, '\n');
            i = e + 1;
            line_no++;
        }
        jsb_free(&ib);
        return new_str(x, &b, out);
    }
    if (!strcmp(name, "join")) {
        const jv *sep = ARG(0, "d"), *attr = ARG(1, "attribute");
        jlist *l;
        if (to_list(x, v, &l)) return -1;
        if (attr && attr->t != JV_NONE) {
            jlist *m = jl_new(x->ar, l->n);
            if (!m) return jx_oom(x);
            for (size_t i = 0; i < l->n; i++)
                if (get_attr_path(x, l->v[i], *attr, &m->v[m->n++])) return -1;
            l = m;
        }
        return join_values(x, l, sep ? *sep : jv_str("", 0), out);
    }
    if (!strcmp(name, "first") || !strcmp(name, "last")) {
        jlist *l;
        if (to_list(x, v, &l)) return -1;
        *out = l->n ? l->v[name[0] == 'f' ? 0 : l->n - 1] : jv_undef(NULL);
        return 0;
    }
    if (!strcmp(name, "list")) {
        jlist *l;
        if (to_list(x, v, &l)) return -1;
        jlist *c = jl_new(x->ar, l->n);
        if (!c) return jx_oom(x);
        memcpy(c->v, l->v, l->n * sizeof(jv));
        c->n = l->n;
        *out = jv_list(c);
        return 0;
    }
    if (!strcmp(name, "items")) {
        if (v.t == JV_UNDEF) { jlist *l = jl_new(x->ar, 0); if (!l) return jx_oom(x); *out = jv_list(l); return 0; }
        if (v.t != JV_DICT) return jx_fail(x, JX_RT, "TypeError: Can only get item pairs from a mapping.");
        return jb_method(x, v, "items", NULL, 0, NULL, NULL, 0, out);
    }
    if (!strcmp(name, "dictsort")) {
        if (v.t != JV_DICT) return jx_fail(x, JX_RT, "TypeError: dictsort needs a mapping");
        jv items;
        if (jb_method(x, v, "items", NULL, 0, NULL, NULL, 0, &items)) return -1;
        const jv *cs = ARG(0, "case_sensitive"), *by = ARG(1, "by"), *rev = ARG(2, "reverse");
        int byv = by && by->t == JV_STR && by->u.s.n == 5 && !memcmp(by->u.s.p, "value", 5);
        jlist *l = items.u.l;
        jv *keys = ja_alloc(x->ar, (l->n + 1) * sizeof(jv));
        if (!keys) return jx_oom(x);
        for (size_t i = 0; i < l->n; i++)
            if (sort_key(x, l->v[i].u.l->v[byv], NULL, cs && jv_truthy(*cs), &keys[i])) return -1;
        if (sort_values(x, l->v, l->n, keys, rev && jv_truthy(*rev), 0)) return -1;
        *out = items;
        return 0;
    }
    if (!strcmp(name, "sort")) {
        const jv *rev = ARG(0, "reverse"), *cs = ARG(1, "case_sensitive"), *attr = ARG(2, "attribute");
        jlist *l;
        if (to_list(x, v, &l)) return -1;
        jlist *c = jl_new(x->ar, l->n);
        jv *keys = ja_alloc(x->ar, (l->n + 1) * sizeof(jv));
        if (!c || !keys) return jx_oom(x);
        memcpy(c->v, l->v, l->n * sizeof(jv));
        c->n = l->n;
        for (size_t i = 0; i < c->n; i++)
            if (sort_key(x, c->v[i], attr, cs && jv_truthy(*cs), &keys[i])) return -1;
        if (sort_values(x, c->v, c->n, keys, rev && jv_truthy(*rev), 0)) return -1;
        *out = jv_list(c);
        return 0;
    }
    if (!strcmp(name, "reverse")) {
        if (v.t == JV_STR) {
            jv parts[3] = {jv_none(), jv_none(), jv_int(-1)};
            jsb b = {0};
            size_t e = v.u.s.n;
            while (e > 0) {
                size_t st = e - 1;
                while (st > 0 && ((unsigned char)v.u.s.p[st] & 0xC0) == 0x80) st--;
                jsb_put(&b, v.u.s.p + st, e - st);
                e = st;
            }
            (void)parts;
            return new_str(x, &b, out);
        }
        jlist *l;
        if (to_list(x, v, &l)) return -1;
        jlist *c = jl_new(x->ar, l->n);
        if (!c) return jx_oom(x);
        for (size_t i = l->n; i-- > 0;) c->v[c->n++] = l->v[i];
        *out = jv_list(c);
        return 0;
    }
    if (!strcmp(name, "unique")) {
        const jv *cs = ARG(0, "case_sensitive"), *attr = ARG(1, "attribute");
        jlist *l;
        if (to_list(x, v, &l)) return -1;
        jlist *c = jl_new(x->ar, l->n);
        jv *seen = ja_alloc(x->ar, (l->n + 1) * sizeof(jv));
        size_t ns = 0;
        if (!c || !seen) return jx_oom(x);
        for (size_t i = 0; i < l->n; i++) {
            jv k;
            if (sort_key(x, l->v[i], attr, cs && jv_truthy(*cs), &k)) return -1;
            int dup = 0;
            for (size_t j = 0; j < ns; j++) if (jv_eq(seen[j], k)) { dup = 1; break; }
            if (!dup) { seen[ns++] = k; c->v[c->n++] = l->v[i]; }
        }
        *out = jv_list(c);
        return 0;
    }
    if (!strcmp(name, "map")) {
        jlist *l;
        if (to_list(x, v, &l)) return -1;
        jlist *c = jl_new(x->ar, l->n);
        if (!c) return jx_oom(x);
        const jv *attr = NULL, *def = NULL;
        for (size_t k = 0; k < nk; k++) {
            if (!strcmp(kwn[k], "attribute")) attr = &kwv[k];
            else if (!strcmp(kwn[k], "default")) def = &kwv[k];
        }
        for (size_t i = 0; i < l->n; i++) {
            jv r;
            if (attr) {
                if (get_attr_path(x, l->v[i], *attr, &r)) return -1;
                if (r.t == JV_UNDEF && def) r = *def;
            } else {
                if (!np || pos[0].t != JV_STR) return jx_fail(x, JX_RT, "TypeError: map needs a filter name or attribute=");
                char *fn = ja_strdup(x->ar, pos[0].u.s.p, pos[0].u.s.n);
                if (!fn) return jx_oom(x);
                if (jb_filter(x, fn, l->v[i], pos + 1, np - 1, kwn, kwv, nk, &r)) return -1;
            }
            c->v[c->n++] = r;
        }
        *out = jv_list(c);
        return 0;
    }
    if (!strcmp(name, "select")) return select_like(x, v, pos, np, 0, 0, out);
    if (!strcmp(name, "reject")) return select_like(x, v, pos, np, 0, 1, out);
    if (!strcmp(name, "selectattr")) return select_like(x, v, pos, np, 1, 0, out);
    if (!strcmp(name, "rejectattr")) return select_like(x, v, pos, np, 1, 1, out);
    if (!strcmp(name, "int")) {
        const jv *def = ARG(0, "default");
        jv d = def ? *def : jv_int(0);
        if (v.t == JV_INT) { *out = v; return 0; }
        if (v.t == JV_BOOL) { *out = jv_int(v.u.i); return 0; }
        if (v.t == JV_FLOAT) { *out = isfinite(v.u.f) && fabs(v.u.f) < 9.2e18 ? jv_int((int64_t)v.u.f) : d; return 0; }
        if (v.t == JV_STR) {
            char buf[64];
            jv t = do_strip(v, NULL, 1, 1);
            if (t.u.s.n && t.u.s.n < sizeof buf) {
                memcpy(buf, t.u.s.p, t.u.s.n);
                buf[t.u.s.n] = 0;
                char *e;
                long long iv = strtoll(buf, &e, 10);
                if (*e == 0) { *out = jv_int(iv); return 0; }
                double f = strtod(buf, &e);
                if (*e == 0 && isfinite(f)) { *out = jv_int((int64_t)f); return 0; }
            }
        }
        *out = d;
        return 0;
    }
    if (!strcmp(name, "float")) {
        const jv *def = ARG(0, "default");
        if (jv_is_num(v)) { *out = jv_float(jv_num(v)); return 0; }
        if (v.t == JV_STR && v.u.s.n < 64) {
            char buf[64], *e;
            memcpy(buf, v.u.s.p, v.u.s.n);
            buf[v.u.s.n] = 0;
            double f = strtod(buf, &e);
            if (v.u.s.n && *e == 0) { *out = jv_float(f); return 0; }
        }
        *out = def ? *def : jv_float(0.0);
        return 0;
    }
    if (!strcmp(name, "abs")) {
        if (v.t == JV_INT || v.t == JV_BOOL) { *out = jv_int(v.u.i < 0 ? -v.u.i : v.u.i); return 0; }
        if (v.t == JV_FLOAT) { *out = jv_float(fabs(v.u.f)); return 0; }
        return jx_fail(x, JX_RT, "TypeError: bad operand type for abs(): '%s'", jv_type_name(v));
    }
    if (!strcmp(name, "round")) {
        const jv *pr = ARG(0, "precision"), *me = ARG(1, "method");
        if (!jv_is_num(v)) return jx_fail(x, JX_RT, "TypeError: round needs a number");
        double f = jv_num(v), m = pow(10, (double)int_or(pr, 0));
        const char *meth = me && me->t == JV_STR ? me->u.s.p : "common";
        int64_t prec = int_or(pr, 0);
        double r;
        if (!strncmp(meth, "ceil", 4)) r = ceil(f * m) / m;
        else if (!strncmp(meth, "floor", 5)) r = floor(f * m) / m;
        else if (prec >= 0 && prec <= 40 && isfinite(f)) {
            /* Python's round(): the exact binary value, ties to even; printf does the same */
            char buf[400];
            snprintf(buf, sizeof buf, "%.*f", (int)prec, f);
            r = strtod(buf, NULL);
        } else r = rint(f * m) / m;
        *out = jv_float(r);
        return 0;
    }
    if (!strcmp(name, "sum")) {
        const jv *attr = ARG(0, "attribute"), *start = ARG(1, "start");
        jlist *l;
        if (to_list(x, v, &l)) return -1;
        jv acc = start ? *start : jv_int(0);
        for (size_t i = 0; i < l->n; i++) {
            jv item = l->v[i];
            if (attr && attr->t != JV_NONE && get_attr_path(x, item, *attr, &item)) return -1;
            if (!jv_is_num(acc) || !jv_is_num(item)) return jx_fail(x, JX_RT, "TypeError: unsupported operand type(s) for +");
            acc = acc.t == JV_FLOAT || item.t == JV_FLOAT ? jv_float(jv_num(acc) + jv_num(item)) : jv_int(acc.u.i + item.u.i);
        }
        *out = acc;
        return 0;
    }
    if (!strcmp(name, "min") || !strcmp(name, "max")) {
        jlist *l;
        if (to_list(x, v, &l)) return -1;
        if (!l->n) { *out = jv_undef(NULL); return 0; }
        jv best = l->v[0];
        for (size_t i = 1; i < l->n; i++) {
            int c = jv_cmp(l->v[i], best);
            if (c == -2) return jx_fail(x, JX_RT, "TypeError: values are not comparable");
            if (name[1] == 'i' ? c < 0 : c > 0) best = l->v[i];
        }
        *out = best;
        return 0;
    }
    if (!strcmp(name, "batch")) {
        int64_t n = int_or(ARG(0, "linecount"), 1);
        if (n <= 0) return jx_fail(x, JX_RT, "ValueError: batch size must be positive");
        jlist *l;
        if (to_list(x, v, &l)) return -1;
        jlist *r = jl_new(x->ar, 0);
        if (!r) return jx_oom(x);
        for (size_t i = 0; i < l->n; i += (size_t)n) {
            jlist *c = jl_new(x->ar, (size_t)n);
            if (!c) return jx_oom(x);
            for (size_t j = i; j < l->n && j < i + (size_t)n; j++) c->v[c->n++] = l->v[j];
            if (jl_push(x->ar, r, jv_list(c))) return jx_oom(x);
        }
        *out = jv_list(r);
        return 0;
    }
    if (!strcmp(name, "pprint")) {
        jsb b = {0};
        jv_repr_to(&b, v);
        return new_str(x, &b, out);
    }
    return jx_fail(x, JX_RT, "TemplateAssertionError: No filter named '%s'.", name);
}
