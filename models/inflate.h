/* Function-preserving inflation of a trained Llama-family model to a bigger shape: the result
 * computes the trained model's logits (up to float rounding) while every matrix has the size
 * of the target shape, so it costs exactly what a model of that shape costs. See inflate.c
 * for the construction and why each piece is exact. */
#ifndef HSD_MODELS_INFLATE_H
#define HSD_MODELS_INFLATE_H

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

/* Reads `in`, inflates it and writes a GGUF to `out_path` through `out_path`.tmp + rename:
 * on any error no file is left at either name (an existing out_path is kept). The tokenizer
 * metadata comes from `tokenizer` (GGUF, llama2.c tokenizer.bin or tokenizer.json), else from
 * `in` when it is a GGUF, else a placeholder vocabulary. *bytes (may be NULL) receives the
 * weight bytes written. */
hsd_status hsd_inflate_file(const char *in, const char *tokenizer, const char *shape,
                            int32_t n_layers, hsd_dtype dtype, const char *out_path,
                            hsd_tf_config *out_cfg, size_t *bytes);

#endif
