/* The CUDA backend of a transformer: the same hsd_model_iface as the CPU path, with the
 * weights, KV cache and activations on the device. Compiled in every build; without CUDA
 * (or without a device) creation reports HSD_ERR_UNSUPPORTED and the caller keeps the CPU
 * model. */
#ifndef HSD_MODELS_CUDA_MODEL_H
#define HSD_MODELS_CUDA_MODEL_H

#include <stddef.h>

#include "hsd.h"
#include "models/transformer.h"

/* Uploads tf's weights (converted to the type params->device_weights picks) and allocates
 * the device KV cache of tf's context. On success iface owns the device model (tf is left to
 * the caller, who may free it) and desc receives a one-line description. No usable device →
 * HSD_ERR_UNSUPPORTED ("no CUDA device (...)" or "... built without CUDA"). */
hsd_status hsd_cuda_model_create(const hsd_transformer *tf, const hsd_model_params *params,
                                 hsd_model_iface *iface, char *desc, size_t desc_cap);

/* The device type AUTO and the explicit choices give for weights stored as `stored` in a
 * model of width dim (see hsd_ftype). */
hsd_dtype hsd_cuda_model_weight_type(hsd_ftype choice, hsd_dtype stored, int32_t dim);

#endif
