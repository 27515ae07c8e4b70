/* JSON in and out of the interpreter: the render context arrives as JSON (parsed with the
 * project's validating reader, integers kept as integers as Python's json does), and the
 * tojson filter writes json.dumps(x, ensure_ascii=False, indent, separators, sort_keys). */
#include "tokenize/chat/chat_internal.h"
#include "tokenize/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int convert(jarena *a, const char *src, const hj_val *v, jv *out, int depth) {
    if (depth > 512) return -1;
    switch (v->type) {
    case HJ_NULL: *out = jv_none(); return 0;
    case HJ_FALSE: *out = jv_bool(0); return 0;
    case HJ_TRUE: *out = jv_bool(1); return 0;
    case HJ_NUM: {
        /* an integer literal (no '.', 'e') stays an int, as json.loads gives */
        const char *p = src + v->off;
        size_t i = 0;
        int isint = 1;
        if (p[i] == '-') i++;
        while ((p[i] >= '0' && p[i] <= '9') || p[i] == '.' || p[i] == 'e' || p[i] == 'E' || p[i] == '+' || p[i] == '-') {
            if (p[i] == '.' || p[i] == 'e' || p[i] == 'E') isint = 0;
            i++;
        }
        if (isint && v->u.num >= -9.2e18 && v->u.num <= 9.2e18) {
            char buf[32];
            size_t n = i < sizeof buf - 1 ? i : sizeof buf - 1;
            memcpy(buf, p, n);
            buf[n] = 0;
            *out = jv_int(strtoll(buf, NULL, 10));
        } else *out = jv_float(v->u.num);
        return 0;
    }
    case HJ_STR: {
        if (!ju_valid(v->u.s, v->n)) return -2;
        char *s = ja_strdup(a, v->u.s, v->n);
        if (!s) return -1;
        *out = jv_str(s, v->n);
        return 0;
    }
    case HJ_ARR: {
        jlist *l = jl_new(a, v->n);
        if (!l) return -1;
        for (uint32_t i = 0; i < v->n; i++) {
            int r = convert(a, src, &v->u.items[i], &l->v[l->n++], depth + 1);
            if (r) return r;
        }
        *out = jv_list(l);
        return 0;
    }
    case HJ_OBJ: {
        jdict *d = jd_new(a, v->n);
        if (!d) return -1;
        for (uint32_t i = 0; i < v->n; i++) {
            jv k, val;
            int r = convert(a, src, &v->u.items[2 * i], &k, depth + 1);
            if (!r) r = convert(a, src, &v->u.items[2 * i + 1], &val, depth + 1);
            if (r) return r;
            if (jd_set(a, d, k, val)) return -1;
        }
        *out = jv_dict(d);
        return 0;
    }
    }
    return -1;
}

int jj_from_json(jarena *a, const char *json, size_t n, jdict **vars, char *err, size_t errcap) {
    hj_doc doc;
    if (hj_parse(json, n, "context JSON", &doc) != HSD_OK) {
        snprintf(err, errcap, "%s", hsd_last_error());
        return -1;
    }
    if (doc.root->type != HJ_OBJ) {
        hj_free(&doc);
        snprintf(err, errcap, "context JSON: the top level must be an object");
        return -1;
    }
    jv v;
    int r = convert(a, json, doc.root, &v, 0);
    hj_free(&doc);
    if (r == -2) { snprintf(err, errcap, "context JSON: a string is not valid UTF-8"); return -1; }
    if (r) { snprintf(err, errcap, "context JSON: too deeply nested or out of memory"); return -1; }
    *vars = v.u.d;
    return 0;
}

