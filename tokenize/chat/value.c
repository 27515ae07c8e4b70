/* Values of the chat-template interpreter: arena, lists/dicts, and the Python semantics
 * Jinja2 inherits (truthiness, ==, ordering, str(), repr()), since output must match
 * Python's byte for byte (e.g. a list printed with {{ }} is its Python repr). */
#include "tokenize/chat/chat_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- arena ---------------------------------------------------------------------- */
struct ja_block {
    ja_block *next;
    size_t cap, used;
    _Alignas(16) unsigned char data[];
};

void *ja_alloc(jarena *a, size_t n) {
    if (a->over) return NULL;
    n = (n + 15) & ~(size_t)15;
    if (n == 0) n = 16;
    if (a->limit && (n > a->limit || a->used > a->limit - n)) { a->over = 1; return NULL; }
    ja_block *b = a->head;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > 65536 - sizeof *b ? n : 65536 - sizeof *b;
        b = malloc(sizeof *b + cap);
        if (!b) { a->over = 1; return NULL; }
        b->cap = cap;
        b->used = 0;
        b->next = a->head;
        a->head = b;
    }
    void *p = b->data + b->used;
    b->used += n;
    a->used += n;
    memset(p, 0, n);
    return p;
}

char *ja_strdup(jarena *a, const char *s, size_t n) {
    char *p = ja_alloc(a, n + 1);
    if (!p) return NULL;
    if (n) memcpy(p, s, n);
    p[n] = 0;
    return p;
}

void ja_free(jarena *a) {
    ja_block *b = a->head;
    while (b) {
        ja_block *nx = b->next;
        free(b);
        b = nx;
    }
    a->head = NULL;
    a->used = 0;
}

/* ---- byte buffer ---------------------------------------------------------------- */
void jsb_put(jsb *b, const char *s, size_t n) {
    if (b->oom || n == 0) return;
    if (b->cap - b->n < n + 1) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap - b->n < n + 1) {
            if (cap > ((size_t)1 << 40)) { b->oom = 1; return; }
            cap *= 2;
        }
        char *p = realloc(b->p, cap);
        if (!p) { b->oom = 1; return; }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}
void jsb_putc(jsb *b, char c) { jsb_put(b, &c, 1); }
void jsb_puts(jsb *b, const char *s) { jsb_put(b, s, strlen(s)); }
void jsb_printf(jsb *b, const char *fmt, ...) {
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0) jsb_put(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}
void jsb_free(jsb *b) {
    free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}

/* ---- lists and dicts ------------------------------------------------------------ */
jlist *jl_new(jarena *a, size_t cap) {
    jlist *l = ja_alloc(a, sizeof *l);
    if (!l) return NULL;
    if (cap) {
        l->v = ja_alloc(a, cap * sizeof(jv));
        if (!l->v) return NULL;
        l->cap = cap;
    }
    return l;
}

int jl_push(jarena *a, jlist *l, jv v) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 4;
        jv *nv = ja_alloc(a, cap * sizeof(jv));
        if (!nv) return -1;
        if (l->n) memcpy(nv, l->v, l->n * sizeof(jv));
        l->v = nv;
        l->cap = cap;
    }
    l->v[l->n++] = v;
    return 0;
}

jdict *jd_new(jarena *a, size_t cap) {
    jdict *d = ja_alloc(a, sizeof *d);
    if (!d) return NULL;
    if (cap) {
        d->k = ja_alloc(a, cap * sizeof(jv));
        d->v = ja_alloc(a, cap * sizeof(jv));
        if (!d->k || !d->v) return NULL;
        d->cap = cap;
    }
    return d;
}

const jv *jd_get(const jdict *d, jv k) {
    for (size_t i = 0; i < d->n; i++)
        if (jv_eq(d->k[i], k)) return &d->v[i];
    return NULL;
}

const jv *jd_gets(const jdict *d, const char *key, size_t n) {
    for (size_t i = 0; i < d->n; i++)
        if (d->k[i].t == JV_STR && d->k[i].u.s.n == n && memcmp(d->k[i].u.s.p, key, n) == 0)
            return &d->v[i];
    return NULL;
}

int jd_set(jarena *a, jdict *d, jv k, jv v) {
    for (size_t i = 0; i < d->n; i++)
        if (jv_eq(d->k[i], k)) { d->v[i] = v; return 0; }
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 4;
        jv *nk = ja_alloc(a, cap * sizeof(jv)), *nv = ja_alloc(a, cap * sizeof(jv));
        if (!nk || !nv) return -1;
        if (d->n) {
            memcpy(nk, d->k, d->n * sizeof(jv));
            memcpy(nv, d->v, d->n * sizeof(jv));
        }
        d->k = nk;
        d->v = nv;
        d->cap = cap;
    }
    d->k[d->n] = k;
    d->v[d->n] = v;
    d->n++;
    return 0;
}

