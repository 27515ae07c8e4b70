/* Lexer: template source -> tokens, following Jinja2's lexer as HF configures it
 * (trim_blocks: the first newline after a block or comment tag is dropped; lstrip_blocks:
 * spaces before a block or comment tag on its own line are dropped; "{%-"/"-%}" strip all
 * whitespace on that side, "{%+"/"+%}" disable lstrip/trim). Newlines were normalised to
 * "\n" by the caller. Expression tokens inside {{ }} and {% %} are lexed here too. */
#include "tokenize/chat/chat_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct lx {
    jarena *a;
    const char *s;
    size_t n, pos;
    jtoks *out;
    char *err;
    size_t errcap;
    /* position -> line/column, computed incrementally (tokens are produced in order) */
    size_t lc_pos, line, line_start;
} lx;

static void lc_at(lx *l, size_t pos, uint32_t *line, uint32_t *col) {
    if (pos < l->lc_pos) { l->lc_pos = 0; l->line = 1; l->line_start = 0; }
    for (size_t i = l->lc_pos; i < pos && i < l->n; i++)
        if (l->s[i] == '\n') { l->line++; l->line_start = i + 1; }
    l->lc_pos = pos;
    *line = (uint32_t)l->line;
    *col = (uint32_t)(ju_len(l->s + l->line_start, pos - l->line_start) + 1);
}

static int lx_fail(lx *l, size_t pos, const char *msg) {
    uint32_t line, col;
    lc_at(l, pos, &line, &col);
    snprintf(l->err, l->errcap, "line %u, column %u: %s", line, col, msg);
    return -1;
}

static jtok *push(lx *l, int k, size_t pos, const char *p, size_t n) {
    if (l->out->n == l->out->cap) {
        size_t cap = l->out->cap ? l->out->cap * 2 : 256;
        jtok *v = ja_alloc(l->a, cap * sizeof *v);
        if (!v) return NULL;
        if (l->out->n) memcpy(v, l->out->v, l->out->n * sizeof *v);
        l->out->v = v;
        l->out->cap = cap;
    }
    jtok *t = &l->out->v[l->out->n++];
    memset(t, 0, sizeof *t);
    t->k = (uint8_t)k;
    lc_at(l, pos, &t->line, &t->col);
    t->p = p;
    t->n = n;
    return t;
}

/* length of the whitespace run (Python \s) at i */
static size_t ws_len(const char *s, size_t n, size_t i) {
    size_t j = i;
    while (j < n) {
        size_t k = j;
        uint32_t c = ju_dec(s, n, &k);
        if (!ju_isspace(c)) break;
        j = k;
    }
    return j - i;
}

static int all_ws(const char *s, size_t n) { return ws_len(s, n, 0) == n; }

/* rstrip Python whitespace */
static size_t rstrip_len(const char *s, size_t n) {
    size_t end = n;
    while (end > 0) {
        size_t st = end - 1;
        while (st > 0 && ((unsigned char)s[st] & 0xC0) == 0x80) st--;
        size_t k = st;
        uint32_t c = ju_dec(s, n, &k);
        if (!ju_isspace(c)) break;
        end = st;
    }
    return end;
}

/* Emits the text before a tag after applying its whitespace control. */
static int emit_text(lx *l, size_t st, size_t en, char sign, int lstrip_ok, int line_starting) {
    const char *t = l->s + st;
    size_t n = en - st;
    if (sign == '-') n = rstrip_len(t, n);
    else if (sign != '+' && lstrip_ok) {
        size_t lpos = 0;
        for (size_t i = n; i > 0; i--)
            if (t[i - 1] == '\n') { lpos = i; break; }
        if ((lpos > 0 || line_starting) && lpos < n && all_ws(t + lpos, n - lpos)) n = lpos;
    }
    if (n && !push(l, TK_TEXT, st, t, n)) return -1;
    return 0;
}

static int is_name_start(unsigned char c) { return c == '_' || ((c | 32) >= 'a' && (c | 32) <= 'z') || c >= 0x80; }
static int is_name_char(unsigned char c) { return is_name_start(c) || (c >= '0' && c <= '9'); }
static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* digits with single underscores between them ("1_000"); returns length (0 if none) */
static size_t digits_len(const char *s, size_t n, size_t i) {
    size_t j = i;
    if (j >= n || !is_digit(s[j])) return 0;
    while (j < n) {
        if (is_digit(s[j])) j++;
        else if (s[j] == '_' && j + 1 < n && is_digit(s[j + 1])) j++;
        else break;
    }
    return j - i;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if ((c | 32) >= 'a' && (c | 32) <= 'f') return (c | 32) - 'a' + 10;
    return -1;
}

