/* Which GGUF vocabulary (llama.cpp's tokenizer.ggml.* model) reproduces a loaded tokenizer,
 * or why none does (see gguf_export.h). llama.cpp runs a fixed set of pipelines:
 *
 *   "gpt2"  byte-level BPE by merge rank; the pre-tokenizer regexes are chosen by the name in
 *           tokenizer.ggml.pre (tokenize/gguf_vocab.c's table); no normalizer; ByteLevel decoder.
 *   "llama" SentencePiece: spaces become "▁", an optional dummy "▁" in front
 *           (add_space_prefix), then pairs are merged by the score of their concatenation,
 *           bytes <0xNN> for characters no token covers; decoder "▁" -> " ", bytes, and the
 *           dummy space stripped.
 *
 * An HF tokenizer.json maps onto one of these only when each stage is one the GGUF model
 * applies itself; anything else is refused by name, because a vocabulary that silently
 * tokenizes differently changes prompt ids without an error. */
#include "tokenize/gguf_export.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsd_tools.h"
#include "lib/base/error.h"

#define WORD_MARK "\xE2\x96\x81" /* U+2581 ▁ */

static const char *norm_name(hsd_norm_type ty) {
    static const char *names[] = {"NFC",       "NFD",          "NFKC",    "NFKD",
                                  "Lowercase", "StripAccents", "Replace", "Prepend",
                                  "Strip",     "Nmt",          "BertNormalizer"};
    return (size_t)ty < sizeof names / sizeof *names ? names[ty] : "?";
}

static const char *pre_name(hsd_pre_type ty) {
    static const char *names[] = {"Split",           "ByteLevel",  "Metaspace",
                                  "Whitespace",      "WhitespaceSplit", "BertPreTokenizer",
                                  "Digits",          "Punctuation", "UnicodeScripts"};
    return (size_t)ty < sizeof names / sizeof *names ? names[ty] : "?";
}

static const char *dec_name(hsd_dec_type ty) {
    static const char *names[] = {"ByteLevel", "Metaspace", "ByteFallback", "Fuse",
                                  "Strip",     "Replace",   "WordPiece",    "BPEDecoder"};
    return (size_t)ty < sizeof names / sizeof *names ? names[ty] : "?";
}

static hsd_status refuse(const hsd_tokenizer *t, const char *what) {
    return hsd_error(HSD_ERR_UNSUPPORTED,
                     "%s: a GGUF vocabulary cannot hold %s, so a GGUF of it would tokenize "
                     "differently: none is written",
                     t->name, what);
}

static bool re_is(const hsd_regex *re, const char *pat, bool literal) {
    size_t n;
    bool lit;
    const char *s = re ? hsd_regex_source(re, &n, &lit) : NULL;
    return s && lit == literal && n == strlen(pat) && !memcmp(s, pat, n);
}

/* A short printable form of a step's pattern for messages. */
static void re_show(const hsd_regex *re, char *buf, size_t cap) {
    size_t n = 0;
    bool lit;
    const char *s = re ? hsd_regex_source(re, &n, &lit) : "";
    snprintf(buf, cap, "'%.*s%s'", (int)(n > 48 ? 48 : n), s, n > 48 ? "..." : "");
}

/* The byte-level pre-tokenizer's llama.cpp name, or a refusal naming the first step that
 * no name covers. */
static hsd_status byte_level_pre(const hsd_tokenizer *t, const hsd_gguf_pre **out) {
    char what[400], pat[80];
    size_t n = t->n_pre;
    const hsd_pre_step *last = n ? &t->pre[n - 1] : NULL;
    if (!last || last->type != HSD_PRE_BYTELEVEL) {
        snprintf(what, sizeof what, "a byte-level pre-tokenizer that does not end in ByteLevel");
        return refuse(t, what);
    }
    if (last->add_prefix_space)
        return refuse(t, "pre-tokenizer ByteLevel with add_prefix_space=true");
    for (size_t i = 0; i + 1 < n; i++)
        if (t->pre[i].type != HSD_PRE_SPLIT) {
            snprintf(what, sizeof what, "pre-tokenizer %s before ByteLevel",
                     pre_name(t->pre[i].type));
            return refuse(t, what);
        }
    if (last->re && n > 1)
        return refuse(t, "pre-tokenizer ByteLevel with use_regex=true after Split steps");
    for (size_t k = 0; hsd_gguf_pre_at(k); k++) {
        const hsd_gguf_pre *p = hsd_gguf_pre_at(k);
        if ((size_t)p->n_split != n - 1 || (!p->n_split && !last->re) ||
            (p->n_split && last->re))
            continue;
        bool ok = !p->n_split ? re_is(last->re, hsd_gguf_pre_gpt2_pattern(), false) : true;
        for (int i = 0; ok && i < p->n_split; i++) {
            const hsd_pre_step *st = &t->pre[i];
            /* a single pattern that matches every character splits the same whether the
             * matches are kept (Isolated) or the gaps between them removed (Removed, invert) */
            bool same = (st->behavior == HSD_SPLIT_ISOLATED && !st->invert) ||
                        (p->n_split == 1 && st->behavior == HSD_SPLIT_REMOVED && st->invert);
            ok = same && re_is(st->re, p->split[i], false);
        }
        if (ok && p->llama_cpp_differs) {
            snprintf(what, sizeof what,
                     "the pre-tokenizer of llama.cpp's name '%s' exactly (llama.cpp runs its "
                     "own rewrite of the regex, and %s)",
                     p->name, p->llama_cpp_differs);
            return refuse(t, what);
        }
        if (ok) {
            *out = p;
            return HSD_OK;
        }
    }
    if (n == 1) return refuse(t, "pre-tokenizer ByteLevel with a regex other than GPT-2's");
    re_show(t->pre[0].re, pat, sizeof pat);
    snprintf(what, sizeof what,
             "pre-tokenizer Split %s%s (no llama.cpp pre-tokenizer name runs these %zu "
             "Split steps)",
             pat, n > 2 ? " ..." : "", n - 1);
    return refuse(t, what);
}

