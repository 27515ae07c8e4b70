/*
 * hsd — heterogeneous speculative decoding.
 *
 * The core public C API: tokenizer, model, engine, draft heads, running batch, chat templates,
 * proposer. The tools (analyses, synth, inflate, bench helpers) are in include/hsd_tools.h,
 * a less stable surface this header does not include. docs/API.md states the ABI policy.
 * Conventions (after llama.h; zstd for errors and a growing ABI):
 *   - every object is an opaque handle created by a *_load / *_init function and released by
 *     the matching *_free function (NULL is accepted by every *_free);
 *   - one rule for freeing: what the library allocates for the caller is released by its
 *     type's *_free, or by hsd_free for a plain buffer; never by plain free;
 *   - every params struct (and hsd_model_iface, and every struct passed as an array) starts
 *     with `size_t size`, set by its *_default_params() (or the documented init macro); the
 *     library reads min(caller's size, its own) bytes and defaults the rest, so structs grow
 *     at the end without breaking older callers;
 *   - functions that can fail return an hsd_status; on failure hsd_last_error() returns a
 *     message naming what went wrong and where (file, field, byte offset). The message is
 *     thread-local and stays valid until the next failing call on the same thread;
 *   - the library never prints, exits or aborts;
 *   - functions that return a value instead of a status (getters) return a documented neutral
 *     value (0, -1, NULL, "" or false) for a NULL handle or an out-of-range argument;
 *   - global state: only the optional log callback (hsd_log_set). Everything else lives in
 *     handles, in thread-local storage (the last error, per-thread tokenizer scratch, freed at
 *     thread exit) or in immutable tables built once on first use (Unicode ranges);
 *   - "Thread-safe" below means any number of threads may call the function at once, also on
 *     the same handle; "not thread-safe per handle" means at most one thread at a time may use
 *     that handle (different handles are independent).
 * Only symbols starting with hsd_ are exported from libhsd.so (SONAME libhsd.so.<major>).
 */
#ifndef HSD_H
#define HSD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Marks the exported functions: the library is built with -fvisibility=hidden, so anything
 * without HSD_API stays internal to libhsd.so. */
#if defined(__GNUC__)
#define HSD_API __attribute__((visibility("default")))
#else
#define HSD_API
#endif

/* Must equal project(VERSION) in CMakeLists.txt (checked by tests/test_api_abi.c). */
#define HSD_VERSION_MAJOR 1
#define HSD_VERSION_MINOR 0
#define HSD_VERSION_PATCH 0
#define HSD_VERSION_STR_(x) #x
#define HSD_VERSION_STR(a, b, c) HSD_VERSION_STR_(a) "." HSD_VERSION_STR_(b) "." HSD_VERSION_STR_(c)
/* "MAJOR.MINOR.PATCH" of the header; hsd_version() gives the library's, to compare at run time. */
#define HSD_VERSION_STRING HSD_VERSION_STR(HSD_VERSION_MAJOR, HSD_VERSION_MINOR, HSD_VERSION_PATCH)
/* One integer for comparisons: MAJOR * 10000 + MINOR * 100 + PATCH. */
#define HSD_VERSION_NUMBER (HSD_VERSION_MAJOR * 10000 + HSD_VERSION_MINOR * 100 + HSD_VERSION_PATCH)

typedef enum hsd_status {
    HSD_OK = 0,
    HSD_ERR_INVALID_ARG = 1,  /* NULL handle, out-of-range argument */
    HSD_ERR_IO = 2,           /* file missing or unreadable */
    HSD_ERR_PARSE = 3,        /* malformed file (JSON syntax, truncated binary, bad magic) */
    HSD_ERR_UNSUPPORTED = 4,  /* well-formed but uses a feature hsd does not implement */
    HSD_ERR_INVALID_UTF8 = 5, /* input text is not valid UTF-8 */
    HSD_ERR_OUT_OF_RANGE = 6, /* token id outside the vocabulary, cache position, full context */
    HSD_ERR_NOMEM = 7,
    HSD_ERR_BUFFER_TOO_SMALL = 8, /* output did not fit; the needed size is reported */
    HSD_ERR_INTERNAL = 9,
} hsd_status;

/* Message of the last failure on this thread ("" if none). Owned by the library (thread-local
 * buffer): valid until the next failing hsd call on this thread. Thread-safe. */
HSD_API const char *hsd_last_error(void);
/* Short constant name of a status, e.g. "HSD_ERR_PARSE"; "HSD_ERR_UNKNOWN" for a value that
 * is not an hsd_status. Static string. Thread-safe. */
HSD_API const char *hsd_status_str(hsd_status s);
/* The library's version, "MAJOR.MINOR.PATCH" (equal to HSD_VERSION_STRING of the header it was
 * built with). Static string. Thread-safe. */
HSD_API const char *hsd_version(void);

/* sizeof the library's own struct `name` ("hsd_model_params", "hsd_gen_result", ...: every
 * size-prefixed struct, the result and statistics structs, and the tools' params), 0 for a
 * name it does not know or NULL. A binding that mirrors structs (bindings/python) compares
 * its layouts with these at load and refuses a library that differs. Thread-safe. */
HSD_API size_t hsd_struct_size(const char *name);

/* Optional log callback: the library never prints; notices such as "CUDA backend not used
 * (<why>); using CPU" are passed to fn (NULL = discard, the default). The only global state hsd keeps. Set
 * it before other calls; it may be called from any thread that calls into hsd. */
typedef enum hsd_log_level { HSD_LOG_DEBUG = 0, HSD_LOG_INFO, HSD_LOG_WARN, HSD_LOG_ERROR } hsd_log_level;
typedef void (*hsd_log_fn)(hsd_log_level level, const char *msg, void *user);
/* `msg` passed to fn is valid only during the call. `user` is borrowed and passed back as is.
 * Thread-safe (the pointer pair is swapped atomically), but a callback that is being replaced
 * may still receive one last message from another thread. */
HSD_API void hsd_log_set(hsd_log_fn fn, void *user);

/* Frees memory that an hsd_* function allocated for the caller (e.g. *_alloc outputs).
 * NULL is a no-op. Thread-safe. */
HSD_API void hsd_free(void *p);

/* ------------------------------------------------------------------------------------
 * Tokenizers
 *
 * A loaded tokenizer is immutable and may be shared by any number of threads.
 * ---------------------------------------------------------------------------------- */
typedef struct hsd_tokenizer hsd_tokenizer;

typedef enum hsd_tokenizer_format {
    HSD_TOKENIZER_AUTO = 0,     /* detect from content: '{' → HF JSON, "GGUF" → GGUF, else .bin */
    HSD_TOKENIZER_HF_JSON = 1,  /* HuggingFace tokenizer.json */
    HSD_TOKENIZER_LLAMA2C = 2,  /* llama2.c tokenizer.bin */
    HSD_TOKENIZER_GGUF = 3,     /* GGUF file (tokenizer.ggml.* metadata) */
} hsd_tokenizer_format;

/* Loads a tokenizer file (format detected from content, as HSD_TOKENIZER_AUTO). On success
 * *out is a new handle the caller owns (release with hsd_tokenizer_free); on failure *out is
 * NULL. Errors: INVALID_ARG (NULL path/out), IO, PARSE, UNSUPPORTED. Thread-safe. */
HSD_API hsd_status hsd_tokenizer_load_file(const char *path, hsd_tokenizer **out);
/* Same from memory. `name` is used in error messages only (may be NULL). The bytes are
 * borrowed for the call only (copied as needed), so the caller may free them afterwards.
 * Errors also: INVALID_ARG for data NULL with size > 0 or a format outside the enum. */
HSD_API hsd_status hsd_tokenizer_load_memory(const void *data, size_t size,
                                             hsd_tokenizer_format format, const char *name,
                                             hsd_tokenizer **out);
/* Releases the tokenizer and everything it owns (strings returned by the getters below).
 * NULL is a no-op. No other thread may be using it. */
HSD_API void hsd_tokenizer_free(hsd_tokenizer *tok);

/* Encodes `len` bytes of UTF-8 text. With add_special the post-processor's special tokens are
 * added (HF add_special_tokens=true). Writes up to `cap` ids; *n_ids receives the number of
 * ids produced. If cap is too small, returns HSD_ERR_BUFFER_TOO_SMALL and *n_ids is the size
 * needed. Invalid UTF-8 → HSD_ERR_INVALID_UTF8 naming the byte offset. */
/* `ids` is the caller's buffer (may be NULL when cap is 0, to ask for the size). Errors:
 * INVALID_ARG (NULL tok/n_ids, text NULL with len > 0, ids NULL with cap > 0), INVALID_UTF8,
 * BUFFER_TOO_SMALL. Thread-safe (also on the same tokenizer). */
HSD_API hsd_status hsd_tokenizer_encode(const hsd_tokenizer *tok, const char *text, size_t len,
                                        bool add_special, int32_t *ids, size_t cap, size_t *n_ids);
