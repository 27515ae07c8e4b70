/* Evaluator: walks the AST, writing output text. Semantics follow Jinja2 3.x on Python:
 * Undefined prints as "" and iterates as empty but raises on attribute access, calls and
 * arithmetic; `set` inside a for loop stays in the loop (hence namespace()); attribute
 * access tries the Python attribute (methods) before the item, item access the other way
 * round; the sandbox blocks methods that mutate lists and dicts. */
#include "tokenize/chat/chat_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int jx_fail(jctx *x, hsd_status s, const char *fmt, ...) {
    if (x->status != HSD_OK) return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->err, sizeof x->err, fmt, ap);
    va_end(ap);
    x->status = s;
    return -1;
}

int jx_oom(jctx *x) {
    return jx_fail(x, HSD_ERR_NOMEM, "template render ran out of memory (limit %zu bytes)", x->ar->limit);
}

int jx_step(jctx *x) {
    if (++x->steps > x->max_steps)
        return jx_fail(x, HSD_ERR_OUT_OF_RANGE, "template exceeded the step limit (%llu)",
                       (unsigned long long)x->max_steps);
    return 0;
}

int jx_undefined_error(jctx *x, jv u) {
    if (u.unsafe)
        return jx_fail(x, HSD_ERR_UNSUPPORTED, "SecurityError: access to attribute '%.*s' is unsafe.",
                       (int)u.u.s.n, u.u.s.p ? u.u.s.p : "");
    if (u.u.s.p) return jx_fail(x, JX_RT, "UndefinedError: '%.*s' is undefined", (int)u.u.s.n, u.u.s.p);
    return jx_fail(x, JX_RT, "UndefinedError: a value is undefined");
}

jv jx_str_value(jctx *x, jv v) {
    if (v.t == JV_STR) return v;
    jsb b = {0};
    jv_str_to(&b, v);
    char *s = b.oom ? NULL : ja_strdup(x->ar, b.p ? b.p : "", b.n);
    size_t n = b.n;
    jsb_free(&b);
    if (!s) { jx_oom(x); return jv_str("", 0); }
    return jv_str(s, n);
}

int jx_capture_begin(jctx *x, jsb *b, jsb **saved) {
    memset(b, 0, sizeof *b);
    *saved = x->out;
    x->out = b;
    return 0;
}

int jx_capture_end(jctx *x, jsb *b, jsb *saved, jv *out) {
    x->out = saved;
    if (b->oom) { jsb_free(b); return jx_oom(x); }
    char *s = ja_strdup(x->ar, b->p ? b->p : "", b->n);
    size_t n = b->n;
    jsb_free(b);
    if (!s) return jx_oom(x);
    *out = jv_str(s, n);
    return 0;
}

static int emit(jctx *x, const char *p, size_t n) {
    if (x->out->n + n > x->max_output)
        return jx_fail(x, HSD_ERR_OUT_OF_RANGE, "template output exceeds the limit of %zu bytes", x->max_output);
    jsb_put(x->out, p, n);
    if (x->out->oom) return jx_oom(x);
    return 0;
}

/* ---- frames --------------------------------------------------------------------- */
static jframe *frame_new(jctx *x, jframe *parent) {
    jframe *f = ja_alloc(x->ar, sizeof *f);
    if (!f) { jx_oom(x); return NULL; }
    f->parent = parent;
    return f;
}

static int frame_set(jctx *x, jframe *f, const char *name, jv v) {
    for (size_t i = 0; i < f->n; i++)
        if (!strcmp(f->names[i], name)) { f->vals[i] = v; return 0; }
    if (f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 8;
        const char **nn = ja_alloc(x->ar, cap * sizeof *nn);
        jv *nv = ja_alloc(x->ar, cap * sizeof *nv);
        if (!nn || !nv) return jx_oom(x);
        if (f->n) {
            memcpy(nn, f->names, f->n * sizeof *nn);
            memcpy(nv, f->vals, f->n * sizeof *nv);
        }
        f->names = nn;
        f->vals = nv;
        f->cap = cap;
    }
    f->names[f->n] = name;
    f->vals[f->n] = v;
    f->n++;
    return 0;
}

static int lookup(jctx *x, const char *name, jv *out) {
    for (jframe *f = x->fr; f; f = f->parent)
        for (size_t i = f->n; i-- > 0;)
            if (!strcmp(f->names[i], name)) { *out = f->vals[i]; return 1; }
    const jv *v = jd_gets(x->vars, name, strlen(name));
    if (v) { *out = *v; return 1; }
    int g = jb_global(name, strlen(name));
    if (g) {
        jv f = {0};
        f.t = JV_FUNC;
        f.fn = (uint8_t)g;
        *out = f;
        return 1;
    }
    *out = jv_undef(name);
    return 0;
}

