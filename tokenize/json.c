#include "tokenize/json.h"

#include <stdlib.h>
#include <string.h>

#include "lib/error.h"

typedef struct arena_block {
    struct arena_block *next;
    size_t used, cap;
    max_align_t data[];
} arena_block;

typedef struct {
    const char *s, *end, *start, *name;
    arena_block *arena;
    hj_val *stack; /* children gathered here before being copied into the arena */
    size_t sp, scap;
    int depth;
    hsd_status err;
} parser;

static void *arena_alloc(parser *p, size_t n) {
    n = (n + 15) & ~(size_t)15;
    arena_block *b = p->arena;
    if (!b || b->used + n > b->cap) {
        size_t cap = n > (1u << 20) ? n : (1u << 20);
        b = malloc(sizeof *b + cap);
        if (!b) return NULL;
        b->next = p->arena;
        b->used = 0;
        b->cap = cap;
        p->arena = b;
    }
    void *r = (char *)b->data + b->used;
    b->used += n;
    return r;
}

static hsd_status fail(parser *p, const char *what) {
    if (!p->err)
        p->err = hsd_error(HSD_ERR_PARSE, "%s: invalid JSON: %s at byte %zu", p->name, what,
                           (size_t)(p->s - p->start));
    return p->err;
}

static void skip_ws(parser *p) {
    while (p->s < p->end && (*p->s == ' ' || *p->s == '\n' || *p->s == '\r' || *p->s == '\t'))
        p->s++;
}

static int push(parser *p, const hj_val *v) {
    if (p->sp == p->scap) {
        size_t c = p->scap ? p->scap * 2 : 1024;
        hj_val *s = realloc(p->stack, c * sizeof *s);
        if (!s) return -1;
        p->stack = s;
        p->scap = c;
    }
    p->stack[p->sp++] = *v;
    return 0;
}

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int read_hex4(parser *p, const char *q, unsigned *out) {
    if (p->end - q < 4) return -1;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval((unsigned char)q[i]);
        if (h < 0) return -1;
        v = v * 16 + (unsigned)h;
    }
    *out = v;
    return 0;
}

static hsd_status parse_string(parser *p, hj_val *v) {
    const char *q = ++p->s; /* after the opening quote */
    int has_escape = 0;
    while (q < p->end && *q != '"') {
        if (*q == '\\') {
            has_escape = 1;
            q += 2;
            continue;
        }
        if ((unsigned char)*q < 0x20) {
            p->s = q;
            return fail(p, "control character in string");
        }
        q++;
    }
    if (q >= p->end) return fail(p, "unterminated string");
    v->type = HJ_STR;
    if (!has_escape) {
        v->u.s = p->s;
        v->n = (uint32_t)(q - p->s);
        p->s = q + 1;
        return HSD_OK;
    }
    /* Escapes: the decoded form is never longer than the source. */
    char *out = arena_alloc(p, (size_t)(q - p->s) + 1), *o = out;
    if (!out) return p->err = hsd_error(HSD_ERR_NOMEM, "%s: out of memory", p->name);
    const char *r = p->s;
    while (r < q) {
        if (*r != '\\') {
            *o++ = *r++;
            continue;
        }
        r++;
        switch (*r) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '/': *o++ = '/'; break;
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        case 'u': {
            unsigned cp;
            if (read_hex4(p, r + 1, &cp)) {
                p->s = r;
                return fail(p, "bad \\u escape");
            }
            r += 4;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                unsigned lo;
                if (r + 2 < q && r[1] == '\\' && r[2] == 'u' && !read_hex4(p, r + 3, &lo) &&
                    lo >= 0xDC00 && lo <= 0xDFFF) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    r += 6;
                } else {
                    p->s = r;
                    return fail(p, "unpaired surrogate in \\u escape");
                }
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                p->s = r;
                return fail(p, "unpaired surrogate in \\u escape");
            }
            if (cp < 0x80) *o++ = (char)cp;
            else if (cp < 0x800) {
                *o++ = (char)(0xC0 | (cp >> 6));
                *o++ = (char)(0x80 | (cp & 0x3F));
            } else if (cp < 0x10000) {
                *o++ = (char)(0xE0 | (cp >> 12));
                *o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
                *o++ = (char)(0x80 | (cp & 0x3F));
            } else {
                *o++ = (char)(0xF0 | (cp >> 18));
                *o++ = (char)(0x80 | ((cp >> 12) & 0x3F));
                *o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
                *o++ = (char)(0x80 | (cp & 0x3F));
            }
            break;
        }
        default: p->s = r; return fail(p, "bad escape");
        }
        r++;
    }
    *o = 0;
    v->u.s = out;
    v->n = (uint32_t)(o - out);
    p->s = q + 1;
    return HSD_OK;
}

static hsd_status parse_value(parser *p, hj_val *v);

