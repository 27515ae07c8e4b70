/* Injectivity fuzzer: generates adversarial text from ICU UnicodeSets (characters that change
 * under NFC/NFKC or case folding, combining sequences, whitespace/control/format characters,
 * unassigned and private-use code points, the scripts seen in the seed corpus, the tokenizer's
 * added tokens and escape characters) and mutates what it finds. Deterministic for a seed:
 * the sequence of candidates depends only on the seed, the seeds corpus and the tokenizer. */
#include "hsd_tools.h"
#include <stdlib.h>
#include <string.h>
#include <unicode/uchar.h>
#include <unicode/uscript.h>
#include <unicode/uset.h>

#include "lib/base/error.h"
#include "lib/base/params.h"
#include "lib/analysis/injectivity_internal.h"
#include "lib/base/map.h"
#include "lib/base/utf8.h"
#include "tokenize/tokenizer.h"
#include "lib/base/timer.h"

/* splitmix64: tiny, well-mixed, and ours (no libc rand state shared with the caller). */
static uint64_t rng_next(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}
static size_t rng_below(uint64_t *s, size_t n) { return n ? (size_t)(rng_next(s) % n) : 0; }

/* A set of code points (surrogates removed: they are not valid in UTF-8). */
typedef struct cpset {
    USet *set;
    int32_t size;
} cpset;

static void cpset_open(cpset *c, const char *pattern) {
    UChar pat[256];
    int32_t n = 0;
    for (; pattern[n] && n < 255; n++) pat[n] = (UChar)(unsigned char)pattern[n];
    UErrorCode err = U_ZERO_ERROR;
    c->set = uset_openPattern(pat, n, &err);
    if (U_FAILURE(err) || !c->set) {
        if (c->set) uset_close(c->set);
        c->set = uset_openEmpty();
    }
    uset_removeRange(c->set, 0xD800, 0xDFFF);
    c->size = uset_size(c->set);
}

static uint32_t cpset_pick(const cpset *c, uint64_t *rng) {
    if (c->size <= 0) return 'a';
    UChar32 cp = uset_charAt(c->set, (int32_t)rng_below(rng, (size_t)c->size));
    return cp < 0 ? 'a' : (uint32_t)cp;
}

enum { P_NORM, P_MARK, P_BASE, P_WS, P_CASE, P_ODD, P_SCRIPT, P_COUNT };

typedef struct fuzzer {
    const hsd_tokenizer *tok;
    uint64_t rng;
    cpset pools[P_COUNT];
    /* inputs worth mutating: seed windows and failing inputs found so far */
    char **pool;
    size_t *pool_len;
    size_t pool_n, pool_cap;
    hsd_strmap seen; /* minimal counterexamples already reported */
    hsd_buf cand;
} fuzzer;

static void add_cp(hsd_buf *b, uint32_t cp) { hsd_buf_push_cp(b, cp); }

static void pool_add(fuzzer *f, const char *s, size_t n) {
    if (!n || n > 4096) return;
    if (f->pool_n == f->pool_cap) {
        if (f->pool_cap >= 4096) { /* full: overwrite a random slot */
            size_t k = rng_below(&f->rng, f->pool_n);
            char *p = malloc(n + 1);
            if (!p) return;
            memcpy(p, s, n);
            p[n] = 0;
            free(f->pool[k]);
            f->pool[k] = p;
            f->pool_len[k] = n;
            return;
        }
        size_t c = f->pool_cap ? f->pool_cap * 2 : 64;
        char **p = realloc(f->pool, c * sizeof *p);
        if (!p) return;
        f->pool = p;
        size_t *l = realloc(f->pool_len, c * sizeof *l);
        if (!l) return;
        f->pool_len = l;
        f->pool_cap = c;
    }
    char *p = malloc(n + 1);
    if (!p) return;
    memcpy(p, s, n);
    p[n] = 0;
    f->pool[f->pool_n] = p;
    f->pool_len[f->pool_n++] = n;
}