/* ---- attribute and item access ---------------------------------------------------- */
static int loop_attr(jctx *x, jloop *lp, const char *name, jv *out) {
    size_t i = lp->i, n = lp->n;
    if (!strcmp(name, "index")) *out = jv_int((int64_t)i + 1);
    else if (!strcmp(name, "index0")) *out = jv_int((int64_t)i);
    else if (!strcmp(name, "revindex")) *out = jv_int((int64_t)(n - i));
    else if (!strcmp(name, "revindex0")) *out = jv_int((int64_t)(n - i - 1));
    else if (!strcmp(name, "first")) *out = jv_bool(i == 0);
    else if (!strcmp(name, "last")) *out = jv_bool(i + 1 == n);
    else if (!strcmp(name, "length")) *out = jv_int((int64_t)n);
    else if (!strcmp(name, "depth")) *out = jv_int((int64_t)lp->depth);
    else if (!strcmp(name, "depth0")) *out = jv_int((int64_t)lp->depth - 1);
    else if (!strcmp(name, "previtem")) *out = i > 0 ? lp->items->v[i - 1] : jv_undef("previtem");
    else if (!strcmp(name, "nextitem")) *out = i + 1 < n ? lp->items->v[i + 1] : jv_undef("nextitem");
    else if (!strcmp(name, "cycle") || !strcmp(name, "changed")) {
        jmethod *m = ja_alloc(x->ar, sizeof *m);
        if (!m) return jx_oom(x);
        m->self.t = JV_LOOP;
        m->self.u.ptr = lp;
        m->name = name[0] == 'c' && name[1] == 'y' ? "cycle" : "changed";
        out->t = JV_METHOD;
        out->u.ptr = m;
    } else *out = jv_undef(name);
    return 0;
}

static jv method_value(jctx *x, jv self, const char *name) {
    jmethod *m = ja_alloc(x->ar, sizeof *m);
    if (!m) { jx_oom(x); return jv_undef(name); }
    m->self = self;
    m->name = name;
    jv v = {0};
    v.t = JV_METHOD;
    v.u.ptr = m;
    return v;
}

int jx_getattr(jctx *x, jv obj, const char *name, jv *out) {
    if (obj.t == JV_UNDEF) return jx_undefined_error(x, obj);
    if (name[0] == '_') { *out = jv_undef(name); return 0; } /* sandbox: private attributes */
    if (obj.t == JV_LOOP) return loop_attr(x, obj.u.ptr, name, out);
    int m = jb_is_method(obj, name);
    if (m == 2) {
        *out = jv_undef(name);
        out->unsafe = 1;
        return 0;
    }
    if (m == 1) {
        *out = method_value(x, obj, name);
        return x->status == HSD_OK ? 0 : -1;
    }
    if (obj.t == JV_DICT || obj.t == JV_NS) {
        const jv *v = jd_gets(obj.u.d, name, strlen(name));
        *out = v ? *v : jv_undef(name);
        return 0;
    }
    *out = jv_undef(name);
    return 0;
}

static int norm_index(jv key, size_t n, size_t *idx) {
    if (key.t != JV_INT && key.t != JV_BOOL) return 0;
    int64_t i = key.u.i;
    if (i < 0) i += (int64_t)n;
    if (i < 0 || (uint64_t)i >= n) return 0;
    *idx = (size_t)i;
    return 1;
}

int jx_getitem(jctx *x, jv obj, jv key, jv *out) {
    if (obj.t == JV_UNDEF) return jx_undefined_error(x, obj);
    size_t idx;
    switch (obj.t) {
    case JV_DICT: {
        const jv *v = jd_get(obj.u.d, key);
        if (v) { *out = *v; return 0; }
        break;
    }
    case JV_LIST:
        if (norm_index(key, obj.u.l->n, &idx)) { *out = obj.u.l->v[idx]; return 0; }
        break;
    case JV_STR:
        if (key.t == JV_INT || key.t == JV_BOOL) {
            size_t n = ju_len(obj.u.s.p, obj.u.s.n);
            if (norm_index(key, n, &idx)) {
                size_t a = ju_off(obj.u.s.p, obj.u.s.n, idx), b = ju_off(obj.u.s.p, obj.u.s.n, idx + 1);
                *out = jv_str(obj.u.s.p + a, b - a);
                return 0;
            }
        }
        break;
    default: break;
    }
    if (key.t == JV_STR) {
        char *nm = ja_strdup(x->ar, key.u.s.p, key.u.s.n);
        if (!nm) return jx_oom(x);
        if (obj.t == JV_DICT) { /* the item is missing: only a method can remain */
            int m = jb_is_method(obj, nm);
            if (!m) { *out = jv_undef(nm); return 0; }
        }
        return jx_getattr(x, obj, nm, out);
    }
    *out = jv_undef(NULL);
    return 0;
}

int jx_iter(jctx *x, jv v, jlist **out) {
    switch (v.t) {
    case JV_UNDEF: *out = jl_new(x->ar, 0); return *out ? 0 : jx_oom(x);
    case JV_LIST: *out = v.u.l; return 0;
    case JV_DICT: {
        jlist *l = jl_new(x->ar, v.u.d->n);
        if (!l) return jx_oom(x);
        for (size_t i = 0; i < v.u.d->n; i++) l->v[l->n++] = v.u.d->k[i];
        *out = l;
        return 0;
    }
    case JV_STR: {
        jlist *l = jl_new(x->ar, v.u.s.n);
        if (!l) return jx_oom(x);
        size_t i = 0;
        while (i < v.u.s.n) {
            size_t st = i;
            ju_dec(v.u.s.p, v.u.s.n, &i);
            l->v[l->n++] = jv_str(v.u.s.p + st, i - st);
        }
        *out = l;
        return 0;
    }
    default:
        return jx_fail(x, JX_RT, "TypeError: '%s' object is not iterable", jv_type_name(v));
    }
}

