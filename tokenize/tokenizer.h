/* Internal tokenizer representation, shared by every loader (tokenizer.json, llama2.c
 * tokenizer.bin, GGUF) and every pipeline stage. The pipeline follows HF tokenizers:
 *
 *   text -> added-token split (raw) -> normalizer -> added-token split (normalized)
 *        -> pre-tokenizer -> model (BPE / Unigram / WordPiece / SPM) -> post-processor
 *   ids  -> id_to_token -> decoder chain -> text
 *
 * Vocabulary storage: `tok_str` holds each id's token string as HF shows it ("Ġhello",
 * "▁the", "<0x41>"); `surface` holds what the token contributes to decoded text. When the
 * pre-tokenizer is ByteLevel, the model works directly on raw bytes: its lookup keys are the
 * byte-level strings mapped back to bytes, so no per-byte remapping happens at encode time. */
#ifndef HSD_TOKENIZE_TOKENIZER_H
#define HSD_TOKENIZE_TOKENIZER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "hsd.h"
#include "lib/base/buf.h"
#include "lib/base/map.h"

/* ---- spans: pieces of text inside one working buffer (offsets survive reallocs) ---- */
typedef struct hsd_span {
    uint32_t off, len;
    int32_t id; /* >= 0: an added token already resolved; -1: text still to tokenize */
} hsd_span;

typedef struct hsd_spans {
    hsd_span *p;
    size_t n, cap;
} hsd_spans;

int hsd_spans_push(hsd_spans *v, uint32_t off, uint32_t len, int32_t id);

/* ---- regex (PCRE2, UTF + UCP, JIT) ---- */
typedef struct hsd_regex hsd_regex;
/* Compiles `pat`; literal=1 escapes it (HF "String" patterns). `ctx` names the field for
 * errors. */
hsd_status hsd_regex_compile(const char *pat, size_t len, int literal, const char *ctx,
                             hsd_regex **out);
void hsd_regex_free(hsd_regex *re);
/* The pattern as compiled (before any widening) and whether it was a literal string. */
const char *hsd_regex_source(const hsd_regex *re, size_t *len, bool *literal);
/* Finds the next match in s[0..len) at or after `pos`. Returns 1 and sets [*ms, *me), or 0.
 * `md` is a pcre2_match_data* from the scratch (one per thread). */
int hsd_regex_next(const hsd_regex *re, const char *s, size_t len, size_t pos, size_t *ms,
                   size_t *me, void *md);

/* pcre2 match data for use outside the per-thread scratch (e.g. while loading) */
void *hsd_scratch_md_new(void);
void hsd_scratch_md_free(void *md);

/* ---- per-call scratch, reused across calls on one thread ---- */
typedef struct hsd_scratch {
    hsd_buf a, b, c;     /* working buffers */
    hsd_spans s1, s2, s3; /* piece lists; s3: (range, is_match) pairs while splitting */
    void *md;            /* pcre2_match_data */
    void *model_scratch; /* owned by the model implementation */
    void (*model_scratch_free)(void *);
    bool cont;            /* continuation encoding: no prefix space / dummy prefix */
    hsd_buf strs;         /* decoder: token strings */
    hsd_spans str_spans;  /* decoder: their spans */
} hsd_scratch;

/* ---- normalizers (Sequence flattened into steps) ---- */
typedef enum {
    HSD_NORM_NFC,
    HSD_NORM_NFD,
    HSD_NORM_NFKC,
    HSD_NORM_NFKD,
    HSD_NORM_LOWERCASE,
    HSD_NORM_STRIP_ACCENTS,
    HSD_NORM_REPLACE,
    HSD_NORM_PREPEND,
    HSD_NORM_STRIP,
    HSD_NORM_NMT,
    HSD_NORM_BERT,
} hsd_norm_type;

typedef struct hsd_norm_step {
    hsd_norm_type type;
    hsd_regex *re;     /* Replace: pattern (literal or regex) */
    char *content;     /* Replace: replacement; Prepend: prefix */
    size_t content_len;
    bool strip_left, strip_right;
    bool bert_clean, bert_chinese, bert_strip_accents, bert_lowercase;
} hsd_norm_step;

/* ---- pre-tokenizers (Sequence flattened) ---- */
typedef enum {
    HSD_PRE_SPLIT,
    HSD_PRE_BYTELEVEL,
    HSD_PRE_METASPACE,
    HSD_PRE_WHITESPACE,       /* \w+|[^\w\s]+ */
    HSD_PRE_WHITESPACE_SPLIT, /* split on whitespace, removed */
    HSD_PRE_BERT,
    HSD_PRE_DIGITS,
    HSD_PRE_PUNCTUATION,
    HSD_PRE_UNICODE_SCRIPTS, /* split where the script changes */
} hsd_pre_type;

