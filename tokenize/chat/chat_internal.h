/* Internal types of the chat-template interpreter (a Jinja2 subset that renders like
 * Python Jinja2 configured as HF transformers' apply_chat_template). One stage per file:
 *   arena.c / value.c  memory and values (Python semantics: str(), repr(), ==, truthiness)
 *   lexer.c            template text -> tokens (trim_blocks, lstrip_blocks, whitespace control)
 *   parser.c           tokens -> AST
 *   eval.c             AST -> output text
 *   builtins.c         filters, tests, global functions, str/dict/list methods
 *   tojson.c           JSON context -> values, values -> json.dumps text
 *   template.c         public API: loading from GGUF / tokenizer_config.json / a file
 * Values of one render live in one arena freed at the end, so nothing is reference counted. */
#ifndef HSD_TOKENIZE_CHAT_INTERNAL_H
#define HSD_TOKENIZE_CHAT_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "hsd.h"

/* ---- arena ---------------------------------------------------------------------- */
typedef struct ja_block ja_block;
typedef struct jarena {
    ja_block *head;
    size_t used, limit; /* bytes handed out; limit 0 = none */
    int over;           /* an allocation failed (limit or malloc) */
} jarena;
void *ja_alloc(jarena *a, size_t n); /* zeroed, 16-byte aligned; NULL sets a->over */
char *ja_strdup(jarena *a, const char *s, size_t n);
void ja_free(jarena *a);

/* ---- values --------------------------------------------------------------------- */
typedef enum {
    JV_UNDEF, JV_NONE, JV_BOOL, JV_INT, JV_FLOAT, JV_STR, JV_LIST, JV_DICT,
    JV_NS,     /* namespace(): a dict whose attributes can be assigned */
    JV_LOOP,   /* the loop variable */
    JV_MACRO,  /* a macro (or caller) */
    JV_FUNC,   /* a global function (range, dict, namespace, raise_exception, ...) */
    JV_METHOD, /* a bound method: obj.name */
    JV_CYCLER, JV_JOINER,
} jv_type;

typedef struct jlist jlist;
typedef struct jdict jdict;
typedef struct jv {
    uint8_t t;
    uint8_t tuple;  /* JV_LIST: a tuple (repr uses parentheses) */
    uint8_t unsafe; /* JV_UNDEF: a sandbox-blocked attribute (calling it raises) */
    uint8_t fn;     /* JV_FUNC: which global */
    union {
        int64_t i;
        double f;
        struct { const char *p; size_t n; } s; /* JV_STR; JV_UNDEF: name for messages */
        jlist *l;
        jdict *d; /* JV_DICT, JV_NS */
        void *ptr;
    } u;
} jv;

struct jlist { size_t n, cap; jv *v; };
struct jdict { size_t n, cap; jv *k; jv *v; };

typedef struct jmethod { jv self; const char *name; } jmethod;

static inline jv jv_undef(const char *name) { jv v = {0}; v.t = JV_UNDEF; v.u.s.p = name; v.u.s.n = name ? __builtin_strlen(name) : 0; return v; }
static inline jv jv_none(void) { jv v = {0}; v.t = JV_NONE; return v; }
static inline jv jv_bool(int b) { jv v = {0}; v.t = JV_BOOL; v.u.i = b ? 1 : 0; return v; }
static inline jv jv_int(int64_t i) { jv v = {0}; v.t = JV_INT; v.u.i = i; return v; }
static inline jv jv_float(double f) { jv v = {0}; v.t = JV_FLOAT; v.u.f = f; return v; }
static inline jv jv_str(const char *p, size_t n) { jv v = {0}; v.t = JV_STR; v.u.s.p = p; v.u.s.n = n; return v; }