/* ---- operators ------------------------------------------------------------------ */
static int slice_bounds(jctx *x, jv *parts, int64_t len, int64_t *start, int64_t *stop, int64_t *step) {
    for (int k = 0; k < 3; k++)
        if (parts[k].t != JV_NONE && parts[k].t != JV_UNDEF && parts[k].t != JV_INT && parts[k].t != JV_BOOL)
            return jx_fail(x, JX_RT, "TypeError: slice indices must be integers or None");
    *step = parts[2].t == JV_INT || parts[2].t == JV_BOOL ? parts[2].u.i : 1;
    if (*step == 0) return jx_fail(x, JX_RT, "ValueError: slice step cannot be zero");
    int64_t lo = *step < 0 ? -1 : 0, hi = *step < 0 ? len - 1 : len;
    for (int k = 0; k < 2; k++) {
        int64_t *dst = k == 0 ? start : stop;
        if (parts[k].t == JV_INT || parts[k].t == JV_BOOL) {
            int64_t v = parts[k].u.i;
            if (v < 0) { v += len; if (v < lo) v = lo; }
            else if (v > hi) v = hi;
            *dst = v;
        } else {
            *dst = k == 0 ? (*step < 0 ? hi : lo) : (*step < 0 ? lo : hi);
        }
    }
    return 0;
}

static int do_slice(jctx *x, jv obj, jv *parts, jv *out) {
    if (obj.t == JV_UNDEF) return jx_undefined_error(x, obj);
    int64_t start, stop, step;
    if (obj.t == JV_LIST) {
        if (slice_bounds(x, parts, (int64_t)obj.u.l->n, &start, &stop, &step)) return -1;
        jlist *l = jl_new(x->ar, 0);
        if (!l) return jx_oom(x);
        for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step)
            if (jl_push(x->ar, l, obj.u.l->v[i])) return jx_oom(x);
        *out = jv_list(l);
        out->tuple = obj.tuple;
        return 0;
    }
    if (obj.t == JV_STR) {
        const char *p = obj.u.s.p;
        size_t n = obj.u.s.n, len = ju_len(p, n);
        if (slice_bounds(x, parts, (int64_t)len, &start, &stop, &step)) return -1;
        if (step == 1) {
            if (stop < start) stop = start;
            size_t a = ju_off(p, n, (size_t)start), b = ju_off(p, n, (size_t)stop);
            *out = jv_str(p + a, b - a);
            return 0;
        }
        size_t *offs = malloc((len + 1) * sizeof *offs);
        if (!offs) return jx_oom(x);
        size_t i = 0, c = 0;
        while (i < n) { offs[c++] = i; ju_dec(p, n, &i); }
        offs[len] = n;
        jsb b = {0};
        for (int64_t k = start; step > 0 ? k < stop : k > stop; k += step)
            jsb_put(&b, p + offs[k], offs[k + 1] - offs[k]);
        free(offs);
        char *s = b.oom ? NULL : ja_strdup(x->ar, b.p ? b.p : "", b.n);
        size_t sn = b.n;
        jsb_free(&b);
        if (!s) return jx_oom(x);
        *out = jv_str(s, sn);
        return 0;
    }
    if (obj.t == JV_NONE || obj.t == JV_DICT) { *out = jv_undef(NULL); return 0; }
    return jx_fail(x, JX_RT, "TypeError: '%s' object is not subscriptable", jv_type_name(obj));
}

static int type_err(jctx *x, const char *op, jv a, jv b) {
    return jx_fail(x, JX_RT, "TypeError: unsupported operand type(s) for %s: '%s' and '%s'", op,
                   jv_type_name(a), jv_type_name(b));
}

static int str_concat(jctx *x, const char *a, size_t an, const char *b, size_t bn, jv *out) {
    char *s = ja_alloc(x->ar, an + bn + 1);
    if (!s) return jx_oom(x);
    if (an) memcpy(s, a, an);
    if (bn) memcpy(s + an, b, bn);
    *out = jv_str(s, an + bn);
    return 0;
}

