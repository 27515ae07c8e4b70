/* --draft-head SPEC for the CLI:
 *   full                 the model's own classifier;
 *   trim:IDS_FILE        the ids listed in IDS_FILE (as written by `hsd trim -o`);
 *   tli[:IDS_FILE]       the drafter's T ∩ D rows (TLI), intersected with IDS_FILE if given;
 *   spec:K[/R][:FILE]    SpecVocab top-K with a router of rank R (default dim/8) built by SVD,
 *                        or read from FILE (safetensors router.w_down / router.w_vocab);
 *   lowrank:R[:FILE]     SlimSpec rank R, SVD-built or read from FILE (lm_head.w_down/w_up).
 * An ids file holds one id per line; '#' starts a comment. */
#ifndef HSD_CLI_HEAD_SPEC_H
#define HSD_CLI_HEAD_SPEC_H

#include <stdbool.h>
#include <stdint.h>

#include "hsd.h"

typedef struct hsd_cli_head {
    hsd_head_params p;
    bool tli;
    int32_t *ids; /* from the ids file (owned) */
    int32_t n_ids;
    char label[96]; /* the spec as given, for tables */
} hsd_cli_head;

/* Parses spec; prints the reason and returns 1 on error. */
int hsd_cli_head_parse(const char *spec, hsd_cli_head *h);
/* Installs the head on `draft`. e (for tli) may be NULL otherwise. calib: a corpus (JSONL
 * {"text"} or plain text) whose first calib_tokens drafter tokens calibrate SVD-built
 * factors, or NULL. Prints the reason and returns 1 on error. */
int hsd_cli_head_apply(const hsd_cli_head *h, hsd_model *draft, const hsd_tokenizer *draft_tok,
                       const hsd_engine *e, const char *calib, int32_t calib_tokens);
void hsd_cli_head_free(hsd_cli_head *h);

/* Reads an ids file; returns 1 (after printing why) on error. */
int hsd_cli_read_ids(const char *path, int32_t **ids, int32_t *n);
/* Loads a corpus: JSONL {"text"} when the first non-blank byte is '{', else the whole file
 * as one text. Returns 1 (after printing why) on error. */
int hsd_cli_load_corpus(const char *path, char ***texts, size_t **lens, size_t *n);
void hsd_cli_free_corpus(char **texts, size_t *lens, size_t n);

#endif
