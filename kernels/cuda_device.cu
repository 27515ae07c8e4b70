/* Device handle, memory, copies, timers and CUDA graphs of the CUDA backend. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_fp16.h>

#include "kernels/cuda_internal.cuh"

#define HSD_BLAS_WORKSPACE (32u << 20)

extern "C" const char *hsd_cublas_status_str(cublasStatus_t s) {
    switch (s) {
    case CUBLAS_STATUS_SUCCESS:
        return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED:
        return "not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED:
        return "allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE:
        return "invalid value";
    case CUBLAS_STATUS_ARCH_MISMATCH:
        return "architecture mismatch";
    case CUBLAS_STATUS_MAPPING_ERROR:
        return "mapping error";
    case CUBLAS_STATUS_EXECUTION_FAILED:
        return "execution failed";
    case CUBLAS_STATUS_INTERNAL_ERROR:
        return "internal error";
    case CUBLAS_STATUS_NOT_SUPPORTED:
        return "not supported";
    default:
        return "unknown cuBLAS status";
    }
}

#define HSD_STR_(x) #x
#define HSD_STR(x) HSD_STR_(x)

/* Loads cuBLAS (the major version this file was compiled against, then any). */
static hsd_status blas_load(hsd_blas_api *api) {
    /* the loader's search path first, then the toolkit hsd was built against */
    const char *names[3] = {"libcublas.so." HSD_STR(CUBLAS_VER_MAJOR), "libcublas.so",
#ifdef HSD_CUDA_LIBDIR
                            HSD_CUDA_LIBDIR "/libcublas.so." HSD_STR(CUBLAS_VER_MAJOR)
#else
                            NULL
#endif
    };
    for (int i = 0; i < 3 && !api->lib; i++)
        if (names[i]) api->lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!api->lib)
        return hsd_error(HSD_ERR_UNSUPPORTED, "cuBLAS not found (%s): a CUDA device needs it",
                         dlerror());
#define HSD_SYM(field, name)                                                                       \
    if (!(api->field = (decltype(api->field))dlsym(api->lib, name)))                               \
        return hsd_error(HSD_ERR_UNSUPPORTED, "cuBLAS: no symbol %s", name);
    HSD_SYM(create, "cublasCreate_v2")
    HSD_SYM(destroy, "cublasDestroy_v2")
    HSD_SYM(set_stream, "cublasSetStream_v2")
    HSD_SYM(set_workspace, "cublasSetWorkspace_v2")
    HSD_SYM(sgemm, "cublasSgemm_v2")
    HSD_SYM(gemm_ex, "cublasGemmEx")
#undef HSD_SYM
    return HSD_OK;
}

extern "C" bool hsd_cuda_compiled(void) {
    return true;
}

extern "C" int hsd_cuda_device_count(void) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError(); /* clear the sticky "no driver" / "no device" error */
        return 0;
    }
    return n;
}