/* Same, allocating: on success the caller owns *ids (release with hsd_free; it may be NULL
 * when *n_ids is 0). On failure *ids is NULL. Thread-safe. */
HSD_API hsd_status hsd_tokenizer_encode_alloc(const hsd_tokenizer *tok, const char *text,
                                              size_t len, bool add_special, int32_t **ids,
                                              size_t *n_ids);

/* Decodes ids to text exactly as HF tokenizers' decode(ids, skip_special_tokens). The text is
 * NUL-terminated and *len (if not NULL) gets its length; release with hsd_free. Byte tokens
 * that do not form valid UTF-8 decode to U+FFFD as HF does. */
/* Errors: INVALID_ARG (NULL tok/text, ids NULL with n_ids > 0), OUT_OF_RANGE (an id outside
 * the vocabulary). On failure *text is NULL. Thread-safe. */
HSD_API hsd_status hsd_tokenizer_decode_alloc(const hsd_tokenizer *tok, const int32_t *ids,
                                              size_t n_ids, bool skip_special, char **text,
                                              size_t *len);

/* The getters below are thread-safe, allocate nothing, and return 0 / -1 / NULL / false for a
 * NULL tokenizer as stated. */
/* Number of ids (model vocabulary plus added tokens; the largest id + 1); 0 for NULL. */
HSD_API int32_t hsd_tokenizer_vocab_size(const hsd_tokenizer *tok);
/* The token's string as stored in the vocabulary (e.g. "Ġhello", "▁the", "<0x41>"), or NULL
 * for an id that is out of range or unused. Owned by the tokenizer. */
HSD_API const char *hsd_tokenizer_id_to_token(const hsd_tokenizer *tok, int32_t id);
/* Id of a vocabulary string (NUL-terminated), or -1 (also for NULL arguments). */
HSD_API int32_t hsd_tokenizer_token_to_id(const hsd_tokenizer *tok, const char *token);
/* Surface bytes: what the token contributes to decoded text (byte-level escapes undone,
 * "▁" as space, "<0xNN>" as the byte, WordPiece "##" removed). Not NUL-terminated; *len gets
 * the length. NULL for out-of-range ids. Owned by the tokenizer. Vocabularies of different
 * tokenizers are intersected by these bytes. */
HSD_API const uint8_t *hsd_tokenizer_token_bytes(const hsd_tokenizer *tok, int32_t id, size_t *len);
/* Whether id is a special (control) token; false for NULL or an out-of-range id. */
HSD_API bool hsd_tokenizer_is_special(const hsd_tokenizer *tok, int32_t id);
/* Special ids, -1 when the tokenizer has none (or is NULL). */
HSD_API int32_t hsd_tokenizer_bos_id(const hsd_tokenizer *tok);
HSD_API int32_t hsd_tokenizer_eos_id(const hsd_tokenizer *tok);
HSD_API int32_t hsd_tokenizer_unk_id(const hsd_tokenizer *tok);

/* ====================================================================================
 * Models
 *
 * A model evaluates new tokens on top of the KV cache of its current sequence slot (n_seq
 * slots, hsd_model_seq_select) and returns next-token logits. The
 * decoding engine sees only this interface, so a caller can plug its own model through
 * hsd_model_iface. A model is NOT thread-safe: one forward at a time per handle.
 *
 * Formats read by hsd_model_load (detected from content):
 *   - llama2.c legacy checkpoints (fp32, "version 0" header of 7 int32);
 *   - GGUF (architectures llama, mistral, smollm, qwen2, qwen3, gemma3, phi3; tensor types
 *     F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K..Q6_K — docs/API.md lists them);
 *   - HuggingFace safetensors + config.json (the *ForCausalLM classes of the same
 *     architectures; F32, F16, BF16); `path` is the model directory or its .safetensors file.
 * Weights are memory-mapped where the format allows (all three formats do).
 * ==================================================================================== */
typedef struct hsd_model hsd_model;

/* Where a loaded model runs. AUTO (the default) uses the first CUDA device when the library
 * was built with CUDA and a device is present. With no device, AUTO and CUDA both fall back
 * to the CPU and send the notice "CUDA backend not used (<why>); using CPU" (HSD_LOG_INFO) to the log
 * callback: the model works either way, and hsd_model_backend tells which one it got.
 * The library reads no environment: the CLI maps HSD_BACKEND=cpu|cuda onto
 * hsd_model_params.backend (docs/CLI.md). */
typedef enum hsd_backend {
    HSD_BACKEND_AUTO = 0,
    HSD_BACKEND_CPU = 1,
    HSD_BACKEND_CUDA = 2,
} hsd_backend;

/* Storage type of weights: one enum for every place hsd chooses one.
 *   hsd_model_params.device_weights: the weight matrices on the CUDA device (the CPU keeps the
 *     file's types). AUTO: F16 and BF16 stay as stored, every quantised type becomes BF16, F32 stays F32 for
 *     tiny models (dim < 1024, where precision costs nothing) and becomes BF16 otherwise; only
 *     AUTO, F32, F16 and BF16 are accepted there. Activations, the KV cache and accumulation
 *     are fp32 whatever the choice.
 *   hsd_synth_params.type / hsd_inflate_params.type (include/hsd_tools.h): what synth and
 *     inflate write (AUTO means F32). synth stores its vectors (norms, biases) in the same
 *     type (F32 with Q8_0), inflate keeps them F32. */
typedef enum hsd_ftype {
    HSD_FTYPE_AUTO = 0,
    HSD_FTYPE_F32 = 1,
    HSD_FTYPE_F16 = 2,
    HSD_FTYPE_BF16 = 3,
    HSD_FTYPE_Q8_0 = 4,
    /* llama.cpp's Q4_K_M mix (inflate only; widths multiples of 256): Q4_K matrices, Q6_K for
     * the output matrix and for attn_v / ffn_down in llama.cpp's "more bits" layers */
    HSD_FTYPE_Q4_K_M = 5,
} hsd_ftype;

/* CPU kernel levels (hsd_model_params.cpu_kernels); each implies the ones before it. */
typedef enum hsd_cpu_kernels {
    HSD_CPU_KERNELS_AUTO = 0,
    HSD_CPU_KERNELS_SCALAR, /* plain C */
    HSD_CPU_KERNELS_AVX2,   /* AVX2 + FMA + F16C */
    HSD_CPU_KERNELS_AVX512, /* AVX-512 F/BW/VL/DQ + BF16 + VNNI */
    HSD_CPU_KERNELS_AMX     /* + AMX-BF16 and AMX-INT8 tiles */
} hsd_cpu_kernels;

/* "auto", "scalar", "avx2", "avx512", "amx" ("?" for other values); parse returns -1 for
 * unknown names or NULL. */
HSD_API const char *hsd_cpu_kernels_name(hsd_cpu_kernels k);
HSD_API int hsd_cpu_kernels_parse(const char *name);
/* The level the CPU kernels run at now (never AUTO): the best this CPU supports, lowered by
 * any cpu_kernels given to a load. Thread-safe. */
HSD_API hsd_cpu_kernels hsd_cpu_kernels_active(void);
/* One line naming the CPU's features the kernels use ("avx2 avx512 avx512_bf16 ... amx"). */
HSD_API const char *hsd_cpu_kernels_features(void);

/* CUDA backend switches (hsd_model_params.cuda); zero is the tuned default of each. */
typedef struct hsd_cuda_options {
    bool no_graphs;      /* run every decode step eagerly instead of replaying a CUDA graph */
    bool cublas_gemv;    /* decode products through cuBLAS instead of the batch-invariant kernels */
    bool warp_gemm;      /* 2..8-token products by a warp-per-row kernel with fp32 activations */
    bool no_pdl;         /* products in plain stream order (no programmatic dependent launch) */
    int32_t mma_variant; /* 1..4: a fixed BF16 tensor-core block shape; 0: chosen per device */
} hsd_cuda_options;
/* KV cache element types (hsd_model_params.kv_type). */
typedef enum hsd_kv_type { HSD_KV_F16 = 0, HSD_KV_BF16, HSD_KV_F32, HSD_KV_Q8_0, HSD_KV_Q4_0 } hsd_kv_type;