/* ---- UTF-8 ---------------------------------------------------------------------- */
uint32_t ju_dec(const char *s, size_t n, size_t *i) {
    const unsigned char *p = (const unsigned char *)s;
    size_t k = *i;
    uint32_t c = p[k];
    int len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    if (k + (size_t)len > n) { *i = k + 1; return 0xFFFD; }
    if (len == 2) c = ((c & 0x1F) << 6) | (p[k + 1] & 0x3F);
    else if (len == 3) c = ((c & 0x0F) << 12) | ((p[k + 1] & 0x3F) << 6) | (p[k + 2] & 0x3F);
    else if (len == 4)
        c = ((c & 0x07) << 18) | ((p[k + 1] & 0x3F) << 12) | ((p[k + 2] & 0x3F) << 6) | (p[k + 3] & 0x3F);
    *i = k + (size_t)len;
    return c;
}

void ju_enc(jsb *b, uint32_t c) {
    char t[4];
    if (c < 0x80) { t[0] = (char)c; jsb_put(b, t, 1); }
    else if (c < 0x800) { t[0] = (char)(0xC0 | (c >> 6)); t[1] = (char)(0x80 | (c & 0x3F)); jsb_put(b, t, 2); }
    else if (c < 0x10000) {
        t[0] = (char)(0xE0 | (c >> 12)); t[1] = (char)(0x80 | ((c >> 6) & 0x3F));
        t[2] = (char)(0x80 | (c & 0x3F)); jsb_put(b, t, 3);
    } else {
        t[0] = (char)(0xF0 | (c >> 18)); t[1] = (char)(0x80 | ((c >> 12) & 0x3F));
        t[2] = (char)(0x80 | ((c >> 6) & 0x3F)); t[3] = (char)(0x80 | (c & 0x3F)); jsb_put(b, t, 4);
    }
}

size_t ju_len(const char *p, size_t n) {
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        if (((unsigned char)p[i] & 0xC0) != 0x80) c++;
    return c;
}

size_t ju_off(const char *p, size_t n, size_t cp) {
    size_t c = 0;
    for (size_t i = 0; i < n; i++) {
        if (((unsigned char)p[i] & 0xC0) != 0x80) {
            if (c == cp) return i;
            c++;
        }
    }
    return n;
}

int ju_isspace(uint32_t c) {
    return (c >= 9 && c <= 13) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
           c == 0x202F || c == 0x205F || c == 0x3000;
}

int ju_valid(const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        unsigned c = p[i];
        if (c < 0x80) { i++; continue; }
        int len;
        uint32_t cp;
        if (c >= 0xC2 && c <= 0xDF) { len = 2; cp = c & 0x1F; }
        else if (c >= 0xE0 && c <= 0xEF) { len = 3; cp = c & 0x0F; }
        else if (c >= 0xF0 && c <= 0xF4) { len = 4; cp = c & 0x07; }
        else return 0;
        if (i + (size_t)len > n) return 0;
        for (int k = 1; k < len; k++) {
            if ((p[i + k] & 0xC0) != 0x80) return 0;
            cp = (cp << 6) | (p[i + k] & 0x3F);
        }
        if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        i += (size_t)len;
    }
    return 1;
}

/* ---- Python semantics ----------------------------------------------------------- */
int jv_is_num(jv v) { return v.t == JV_INT || v.t == JV_FLOAT || v.t == JV_BOOL; }
double jv_num(jv v) { return v.t == JV_FLOAT ? v.u.f : (double)v.u.i; }

int jv_truthy(jv v) {
    switch (v.t) {
    case JV_UNDEF: case JV_NONE: return 0;
    case JV_BOOL: case JV_INT: return v.u.i != 0;
    case JV_FLOAT: return v.u.f != 0.0;
    case JV_STR: return v.u.s.n != 0;
    case JV_LIST: return v.u.l->n != 0;
    case JV_DICT: return v.u.d->n != 0;
    default: return 1;
    }
}

int jv_eq(jv a, jv b) {
    if (jv_is_num(a) && jv_is_num(b)) {
        if (a.t != JV_FLOAT && b.t != JV_FLOAT) return a.u.i == b.u.i;
        return jv_num(a) == jv_num(b);
    }
    if (a.t != b.t) return 0;
    switch (a.t) {
    case JV_UNDEF: case JV_NONE: return 1;
    case JV_STR: return a.u.s.n == b.u.s.n && memcmp(a.u.s.p, b.u.s.p, a.u.s.n) == 0;
    case JV_LIST:
        if (a.tuple != b.tuple || a.u.l->n != b.u.l->n) return 0;
        for (size_t i = 0; i < a.u.l->n; i++)
            if (!jv_eq(a.u.l->v[i], b.u.l->v[i])) return 0;
        return 1;
    case JV_DICT:
        if (a.u.d->n != b.u.d->n) return 0;
        for (size_t i = 0; i < a.u.d->n; i++) {
            const jv *o = jd_get(b.u.d, a.u.d->k[i]);
            if (!o || !jv_eq(a.u.d->v[i], *o)) return 0;
        }
        return 1;
    default: return a.u.ptr == b.u.ptr && a.fn == b.fn;
    }
}