typedef enum {
    HSD_SPLIT_REMOVED,
    HSD_SPLIT_ISOLATED,
    HSD_SPLIT_MERGED_WITH_PREVIOUS,
    HSD_SPLIT_MERGED_WITH_NEXT,
    HSD_SPLIT_CONTIGUOUS,
} hsd_split_behavior;

typedef enum { HSD_PREPEND_ALWAYS, HSD_PREPEND_FIRST, HSD_PREPEND_NEVER } hsd_prepend_scheme;

typedef struct hsd_pre_step {
    hsd_pre_type type;
    hsd_regex *re; /* Split pattern; ByteLevel with use_regex: the GPT-2 pattern */
    hsd_split_behavior behavior;
    bool invert;
    bool add_prefix_space; /* ByteLevel */
    char repl[8];          /* Metaspace replacement (UTF-8) */
    size_t repl_len;
    hsd_prepend_scheme prepend;
    bool split;            /* Metaspace */
    bool individual_digits;
} hsd_pre_step;

/* ---- decoders (Sequence flattened) ---- */
typedef enum {
    HSD_DEC_BYTELEVEL,
    HSD_DEC_METASPACE,
    HSD_DEC_BYTE_FALLBACK,
    HSD_DEC_FUSE,
    HSD_DEC_STRIP,
    HSD_DEC_REPLACE,
    HSD_DEC_WORDPIECE,
    HSD_DEC_BPE, /* BPEDecoder: suffix -> space */
} hsd_dec_type;

typedef struct hsd_dec_step {
    hsd_dec_type type;
    char *pattern, *content; /* Replace (string pattern), Strip content, WordPiece prefix */
    size_t pattern_len, content_len;
    int start, stop;          /* Strip */
    bool cleanup;             /* WordPiece */
    char repl[8];             /* Metaspace */
    size_t repl_len;
    hsd_prepend_scheme prepend;
} hsd_dec_step;

/* ---- added tokens ---- */
typedef struct hsd_added_token {
    char *content;
    size_t len;
    int32_t id;
    bool special, normalized, lstrip, rstrip, single_word;
} hsd_added_token;

/* Leftmost-longest matcher over a set of added tokens (byte trie). */
typedef struct hsd_added_matcher {
    hsd_u64map edges;  /* (node << 8 | byte) -> child node */
    int32_t *accept;   /* node -> index into tokens, or -1 */
    size_t n_nodes;
    uint8_t first[32]; /* bitmap of possible first bytes */
    char **keys;       /* per token: the string matched (normalized content if normalized) */
    size_t *key_lens;
} hsd_added_matcher;

/* ---- models ---- */
typedef enum { HSD_MODEL_BPE, HSD_MODEL_UNIGRAM, HSD_MODEL_WORDPIECE, HSD_MODEL_SPM } hsd_model_type;

typedef struct hsd_tokenizer hsd_tokenizer;

typedef struct hsd_tok_model {
    hsd_model_type type;
    void *impl;
    /* Appends the ids of one pre-tokenized piece. */
    hsd_status (*tokenize)(const hsd_tokenizer *tok, const char *s, size_t n, hsd_ids *out,
                           hsd_scratch *sc);
    void (*free)(void *impl);
} hsd_tok_model;

struct hsd_tokenizer {
    char *name; /* file name for messages */

    /* vocabulary: ids 0..n_ids-1 */
    int32_t n_ids;
    uint32_t *str_off, *str_len; /* into str_arena: HF token string */
    char *str_arena;
    size_t str_arena_n, str_arena_cap;
    uint32_t *surf_off, *surf_len; /* into surf_arena: surface bytes */
    uint8_t *surf_arena;
    uint8_t *flags; /* HSD_TOKF_* */
    hsd_strmap str_to_id; /* HF token string -> id (model vocab + added tokens) */

    bool byte_level; /* ByteLevel pre-tokenizer: model keys are raw bytes */

    hsd_norm_step *norm;
    size_t n_norm;
    hsd_pre_step *pre;
    size_t n_pre;
    hsd_dec_step *dec;
    size_t n_dec;
    bool has_decoder;

    /* post-processor for one sequence: prefix ids + A + suffix ids */
    int32_t *post_prefix, *post_suffix;
    size_t n_post_prefix, n_post_suffix;

    hsd_added_token *added;
    size_t n_added;
    hsd_added_matcher raw_match, norm_match; /* normalized=false / normalized=true tokens */
    bool has_raw_match, has_norm_match;

    hsd_tok_model model;

    /* llama2.c / SentencePiece-style encoders that add the dummy prefix themselves. */
    bool spm_add_dummy_prefix;

    int32_t bos_id, eos_id, unk_id;
};

