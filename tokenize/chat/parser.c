/* Parser: tokens -> AST, a recursive descent that mirrors jinja2/parser.py's grammar
 * (operator precedence, tests without parentheses, slices, tuples, assignment targets).
 * Node fields by kind:
 *   BODY kids=statements; TEXT lit; PRINT a=expr; IF a=cond b=body c=else (BODY or IF);
 *   FOR a=target b=iter c=body d=else, kids[0]=filter cond (optional);
 *   SET a=target b=expr; SETBLOCK a=target b=body, kids=filters; MACRO name, kids=params
 *   (PARAM name, a=default), b=body; CALLBLOCK a=call expr, kids=params, b=body;
 *   FILTERBLOCK kids=filters (FILTER with a=NULL), b=body; WITH kids=SET nodes, b=body;
 *   GENERATION b=body;
 *   NAME name; NSREF name + attr in lit; GETATTR a name; GETITEM a b; SLICE a, kids[0..2];
 *   CALL a=callee kids=args (KW name a; STARARGS a; STARKW a); FILTER a=value name kids=args;
 *   TEST a name kids, neg; BINOP op a b; COMPARE a, kids=operands (op in each kid's op);
 *   CONCAT kids; COND a=cond b=then c=else (NULL = undefined); LIST/TUPLE kids; DICT kids
 *   alternating key, value. */
#include "tokenize/chat/chat_internal.h"

#include <stdio.h>
#include <string.h>

#define MAX_NEST 200

typedef struct ps {
    jtmpl *t;
    jtoks tk;
    size_t i;
    char *err;
    size_t errcap;
    int depth;
} ps;

static jtok *cur(ps *p) { return &p->tk.v[p->i]; }
static jtok *peek(ps *p, size_t k) {
    return p->i + k < p->tk.n ? &p->tk.v[p->i + k] : &p->tk.v[p->tk.n - 1];
}
static int tok_is(const jtok *t, int k, const char *s) {
    if (t->k != k) return 0;
    if (!s) return 1;
    size_t n = strlen(s);
    return t->n == n && memcmp(t->p, s, n) == 0;
}
static int is_op(ps *p, const char *s) { return tok_is(cur(p), TK_OP, s); }
static int is_name(ps *p, const char *s) { return tok_is(cur(p), TK_NAME, s); }

static const char *tok_desc(const jtok *t, char *buf, size_t cap) {
    switch (t->k) {
    case TK_EOF: return "end of template";
    case TK_TEXT: return "template data";
    case TK_VBEGIN: return "'{{'";
    case TK_VEND: return "'}}'";
    case TK_BBEGIN: return "'{%'";
    case TK_BEND: return "'%}'";
    case TK_STR: return "string";
    case TK_INT: return "integer";
    case TK_FLOAT: return "float";
    default: snprintf(buf, cap, "'%.*s'", (int)(t->n > 40 ? 40 : t->n), t->p); return buf;
    }
}

static jnode *fail(ps *p, const jtok *t, const char *fmt, const char *arg) {
    if (p->err[0]) return NULL;
    if (cur(p)->k == TK_ERR) { /* the lexer stopped here: its message is the better one */
        snprintf(p->err, p->errcap, "%s", cur(p)->p);
        return NULL;
    }
    int m = snprintf(p->err, p->errcap, "line %u, column %u: ", t->line, t->col);
    if (m > 0 && (size_t)m < p->errcap) snprintf(p->err + m, p->errcap - (size_t)m, fmt, arg ? arg : "");
    return NULL;
}
static jnode *unexpected(ps *p) {
    char b[64];
    return fail(p, cur(p), "unexpected %s", tok_desc(cur(p), b, sizeof b));
}
static jnode *oom(ps *p) {
    if (!p->err[0]) snprintf(p->err, p->errcap, "out of memory while parsing the template");
    return NULL;
}

static jnode *node(ps *p, int k, const jtok *at) {
    jnode *n = ja_alloc(&p->t->ar, sizeof *n);
    if (!n) return oom(p);
    n->k = (uint8_t)k;
    n->line = at->line;
    n->col = at->col;
    return n;
}

typedef struct kids { jnode **v; uint32_t n, cap; } kids;
static int kid_push(ps *p, kids *k, jnode *x) {
    if (k->n == k->cap) {
        uint32_t cap = k->cap ? k->cap * 2 : 4;
        jnode **v = ja_alloc(&p->t->ar, cap * sizeof *v);
        if (!v) { oom(p); return -1; }
        if (k->n) memcpy(v, k->v, k->n * sizeof *v);
        k->v = v;
        k->cap = cap;
    }
    k->v[k->n++] = x;
    return 0;
}

