/* --draft-head SPEC for the CLI: the spec is parsed and the head built by the library
 * (hsd_model_set_head_spec in include/hsd.h, which lists the forms); the CLI only adds
 * calibration tokens read from a corpus file. */
#ifndef HSD_CLI_HEAD_SPEC_H
#define HSD_CLI_HEAD_SPEC_H

#include <stdbool.h>
#include <stdint.h>

#include "hsd.h"

/* Calibration ids: the first n_max drafter tokens of a corpus (JSONL {"text"} or plain
 * text), BOS before each text. Returns 1 (after printing why) on error. */
int hsd_cli_calib_ids(const char *path, const hsd_tokenizer *tok, int32_t n_max, int32_t **out,
                      int32_t *n);
/* Installs `spec` on draft (e: for tli, may be NULL otherwise; calib: a corpus or NULL,
 * calib_tokens: how many of its tokens, 0 = 4096). Prints "hsd WHO: ..." and returns 1 on
 * error. */
int hsd_cli_head_apply(const char *who, const char *spec, hsd_model *draft,
                       const hsd_tokenizer *draft_tok, hsd_engine *e, const char *calib,
                       int32_t calib_tokens);
/* Whether the spec builds factors by SVD (spec: or lowrank: without a FILE): those are worth
 * saving once and reading back. */
bool hsd_cli_head_is_svd(const char *spec);

#endif