int jv_cmp(jv a, jv b) {
    if (jv_is_num(a) && jv_is_num(b)) {
        if (a.t != JV_FLOAT && b.t != JV_FLOAT) return a.u.i < b.u.i ? -1 : a.u.i > b.u.i;
        double x = jv_num(a), y = jv_num(b);
        if (x != x || y != y) return 2; /* NaN: every comparison is false */
        return x < y ? -1 : x > y;
    }
    if (a.t == JV_STR && b.t == JV_STR) {
        size_t m = a.u.s.n < b.u.s.n ? a.u.s.n : b.u.s.n;
        int c = memcmp(a.u.s.p, b.u.s.p, m); /* UTF-8 byte order = code point order */
        if (c) return c < 0 ? -1 : 1;
        return a.u.s.n < b.u.s.n ? -1 : a.u.s.n > b.u.s.n;
    }
    if (a.t == JV_LIST && b.t == JV_LIST && a.tuple == b.tuple) {
        size_t m = a.u.l->n < b.u.l->n ? a.u.l->n : b.u.l->n;
        for (size_t i = 0; i < m; i++) {
            if (jv_eq(a.u.l->v[i], b.u.l->v[i])) continue;
            return jv_cmp(a.u.l->v[i], b.u.l->v[i]);
        }
        return a.u.l->n < b.u.l->n ? -1 : a.u.l->n > b.u.l->n;
    }
    return -2;
}

const char *jv_type_name(jv v) {
    switch (v.t) {
    case JV_UNDEF: return "Undefined";
    case JV_NONE: return "NoneType";
    case JV_BOOL: return "bool";
    case JV_INT: return "int";
    case JV_FLOAT: return "float";
    case JV_STR: return "str";
    case JV_LIST: return v.tuple ? "tuple" : "list";
    case JV_DICT: return "dict";
    case JV_NS: return "Namespace";
    case JV_LOOP: return "LoopContext";
    case JV_MACRO: return "Macro";
    case JV_METHOD: return "builtin_function_or_method";
    default: return "function";
    }
}

/* float.__repr__: the shortest digits that round-trip, in Python's layout (exponent form
 * below 1e-4 and from 1e16 on, ".0" on integral values). */