static const char *tok_name(ps *p, const jtok *t) {
    char *s = ja_strdup(&p->t->ar, t->p, t->n);
    if (!s) oom(p);
    return s;
}

static int expect_op(ps *p, const char *s) {
    if (!is_op(p, s)) {
        char b[64], m[96];
        snprintf(m, sizeof m, "expected '%s', got %%s", s);
        fail(p, cur(p), m, tok_desc(cur(p), b, sizeof b));
        return -1;
    }
    p->i++;
    return 0;
}

static jnode *parse_expr(ps *p, int with_cond);
static jnode *parse_or_(ps *p);
static jnode *parse_tuple(ps *p, int simplified, int with_cond, int explicit_parens,
                       const char *const *extra_end);
static jnode *parse_unary(ps *p, int with_filter);
static jnode *parse_primary(ps *p);
static jnode *parse_postfix(ps *p, jnode *n);
static jnode *parse_filter_expr(ps *p, jnode *n);

static int enter(ps *p) {
    if (++p->depth > MAX_NEST) {
        fail(p, cur(p), "expression or blocks nested too deeply%s", "");
        return -1;
    }
    return 0;
}
#define ENTER()                                                                              \
    do {                                                                                     \
        if (enter(p)) return NULL;                                                           \
    } while (0)
#define LEAVE(x)                                                                             \
    do {                                                                                     \
        p->depth--;                                                                          \
        return (x);                                                                          \
    } while (0)

static jnode *parse_cond(ps *p) {
    ENTER();
    jnode *e1 = parse_or_(p);
    while (e1 && is_name(p, "if")) {
        jtok *at = cur(p);
        p->i++;
        jnode *e2 = parse_or_(p);
        if (!e2) LEAVE(NULL);
        jnode *e3 = NULL;
        if (is_name(p, "else")) {
            p->i++;
            e3 = parse_cond(p);
            if (!e3) LEAVE(NULL);
        }
        jnode *c = node(p, JN_COND, at);
        if (!c) LEAVE(NULL);
        c->a = e2;
        c->b = e1;
        c->c = e3;
        e1 = c;
    }
    LEAVE(e1);
}

static jnode *parse_expr(ps *p, int with_cond) {
    return with_cond ? parse_cond(p) : parse_or_(p);
}

static jnode *parse_compare(ps *p);
static jnode *parse_not(ps *p) {
    if (is_name(p, "not")) {
        jtok *at = cur(p);
        p->i++;
        ENTER();
        jnode *x = parse_not(p);
        if (!x) LEAVE(NULL);
        jnode *n = node(p, JN_NOT, at);
        if (n) n->a = x;
        LEAVE(n);
    }
    return parse_compare(p);
}

/* A left-associative chain of `word` (and, or) between operands parsed by `next`. */
static jnode *parse_chain(ps *p, const char *word, int kind, jnode *(*next)(ps *)) {
    jnode *l = next(p);
    while (l && is_name(p, word)) {
        jtok *at = cur(p);
        p->i++;
        jnode *r = next(p);
        if (!r) return NULL;
        jnode *n = node(p, kind, at);
        if (!n) return NULL;
        n->a = l;
        n->b = r;
        l = n;
    }
    return l;
}

static jnode *parse_and(ps *p) {
    return parse_chain(p, "and", JN_AND, parse_not);
}

static jnode *parse_or_(ps *p) {
    return parse_chain(p, "or", JN_OR, parse_and);
}

static jnode *parse_math1(ps *p);
static jnode *parse_compare(ps *p) {
    jtok *at = cur(p);
    jnode *e = parse_math1(p);
    if (!e) return NULL;
    kids k = {0};
    for (;;) {
        int op = -1;
        if (is_op(p, "==")) op = OP_EQ;
        else if (is_op(p, "!=")) op = OP_NE;
        else if (is_op(p, "<")) op = OP_LT;
        else if (is_op(p, "<=")) op = OP_LE;
        else if (is_op(p, ">")) op = OP_GT;
        else if (is_op(p, ">=")) op = OP_GE;
        else if (is_name(p, "in")) op = OP_IN;
        else if (is_name(p, "not") && tok_is(peek(p, 1), TK_NAME, "in")) { op = OP_NOTIN; p->i++; }
        if (op < 0) break;
        p->i++;
        jnode *r = parse_math1(p);
        if (!r) return NULL;
        jnode *w = node(p, JN_PARAM, at); /* wrapper carrying the operator */
        if (!w) return NULL;
        w->op = (uint8_t)op;
        w->a = r;
        if (kid_push(p, &k, w)) return NULL;
    }
    if (!k.n) return e;
    jnode *c = node(p, JN_COMPARE, at);
    if (!c) return NULL;
    c->a = e;
    c->kids = k.v;
    c->nk = k.n;
    return c;
}

