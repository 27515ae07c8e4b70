#include "tokenize/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/error.h"
#include "lib/base/utf8.h"

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
        if ((unsigned char)*q >= 0x80) {
            /* JSON text is UTF-8 (HF reads the file into a Rust String, which refuses
             * anything else), and every stage after the loader (normalizers, the models'
             * character walks) takes its strings as valid UTF-8: a stray 0xF7 in a Replace
             * content once sent Unigram's Viterbi past the end of its lattice
             * (fuzz_tokenizer_json). Checked here, where the scan is anyway: a separate pass
             * over each string cost a 9 MB tokenizer.json ~10 ms of its ~100 ms load. */
            int k = hsd_utf8_seq_check((const unsigned char *)q, (size_t)(p->end - q));
            if (k < 0) {
                p->s = q;
                return fail(p, "invalid UTF-8 in string");
            }
            q += k;
            continue;
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

/* Converts a JSON number the way serde_json does by default (without its float_roundtrip
 * feature): the decimal significand as u64, converted to double, then one multiplication or
 * division by a power of ten. That can differ from correct rounding by one ulp, and HF
 * tokenizers reads Unigram scores this way: exact ties in Viterbi depend on those bits. */
static double serde_number(const char *s) {
    const char *q = s;
    int neg = *q == '-';
    if (neg) q++;
    uint64_t sig = 0;
    int exp10 = 0, digits_ok = 1;
    for (; *q >= '0' && *q <= '9'; q++) {
        if (sig > (UINT64_MAX - 9) / 10) digits_ok = 0;
        else sig = sig * 10 + (uint64_t)(*q - '0');
    }
    if (*q == '.')
        for (q++; *q >= '0' && *q <= '9'; q++) {
            if (sig > (UINT64_MAX - 9) / 10) digits_ok = 0;
            else {
                sig = sig * 10 + (uint64_t)(*q - '0');
                exp10--;
            }
        }
    if (*q == 'e' || *q == 'E') exp10 += atoi(q + 1);
    if (!digits_ok || exp10 > 308 || exp10 < -308) return strtod(s, NULL);
    static const double pow10[309] = {
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
        1e17, 1e18, 1e19, 1e20, 1e21, 1e22, 1e23, 1e24, 1e25, 1e26, 1e27, 1e28, 1e29, 1e30, 1e31,
        1e32, 1e33, 1e34, 1e35, 1e36, 1e37, 1e38, 1e39, 1e40, 1e41, 1e42, 1e43, 1e44, 1e45, 1e46,
        1e47, 1e48, 1e49, 1e50, 1e51, 1e52, 1e53, 1e54, 1e55, 1e56, 1e57, 1e58, 1e59, 1e60, 1e61,
        1e62, 1e63, 1e64, 1e65, 1e66, 1e67, 1e68, 1e69, 1e70, 1e71, 1e72, 1e73, 1e74, 1e75, 1e76,
        1e77, 1e78, 1e79, 1e80, 1e81, 1e82, 1e83, 1e84, 1e85, 1e86, 1e87, 1e88, 1e89, 1e90, 1e91,
        1e92, 1e93, 1e94, 1e95, 1e96, 1e97, 1e98, 1e99, 1e100, 1e101, 1e102, 1e103, 1e104, 1e105,
        1e106, 1e107, 1e108, 1e109, 1e110, 1e111, 1e112, 1e113, 1e114, 1e115, 1e116, 1e117, 1e118,
        1e119, 1e120, 1e121, 1e122, 1e123, 1e124, 1e125, 1e126, 1e127, 1e128, 1e129, 1e130, 1e131,
        1e132, 1e133, 1e134, 1e135, 1e136, 1e137, 1e138, 1e139, 1e140, 1e141, 1e142, 1e143, 1e144,
        1e145, 1e146, 1e147, 1e148, 1e149, 1e150, 1e151, 1e152, 1e153, 1e154, 1e155, 1e156, 1e157,
        1e158, 1e159, 1e160, 1e161, 1e162, 1e163, 1e164, 1e165, 1e166, 1e167, 1e168, 1e169, 1e170,
        1e171, 1e172, 1e173, 1e174, 1e175, 1e176, 1e177, 1e178, 1e179, 1e180, 1e181, 1e182, 1e183,
        1e184, 1e185, 1e186, 1e187, 1e188, 1e189, 1e190, 1e191, 1e192, 1e193, 1e194, 1e195, 1e196,
        1e197, 1e198, 1e199, 1e200, 1e201, 1e202, 1e203, 1e204, 1e205, 1e206, 1e207, 1e208, 1e209,
        1e210, 1e211, 1e212, 1e213, 1e214, 1e215, 1e216, 1e217, 1e218, 1e219, 1e220, 1e221, 1e222,
        1e223, 1e224, 1e225, 1e226, 1e227, 1e228, 1e229, 1e230, 1e231, 1e232, 1e233, 1e234, 1e235,
        1e236, 1e237, 1e238, 1e239, 1e240, 1e241, 1e242, 1e243, 1e244, 1e245, 1e246, 1e247, 1e248,
        1e249, 1e250, 1e251, 1e252, 1e253, 1e254, 1e255, 1e256, 1e257, 1e258, 1e259, 1e260, 1e261,
        1e262, 1e263, 1e264, 1e265, 1e266, 1e267, 1e268, 1e269, 1e270, 1e271, 1e272, 1e273, 1e274,
        1e275, 1e276, 1e277, 1e278, 1e279, 1e280, 1e281, 1e282, 1e283, 1e284, 1e285, 1e286, 1e287,
        1e288, 1e289, 1e290, 1e291, 1e292, 1e293, 1e294, 1e295, 1e296, 1e297, 1e298, 1e299, 1e300,
        1e301, 1e302, 1e303, 1e304, 1e305, 1e306, 1e307, 1e308};
    double f = (double)sig;
    f = exp10 >= 0 ? f * pow10[exp10] : f / pow10[-exp10];
    return neg ? -f : f;
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
        v->u.num = serde_number(tmp);
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