typedef struct hsd_model_params {
    size_t size;       /* sizeof(hsd_model_params), set by hsd_model_default_params() */
    int32_t n_ctx;     /* KV cache capacity in tokens; 0 = the model's context, capped at 4096 */
    int32_t n_threads; /* worker threads for the forward pass; 0 = 2 */
    bool use_mmap;     /* map weights instead of reading them (default true) */
    hsd_backend backend;          /* default AUTO */
    hsd_ftype device_weights; /* CUDA only; default AUTO */
    int32_t n_seq;     /* sequence slots, each with its own KV cache of n_ctx tokens (memory
                        * grows n_seq-fold); 0 = 1. See hsd_model_forward_batch. */
    /* CPU kernels: the highest instruction-set level every CPU kernel family (products,
     * quantised dots, row operations) may use; AUTO (default) leaves the level as it is (the
     * best the CPU runs, unless an earlier load lowered it). Process-wide: the kernels
     * dispatch from one CPU probe, so a non-AUTO value applies to every model of the process
     * from this load on. A level the CPU lacks runs the best one below it. The CLI takes it
     * from HSD_MATMUL=scalar|avx2|avx512|amx. */
    hsd_cpu_kernels cpu_kernels;
    /* Skip the load-time packed copies of BF16 and Q8_0 weights (memory over speed: the
     * products pack on the fly, the same bits, slower). The CLI: HSD_NO_PACK=1. */
    bool no_pack;
    /* Never hand F32 products to BLAS sgemm (which takes prefills of >= 32 tokens). The
     * CLI: HSD_NO_BLAS=1. */
    bool no_blas;
    /* CUDA only: comparisons against the tuned defaults (all zero). The library reads no
     * environment; the CLI maps HSD_CUDA_* onto these (docs/CLI.md). */
    hsd_cuda_options cuda;
    /* Element type of the KV cache: F16 (default, as llama.cpp's), BF16, F32 (exact
     * keys and values, twice the memory and the attention's reads), Q8_0 (llama.cpp's
     * q8_0 cache: per 32 elements an fp16 scale and 32 int8, about half F16's memory and
     * reads) or Q4_0 (llama.cpp's q4_0 cache: an fp16 scale and 32 4-bit quants, about a
     * quarter; keys and values to 4 bits, so outputs move more than with Q8_0). The CUDA
     * backend keeps F16, BF16 or F32 on the device as asked, and F16 for Q8_0 and Q4_0
     * (no device kernels), with a log notice. The CLI: --kv-type. */
    hsd_kv_type kv_type;
    /* Unused (0). The previous release ended at kv_type with 4 bytes of padding (sizeof 56);
     * this fills them so that kv_no_rotate starts past 56 and the size prefix tells an older
     * caller's struct, whose padding may hold anything, from this one. */
    int32_t reserved_kv;
    /* Q8_0 and Q4_0 caches, head_dim a multiple of 64: queries, keys and values are rotated by
     * an orthonormal Hadamard transform before the cache and the attention's output rotated
     * back, as llama.cpp does by default since April 2026 (the same scores in exact
     * arithmetic; the 8- or 4-bit rounding sees outliers spread over 64-128 elements). true
     * turns that off (llama.cpp: LLAMA_ATTN_ROT_DISABLE=1). The CLI: --kv-no-rotate. */
    bool kv_no_rotate;
} hsd_model_params;

/* One sequence's part of a batched forward: the same fields as hsd_model_forward's, for the
 * sequence slot `seq`. */
typedef struct hsd_model_batch_seq {
    size_t size;           /* sizeof(hsd_model_batch_seq): the library strides by seqs[0].size,
                            * and every entry of one array has the same size */
    int32_t seq;           /* slot, 0 <= seq < n_seq; each slot at most once per batch */
    const int32_t *tokens; /* n >= 1 new tokens, appended to this slot's cache */
    int32_t n;
    const int32_t *parents; /* NULL = chain, else a token tree as for forward */
    const int32_t *rows;    /* rows needing logits (NULL = all, then n_rows == n; 0 = none) */
    int32_t n_rows;
} hsd_model_batch_seq;
/* Entry i of an array of hsd_model_batch_seq, striding by the array's size field: how an
 * iface's forward_batch reads the array the library passes (the library's own size). */
#define HSD_BATCH_SEQ_AT(seqs, i)                                                                  \
    ((const hsd_model_batch_seq *)(const void *)((const char *)(seqs) +                            \
                                                 (size_t)(i) * (seqs)->size))

/* A model as the engine sees it. `parents` describes a token tree over the n new tokens:
 * NULL means a chain (token i follows token i-1); otherwise parents[i] is the index of token
 * i's parent among the new tokens (must be < i) or -1 when its parent is the cached prefix.
 * Token i attends to the whole cache plus its ancestors among the new tokens and itself; its
 * position is kv_len + depth(i). All n tokens are appended to the cache in the order given,
 * so after a tree forward the caller must kv_truncate or kv_keep to a chain before the next
 * forward. `rows` lists which of the n rows need logits (NULL = all, then n_rows == n);
 * logits receives n_rows × vocab_size floats, row-major in the order of `rows`. */
typedef struct hsd_model_iface {
    size_t size; /* sizeof(hsd_model_iface): set it (HSD_MODEL_IFACE_INIT) before the callbacks */
    void *ctx;
    int32_t (*vocab_size)(void *ctx);
    int32_t (*n_ctx)(void *ctx); /* KV capacity */
    hsd_status (*forward)(void *ctx, const int32_t *tokens, int32_t n, const int32_t *parents,
                          const int32_t *rows, int32_t n_rows, float *logits);
    int32_t (*kv_len)(void *ctx);
    hsd_status (*kv_truncate)(void *ctx, int32_t len); /* len <= kv_len */
    /* Optional (may be NULL): keep only cache entries base+keep[0..n_keep) (increasing, all
     * >= 0 and < kv_len-base), moved to base..base+n_keep; kv_len becomes base+n_keep. Used
     * to keep the accepted path of a tree without refeeding it. */
    hsd_status (*kv_keep)(void *ctx, int32_t base, const int32_t *keep, int32_t n_keep);
    void (*free)(void *ctx); /* called by hsd_model_free; may be NULL */
    /* Optional sequence slots (all three may be NULL: one slot, numbered 0).
     * n_seq: number of slots. seq_select: the slot that forward, kv_len, kv_truncate and
     * kv_keep act on from now on (slot 0 at creation); needed when n_seq > 1.
     * forward_batch: one forward over several slots' new tokens: logits receives the
     * requested rows of seqs[0], then of seqs[1], ... (sum of n_rows rows × vocab_size);
     * it does not change the selected slot. Without forward_batch,
     * hsd_model_forward_batch runs seq_select + forward once per entry instead (same
     * results, no weight sharing). These members come last, so an iface initialized
     * positionally by older code gets them zero (NULL); prefer designated initializers. */
    int32_t (*n_seq)(void *ctx);
    hsd_status (*seq_select)(void *ctx, int32_t seq);
    hsd_status (*forward_batch)(void *ctx, const hsd_model_batch_seq *seqs, int32_t n_seqs,
                                float *logits);
} hsd_model_iface;
/* Starts a designated initializer of an hsd_model_iface with its size:
 *   hsd_model_iface it = {HSD_MODEL_IFACE_INIT, .ctx = c, .vocab_size = my_vocab, ...};
 * The library reads min(size, its own) bytes; members past an older caller's size are NULL. */
#define HSD_MODEL_IFACE_INIT .size = sizeof(hsd_model_iface)

/* The defaults (n_ctx 0, n_threads 0 → 2, use_mmap true). Thread-safe. */
HSD_API hsd_model_params hsd_model_default_params(void);
/* Loads a model file or directory. params may be NULL (defaults); it is read during the call
 * only. On success the caller owns *out (release with hsd_model_free); on failure *out is
 * NULL. Errors: INVALID_ARG (NULL path/out, n_ctx or n_threads < 0), IO, PARSE, UNSUPPORTED,
 * NOMEM. Thread-safe (loads of different models may run at once). */
HSD_API hsd_status hsd_model_load(const char *path, const hsd_model_params *params,
                                  hsd_model **out);
/* Wraps a caller's implementation; the iface struct is copied, iface->ctx is borrowed until
 * hsd_model_free, which calls iface->free(ctx) when set (so the handle then owns ctx).
 * vocab_size, forward, kv_len and kv_truncate are required (else INVALID_ARG). The wrapper
 * checks arguments (NULL pointers, counts, cache bounds) before calling the callbacks, so an
 * implementation only sees well-formed calls. On success the caller owns *out. Thread-safe. */
HSD_API hsd_status hsd_model_from_iface(const hsd_model_iface *iface, hsd_model **out);
/* Releases the model (and its iface ctx, see above). NULL is a no-op. Not thread-safe per
 * handle; an engine that borrows the model must be freed first or not used again. */
HSD_API void hsd_model_free(hsd_model *model);

/* Getters: 0 (vocab_size, n_ctx, kv_len) or "" (desc) for a NULL model. Not thread-safe per
 * handle against a concurrent forward (kv_len changes). */
HSD_API int32_t hsd_model_vocab_size(const hsd_model *model);
HSD_API int32_t hsd_model_n_ctx(const hsd_model *model);
/* The context the model was trained for (its file's context length / seq_len), which may be
 * smaller or larger than the KV capacity hsd_model_n_ctx; 0 for a caller-provided model or
 * NULL (unknown). The engine generates no further than it (hsd_gen_params.n_ctx). */
HSD_API int32_t hsd_model_n_ctx_train(const hsd_model *model);
/* One line describing the model ("llama2c stories260K.bin: dim 64, 5 layers, ... f32"). Owned
 * by the model, valid until hsd_model_free. */