extern "C" hsd_status hsd_cuda_open(int device, hsd_cuda **out) {
    if (!out) return hsd_error(HSD_ERR_INVALID_ARG, "cuda open: NULL out");
    *out = NULL;
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return hsd_error(HSD_ERR_UNSUPPORTED, "no CUDA device (%s)", cudaGetErrorString(e));
    }
    if (n == 0) return hsd_error(HSD_ERR_UNSUPPORTED, "no CUDA device (device count is 0)");
    if (device < 0 || device >= n)
        return hsd_error(HSD_ERR_INVALID_ARG, "cuda open: device %d of %d", device, n);
    HSD_CU(cudaSetDevice(device));
    hsd_cuda *cu = (hsd_cuda *)calloc(1, sizeof *cu);
    if (!cu) return hsd_error(HSD_ERR_NOMEM, "cuda open: out of memory");
    cu->device = device;
    hsd_status s = HSD_OK;
    cudaDeviceProp prop;
    cudaError_t err = cudaGetDeviceProperties(&prop, device);
    if (err == cudaSuccess) err = cudaStreamCreateWithFlags(&cu->stream, cudaStreamNonBlocking);
    if (err == cudaSuccess) err = cudaEventCreate(&cu->t0);
    if (err == cudaSuccess) err = cudaEventCreate(&cu->t1);
    if (err == cudaSuccess)
        err =
            cudaDeviceGetAttribute(&cu->max_smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
    /* the kernels' static shared memory (at most ~4.3 KB: attention's partial sums and
     * reduction scratch) comes on top of the dynamic part */
    if (err == cudaSuccess) cu->max_smem -= 8192;
    if (err == cudaSuccess) err = hsd_cuda_head_prepare(cu->max_smem);
    if (err == cudaSuccess) err = hsd_cuda_attn_prepare(cu->max_smem);
    if (err == cudaSuccess) err = hsd_cuda_gemm_prepare(cu->max_smem);
    if (err != cudaSuccess) {
        s = hsd_error(HSD_ERR_INTERNAL, "cuda open: %s", cudaGetErrorString(err));
    } else if ((s = blas_load(&cu->api)) == HSD_OK) {
        cublasStatus_t b = cu->api.create(&cu->blas);
        if (b == CUBLAS_STATUS_SUCCESS) b = cu->api.set_stream(cu->blas, cu->stream);
        if (b == CUBLAS_STATUS_SUCCESS &&
            cudaMalloc(&cu->blas_workspace, HSD_BLAS_WORKSPACE) != cudaSuccess) {
            cudaGetLastError();
            cu->blas_workspace = NULL;
            b = CUBLAS_STATUS_ALLOC_FAILED;
        }
        if (b == CUBLAS_STATUS_SUCCESS)
            b = cu->api.set_workspace(cu->blas, cu->blas_workspace, HSD_BLAS_WORKSPACE);
        if (b != CUBLAS_STATUS_SUCCESS)
            s = hsd_error(HSD_ERR_INTERNAL, "cuda open: cuBLAS: %s", hsd_cublas_status_str(b));
    }
    if (s != HSD_OK) {
        hsd_cuda_close(cu);
        return s;
    }
    cu->sms = prop.multiProcessorCount;
    cu->cc_major = prop.major;
    cu->pdl = prop.major >= 9; /* see hsd_cuda_use_pdl */
    snprintf(cu->desc, sizeof cu->desc, "%.200s, sm_%d%d, %.0f GiB", prop.name, prop.major,
             prop.minor, (double)prop.totalGlobalMem / (1024.0 * 1024.0 * 1024.0));
    *out = cu;
    return HSD_OK;
}

extern "C" void hsd_cuda_close(hsd_cuda *cu) {
    if (!cu) return;
    if (cu->blas) cu->api.destroy(cu->blas);
    if (cu->api.lib) dlclose(cu->api.lib);
    if (cu->blas_workspace) cudaFree(cu->blas_workspace);
    if (cu->t0) cudaEventDestroy(cu->t0);
    if (cu->t1) cudaEventDestroy(cu->t1);
    if (cu->stream) cudaStreamDestroy(cu->stream);
    free(cu);
}

extern "C" void hsd_cuda_use_cublas_gemv(hsd_cuda *cu, bool on) {
    if (cu) cu->cublas_gemv = on;
}

extern "C" void hsd_cuda_use_warp_gemm(hsd_cuda *cu, bool on) {
    if (cu) cu->warp_gemm = on;
}

extern "C" void hsd_cuda_use_pdl(hsd_cuda *cu, bool on) {
    if (cu) cu->pdl = on && cu->cc_major >= 9;
}

extern "C" void hsd_cuda_set_mma_variant(hsd_cuda *cu, int variant) {
    if (cu) cu->mma_variant = variant;
}

extern "C" const char *hsd_cuda_device_desc(const hsd_cuda *cu) {
    return cu ? cu->desc : "";
}

extern "C" hsd_status hsd_cuda_sync(hsd_cuda *cu) {
    HSD_CU_NEED(cu, "sync");
    HSD_CU(cudaStreamSynchronize(cu->stream));
    return HSD_OK;
}

extern "C" hsd_status hsd_cuda_alloc(hsd_cuda *cu, size_t bytes, void **d_out) {
    HSD_CU_NEED(cu, "alloc");
    *d_out = NULL;
    cudaError_t e = cudaMalloc(d_out, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        cudaGetLastError();
        *d_out = NULL;
        return hsd_error(e == cudaErrorMemoryAllocation ? HSD_ERR_NOMEM : HSD_ERR_INTERNAL,
                         "cuda alloc of %zu bytes: %s", bytes, cudaGetErrorString(e));
    }
    return HSD_OK;
}

extern "C" void hsd_cuda_free(hsd_cuda *cu, void *d_ptr) {
    (void)cu;
    if (d_ptr) cudaFree(d_ptr);
}

