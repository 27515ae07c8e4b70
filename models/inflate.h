/* Function-preserving inflation of a trained Llama-family model to a bigger shape: the result
 * computes the trained model's logits (up to float rounding) while every matrix has the size
 * of the target shape, so it costs exactly what a model of that shape costs. See inflate.c
 * for the construction and why each piece is exact. */
#ifndef HSD_MODELS_INFLATE_H
#define HSD_MODELS_INFLATE_H

#include "hsd_tools.h"
#include <stddef.h>
#include <stdint.h>

#include "models/synth.h"
#include "models/transformer.h"

/* Loads a llama2.c .bin, GGUF file or safetensors directory as a transformer (CPU, n_ctx
 * capped to the model's context) for inflation or comparison. */
hsd_status hsd_inflate_load(const char *path, hsd_transformer **out);

/* The configuration the inflated model will have (hidden size, FFN, heads, head_dim and
 * layers of `shape`, n_layers > 0 overriding the layer count; vocabulary, context, arch of
 * `src`), or an error naming the first dimension in which the shape is smaller than the
 * model or in which its heads cannot be placed. Nothing is allocated. */
hsd_status hsd_inflate_check(const hsd_transformer *src, const char *shape, int32_t n_layers,
                             hsd_dtype dtype, hsd_tf_config *out_cfg);

/* Builds the inflated model in memory (HuggingFace half-split rope layout, as synth models
 * are): matrices of `dtype`, vectors F32. Free with hsd_synth_free. */
hsd_status hsd_inflate_build(const hsd_transformer *src, const char *shape, int32_t n_layers,
                             hsd_dtype dtype, hsd_synth_model **out);

/* hsd_inflate_file (reads a model, inflates it, writes a GGUF) is public:
 * include/hsd_tools.h. */

#endif