enum {
    HSD_TOKF_SPECIAL = 1, /* added token marked special (skipped by skip_special) */
    HSD_TOKF_ADDED = 2,   /* added token */
    HSD_TOKF_UNUSED = 4,  /* no token has this id */
    HSD_TOKF_BYTE = 8,    /* byte-fallback token <0xNN> */
};

/* ---- construction helpers for loaders ---- */
hsd_tokenizer *hsd_tok_alloc(const char *name);
/* Sets the vocabulary size and allocates per-id arrays; every id starts UNUSED. */
hsd_status hsd_tok_set_size(hsd_tokenizer *t, int32_t n_ids);
/* Stores id's HF string (copied) and registers it in str_to_id (later calls win). */
hsd_status hsd_tok_set_token(hsd_tokenizer *t, int32_t id, const char *s, size_t len);
/* Computes surface bytes for every id (call once the model and decoder are known). */
hsd_status hsd_tok_finish(hsd_tokenizer *t);
void hsd_tok_destroy(hsd_tokenizer *t);

static inline const char *hsd_tok_str(const hsd_tokenizer *t, int32_t id, size_t *len) {
    *len = t->str_len[id];
    return t->str_arena + t->str_off[id];
}

/* Read-only accessors for the engine and the analysis tools, which read no tokenizer fields
 * (a field can then change without touching them). */
bool hsd_tok_is_byte(const hsd_tokenizer *t, int32_t id); /* a byte-fallback token <0xNN> */
const char *hsd_tok_name(const hsd_tokenizer *t); /* the file it came from, for messages */
size_t hsd_tok_n_added(const hsd_tokenizer *t);           /* added tokens */
const hsd_added_token *hsd_tok_added(const hsd_tokenizer *t, size_t k); /* NULL out of range */
bool hsd_tok_has_normalizer(const hsd_tokenizer *t);
/* A bare SentencePiece model: no normalizer, no pre-tokenizer, no added tokens to match. */
bool hsd_tok_is_bare_spm(const hsd_tokenizer *t);

/* Encodes text as the continuation of earlier text (the string bridge re-tokenizes windows
 * that start mid-document): no special tokens and none of the start-of-text prefixes
 * (Prepend normalizer, Metaspace prepend, ByteLevel add_prefix_space, SPM dummy prefix).
 * Appends to out. */
hsd_status hsd_tok_encode_cont(const hsd_tokenizer *t, const char *text, size_t len,
                               hsd_ids *out);

/* ---- stages ---- */
hsd_status hsd_norm_apply(const hsd_tokenizer *t, const char *s, size_t n, hsd_buf *out,
                          hsd_scratch *sc);
/* Pre-tokenizes the pieces of sc->s1 (text in buffer `b`), leaving the result in sc->s1.
 * `first_piece` is true for the piece at offset 0 of the input (Metaspace "first"). */
hsd_status hsd_pre_apply(const hsd_tokenizer *t, hsd_buf *b, hsd_spans *pieces,
                         hsd_scratch *sc);
/* Decodes token strings into text (HF decoder chain). */
hsd_status hsd_dec_apply(const hsd_tokenizer *t, hsd_scratch *sc, hsd_buf *out);
void hsd_norm_steps_free(hsd_norm_step *s, size_t n);
void hsd_pre_steps_free(hsd_pre_step *s, size_t n);
void hsd_dec_steps_free(hsd_dec_step *s, size_t n);

hsd_status hsd_added_build(hsd_tokenizer *t);
void hsd_added_free(hsd_tokenizer *t);
/* Splits the spans in `in` (text in b) on tokens of matcher m, appending to `out`. */
hsd_status hsd_added_split(const hsd_tokenizer *t, const hsd_added_matcher *m, const hsd_buf *b,
                           const hsd_spans *in, hsd_spans *out);

/* byte-level alphabet (GPT-2 bytes_to_unicode) */
extern const uint16_t hsd_bytelevel_cp[256];
/* Maps a code point of the byte-level alphabet back to its byte, or -1. */
int hsd_bytelevel_byte(uint32_t cp);
/* Converts a byte-level string to raw bytes; returns -1 if a char is outside the alphabet. */
int hsd_bytelevel_to_bytes(const char *s, size_t n, hsd_buf *out);

/* models */
typedef struct hsd_bpe_opts {
    bool byte_fallback, fuse_unk, ignore_merges;
    int32_t unk_id;           /* -1: none */
    const char *cont_prefix;  /* continuing_subword_prefix or NULL */
    const char *eow_suffix;   /* end_of_word_suffix or NULL */
} hsd_bpe_opts;
/* Builds a BPE model over the vocabulary already stored with hsd_tok_set_token (ids
 * 0..n_ids-1 in HF string form). Merge i is (left[i], right[i]) with rank i. When
 * t->byte_level is set, strings are mapped to raw bytes first. */