static jnode *binop(ps *p, int op, jnode *l, jnode *r, const jtok *at) {
    jnode *n = node(p, JN_BINOP, at);
    if (!n) return NULL;
    n->op = (uint8_t)op;
    n->a = l;
    n->b = r;
    return n;
}

static jnode *parse_concat(ps *p);
static jnode *parse_math1(ps *p) {
    jnode *l = parse_concat(p);
    while (l && (is_op(p, "+") || is_op(p, "-"))) {
        jtok *at = cur(p);
        int op = at->p[0] == '+' ? OP_ADD : OP_SUB;
        p->i++;
        jnode *r = parse_concat(p);
        if (!r) return NULL;
        l = binop(p, op, l, r, at);
    }
    return l;
}

static jnode *parse_math2(ps *p);
static jnode *parse_concat(ps *p) {
    jtok *at = cur(p);
    jnode *l = parse_math2(p);
    if (!l || !is_op(p, "~")) return l;
    kids k = {0};
    if (kid_push(p, &k, l)) return NULL;
    while (is_op(p, "~")) {
        p->i++;
        jnode *r = parse_math2(p);
        if (!r || kid_push(p, &k, r)) return NULL;
    }
    jnode *n = node(p, JN_CONCAT, at);
    if (!n) return NULL;
    n->kids = k.v;
    n->nk = k.n;
    return n;
}

static jnode *parse_pow(ps *p);
static jnode *parse_math2(ps *p) {
    jnode *l = parse_pow(p);
    while (l && (is_op(p, "*") || is_op(p, "/") || is_op(p, "//") || is_op(p, "%"))) {
        jtok *at = cur(p);
        int op = at->n == 2 ? OP_FLOORDIV : at->p[0] == '*' ? OP_MUL : at->p[0] == '/' ? OP_DIV : OP_MOD;
        p->i++;
        jnode *r = parse_pow(p);
        if (!r) return NULL;
        l = binop(p, op, l, r, at);
    }
    return l;
}

static jnode *parse_pow(ps *p) {
    jnode *l = parse_unary(p, 1);
    while (l && is_op(p, "**")) {
        jtok *at = cur(p);
        p->i++;
        jnode *r = parse_unary(p, 1);
        if (!r) return NULL;
        l = binop(p, OP_POW, l, r, at);
    }
    return l;
}

static jnode *parse_unary(ps *p, int with_filter) {
    ENTER();
    jnode *n;
    jtok *at = cur(p);
    if (is_op(p, "-") || is_op(p, "+")) {
        p->i++;
        jnode *x = parse_unary(p, 0);
        if (!x) LEAVE(NULL);
        n = node(p, at->p[0] == '-' ? JN_NEG : JN_POS, at);
        if (!n) LEAVE(NULL);
        n->a = x;
    } else {
        n = parse_primary(p);
    }
    if (n) n = parse_postfix(p, n);
    if (n && with_filter) n = parse_filter_expr(p, n);
    LEAVE(n);
}

static jnode *parse_list_like(ps *p, int kind, const char *close) {
    jtok *at = cur(p);
    p->i++;
    kids k = {0};
    while (!is_op(p, close)) {
        if (k.n && expect_op(p, ",")) return NULL;
        if (is_op(p, close)) break;
        if (kind == JN_DICT) {
            jnode *key = parse_expr(p, 1);
            if (!key || expect_op(p, ":")) return NULL;
            jnode *val = parse_expr(p, 1);
            if (!val || kid_push(p, &k, key) || kid_push(p, &k, val)) return NULL;
        } else {
            jnode *x = parse_expr(p, 1);
            if (!x || kid_push(p, &k, x)) return NULL;
        }
    }
    p->i++;
    jnode *n = node(p, kind, at);
    if (!n) return NULL;
    n->kids = k.v;
    n->nk = k.n;
    return n;
}

