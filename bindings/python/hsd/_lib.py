"""Loading libhsd.so and declaring the C prototypes of include/hsd.h and hsd_tools.h (ctypes, no
compile step).

The library is looked up, in order: $HSD_LIBRARY (a path), a libhsd.so next to this package,
the build directory of the source tree this package sits in (build/, then build-*/), and last
the system's loader path (libhsd.so.<major>).
"""
import ctypes
import glob
import os

SO_MAJOR = 1  # HSD_VERSION_MAJOR: the SONAME this binding was written against


def _candidates():
    env = os.environ.get("HSD_LIBRARY")
    if env:
        yield env
        return
    here = os.path.dirname(os.path.abspath(__file__))
    for name in ("libhsd.so", "libhsd.so.%d" % SO_MAJOR):
        yield os.path.join(here, name)
    root = os.path.dirname(os.path.dirname(os.path.dirname(here)))  # bindings/python/hsd -> repo
    yield os.path.join(root, "build", "libhsd.so")
    for p in sorted(glob.glob(os.path.join(root, "build-*", "libhsd.so"))):
        yield p
    yield "libhsd.so.%d" % SO_MAJOR


def _load():
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(path + " (missing)")
            continue
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
    raise ImportError("hsd: cannot load libhsd.so; set HSD_LIBRARY. Tried: " + "; ".join(tried))


lib = _load()

c_int32_p = ctypes.POINTER(ctypes.c_int32)
c_float_p = ctypes.POINTER(ctypes.c_float)


class CudaOptions(ctypes.Structure):
    """struct hsd_cuda_options"""
    _fields_ = [("no_graphs", ctypes.c_bool), ("cublas_gemv", ctypes.c_bool),
                ("warp_gemm", ctypes.c_bool), ("no_pdl", ctypes.c_bool),
                ("mma_variant", ctypes.c_int32)]


class ModelParams(ctypes.Structure):
    """struct hsd_model_params"""
    _fields_ = [("size", ctypes.c_size_t), ("n_ctx", ctypes.c_int32), ("n_threads", ctypes.c_int32),
                ("use_mmap", ctypes.c_bool), ("backend", ctypes.c_int),
                ("device_weights", ctypes.c_int), ("n_seq", ctypes.c_int32),
                ("cpu_kernels", ctypes.c_int), ("no_pack", ctypes.c_bool),
                ("no_blas", ctypes.c_bool), ("cuda", CudaOptions),
                ("kv_type", ctypes.c_int), ("reserved_kv", ctypes.c_int32),
                ("kv_no_rotate", ctypes.c_bool)]


# hsd_stream_fn: bool (*)(void *user, int32_t seq, const char *text, size_t len,
#                         const int32_t *ids, int32_t n_ids)
STREAM_FN = ctypes.CFUNCTYPE(ctypes.c_bool, ctypes.c_void_p, ctypes.c_int32, ctypes.c_void_p,
                             ctypes.c_size_t, c_int32_p, ctypes.c_int32)


class GenParams(ctypes.Structure):
    """struct hsd_gen_params"""
    _fields_ = [("size", ctypes.c_size_t), ("algo", ctypes.c_int), ("max_new_tokens", ctypes.c_int32),
                ("n_draft", ctypes.c_int32), ("adaptive_k", ctypes.c_bool),
                ("k_max", ctypes.c_int32), ("temp", ctypes.c_float), ("top_k", ctypes.c_int32),
                ("top_p", ctypes.c_float), ("seed", ctypes.c_uint64),
                ("stop_at_eos", ctypes.c_bool), ("stop", ctypes.POINTER(ctypes.c_char_p)),
                ("n_stop", ctypes.c_int32), ("add_bos", ctypes.c_bool),
                ("slrs_top_k", ctypes.c_int32), ("slrs_top_p", ctypes.c_float),
                ("slrs_max_nodes", ctypes.c_int32), ("slrs_lookahead", ctypes.c_int32),
                ("slrs_single_forward", ctypes.c_bool), ("n_ctx", ctypes.c_int32),
                ("on_text", STREAM_FN), ("user_data", ctypes.c_void_p), ("cost_k", ctypes.c_bool)]


class SlrsStats(ctypes.Structure):
    """struct hsd_slrs_stats"""
    _fields_ = [("size", ctypes.c_size_t), ("psi_ms", ctypes.c_double),
                ("tree_nodes", ctypes.c_double), ("tree_forwards", ctypes.c_double),
                ("expected_accept", ctypes.c_double), ("expected_accept_em", ctypes.c_double)]