static int binop(jctx *x, int op, jv a, jv b, jv *out) {
    static const char *names[] = {"+", "-", "*", "/", "//", "%", "**"};
    if (a.t == JV_UNDEF) return jx_undefined_error(x, a);
    if (b.t == JV_UNDEF) return jx_undefined_error(x, b);
    if (jv_is_num(a) && jv_is_num(b)) {
        int fl = a.t == JV_FLOAT || b.t == JV_FLOAT;
        if (!fl && op != OP_DIV) {
            int64_t p = a.u.i, q = b.u.i, r;
            switch (op) {
            case OP_ADD: if (__builtin_add_overflow(p, q, &r)) goto ovf; *out = jv_int(r); return 0;
            case OP_SUB: if (__builtin_sub_overflow(p, q, &r)) goto ovf; *out = jv_int(r); return 0;
            case OP_MUL: if (__builtin_mul_overflow(p, q, &r)) goto ovf; *out = jv_int(r); return 0;
            case OP_FLOORDIV: case OP_MOD: {
                if (q == 0) return jx_fail(x, JX_RT, "ZeroDivisionError: integer division or modulo by zero");
                if (p == INT64_MIN && q == -1) goto ovf;
                int64_t d = p / q, m = p % q;
                if (m != 0 && ((m < 0) != (q < 0))) { d--; m += q; }
                *out = jv_int(op == OP_MOD ? m : d);
                return 0;
            }
            case OP_POW: {
                if (q < 0) { *out = jv_float(pow((double)p, (double)q)); return 0; }
                int64_t res = 1;
                for (int64_t i = 0; i < q; i++) {
                    if (__builtin_mul_overflow(res, p, &res)) goto ovf;
                    if (res == 0 || res == 1) break;
                }
                *out = jv_int(res);
                return 0;
            }
            }
        }
        double p = jv_num(a), q = jv_num(b);
        switch (op) {
        case OP_ADD: *out = jv_float(p + q); return 0;
        case OP_SUB: *out = jv_float(p - q); return 0;
        case OP_MUL: *out = jv_float(p * q); return 0;
        case OP_DIV:
            if (q == 0) return jx_fail(x, JX_RT, "ZeroDivisionError: division by zero");
            *out = jv_float(p / q);
            return 0;
        case OP_FLOORDIV: case OP_MOD: {
            if (q == 0) return jx_fail(x, JX_RT, "ZeroDivisionError: float modulo");
            double m = fmod(p, q);
            if (m != 0 && ((m < 0) != (q < 0))) m += q;
            *out = jv_float(op == OP_MOD ? m : floor(p / q));
            return 0;
        }
        case OP_POW: *out = jv_float(pow(p, q)); return 0;
        }
    }
    if (op == OP_ADD) {
        if (a.t == JV_STR && b.t == JV_STR) return str_concat(x, a.u.s.p, a.u.s.n, b.u.s.p, b.u.s.n, out);
        if (a.t == JV_LIST && b.t == JV_LIST && a.tuple == b.tuple) {
            jlist *l = jl_new(x->ar, a.u.l->n + b.u.l->n);
            if (!l) return jx_oom(x);
            memcpy(l->v, a.u.l->v, a.u.l->n * sizeof(jv));
            memcpy(l->v + a.u.l->n, b.u.l->v, b.u.l->n * sizeof(jv));
            l->n = a.u.l->n + b.u.l->n;
            *out = jv_list(l);
            out->tuple = a.tuple;
            return 0;
        }
        if (a.t == JV_STR || b.t == JV_STR)
            return jx_fail(x, JX_RT, "TypeError: can only concatenate str (not \"%s\") to str",
                           jv_type_name(a.t == JV_STR ? b : a));
    }
    if (op == OP_MUL && ((a.t == JV_STR || a.t == JV_LIST) && (b.t == JV_INT || b.t == JV_BOOL))) {
        int64_t k = b.u.i < 0 ? 0 : b.u.i;
        if (a.t == JV_STR) {
            if (k && a.u.s.n > x->max_output / (uint64_t)k)
                return jx_fail(x, HSD_ERR_OUT_OF_RANGE, "string repetition exceeds the output limit");
            char *s = ja_alloc(x->ar, a.u.s.n * (size_t)k + 1);
            if (!s) return jx_oom(x);
            for (int64_t i = 0; i < k; i++) memcpy(s + (size_t)i * a.u.s.n, a.u.s.p, a.u.s.n);
            *out = jv_str(s, a.u.s.n * (size_t)k);
            return 0;
        }
        if (k && a.u.l->n > x->max_output / (uint64_t)k)
            return jx_fail(x, HSD_ERR_OUT_OF_RANGE, "list repetition exceeds the output limit");
        jlist *l = jl_new(x->ar, a.u.l->n * (size_t)k);
        if (!l) return jx_oom(x);
        for (int64_t i = 0; i < k; i++)
            for (size_t j = 0; j < a.u.l->n; j++) l->v[l->n++] = a.u.l->v[j];
        *out = jv_list(l);
        return 0;
    }
    if (op == OP_MUL && ((b.t == JV_STR || b.t == JV_LIST) && (a.t == JV_INT || a.t == JV_BOOL)))
        return binop(x, op, b, a, out);
    if (op == OP_MOD && a.t == JV_STR) return jb_percent_format(x, a, b, out);
    return type_err(x, names[op], a, b);
ovf:
    return jx_fail(x, HSD_ERR_OUT_OF_RANGE, "integer overflow in '%s'", names[op]);
}

static int contains(jctx *x, jv item, jv cont, int *res) {
    switch (cont.t) {
    case JV_STR:
        if (item.t != JV_STR)
            return jx_fail(x, JX_RT, "TypeError: 'in <string>' requires string as left operand, not %s",
                           jv_type_name(item));
        *res = item.u.s.n == 0 || (item.u.s.n <= cont.u.s.n && memmem(cont.u.s.p, cont.u.s.n, item.u.s.p, item.u.s.n));
        return 0;
    case JV_LIST:
        *res = 0;
        for (size_t i = 0; i < cont.u.l->n; i++)
            if (jv_eq(cont.u.l->v[i], item)) { *res = 1; break; }
        return 0;
    case JV_DICT: case JV_NS: *res = jd_get(cont.u.d, item) != NULL; return 0;
    case JV_UNDEF: *res = 0; return 0;
    default:
        return jx_fail(x, JX_RT, "TypeError: argument of type '%s' is not iterable", jv_type_name(cont));
    }
}