static jnode *parse_primary(ps *p) {
    jtok *t = cur(p);
    jnode *n;
    if (t->k == TK_NAME) {
        p->i++;
        if (tok_is(t, TK_NAME, "true") || tok_is(t, TK_NAME, "True") ||
            tok_is(t, TK_NAME, "false") || tok_is(t, TK_NAME, "False")) {
            n = node(p, JN_CONST, t);
            if (n) n->lit = jv_bool(t->p[0] == 't' || t->p[0] == 'T');
            return n;
        }
        if (tok_is(t, TK_NAME, "none") || tok_is(t, TK_NAME, "None")) {
            n = node(p, JN_CONST, t);
            if (n) n->lit = jv_none();
            return n;
        }
        n = node(p, JN_NAME, t);
        if (n && !(n->name = tok_name(p, t))) return NULL;
        return n;
    }
    if (t->k == TK_STR) {
        /* adjacent literals concatenate, as in Python */
        if (peek(p, 1)->k != TK_STR) {
            p->i++;
            n = node(p, JN_CONST, t);
            if (n) n->lit = jv_str(t->p, t->n);
            return n;
        }
        jsb b = {0};
        while (cur(p)->k == TK_STR) {
            jsb_put(&b, cur(p)->p, cur(p)->n);
            p->i++;
        }
        char *s = ja_strdup(&p->t->ar, b.p ? b.p : "", b.n);
        size_t sn = b.n;
        int bad = b.oom;
        jsb_free(&b);
        if (!s || bad) return oom(p);
        n = node(p, JN_CONST, t);
        if (n) n->lit = jv_str(s, sn);
        return n;
    }
    if (t->k == TK_INT || t->k == TK_FLOAT) {
        p->i++;
        n = node(p, JN_CONST, t);
        if (n) n->lit = t->k == TK_INT ? jv_int(t->i) : jv_float(t->f);
        return n;
    }
    if (is_op(p, "(")) {
        p->i++;
        n = parse_tuple(p, 0, 1, 1, NULL);
        if (!n || expect_op(p, ")")) return NULL;
        return n;
    }
    if (is_op(p, "[")) return parse_list_like(p, JN_LIST, "]");
    if (is_op(p, "{")) return parse_list_like(p, JN_DICT, "}");
    return unexpected(p);
}

static const char *const END_NONE[] = {NULL};

static int is_tuple_end(ps *p, const char *const *extra_end) {
    jtok *t = cur(p);
    if (t->k == TK_VEND || t->k == TK_BEND || t->k == TK_EOF) return 1;
    if (is_op(p, ")") || is_op(p, "]") || is_op(p, "}")) return 0; /* handled by caller */
    for (const char *const *e = extra_end ? extra_end : END_NONE; *e; e++)
        if (is_name(p, *e)) return 1;
    return 0;
}

static jnode *parse_tuple(ps *p, int simplified, int with_cond, int explicit_parens,
                       const char *const *extra_end) {
    jtok *at = cur(p);
    kids k = {0};
    int is_tuple = 0;
    for (;;) {
        if (k.n) {
            if (!is_op(p, ",")) break;
            p->i++;
            is_tuple = 1;
        }
        if (is_tuple_end(p, extra_end) || (explicit_parens && is_op(p, ")"))) break;
        jnode *x = simplified ? parse_primary(p) : parse_expr(p, with_cond);
        if (!x || kid_push(p, &k, x)) return NULL;
    }
    if (!is_tuple) {
        if (k.n) return k.v[0];
        if (!explicit_parens) {
            char b[64];
            return fail(p, cur(p), "expected an expression, got %s", tok_desc(cur(p), b, sizeof b));
        }
    }
    jnode *n = node(p, JN_TUPLE, at);
    if (!n) return NULL;
    n->kids = k.v;
    n->nk = k.n;
    return n;
}

static int parse_call_args(ps *p, kids *k) {
    p->i++; /* ( */
    while (!is_op(p, ")")) {
        if (k->n && expect_op(p, ",")) return -1;
        if (is_op(p, ")")) break;
        jtok *at = cur(p);
        if (is_op(p, "*") || is_op(p, "**")) {
            int kw = at->n == 2;
            p->i++;
            jnode *x = parse_expr(p, 1);
            if (!x) return -1;
            jnode *s = node(p, kw ? JN_STARKW : JN_STARARGS, at);
            if (!s) return -1;
            s->a = x;
            if (kid_push(p, k, s)) return -1;
            continue;
        }
        if (at->k == TK_NAME && tok_is(peek(p, 1), TK_OP, "=")) {
            p->i += 2;
            jnode *x = parse_expr(p, 1);
            if (!x) return -1;
            jnode *kw = node(p, JN_KW, at);
            if (!kw || !(kw->name = tok_name(p, at))) return -1;
            kw->a = x;
            if (kid_push(p, k, kw)) return -1;
            continue;
        }
        jnode *x = parse_expr(p, 1);
        if (!x || kid_push(p, k, x)) return -1;
    }
    p->i++;
    return 0;
}