class GenResult(ctypes.Structure):
    """struct hsd_gen_result"""
    _fields_ = [("size", ctypes.c_size_t), ("ids", c_int32_p), ("n_ids", ctypes.c_int32),
                ("text", ctypes.c_void_p), ("text_len", ctypes.c_size_t), ("algo", ctypes.c_int),
                ("reason", ctypes.c_void_p), ("n_rounds", ctypes.c_int32),
                ("n_drafted", ctypes.c_int32), ("n_accepted", ctypes.c_int32),
                ("acceptance_rate", ctypes.c_double), ("tau", ctypes.c_double),
                ("ttft_ms", ctypes.c_double), ("tpot_ms", ctypes.c_double),
                ("tokens_per_s", ctypes.c_double), ("total_ms", ctypes.c_double),
                ("draft_ms", ctypes.c_double), ("verify_ms", ctypes.c_double),
                ("bridge_ms", ctypes.c_double), ("first_accept_rate", ctypes.c_double),
                ("stop_reason", ctypes.c_int), ("slrs", ctypes.POINTER(SlrsStats)),
                ("k_mean", ctypes.c_double)]


VOCAB_FN = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)
FORWARD_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, c_int32_p, ctypes.c_int32, c_int32_p,
                              c_int32_p, ctypes.c_int32, c_float_p)
TRUNCATE_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int32)
KEEP_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int32, c_int32_p,
                           ctypes.c_int32)
FREE_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
LOG_FN = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)


class ModelIface(ctypes.Structure):
    """struct hsd_model_iface"""
    _fields_ = [("size", ctypes.c_size_t), ("ctx", ctypes.c_void_p), ("vocab_size", VOCAB_FN), ("n_ctx", VOCAB_FN),
                ("forward", FORWARD_FN), ("kv_len", VOCAB_FN), ("kv_truncate", TRUNCATE_FN),
                ("kv_keep", KEEP_FN), ("free", FREE_FN),
                # optional sequence slots (left NULL: one slot)
                ("n_seq", VOCAB_FN), ("seq_select", TRUNCATE_FN),
                ("forward_batch", ctypes.c_void_p)]


class PairPsi(ctypes.Structure):
    """struct hsd_pair_psi (include/hsd_tools.h)"""
    _fields_ = [("tokens", ctypes.c_int32), ("none", ctypes.c_int32), ("mean", ctypes.c_double),
                ("median", ctypes.c_double), ("p75", ctypes.c_double), ("max", ctypes.c_double),
                ("max_id", ctypes.c_int32), ("nodes_mean", ctypes.c_double),
                ("nodes_p75", ctypes.c_double), ("n_max", ctypes.c_int32)]


class SynthParams(ctypes.Structure):
    """struct hsd_synth_params (include/hsd_tools.h)"""
    _fields_ = [("size", ctypes.c_size_t), ("shape", ctypes.c_char_p), ("type", ctypes.c_int), ("seed", ctypes.c_uint64),
                ("tokenizer_ids", ctypes.c_int32)]


class ChatParams(ctypes.Structure):
    """struct hsd_chat_params"""
    _fields_ = [("size", ctypes.c_size_t), ("now_unix", ctypes.c_int64),
                ("max_output", ctypes.c_size_t), ("max_steps", ctypes.c_uint32),
                ("max_depth", ctypes.c_uint32)]


class ProposerParams(ctypes.Structure):
    """struct hsd_proposer_params"""
    _fields_ = [("size", ctypes.c_size_t), ("n_draft", ctypes.c_int32),
                ("n_ctx", ctypes.c_int32), ("target_vocab", ctypes.c_int32),
                ("add_bos", ctypes.c_bool)]


class ProposerStats(ctypes.Structure):
    """struct hsd_proposer_stats"""
    _fields_ = [("n_calls", ctypes.c_int64), ("n_proposals", ctypes.c_int64),
                ("n_reused", ctypes.c_int64), ("n_fresh", ctypes.c_int64),
                ("n_drafter_forwards", ctypes.c_int64), ("n_tokens", ctypes.c_int64),
                ("draft_ms", ctypes.c_double), ("bridge_ms", ctypes.c_double)]


