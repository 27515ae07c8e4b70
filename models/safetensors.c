#include "lib/error.h"
#include "models/loaders.h"
hsd_status hsd_safetensors_load(const char *path, const hsd_model_params *params, hsd_transformer **out) {
    (void)params; *out = NULL;
    return hsd_error(HSD_ERR_UNSUPPORTED, "%s: safetensors TODO", path);
}