/* Decodes a string literal body with Python's unicode-escape rules. */
static int lex_string(lx *l, size_t *pos) {
    size_t i = *pos;
    char q = l->s[i++];
    jsb b = {0};
    while (i < l->n && l->s[i] != q) {
        char c = l->s[i];
        if (c != '\\') { jsb_putc(&b, c); i++; continue; }
        if (i + 1 >= l->n) break;
        char e = l->s[i + 1];
        i += 2;
        switch (e) {
        case '\n': break;
        case '\\': jsb_putc(&b, '\\'); break;
        case '\'': jsb_putc(&b, '\''); break;
        case '"': jsb_putc(&b, '"'); break;
        case 'a': jsb_putc(&b, '\a'); break;
        case 'b': jsb_putc(&b, '\b'); break;
        case 'f': jsb_putc(&b, '\f'); break;
        case 'n': jsb_putc(&b, '\n'); break;
        case 'r': jsb_putc(&b, '\r'); break;
        case 't': jsb_putc(&b, '\t'); break;
        case 'v': jsb_putc(&b, '\v'); break;
        case 'x': case 'u': case 'U': {
            int nd = e == 'x' ? 2 : e == 'u' ? 4 : 8;
            uint32_t cp = 0;
            for (int k = 0; k < nd; k++) {
                int h = i + (size_t)k < l->n ? hexval(l->s[i + (size_t)k]) : -1;
                if (h < 0) { jsb_free(&b); return lx_fail(l, i, "truncated \\x/\\u escape in a string"); }
                cp = cp * 16 + (uint32_t)h;
            }
            if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
                jsb_free(&b);
                return lx_fail(l, i, "escape outside Unicode in a string");
            }
            i += (size_t)nd;
            ju_enc(&b, cp);
            break;
        }
        default:
            if (e >= '0' && e <= '7') {
                uint32_t cp = (uint32_t)(e - '0');
                for (int k = 0; k < 2 && i < l->n && l->s[i] >= '0' && l->s[i] <= '7'; k++)
                    cp = cp * 8 + (uint32_t)(l->s[i++] - '0');
                ju_enc(&b, cp);
            } else { /* unknown escapes keep the backslash */
                jsb_putc(&b, '\\');
                i--;
            }
        }
    }
    if (i >= l->n) { jsb_free(&b); return lx_fail(l, *pos, "unterminated string"); }
    if (b.oom) { jsb_free(&b); return lx_fail(l, *pos, "out of memory"); }
    char *v = ja_strdup(l->a, b.p ? b.p : "", b.n);
    size_t vn = b.n;
    jsb_free(&b);
    if (!v) return -1;
    if (!ju_valid(v, vn)) return lx_fail(l, *pos, "string literal is not valid UTF-8");
    if (!push(l, TK_STR, *pos, v, vn)) return -1;
    *pos = i + 1;
    return 0;
}

static const char *OPS2[] = {"//", "**", "==", "!=", ">=", "<=", NULL};
static const char OPS1[] = "+-/*%~[](){}><=.:|,;";