/* growable byte buffer (malloc) */
typedef struct jsb { char *p; size_t n, cap; int oom; } jsb;
void jsb_put(jsb *b, const char *s, size_t n);
void jsb_putc(jsb *b, char c);
void jsb_puts(jsb *b, const char *s);
void jsb_printf(jsb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void jsb_free(jsb *b);

jlist *jl_new(jarena *a, size_t cap);
int jl_push(jarena *a, jlist *l, jv v); /* -1 on arena exhaustion */
jdict *jd_new(jarena *a, size_t cap);
int jd_set(jarena *a, jdict *d, jv k, jv v); /* replaces an equal key in place */
const jv *jd_get(const jdict *d, jv k);
const jv *jd_gets(const jdict *d, const char *key, size_t n);
static inline jv jv_list(jlist *l) { jv v = {0}; v.t = JV_LIST; v.u.l = l; return v; }
static inline jv jv_dict(jdict *d) { jv v = {0}; v.t = JV_DICT; v.u.d = d; return v; }

int jv_truthy(jv v);
int jv_eq(jv a, jv b);
/* Python ordering: -2 = types not orderable (TypeError), else -1/0/1 */
int jv_cmp(jv a, jv b);
int jv_is_num(jv v); /* int, float or bool */
double jv_num(jv v);
const char *jv_type_name(jv v); /* Python type name for messages */
/* Python str() / repr() */
void jv_str_to(jsb *b, jv v);
void jv_repr_to(jsb *b, jv v);
void jv_float_repr(jsb *b, double f);
void jv_py_str_repr(jsb *b, const char *p, size_t n);

/* UTF-8 helpers (input is validated when it enters, so these assume well-formed text) */
size_t ju_len(const char *p, size_t n);                       /* code points */
size_t ju_off(const char *p, size_t n, size_t cp);            /* byte offset of code point cp */
uint32_t ju_dec(const char *p, size_t n, size_t *i);          /* decode at *i, advance */
void ju_enc(jsb *b, uint32_t c);
int ju_isspace(uint32_t c);                                   /* Python str.isspace */
int ju_valid(const char *p, size_t n);

/* ---- lexer ---------------------------------------------------------------------- */
typedef enum { TK_EOF, TK_TEXT, TK_VBEGIN, TK_VEND, TK_BBEGIN, TK_BEND, TK_NAME, TK_STR,
               TK_INT, TK_FLOAT, TK_OP,
               TK_ERR /* a lexing error: p = its message; the parser reports it when reached */ } tk_kind;
typedef struct jtok {
    uint8_t k;
    uint32_t line, col;
    const char *p; /* NAME / OP / TEXT / STR (decoded) bytes */
    size_t n;
    int64_t i;
    double f;
} jtok;
typedef struct jtoks { jtok *v; size_t n, cap; } jtoks;
/* Returns 0, or -1 with a "line L, column C: ..." message in err. */
int jlex(jarena *a, const char *src, size_t n, jtoks *out, char *err, size_t errcap);

/* ---- AST ------------------------------------------------------------------------ */
typedef enum {
    /* statements */
    JN_BODY, JN_TEXT, JN_PRINT, JN_IF, JN_FOR, JN_SET, JN_SETBLOCK, JN_MACRO, JN_CALLBLOCK,
    JN_FILTERBLOCK, JN_BREAK, JN_CONTINUE, JN_WITH, JN_GENERATION,
    /* expressions */
    JN_CONST, JN_NAME, JN_NSREF, JN_GETATTR, JN_GETITEM, JN_SLICE, JN_CALL, JN_FILTER, JN_TEST,
    JN_BINOP, JN_NEG, JN_POS, JN_NOT, JN_AND, JN_OR, JN_COMPARE, JN_CONCAT, JN_COND,
    JN_LIST, JN_TUPLE, JN_DICT, JN_KW, JN_STARARGS, JN_STARKW, JN_PARAM,
} jn_kind;

typedef enum { OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_FLOORDIV, OP_MOD, OP_POW,
               OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE, OP_IN, OP_NOTIN } jn_op;

typedef struct jnode jnode;
struct jnode {
    uint8_t k, op, neg;
    uint32_t line, col;
    jnode *a, *b, *c, *d;  /* meaning depends on kind (see parser.c) */
    jnode **kids;
    uint32_t nk;
    const char *name;   /* identifiers, filter/test/attr names (NUL-terminated) */
    jv lit;             /* JN_CONST, JN_TEXT */
};

typedef struct jtmpl {
    jarena ar;
    jnode *root;
    char *src; /* normalized source (owned by ar) */
} jtmpl;

/* Parses a template source; -1 with message in err. */
int jparse(jtmpl *t, const char *src, size_t n, char *err, size_t errcap);

/* ---- evaluation ----------------------------------------------------------------- */
typedef struct jframe jframe;
struct jframe {
    jframe *parent;
    size_t n, cap;
    const char **names;
    jv *vals;
};

typedef struct jloop {
    jlist *items;
    size_t i, n;
    uint32_t depth;
    jv changed_last;
    int changed_init;
} jloop;

typedef struct jmacro {
    jnode *def;       /* JN_MACRO or JN_CALLBLOCK node */
    jframe *scope; /* definition frame */
    jv caller;     /* for a {% call %} body: none */
} jmacro;

typedef struct jctx {
    jarena *ar;
    jsb *out;
    jdict *vars;   /* the context's variables */
    jframe *root;
    jframe *fr; /* current frame */
    char err[1024];
    hsd_status status; /* HSD_OK while fine */
    uint64_t steps, max_steps;
    uint32_t depth, max_depth;
    size_t max_output;
    int64_t now_unix;
    int brk, cont;
    jv caller;     /* inside a macro called from {% call %} */
} jctx;

/* runtime errors (UndefinedError, TypeError, raise_exception): the input does not suit the
 * template */
#define JX_RT HSD_ERR_INVALID_ARG
int jx_fail(jctx *x, hsd_status s, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int jx_oom(jctx *x);
int jeval(jctx *x, jnode *e, jv *out);
int jexec(jctx *x, jnode *s);
int jx_call_value(jctx *x, jv fn, jv *args, size_t nargs, const char **kwn, jv *kwv, size_t nkw, jv *out);
jv jx_str_value(jctx *x, jv v); /* str(v) as a JV_STR in the arena */
int jx_getattr(jctx *x, jv obj, const char *name, jv *out);
int jx_getitem(jctx *x, jv obj, jv key, jv *out);
int jx_undefined_error(jctx *x, jv u); /* raises UndefinedError for u */
int jx_step(jctx *x);
int jx_capture_begin(jctx *x, jsb *b, jsb **saved);
int jx_capture_end(jctx *x, jsb *b, jsb *saved, jv *out);
int jx_iter(jctx *x, jv v, jlist **out); /* materialises an iterable as a list */

/* builtins.c: */
int jb_filter(jctx *x, const char *name, jv v, jv *args, size_t nargs, const char **kwn, jv *kwv,
              size_t nkw, jv *out);
int jb_test(jctx *x, const char *name, jv v, jv *args, size_t nargs, int *out);
int jb_method(jctx *x, jv self, const char *name, jv *args, size_t nargs, const char **kwn,
              jv *kwv, size_t nkw, jv *out);
int jb_is_method(jv self, const char *name);         /* 1 = method, 2 = mutating (sandbox) */
int jb_global(const char *name, size_t n);            /* JV_FUNC id or 0 */
int jb_call_global(jctx *x, int fn, jv *args, size_t nargs, const char **kwn, jv *kwv, size_t nkw,
                   jv *out);

int jb_percent_format(jctx *x, jv fmt, jv args, jv *out);

/* tojson.c: */
int jj_from_json(jarena *a, const char *json, size_t n, jdict **vars, char *err, size_t errcap);
int jj_dumps(jctx *x, jsb *b, jv v, const char *indent, size_t indent_n, int has_indent,
             const char *item_sep, const char *key_sep, int sort_keys, int level);

#endif
