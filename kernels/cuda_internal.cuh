/* Shared by the kernels/cuda_*.cu files: the device handle and the macros that turn CUDA and
 * cuBLAS errors into an hsd_status naming the call, the source line and CUDA's reason. */
#ifndef HSD_KERNELS_CUDA_INTERNAL_CUH
#define HSD_KERNELS_CUDA_INTERNAL_CUH

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "kernels/cuda_ops.h"
extern "C" {
#include "lib/base/error.h" /* C linkage: the header has no C++ guards */
}

/* cuBLAS is opened with dlopen when a device is opened, not linked: its libraries (~600 MB)
 * would otherwise be mapped by every process that links hsd, device or not (measured: +1.5 s
 * per CLI run on a loaded machine). The entry points used, typed from cublas_v2.h. */
typedef struct hsd_blas_api {
    void *lib;
    decltype(&cublasCreate_v2) create;
    decltype(&cublasDestroy_v2) destroy;
    decltype(&cublasSetStream_v2) set_stream;
    decltype(&cublasSetWorkspace_v2) set_workspace;
    decltype(&cublasSgemm_v2) sgemm;
    /* spelled out: C++ sees an overloaded cublasGemmEx */
    cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                              const void *, const void *, cudaDataType, int, const void *,
                              cudaDataType, int, const void *, void *, cudaDataType, int,
                              cublasComputeType_t, cublasGemmAlgo_t);
} hsd_blas_api;

struct hsd_cuda {
    int device;
    cudaStream_t stream;
    hsd_blas_api api;
    cublasHandle_t blas;
    cudaEvent_t t0, t1;
    void *blas_workspace; /* owned, so cuBLAS allocates nothing while a graph is captured */
    int sms;              /* multiprocessors, for grid sizes */
    int max_smem;         /* opt-in dynamic shared memory per block, set up for the kernels
                           * at open (not at launch: a launch may be inside a graph capture) */
    bool cublas_gemv;     /* every product through cuBLAS (per-n algorithms: not batch-invariant) */
    bool warp_gemm;       /* n = 2..8 products through the warp-per-row kernel (fp32 x; not
                           * batch-invariant either), for comparison */
    bool pdl;             /* programmatic dependent launch of the products (sm_90+) */
    int cc_major;         /* compute capability */
    int mma_variant;      /* 0: the tensor-core product's shape chosen per matrix */
    char desc[320];
};

/* Programmatic dependent launch (sm_90+): a kernel that precedes a product lets it start early
 * (hsd_pdl_trigger), and a product waits for its input (hsd_pdl_wait) after it has fetched the
 * weights it does not need to wait for. Both are no-ops without the launch attribute. */
__device__ __forceinline__ void hsd_pdl_trigger(void) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ void hsd_pdl_wait(void) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/* KV cache elements (float, __half, __nv_bfloat16): stored rounded to nearest even (as
 * hsd_attn_store on the CPU), read as fp32. */
__device__ __forceinline__ void hsd_kv_put(float *p, float x) { *p = x; }
__device__ __forceinline__ void hsd_kv_put(__half *p, float x) { *p = __float2half_rn(x); }
__device__ __forceinline__ void hsd_kv_put(__nv_bfloat16 *p, float x) { *p = __float2bfloat16_rn(x); }
__device__ __forceinline__ float hsd_kv_get(const float *p) { return __ldg(p); }
__device__ __forceinline__ float hsd_kv_get(const __half *p) { return __half2float(__ldg(p)); }
__device__ __forceinline__ float hsd_kv_get(const __nv_bfloat16 *p) { return __bfloat162float(__ldg(p)); }
/* Eight consecutive elements from a 16-byte aligned address (the row of a head whose
 * dimension is a multiple of 8), as fp32. */
__device__ __forceinline__ void hsd_kv_get8(const float *p, float *o) {
    const float4 a = __ldg((const float4 *)p), b = __ldg((const float4 *)p + 1);
    o[0] = a.x, o[1] = a.y, o[2] = a.z, o[3] = a.w, o[4] = b.x, o[5] = b.y, o[6] = b.z, o[7] = b.w;
}
__device__ __forceinline__ void hsd_kv_get8(const __half *p, float *o) {
    const uint4 u = __ldg((const uint4 *)p);
    const __half2 *h = (const __half2 *)&u;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const float2 f = __half22float2(h[i]);
        o[2 * i] = f.x, o[2 * i + 1] = f.y;
    }
}
__device__ __forceinline__ void hsd_kv_get8(const __nv_bfloat16 *p, float *o) {
    const uint4 u = __ldg((const uint4 *)p);
    const __nv_bfloat162 *h = (const __nv_bfloat162 *)&u;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const float2 f = __bfloat1622float2(h[i]);
        o[2 * i] = f.x, o[2 * i + 1] = f.y;
    }
}