HSD_API const char *hsd_model_desc(const hsd_model *model);
/* The backend the model runs on: HSD_BACKEND_CPU or HSD_BACKEND_CUDA (never AUTO);
 * HSD_BACKEND_CPU for caller-provided models and for a NULL model. Thread-safe. */
HSD_API hsd_backend hsd_model_backend(const hsd_model *model);
/* "auto", "cpu", "cuda" ("?" for other values); parse returns -1 for unknown names or NULL.
 * Thread-safe; the returned string is static. */
HSD_API const char *hsd_backend_name(hsd_backend b);
HSD_API int hsd_backend_parse(const char *name);
/* Evaluates n > 0 new tokens (see hsd_model_iface). tokens, parents, rows are borrowed for
 * the call; logits is the caller's buffer of n_rows × vocab_size floats. Errors: INVALID_ARG
 * (NULL model/tokens, n <= 0, n_rows < 0 or > n, rows NULL with n_rows not 0 or n, logits NULL
 * with n_rows > 0, parents[i] not -1 or an earlier index), OUT_OF_RANGE (token outside the
 * vocabulary, rows[i] outside 0..n-1, context full). On failure the cache is unchanged. Not
 * thread-safe per handle. */
HSD_API hsd_status hsd_model_forward(hsd_model *model, const int32_t *tokens, int32_t n,
                                     const int32_t *parents, const int32_t *rows, int32_t n_rows,
                                     float *logits);
HSD_API int32_t hsd_model_kv_len(const hsd_model *model);
/* Drops cache entries from len on. Errors: INVALID_ARG (NULL model), OUT_OF_RANGE (len < 0 or
 * len > kv_len). Not thread-safe per handle. */
HSD_API hsd_status hsd_model_kv_truncate(hsd_model *model, int32_t len);
/* See hsd_model_iface.kv_keep; keep is borrowed for the call. Errors: INVALID_ARG (NULL model,
 * keep NULL with n_keep > 0), OUT_OF_RANGE (base or keep[] outside the cache, keep not
 * increasing), UNSUPPORTED when the implementation has no kv_keep. Not thread-safe per
 * handle. */
HSD_API hsd_status hsd_model_kv_keep(hsd_model *model, int32_t base, const int32_t *keep,
                                     int32_t n_keep);

/* Sequence slots (hsd_model_params.n_seq; a caller's model through the iface's optional
 * members). Each slot has its own KV cache; hsd_model_forward and the kv_* functions act on
 * the selected slot, so single-sequence code is unchanged (it uses slot 0). */
HSD_API int32_t hsd_model_n_seq(const hsd_model *model); /* 1 for a model without slots */
/* HSD_ERR_OUT_OF_RANGE for seq outside 0..n_seq-1; the selection is kept on failure. */
HSD_API hsd_status hsd_model_seq_select(hsd_model *model, int32_t seq);
HSD_API int32_t hsd_model_seq_current(const hsd_model *model);
/* One forward over n_seqs sequences: every matrix product runs over the new tokens of all
 * of them together (each weight is read once for the whole batch), attention runs per
 * sequence against its own cache. Results equal one hsd_model_forward per entry (up to
 * float summation order when the larger product takes a different kernel). logits receives
 * the requested rows entry after entry (may be NULL when every n_rows is 0); the caller
 * owns all buffers. Errors: HSD_ERR_INVALID_ARG (n_seqs < 1, NULL seqs, a slot listed
 * twice, bad rows/parents), HSD_ERR_OUT_OF_RANGE (slot, token id or context overflow).
 * The built-in models check everything first and change no cache on failure; the fallback
 * for a caller's model without forward_batch may leave earlier entries' tokens appended
 * (truncate them). */
HSD_API hsd_status hsd_model_forward_batch(hsd_model *model, const hsd_model_batch_seq *seqs,
                                           int32_t n_seqs, float *logits);
/* ====================================================================================
 * End of Models
 * ==================================================================================== */


/* ====================================================================================
 * Engine: speculative decoding across tokenizers
 *
 * An engine pairs a target model (whose distribution the output follows exactly) with an
 * optional drafter that may use a different tokenizer. Algorithms:
 *   AR     target alone;
 *   SD     standard speculative decoding (drafter shares the target's vocabulary);
 *   UNION  Alg 1: both vocabularies as T ∪ D (lossless, drafts outside T always rejected);
 *   TLI    Alg 4: drafter samples only from T ∩ D (matched by surface bytes), renormalised;
 *   SLEM   Alg 2: draft text re-tokenized by the target, longest self-consistent prefix kept;
 *   SLRS   Alg 3: string-level rejection sampling; the drafter's continuations form a tree
 *          under a sparse proposal (top-k/top-p of its distribution), psi(t) is summed exactly
 *          over it, and the target tokens of the sampled draft are accepted with
 *          min(1, p/psi) (multi-token: psi of position j given the accepted tokens);
 *   AUTO   chosen from the pair (identical vocab → SD, large byte overlap → TLI, else SLEM).
 * Greedy (temp <= 0) output is identical to AR; sampled output has AR's distribution.
 *
 * BOS: the prompt is encoded by each tokenizer without its post-processor, and the
 * tokenizer's BOS id (hsd_tokenizer_bos_id, when it has one) is put first for that model
 * when add_bos is set. The prompt text is used as is.
 * An engine is not thread-safe (its models are not); use one engine per thread.
 * ==================================================================================== */
typedef enum hsd_algo {
    HSD_ALGO_AR = 0,
    HSD_ALGO_SD,
    HSD_ALGO_UNION,
    HSD_ALGO_TLI,
    HSD_ALGO_SLEM,
    HSD_ALGO_SLRS,
    HSD_ALGO_AUTO, /* never resolves to SLRS */
} hsd_algo;

/* "ar", "sd", "union", "tli", "slem", "slrs", "auto" ("?" for a value outside the enum); static
 * strings. parse returns -1 for unknown names and NULL. Thread-safe. */
HSD_API const char *hsd_algo_name(hsd_algo a);
HSD_API int hsd_algo_parse(const char *name);

/* Why a sequence stopped (hsd_gen_result.stop_reason). */
typedef enum hsd_stop_reason {
    HSD_STOP_MAX_TOKENS = 0, /* max_new_tokens generated */
    HSD_STOP_EOS,            /* the target's end-of-sequence token (stop_at_eos): its tokenizer's
                              * EOS, hsd_engine_set_eos_ids's, and for a llama2.c checkpoint id 1
                              * (BOS delimits its training stories; llama2.c's run.c stops there) */
    HSD_STOP_STRING,         /* a stop string occurred */
    HSD_STOP_CONTEXT,        /* the context is full (see hsd_gen_params.n_ctx) */
    HSD_STOP_CALLBACK,       /* the streaming callback returned false */
} hsd_stop_reason;

/* "max_tokens", "eos", "stop_string", "context", "callback" ("?" outside the enum); static.
 * Thread-safe. */
HSD_API const char *hsd_stop_reason_name(hsd_stop_reason r);

/* Streaming (hsd_gen_params.on_text): called after each round of sequence `seq` (0 for
 * hsd_engine_generate, the prompt's index for hsd_engine_generate_batch) with the text that
 * became final in that round, text[0..len) (UTF-8, not NUL-terminated; may be empty while a
 * character or a decoder's look-ahead is incomplete), and the target ids committed in that
 * round, ids[0..n_ids). Concatenated over the calls of one sequence, the pieces equal the
 * result's text and the ids its ids. Both arrays are valid during the call only. Return true
 * to go on, false to stop this sequence: it ends after the current round with stop_reason
 * HSD_STOP_CALLBACK (the other sequences of a batch go on). The callback runs on the calling
 * thread and must not call the engine. */
typedef bool (*hsd_stream_fn)(void *user_data, int32_t seq, const char *text, size_t len,
                              const int32_t *ids, int32_t n_ids);