static int compare(jctx *x, int op, jv a, jv b, int *res) {
    static const char *names[] = {"==", "!=", "<", "<=", ">", ">="};
    switch (op) {
    case OP_EQ: *res = jv_eq(a, b); return 0;
    case OP_NE: *res = !jv_eq(a, b); return 0;
    case OP_IN: return contains(x, a, b, res);
    case OP_NOTIN: if (contains(x, a, b, res)) return -1; *res = !*res; return 0;
    }
    if (a.t == JV_UNDEF) return jx_undefined_error(x, a);
    if (b.t == JV_UNDEF) return jx_undefined_error(x, b);
    int c = jv_cmp(a, b);
    if (c == -2)
        return jx_fail(x, JX_RT, "TypeError: '%s' not supported between instances of '%s' and '%s'",
                       names[op - OP_EQ], jv_type_name(a), jv_type_name(b));
    if (c == 2) { *res = 0; return 0; }
    switch (op) {
    case OP_LT: *res = c < 0; break;
    case OP_LE: *res = c <= 0; break;
    case OP_GT: *res = c > 0; break;
    default: *res = c >= 0; break;
    }
    return 0;
}

/* ---- calls ---------------------------------------------------------------------- */
typedef struct args {
    jv pos[16];
    jv *posv;
    size_t np, cap;
    const char *kwn[16];
    jv kwv[16];
    size_t nk;
} args;

static int eval_args(jctx *x, jnode **kids, uint32_t nk, args *a) {
    a->posv = a->pos;
    a->cap = 16;
    for (uint32_t i = 0; i < nk; i++) {
        jnode *k = kids[i];
        jv v;
        if (k->k == JN_KW) {
            if (jeval(x, k->a, &v)) return -1;
            if (a->nk >= 16) return jx_fail(x, HSD_ERR_UNSUPPORTED, "too many keyword arguments");
            a->kwn[a->nk] = k->name;
            a->kwv[a->nk++] = v;
            continue;
        }
        if (jeval(x, k->k == JN_STARARGS || k->k == JN_STARKW ? k->a : k, &v)) return -1;
        if (k->k == JN_STARKW) {
            if (v.t != JV_DICT) return jx_fail(x, JX_RT, "TypeError: argument after ** must be a mapping");
            for (size_t j = 0; j < v.u.d->n; j++) {
                if (a->nk >= 16) return jx_fail(x, HSD_ERR_UNSUPPORTED, "too many keyword arguments");
                if (v.u.d->k[j].t != JV_STR) return jx_fail(x, JX_RT, "TypeError: keywords must be strings");
                char *nm = ja_strdup(x->ar, v.u.d->k[j].u.s.p, v.u.d->k[j].u.s.n);
                if (!nm) return jx_oom(x);
                a->kwn[a->nk] = nm;
                a->kwv[a->nk++] = v.u.d->v[j];
            }
            continue;
        }
        jlist *spread = NULL;
        if (k->k == JN_STARARGS && jx_iter(x, v, &spread)) return -1;
        size_t add = spread ? spread->n : 1;
        if (a->np + add > a->cap) {
            size_t cap = (a->np + add) * 2;
            jv *nv = ja_alloc(x->ar, cap * sizeof(jv));
            if (!nv) return jx_oom(x);
            memcpy(nv, a->posv, a->np * sizeof(jv));
            a->posv = nv;
            a->cap = cap;
        }
        if (spread) for (size_t j = 0; j < spread->n; j++) a->posv[a->np++] = spread->v[j];
        else a->posv[a->np++] = v;
    }
    return 0;
}

static int call_macro(jctx *x, jmacro *m, jv *pos, size_t np, const char **kwn, jv *kwv, size_t nk, jv *out) {
    jnode *def = m->def;
    if (x->depth >= x->max_depth)
        return jx_fail(x, HSD_ERR_OUT_OF_RANGE, "template recursion deeper than %u", x->max_depth);
    if (jx_step(x)) return -1;
    jframe *f = frame_new(x, m->scope);
    if (!f) return -1;
    jframe *saved_fr = x->fr;
    x->fr = f;
    jlist *varargs = jl_new(x->ar, 0);
    jdict *kwargs = jd_new(x->ar, 0);
    if (!varargs || !kwargs) { x->fr = saved_fr; return jx_oom(x); }
    jv caller = jv_undef("caller");
    for (size_t i = 0; i < nk; i++)
        if (!strcmp(kwn[i], "caller")) caller = kwv[i];
    for (uint32_t i = 0; i < def->nk; i++) {
        jnode *prm = def->kids[i];
        jv v;
        int have = 0;
        if (i < np) { v = pos[i]; have = 1; }
        for (size_t k = 0; k < nk; k++)
            if (!strcmp(kwn[k], prm->name)) { v = kwv[k]; have = 1; }
        if (!have) {
            if (prm->a) {
                if (jeval(x, prm->a, &v)) { x->fr = saved_fr; return -1; }
            } else v = jv_undef(prm->name);
        }
        if (frame_set(x, f, prm->name, v)) { x->fr = saved_fr; return -1; }
    }
    for (size_t i = def->nk; i < np; i++)
        if (jl_push(x->ar, varargs, pos[i])) { x->fr = saved_fr; return jx_oom(x); }
    for (size_t k = 0; k < nk; k++) {
        int known = !strcmp(kwn[k], "caller");
        for (uint32_t i = 0; i < def->nk; i++)
            if (!strcmp(kwn[k], def->kids[i]->name)) known = 1;
        if (!known && jd_set(x->ar, kwargs, jv_str(kwn[k], strlen(kwn[k])), kwv[k])) { x->fr = saved_fr; return jx_oom(x); }
    }
    jv va = jv_list(varargs);
    va.tuple = 1;
    if (frame_set(x, f, "varargs", va) || frame_set(x, f, "kwargs", jv_dict(kwargs)) ||
        (caller.t != JV_UNDEF && frame_set(x, f, "caller", caller))) {
        x->fr = saved_fr;
        return -1;
    }
    jsb b, *saved;
    jx_capture_begin(x, &b, &saved);
    int brk = x->brk, cont = x->cont;
    x->depth++;
    int r = jexec(x, def->b);
    x->depth--;
    x->brk = brk;
    x->cont = cont;
    x->fr = saved_fr;
    if (r < 0) { x->out = saved; jsb_free(&b); return -1; }
    return jx_capture_end(x, &b, saved, out);
}