hsd_status hsd_bpe_build(hsd_tokenizer *t, const hsd_bpe_opts *o, size_t n_merges,
                         const char *const *left, const uint32_t *left_len,
                         const char *const *right, const uint32_t *right_len);
hsd_status hsd_bpe_create(hsd_tokenizer *t, const void *json_model);
/* What a writer of another vocabulary format (models/gguf_vocab.c) needs of a BPE model
 * (t->model.type must be HSD_MODEL_BPE). */
typedef struct hsd_bpe_info {
    bool byte_fallback, fuse_unk, ignore_merges;
    bool affixes; /* a continuing_subword_prefix or end_of_word_suffix */
    int32_t unk_id;
} hsd_bpe_info;
void hsd_bpe_info_get(const hsd_tokenizer *t, hsd_bpe_info *out);
/* The merges in rank order as (left, right, result) id triples; *out is malloc'd. */
hsd_status hsd_bpe_merges_get(const hsd_tokenizer *t, int32_t **out, size_t *n);
/* The first token whose own text the merges alone do not turn into that token (so that
 * ignore_merges, which emits a whole-token word as is, changes its encoding); -1: none. */
hsd_status hsd_bpe_first_unreached(const hsd_tokenizer *t, int32_t *first);
hsd_status hsd_unigram_create(hsd_tokenizer *t, const void *json_model);
hsd_status hsd_wordpiece_create(hsd_tokenizer *t, const void *json_model);

/* loaders */
hsd_status hsd_tok_load_hf_json(const char *data, size_t len, const char *name,
                                hsd_tokenizer **out);
hsd_status hsd_tok_load_llama2c(const char *data, size_t len, const char *name,
                                hsd_tokenizer **out);
hsd_status hsd_tok_load_gguf(const char *data, size_t len, const char *name,
                             hsd_tokenizer **out);

/* A llama.cpp byte-level pre-tokenizer name (tokenizer.ggml.pre) and the HF pipeline it stands
 * for (tokenize/gguf_vocab.c): n_split Split(pattern, Isolated) steps then ByteLevel without
 * regex, or (n_split 0) ByteLevel with the GPT-2 regex; ignore_merges as llama.cpp sets it. */
typedef struct hsd_gguf_pre {
    const char *name;       /* the name hsd writes */
    const char *aliases[3]; /* names it reads */
    int n_split;
    const char *split[3];
    bool ignore_merges;
    /* non-NULL: llama.cpp runs its own rewrite of the pattern for this name, which splits
     * some text differently (what differs): hsd reads such files with HF's pattern, as the
     * model was trained, but writes none, since llama.cpp would not tokenize it the same */
    const char *llama_cpp_differs;
} hsd_gguf_pre;
const hsd_gguf_pre *hsd_gguf_pre_find(const char *name, size_t len);
const hsd_gguf_pre *hsd_gguf_pre_at(size_t i); /* NULL past the last */
const char *hsd_gguf_pre_gpt2_pattern(void);

/* Widens \p{..} classes of a pattern with characters newer than PCRE2's Unicode tables
 * (see regex_unicode.c): `guarded`, behind a fast guard in a group; else inside the class. */
int hsd_regex_widen(const char *pat, size_t len, bool guarded, hsd_buf *out);
/* The pattern of HF's Whitespace pre-tokenizer, \w+|[^\w\s]+, with the Rust regex crate's
 * \w written out (it is not Oniguruma's). Returns 0 or -1 (no memory). */
int hsd_regex_whitespace_pattern(hsd_buf *out);

/* True for code points assigned in Unicode 9.0 or earlier: HF's normalization forms
 * (unicode-normalization-alignments) know only those (see regex_unicode.c). */
bool hsd_uc_assigned_by_v9(uint32_t cp);

/* Unicode properties as HF's components see them (tables: unicode_tables.h). */
bool hsd_uc_is_whitespace(uint32_t cp);    /* Rust char::is_whitespace */
bool hsd_uc_is_bert_punct(uint32_t cp);    /* BertPreTokenizer / Punctuation */
bool hsd_uc_is_mark(uint32_t cp);          /* StripAccents: removed marks */
bool hsd_uc_is_numeric(uint32_t cp);       /* Digits: Rust char::is_numeric */
bool hsd_uc_is_bert_mn(uint32_t cp);       /* BertNormalizer strip_accents: removed marks */
bool hsd_uc_is_bert_control(uint32_t cp);  /* BertNormalizer clean_text: removed */
int hsd_uc_lower(uint32_t cp, uint32_t out[3]); /* Rust char::to_lowercase */
bool hsd_uc_is_alnum_word(uint32_t cp);    /* regex \w */
int hsd_uc_script(uint32_t cp);             /* UnicodeScripts class, 0: Any */

#endif
