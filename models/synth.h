/* Random-weight models of real shapes, for loader round trips and speed tests. Weights are
 * kept in HuggingFace layout (half-split rope); writers convert to each file format. */
#ifndef HSD_MODELS_SYNTH_H
#define HSD_MODELS_SYNTH_H

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

/* Known shapes: "tiny", "tiny-qwen2", "llama-3.2-1b", "qwen2.5-0.5b", "smollm-135m",
 * "drafter-head-152k". */
hsd_status hsd_synth_shape(const char *name, hsd_tf_config *cfg, bool *tied);
/* Writes the list of shape names, one per line, into buf. */
const char *hsd_synth_shape_list(void);
hsd_status hsd_synth_create(const char *shape, hsd_dtype dtype, uint64_t seed, hsd_synth_model **out);
void hsd_synth_free(hsd_synth_model *m);
/* The in-memory model (borrows the synth weights: free the transformer first). */
hsd_status hsd_synth_to_transformer(const hsd_synth_model *m, const hsd_model_params *p,
                                    hsd_transformer **out);
/* dir/config.json + dir/model.safetensors (F32, F16, BF16). */
hsd_status hsd_synth_write_safetensors(const hsd_synth_model *m, const char *dir);
/* One GGUF v3 file that llama.cpp loads, with the tokenizer at `tokenizer` (GGUF, llama2.c
 * tokenizer.bin or BPE tokenizer.json; its vocabulary may not exceed the model's) in its
 * metadata, or a placeholder vocabulary when `tokenizer` is NULL. */
hsd_status hsd_synth_write_gguf_tok(const hsd_synth_model *m, const char *path, const char *tokenizer);
hsd_status hsd_synth_write_gguf(const hsd_synth_model *m, const char *path);

#endif
