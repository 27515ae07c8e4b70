/* SentencePiece-style BPE by piece scores (llama2.c run.c `encode`, llama.cpp's SPM session):
 * the text is split into UTF-8 characters, then the adjacent pair whose concatenation is a
 * vocabulary string with the highest score is merged, leftmost first on ties, until no pair
 * is in the vocabulary. Characters that are not tokens become byte tokens <0xNN> when the
 * vocabulary has them, else the unknown id. */
#ifndef HSD_TOKENIZE_SPM_H
#define HSD_TOKENIZE_SPM_H

#include <stdbool.h>

#include "tokenize/tokenizer.h"

typedef struct hsd_spm_opts {
    /* The vocabulary spells a space as U+2581 "▁" (SentencePiece, GGUF). llama2.c's
     * tokenizer.bin stores real spaces, so there the text is looked up as is. */
    bool escape_spaces;
} hsd_spm_opts;

/* Installs the SPM model on t. Vocabulary strings must already be stored with
 * hsd_tok_set_token; `scores` has t->n_ids entries and is copied. Byte tokens are found by
 * their "<0xNN>" strings. The dummy prefix (a space before each piece of text) is added when
 * t->spm_add_dummy_prefix is set. */
hsd_status hsd_spm_build(hsd_tokenizer *t, const float *scores, const hsd_spm_opts *o);

/* The scores of t's SPM model (t->model.type must be HSD_MODEL_SPM), one per id, and whether
 * its vocabulary spells spaces as "▁" (else as real spaces, llama2.c's tokenizer.bin). */
const float *hsd_spm_scores(const hsd_tokenizer *t, bool *escape_spaces);

/* Parses "<0xNN>" (exactly six bytes, two hex digits); returns the byte or -1. */
int hsd_spm_byte_token(const char *s, size_t n);

#endif
