/* Model file loaders; each returns a transformer that owns its file mapping. */
#ifndef HSD_MODELS_LOADERS_H
#define HSD_MODELS_LOADERS_H

#include "models/transformer.h"

hsd_status hsd_llama2c_load(const char *path, const hsd_model_params *params, hsd_transformer **out);
/* llama.cpp's name of a tensor ("blk.3.attn_q.weight"), written into buf when per layer. */
const char *hsd_gguf_tensor_name(hsd_tkind kind, int32_t layer, char *buf, size_t cap);
hsd_status hsd_gguf_load(const char *path, const hsd_model_params *params, hsd_transformer **out);
/* `path` is a directory holding config.json and model.safetensors (or a sharded
 * model.safetensors.index.json), or a .safetensors file next to its config.json. */
hsd_status hsd_safetensors_load(const char *path, const hsd_model_params *params, hsd_transformer **out);

#endif