extern "C" hsd_status hsd_cuda_host_alloc(hsd_cuda *cu, size_t bytes, void **out) {
    HSD_CU_NEED(cu, "host_alloc");
    HSD_CU(cudaMallocHost(out, bytes ? bytes : 1));
    return HSD_OK;
}

extern "C" void hsd_cuda_host_free(hsd_cuda *cu, void *p) {
    (void)cu;
    if (p) cudaFreeHost(p);
}

extern "C" hsd_status hsd_cuda_upload(hsd_cuda *cu, void *d_dst, const void *src, size_t bytes) {
    HSD_CU_NEED(cu, "upload");
    if (!bytes) return HSD_OK;
    HSD_CU(cudaMemcpyAsync(d_dst, src, bytes, cudaMemcpyHostToDevice, cu->stream));
    return HSD_OK;
}

extern "C" hsd_status hsd_cuda_download(hsd_cuda *cu, void *dst, const void *d_src, size_t bytes) {
    HSD_CU_NEED(cu, "download");
    if (bytes) HSD_CU(cudaMemcpyAsync(dst, d_src, bytes, cudaMemcpyDeviceToHost, cu->stream));
    HSD_CU(cudaStreamSynchronize(cu->stream));
    return HSD_OK;
}

extern "C" hsd_status hsd_cuda_copy(hsd_cuda *cu, void *d_dst, const void *d_src, size_t bytes) {
    HSD_CU_NEED(cu, "copy");
    if (!bytes) return HSD_OK;
    HSD_CU(cudaMemcpyAsync(d_dst, d_src, bytes, cudaMemcpyDeviceToDevice, cu->stream));
    return HSD_OK;
}

extern "C" hsd_status hsd_cuda_timer_start(hsd_cuda *cu) {
    HSD_CU_NEED(cu, "timer_start");
    HSD_CU(cudaEventRecord(cu->t0, cu->stream));
    return HSD_OK;
}

extern "C" hsd_status hsd_cuda_timer_stop(hsd_cuda *cu, float *ms) {
    HSD_CU_NEED(cu, "timer_stop");
    HSD_CU(cudaEventRecord(cu->t1, cu->stream));
    HSD_CU(cudaEventSynchronize(cu->t1));
    HSD_CU(cudaEventElapsedTime(ms, cu->t0, cu->t1));
    return HSD_OK;
}

/* ---- CUDA graphs ------------------------------------------------------------------- */

struct hsd_cuda_graph {
    cudaGraph_t graph;
    cudaGraphExec_t exec;
};

extern "C" hsd_status hsd_cuda_graph_begin(hsd_cuda *cu) {
    HSD_CU_NEED(cu, "graph_begin");
    /* thread-local mode: other threads' CUDA calls are not caught up in this capture */
    HSD_CU(cudaStreamBeginCapture(cu->stream, cudaStreamCaptureModeThreadLocal));
    return HSD_OK;
}

extern "C" hsd_status hsd_cuda_graph_end(hsd_cuda *cu, hsd_cuda_graph **out) {
    HSD_CU_NEED(cu, "graph_end");
    *out = NULL;
    cudaGraph_t g = NULL;
    HSD_CU(cudaStreamEndCapture(cu->stream, &g));
    hsd_cuda_graph *hg = (hsd_cuda_graph *)calloc(1, sizeof *hg);
    if (!hg) {
        cudaGraphDestroy(g);
        return hsd_error(HSD_ERR_NOMEM, "cuda graph: out of memory");
    }
    hg->graph = g;
    cudaError_t e = cudaGraphInstantiate(&hg->exec, g, 0);
    if (e != cudaSuccess) {
        hsd_cuda_graph_free(hg);
        return hsd_error(HSD_ERR_INTERNAL, "cuda graph instantiate: %s", cudaGetErrorString(e));
    }
    *out = hg;
    return HSD_OK;
}

extern "C" hsd_status hsd_cuda_graph_launch(hsd_cuda *cu, hsd_cuda_graph *g) {
    HSD_CU_NEED(cu, "graph_launch");
    if (!g) return hsd_error(HSD_ERR_INVALID_ARG, "cuda graph_launch: NULL graph");
    HSD_CU(cudaGraphLaunch(g->exec, cu->stream));
    return HSD_OK;
}

extern "C" void hsd_cuda_graph_free(hsd_cuda_graph *g) {
    if (!g) return;
    if (g->exec) cudaGraphExecDestroy(g->exec);
    if (g->graph) cudaGraphDestroy(g->graph);
    free(g);
}