static jnode *parse_subscribed(ps *p) {
    jtok *at = cur(p);
    jnode *parts[3] = {NULL, NULL, NULL};
    if (!is_op(p, ":")) {
        jnode *x = parse_expr(p, 1);
        if (!x) return NULL;
        if (!is_op(p, ":")) return x;
        parts[0] = x;
    }
    p->i++; /* first ':' */
    if (!is_op(p, "]") && !is_op(p, ",") && !is_op(p, ":")) {
        if (!(parts[1] = parse_expr(p, 1))) return NULL;
    }
    if (is_op(p, ":")) {
        p->i++;
        if (!is_op(p, "]") && !is_op(p, ",")) {
            if (!(parts[2] = parse_expr(p, 1))) return NULL;
        }
    }
    jnode *s = node(p, JN_SLICE, at);
    if (!s) return NULL;
    s->kids = ja_alloc(&p->t->ar, 3 * sizeof(jnode *));
    if (!s->kids) return oom(p);
    memcpy(s->kids, parts, sizeof parts);
    s->nk = 3;
    return s;
}

static jnode *parse_postfix(ps *p, jnode *n) {
    for (;;) {
        jtok *at = cur(p);
        if (is_op(p, ".")) {
            p->i++;
            jtok *t = cur(p);
            if (t->k == TK_NAME) {
                p->i++;
                jnode *g = node(p, JN_GETATTR, at);
                if (!g || !(g->name = tok_name(p, t))) return NULL;
                g->a = n;
                n = g;
            } else if (t->k == TK_INT) {
                p->i++;
                jnode *c = node(p, JN_CONST, t), *g = node(p, JN_GETITEM, at);
                if (!c || !g) return NULL;
                c->lit = jv_int(t->i);
                g->a = n;
                g->b = c;
                n = g;
            } else {
                return fail(p, t, "expected name or number after '.'%s", "");
            }
        } else if (is_op(p, "[")) {
            p->i++;
            kids k = {0};
            while (!is_op(p, "]")) {
                if (k.n && expect_op(p, ",")) return NULL;
                if (is_op(p, "]")) break;
                jnode *x = parse_subscribed(p);
                if (!x || kid_push(p, &k, x)) return NULL;
            }
            p->i++;
            if (!k.n) return fail(p, at, "expected a subscript%s", "");
            jnode *idx = k.v[0];
            if (k.n > 1) {
                idx = node(p, JN_TUPLE, at);
                if (!idx) return NULL;
                idx->kids = k.v;
                idx->nk = k.n;
            }
            jnode *g = node(p, idx->k == JN_SLICE ? JN_SLICE : JN_GETITEM, at);
            if (!g) return NULL;
            if (idx->k == JN_SLICE) {
                g->kids = idx->kids;
                g->nk = 3;
            } else {
                g->b = idx;
            }
            g->a = n;
            n = g;
        } else if (is_op(p, "(")) {
            kids k = {0};
            if (parse_call_args(p, &k)) return NULL;
            jnode *c = node(p, JN_CALL, at);
            if (!c) return NULL;
            c->a = n;
            c->kids = k.v;
            c->nk = k.n;
            n = c;
        } else {
            return n;
        }
    }
}

/* a name with optional dots: "map", "foo.bar" */
static const char *dotted_name(ps *p) {
    jtok *t = cur(p);
    if (t->k != TK_NAME) {
        char b[64];
        fail(p, t, "expected a filter or test name, got %s", tok_desc(t, b, sizeof b));
        return NULL;
    }
    p->i++;
    jsb b = {0};
    jsb_put(&b, t->p, t->n);
    while (is_op(p, ".") && peek(p, 1)->k == TK_NAME) {
        jsb_putc(&b, '.');
        jsb_put(&b, peek(p, 1)->p, peek(p, 1)->n);
        p->i += 2;
    }
    char *s = b.oom ? NULL : ja_strdup(&p->t->ar, b.p, b.n);
    jsb_free(&b);
    if (!s) oom(p);
    return s;
}

static jnode *parse_filter(ps *p, jnode *n, int start_inline) {
    while (is_op(p, "|") || start_inline) {
        if (!start_inline) p->i++;
        start_inline = 0;
        jtok *at = cur(p);
        const char *name = dotted_name(p);
        if (!name) return NULL;
        kids k = {0};
        if (is_op(p, "(") && parse_call_args(p, &k)) return NULL;
        jnode *f = node(p, JN_FILTER, at);
        if (!f) return NULL;
        f->name = name;
        f->a = n;
        f->kids = k.v;
        f->nk = k.n;
        n = f;
    }
    return n;
}