typedef struct hsd_gen_params {
    size_t size;            /* sizeof(hsd_gen_params), set by hsd_gen_default_params() */
    hsd_algo algo;
    int32_t max_new_tokens; /* default 128 */
    int32_t n_draft;        /* draft length k per round (default 4) */
    bool adaptive_k;        /* adapt k to the running acceptance (k in [1, k_max]) */
    int32_t k_max;          /* default 16 */
    float temp;             /* <= 0: greedy (default 0) */
    int32_t top_k;          /* <= 0: off */
    float top_p;            /* >= 1: off */
    uint64_t seed;
    bool stop_at_eos;       /* default true */
    const char *const *stop; /* stop strings (generation ends after the first occurrence) */
    int32_t n_stop;
    bool add_bos;           /* default true */
    /* SLRS draft tree (n_draft is its depth limit n) */
    int32_t slrs_top_k;     /* children per node: the drafter's top-k (default 2; <= 0: all) */
    float slrs_top_p;       /* then the top-p of those (default 0.95; >= 1: off) */
    int32_t slrs_max_nodes; /* tree nodes scored by the drafter per round, root aside (16) */
    int32_t slrs_lookahead; /* 0: stop a branch once its first target token is determined
                               (default); 1: fixed depth n; 2: n_max (outgrow the longest
                               target token), capped by n */
    bool slrs_single_forward; /* score the whole tree in one drafter forward, its shape chosen
                                 from the vocabularies (target and draft byte tries walked
                                 together) instead of one forward per level (default false) */
    /* Context: positions (prompt + generated) the target may use. 0 (default): its trained
     * context (hsd_model_n_ctx_train), capped by its KV capacity (hsd_model_n_ctx); larger
     * values run past what the model was trained for (quality degrades) and send a warning
     * to the log. Generation that reaches the limit stops with HSD_STOP_CONTEXT; a prompt
     * that does not fit is an error (HSD_ERR_OUT_OF_RANGE). The drafter is always kept
     * within its own trained context (rounds then fall back to target-only steps). */
    int32_t n_ctx;
    hsd_stream_fn on_text; /* streaming callback (NULL: none) */
    void *user_data;       /* passed to on_text */
    /* Cost-aware k (default false; takes precedence over adaptive_k): before each round, the
     * k in [1, k_max] with the most expected tokens per second, from the measured times of
     * both models' forwards (the target's by token count, kept by the engine across
     * requests) and the running acceptance. The best k differs by CPU, model file and
     * drafter (bench/notes/k_cost.md). The choices follow timings, which vary between runs:
     * SLEM's and AR's output does not depend on k, but the sampled output of SD, union and
     * TLI for a given seed then may. SLRS keeps its fixed depth (n_draft). With adaptive_k
     * or cost_k, k starts at min(n_draft, k_max). Target forwards of more than 256 tokens
     * (large running batches) are not measured. */
    bool cost_k;
} hsd_gen_params;

/* SLRS per round, averaged over the rounds: psi time (tree bookkeeping and sums; drafter
 * forwards are in the result's draft_ms), tree nodes (leaves included), drafter forwards
 * (root feed + one per tree level), and the expected first-position acceptance
 * sum_t min(p, psi) next to exact matching's sum_t p * psi for the same proposal (Thm 3.1:
 * the first is never smaller). Reached from hsd_gen_result.slrs. */
typedef struct hsd_slrs_stats {
    size_t size; /* the library's sizeof(hsd_slrs_stats): fields past an older caller's
                  * header are there but unknown to it */
    double psi_ms, tree_nodes, tree_forwards;
    double expected_accept, expected_accept_em;
} hsd_slrs_stats;

typedef struct hsd_gen_result {
    size_t size;    /* set by the CALLER before a call (HSD_GEN_RESULT_INIT, or
                     * hsd_gen_results_init for an array): the library writes min(size, its
                     * own) bytes, strides arrays by it, and keeps it */
    int32_t *ids;   /* generated target ids (release with hsd_gen_result_free) */
    int32_t n_ids;
    char *text;     /* their decoded text (HF decode, special tokens skipped) */
    size_t text_len;
    hsd_algo algo;  /* the algorithm used (AUTO resolved) */
    char *reason;   /* why AUTO chose it (or "requested"): NUL-terminated, never truncated;
                     * owned by the result, released by hsd_gen_result_free */
    int32_t n_rounds, n_drafted, n_accepted;
    double acceptance_rate; /* accepted drafts / drafted */
    double tau;             /* target tokens emitted per target forward (round) */
    double ttft_ms, tpot_ms, tokens_per_s, total_ms;
    double draft_ms, verify_ms, bridge_ms; /* time split */
    double first_accept_rate; /* SLEM, SLRS: rounds whose first candidate was accepted */
    hsd_stop_reason stop_reason; /* why generation ended */
    /* SLRS's own statistics (hsd_slrs_stats), NULL for the other algorithms; owned by the
     * result, released by hsd_gen_result_free */
    hsd_slrs_stats *slrs;
    double k_mean; /* the mean planned draft length over the rounds with a drafter (n_draft
                    * unless adaptive_k or cost_k moved it or the context's end cut it; 0: no
                    * such round) */
} hsd_gen_result;
/* An empty result with its size set: hsd_gen_result r = HSD_GEN_RESULT_INIT; */
#define HSD_GEN_RESULT_INIT {.size = sizeof(hsd_gen_result)}
/* Empties results[0..n) and sets their size (for hsd_engine_generate_batch). */
#define hsd_gen_results_init(results, n)                                                           \
    do {                                                                                           \
        for (int32_t hsd_i_ = 0; hsd_i_ < (int32_t)(n); hsd_i_++)                                  \
            (results)[hsd_i_] = (hsd_gen_result)HSD_GEN_RESULT_INIT;                               \
    } while (0)

typedef struct hsd_engine hsd_engine;

/* The defaults listed in hsd_gen_params (algo AUTO). Thread-safe. */
HSD_API hsd_gen_params hsd_gen_default_params(void);
/* draft and draft_tok may be NULL (AR only). The engine borrows the four handles: they must
 * outlive it, and the models must not be used elsewhere while it runs. On success the caller
 * owns *out (release with hsd_engine_free); on failure *out is NULL. Errors: INVALID_ARG (NULL
 * target/target_tok/out, a drafter without its tokenizer or the reverse, a model with no
 * vocabulary or no context size), NOMEM. Thread-safe for different models. */
HSD_API hsd_status hsd_engine_init(hsd_model *target, const hsd_tokenizer *target_tok,
                                   hsd_model *draft, const hsd_tokenizer *draft_tok,
                                   hsd_engine **out);
/* Releases the engine (not the borrowed models and tokenizers). NULL is a no-op. */
HSD_API void hsd_engine_free(hsd_engine *e);
/* The algorithm AUTO resolves to for this pair, with a one-line reason written to the caller's
 * buffer (NUL-terminated, truncated to reason_cap; reason may be NULL). A NULL engine gives
 * HSD_ALGO_AR ("no drafter"). Read-only on the engine: safe alongside other readers. */
HSD_API hsd_algo hsd_engine_auto_algo(const hsd_engine *e, char *reason, size_t reason_cap);
/* The drafter ids whose surface bytes equal some target token's (special tokens excluded):
 * the ids TLI can draft. Several drafter ids may spell one string (a token and its
 * byte-fallback twin), so this can exceed |T|; AUTO compares distinct strings with |T|.
 * 0 for NULL or no drafter. */
HSD_API int32_t hsd_engine_overlap(const hsd_engine *e);
/* Forgets what the engine left in the models' KV caches (see hsd_engine_generate). NULL is a
 * no-op. Not thread-safe per handle. */
HSD_API void hsd_engine_reset(hsd_engine *e);
/* Target ids that end generation as EOS does (with stop_at_eos, HSD_STOP_EOS), besides the
 * target tokenizer's EOS: a chat model's end-of-turn tokens (<|eot_id|>, <|im_end|>,
 * <end_of_turn>; hsd_chat_eos_ids lists what a model declares). Copied; n 0 clears the list.
 * Errors: INVALID_ARG (NULL e, ids NULL with n > 0, n < 0, an id outside the target's
 * vocabulary), NOMEM. Not thread-safe per handle. */
HSD_API hsd_status hsd_engine_set_eos_ids(hsd_engine *e, const int32_t *ids, int32_t n);
/* Generates from `prompt` (len bytes of UTF-8): a request of one sequence, run by the same
 * driver as hsd_engine_generate_batch (on the models' selected slots). The engine keeps what
 * it left in the models' KV caches and reuses the prefix a new prompt shares with it (prefix
 * caching); if the models are used outside the engine between calls, call hsd_engine_reset
 * first. params may be NULL
 * (defaults); params, its stop strings and prompt are borrowed for the call. *res is
 * overwritten (not freed: free a previous result first); on success the caller owns its ids
 * and text (release with hsd_gen_result_free); on failure it holds nothing. Errors:
 * INVALID_ARG (NULL e/res, prompt NULL with len > 0, max_new_tokens < 0, n_draft or k_max
 * outside 1..63, temp or top_p NaN, n_stop < 0, stop NULL with n_stop > 0, slrs_lookahead
 * outside 0..2, n_ctx < 0, an algorithm outside the enum, or one that needs a drafter the
 * engine lacks, SD on different vocabularies), OUT_OF_RANGE (the prompt does not fit the
 * context, see hsd_gen_params.n_ctx), INVALID_UTF8, and any error of the models. The result's
 * stop_reason tells why generation ended; params->on_text streams the text as it becomes
 * final. Not thread-safe per handle (nor per borrowed model). */
HSD_API hsd_status hsd_engine_generate(hsd_engine *e, const char *prompt, size_t len,
                                       const hsd_gen_params *params, hsd_gen_result *res);
/* Releases what the library allocated in the result (ids, text, reason, slrs; never plain
 * free) and zeroes those fields, keeping size; NULL is a no-op, and so is a second call. */
HSD_API void hsd_gen_result_free(hsd_gen_result *r);

