/*
 * hsd — heterogeneous speculative decoding.
 *
 * The one public C API. Conventions (after llama.h):
 *   - every object is an opaque handle created by a *_load / *_init function and released by
 *     the matching *_free function (NULL is accepted by every *_free);
 *   - functions that can fail return an hsd_status; on failure hsd_last_error() returns a
 *     message naming what went wrong and where (file, field, byte offset). The message is
 *     thread-local and stays valid until the next failing call on the same thread;
 *   - the library never prints, exits or aborts.
 */
#ifndef HSD_H
#define HSD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HSD_VERSION_MAJOR 0
#define HSD_VERSION_MINOR 1
#define HSD_VERSION_PATCH 0

typedef enum hsd_status {
    HSD_OK = 0,
    HSD_ERR_INVALID_ARG = 1,  /* NULL handle, out-of-range argument */
    HSD_ERR_IO = 2,           /* file missing or unreadable */
    HSD_ERR_PARSE = 3,        /* malformed file (JSON syntax, truncated binary, bad magic) */
    HSD_ERR_UNSUPPORTED = 4,  /* well-formed but uses a feature hsd does not implement */
    HSD_ERR_INVALID_UTF8 = 5, /* input text is not valid UTF-8 */
    HSD_ERR_OUT_OF_RANGE = 6, /* token id outside the vocabulary */
    HSD_ERR_NOMEM = 7,
    HSD_ERR_BUFFER_TOO_SMALL = 8, /* output did not fit; the needed size is reported */
    HSD_ERR_INTERNAL = 9,
} hsd_status;

/* Message of the last failure on this thread ("" if none). */
const char *hsd_last_error(void);
/* Short constant name of a status, e.g. "HSD_ERR_PARSE". */
const char *hsd_status_str(hsd_status s);
const char *hsd_version(void);

/* Optional log callback: the library never prints; notices such as "no CUDA device, using
 * CPU" are passed to fn (NULL = discard, the default). The only global state hsd keeps. Set
 * it before other calls; it may be called from any thread that calls into hsd. */
typedef enum hsd_log_level { HSD_LOG_DEBUG = 0, HSD_LOG_INFO, HSD_LOG_WARN, HSD_LOG_ERROR } hsd_log_level;
typedef void (*hsd_log_fn)(hsd_log_level level, const char *msg, void *user);
void hsd_log_set(hsd_log_fn fn, void *user);

/* Frees memory that an hsd_* function allocated for the caller (e.g. *_alloc outputs). */
void hsd_free(void *p);

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

hsd_status hsd_tokenizer_load_file(const char *path, hsd_tokenizer **out);
/* `name` is used in error messages only (may be NULL). The bytes are copied as needed. */
hsd_status hsd_tokenizer_load_memory(const void *data, size_t size, hsd_tokenizer_format format,
                                     const char *name, hsd_tokenizer **out);
void hsd_tokenizer_free(hsd_tokenizer *tok);

/* Encodes `len` bytes of UTF-8 text. With add_special the post-processor's special tokens are
 * added (HF add_special_tokens=true). Writes up to `cap` ids; *n_ids receives the number of
 * ids produced. If cap is too small, returns HSD_ERR_BUFFER_TOO_SMALL and *n_ids is the size
 * needed. Invalid UTF-8 → HSD_ERR_INVALID_UTF8 naming the byte offset. */
hsd_status hsd_tokenizer_encode(const hsd_tokenizer *tok, const char *text, size_t len,
                                bool add_special, int32_t *ids, size_t cap, size_t *n_ids);
/* Same, allocating: *ids must be released with hsd_free. */
hsd_status hsd_tokenizer_encode_alloc(const hsd_tokenizer *tok, const char *text, size_t len,
                                      bool add_special, int32_t **ids, size_t *n_ids);

/* Decodes ids to text exactly as HF tokenizers' decode(ids, skip_special_tokens). The text is
 * NUL-terminated and *len (if not NULL) gets its length; release with hsd_free. Byte tokens
 * that do not form valid UTF-8 decode to U+FFFD as HF does. */