static void dump_str(jsb *b, const char *p, size_t n, int ascii) {
    jsb_putc(b, '"');
    size_t i = 0;
    while (i < n) {
        size_t st = i;
        uint32_t c = ju_dec(p, n, &i);
        switch (c) {
        case '"': jsb_puts(b, "\\\""); break;
        case '\\': jsb_puts(b, "\\\\"); break;
        case '\n': jsb_puts(b, "\\n"); break;
        case '\r': jsb_puts(b, "\\r"); break;
        case '\t': jsb_puts(b, "\\t"); break;
        case '\b': jsb_puts(b, "\\b"); break;
        case '\f': jsb_puts(b, "\\f"); break;
        default:
            if (c < 0x20) jsb_printf(b, "\\u%04x", c);
            else if (ascii && c > 0x7E) {
                if (c >= 0x10000) {
                    uint32_t v = c - 0x10000;
                    jsb_printf(b, "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
                } else jsb_printf(b, "\\u%04x", c);
            } else jsb_put(b, p + st, i - st);
        }
    }
    jsb_putc(b, '"');
}

static void newline_indent(jsb *b, const char *indent, size_t n, int level) {
    jsb_putc(b, '\n');
    for (int i = 0; i < level; i++) jsb_put(b, indent, n);
}

static int key_text(jctx *x, jsb *b, jv k, int ascii) {
    switch (k.t) {
    case JV_STR: dump_str(b, k.u.s.p, k.u.s.n, ascii); return 0;
    case JV_INT: jsb_printf(b, "\"%lld\"", (long long)k.u.i); return 0;
    case JV_BOOL: jsb_puts(b, k.u.i ? "\"true\"" : "\"false\""); return 0;
    case JV_NONE: jsb_puts(b, "\"null\""); return 0;
    case JV_FLOAT: jsb_putc(b, '"'); jv_float_repr(b, k.u.f); jsb_putc(b, '"'); return 0;
    default:
        return jx_fail(x, JX_RT, "TypeError: keys must be str, int, float, bool or None, not %s", jv_type_name(k));
    }
}

/* flags bit0: indent given; bit1: ensure_ascii */
int jj_dumps(jctx *x, jsb *b, jv v, const char *indent, size_t indent_n, int flags,
             const char *item_sep, const char *key_sep, int sort_keys, int level) {
    int has_indent = flags & 1, ascii = (flags >> 1) & 1;
    if (level > 256) return jx_fail(x, JX_RT, "RecursionError: tojson nesting too deep");
    if (b->n > x->max_output) return jx_fail(x, HSD_ERR_OUT_OF_RANGE, "tojson output exceeds the output limit");
    switch (v.t) {
    case JV_NONE: jsb_puts(b, "null"); return 0;
    case JV_BOOL: jsb_puts(b, v.u.i ? "true" : "false"); return 0;
    case JV_INT: jsb_printf(b, "%lld", (long long)v.u.i); return 0;
    case JV_FLOAT:
        if (v.u.f != v.u.f) jsb_puts(b, "NaN");
        else if (isinf(v.u.f)) jsb_puts(b, v.u.f < 0 ? "-Infinity" : "Infinity");
        else jv_float_repr(b, v.u.f);
        return 0;
    case JV_STR: dump_str(b, v.u.s.p, v.u.s.n, ascii); return 0;
    case JV_LIST: {
        jlist *l = v.u.l;
        if (!l->n) { jsb_puts(b, "[]"); return 0; }
        jsb_putc(b, '[');
        for (size_t i = 0; i < l->n; i++) {
            if (i) jsb_puts(b, item_sep);
            if (has_indent) newline_indent(b, indent, indent_n, level + 1);
            if (jj_dumps(x, b, l->v[i], indent, indent_n, flags, item_sep, key_sep, sort_keys, level + 1)) return -1;
        }
        if (has_indent) newline_indent(b, indent, indent_n, level);
        jsb_putc(b, ']');
        return 0;
    }
    case JV_DICT: {
        jdict *d = v.u.d;
        if (!d->n) { jsb_puts(b, "{}"); return 0; }
        size_t *ord = malloc(d->n * sizeof *ord);
        if (!ord) return jx_oom(x);
        for (size_t i = 0; i < d->n; i++) ord[i] = i;
        if (sort_keys) {
            for (size_t i = 1; i < d->n; i++) {
                size_t cur = ord[i], j = i;
                while (j > 0) {
                    int c = jv_cmp(d->k[ord[j - 1]], d->k[cur]);
                    if (c == -2) {
                        size_t prev = ord[j - 1]; /* read before the free (the debug build's
                                                     -Wuse-after-free caught it) */
                        free(ord);
                        return jx_fail(x, JX_RT, "TypeError: '<' not supported between instances of '%s' and '%s'",
                                       jv_type_name(d->k[cur]), jv_type_name(d->k[prev]));
                    }
                    if (c <= 0) break;
                    ord[j] = ord[j - 1];
                    j--;
                }
                ord[j] = cur;
            }
        }
        jsb_putc(b, '{');
        for (size_t i = 0; i < d->n; i++) {
            size_t k = ord[i];
            if (i) jsb_puts(b, item_sep);
            if (has_indent) newline_indent(b, indent, indent_n, level + 1);
            if (key_text(x, b, d->k[k], ascii)) { free(ord); return -1; }
            jsb_puts(b, key_sep);
            if (jj_dumps(x, b, d->v[k], indent, indent_n, flags, item_sep, key_sep, sort_keys, level + 1)) {
                free(ord);
                return -1;
            }
        }
        free(ord);
        if (has_indent) newline_indent(b, indent, indent_n, level);
        jsb_putc(b, '}');
        return 0;
    }
    default:
        return jx_fail(x, JX_RT, "TypeError: Object of type %s is not JSON serializable", jv_type_name(v));
    }
}