int jx_call_value(jctx *x, jv fn, jv *pos, size_t np, const char **kwn, jv *kwv, size_t nk, jv *out) {
    switch (fn.t) {
    case JV_MACRO: return call_macro(x, fn.u.ptr, pos, np, kwn, kwv, nk, out);
    case JV_FUNC: return jb_call_global(x, fn.fn, pos, np, kwn, kwv, nk, out);
    case JV_METHOD: {
        jmethod *m = fn.u.ptr;
        return jb_method(x, m->self, m->name, pos, np, kwn, kwv, nk, out);
    }
    case JV_UNDEF: return jx_undefined_error(x, fn);
    default:
        return jx_fail(x, JX_RT, "TypeError: '%s' object is not callable", jv_type_name(fn));
    }
}

static int eval_call(jctx *x, jnode *e, jv *out) {
    jv fn;
    if (jeval(x, e->a, &fn)) return -1;
    args a = {0};
    if (eval_args(x, e->kids, e->nk, &a)) return -1;
    return jx_call_value(x, fn, a.posv, a.np, a.kwn, a.kwv, a.nk, out);
}

static int eval_filter(jctx *x, jnode *e, jv v, jv *out) {
    args a = {0};
    if (eval_args(x, e->kids, e->nk, &a)) return -1;
    return jb_filter(x, e->name, v, a.posv, a.np, a.kwn, a.kwv, a.nk, out);
}