hsd_status hsd_tokenizer_decode_alloc(const hsd_tokenizer *tok, const int32_t *ids, size_t n_ids,
                                      bool skip_special, char **text, size_t *len);

/* Number of ids (model vocabulary plus added tokens; the largest id + 1). */
int32_t hsd_tokenizer_vocab_size(const hsd_tokenizer *tok);
/* The token's string as stored in the vocabulary (e.g. "Ġhello", "▁the", "<0x41>"), or NULL
 * for an id that is out of range or unused. Owned by the tokenizer. */
const char *hsd_tokenizer_id_to_token(const hsd_tokenizer *tok, int32_t id);
/* Id of a vocabulary string, or -1. */
int32_t hsd_tokenizer_token_to_id(const hsd_tokenizer *tok, const char *token);
/* Surface bytes: what the token contributes to decoded text (byte-level escapes undone,
 * "▁" as space, "<0xNN>" as the byte, WordPiece "##" removed). Not NUL-terminated; *len gets
 * the length. NULL for out-of-range ids. Owned by the tokenizer. Vocabularies of different
 * tokenizers are intersected by these bytes. */
const uint8_t *hsd_tokenizer_token_bytes(const hsd_tokenizer *tok, int32_t id, size_t *len);
bool hsd_tokenizer_is_special(const hsd_tokenizer *tok, int32_t id);
/* Special ids, -1 when the tokenizer has none. */
int32_t hsd_tokenizer_bos_id(const hsd_tokenizer *tok);
int32_t hsd_tokenizer_eos_id(const hsd_tokenizer *tok);
int32_t hsd_tokenizer_unk_id(const hsd_tokenizer *tok);


/* ====================================================================================
 * Models  (issue 3: model core on CPU)
 *
 * A model evaluates new tokens on top of its KV cache and returns next-token logits. The
 * decoding engine sees only this interface, so a caller can plug its own model through
 * hsd_model_iface. A model is NOT thread-safe: one forward at a time per handle.
 *
 * Formats read by hsd_model_load (detected from content):
 *   - llama2.c legacy checkpoints (fp32, "version 0" header of 7 int32);
 *   - GGUF (architectures llama, qwen2; tensor types F32, F16, BF16, Q8_0);
 *   - HuggingFace safetensors + config.json (LlamaForCausalLM, Qwen2ForCausalLM; F32, F16,
 *     BF16); `path` is the model directory or its .safetensors file.
 * Weights are memory-mapped where the format allows (all three formats do).
 * ==================================================================================== */
typedef struct hsd_model hsd_model;

typedef struct hsd_model_params {
    int32_t n_ctx;     /* KV cache capacity in tokens; 0 = the model's context, capped at 4096 */
    int32_t n_threads; /* worker threads for the forward pass; 0 = 2 */
    bool use_mmap;     /* map weights instead of reading them (default true) */
} hsd_model_params;

/* A model as the engine sees it. `parents` describes a token tree over the n new tokens:
 * NULL means a chain (token i follows token i-1); otherwise parents[i] is the index of token
 * i's parent among the new tokens (must be < i) or -1 when its parent is the cached prefix.
 * Token i attends to the whole cache plus its ancestors among the new tokens and itself; its
 * position is kv_len + depth(i). All n tokens are appended to the cache in the order given,
 * so after a tree forward the caller must kv_truncate or kv_keep to a chain before the next
 * forward. `rows` lists which of the n rows need logits (NULL = all, then n_rows == n);
 * logits receives n_rows × vocab_size floats, row-major in the order of `rows`. */
typedef struct hsd_model_iface {
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
} hsd_model_iface;

hsd_model_params hsd_model_default_params(void);
/* params may be NULL (defaults). */
hsd_status hsd_model_load(const char *path, const hsd_model_params *params, hsd_model **out);
/* Wraps a caller's implementation; the iface struct is copied. */
hsd_status hsd_model_from_iface(const hsd_model_iface *iface, hsd_model **out);
void hsd_model_free(hsd_model *model);