extern "C" const char *hsd_cublas_status_str(cublasStatus_t s);
/* Let the kernels that size shared memory at run time use up to `bytes` of it. */
cudaError_t hsd_cuda_head_prepare(int bytes);
cudaError_t hsd_cuda_attn_prepare(int bytes);
cudaError_t hsd_cuda_gemm_prepare(int bytes);
/* The several-token warp-per-row product (2 <= n <= 8, n*cols floats in shared memory). */
bool hsd_cuda_rows_gemm_fits(const hsd_cuda *cu, int32_t n, int32_t cols);
hsd_status hsd_cuda_rows_gemm(hsd_cuda *cu, float *d_out, int32_t ld_out, const float *d_x,
                              int32_t n, const hsd_mat *w, bool accumulate);
/* The indexed-head kernel, optionally adding into out (the GEMV path of hsd_cuda_matmul). */
hsd_status hsd_cuda_head_launch(hsd_cuda *cu, float *d_out, const hsd_mat *U, const float *d_h,
                                const int32_t *d_idx, int32_t k, bool accumulate);
/* The same over n vectors (h + t·cols into out + t·ld_out), each summed as a lone one is. */
hsd_status hsd_cuda_head_launch_n(hsd_cuda *cu, float *d_out, int32_t ld_out, const hsd_mat *U,
                                  const float *d_h, int32_t n, const int32_t *d_idx, int32_t k,
                                  bool accumulate);
/* The batch-invariant tensor-core product (kernels/cuda_mma.cu): F16/BF16 weights whose
 * width is a multiple of 8. */
bool hsd_cuda_mma_fits(const hsd_mat *w);
hsd_status hsd_cuda_mma_gemm(hsd_cuda *cu, float *d_out, int32_t ld_out, const float *d_x,
                             int32_t n, const hsd_mat *w, bool accumulate);

#define HSD_CU(call)                                                                               \
    do {                                                                                           \
        cudaError_t hsd_cu_err_ = (call);                                                          \
        if (hsd_cu_err_ != cudaSuccess)                                                            \
            return hsd_error(HSD_ERR_INTERNAL, "CUDA %s at %s:%d: %s", #call, __FILE__, __LINE__,  \
                             cudaGetErrorString(hsd_cu_err_));                                     \
    } while (0)

#define HSD_BLAS(call)                                                                             \
    do {                                                                                           \
        cublasStatus_t hsd_blas_err_ = (call);                                                     \
        if (hsd_blas_err_ != CUBLAS_STATUS_SUCCESS)                                                \
            return hsd_error(HSD_ERR_INTERNAL, "cuBLAS %s at %s:%d: %s", #call, __FILE__,          \
                             __LINE__, hsd_cublas_status_str(hsd_blas_err_));                      \
    } while (0)

/* After a kernel launch: a bad configuration shows up here, not at the next sync. */
#define HSD_CU_LAUNCHED(name) HSD_CU(cudaPeekAtLastError())

#define HSD_CU_NEED(cu, what)                                                                      \
    do {                                                                                           \
        if (!(cu)) return hsd_error(HSD_ERR_INVALID_ARG, "cuda %s: NULL device handle", what);     \
    } while (0)

/* Loads element i of a row stored as F32, F16 or BF16, widened to fp32. */
__device__ __forceinline__ float hsd_dev_elem(hsd_dtype t, const void *row, int64_t i) {
    if (t == HSD_DT_F32) return ((const float *)row)[i];
    unsigned short h = ((const unsigned short *)row)[i];
    if (t == HSD_DT_BF16) return __uint_as_float((unsigned)h << 16);
    return __half2float(__ushort_as_half(h));
}

static inline unsigned hsd_blocks(int64_t n, int threads) {
    return (unsigned)((n + threads - 1) / threads);
}

#endif