P = ctypes.c_void_p
_S = ctypes.c_int  # hsd_status
_protos = {
    "hsd_last_error": (ctypes.c_char_p, []),
    "hsd_status_str": (ctypes.c_char_p, [ctypes.c_int]),
    "hsd_version": (ctypes.c_char_p, []),
    "hsd_struct_size": (ctypes.c_size_t, [ctypes.c_char_p]),
    "hsd_log_set": (None, [LOG_FN, P]),
    "hsd_free": (None, [P]),
    "hsd_tokenizer_load_file": (_S, [ctypes.c_char_p, ctypes.POINTER(P)]),
    "hsd_tokenizer_load_memory": (_S, [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int,
                                       ctypes.c_char_p, ctypes.POINTER(P)]),
    "hsd_tokenizer_free": (None, [P]),
    "hsd_tokenizer_encode": (_S, [P, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_bool, c_int32_p,
                                  ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t)]),
    "hsd_tokenizer_encode_alloc": (_S, [P, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_bool,
                                        ctypes.POINTER(c_int32_p),
                                        ctypes.POINTER(ctypes.c_size_t)]),
    "hsd_tokenizer_decode_alloc": (_S, [P, c_int32_p, ctypes.c_size_t, ctypes.c_bool,
                                        ctypes.POINTER(ctypes.c_void_p),
                                        ctypes.POINTER(ctypes.c_size_t)]),
    "hsd_tokenizer_vocab_size": (ctypes.c_int32, [P]),
    "hsd_tokenizer_id_to_token": (ctypes.c_char_p, [P, ctypes.c_int32]),
    "hsd_tokenizer_token_to_id": (ctypes.c_int32, [P, ctypes.c_char_p]),
    "hsd_tokenizer_token_bytes": (ctypes.c_void_p, [P, ctypes.c_int32,
                                                    ctypes.POINTER(ctypes.c_size_t)]),
    "hsd_tokenizer_is_special": (ctypes.c_bool, [P, ctypes.c_int32]),
    "hsd_tokenizer_bos_id": (ctypes.c_int32, [P]),
    "hsd_tokenizer_eos_id": (ctypes.c_int32, [P]),
    "hsd_tokenizer_unk_id": (ctypes.c_int32, [P]),
    "hsd_model_default_params": (ModelParams, []),
    "hsd_model_load": (_S, [ctypes.c_char_p, ctypes.POINTER(ModelParams), ctypes.POINTER(P)]),
    "hsd_model_from_iface": (_S, [ctypes.POINTER(ModelIface), ctypes.POINTER(P)]),
    "hsd_model_free": (None, [P]),
    "hsd_model_vocab_size": (ctypes.c_int32, [P]),
    "hsd_model_n_ctx": (ctypes.c_int32, [P]),
    "hsd_model_n_ctx_train": (ctypes.c_int32, [P]),
    "hsd_model_desc": (ctypes.c_char_p, [P]),
    "hsd_model_forward": (_S, [P, c_int32_p, ctypes.c_int32, c_int32_p, c_int32_p,
                               ctypes.c_int32, c_float_p]),
    "hsd_model_kv_len": (ctypes.c_int32, [P]),
    "hsd_model_kv_truncate": (_S, [P, ctypes.c_int32]),
    "hsd_model_kv_keep": (_S, [P, ctypes.c_int32, c_int32_p, ctypes.c_int32]),
    "hsd_algo_name": (ctypes.c_char_p, [ctypes.c_int]),
    "hsd_algo_parse": (ctypes.c_int, [ctypes.c_char_p]),
    "hsd_stop_reason_name": (ctypes.c_char_p, [ctypes.c_int]),
    "hsd_gen_default_params": (GenParams, []),
    "hsd_engine_init": (_S, [P, P, P, P, ctypes.POINTER(P)]),
    "hsd_engine_free": (None, [P]),
    "hsd_engine_auto_algo": (ctypes.c_int, [P, ctypes.c_char_p, ctypes.c_size_t]),
    "hsd_engine_overlap": (ctypes.c_int32, [P]),
    "hsd_engine_reset": (None, [P]),
    "hsd_engine_generate": (_S, [P, ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(GenParams),
                                 ctypes.POINTER(GenResult)]),
    "hsd_gen_result_free": (None, [ctypes.POINTER(GenResult)]),
    "hsd_model_n_seq": (ctypes.c_int32, [P]),
    "hsd_backend_parse": (ctypes.c_int, [ctypes.c_char_p]),
    "hsd_model_set_head_spec": (_S, [P, ctypes.c_char_p, c_int32_p, ctypes.c_int32]),
    "hsd_model_head_desc": (ctypes.c_char_p, [P]),
    # draft-only proposals (issue 25)
    "hsd_proposer_default_params": (ProposerParams, []),
    "hsd_proposer_init": (_S, [P, P, P, ctypes.POINTER(ProposerParams), ctypes.POINTER(P)]),
    "hsd_proposer_free": (None, [P]),
    "hsd_proposer_n_slots": (ctypes.c_int32, [P]),
    "hsd_proposer_propose": (_S, [P, ctypes.c_int32, c_int32_p, ctypes.POINTER(c_int32_p),
                                  c_int32_p, ctypes.c_int32, c_int32_p, c_int32_p]),
    "hsd_proposer_forget": (_S, [P, ctypes.c_int32]),
    "hsd_proposer_last_tree": (_S, [P, ctypes.c_int32, c_int32_p, c_int32_p,
                                    ctypes.POINTER(ctypes.c_double), ctypes.c_int32, c_int32_p]),
    "hsd_proposer_get_stats": (_S, [P, ctypes.POINTER(ProposerStats)]),
    "hsd_proposer_reset_stats": (None, [P]),
    "hsd_engine_set_eos_ids": (_S, [P, c_int32_p, ctypes.c_int32]),
    # chat templates
    "hsd_chat_default_params": (ChatParams, []),
    "hsd_chat_template_load": (_S, [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(P)]),
    "hsd_chat_template_from_string": (_S, [ctypes.c_char_p, ctypes.POINTER(P)]),
    "hsd_chat_template_free": (None, [P]),
    "hsd_chat_template_bos": (ctypes.c_char_p, [P]),
    "hsd_chat_template_eos": (ctypes.c_char_p, [P]),
    "hsd_chat_render_json": (_S, [P, ctypes.c_char_p, ctypes.POINTER(ChatParams),
                                  ctypes.POINTER(ctypes.c_void_p),
                                  ctypes.POINTER(ctypes.c_size_t)]),
    "hsd_chat_eos_ids": (_S, [ctypes.c_char_p, P, ctypes.POINTER(c_int32_p),
                              ctypes.POINTER(ctypes.c_size_t)]),
    # tools (include/hsd_tools.h)
    "hsd_pair_psi_summary": (_S, [P, P, ctypes.POINTER(PairPsi)]),
    "hsd_synth_shape_list": (ctypes.c_char_p, []),
    "hsd_synth_default_params": (SynthParams, []),
    "hsd_synth_init": (_S, [ctypes.POINTER(SynthParams), ctypes.POINTER(P)]),
    "hsd_synth_free": (None, [P]),
    "hsd_synth_weight_bytes": (ctypes.c_size_t, [P]),
    "hsd_synth_write_gguf_tok": (_S, [P, ctypes.c_char_p, ctypes.c_char_p]),
    "hsd_synth_write_safetensors": (_S, [P, ctypes.c_char_p]),
}
for _name, (_res, _args) in _protos.items():
    _f = getattr(lib, _name)
    _f.restype = _res
    _f.argtypes = _args