int32_t hsd_model_vocab_size(const hsd_model *model);
int32_t hsd_model_n_ctx(const hsd_model *model);
/* One line describing the model ("llama2c stories260K.bin: dim 64, 5 layers, ... f32"). */
const char *hsd_model_desc(const hsd_model *model);
hsd_status hsd_model_forward(hsd_model *model, const int32_t *tokens, int32_t n,
                             const int32_t *parents, const int32_t *rows, int32_t n_rows,
                             float *logits);
int32_t hsd_model_kv_len(const hsd_model *model);
hsd_status hsd_model_kv_truncate(hsd_model *model, int32_t len);
/* Falls back to HSD_ERR_UNSUPPORTED when the implementation has no kv_keep. */
hsd_status hsd_model_kv_keep(hsd_model *model, int32_t base, const int32_t *keep,
                             int32_t n_keep);
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

/* "ar", "sd", "union", "tli", "slem", "slrs", "auto"; parse returns -1 for unknown names. */
const char *hsd_algo_name(hsd_algo a);
int hsd_algo_parse(const char *name);

typedef struct hsd_gen_params {
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
} hsd_gen_params;

typedef struct hsd_gen_result {
    int32_t *ids;   /* generated target ids (release with hsd_gen_result_free) */
    int32_t n_ids;
    char *text;     /* their decoded text (HF decode, special tokens skipped) */
    size_t text_len;
    hsd_algo algo;  /* the algorithm used (AUTO resolved) */
    char reason[160]; /* why AUTO chose it */
    int32_t n_rounds, n_drafted, n_accepted;
    double acceptance_rate; /* accepted drafts / drafted */
    double tau;             /* target tokens emitted per target forward (round) */
    double ttft_ms, tpot_ms, tokens_per_s, total_ms;
    double draft_ms, verify_ms, bridge_ms; /* time split */
    double first_accept_rate; /* SLEM, SLRS: rounds whose first candidate was accepted */
    /* SLRS per round: psi time (tree bookkeeping and sums; drafter forwards are in draft_ms),
     * tree nodes (leaves included), drafter forwards (root feed + one per tree level), and the
     * expected first-position acceptance sum_t min(p, psi) next to exact matching's
     * sum_t p * psi for the same proposal (Thm 3.1: the first is never smaller) */
    double psi_ms, tree_nodes, tree_forwards;
    double expected_accept, expected_accept_em;
} hsd_gen_result;

typedef struct hsd_engine hsd_engine;

hsd_gen_params hsd_gen_default_params(void);
/* draft and draft_tok may be NULL (AR only). The engine borrows the four handles. */
hsd_status hsd_engine_init(hsd_model *target, const hsd_tokenizer *target_tok, hsd_model *draft,
                           const hsd_tokenizer *draft_tok, hsd_engine **out);
void hsd_engine_free(hsd_engine *e);
/* The algorithm AUTO resolves to for this pair, with a one-line reason. */
hsd_algo hsd_engine_auto_algo(const hsd_engine *e, char *reason, size_t reason_cap);
/* |T ∩ D| by surface bytes (special tokens excluded). */
int32_t hsd_engine_overlap(const hsd_engine *e);
/* Generates from `prompt` (len bytes of UTF-8). The engine keeps what it left in the models'
 * KV caches and reuses the prefix a new prompt shares with it (prefix caching); if the models
 * are used outside the engine between calls, call hsd_engine_reset first. */
void hsd_engine_reset(hsd_engine *e);
hsd_status hsd_engine_generate(hsd_engine *e, const char *prompt, size_t len,
                               const hsd_gen_params *params, hsd_gen_result *res);
void hsd_gen_result_free(hsd_gen_result *r);
/* ====================================================================================
 * End of Engine
 * ==================================================================================== */

#ifdef __cplusplus
}
#endif
#endif /* HSD_H */