/* SentencePiece-style BPE (llama2, mistral, gemma): normalizer [Prepend("▁")]
 * Replace(" ", "▁"), no pre-tokenizer (or a Split on " ", which finds no space after that
 * Replace), decoder Replace("▁", " "), ByteFallback, Fuse [, Strip(" ", 1, 0)]. */
static hsd_status spm_like(const hsd_tokenizer *t, hsd_tok_gguf *g) {
    char what[200];
    size_t i = 0;
    bool prepend = false;
    if (i < t->n_norm && t->norm[i].type == HSD_NORM_PREPEND) {
        const hsd_norm_step *st = &t->norm[i++];
        if (st->content_len != 3 || memcmp(st->content, WORD_MARK, 3))
            return refuse(t, "normalizer Prepend of something other than \"\xE2\x96\x81\"");
        prepend = true;
    }
    if (i >= t->n_norm || t->norm[i].type != HSD_NORM_REPLACE || !re_is(t->norm[i].re, " ", true) ||
        t->norm[i].content_len != 3 || memcmp(t->norm[i].content, WORD_MARK, 3))
        return refuse(t, i < t->n_norm ? "a normalizer other than Replace(\" \", \"\xE2\x96\x81\")"
                                       : "a non-byte-level BPE without the normalizer "
                                         "Replace(\" \", \"\xE2\x96\x81\") of SentencePiece");
    if (++i < t->n_norm) {
        snprintf(what, sizeof what, "normalizer %s", norm_name(t->norm[i].type));
        return refuse(t, what);
    }
    if (t->n_pre > 1 || (t->n_pre == 1 && (t->pre[0].type != HSD_PRE_SPLIT ||
                                           !re_is(t->pre[0].re, " ", true)))) {
        snprintf(what, sizeof what, "pre-tokenizer %s in a SentencePiece-style tokenizer",
                 pre_name(t->pre[0].type));
        return refuse(t, what);
    }
    hsd_bpe_info bi;
    hsd_bpe_info_get(t, &bi);
    if (!bi.byte_fallback)
        return refuse(t, "a SentencePiece-style BPE without byte_fallback");
    /* the decoder llama.cpp's SPM detokenizer amounts to (tokenize/gguf_vocab.c builds it) */
    static const hsd_dec_type want[4] = {HSD_DEC_REPLACE, HSD_DEC_BYTE_FALLBACK, HSD_DEC_FUSE,
                                         HSD_DEC_STRIP};
    size_t nd = prepend ? 4 : 3;
    bool ok = t->n_dec == nd;
    for (size_t k = 0; ok && k < nd; k++) ok = t->dec[k].type == want[k];
    ok = ok && t->dec[0].pattern_len == 3 && !memcmp(t->dec[0].pattern, WORD_MARK, 3) &&
         t->dec[0].content_len == 1 && t->dec[0].content[0] == ' ';
    if (ok && prepend)
        ok = t->dec[3].content_len == 1 && t->dec[3].content[0] == ' ' && t->dec[3].start == 1 &&
             t->dec[3].stop == 0;
    if (!ok) {
        snprintf(what, sizeof what,
                 "decoder %s%s (llama.cpp's SentencePiece decoder is Replace, ByteFallback, "
                 "Fuse%s)",
                 t->n_dec ? dec_name(t->dec[0].type) : "none", t->n_dec > 1 ? ", ..." : "",
                 prepend ? ", Strip" : "");
        return refuse(t, what);
    }
    g->spm = true;
    g->add_space_prefix = prepend;
    return HSD_OK;
}

