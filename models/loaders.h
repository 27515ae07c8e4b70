/* Model file loaders; each returns a transformer that owns its file mapping. */
#ifndef HSD_MODELS_LOADERS_H
#define HSD_MODELS_LOADERS_H

#include "models/transformer.h"

hsd_status hsd_llama2c_load(const char *path, const hsd_model_params *params, hsd_transformer **out);
hsd_status hsd_gguf_load(const char *path, const hsd_model_params *params, hsd_transformer **out);
/* `path` is a directory holding config.json and model.safetensors (or a sharded
 * model.safetensors.index.json), or a .safetensors file next to its config.json. */
hsd_status hsd_safetensors_load(const char *path, const hsd_model_params *params, hsd_transformer **out);

#endif
