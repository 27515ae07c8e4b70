/* Regular expressions for pre-tokenizers and normalizers: PCRE2 in UTF + UCP mode (so \s,
 * \w, \d and \p{..} follow Unicode like HF's Oniguruma patterns), JIT-compiled. */

#include <pcre2.h>
#include <stdlib.h>

#include "lib/error.h"
#include "tokenize/tokenizer.h"

struct hsd_regex {
    pcre2_code *code;
    int jit;
};

hsd_status hsd_regex_compile(const char *pat, size_t len, int literal, const char *ctx,
                             hsd_regex **out) {
    *out = NULL;
    int err;
    PCRE2_SIZE erroff;
    uint32_t opts = PCRE2_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP);
    hsd_buf wide = {0};
    if (!literal) {
        if (hsd_regex_widen(pat, len, &wide)) return hsd_error(HSD_ERR_NOMEM, "out of memory");
        pat = wide.p;
        len = wide.n;
    }
    pcre2_code *code = pcre2_compile((PCRE2_SPTR)pat, len, opts, &err, &erroff, NULL);
    hsd_buf_free(&wide);
    if (!code) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(err, msg, sizeof msg);
        return hsd_error(HSD_ERR_UNSUPPORTED, "%s: regex does not compile at offset %zu: %s",
                         ctx, (size_t)erroff, (const char *)msg);
    }
    hsd_regex *re = calloc(1, sizeof *re);
    if (!re) {
        pcre2_code_free(code);
        return hsd_error(HSD_ERR_NOMEM, "out of memory");
    }
    re->code = code;
    re->jit = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
    *out = re;
    return HSD_OK;
}

void hsd_regex_free(hsd_regex *re) {
    if (!re) return;
    pcre2_code_free(re->code);
    free(re);
}

int hsd_regex_next(const hsd_regex *re, const char *s, size_t len, size_t pos, size_t *ms,
                   size_t *me, void *md) {
    while (pos <= len) {
        int rc = re->jit ? pcre2_jit_match(re->code, (PCRE2_SPTR)s, len, pos, 0, md, NULL)
                         : pcre2_match(re->code, (PCRE2_SPTR)s, len, pos, PCRE2_NO_UTF_CHECK,
                                       md, NULL);
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
void *hsd_scratch_md_new(void) { return pcre2_match_data_create(1, NULL); }
void hsd_scratch_md_free(void *md) { pcre2_match_data_free(md); }