/* Generates from n_prompts prompts together. Prompt i is generated as hsd_engine_generate
 * would with params->seed + i: its own committed text, bridge sides and RNG streams (draft
 * and verify streams of seed + i), on sequence slot i of both models, so the models must
 * have n_seq >= n_prompts slots (hsd_model_params.n_seq; the drafter only when one is
 * used), else HSD_ERR_INVALID_ARG. Each round every live sequence drafts (the drafter's
 * forwards are batched across sequences, one per draft position), then ONE target forward
 * (hsd_model_forward_batch) verifies the candidates of all sequences; sequences finish
 * independently (EOS, stop strings, max_new_tokens, a full context, the streaming callback,
 * which receives the sequence's index). Each sequence's output
 * equals hsd_engine_generate's with seed + i (greedy: identical to AR), up to float
 * summation order where the larger batched product takes another kernel (BLAS).
 *   Every algorithm (AUTO resolved once for the batch). SLRS drafts each sequence's tree on
 * its own (the drafter's tree forwards are not shared across sequences); its target forward
 * is shared like the others'. A model without forward_batch in its iface is run one forward
 * per sequence (same results, no sharing of the weight reads); one without sequence slots
 * supports n_prompts == 1 only.
 *   prompts[i] holds lens[i] bytes (lens NULL: NUL-terminated prompts; a prompt may be NULL
 * only with length 0). results is an array of n_prompts, each released with
 * hsd_gen_result_free; on failure all are left empty. Per-sequence times run from the
 * start of the batch: total_ms and tokens_per_s to that sequence's end, ttft_ms to its first
 * token; draft_ms and verify_ms include the shared batched forwards of its rounds (they do
 * not add up across sequences). No prefix is reused; the single-sequence prefix cache is
 * forgotten (hsd_engine_generate prefills again afterwards) and the models' selected slots
 * are restored. Arguments are checked as hsd_engine_generate's (one check for both).
 * Errors: HSD_ERR_INVALID_ARG for NULL arguments, n_prompts < 1, bad params (stop NULL with
 * n_stop > 0 included), too few slots; OUT_OF_RANGE for a prompt that does not fit (named by
 * its index). */
HSD_API hsd_status hsd_engine_generate_batch(hsd_engine *e, const char *const *prompts,
                                             const size_t *lens, int32_t n_prompts,
                                             const hsd_gen_params *params,
                                             hsd_gen_result *results);
/* ====================================================================================
 * End of Engine
 * ==================================================================================== */

/* ====================================================================================
 * Draft heads  (trimmed / speculative / low-rank drafter LM heads)
 * ==================================================================================== */
/* Exported symbols are marked HSD_API where the header defines it (shared-library builds);
 * elsewhere the mark is empty. */
/* The final classifier U (vocab x dim) of a model loaded by hsd_model_load can be replaced by
 * a cheaper head for drafting. Every head still returns vocab_size logits per row, so the
 * engine is unchanged; ids a head does not score get -INFINITY (probability exactly 0).
 * Verification stays lossless: only the drafter's proposal q changes.
 *   FULL         U h (the default);
 *   TRIMMED      only the rows keep_ids: frequency-ranked ids from `hsd trim` (VocabTrim,
 *                FR-Spec, BCL), the drafter's T ∩ D ids for TLI (hsd_engine_overlap_ids), or
 *                both intersected;
 *   SPECULATIVE  SpecVocab: s = W_vocab (W_down h), K = top_k(s), exact U[K] h;
 *   LOWRANK      SlimSpec: z = W_up (W_down h) over the whole vocabulary.
 * The factors of SPECULATIVE and LOWRANK are read from a safetensors file (factors_path) or
 * built training-free by a truncated SVD of U at `rank` (W_up = U_r S_r, W_down = V_r^T),
 * optionally calibrated on the model's own final hidden states over calib_tokens.
 * Safetensors tensor names (F32, F16 or BF16):
 *   LOWRANK      "lm_head.w_down" [rank, dim], "lm_head.w_up"    [vocab, rank];
 *   SPECULATIVE  "router.w_down"  [rank, dim], "router.w_vocab"  [vocab, rank].
 */
typedef enum hsd_head_kind {
    HSD_HEAD_FULL = 0,
    HSD_HEAD_TRIMMED,
    HSD_HEAD_SPECULATIVE,
    HSD_HEAD_LOWRANK,
} hsd_head_kind;

typedef struct hsd_head_params {
    size_t size;              /* sizeof(hsd_head_params), set by hsd_head_default_params() */
    hsd_head_kind kind;
    const int32_t *keep_ids; /* TRIMMED: ids to keep (copied; any order; no duplicates) */
    int32_t n_keep;
    int32_t top_k;            /* SPECULATIVE: candidates per row (default 2048, capped at vocab) */
    int32_t rank;             /* LOWRANK r, SPECULATIVE router width d'; 0 = dim/8 */
    const char *factors_path; /* NULL: build the factors by SVD of U */
    const int32_t *calib_tokens; /* optional: this model's ids to calibrate the SVD on */
    int32_t n_calib;
} hsd_head_params;

HSD_API hsd_head_params hsd_head_default_params(void);
/* "full", "trimmed", "speculative", "lowrank"; "?" outside the enum. Static string. */
HSD_API const char *hsd_head_kind_name(hsd_head_kind kind);
/* Installs a head (params NULL or FULL restores U h). Caller-provided models get
 * HSD_ERR_UNSUPPORTED; bad ids, ranks or factor files give INVALID_ARG / IO / PARSE naming the
 * cause, and the previous head stays. Calibration runs the model over calib_tokens (in
 * windows of its context) and leaves its KV cache empty. The model owns the head; the params'
 * arrays are not kept. Errors: INVALID_ARG (NULL model, unknown kind, no or duplicate
 * ids, rank outside 1..dim, top_k < 1), OUT_OF_RANGE (an id outside the vocabulary), IO /
 * PARSE / UNSUPPORTED (factor file), NOMEM. Not thread-safe per handle. */
HSD_API hsd_status hsd_model_set_head(hsd_model *model, const hsd_head_params *params);
/* One line describing the current head ("full" when none is set or for NULL). Owned by the
 * model, valid until the next hsd_model_set_head or hsd_model_free. */
HSD_API const char *hsd_model_head_desc(const hsd_model *model);
/* Writes the current SPECULATIVE or LOWRANK factors to `path` (F32 safetensors, the names
 * above), e.g. to reuse SVD-built factors. */
HSD_API hsd_status hsd_model_save_head(const hsd_model *model, const char *path);

/* Where a model's forward time goes, cumulative since load or the last reset. */
typedef struct hsd_model_timing {
    double head_ms;      /* the classifier / draft head */
    double backbone_ms;  /* everything else: embedding, layers, final norm */
    int64_t n_forward;   /* forward calls */
    int64_t n_head_rows; /* rows whose logits were computed */
} hsd_model_timing;
/* Errors: INVALID_ARG (NULL model or out), UNSUPPORTED (caller-provided model; *out zeroed).
 * reset: NULL and caller-provided models are a no-op. Not thread-safe per handle. */
HSD_API hsd_status hsd_model_get_timing(const hsd_model *model, hsd_model_timing *out);
HSD_API void hsd_model_reset_timing(hsd_model *model);

/* The drafter ids in T ∩ D (those TLI can propose), increasing: the rows a TLI drafter's
 * head needs (hsd_head_params.keep_ids). Writes up to cap ids; *n gets the count, and
 * HSD_ERR_BUFFER_TOO_SMALL when cap < count. INVALID_ARG for a NULL e or n, or an engine
 * without a drafter. Read-only on the engine. */
HSD_API hsd_status hsd_engine_overlap_ids(const hsd_engine *e, int32_t *ids, int32_t cap,
                                          int32_t *n);
/* Installs the TLI draft head on the engine's drafter: a TRIMMED head (hsd_model_set_head)
 * that scores only the drafter ids TLI can propose (hsd_engine_overlap_ids), intersected with
 * keep_ids[0..n_keep) when keep_ids is given (e.g. the frequency-ranked ids of `hsd trim`);
 * TLI's output is unchanged (those ids are all it can draft; with keep_ids the drafts are
 * restricted further, verification stays lossless). keep_ids is borrowed for the call.
 * Errors: INVALID_ARG (NULL engine, no drafter, keep_ids NULL with n_keep > 0 or n_keep < 0,
 * an empty intersection), UNSUPPORTED (a caller-provided drafter), NOMEM, and
 * hsd_model_set_head's. Not thread-safe per handle. */
HSD_API hsd_status hsd_engine_set_tli_head(hsd_engine *e, const int32_t *keep_ids,
                                           int32_t n_keep);

