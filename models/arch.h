/* The architectures hsd runs, by name: which options of the decoder layer (transformer.h's
 * hsd_tf_config) each one turns on. Loaders read the shape from their file, then call
 * hsd_arch_init with the architecture's name (GGUF general.architecture, or the HF
 * config.json model_type mapped by hsd_arch_from_hf). */
#ifndef HSD_MODELS_ARCH_H
#define HSD_MODELS_ARCH_H

#include <stdbool.h>

#include "models/transformer.h"

/* Sets c->arch and the per-architecture fields of c (its shape must be filled already: the
 * Gemma embedding scale and query scale depend on it). gguf: the weights come from a GGUF
 * (llama.cpp's converter permuted llama's q/k rows for interleaved rope and added 1 to
 * Gemma's norm weights). An unknown name is HSD_ERR_UNSUPPORTED naming it and `src`. */
hsd_status hsd_arch_init(hsd_tf_config *c, const char *arch, bool gguf, const char *src);
/* "llama, mistral, smollm, qwen2, qwen3, gemma3, phi3" */
const char *hsd_arch_list(void);
/* The architecture of a HF config.json (its model_type, or architectures[0] when that is
 * NULL), or NULL when hsd has none. */
const char *hsd_arch_from_hf(const char *model_type, const char *hf_class);
/* The HF names written to a synth config.json. */
const char *hsd_arch_hf_model_type(const char *arch);
const char *hsd_arch_hf_class(const char *arch);
/* llama.cpp's general.architecture for it (Mistral and SmolLM GGUFs say "llama"). */
const char *hsd_arch_gguf_name(const char *arch);
/* Whether layer l attends through the sliding window. */
bool hsd_arch_layer_slides(const hsd_tf_config *c, int32_t layer);

#endif
