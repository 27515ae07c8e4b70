/* Random-weight models of real shapes, for loader round trips and speed tests. Weights are
 * kept in HuggingFace layout (half-split rope); writers convert to each file format. */
#ifndef HSD_MODELS_SYNTH_H
#define HSD_MODELS_SYNTH_H

#include "hsd_tools.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "models/transformer.h"

typedef struct hsd_synth_tensor {
    char name[96]; /* HuggingFace name */
    hsd_tkind kind;
    int32_t layer;
    hsd_dtype type;
    int32_t n_dims;
    int64_t shape[2];
    void *data;
    size_t nbytes;
} hsd_synth_tensor;

typedef struct hsd_synth_model {
    char shape_name[32];
    hsd_tf_config cfg;
    bool tied;
    hsd_synth_tensor *t;
    int32_t n;
} hsd_synth_model;

/* Known shapes: see hsd_synth_shape_list (tiny-ARCH test shapes, real shapes per architecture). */
hsd_status hsd_synth_shape(const char *name, hsd_tf_config *cfg, bool *tied);
hsd_status hsd_synth_create(const char *shape, hsd_dtype dtype, uint64_t seed, hsd_synth_model **out);
/* The same with embedding / LM-head rows for a tokenizer of tokenizer_ids ids (0: the
 * shape's rows): see hsd_synth_params.tokenizer_ids. */
hsd_status hsd_synth_create_vocab(const char *shape, hsd_dtype dtype, uint64_t seed,
                                  int32_t tokenizer_ids, hsd_synth_model **out);
/* The in-memory model (borrows the synth weights: free the transformer first). */
hsd_status hsd_synth_to_transformer(const hsd_synth_model *m, const hsd_model_params *p,
                                    hsd_transformer **out);
/* hsd_synth_write_gguf_tok with the placeholder vocabulary. */
hsd_status hsd_synth_write_gguf(const hsd_synth_model *m, const char *path);
/* The storage type of a public hsd_ftype (INVALID_ARG outside the enum). */
hsd_status hsd_synth_ftype(hsd_ftype type, hsd_dtype *out);

/* Public (include/hsd_tools.h): hsd_synth_shape_list, hsd_synth_init, hsd_synth_free,
 * hsd_synth_weight_bytes, hsd_synth_write_safetensors, hsd_synth_write_gguf_tok. */

#endif