void jv_float_repr(jsb *b, double f) {
    if (f != f) { jsb_puts(b, "nan"); return; }
    if (isinf(f)) { jsb_puts(b, f < 0 ? "-inf" : "inf"); return; }
    if (f == 0) { jsb_puts(b, signbit(f) ? "-0.0" : "0.0"); return; }
    char buf[40];
    int prec;
    for (prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*e", prec - 1, f);
        if (strtod(buf, NULL) == f) break;
    }
    /* buf = [-]d[.ddd]e[+-]XX */
    char digits[24];
    int nd = 0, neg = 0;
    const char *p = buf;
    if (*p == '-') { neg = 1; p++; }
    for (; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9') digits[nd++] = *p;
    int e = atoi(p + 1);
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    if (neg) jsb_putc(b, '-');
    if (e < -4 || e >= 16) {
        jsb_putc(b, digits[0]);
        if (nd > 1) { jsb_putc(b, '.'); jsb_put(b, digits + 1, (size_t)nd - 1); }
        jsb_printf(b, "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
    } else if (e < 0) {
        jsb_puts(b, "0.");
        for (int i = 0; i < -e - 1; i++) jsb_putc(b, '0');
        jsb_put(b, digits, (size_t)nd);
    } else {
        int intd = e + 1;
        for (int i = 0; i < intd; i++) jsb_putc(b, i < nd ? digits[i] : '0');
        jsb_putc(b, '.');
        if (nd > intd) jsb_put(b, digits + intd, (size_t)(nd - intd));
        else jsb_putc(b, '0');
    }
}

static int py_printable(uint32_t c) {
    if (c < 0x20 || c == 0x7F) return 0;
    if (c >= 0x80 && c <= 0xA0) return 0;
    if (c == 0xAD || c == 0x2028 || c == 0x2029 || (c >= 0x200B && c <= 0x200F) ||
        (c >= 0x202A && c <= 0x202E) || (c >= 0x2060 && c <= 0x206F) || c == 0xFEFF ||
        (c >= 0xD800 && c <= 0xDFFF) || (c >= 0xE000 && c <= 0xF8FF) || c == 0x1680 ||
        (c >= 0x2000 && c <= 0x200A) || c == 0x202F || c == 0x205F || c == 0x3000 ||
        c == 0xFFFE || c == 0xFFFF)
        return 0;
    return 1;
}

void jv_py_str_repr(jsb *b, const char *p, size_t n) {
    int sq = memchr(p, '\'', n) != NULL, dq = memchr(p, '"', n) != NULL;
    char q = (sq && !dq) ? '"' : '\'';
    jsb_putc(b, q);
    size_t i = 0;
    while (i < n) {
        size_t st = i;
        uint32_t c = ju_dec(p, n, &i);
        if (c == (uint32_t)q || c == '\\') { jsb_putc(b, '\\'); jsb_putc(b, (char)c); }
        else if (c == '\n') jsb_puts(b, "\\n");
        else if (c == '\r') jsb_puts(b, "\\r");
        else if (c == '\t') jsb_puts(b, "\\t");
        else if (c == ' ' || py_printable(c)) jsb_put(b, p + st, i - st);
        else if (c < 0x100) jsb_printf(b, "\\x%02x", c);
        else if (c < 0x10000) jsb_printf(b, "\\u%04x", c);
        else jsb_printf(b, "\\U%08x", c);
    }
    jsb_putc(b, q);
}

/* Python's repr guards against containers that contain themselves (a namespace can: {% set
 * ns.me = ns %}): a container already being printed prints as [...] / {...}. */
typedef struct rguard {
    const void *p[600];
    int n;
} rguard;

static void str_r(jsb *b, jv v, rguard *g);

static int guard_enter(jsb *b, rguard *g, const void *p, const char *again) {
    for (int i = 0; i < g->n; i++)
        if (g->p[i] == p) {
            jsb_puts(b, again);
            return 0;
        }
    if (g->n >= (int)(sizeof g->p / sizeof g->p[0])) { /* deeper than any input can nest */
        jsb_puts(b, "...");
        return 0;
    }
    g->p[g->n++] = p;
    return 1;
}

static void repr_r(jsb *b, jv v, rguard *g) {
    switch (v.t) {
    case JV_STR: jv_py_str_repr(b, v.u.s.p, v.u.s.n); return;
    case JV_UNDEF: return; /* repr(Undefined) is "Undefined"; str() is "" */
    case JV_LIST:
        if (!guard_enter(b, g, v.u.l, v.tuple ? "(...)" : "[...]")) return;
        jsb_putc(b, v.tuple ? '(' : '[');
        for (size_t i = 0; i < v.u.l->n; i++) {
            if (i) jsb_puts(b, ", ");
            repr_r(b, v.u.l->v[i], g);
        }
        if (v.tuple && v.u.l->n == 1) jsb_putc(b, ',');
        jsb_putc(b, v.tuple ? ')' : ']');
        g->n--;
        return;
    case JV_DICT:
        if (!guard_enter(b, g, v.u.d, "{...}")) return;
        jsb_putc(b, '{');
        for (size_t i = 0; i < v.u.d->n; i++) {
            if (i) jsb_puts(b, ", ");
            repr_r(b, v.u.d->k[i], g);
            jsb_puts(b, ": ");
            repr_r(b, v.u.d->v[i], g);
        }
        jsb_putc(b, '}');
        g->n--;
        return;
    default: str_r(b, v, g);
    }
}

static void str_r(jsb *b, jv v, rguard *g) {
    switch (v.t) {
    case JV_UNDEF: return;
    case JV_NONE: jsb_puts(b, "None"); return;
    case JV_BOOL: jsb_puts(b, v.u.i ? "True" : "False"); return;
    case JV_INT: jsb_printf(b, "%lld", (long long)v.u.i); return;
    case JV_FLOAT: jv_float_repr(b, v.u.f); return;
    case JV_STR: jsb_put(b, v.u.s.p, v.u.s.n); return;
    case JV_LIST: case JV_DICT: repr_r(b, v, g); return;
    case JV_NS:
        jsb_puts(b, "<Namespace ");
        repr_r(b, jv_dict(v.u.d), g);
        jsb_putc(b, '>');
        return;
    case JV_MACRO: jsb_puts(b, "<Macro>"); return;
    case JV_LOOP: jsb_puts(b, "<LoopContext>"); return;
    default: jsb_puts(b, "<function>"); return;
    }
}

void jv_repr_to(jsb *b, jv v) {
    rguard g;
    g.n = 0;
    repr_r(b, v, &g);
}

void jv_str_to(jsb *b, jv v) {
    rguard g;
    g.n = 0;
    str_r(b, v, &g);
}