/* Appends one adversarial piece. */
static void gen_piece(fuzzer *f, hsd_buf *b) {
    uint64_t *r = &f->rng;
    switch (rng_below(r, 11)) {
    case 0: add_cp(b, cpset_pick(&f->pools[P_NORM], r)); break;
    case 1: /* base letter + 1..2 combining marks: NFC composes, NFKD/strip-accents drop */
        add_cp(b, cpset_pick(&f->pools[rng_below(r, 2) ? P_BASE : P_SCRIPT], r));
        for (size_t k = 1 + rng_below(r, 2); k; k--) add_cp(b, cpset_pick(&f->pools[P_MARK], r));
        break;
    case 2: /* whitespace/control/format run */
        for (size_t k = 1 + rng_below(r, 4); k; k--)
            add_cp(b, rng_below(r, 2) ? cpset_pick(&f->pools[P_WS], r) : (uint32_t)" \n\t"[rng_below(r, 3)]);
        break;
    case 3: /* plain ASCII word */
        for (size_t k = 1 + rng_below(r, 6); k; k--) add_cp(b, 'a' + (uint32_t)rng_below(r, 26));
        break;
    case 4: add_cp(b, cpset_pick(&f->pools[P_CASE], r)); break;
    case 5: add_cp(b, cpset_pick(&f->pools[P_ODD], r)); break;
    case 6:
    case 7: add_cp(b, cpset_pick(&f->pools[P_SCRIPT], r)); break;
    case 8: /* an added token's content (special tokens, lstrip/rstrip interplay) */
        if (hsd_tok_n_added(f->tok)) {
            const hsd_added_token *a = hsd_tok_added(f->tok, rng_below(r, hsd_tok_n_added(f->tok)));
            if (a->len < 64) hsd_buf_append(b, a->content, a->len);
        }
        break;
    case 9: { /* the escape characters tokenizers use for space and newline */
        static const uint32_t esc[] = {0x2581, 0x120, 0x10A, 0x2582, ' '};
        add_cp(b, esc[rng_below(r, sizeof esc / sizeof esc[0])]);
        break;
    }
    default: add_cp(b, ' '); break;
    }
}

/* Character boundaries of b (at most cap), returns the count. */
static size_t boundaries(const char *s, size_t n, size_t *off, size_t cap) {
    size_t k = 0;
    for (size_t i = 0; i < n && k < cap; i += (size_t)hsd_utf8_len((unsigned char)s[i])) off[k++] = i;
    return k;
}

/* Builds the next candidate in f->cand: fresh pieces, or a mutation of a pool entry. */
static void gen_candidate(fuzzer *f) {
    hsd_buf *c = &f->cand;
    c->n = 0;
    uint64_t *r = &f->rng;
    if (!f->pool_n || rng_below(r, 2)) {
        for (size_t k = 1 + rng_below(r, 6); k; k--) gen_piece(f, c);
        hsd_buf_append(c, "", 0);
        return;
    }
    size_t pi = rng_below(r, f->pool_n);
    const char *s = f->pool[pi];
    size_t n = f->pool_len[pi];
    size_t off[65];
    size_t nb = boundaries(s, n, off, 64);
    off[nb] = nb < 64 ? n : off[nb - 1];
    if (nb == 64) n = off[63]; /* long seeds: mutate a window of at most 63 characters */
    size_t a = rng_below(r, nb + 1), b = a + rng_below(r, nb - a + 1);
    size_t oa = a < nb ? off[a] : n, ob = b < nb ? off[b] : n;
    switch (rng_below(r, 4)) {
    case 0: /* insert a piece */
        hsd_buf_append(c, s, oa);
        gen_piece(f, c);
        hsd_buf_append(c, s + oa, n - oa);
        break;
    case 1: /* delete a range */
        hsd_buf_append(c, s, oa);
        hsd_buf_append(c, s + ob, n - ob);
        break;
    case 2: /* replace a range by a piece */
        hsd_buf_append(c, s, oa);
        gen_piece(f, c);
        hsd_buf_append(c, s + ob, n - ob);
        break;
    default: { /* splice with another entry */
        size_t pj = rng_below(r, f->pool_n);
        hsd_buf_append(c, s, oa);
        size_t m = f->pool_len[pj], offj[65];
        size_t nj = boundaries(f->pool[pj], m, offj, 64);
        size_t cut = nj ? offj[rng_below(r, nj)] : 0;
        hsd_buf_append(c, f->pool[pj] + cut, (nj == 64 ? offj[63] : m) - cut);
        break;
    }
    }
    hsd_buf_append(c, "", 0);
}

/* Seeds: windows of up to 40 characters from each corpus text, and its scripts. */
static void seed_from_corpus(fuzzer *f, const hsd_corpus *c, USet *scripts) {
    for (size_t i = 0; c && i < c->n; i++) {
        const char *s = c->text[i];
        size_t n = c->len[i];
        if (hsd_utf8_valid_prefix(s, n) != n) continue;
        for (size_t p = 0; p < n;) {
            int l;
            uint32_t cp = hsd_utf8_decode((const unsigned char *)s + p, &l);
            UErrorCode err = U_ZERO_ERROR;
            UScriptCode sc = uscript_getScript((UChar32)cp, &err);
            if (U_SUCCESS(err) && sc > USCRIPT_INHERITED && !uset_contains(scripts, (UChar32)cp)) {
                USet *t = uset_openEmpty();
                uset_applyIntPropertyValue(t, UCHAR_SCRIPT, sc, &err);
                if (U_SUCCESS(err)) uset_addAll(scripts, t);
                uset_close(t);
            }
            p += (size_t)l;
        }
        size_t off[41];
        size_t nb = boundaries(s, n, off, 40);
        pool_add(f, s, nb == 40 ? off[39] : n);
    }
}

