/* The argument checks of one forward, in one place: the public wrapper (model.c), the CPU
 * transformer (forward.c, for each slot of a batch) and the CUDA model run the same
 * checks with the same messages before anything is computed (a failed forward changes no
 * cache). */
#ifndef HSD_MODELS_FORWARD_CHECK_H
#define HSD_MODELS_FORWARD_CHECK_H

#include <stdbool.h>
#include <stdint.h>

#include "hsd.h"

/* n new tokens (parents: a tree, NULL: a chain) on top of kv_len cached ones; n_rows logits
 * rows (rows NULL: the first n_rows, which must then be 0 or n) into a buffer that exists
 * when has_logits. `who` starts every message ("hsd_model_forward", "forward_batch:
 * sequence 2"). vocab and n_ctx of the model; n_ctx <= 0: no context limit known. */
hsd_status hsd_forward_check(const char *who, const int32_t *tokens, int32_t n,
                             const int32_t *parents, const int32_t *rows, int32_t n_rows,
                             bool has_logits, int32_t vocab, int32_t kv_len, int32_t n_ctx);

#endif