/* ---- expressions ---------------------------------------------------------------- */
int jeval(jctx *x, jnode *e, jv *out) {
    jv a, b;
    switch (e->k) {
    case JN_CONST: *out = e->lit; return 0;
    case JN_NAME: lookup(x, e->name, out); return 0;
    case JN_GETATTR:
        if (jeval(x, e->a, &a)) return -1;
        return jx_getattr(x, a, e->name, out);
    case JN_GETITEM:
        if (jeval(x, e->a, &a) || jeval(x, e->b, &b)) return -1;
        return jx_getitem(x, a, b, out);
    case JN_SLICE: {
        jv parts[3];
        if (jeval(x, e->a, &a)) return -1;
        for (int k = 0; k < 3; k++) {
            parts[k] = jv_none();
            if (e->kids[k] && jeval(x, e->kids[k], &parts[k])) return -1;
        }
        return do_slice(x, a, parts, out);
    }
    case JN_CALL: return eval_call(x, e, out);
    case JN_FILTER:
        if (jeval(x, e->a, &a)) return -1;
        return eval_filter(x, e, a, out);
    case JN_TEST: {
        if (jeval(x, e->a, &a)) return -1;
        args ar = {0};
        if (eval_args(x, e->kids, e->nk, &ar)) return -1;
        int r;
        if (jb_test(x, e->name, a, ar.posv, ar.np, &r)) return -1;
        *out = jv_bool(e->neg ? !r : r);
        return 0;
    }
    case JN_BINOP:
        if (jeval(x, e->a, &a) || jeval(x, e->b, &b)) return -1;
        return binop(x, e->op, a, b, out);
    case JN_NEG: case JN_POS:
        if (jeval(x, e->a, &a)) return -1;
        if (a.t == JV_UNDEF) return jx_undefined_error(x, a);
        if (!jv_is_num(a))
            return jx_fail(x, JX_RT, "TypeError: bad operand type for unary %c: '%s'",
                           e->k == JN_NEG ? '-' : '+', jv_type_name(a));
        if (e->k == JN_POS) *out = a.t == JV_BOOL ? jv_int(a.u.i) : a;
        else if (a.t == JV_FLOAT) *out = jv_float(-a.u.f);
        else if (a.u.i == INT64_MIN) return jx_fail(x, HSD_ERR_OUT_OF_RANGE, "integer overflow in unary -");
        else *out = jv_int(-a.u.i);
        return 0;
    case JN_NOT:
        if (jeval(x, e->a, &a)) return -1;
        *out = jv_bool(!jv_truthy(a));
        return 0;
    case JN_AND:
        if (jeval(x, e->a, &a)) return -1;
        if (!jv_truthy(a)) { *out = a; return 0; }
        return jeval(x, e->b, out);
    case JN_OR:
        if (jeval(x, e->a, &a)) return -1;
        if (jv_truthy(a)) { *out = a; return 0; }
        return jeval(x, e->b, out);
    case JN_COMPARE: {
        if (jeval(x, e->a, &a)) return -1;
        for (uint32_t i = 0; i < e->nk; i++) {
            int r;
            if (jeval(x, e->kids[i]->a, &b) || compare(x, e->kids[i]->op, a, b, &r)) return -1;
            if (!r) { *out = jv_bool(0); return 0; }
            a = b;
        }
        *out = jv_bool(1);
        return 0;
    }
    case JN_CONCAT: {
        jsb s = {0};
        for (uint32_t i = 0; i < e->nk; i++) {
            if (jeval(x, e->kids[i], &a)) { jsb_free(&s); return -1; }
            jv_str_to(&s, a);
            if (s.n > x->max_output) { jsb_free(&s); return jx_fail(x, HSD_ERR_OUT_OF_RANGE, "string exceeds the output limit"); }
        }
        char *p = s.oom ? NULL : ja_strdup(x->ar, s.p ? s.p : "", s.n);
        size_t n = s.n;
        jsb_free(&s);
        if (!p) return jx_oom(x);
        *out = jv_str(p, n);
        return 0;
    }
    case JN_COND:
        if (jeval(x, e->a, &a)) return -1;
        if (jv_truthy(a)) return jeval(x, e->b, out);
        if (e->c) return jeval(x, e->c, out);
        *out = jv_undef(NULL);
        return 0;
    case JN_LIST: case JN_TUPLE: {
        jlist *l = jl_new(x->ar, e->nk);
        if (!l) return jx_oom(x);
        for (uint32_t i = 0; i < e->nk; i++)
            if (jeval(x, e->kids[i], &l->v[l->n++])) return -1;
        *out = jv_list(l);
        out->tuple = e->k == JN_TUPLE;
        return 0;
    }
    case JN_DICT: {
        jdict *d = jd_new(x->ar, e->nk / 2);
        if (!d) return jx_oom(x);
        for (uint32_t i = 0; i + 1 < e->nk; i += 2) {
            if (jeval(x, e->kids[i], &a) || jeval(x, e->kids[i + 1], &b)) return -1;
            if (a.t == JV_LIST && !a.tuple) return jx_fail(x, JX_RT, "TypeError: unhashable type: 'list'");
            if (a.t == JV_DICT) return jx_fail(x, JX_RT, "TypeError: unhashable type: 'dict'");
            if (jd_set(x->ar, d, a, b)) return jx_oom(x);
        }
        *out = jv_dict(d);
        return 0;
    }
    default:
        return jx_fail(x, HSD_ERR_INTERNAL, "line %u: cannot evaluate this node", e->line);
    }
}

/* ---- statements ----------------------------------------------------------------- */
static int assign(jctx *x, jnode *target, jv v) {
    if (target->k == JN_NAME) return frame_set(x, x->fr, target->name, v);
    if (target->k == JN_NSREF) {
        jv ns;
        lookup(x, target->name, &ns);
        if (ns.t != JV_NS)
            return jx_fail(x, JX_RT, "line %u: TemplateRuntimeError: cannot assign attribute on non-namespace object",
                           target->line);
        return jd_set(x->ar, ns.u.d, target->lit, v) ? jx_oom(x) : 0;
    }
    /* tuple unpacking */
    jlist *l;
    if (jx_iter(x, v, &l)) return -1;
    if (l->n != target->nk)
        return jx_fail(x, JX_RT, "ValueError: %s values to unpack (expected %u, got %zu)",
                       l->n > target->nk ? "too many" : "not enough", target->nk, l->n);
    for (uint32_t i = 0; i < target->nk; i++)
        if (assign(x, target->kids[i], l->v[i])) return -1;
    return 0;
}

static int exec_body(jctx *x, jnode *body) {
    for (uint32_t i = 0; i < body->nk; i++) {
        int r = jexec(x, body->kids[i]);
        if (r) return r;
        if (x->brk || x->cont) return 0;
    }
    return 0;
}

static int apply_filters(jctx *x, jnode *f, jv v, jv *out) {
    /* f is a chain FILTER(a=FILTER(a=NULL ...)): apply innermost first */
    if (!f) { *out = v; return 0; }
    jv inner;
    if (apply_filters(x, f->a, v, &inner)) return -1;
    return eval_filter(x, f, inner, out);
}