static jnode *parse_test(ps *p, jnode *n) {
    jtok *at = cur(p);
    p->i++; /* is */
    int neg = 0;
    if (is_name(p, "not")) { p->i++; neg = 1; }
    const char *name = dotted_name(p);
    if (!name) return NULL;
    kids k = {0};
    jtok *t = cur(p);
    if (is_op(p, "(")) {
        if (parse_call_args(p, &k)) return NULL;
    } else if ((t->k == TK_NAME || t->k == TK_STR || t->k == TK_INT || t->k == TK_FLOAT ||
                is_op(p, "(") || is_op(p, "[") || is_op(p, "{")) &&
               !is_name(p, "else") && !is_name(p, "or") && !is_name(p, "and")) {
        if (is_name(p, "is")) return fail(p, t, "You cannot chain multiple tests with is%s", "");
        jnode *arg = parse_primary(p);
        if (arg) arg = parse_postfix(p, arg);
        if (!arg || kid_push(p, &k, arg)) return NULL;
    }
    jnode *x = node(p, JN_TEST, at);
    if (!x) return NULL;
    x->name = name;
    x->a = n;
    x->kids = k.v;
    x->nk = k.n;
    x->neg = (uint8_t)neg;
    return x;
}

static jnode *parse_filter_expr(ps *p, jnode *n) {
    for (;;) {
        if (is_op(p, "|")) n = parse_filter(p, n, 0);
        else if (is_name(p, "is")) n = parse_test(p, n);
        else if (is_op(p, "(")) {
            jtok *at = cur(p);
            kids k = {0};
            if (parse_call_args(p, &k)) return NULL;
            jnode *c = node(p, JN_CALL, at);
            if (!c) return NULL;
            c->a = n;
            c->kids = k.v;
            c->nk = k.n;
            n = c;
        } else return n;
        if (!n) return NULL;
    }
}

/* ---- statements ----------------------------------------------------------------- */
static jnode *parse_body(ps *p, const char *const *ends, const char **which);

static int expect_bend(ps *p) {
    if (cur(p)->k != TK_BEND) {
        char b[64];
        fail(p, cur(p), "expected end of statement block, got %s", tok_desc(cur(p), b, sizeof b));
        return -1;
    }
    p->i++;
    return 0;
}

static int can_assign(jnode *t) {
    if (t->k == JN_NAME || t->k == JN_NSREF) return 1;
    if (t->k == JN_TUPLE) {
        for (uint32_t i = 0; i < t->nk; i++)
            if (t->kids[i]->k != JN_NAME) return 0;
        return 1;
    }
    return 0;
}

static jnode *parse_assign_target(ps *p, int with_namespace, const char *const *extra_end) {
    jtok *at = cur(p);
    jnode *t;
    if (with_namespace && at->k == TK_NAME && tok_is(peek(p, 1), TK_OP, ".") &&
        peek(p, 2)->k == TK_NAME) {
        t = node(p, JN_NSREF, at);
        if (!t || !(t->name = tok_name(p, at))) return NULL;
        const char *attr = tok_name(p, peek(p, 2));
        if (!attr) return NULL;
        t->lit = jv_str(attr, strlen(attr));
        p->i += 3;
        return t;
    }
    t = parse_tuple(p, 1, 1, 0, extra_end);
    if (!t) return NULL;
    if (!can_assign(t)) return fail(p, at, "can't assign to this expression%s", "");
    return t;
}

static const char *const END_FOR[] = {"endfor", "else", NULL};
static const char *const END_FOR2[] = {"endfor", NULL};
static const char *const END_IF[] = {"elif", "else", "endif", NULL};
static const char *const END_IF2[] = {"endif", NULL};

static jnode *parse_for(ps *p, jtok *at) {
    static const char *const in_end[] = {"in", NULL};
    static const char *const rec_end[] = {"recursive", NULL};
    jnode *n = node(p, JN_FOR, at);
    if (!n) return NULL;
    if (!(n->a = parse_assign_target(p, 0, in_end))) return NULL;
    if (!is_name(p, "in")) return fail(p, cur(p), "expected 'in' in a for loop%s", "");
    p->i++;
    if (!(n->b = parse_tuple(p, 0, 0, 0, rec_end))) return NULL;
    if (is_name(p, "if")) {
        p->i++;
        jnode *c = parse_expr(p, 1);
        if (!c) return NULL;
        n->kids = ja_alloc(&p->t->ar, sizeof(jnode *));
        if (!n->kids) return oom(p);
        n->kids[0] = c;
        n->nk = 1;
    }
    if (is_name(p, "recursive")) return fail(p, cur(p), "recursive loops are not supported%s", "");
    if (expect_bend(p)) return NULL;
    const char *which = NULL;
    if (!(n->c = parse_body(p, END_FOR, &which))) return NULL;
    if (!strcmp(which, "else")) {
        p->i++;
        if (expect_bend(p) || !(n->d = parse_body(p, END_FOR2, &which))) return NULL;
    }
    p->i++;
    return expect_bend(p) ? NULL : n;
}