/* Installs a head described by one string (the CLI's --draft-head) on `draft`:
 *   full                 the model's own classifier;
 *   trim:IDS_FILE        TRIMMED to the ids in IDS_FILE (one per line, '#' comments, as
 *                        `hsd trim -o` writes);
 *   spec:K[/R][:FILE]    SPECULATIVE, top-K with a router of rank R (0 or absent: dim/8),
 *                        SVD-built or read from FILE;
 *   lowrank:R[:FILE]     LOWRANK rank R (0: dim/8), SVD-built or read from FILE.
 * The TLI head (T ∩ D rows) needs the engine: hsd_engine_set_tli_head is the one way to
 * install it. calib_tokens (n_calib of them, may be NULL with 0) calibrate SVD-built factors
 * as in hsd_head_params and are ignored by the other kinds; nothing is kept after the call.
 * Errors: INVALID_ARG (NULL draft or spec, a malformed spec (named), calib_tokens NULL with
 * n_calib > 0), IO / PARSE (the ids file, with path and line), and those of
 * hsd_model_set_head (the previous head then stays). Not thread-safe per model. */
HSD_API hsd_status hsd_model_set_head_spec(hsd_model *draft, const char *spec,
                                           const int32_t *calib_tokens, int32_t n_calib);
/* ====================================================================================
 * End of Draft heads
 * ==================================================================================== */

/* ====================================================================================
 * Running batch  (the engine step API behind `hsd serve`'s continuous batching)
 *
 * A batch owns sequence slots 0..n_slots-1 of the engine's models (hsd_model_params.n_seq).
 * Sequences join (hsd_batch_add / hsd_batch_add_ids) and leave (they finish, or
 * hsd_batch_cancel) between rounds; each hsd_batch_step runs ONE round for every active
 * sequence: the drafters' chain forwards batched per draft position, then one target forward
 * (hsd_model_forward_batch) verifying all of them, as hsd_engine_generate_batch does. A
 * finished or cancelled sequence's slot is free for the next add.
 *   A sequence's output equals hsd_engine_generate's with the same prompt and parameters (its
 * own seed, not seed + slot), greedy or sampled, whatever else runs beside it (up to float
 * summation order where a larger batched product takes another kernel, as for _batch).
 * Sequences may use different algorithms, k, sampling parameters and stop strings.
 *   While a batch is in use the engine's models belong to it: do not call hsd_engine_generate
 * (or use the models) between its steps. Not thread-safe per handle: one thread (the
 * scheduler) adds, steps and cancels.
 * ==================================================================================== */
typedef struct hsd_batch hsd_batch;

typedef struct hsd_batch_params {
    size_t size;     /* sizeof(hsd_batch_params), set by hsd_batch_default_params() */
    int32_t n_slots; /* concurrent sequences; 0 = the target's n_seq (default 0) */
} hsd_batch_params;

/* What one step produced for one sequence: the text and ids that round made final (as the
 * streaming callback of hsd_gen_params would receive them; concatenated over a sequence's
 * events they equal its result's text and ids), and, on its last event, the result. */
typedef struct hsd_batch_event {
    size_t size;       /* the library's sizeof(hsd_batch_event): index the array with
                        * HSD_BATCH_EVENT_AT, which strides by it */
    int64_t id;        /* from hsd_batch_add */
    const char *text;  /* text[0..len): UTF-8, not NUL-terminated, may be empty */
    size_t len;
    const int32_t *ids; /* ids[0..n_ids) */
    int32_t n_ids;
    bool done;         /* the sequence ended this step; its slot is free */
    /* when done: ids, text, stop reason and statistics (times from its add); the event owns
     * it (do not free it) */
    const hsd_gen_result *result;
    int32_t n_prompt;  /* target prompt tokens (BOS included) */
} hsd_batch_event;
/* Event i of the array hsd_batch_step returns, striding by the library's event size (so a
 * caller built against an older, shorter hsd_batch_event reads the right events). */
#define HSD_BATCH_EVENT_AT(events, i)                                                              \
    ((const hsd_batch_event *)(const void *)((const char *)(events) +                             \
                                             (size_t)(i) * (events)->size))

/* Defaults (n_slots 0). Thread-safe. */
HSD_API hsd_batch_params hsd_batch_default_params(void);
/* params may be NULL (defaults); the library reads min(params->size, its own) bytes. The
 * batch borrows e (free the batch first). Errors: INVALID_ARG (NULL e/out, size 0 or smaller
 * than the size field, n_slots < 0, more slots than the target (or the drafter) has), NOMEM. */
HSD_API hsd_status hsd_batch_init(hsd_engine *e, const hsd_batch_params *params, hsd_batch **out);
/* Releases the batch and its sequences (without events). NULL is a no-op. */
HSD_API void hsd_batch_free(hsd_batch *b);
/* Adds a sequence on a free slot; its first round runs at the next hsd_batch_step. prompt
 * (len bytes of UTF-8) is encoded as hsd_engine_generate encodes it; params (NULL: defaults)
 * and its stop strings are copied (params->on_text is not used: steps return events). *id
 * gets the sequence's id (increasing from 0, never reused). Errors: INVALID_ARG (NULL b/id,
 * prompt NULL with len > 0, the checks of hsd_engine_generate), HSD_ERR_BUFFER_TOO_SMALL when
 * no slot is free, OUT_OF_RANGE (the prompt does not fit the context), INVALID_UTF8, NOMEM;
 * on failure nothing is added. */
HSD_API hsd_status hsd_batch_add(hsd_batch *b, const char *prompt, size_t len,
                                 const hsd_gen_params *params, int64_t *id);
/* Same with the prompt as target token ids, used as given after the target's BOS (added when
 * params->add_bos is set and ids[0] is not already BOS); the drafter reads their text. Also
 * OUT_OF_RANGE for an id outside the target's vocabulary. */
HSD_API hsd_status hsd_batch_add_ids(hsd_batch *b, const int32_t *ids, size_t n_ids,
                                     const hsd_gen_params *params, int64_t *id);
/* Runs one round for every active sequence. *events (owned by the batch, valid until the
 * next call on b) receives one event per sequence that gained text or ids or ended this
 * step, *n_events their count. A step with no active sequence runs no forward. Errors: NULL
 * arguments (INVALID_ARG), and any error of the models: then every sequence of the batch is
 * dropped (their slots are free, no events). */
HSD_API hsd_status hsd_batch_step(hsd_batch *b, const hsd_batch_event **events, int32_t *n_events);
/* Ends sequence id now and frees its slot (no event follows). INVALID_ARG for a NULL b or an
 * id that is not active (finished sequences are no longer active). */
HSD_API hsd_status hsd_batch_cancel(hsd_batch *b, int64_t id);
/* Sequences added and not yet ended (0 for NULL); slots in all (0 for NULL). */
HSD_API int32_t hsd_batch_n_active(const hsd_batch *b);
HSD_API int32_t hsd_batch_n_slots(const hsd_batch *b);
/* ====================================================================================
 * End of Running batch
 * ==================================================================================== */

/* ====================================================================================
 * Chat templates (docs/CHAT.md)
 *
 * A model's chat template is a Jinja2 program (GGUF tokenizer.chat_template, or
 * chat_template in tokenizer_config.json). hsd renders it byte-identically to Python Jinja2
 * configured as HF transformers' apply_chat_template configures it (sandboxed, trim_blocks,
 * lstrip_blocks, loopcontrols, {% generation %}, tojson = json.dumps(ensure_ascii=False),
 * raise_exception, strftime_now). A loaded template is immutable: any number of threads may
 * render it at once.
 * ==================================================================================== */
typedef struct hsd_chat_template hsd_chat_template;

typedef struct hsd_chat_params {
    size_t size;      /* sizeof(hsd_chat_params), set by hsd_chat_default_params() */
    int64_t now_unix; /* strftime_now's clock: < 0 = current (local) time, else this UTC second */
    size_t max_output; /* bytes of rendered text (and of any one string built); 0 = 16 MiB */
    uint32_t max_steps; /* statements + loop iterations + macro calls; 0 = 2,000,000 */
    uint32_t max_depth; /* macro recursion; 0 = 64 */
} hsd_chat_params;
HSD_API hsd_chat_params hsd_chat_default_params(void);

/* path: a GGUF (tokenizer.chat_template, or tokenizer.chat_template.NAME), a
 * tokenizer_config.json (chat_template as a string, or a list of {name, template}), a
 * tokenizer directory or tokenizer.json (its sibling tokenizer_config.json), or a plain
 * template file. name NULL = the default template. Errors: IO, PARSE (the file; or a template
 * syntax error naming line and column), UNSUPPORTED (the file has no chat template),
 * INVALID_ARG (no template of that name), INVALID_UTF8. */
HSD_API hsd_status hsd_chat_template_load(const char *path, const char *name, hsd_chat_template **out);
/* A template from its source text (NUL-terminated). Errors as for hsd_chat_template_load. */
HSD_API hsd_status hsd_chat_template_from_string(const char *source, hsd_chat_template **out);
/* NULL is a no-op. */
HSD_API void hsd_chat_template_free(hsd_chat_template *t);
/* bos_token / eos_token strings that came with the template's file (NULL if none); owned by t. */
HSD_API const char *hsd_chat_template_bos(const hsd_chat_template *t);
HSD_API const char *hsd_chat_template_eos(const hsd_chat_template *t);

