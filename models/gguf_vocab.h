/* The tokenizer metadata (tokenizer.ggml.*) that llama.cpp needs to load a GGUF, built from a
 * tokenizer file (GGUF, llama2.c tokenizer.bin, HuggingFace tokenizer.json with a BPE model)
 * or, without one, a placeholder vocabulary of the model's size. */
#ifndef HSD_MODELS_GGUF_VOCAB_H
#define HSD_MODELS_GGUF_VOCAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hsd.h"
#include "lib/base/buf.h"
#include "lib/base/gguf_writer.h"

/* llama.cpp's token types (tokenizer.ggml.token_type). */
enum {
    HSD_GGUF_TOK_NORMAL = 1,
    HSD_GGUF_TOK_UNKNOWN = 2,
    HSD_GGUF_TOK_CONTROL = 3,
    HSD_GGUF_TOK_USER_DEFINED = 4,
    HSD_GGUF_TOK_UNUSED = 5,
    HSD_GGUF_TOK_BYTE = 6
};

typedef struct hsd_gguf_vocab {
    char model[16]; /* "llama" (SentencePiece-style scores) or "gpt2" (byte-level BPE merges) */
    char pre[32];   /* tokenizer.ggml.pre; empty: none written */
    int32_t n;
    hsd_buf arena; /* token and merge strings */
    size_t *tok_off, *tok_len;
    float *scores; /* NULL: none written */
    int32_t *types;
    size_t n_merges, *merge_off, *merge_len;
    int32_t bos, eos, unk; /* -1: not written */
    int32_t eot;           /* tokenizer.ggml.eot_token_id (the chat end-of-turn token when it
                              is not the EOS, e.g. tokenizer_config's eos_token); -1: none */
    int8_t add_bos, add_eos; /* -1: not written */
    int8_t add_space_prefix; /* SentencePiece's dummy prefix; -1: not written */
    /* chat templates (tokenizer.chat_template, tokenizer.chat_template.NAME): from the GGUF
     * copied, or from the tokenizer_config.json beside a tokenizer.json; names[i] NULL is the
     * default template. malloc'd. */
    int n_tmpl;
    char **tmpl_names, **tmpl_texts;
} hsd_gguf_vocab;

/* The vocabulary of the tokenizer at `path`, padded with unused tokens to n_vocab entries
 * (the model's embedding rows); a tokenizer larger than n_vocab is an error. A GGUF's
 * tokenizer.ggml.* keys are copied; a tokenizer.json goes through
 * hsd_gguf_vocab_from_tokenizer (plus the chat templates of the tokenizer_config.json beside
 * it). */
hsd_status hsd_gguf_vocab_from_file(const char *path, int32_t n_vocab, unsigned flags,
                                    hsd_gguf_vocab *v);
/* flags: HSD_GGUF_VOCAB_* (hsd_tools.h). The vocabulary of a loaded tokenizer, written so that hsd's GGUF tokenizer loader and
 * llama.cpp encode and decode exactly as t does, padded with UNUSED tokens to n_vocab; or
 * HSD_ERR_UNSUPPORTED naming what of t's pipeline a GGUF cannot hold
 * (tokenize/gguf_export.h), or HSD_ERR_INVALID_ARG naming an id past n_vocab. */
hsd_status hsd_gguf_vocab_from_tokenizer(const hsd_tokenizer *t, int32_t n_vocab, unsigned flags,
                                         hsd_gguf_vocab *v);
/* A "llama"-type vocabulary of n_vocab tokens: <unk>, <s>, </s>, the byte tokens <0x00>..
 * <0xFF> as far as they fit, <|endoftext|>, then distinct placeholder pieces. */
hsd_status hsd_gguf_vocab_placeholder(int32_t n_vocab, hsd_gguf_vocab *v);
/* Appends the tokenizer.ggml.* pairs to w. */
void hsd_gguf_vocab_put(const hsd_gguf_vocab *v, hsd_gguf_writer *w);
void hsd_gguf_vocab_free(hsd_gguf_vocab *v);
/* A GGUF holding only the vocabulary (as llama.cpp's ggml-vocab-*.gguf test files do). */
hsd_status hsd_gguf_vocab_write_file(const hsd_gguf_vocab *v, const char *path);

#endif