static jnode *parse_if(ps *p, jtok *at) {
    jnode *n = node(p, JN_IF, at);
    if (!n) return NULL;
    if (!(n->a = parse_tuple(p, 0, 0, 0, NULL)) || expect_bend(p)) return NULL;
    const char *which = NULL;
    if (!(n->b = parse_body(p, END_IF, &which))) return NULL;
    jtok *wt = cur(p);
    p->i++;
    if (!strcmp(which, "elif")) {
        n->c = parse_if(p, wt); /* consumes up to and including endif */
        return n->c ? n : NULL;
    }
    if (!strcmp(which, "else")) {
        if (expect_bend(p) || !(n->c = parse_body(p, END_IF2, &which))) return NULL;
        p->i++;
    }
    return expect_bend(p) ? NULL : n;
}

static int parse_params(ps *p, kids *k) {
    if (expect_op(p, "(")) return -1;
    while (!is_op(p, ")")) {
        if (k->n && expect_op(p, ",")) return -1;
        jtok *t = cur(p);
        if (t->k != TK_NAME) {
            char b[64];
            fail(p, t, "expected a parameter name, got %s", tok_desc(t, b, sizeof b));
            return -1;
        }
        p->i++;
        jnode *prm = node(p, JN_PARAM, t);
        if (!prm || !(prm->name = tok_name(p, t))) return -1;
        if (is_op(p, "=")) {
            p->i++;
            if (!(prm->a = parse_expr(p, 1))) return -1;
        }
        if (kid_push(p, k, prm)) return -1;
    }
    p->i++;
    return 0;
}

static jnode *parse_stmt(ps *p) {
    jtok *bt = cur(p);
    p->i++; /* {% */
    jtok *t = cur(p);
    if (t->k != TK_NAME) return fail(p, t, "tag name expected%s", "");
    p->i++;
    const char *which = NULL;
    if (tok_is(t, TK_NAME, "for")) return parse_for(p, t);
    if (tok_is(t, TK_NAME, "if")) return parse_if(p, t);
    if (tok_is(t, TK_NAME, "set")) {
        jnode *target = parse_assign_target(p, 1, NULL);
        if (!target) return NULL;
        if (is_op(p, "=")) {
            p->i++;
            jnode *n = node(p, JN_SET, t);
            if (!n) return NULL;
            n->a = target;
            if (!(n->b = parse_tuple(p, 0, 1, 0, NULL)) || expect_bend(p)) return NULL;
            return n;
        }
        jnode *n = node(p, JN_SETBLOCK, t);
        if (!n) return NULL;
        n->a = target;
        if (is_op(p, "|")) {
            jnode *f = parse_filter(p, NULL, 0);
            if (!f) return NULL;
            n->c = f;
        }
        static const char *const e[] = {"endset", NULL};
        if (expect_bend(p) || !(n->b = parse_body(p, e, &which))) return NULL;
        p->i++;
        return expect_bend(p) ? NULL : n;
    }
    if (tok_is(t, TK_NAME, "macro")) {
        jtok *nt = cur(p);
        if (nt->k != TK_NAME) return fail(p, nt, "expected a macro name%s", "");
        p->i++;
        jnode *n = node(p, JN_MACRO, t);
        if (!n || !(n->name = tok_name(p, nt))) return NULL;
        kids k = {0};
        if (parse_params(p, &k)) return NULL;
        n->kids = k.v;
        n->nk = k.n;
        static const char *const e[] = {"endmacro", NULL};
        if (expect_bend(p) || !(n->b = parse_body(p, e, &which))) return NULL;
        p->i++;
        if (cur(p)->k == TK_NAME) p->i++; /* {% endmacro name %} */
        return expect_bend(p) ? NULL : n;
    }
    if (tok_is(t, TK_NAME, "call")) {
        jnode *n = node(p, JN_CALLBLOCK, t);
        if (!n) return NULL;
        kids k = {0};
        if (is_op(p, "(") && parse_params(p, &k)) return NULL;
        n->kids = k.v;
        n->nk = k.n;
        if (!(n->a = parse_expr(p, 1))) return NULL;
        if (n->a->k != JN_CALL) return fail(p, t, "expected a call in {%% call %%}%s", "");
        static const char *const e[] = {"endcall", NULL};
        if (expect_bend(p) || !(n->b = parse_body(p, e, &which))) return NULL;
        p->i++;
        return expect_bend(p) ? NULL : n;
    }
    if (tok_is(t, TK_NAME, "filter")) {
        jnode *n = node(p, JN_FILTERBLOCK, t);
        if (!n || !(n->a = parse_filter(p, NULL, 1))) return NULL;
        static const char *const e[] = {"endfilter", NULL};
        if (expect_bend(p) || !(n->b = parse_body(p, e, &which))) return NULL;
        p->i++;
        return expect_bend(p) ? NULL : n;
    }
    if (tok_is(t, TK_NAME, "generation")) {
        jnode *n = node(p, JN_GENERATION, t);
        static const char *const e[] = {"endgeneration", NULL};
        if (!n || expect_bend(p) || !(n->b = parse_body(p, e, &which))) return NULL;
        p->i++;
        return expect_bend(p) ? NULL : n;
    }
    if (tok_is(t, TK_NAME, "with")) {
        jnode *n = node(p, JN_WITH, t);
        if (!n) return NULL;
        kids k = {0};
        while (cur(p)->k != TK_BEND) {
            if (k.n && expect_op(p, ",")) return NULL;
            jnode *s = node(p, JN_SET, cur(p));
            if (!s || !(s->a = parse_assign_target(p, 0, NULL)) || expect_op(p, "=") ||
                !(s->b = parse_expr(p, 1)) || kid_push(p, &k, s))
                return NULL;
        }
        n->kids = k.v;
        n->nk = k.n;
        static const char *const e[] = {"endwith", NULL};
        if (expect_bend(p) || !(n->b = parse_body(p, e, &which))) return NULL;
        p->i++;
        return expect_bend(p) ? NULL : n;
    }
    if (tok_is(t, TK_NAME, "break") || tok_is(t, TK_NAME, "continue")) {
        jnode *n = node(p, t->p[0] == 'b' ? JN_BREAK : JN_CONTINUE, t);
        return n && !expect_bend(p) ? n : NULL;
    }
    (void)bt;
    char nm[64];
    snprintf(nm, sizeof nm, "%.*s", (int)(t->n > 40 ? 40 : t->n), t->p);
    return fail(p, t, "Encountered unknown tag '%s'.", nm);
}