/* Lexes inside {{ }} or {% %} from l->pos; returns 0 with l->pos after the end tag. */
static int lex_inside(lx *l, int block, int *line_starting) {
    char stack[256];
    size_t depth = 0;
    size_t i = l->pos;
    const char *s = l->s;
    size_t n = l->n;
    for (;;) {
        if (i >= n) return lx_fail(l, i, block ? "unexpected end of template, expected '%}'" :
                                               "unexpected end of template, expected '}}'");
        if (depth == 0) {
            char e = block ? '%' : '}';
            if (s[i] == '-' && i + 2 < n && s[i + 1] == e && s[i + 2] == '}') {
                if (!push(l, block ? TK_BEND : TK_VEND, i, s + i, 3)) return -1;
                i += 3;
                size_t w = ws_len(s, n, i);
                *line_starting = w ? s[i + w - 1] == '\n' : 0;
                i += w;
                break;
            }
            if (block && s[i] == '+' && i + 2 < n && s[i + 1] == '%' && s[i + 2] == '}') {
                if (!push(l, TK_BEND, i, s + i, 3)) return -1;
                i += 3;
                *line_starting = 0;
                break;
            }
            if (s[i] == e && i + 1 < n && s[i + 1] == '}') {
                if (!push(l, block ? TK_BEND : TK_VEND, i, s + i, 2)) return -1;
                i += 2;
                *line_starting = 0;
                if (block && i < n && s[i] == '\n') { i++; *line_starting = 1; }
                break;
            }
        }
        unsigned char c = (unsigned char)s[i];
        size_t w = ws_len(s, n, i);
        if (w) { i += w; continue; }
        /* float: digits ('.' digits)? (e [+-] digits)? with at least one of the two parts */
        if (is_digit((char)c) && !(i > 0 && s[i - 1] == '.')) {
            size_t d = digits_len(s, n, i), j = i + d;
            int isf = 0;
            if (j + 1 < n && s[j] == '.' && is_digit(s[j + 1])) { j += 1 + digits_len(s, n, j + 1); isf = 1; }
            if (j < n && (s[j] == 'e' || s[j] == 'E')) {
                size_t k = j + 1;
                if (k < n && (s[k] == '+' || s[k] == '-')) k++;
                size_t ed = digits_len(s, n, k);
                if (ed) { j = k + ed; isf = 1; }
            }
            if (isf) {
                char buf[128];
                size_t m = 0;
                for (size_t k = i; k < j && m < sizeof buf - 1; k++)
                    if (s[k] != '_') buf[m++] = s[k];
                buf[m] = 0;
                jtok *t = push(l, TK_FLOAT, i, s + i, j - i);
                if (!t) return -1;
                t->f = strtod(buf, NULL);
                i = j;
                continue;
            }
        }
        if (is_digit((char)c)) {
            size_t j = i;
            int base = 10;
            if (c == '0' && i + 1 < n && strchr("xXoObB", s[i + 1]) && s[i + 1]) {
                base = (s[i + 1] | 32) == 'x' ? 16 : (s[i + 1] | 32) == 'o' ? 8 : 2;
                j = i + 2;
            }
            uint64_t v = 0;
            int any = 0, over = 0;
            while (j < n) {
                int h = hexval(s[j]);
                if (s[j] == '_' && any) { j++; continue; }
                if (h < 0 || h >= base) break;
                if (v > (UINT64_MAX - (uint64_t)h) / (uint64_t)base) over = 1;
                v = v * (uint64_t)base + (uint64_t)h;
                any = 1;
                j++;
            }
            if (!any) return lx_fail(l, i, "malformed number");
            if (over || v > (uint64_t)INT64_MAX) return lx_fail(l, i, "integer literal too large");
            jtok *t = push(l, TK_INT, i, s + i, j - i);
            if (!t) return -1;
            t->i = (int64_t)v;
            i = j;
            continue;
        }
        if (is_name_start(c)) {
            size_t j = i;
            while (j < n && is_name_char((unsigned char)s[j])) j++;
            if (!push(l, TK_NAME, i, s + i, j - i)) return -1;
            i = j;
            continue;
        }
        if (c == '\'' || c == '"') {
            size_t p = i;
            if (lex_string(l, &p)) return -1;
            i = p;
            continue;
        }
        int op2 = 0;
        for (int k = 0; OPS2[k]; k++)
            if (i + 1 < n && s[i] == OPS2[k][0] && s[i + 1] == OPS2[k][1]) op2 = 1;
        if (op2) {
            if (!push(l, TK_OP, i, s + i, 2)) return -1;
            i += 2;
            continue;
        }
        if (c && strchr(OPS1, (int)c)) {
            if (c == '(' || c == '[' || c == '{') {
                if (depth >= sizeof stack) return lx_fail(l, i, "brackets nested too deeply");
                stack[depth++] = (char)(c == '(' ? ')' : c == '[' ? ']' : '}');
            } else if (c == ')' || c == ']' || c == '}') {
                if (!depth) {
                    char m[64];
                    snprintf(m, sizeof m, "unexpected '%c'", c);
                    return lx_fail(l, i, m);
                }
                if (stack[depth - 1] != (char)c) {
                    char m[64];
                    snprintf(m, sizeof m, "unexpected '%c', expected '%c'", c, stack[depth - 1]);
                    return lx_fail(l, i, m);
                }
                depth--;
            }
            if (!push(l, TK_OP, i, s + i, 1)) return -1;
            i++;
            continue;
        }
        char m[64];
        if (c >= 0x20 && c < 0x7F) snprintf(m, sizeof m, "unexpected char '%c'", c);
        else snprintf(m, sizeof m, "unexpected byte 0x%02x", c);
        return lx_fail(l, i, m);
    }
    l->pos = i;
    return 0;
}

/* {%[-+]? raw %} at i: returns the position after it (0 if not a raw tag). */
static size_t match_tag_word(const char *s, size_t n, size_t i, const char *word, char *sign,
                             char *endsign, size_t *tag_end_nows) {
    if (i + 2 > n || s[i] != '{' || s[i + 1] != '%') return 0;
    size_t j = i + 2;
    *sign = 0;
    if (j < n && (s[j] == '-' || s[j] == '+')) *sign = s[j++];
    j += ws_len(s, n, j);
    size_t wl = strlen(word);
    if (j + wl > n || memcmp(s + j, word, wl) != 0) return 0;
    j += wl;
    if (j < n && is_name_char((unsigned char)s[j])) return 0;
    j += ws_len(s, n, j);
    *endsign = 0;
    if (j < n && (s[j] == '-' || s[j] == '+')) *endsign = s[j++];
    if (j + 2 > n || s[j] != '%' || s[j + 1] != '}') return 0;
    *tag_end_nows = j + 2;
    return j + 2;
}