/* context_json: one JSON object; every top-level key becomes a template variable (messages,
 * tools, add_generation_prompt, bos_token, eos_token, ...). Keys absent are undefined, as in
 * Jinja2. params NULL = defaults. On success *out is NUL-terminated (freed with hsd_free) and
 * *out_len (if not NULL) its length. Errors: PARSE (context JSON), INVALID_ARG (the template
 * raised: hsd_last_error() is the raise_exception message verbatim, or the Python error such
 * as "UndefinedError: ..." / "TypeError: ..."), OUT_OF_RANGE (output, step or depth limit),
 * UNSUPPORTED (a Jinja feature hsd lacks), NOMEM. */
HSD_API hsd_status hsd_chat_render_json(const hsd_chat_template *t, const char *context_json,
                                        const hsd_chat_params *params, char **out, size_t *out_len);
/* Every end-of-generation id a model declares, as ids of `tok` (its tokenizer), without
 * duplicates: tok's EOS; for a GGUF path tokenizer.ggml.eos_token_id, eot_token_id and
 * eom_token_id; for a tokenizer directory, tokenizer.json or tokenizer_config.json, the
 * config's eos_token and generation_config.json's eos_token_id (a number or a list) found
 * beside it. *ids is yours (hsd_free; NULL when *n is 0). Files that are absent add nothing.
 * Errors: INVALID_ARG (NULL tok, ids or n), PARSE (a malformed config), NOMEM. */
HSD_API hsd_status hsd_chat_eos_ids(const char *path, const hsd_tokenizer *tok, int32_t **ids,
                                    size_t *n);
/* ====================================================================================
 * End of Chat templates
 * ==================================================================================== */

/* ====================================================================================
 * Draft-only proposals  (SLEM drafts for a target verified elsewhere, e.g. vLLM)
 *
 * A proposer holds a drafter (model + tokenizer) and the target's tokenizer, and turns a
 * committed target-token context into SLEM's draft as target ids: the drafter grows the same
 * best-first token tree as an hsd_engine SLEM round (same k, token healing, 3 children per
 * expanded node), the bridge spells every drafter path as text and re-tokenizes it with the
 * target's tokenizer, and of the resulting target-id trie (its 2k most probable nodes: the
 * tree an engine round verifies) the proposer returns ONE chain, cut to the caller's length:
 * its deepest path, and among equally deep paths the first in trie order, i.e. the one of
 * the most probable drafter path (the best-first tree grows deepest along the drafter's most
 * probable continuation: this is that continuation in target tokens).
 * A verifier that accepts the longest prefix its own draws reproduce (vLLM's rejection
 * sampler with point-mass proposals, or greedy matching) keeps the target's output law.
 *
 * State. Each request uses a slot, one of the drafter's sequence slots
 * (hsd_model_params.n_seq): it keeps the request's bridge (committed text, both sides'
 * tokens) and the drafter's KV cache. A call whose context extends the slot's previous one
 * (the previous context is a prefix) appends the new ids and realigns the drafter side, so
 * the drafter only feeds what changed, exactly as the engine does between two rounds; any
 * other context starts the slot afresh: the target ids' text is the committed text and the
 * drafter's side is its decoded text (hsd_tokenizer_decode_alloc, special tokens skipped)
 * encoded as a prompt (with the drafter's BOS when add_bos), as hsd_engine_generate would
 * for that prompt. The caller decides which request uses which slot.
 * ==================================================================================== */
typedef struct hsd_proposer hsd_proposer;

typedef struct hsd_proposer_params {
    size_t size;          /* sizeof(hsd_proposer_params): set by hsd_proposer_default_params;
                           * the library reads min(size, its own) bytes and defaults the rest */
    int32_t n_draft;      /* drafter forwards per proposal: SLEM's k (default 4, 1..63) */
    int32_t n_ctx;        /* positions the target may use (context + proposal); 0 (default):
                           * unlimited. A proposal never runs past it */
    int32_t target_vocab; /* ids the target model accepts (its vocabulary size, which may be
                           * padded past the tokenizer's); 0 (default): the target tokenizer's
                           * size. Proposals only hold ids below min(it, tokenizer size) */
    bool add_bos;         /* the drafter's BOS first in a fresh slot (default true) */
} hsd_proposer_params;

/* The defaults above (size filled in). Thread-safe. */
HSD_API hsd_proposer_params hsd_proposer_default_params(void);
/* Borrows draft, draft_tok and target_tok (they must outlive the proposer; the drafter must
 * not be used elsewhere while the proposer is used). Slots: hsd_model_n_seq(draft). params
 * may be NULL (defaults). On success the caller owns *out (hsd_proposer_free); on failure
 * *out is NULL. Errors: INVALID_ARG (NULL draft/draft_tok/target_tok/out, params->size 0,
 * n_draft outside 1..63, n_ctx or target_vocab < 0, a drafter without vocabulary or
 * context), NOMEM. Thread-safe for different drafters. */
HSD_API hsd_status hsd_proposer_init(hsd_model *draft, const hsd_tokenizer *draft_tok,
                                     const hsd_tokenizer *target_tok,
                                     const hsd_proposer_params *params, hsd_proposer **out);
/* NULL is a no-op. */
HSD_API void hsd_proposer_free(hsd_proposer *p);
/* Number of slots (the drafter's sequence slots); 0 for NULL. */
HSD_API int32_t hsd_proposer_n_slots(const hsd_proposer *p);
/* Proposes for n requests in one step: request i uses slot slots[i] (each slot at most once
 * per call) and has the committed target ids ctx[i][0..n_ctx[i]) (n_ctx[i] >= 1). All
 * requests draft together: each of the k drafter forwards is ONE batched forward
 * (hsd_model_forward_batch) over the requests still drafting. Request i's proposal, at most
 * k_out target ids (1 <= k_out <= 64), goes to out[i * k_out ..] and its length to n_out[i]
 * (0: nothing to propose, e.g. a full context or a drafter out of room). n == 0 does
 * nothing. Errors: INVALID_ARG (NULL p/slots/ctx/n_ctx/out/n_out with n > 0, a NULL
 * context, n_ctx[i] < 1, a slot outside 0..n_slots-1 or repeated, k_out outside 1..64),
 * OUT_OF_RANGE (a context id outside the target tokenizer's vocabulary, naming the request
 * and position), NOMEM, and the drafter's errors. Bad arguments change nothing; a failure
 * after them forgets this call's slots (their next call starts afresh) and zeroes n_out.
 * Not thread-safe per handle. */
HSD_API hsd_status hsd_proposer_propose(hsd_proposer *p, int32_t n, const int32_t *slots,
                                        const int32_t *const *ctx, const int32_t *n_ctx,
                                        int32_t k_out, int32_t *out, int32_t *n_out);
/* Forgets slot's state (its request ended, or the slot is given to another request; a
 * context that does not extend the old one starts afresh anyway). Errors: INVALID_ARG (NULL
 * p, slot out of range). Not thread-safe per handle. */
HSD_API hsd_status hsd_proposer_forget(hsd_proposer *p, int32_t slot);

/* The candidate tree behind slot's last proposal (the tree an engine SLEM round would verify
 * for that context): n nodes in trie order, parents first; ids[j] a target id, parents[j]
 * the index of its parent or -1 (the context), scores[j] the probability of the most
 * probable drafter path through it. *n is 0 when the slot's last call proposed nothing (or
 * it was forgotten). Writes up to cap nodes; HSD_ERR_BUFFER_TOO_SMALL (with *n the count)
 * when cap is smaller. Errors: INVALID_ARG (NULL p or n, slot out of range, NULL buffers
 * with cap > 0). Read-only. */
HSD_API hsd_status hsd_proposer_last_tree(const hsd_proposer *p, int32_t slot, int32_t *ids,
                                          int32_t *parents, double *scores, int32_t cap,
                                          int32_t *n);

/* What the proposer did since init or the last reset. */
typedef struct hsd_proposer_stats {
    int64_t n_calls, n_proposals; /* propose calls; requests proposed for */
    int64_t n_reused, n_fresh;    /* slot states extended / started afresh */
    int64_t n_drafter_forwards;   /* batched drafter forwards */
    int64_t n_tokens;             /* target ids proposed */
    double draft_ms;              /* the batched drafter forwards */
    double bridge_ms;             /* everything else: state, healing, tree, re-tokenization */
} hsd_proposer_stats;
/* Errors: INVALID_ARG (NULL p or out). reset: NULL is a no-op. Not thread-safe per handle. */
HSD_API hsd_status hsd_proposer_get_stats(const hsd_proposer *p, hsd_proposer_stats *out);
HSD_API void hsd_proposer_reset_stats(hsd_proposer *p);
/* ====================================================================================
 * End of Draft-only proposals
 * ==================================================================================== */

#ifdef __cplusplus
}
#endif

#endif /* HSD_H */
