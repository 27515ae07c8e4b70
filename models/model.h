/* What the engine asks of a loaded model beyond include/hsd.h (library-internal). */
#ifndef HSD_MODELS_MODEL_H
#define HSD_MODELS_MODEL_H

#include <stdint.h>

#include "hsd.h"

/* The id that ends a text in the model's training format, or -1 when the format says none
 * beyond the tokenizer's EOS: 1 for a llama2.c checkpoint, whose training stories are
 * delimited by BOS (llama2.c's run.c stops generating at it). -1 for caller models and NULL. */
int32_t hsd_model_format_eos(const hsd_model *m);

#endif