static int jlex_all(jarena *a, const char *src, size_t n, jtoks *out, char *err, size_t errcap);

/* Jinja2's lexer is lazy, so a syntax error is reported at the first bad token the parser
 * reaches, not at a lexing error further down: a lexing error becomes a TK_ERR token. */
int jlex(jarena *a, const char *src, size_t n, jtoks *out, char *err, size_t errcap) {
    if (!jlex_all(a, src, n, out, err, errcap)) return 0;
    if (a->over) return -1;
    size_t ml = strlen(err);
    char *m = ja_strdup(a, err, ml);
    lx l = {.a = a, .s = src, .n = n, .out = out, .err = err, .errcap = errcap, .line = 1};
    jtok *t = m ? push(&l, TK_ERR, n, m, ml) : NULL;
    if (!t) return -1;
    err[0] = 0;
    return 0;
}

static int jlex_all(jarena *a, const char *src, size_t n, jtoks *out, char *err, size_t errcap) {
    lx l = {.a = a, .s = src, .n = n, .out = out, .err = err, .errcap = errcap, .line = 1};
    int line_starting = 1;
    size_t i = 0;
    while (i < n) {
        /* next tag start */
        size_t t = i;
        const char *q;
        for (;;) {
            q = memchr(src + t, '{', n - t);
            if (!q) break;
            t = (size_t)(q - src);
            if (t + 1 < n && (src[t + 1] == '{' || src[t + 1] == '%' || src[t + 1] == '#')) break;
            t++;
            if (t >= n) { q = NULL; break; }
        }
        if (!q) {
            if (!push(&l, TK_TEXT, i, src + i, n - i)) goto oom;
            i = n;
            break;
        }
        char kind = src[t + 1];
        char sign = t + 2 < n && (src[t + 2] == '-' || src[t + 2] == '+') ? src[t + 2] : 0;
        char rs, re;
        size_t rend;
        if (kind == '%' && match_tag_word(src, n, t, "raw", &rs, &re, &rend) && re != '+') {
            if (emit_text(&l, i, t, rs, 1, line_starting)) goto oom;
            size_t j = rend;
            if (re == '-') j += ws_len(src, n, j);
            /* find {% endraw %} */
            size_t k = j;
            for (;;) {
                const char *e = k < n ? memchr(src + k, '{', n - k) : NULL;
                if (!e) return lx_fail(&l, t, "missing end of raw directive");
                k = (size_t)(e - src);
                char es, ee;
                size_t eend;
                if (match_tag_word(src, n, k, "endraw", &es, &ee, &eend)) {
                    if (emit_text(&l, j, k, es, 1, j > 0 && src[j - 1] == '\n')) goto oom;
                    i = eend;
                    line_starting = 0;
                    if (ee == '-') {
                        size_t w = ws_len(src, n, i);
                        if (w) line_starting = src[i + w - 1] == '\n';
                        i += w;
                    } else if (ee != '+' && i < n && src[i] == '\n') { i++; line_starting = 1; }
                    break;
                }
                k++;
            }
            continue;
        }
        if (emit_text(&l, i, t, sign, kind != '{', line_starting)) goto oom;
        size_t body = t + 2 + (sign ? 1 : 0);
        if (kind == '#') {
            size_t k = body;
            for (;;) {
                const char *e = k < n ? memchr(src + k, '#', n - k) : NULL;
                if (!e) return lx_fail(&l, t, "missing end of comment tag");
                k = (size_t)(e - src);
                if (k + 1 < n && src[k + 1] == '}') break;
                k++;
            }
            /* the earliest of "+#}", "-#}", "#}" */
            char es = k > body && (src[k - 1] == '-' || src[k - 1] == '+') ? src[k - 1] : 0;
            i = k + 2;
            line_starting = 0;
            if (es == '-') {
                size_t w = ws_len(src, n, i);
                if (w) line_starting = src[i + w - 1] == '\n';
                i += w;
            } else if (es != '+' && i < n && src[i] == '\n') { i++; line_starting = 1; }
            continue;
        }
        if (!push(&l, kind == '%' ? TK_BBEGIN : TK_VBEGIN, t, src + t, body - t)) goto oom;
        l.pos = body;
        if (lex_inside(&l, kind == '%', &line_starting)) return -1;
        i = l.pos;
    }
    if (!push(&l, TK_EOF, n, src + n, 0)) goto oom;
    return 0;
oom:
    if (!err[0]) snprintf(err, errcap, "out of memory while lexing the template");
    return -1;
}