/* Parses statements until a {% NAME %} with NAME in ends (left unconsumed: p->i points at
 * the NAME; *which = that name) or EOF (ends == NULL). */
static jnode *parse_body(ps *p, const char *const *ends, const char **which) {
    if (enter(p)) return NULL;
    jnode *body = node(p, JN_BODY, cur(p));
    if (!body) return NULL;
    kids k = {0};
    for (;;) {
        jtok *t = cur(p);
        if (t->k == TK_EOF) {
            if (ends) {
                char m[128];
                snprintf(m, sizeof m, "unexpected end of template, expected '%s'", ends[0]);
                return fail(p, t, "%s", m);
            }
            break;
        }
        jnode *s = NULL;
        if (t->k == TK_TEXT) {
            s = node(p, JN_TEXT, t);
            if (s) s->lit = jv_str(t->p, t->n);
            p->i++;
        } else if (t->k == TK_VBEGIN) {
            p->i++;
            s = node(p, JN_PRINT, t);
            if (!s || !(s->a = parse_tuple(p, 0, 1, 0, NULL))) return NULL;
            if (cur(p)->k != TK_VEND) {
                char b[64];
                return fail(p, cur(p), "expected end of print statement, got %s",
                            tok_desc(cur(p), b, sizeof b));
            }
            p->i++;
        } else if (t->k == TK_BBEGIN) {
            jtok *nt = peek(p, 1);
            if (ends && nt->k == TK_NAME) {
                for (const char *const *e = ends; *e; e++)
                    if (tok_is(nt, TK_NAME, *e)) {
                        p->i++;
                        *which = *e;
                        goto done;
                    }
            }
            s = parse_stmt(p);
        } else {
            return unexpected(p);
        }
        if (!s || kid_push(p, &k, s)) return NULL;
    }
done:
    p->depth--;
    body->kids = k.v;
    body->nk = k.n;
    return body;
}

int jparse(jtmpl *t, const char *src, size_t n, char *err, size_t errcap) {
    err[0] = 0;
    ps p = {.t = t, .err = err, .errcap = errcap};
    if (jlex(&t->ar, src, n, &p.tk, err, errcap)) return -1;
    const char *which = NULL;
    t->root = parse_body(&p, NULL, &which);
    if (!t->root) {
        if (!err[0]) snprintf(err, errcap, "template parse failed");
        return -1;
    }
    return 0;
}
