/* How a loaded tokenizer is written as a GGUF vocabulary (tokenizer.ggml.*) that both hsd's
 * GGUF loader (tokenize/gguf_vocab.c) and llama.cpp read back into the same encoder, or why
 * it cannot be: the models/ GGUF writer builds the metadata from this plan. */
#ifndef HSD_TOKENIZE_GGUF_EXPORT_H
#define HSD_TOKENIZE_GGUF_EXPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "tokenize/tokenizer.h"

/* llama.cpp's token types (tokenizer.ggml.token_type) */
enum {
    HSD_TOK_GGUF_NORMAL = 1,
    HSD_TOK_GGUF_UNKNOWN = 2,
    HSD_TOK_GGUF_CONTROL = 3,
    HSD_TOK_GGUF_USER_DEFINED = 4,
    HSD_TOK_GGUF_UNUSED = 5,
    HSD_TOK_GGUF_BYTE = 6
};

typedef struct hsd_tok_gguf {
    bool spm;                 /* "llama" (SentencePiece scores); false: "gpt2" (byte-level merges) */
    const hsd_gguf_pre *pre;  /* gpt2: tokenizer.ggml.pre */
    bool add_space_prefix;    /* spm: the dummy "▁" in front of the text */
    bool add_bos, add_eos;    /* the post-processor's one id before / after the text */
    int32_t bos, eos, unk;    /* -1: none */
} hsd_tok_gguf;

/* flags: HSD_GGUF_VOCAB_DROP_NORMALIZER (hsd_tools.h) plans a byte-level BPE without its
 * normalizer instead of refusing it. The plan for t, or HSD_ERR_UNSUPPORTED with a message naming the first stage of t's
 * pipeline (normalizer, pre-tokenizer, model option, decoder, added token,
 * post-processor) that no GGUF vocabulary holds. */
hsd_status hsd_tok_gguf_plan(const hsd_tokenizer *t, unsigned flags, hsd_tok_gguf *g);
/* The token type of id under plan g: ids no token has are UNUSED. */
int32_t hsd_tok_gguf_token_type(const hsd_tokenizer *t, const hsd_tok_gguf *g, int32_t id);

#endif