static int exec_for(jctx *x, jnode *s) {
    jv it;
    if (jeval(x, s->b, &it)) return -1;
    jlist *items;
    if (jx_iter(x, it, &items)) return -1;
    jframe *outer = x->fr;
    if (s->nk) { /* loop filter: evaluated with the target bound, before loop.* exists */
        jlist *kept = jl_new(x->ar, items->n);
        if (!kept) return jx_oom(x);
        for (size_t i = 0; i < items->n; i++) {
            jframe *f = frame_new(x, outer);
            if (!f) return -1;
            x->fr = f;
            jv c;
            int r = assign(x, s->a, items->v[i]) || jeval(x, s->kids[0], &c);
            x->fr = outer;
            if (r) return -1;
            if (jv_truthy(c)) kept->v[kept->n++] = items->v[i];
        }
        items = kept;
    }
    jloop *lp = ja_alloc(x->ar, sizeof *lp);
    if (!lp) return jx_oom(x);
    lp->items = items;
    lp->n = items->n;
    lp->depth = 1;
    jv lv = {0};
    lv.t = JV_LOOP;
    lv.u.ptr = lp;
    for (size_t i = 0; i < items->n; i++) {
        if (jx_step(x)) return -1;
        lp->i = i;
        jframe *f = frame_new(x, outer);
        if (!f) return -1;
        x->fr = f;
        int r = frame_set(x, f, "loop", lv);
        if (!r) r = assign(x, s->a, items->v[i]);
        if (!r) r = exec_body(x, s->c);
        x->fr = outer;
        if (r < 0) return -1;
        x->cont = 0;
        if (x->brk) { x->brk = 0; break; }
    }
    if (!items->n && s->d) return exec_body(x, s->d);
    return 0;
}

int jexec(jctx *x, jnode *s) {
    if (jx_step(x)) return -1;
    jv v;
    switch (s->k) {
    case JN_BODY: return exec_body(x, s);
    case JN_TEXT: return emit(x, s->lit.u.s.p, s->lit.u.s.n);
    case JN_PRINT: {
        if (jeval(x, s->a, &v)) return -1;
        if (v.t == JV_STR) return emit(x, v.u.s.p, v.u.s.n);
        jsb b = {0};
        jv_str_to(&b, v);
        int r = b.oom ? jx_oom(x) : emit(x, b.p ? b.p : "", b.n);
        jsb_free(&b);
        return r;
    }
    case JN_IF:
        if (jeval(x, s->a, &v)) return -1;
        if (jv_truthy(v)) return exec_body(x, s->b);
        if (s->c) return s->c->k == JN_IF ? jexec(x, s->c) : exec_body(x, s->c);
        return 0;
    case JN_FOR: return exec_for(x, s);
    case JN_SET:
        if (jeval(x, s->b, &v)) return -1;
        return assign(x, s->a, v);
    case JN_SETBLOCK: {
        jsb b, *saved;
        jx_capture_begin(x, &b, &saved);
        if (exec_body(x, s->b) < 0) { x->out = saved; jsb_free(&b); return -1; }
        if (jx_capture_end(x, &b, saved, &v)) return -1;
        if (s->c && apply_filters(x, s->c, v, &v)) return -1;
        return assign(x, s->a, v);
    }
    case JN_MACRO: case JN_CALLBLOCK: {
        jmacro *m = ja_alloc(x->ar, sizeof *m);
        if (!m) return jx_oom(x);
        m->def = s;
        m->scope = x->fr;
        jv mv = {0};
        mv.t = JV_MACRO;
        mv.u.ptr = m;
        if (s->k == JN_MACRO) return frame_set(x, x->fr, s->name, mv);
        /* {% call m(args) %}body{% endcall %}: m gets `caller` */
        jnode *c = s->a;
        jv fn;
        if (jeval(x, c->a, &fn)) return -1;
        args a = {0};
        if (eval_args(x, c->kids, c->nk, &a)) return -1;
        if (a.nk >= 16) return jx_fail(x, HSD_ERR_UNSUPPORTED, "too many keyword arguments");
        a.kwn[a.nk] = "caller";
        a.kwv[a.nk++] = mv;
        if (jx_call_value(x, fn, a.posv, a.np, a.kwn, a.kwv, a.nk, &v)) return -1;
        jsb b = {0};
        jv_str_to(&b, v);
        int r = b.oom ? jx_oom(x) : emit(x, b.p ? b.p : "", b.n);
        jsb_free(&b);
        return r;
    }
    case JN_FILTERBLOCK: {
        jsb b, *saved;
        jx_capture_begin(x, &b, &saved);
        if (exec_body(x, s->b) < 0) { x->out = saved; jsb_free(&b); return -1; }
        if (jx_capture_end(x, &b, saved, &v) || apply_filters(x, s->a, v, &v)) return -1;
        v = jx_str_value(x, v);
        return x->status ? -1 : emit(x, v.u.s.p, v.u.s.n);
    }
    case JN_WITH: {
        jframe *outer = x->fr, *f = frame_new(x, outer);
        if (!f) return -1;
        for (uint32_t i = 0; i < s->nk; i++) {
            if (jeval(x, s->kids[i]->b, &v)) return -1;
            x->fr = f;
            int r = assign(x, s->kids[i]->a, v);
            x->fr = outer;
            if (r) return -1;
        }
        x->fr = f;
        int r = exec_body(x, s->b);
        x->fr = outer;
        return r;
    }
    case JN_GENERATION: return exec_body(x, s->b);
    case JN_BREAK: x->brk = 1; return 0;
    case JN_CONTINUE: x->cont = 1; return 0;
    default:
        return jx_fail(x, HSD_ERR_INTERNAL, "line %u: cannot execute this node", s->line);
    }
}