#: the structs this binding mirrors, by their C names
MIRRORED = {"hsd_model_params": ModelParams, "hsd_gen_params": GenParams,
            "hsd_gen_result": GenResult, "hsd_slrs_stats": SlrsStats,
            "hsd_model_iface": ModelIface, "hsd_pair_psi": PairPsi,
            "hsd_synth_params": SynthParams, "hsd_chat_params": ChatParams,
            "hsd_proposer_params": ProposerParams, "hsd_proposer_stats": ProposerStats}


def check_library(lib_, so_major=SO_MAJOR, mirrored=None):
    """Refuses a library this binding was not written for: another major version, or a
    struct whose size differs from the binding's mirror (the layouts would disagree and
    every call passing it would read garbage). Returns the library's version string."""
    path = getattr(lib_, "_name", "libhsd.so")
    try:
        version = lib_.hsd_version().decode()
    except AttributeError:
        raise ImportError("hsd: %s has no hsd_version(): not an hsd library" % path)
    major = int(version.split(".")[0])
    if major != so_major:
        raise ImportError("hsd: %s is version %s, but this binding needs major version %d "
                          "(libhsd.so.%d); install the matching library or binding"
                          % (path, version, so_major, so_major))
    if not hasattr(lib_, "hsd_struct_size"):
        raise ImportError("hsd: %s (version %s) has no hsd_struct_size(): too old for this "
                          "binding" % (path, version))
    bad = []
    for name, cls in (mirrored or MIRRORED).items():
        theirs, ours = lib_.hsd_struct_size(name.encode()), ctypes.sizeof(cls)
        if theirs != ours:
            bad.append("%s is %d bytes in the library, %d in the binding" % (name, theirs, ours))
    if bad:
        raise ImportError("hsd: %s (version %s) does not match this binding: %s"
                          % (path, version, "; ".join(bad)))
    return version


VERSION = check_library(lib)