static hsd_status byte_level_bpe(const hsd_tokenizer *t, unsigned flags, hsd_tok_gguf *g) {
    char what[300];
    if (t->n_norm && !(flags & HSD_GGUF_VOCAB_DROP_NORMALIZER)) {
        snprintf(what, sizeof what,
                 "normalizer %s (llama.cpp normalizes nothing for a byte-level BPE; "
                 "--gguf-drop-normalizer writes the vocabulary without it)",
                 norm_name(t->norm[0].type));
        return refuse(t, what);
    }
    hsd_status s = byte_level_pre(t, &g->pre);
    if (s) return s;
    if (t->n_dec != 1 || t->dec[0].type != HSD_DEC_BYTELEVEL) {
        snprintf(what, sizeof what, "decoder %s%s (llama.cpp's byte-level decoder is ByteLevel)",
                 t->n_dec ? dec_name(t->dec[0].type) : "none", t->n_dec > 1 ? ", ..." : "");
        return refuse(t, what);
    }
    hsd_bpe_info bi;
    hsd_bpe_info_get(t, &bi);
    if (bi.ignore_merges != g->pre->ignore_merges) {
        /* ignore_merges only matters for a word that is a token the merges do not build */
        int32_t id;
        if ((s = hsd_bpe_first_unreached(t, &id))) return s;
        if (id >= 0) {
            size_t n;
            const char *str = hsd_tok_str(t, id, &n);
            snprintf(what, sizeof what,
                     "BPE ignore_merges=%s with pre-tokenizer %s (llama.cpp uses "
                     "ignore_merges=%s there, and the merges do not build token %d '%.*s')",
                     bi.ignore_merges ? "true" : "false", g->pre->name,
                     g->pre->ignore_merges ? "true" : "false", id, (int)(n > 40 ? 40 : n), str);
            return refuse(t, what);
        }
    }
    g->spm = false;
    return HSD_OK;
}

hsd_status hsd_tok_gguf_plan(const hsd_tokenizer *t, unsigned flags, hsd_tok_gguf *g) {
    memset(g, 0, sizeof *g);
    char what[300];
    switch (t->model.type) {
    case HSD_MODEL_UNIGRAM: return refuse(t, "model Unigram (hsd reads no GGUF Unigram vocabulary)");
    case HSD_MODEL_WORDPIECE:
        return refuse(t, "model WordPiece (hsd reads no GGUF WordPiece vocabulary)");
    case HSD_MODEL_SPM: /* llama.cpp's own model: scores, "▁", the dummy prefix */
        if (t->n_norm || t->n_pre) {
            snprintf(what, sizeof what, "%s %s before a SentencePiece model",
                     t->n_norm ? "normalizer" : "pre-tokenizer",
                     t->n_norm ? norm_name(t->norm[0].type) : pre_name(t->pre[0].type));
            return refuse(t, what);
        }
        g->spm = true;
        g->add_space_prefix = t->spm_add_dummy_prefix;
        break;
    case HSD_MODEL_BPE: break;
    }
    hsd_bpe_info bi = {.unk_id = -1};
    if (t->model.type == HSD_MODEL_BPE) {
        hsd_bpe_info_get(t, &bi);
        if (bi.affixes)
            return refuse(t, "BPE continuing_subword_prefix / end_of_word_suffix");
        hsd_status s = t->byte_level ? byte_level_bpe(t, flags, g) : spm_like(t, g);
        if (s) return s;
    }
    /* added tokens: llama.cpp matches control and user-defined tokens as written in the text,
     * with none of HF's per-token options */
    for (size_t i = 0; i < t->n_added; i++) {
        const hsd_added_token *a = &t->added[i];
        const char *opt = a->lstrip ? "lstrip" : a->rstrip ? "rstrip" : a->single_word ? "single_word" : NULL;
        if (!opt && a->normalized && t->n_norm && memchr(a->content, ' ', a->len))
            opt = "normalized (its spaces would be matched as \"\xE2\x96\x81\")";
        if (opt) {
            snprintf(what, sizeof what, "added token %d '%.*s' with %s", a->id,
                     (int)(a->len > 40 ? 40 : a->len), a->content, opt);
            return refuse(t, what);
        }
    }
    /* post-processor: at most one id before and one after the text (BOS / EOS) */
    if (t->n_post_prefix > 1 || t->n_post_suffix > 1) {
        snprintf(what, sizeof what, "a post-processor adding %zu ids before and %zu after the text",
                 t->n_post_prefix, t->n_post_suffix);
        return refuse(t, what);
    }
    g->bos = t->n_post_prefix ? t->post_prefix[0] : t->bos_id;
    g->eos = t->n_post_suffix ? t->post_suffix[0] : t->eos_id;
    g->add_bos = t->n_post_prefix == 1;
    g->add_eos = t->n_post_suffix == 1;
    g->unk = bi.unk_id >= 0 ? bi.unk_id : t->unk_id;
    return HSD_OK;
}

int32_t hsd_tok_gguf_token_type(const hsd_tokenizer *t, const hsd_tok_gguf *g, int32_t id) {
    uint8_t f = t->flags[id];
    if (f & HSD_TOKF_UNUSED) return HSD_TOK_GGUF_UNUSED;
    if (id == g->unk && g->spm) return HSD_TOK_GGUF_UNKNOWN;
    /* special without being added: llama2.c's <s> and </s> */
    if (f & HSD_TOKF_SPECIAL) return HSD_TOK_GGUF_CONTROL;
    if (f & HSD_TOKF_ADDED) return HSD_TOK_GGUF_USER_DEFINED;
    if (g->spm && (f & HSD_TOKF_BYTE)) return HSD_TOK_GGUF_BYTE;
    return HSD_TOK_GGUF_NORMAL;
}
