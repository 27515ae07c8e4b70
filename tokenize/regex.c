/* Regular expressions for pre-tokenizers and normalizers: PCRE2 in UTF + UCP mode (so \s,
 * \w, \d and \p{..} follow Unicode like HF's Oniguruma patterns), JIT-compiled.
 *
 * A pattern whose classes are widened (regex_unicode.c) is compiled twice: the fast form
 * keeps the added ranges behind a guard in a (?:..) group, which costs a backtracking frame
 * per repetition of a quantified class; when a match runs out of (JIT) stack on a very long
 * run of letters, the same match is redone with the safe form (ranges inside the classes,
 * no stack), so results never depend on input length. */

#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/error.h"
#include "tokenize/tokenizer.h"

struct hsd_regex {
    pcre2_code *code, *safe; /* safe: NULL when the pattern needed no guarded group */
    int jit, jit_safe;
    /* the pattern as written, kept so that a GGUF writer can tell which llama.cpp
     * pre-tokenizer (if any) a tokenizer's Split steps are */
    char *src;
    size_t src_len;
    bool literal;
};

static pcre2_code *compile(const char *pat, size_t len, uint32_t opts, const char *ctx,
                           hsd_status *st) {
    int err;
    PCRE2_SIZE erroff;
    pcre2_code *code = pcre2_compile((PCRE2_SPTR)pat, len, opts, &err, &erroff, NULL);
    if (!code) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(err, msg, sizeof msg);
        *st = hsd_error(HSD_ERR_UNSUPPORTED, "%s: regex does not compile at offset %zu: %s", ctx,
                        (size_t)erroff, (const char *)msg);
    }
    return code;
}

hsd_status hsd_regex_compile(const char *pat, size_t len, int literal, const char *ctx,
                             hsd_regex **out) {
    *out = NULL;
    uint32_t opts = PCRE2_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP);
    hsd_buf fast = {0}, safe = {0};
    hsd_status st = HSD_OK;
    if (!literal &&
        (hsd_regex_widen(pat, len, true, &fast) || hsd_regex_widen(pat, len, false, &safe))) {
        hsd_buf_free(&fast);
        hsd_buf_free(&safe);
        return hsd_error(HSD_ERR_NOMEM, "out of memory");
    }
    /* report errors in terms of the pattern as written where the rewrite changed nothing */
    bool two = !literal && (fast.n != safe.n || memcmp(fast.p, safe.p, fast.n));
    pcre2_code *code = compile(literal ? pat : fast.p, literal ? len : fast.n, opts, ctx, &st);
    pcre2_code *code_safe = two && code ? compile(safe.p, safe.n, opts, ctx, &st) : NULL;
    hsd_buf_free(&fast);
    hsd_buf_free(&safe);
    hsd_regex *re = st ? NULL : calloc(1, sizeof *re);
    char *src = re ? malloc(len + 1) : NULL;
    if (re && !src) {
        free(re);
        re = NULL;
    }
    if (!re) {
        pcre2_code_free(code);
        pcre2_code_free(code_safe);
        return st ? st : hsd_error(HSD_ERR_NOMEM, "out of memory");
    }
    memcpy(src, pat, len);
    src[len] = 0;
    re->src = src, re->src_len = len, re->literal = literal != 0;
    re->code = code;
    re->jit = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
    re->safe = code_safe;
    re->jit_safe = code_safe && pcre2_jit_compile(code_safe, PCRE2_JIT_COMPLETE) == 0;
    *out = re;
    return HSD_OK;
}

void hsd_regex_free(hsd_regex *re) {
    if (!re) return;
    pcre2_code_free(re->code);
    pcre2_code_free(re->safe);
    free(re->src);
    free(re);
}

const char *hsd_regex_source(const hsd_regex *re, size_t *len, bool *literal) {
    *len = re->src_len;
    *literal = re->literal;
    return re->src;
}

static int match(const pcre2_code *code, int jit, const char *s, size_t len, size_t pos, void *md) {
    return jit ? pcre2_jit_match(code, (PCRE2_SPTR)s, len, pos, 0, md, NULL)
               : pcre2_match(code, (PCRE2_SPTR)s, len, pos, PCRE2_NO_UTF_CHECK, md, NULL);
}

int hsd_regex_next(const hsd_regex *re, const char *s, size_t len, size_t pos, size_t *ms,
                   size_t *me, void *md) {
    while (pos <= len) {
        int rc = match(re->code, re->jit, s, len, pos, md);
        if (rc < 0 && rc != PCRE2_ERROR_NOMATCH && re->safe) /* out of stack: see top */
            rc = match(re->safe, re->jit_safe, s, len, pos, md);
        if (rc < 0) return 0; /* no match (or a matching error, treated as none) */
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        if (ov[1] > ov[0]) {
            *ms = ov[0];
            *me = ov[1];
            return 1;
        }
        /* Empty match: skip one character, as find_iter does. */
        pos = ov[0] + 1;
        while (pos < len && ((unsigned char)s[pos] & 0xC0) == 0x80) pos++;
    }
    return 0;
}

/* Match data for callers outside the per-thread scratch (e.g. while loading). */
void *hsd_scratch_md_new(void) {
    return pcre2_match_data_create(1, NULL);
}
void hsd_scratch_md_free(void *md) {
    pcre2_match_data_free(md);
}