hsd_status hsd_inj_fuzz(const hsd_tokenizer *tok, const hsd_inj_params *o, hsd_inj_result *r) {
    if (!tok || !o || !r)
        return hsd_error(HSD_ERR_INVALID_ARG, "hsd_inj_fuzz: %s is NULL",
                         !tok ? "tokenizer"
                         : !o ? "params"
                              : "result");
    hsd_inj_params o_own = hsd_inj_default_params();
    hsd_status o_st = hsd_params_read(&o_own, sizeof o_own, o, "hsd_inj_fuzz", "params", "hsd_inj_default_params()");
    if (o_st) return o_st;
    o = &o_own;
    fuzzer f;
    memset(&f, 0, sizeof f);
    f.tok = tok;
    f.rng = o->seed ^ 0x68736420696E6A31ULL; /* "hsd inj1": seed 0 is still a fine stream */
    cpset_open(&f.pools[P_NORM], "[[:NFKC_QC=N:][:NFKC_QC=M:][:NFC_QC=N:][:NFC_QC=M:]]");
    cpset_open(&f.pools[P_MARK], "[:Mn:]");
    cpset_open(&f.pools[P_BASE], "[A-Za-z\\u00C0-\\u024F\\u0370-\\u03FF\\u0400-\\u04FF]");
    cpset_open(&f.pools[P_WS], "[[:White_Space:][:Cc:][:Cf:][:Zs:][:Zl:][:Zp:]]");
    cpset_open(&f.pools[P_CASE], "[:Changes_When_NFKC_Casefolded:]");
    cpset_open(&f.pools[P_ODD], "[[:Cn:][:Co:][:Cs:]]"); /* surfaces removed in cpset_open */
    f.pools[P_SCRIPT].set = uset_openEmpty();
    uset_addRange(f.pools[P_SCRIPT].set, 'a', 'z');
    seed_from_corpus(&f, o->fuzz_seeds, f.pools[P_SCRIPT].set);
    uset_removeRange(f.pools[P_SCRIPT].set, 0xD800, 0xDFFF);
    f.pools[P_SCRIPT].size = uset_size(f.pools[P_SCRIPT].set);
    hsd_status st = hsd_strmap_init(&f.seen, 256) ? hsd_error(HSD_ERR_NOMEM, "oom") : HSD_OK;

    double t0 = hsd_timer_ms();
    double elapsed = 0, last_report = -1;
    int64_t found_here = 0;
    while (!st) {
        if ((r->fuzz_candidates & 63) == 0) {
            elapsed = (hsd_timer_ms() - t0) / 1e3;
            if (o->progress && elapsed - last_report >= 0.2) {
                last_report = elapsed;
                o->progress(o->progress_ctx, o->fuzz_seconds > 0 ? elapsed / o->fuzz_seconds : 1.0,
                            r->fuzz_candidates, r->fuzz_found);
            }
            if (elapsed >= o->fuzz_seconds) break;
        }
        gen_candidate(&f);
        r->fuzz_candidates++;
        bool same = true;
        st = hsd_inj_roundtrip(tok, f.cand.p, f.cand.n, NULL, NULL, &same);
        if (st || same) continue;
        char *m = NULL;
        size_t mn = 0;
        if ((st = hsd_inj_minimize(tok, f.cand.p, f.cand.n, &m, &mn))) break;
        bool fresh = hsd_strmap_get(&f.seen, m, mn) < 0;
        if (fresh && hsd_strmap_put(&f.seen, m, mn, 1)) st = hsd_error(HSD_ERR_NOMEM, "oom");
        free(m);
        if (st || !fresh) continue;
        pool_add(&f, f.cand.p, f.cand.n);
        if ((o->fuzz_max_report <= 0 || found_here < o->fuzz_max_report) &&
            (st = hsd_inj_result_add(r, tok, f.cand.p, f.cand.n, -1, true)))
            break;
        r->fuzz_found++;
        found_here++;
        if (o->fuzz_max_found > 0 && found_here >= o->fuzz_max_found) break;
    }
    r->fuzz_seconds += (hsd_timer_ms() - t0) / 1e3;
    if (o->progress) o->progress(o->progress_ctx, 1.0, r->fuzz_candidates, r->fuzz_found);
    for (int i = 0; i < P_COUNT; i++)
        if (f.pools[i].set) uset_close(f.pools[i].set);
    for (size_t i = 0; i < f.pool_n; i++) free(f.pool[i]);
    free(f.pool);
    free(f.pool_len);
    hsd_strmap_free(&f.seen);
    hsd_buf_free(&f.cand);
    return st;
}