static hsd_status parse_container(parser *p, hj_val *v, int is_obj) {
    if (++p->depth > 512) return fail(p, "nesting too deep");
    p->s++;
    size_t base = p->sp;
    char close = is_obj ? '}' : ']';
    skip_ws(p);
    if (p->s < p->end && *p->s == close) {
        p->s++;
    } else {
        for (;;) {
            hj_val item;
            skip_ws(p);
            if (is_obj) {
                if (p->s >= p->end || *p->s != '"') return fail(p, "expected object key");
                item.off = (size_t)(p->s - p->start);
                if (parse_string(p, &item)) return p->err;
                if (push(p, &item)) return p->err = hsd_error(HSD_ERR_NOMEM, "out of memory");
                skip_ws(p);
                if (p->s >= p->end || *p->s != ':') return fail(p, "expected ':'");
                p->s++;
                skip_ws(p);
            }
            if (parse_value(p, &item)) return p->err;
            if (push(p, &item)) return p->err = hsd_error(HSD_ERR_NOMEM, "out of memory");
            skip_ws(p);
            if (p->s >= p->end) return fail(p, "unexpected end of input");
            if (*p->s == ',') {
                p->s++;
                continue;
            }
            if (*p->s == close) {
                p->s++;
                break;
            }
            return fail(p, is_obj ? "expected ',' or '}'" : "expected ',' or ']'");
        }
    }
    size_t cnt = p->sp - base;
    v->type = is_obj ? HJ_OBJ : HJ_ARR;
    v->n = (uint32_t)(is_obj ? cnt / 2 : cnt);
    v->u.items = NULL;
    if (cnt) {
        v->u.items = arena_alloc(p, cnt * sizeof(hj_val));
        if (!v->u.items) return p->err = hsd_error(HSD_ERR_NOMEM, "out of memory");
        memcpy(v->u.items, p->stack + base, cnt * sizeof(hj_val));
    }
    p->sp = base;
    p->depth--;
    return HSD_OK;
}

static hsd_status parse_value(parser *p, hj_val *v) {
    skip_ws(p);
    if (p->s >= p->end) return fail(p, "unexpected end of input");
    v->off = (size_t)(p->s - p->start);
    v->n = 0;
    switch (*p->s) {
    case '{': return parse_container(p, v, 1);
    case '[': return parse_container(p, v, 0);
    case '"': return parse_string(p, v);
    case 't':
        if (p->end - p->s >= 4 && !memcmp(p->s, "true", 4)) {
            v->type = HJ_TRUE;
            p->s += 4;
            return HSD_OK;
        }
        return fail(p, "bad literal");
    case 'f':
        if (p->end - p->s >= 5 && !memcmp(p->s, "false", 5)) {
            v->type = HJ_FALSE;
            p->s += 5;
            return HSD_OK;
        }
        return fail(p, "bad literal");
    case 'n':
        if (p->end - p->s >= 4 && !memcmp(p->s, "null", 4)) {
            v->type = HJ_NULL;
            p->s += 4;
            return HSD_OK;
        }
        return fail(p, "bad literal");
    default: {
        /* Number: validate the JSON grammar, then convert with strtod on a bounded copy. */
        const char *q = p->s;
        if (q < p->end && *q == '-') q++;
        if (q >= p->end || *q < '0' || *q > '9') return fail(p, "unexpected character");
        while (q < p->end && *q >= '0' && *q <= '9') q++;
        if (q < p->end && *q == '.') {
            q++;
            if (q >= p->end || *q < '0' || *q > '9') return fail(p, "bad number");
            while (q < p->end && *q >= '0' && *q <= '9') q++;
        }
        if (q < p->end && (*q == 'e' || *q == 'E')) {
            q++;
            if (q < p->end && (*q == '+' || *q == '-')) q++;
            if (q >= p->end || *q < '0' || *q > '9') return fail(p, "bad number");
            while (q < p->end && *q >= '0' && *q <= '9') q++;
        }
        char tmp[64];
        size_t n = (size_t)(q - p->s);
        if (n >= sizeof tmp) return fail(p, "number too long");
        memcpy(tmp, p->s, n);
        tmp[n] = 0;
        v->type = HJ_NUM;
        v->u.num = strtod(tmp, NULL);
        p->s = q;
        return HSD_OK;
    }
    }
}

hsd_status hj_parse(const char *src, size_t len, const char *name, hj_doc *doc) {
    parser p = {src, src + len, src, name ? name : "<json>", NULL, NULL, 0, 0, 0, HSD_OK};
    doc->root = NULL;
    doc->arena = NULL;
    hj_val *root = arena_alloc(&p, sizeof *root);
    hsd_status s = root ? parse_value(&p, root) : HSD_ERR_NOMEM;
    if (!s) {
        skip_ws(&p);
        if (p.s != p.end) s = fail(&p, "trailing characters after the document");
    }
    free(p.stack);
    doc->arena = p.arena;
    if (s) {
        hj_free(doc);
        return s;
    }
    doc->root = root;
    return HSD_OK;
}

void hj_free(hj_doc *doc) {
    arena_block *b = doc->arena;
    while (b) {
        arena_block *n = b->next;
        free(b);
        b = n;
    }
    doc->arena = NULL;
    doc->root = NULL;
}

const hj_val *hj_get(const hj_val *v, const char *key) {
    if (!v || v->type != HJ_OBJ) return NULL;
    size_t kl = strlen(key);
    for (uint32_t i = 0; i < v->n; i++) {
        const hj_val *k = &v->u.items[2 * i];
        if (k->n == kl && !memcmp(k->u.s, key, kl)) return &v->u.items[2 * i + 1];
    }
    return NULL;
}

int hj_is_str(const hj_val *v, const char *s) {
    return v && v->type == HJ_STR && v->n == strlen(s) && !memcmp(v->u.s, s, v->n);
}

int hj_truthy(const hj_val *v) { return v && v->type == HJ_TRUE; }
