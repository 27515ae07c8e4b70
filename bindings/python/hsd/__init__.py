"""hsd — heterogeneous speculative decoding, Python binding over libhsd.so (ctypes).

    import hsd
    tt = hsd.Tokenizer("tok105.bin"); dt = hsd.Tokenizer("tok512.bin")
    target = hsd.Model("model5000.bin"); drafter = hsd.Model("stories260K.bin")
    with hsd.Engine(target, tt, drafter, dt) as e:
        r = e.generate("Once upon a time", algo="slem", max_new_tokens=64)
        print(r.text, r.acceptance_rate)

Every failing call raises HsdError, which carries the C status (HsdError.status, an hsd.Status)
and hsd_last_error()'s message. Handles are released by close(), by `with`, or when the object
is garbage collected; a model or tokenizer cannot be closed while an open Engine borrows it.
"""
import ctypes
import datetime
import enum
import json
import queue
import threading

from . import _lib
from ._lib import lib

__all__ = ["Status", "HsdError", "Tokenizer", "Model", "Engine", "Result", "Proposer",
           "ChatTemplate", "ALGORITHMS",
           "version", "set_log", "psi_summary", "synth", "SYNTH_TYPES"]

#: algorithm names accepted by Engine.generate, in hsd_algo order
ALGORITHMS = ("ar", "sd", "union", "tli", "slem", "slrs", "auto")


class Status(enum.IntEnum):
    """enum hsd_status"""
    OK = 0
    ERR_INVALID_ARG = 1
    ERR_IO = 2
    ERR_PARSE = 3
    ERR_UNSUPPORTED = 4
    ERR_INVALID_UTF8 = 5
    ERR_OUT_OF_RANGE = 6
    ERR_NOMEM = 7
    ERR_BUFFER_TOO_SMALL = 8
    ERR_INTERNAL = 9


class HsdError(Exception):
    """A failed hsd call: .status (Status) and .message (hsd_last_error() at the failure)."""

    def __init__(self, status, message):
        try:
            self.status = Status(status)
        except ValueError:
            self.status = status
        self.message = message
        name = lib.hsd_status_str(int(status)).decode()
        super().__init__("%s: %s" % (name, message))


def _check(status):
    if status != 0:
        raise HsdError(status, lib.hsd_last_error().decode("utf-8", "replace"))


def _utf8(text):
    """str → UTF-8 bytes; bytes pass through unchanged (so invalid UTF-8 reaches the library,
    which reports it)."""
    if isinstance(text, str):
        return text.encode("utf-8", "surrogatepass")
    if isinstance(text, (bytes, bytearray)):
        return bytes(text)
    raise TypeError("expected str or bytes, got %s" % type(text).__name__)


def _ids_array(ids):
    ids = list(ids)
    return (ctypes.c_int32 * max(len(ids), 1))(*ids), len(ids)


def version():
    """The library's version, "MAJOR.MINOR.PATCH" (hsd_version())."""
    return lib.hsd_version().decode()


__version__ = version()
_log_keep = None  # the installed ctypes callback must outlive its use by the library


def set_log(fn):
    """Route the library's notices to fn(level: int, message: str); None discards them."""
    global _log_keep
    if fn is None:
        lib.hsd_log_set(_lib.LOG_FN(), None)
        _log_keep = None
        return

    def tramp(level, msg, user):
        try:
            fn(level, msg.decode("utf-8", "replace"))
        except Exception:  # an exception must not unwind through C
            pass

    cb = _lib.LOG_FN(tramp)
    lib.hsd_log_set(cb, None)
    _log_keep = cb


class _Handle:
    """An owned C handle: freed once, by close(), `with` or garbage collection."""
    _free = None

    def __init__(self):
        self._h = None
        self._borrowers = 0

    @property
    def _handle(self):
        if not self._h:
            raise ValueError("%s is closed" % type(self).__name__)
        return self._h

    def close(self):
        if self._borrowers:
            raise RuntimeError("%s is borrowed by an open Engine; close the engine first"
                               % type(self).__name__)
        if self._h:
            type(self)._free(self._h)
            self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_h", None) and not self._borrowers:
            self.close()


_FORMATS = {"auto": 0, "hf_json": 1, "llama2c": 2, "gguf": 3}


class Tokenizer(_Handle):
    """A tokenizer: HF tokenizer.json, llama2.c tokenizer.bin or GGUF vocabulary.

    Tokenizer(path) loads a file; Tokenizer.from_bytes(data, format="auto") loads memory."""
    _free = staticmethod(lib.hsd_tokenizer_free)

    def __init__(self, path=None, *, _handle=None):
        super().__init__()
        if _handle is not None:
            self._h = _handle
            return
        if path is None:
            raise TypeError("Tokenizer(path) or Tokenizer.from_bytes(data)")
        h = ctypes.c_void_p()
        _check(lib.hsd_tokenizer_load_file(_utf8(str(path)), ctypes.byref(h)))
        self._h = h.value

    @classmethod
    def from_bytes(cls, data, format="auto", name=None):
        if format not in _FORMATS:
            raise ValueError("format must be one of %s" % ", ".join(_FORMATS))
        data = bytes(data)
        h = ctypes.c_void_p()
        _check(lib.hsd_tokenizer_load_memory(data, len(data), _FORMATS[format],
                                             _utf8(name) if name else None, ctypes.byref(h)))
        return cls(_handle=h.value)

    def encode(self, text, add_special=False):
        """Token ids of text (str or UTF-8 bytes); add_special adds the post-processor's
        special tokens, as HF's add_special_tokens=True."""
        b = _utf8(text)
        ids = _lib.c_int32_p()
        n = ctypes.c_size_t()
        _check(lib.hsd_tokenizer_encode_alloc(self._handle, b, len(b), bool(add_special),
                                              ctypes.byref(ids), ctypes.byref(n)))
        try:
            return ids[:n.value] if n.value else []
        finally:
            lib.hsd_free(ids)

    def decode_bytes(self, ids, skip_special=False):
        arr, n = _ids_array(ids)
        p = ctypes.c_void_p()
        ln = ctypes.c_size_t()
        _check(lib.hsd_tokenizer_decode_alloc(self._handle, arr, n, bool(skip_special),
                                              ctypes.byref(p), ctypes.byref(ln)))
        try:
            return ctypes.string_at(p.value, ln.value) if ln.value else b""
        finally:
            lib.hsd_free(p)

    def decode(self, ids, skip_special=False):
        """Text of ids exactly as HF's decode(ids, skip_special_tokens=skip_special)."""
        return self.decode_bytes(ids, skip_special).decode("utf-8", "replace")

    def token_bytes(self, id):
        """What token `id` contributes to decoded text (bytes), or None out of range."""
        n = ctypes.c_size_t()
        p = lib.hsd_tokenizer_token_bytes(self._handle, int(id), ctypes.byref(n))
        return None if not p else ctypes.string_at(p, n.value)

    def id_to_token(self, id):
        """The vocabulary string of id ("Ġhello", "▁the"), or None."""
        s = lib.hsd_tokenizer_id_to_token(self._handle, int(id))
        return None if s is None else s.decode("utf-8", "surrogateescape")

    def token_to_id(self, token):
        """The id of a vocabulary string, or None."""
        i = lib.hsd_tokenizer_token_to_id(self._handle, _utf8(token))
        return None if i < 0 else i

    def is_special(self, id):
        return bool(lib.hsd_tokenizer_is_special(self._handle, int(id)))

    @property
    def vocab_size(self):
        return lib.hsd_tokenizer_vocab_size(self._handle)

    def _opt(self, v):
        return None if v < 0 else v

    @property
    def bos_id(self):
        return self._opt(lib.hsd_tokenizer_bos_id(self._handle))

    @property
    def eos_id(self):
        return self._opt(lib.hsd_tokenizer_eos_id(self._handle))

    @property
    def unk_id(self):
        return self._opt(lib.hsd_tokenizer_unk_id(self._handle))

    def __len__(self):
        return self.vocab_size


class Model(_Handle):
    """A model: Model(path) loads llama2.c, GGUF or safetensors; Model.from_callbacks(obj)
    plugs a Python implementation of the model interface (see from_callbacks)."""
    _free = staticmethod(lib.hsd_model_free)

    def __init__(self, path=None, n_ctx=0, n_threads=0, use_mmap=True, *, n_seq=0,
                 backend="auto", _handle=None):
        super().__init__()
        self._iface = None
        if _handle is not None:
            self._h = _handle
            return
        if path is None:
            raise TypeError("Model(path) or Model.from_callbacks(obj)")
        p = lib.hsd_model_default_params()
        p.n_ctx, p.n_threads, p.use_mmap, p.n_seq = n_ctx, n_threads, use_mmap, n_seq
        be = lib.hsd_backend_parse(_utf8(backend))
        if be < 0:
            raise ValueError("backend must be auto, cpu or cuda (got %r)" % (backend,))
        p.backend = be
        h = ctypes.c_void_p()
        _check(lib.hsd_model_load(_utf8(str(path)), ctypes.byref(p), ctypes.byref(h)))
        self._h = h.value

    @classmethod
    def from_callbacks(cls, impl):
        """A model implemented in Python. `impl` provides vocab_size and n_ctx (ints),
        forward(tokens, parents, rows) returning one list of vocab_size logits per requested
        row (rows is a list of indices into tokens; parents None for a chain, else a list),
        kv_len() and kv_truncate(length), and optionally kv_keep(base, keep). hsd checks the
        arguments before calling it. An exception in a callback fails the call with
        ERR_INTERNAL."""
        vocab, n_ctx = int(impl.vocab_size), int(impl.n_ctx)

        def guard(fn):
            def wrapped(*a):
                try:
                    return fn(*a)
                except Exception:
                    return int(Status.ERR_INTERNAL)
            return wrapped

        def forward(ctx, tokens, n, parents, rows, n_rows, logits):
            toks = tokens[:n]
            pars = parents[:n] if parents else None
            rws = rows[:n_rows] if rows else list(range(n_rows))
            out = impl.forward(toks, pars, rws)
            if len(out) != n_rows or any(len(r) != vocab for r in out):
                return int(Status.ERR_INTERNAL)
            flat = (ctypes.c_float * (n_rows * vocab)).from_address(
                ctypes.addressof(logits.contents)) if n_rows else None
            for i, row in enumerate(out):
                flat[i * vocab:(i + 1) * vocab] = [float(x) for x in row]
            return 0

        def truncate(ctx, length):
            impl.kv_truncate(length)
            return 0

        def keep(ctx, base, kp, n_keep):
            impl.kv_keep(base, kp[:n_keep] if n_keep else [])
            return 0

        iface = _lib.ModelIface()
        iface.size = ctypes.sizeof(iface)  # HSD_MODEL_IFACE_INIT
        iface.ctx = None
        iface.vocab_size = _lib.VOCAB_FN(lambda ctx: vocab)
        iface.n_ctx = _lib.VOCAB_FN(lambda ctx: n_ctx)
        iface.forward = _lib.FORWARD_FN(guard(forward))
        iface.kv_len = _lib.VOCAB_FN(lambda ctx: int(impl.kv_len()))
        iface.kv_truncate = _lib.TRUNCATE_FN(guard(truncate))
        if hasattr(impl, "kv_keep"):
            iface.kv_keep = _lib.KEEP_FN(guard(keep))
        h = ctypes.c_void_p()
        _check(lib.hsd_model_from_iface(ctypes.byref(iface), ctypes.byref(h)))
        m = cls(_handle=h.value)
        m._iface = (iface, impl)  # the C side holds these callbacks until hsd_model_free
        return m

    @property
    def vocab_size(self):
        return lib.hsd_model_vocab_size(self._handle)

    @property
    def n_ctx(self):
        return lib.hsd_model_n_ctx(self._handle)

    @property
    def n_seq(self):
        """Sequence slots (Model(..., n_seq=N)); 1 for a model without slots."""
        return lib.hsd_model_n_seq(self._handle)

    @property
    def desc(self):
        return lib.hsd_model_desc(self._handle).decode("utf-8", "replace")

    @property
    def kv_len(self):
        return lib.hsd_model_kv_len(self._handle)

    def forward(self, tokens, parents=None, rows=None):
        """Appends tokens to the KV cache; returns the logits (lists of vocab_size floats) of
        `rows` (indices into tokens; default: every token)."""
        t, n = _ids_array(tokens)
        rws = list(range(n)) if rows is None else list(rows)
        r, nr = _ids_array(rws)
        p = _ids_array(parents)[0] if parents is not None else None
        v = self.vocab_size
        out = (ctypes.c_float * max(nr * v, 1))()
        _check(lib.hsd_model_forward(self._handle, t, n, p, r, nr, out))
        return [list(out[i * v:(i + 1) * v]) for i in range(nr)]

    def kv_truncate(self, length):
        _check(lib.hsd_model_kv_truncate(self._handle, int(length)))

    def set_head(self, spec):
        """Replaces the LM head for drafting (hsd_model_set_head_spec without an engine):
        "full", "trim:IDS_FILE", "spec:K[/R][:FILE]" or "lowrank:R[:FILE]"."""
        _check(lib.hsd_model_set_head_spec(self._handle, _utf8(spec), None, 0))

    @property
    def head_desc(self):
        return lib.hsd_model_head_desc(self._handle).decode("utf-8", "replace")

    def kv_keep(self, base, keep):
        k, n = _ids_array(keep)
        _check(lib.hsd_model_kv_keep(self._handle, int(base), k, n))


class Result:
    """What Engine.generate returns: text, ids, the algorithm used (and why), and stats.

    The statistics carry the names of `hsd generate --json` (an interface: names are only
    added, never renamed): n_generated, rounds, drafted, accepted, acceptance_rate, tau,
    ttft_ms, tpot_ms, tokens_per_s, total_ms, draft_ms, verify_ms, bridge_ms,
    first_accept_rate, k_mean, stop_reason, and for SLRS psi_ms, tree_nodes, tree_forwards,
    expected_accept, expected_accept_em (None for the other algorithms).
    n_rounds, n_drafted and n_accepted are DEPRECATED aliases of rounds, drafted and accepted
    (the C struct's names), kept for existing callers."""

    STATS = ("n_generated", "rounds", "drafted", "accepted", "acceptance_rate", "tau", "ttft_ms",
             "tpot_ms", "tokens_per_s", "total_ms", "draft_ms", "verify_ms", "bridge_ms",
             "first_accept_rate", "k_mean")
    SLRS_STATS = ("psi_ms", "tree_nodes", "tree_forwards", "expected_accept",
                  "expected_accept_em")
    DEPRECATED = {"n_rounds": "rounds", "n_drafted": "drafted", "n_accepted": "accepted"}

    def __init__(self, r):
        self.ids = r.ids[:r.n_ids] if r.n_ids else []
        raw = ctypes.string_at(r.text, r.text_len) if r.text_len else b""
        self.text = raw.decode("utf-8", "replace")
        self.algo = ALGORITHMS[r.algo]
        self.reason = ctypes.string_at(r.reason).decode("utf-8", "replace") if r.reason else ""
        self.stop_reason = lib.hsd_stop_reason_name(r.stop_reason).decode()
        c_names = {"n_generated": "n_ids", "rounds": "n_rounds", "drafted": "n_drafted",
                   "accepted": "n_accepted"}
        self.stats = {k: getattr(r, c_names.get(k, k)) for k in self.STATS}
        slrs = r.slrs.contents if r.slrs else None
        for k in self.SLRS_STATS:
            self.stats[k] = getattr(slrs, k) if slrs is not None else None

    def __getattr__(self, name):
        stats = self.__dict__.get("stats", {})
        name = self.DEPRECATED.get(name, name)
        if name in stats:
            return stats[name]
        raise AttributeError(name)

    def __repr__(self):
        return "Result(algo=%r, n_ids=%d, text=%r)" % (self.algo, len(self.ids), self.text[:40])


class Engine(_Handle):
    """Speculative decoding of `target` (with its tokenizer), drafted by `draft` (optional;
    its tokenizer may differ). The engine borrows the four objects until it is closed."""
    _free = staticmethod(lib.hsd_engine_free)

    def __init__(self, target, target_tokenizer, draft=None, draft_tokenizer=None):
        super().__init__()
        self._parts = [x for x in (target, target_tokenizer, draft, draft_tokenizer) if x]
        h = ctypes.c_void_p()
        _check(lib.hsd_engine_init(target._handle, target_tokenizer._handle,
                                   draft._handle if draft else None,
                                   draft_tokenizer._handle if draft_tokenizer else None,
                                   ctypes.byref(h)))
        self._h = h.value
        for x in self._parts:
            x._borrowers += 1

    def close(self):
        if self._h:
            lib.hsd_engine_free(self._h)
            self._h = None
            for x in self._parts:
                x._borrowers -= 1

    def __del__(self):
        if getattr(self, "_h", None):
            self.close()

    def auto_algo(self):
        """(name, reason): what algo="auto" resolves to for this pair."""
        buf = ctypes.create_string_buffer(160)
        a = lib.hsd_engine_auto_algo(self._handle, buf, len(buf))
        return ALGORITHMS[a], buf.value.decode("utf-8", "replace")

    @property
    def overlap(self):
        """|T ∩ D| by surface bytes."""
        return lib.hsd_engine_overlap(self._handle)

    def reset(self):
        lib.hsd_engine_reset(self._handle)

    @staticmethod
    def _params(algo, max_new_tokens, n_draft, adaptive_k, k_max, temp, top_k, top_p, seed,
                stop_at_eos, stop, add_bos, n_ctx, cost_k=False):
        """hsd_gen_params and the objects that must live as long as the call."""
        if algo not in ALGORITHMS:
            raise ValueError("algo must be one of %s" % ", ".join(ALGORITHMS))
        p = lib.hsd_gen_default_params()
        p.algo = ALGORITHMS.index(algo)
        p.max_new_tokens, p.n_draft, p.adaptive_k, p.k_max = max_new_tokens, n_draft, \
            adaptive_k, k_max
        p.temp, p.top_k, p.top_p, p.seed = temp, top_k, top_p, seed
        p.stop_at_eos, p.add_bos, p.n_ctx, p.cost_k = stop_at_eos, add_bos, n_ctx, cost_k
        stops = [_utf8(s) for s in stop]
        arr = (ctypes.c_char_p * max(len(stops), 1))(*stops)
        p.stop, p.n_stop = (arr if stops else None), len(stops)
        return p, arr

    def _run(self, prompt, p):
        b = _utf8(prompt)
        r = _lib.GenResult()
        r.size = ctypes.sizeof(r)  # HSD_GEN_RESULT_INIT
        _check(lib.hsd_engine_generate(self._handle, b, len(b), ctypes.byref(p), ctypes.byref(r)))
        try:
            return Result(r)
        finally:
            lib.hsd_gen_result_free(ctypes.byref(r))

    def generate(self, prompt, algo="auto", max_new_tokens=128, n_draft=4, adaptive_k=False,
                 k_max=16, temp=0.0, top_k=0, top_p=1.0, seed=0, stop_at_eos=True, stop=(),
                 add_bos=True, n_ctx=0, on_text=None, cost_k=False):
        """Generates a continuation of prompt (str or UTF-8 bytes). algo: one of ALGORITHMS.
        Greedy (temp <= 0) output is identical for every algorithm. n_ctx: positions the
        target may use (0: its trained context). on_text(piece: bytes) -> bool, optional: called
        with each piece of text as it becomes final; return False to stop (the result's
        stop_reason is then "callback"). cost_k: choose k each round for the most tokens per
        second (measured costs and the running acceptance; hsd_gen_params.cost_k)."""
        p, keep = self._params(algo, max_new_tokens, n_draft, adaptive_k, k_max, temp, top_k,
                               top_p, seed, stop_at_eos, stop, add_bos, n_ctx, cost_k)
        errors = []
        if on_text is not None:
            def tramp(user, seq, text, n, ids, n_ids):
                try:
                    return on_text(ctypes.string_at(text, n) if n else b"") is not False
                except BaseException as exc:  # never unwind through C: stop, re-raise after
                    errors.append(exc)
                    return False
            cb = _lib.STREAM_FN(tramp)
            p.on_text = cb
        r = self._run(prompt, p)
        del keep
        if errors:
            raise errors[0]
        return r

    def stream(self, prompt, **kw):
        """Iterator over the text of a generation as it becomes final (str pieces; their
        concatenation is generate()'s text). Takes generate()'s keyword arguments. Leaving the
        loop early stops the generation within one round. The generation runs on a worker
        thread (the library releases the GIL), so pieces arrive while it goes on."""
        q = queue.Queue()
        stop = threading.Event()
        done = object()
        decoder = __import__("codecs").getincrementaldecoder("utf-8")("replace")

        def on_text(piece):
            q.put(piece)
            return not stop.is_set()

        def work():
            try:
                q.put(("result", self.generate(prompt, on_text=on_text, **kw)))
            except BaseException as exc:
                q.put(("error", exc))
            q.put(done)

        t = threading.Thread(target=work, daemon=True)
        t.start()
        outcome = None
        try:
            while True:
                item = q.get()
                if item is done:
                    break
                if isinstance(item, tuple):
                    outcome = item
                    continue
                text = decoder.decode(item)
                if text:
                    yield text
            tail = decoder.decode(b"", final=True)
            if tail:
                yield tail
            if outcome and outcome[0] == "error":
                raise outcome[1]
        finally:
            stop.set()
            t.join()


def _int32_view(ids):
    """A ctypes int32 array over ids without a copy when ids is a contiguous int32 buffer
    (stdlib array('i'), a numpy int32 row), else a copy of its items."""
    try:
        mv = memoryview(ids)
        if mv.format in ("i", "=i", "<i", "l" if ctypes.sizeof(ctypes.c_long) == 4 else "i") \
                and mv.itemsize == 4 and mv.ndim == 1 and mv.contiguous and not mv.readonly \
                and len(mv):
            return (ctypes.c_int32 * len(mv)).from_buffer(mv), len(mv)
    except TypeError:
        pass
    return _ids_array(ids)


class Proposer(_Handle):
    """SLEM drafts for a target verified elsewhere (hsd_proposer_*, docs/API.md).

    Proposer(draft, draft_tokenizer, target_tokenizer, n_draft=4, n_ctx=0, target_vocab=0,
    add_bos=True): slots are the drafter's sequence slots (Model(..., n_seq=N)).
    propose(slots, contexts, k) -> one list of target ids per request."""
    _free = staticmethod(lib.hsd_proposer_free)

    def __init__(self, draft, draft_tokenizer, target_tokenizer, n_draft=4, n_ctx=0,
                 target_vocab=0, add_bos=True):
        super().__init__()
        p = lib.hsd_proposer_default_params()
        p.n_draft, p.n_ctx, p.target_vocab, p.add_bos = n_draft, n_ctx, target_vocab, add_bos
        h = ctypes.c_void_p()
        _check(lib.hsd_proposer_init(draft._handle, draft_tokenizer._handle,
                                     target_tokenizer._handle, ctypes.byref(p), ctypes.byref(h)))
        self._h = h.value
        self._borrowed = (draft, draft_tokenizer, target_tokenizer)
        for b in self._borrowed:
            b._borrowers += 1

    def close(self):
        if self._h:
            super().close()
            for b in self._borrowed:
                b._borrowers -= 1

    def __del__(self):
        if getattr(self, "_h", None):
            self.close()

    @property
    def n_slots(self):
        return lib.hsd_proposer_n_slots(self._handle)

    def propose(self, slots, contexts, k):
        """Request i uses slot slots[i] and has the committed target ids contexts[i] (a list,
        an array('i') or an int32 numpy row: buffers are passed without a copy). Returns the
        proposals (lists of at most k target ids) in request order."""
        n = len(slots)
        if n == 0:
            return []
        keep = [_int32_view(c) for c in contexts]
        ptrs = (_lib.c_int32_p * n)(*[ctypes.cast(a, _lib.c_int32_p) for a, _ in keep])
        lens = (ctypes.c_int32 * n)(*[m for _, m in keep])
        sl = (ctypes.c_int32 * n)(*slots)
        out = (ctypes.c_int32 * (n * k))()
        n_out = (ctypes.c_int32 * n)()
        _check(lib.hsd_proposer_propose(self._handle, n, sl, ptrs, lens, k, out, n_out))
        return [out[i * k:i * k + n_out[i]] for i in range(n)]

    def forget(self, slot):
        _check(lib.hsd_proposer_forget(self._handle, int(slot)))

    def last_tree(self, slot):
        """The candidate tree behind slot's last proposal: (ids, parents, scores), trie order
        (parents first, -1 = the context); empty when it proposed nothing."""
        cap = 128
        ids, par = (ctypes.c_int32 * cap)(), (ctypes.c_int32 * cap)()
        sc, n = (ctypes.c_double * cap)(), ctypes.c_int32()
        _check(lib.hsd_proposer_last_tree(self._handle, int(slot), ids, par, sc, cap,
                                          ctypes.byref(n)))
        return ids[:n.value], par[:n.value], sc[:n.value]

    def stats(self):
        """Counters and times since init or reset_stats (hsd_proposer_stats) as a dict."""
        st = _lib.ProposerStats()
        _check(lib.hsd_proposer_get_stats(self._handle, ctypes.byref(st)))
        return {f: getattr(st, f) for f, _ in st._fields_}

    def reset_stats(self):
        lib.hsd_proposer_reset_stats(self._handle)


def psi_summary(target, draft):
    """The ψ cost of SLRS for a target / drafter tokenizer pair (hsd_pair_psi_summary): how many
    drafter-token sequences spell each target text token, the drafter tree nodes that needs,
    and the lookahead n_max. Returns a dict of the struct's fields."""
    out = _lib.PairPsi()
    _check(lib.hsd_pair_psi_summary(target._handle, draft._handle, ctypes.byref(out)))
    return {name: getattr(out, name) for name, _ in _lib.PairPsi._fields_}


#: weight types accepted by synth; hsd_ftype numbers them from 1 (0 is AUTO)
SYNTH_TYPES = ("f32", "f16", "bf16", "q8_0")


def synth(shape, path, format="gguf", dtype="f32", seed=1, tokenizer=None):
    """Writes a random-weight model of a known shape (hsd_synth_init + hsd_synth_write_*):
    format "gguf" writes the file `path` (with `tokenizer`'s vocabulary in its metadata when
    given), "safetensors" the directory `path` (config.json + model.safetensors). With a
    tokenizer the embedding rows cover its ids (a tiny* shape: exactly them), and a
    tokenizer.json whose pipeline a GGUF vocabulary cannot reproduce raises HsdError naming
    what. Returns the weight bytes. Unknown shapes raise HsdError naming the known ones."""
    if format not in ("gguf", "safetensors"):
        raise ValueError("format must be gguf or safetensors")
    if dtype not in SYNTH_TYPES:
        raise ValueError("dtype must be one of %s" % ", ".join(SYNTH_TYPES))
    p = lib.hsd_synth_default_params()
    shape_b = _utf8(shape)
    p.shape, p.type, p.seed = shape_b, 1 + SYNTH_TYPES.index(dtype), seed
    if tokenizer is not None:  # rows for every id of the tokenizer, as `hsd synth` sizes them
        p.tokenizer_ids = Tokenizer(str(tokenizer)).vocab_size
    m = ctypes.c_void_p()
    _check(lib.hsd_synth_init(ctypes.byref(p), ctypes.byref(m)))
    try:
        if format == "gguf":
            tok = _utf8(str(tokenizer)) if tokenizer is not None else None
            _check(lib.hsd_synth_write_gguf_tok(m, _utf8(str(path)), tok))
        else:
            _check(lib.hsd_synth_write_safetensors(m, _utf8(str(path))))
        return lib.hsd_synth_weight_bytes(m)
    finally:
        lib.hsd_synth_free(m)


class ChatTemplate(_Handle):
    """A model's chat template, rendered byte-identically to transformers' apply_chat_template
    (Python Jinja2 in its sandboxed configuration; docs/CHAT.md).

        t = hsd.ChatTemplate("tokenizer_config.json")      # or a GGUF, a directory, a .jinja
        prompt = t.render([{"role": "user", "content": "Hi"}], add_generation_prompt=True)

    ChatTemplate(path, name=None) loads a file (name: a named variant such as "tool_use");
    ChatTemplate.from_string(source) compiles template text. Errors raise HsdError; a template
    that calls raise_exception raises HsdError whose .message is that message verbatim."""
    _free = staticmethod(lib.hsd_chat_template_free)

    def __init__(self, path=None, name=None, *, _handle=None):
        super().__init__()
        if _handle is not None:
            self._h = _handle
            return
        if path is None:
            raise TypeError("ChatTemplate(path) or ChatTemplate.from_string(source)")
        h = ctypes.c_void_p()
        _check(lib.hsd_chat_template_load(_utf8(str(path)), _utf8(name) if name else None,
                                          ctypes.byref(h)))
        self._h = h.value

    @classmethod
    def from_string(cls, source):
        h = ctypes.c_void_p()
        _check(lib.hsd_chat_template_from_string(_utf8(source), ctypes.byref(h)))
        return cls(_handle=h.value)

    @property
    def bos_token(self):
        """The bos_token string of the template's file, or None."""
        v = lib.hsd_chat_template_bos(self._handle)
        return v.decode("utf-8") if v is not None else None

    @property
    def eos_token(self):
        v = lib.hsd_chat_template_eos(self._handle)
        return v.decode("utf-8") if v is not None else None

    def render_context(self, context, now=None, max_output=0, max_steps=0, max_depth=0):
        """Renders with exactly the variables of `context` (a dict, or its JSON text).
        now: strftime_now's time (a datetime, a date meaning 00:00:00 UTC, or Unix seconds);
        None is the current time."""
        js = context if isinstance(context, (str, bytes)) else json.dumps(context, ensure_ascii=False)
        p = lib.hsd_chat_default_params()
        if now is not None:
            if isinstance(now, datetime.datetime):
                p.now_unix = int(now.replace(tzinfo=now.tzinfo or datetime.timezone.utc).timestamp())
            elif isinstance(now, datetime.date):
                p.now_unix = int(datetime.datetime(now.year, now.month, now.day,
                                                   tzinfo=datetime.timezone.utc).timestamp())
            else:
                p.now_unix = int(now)
        p.max_output, p.max_steps, p.max_depth = max_output, max_steps, max_depth
        out = ctypes.c_void_p()
        n = ctypes.c_size_t()
        _check(lib.hsd_chat_render_json(self._handle, _utf8(js), ctypes.byref(p), ctypes.byref(out),
                                        ctypes.byref(n)))
        try:
            return ctypes.string_at(out.value, n.value).decode("utf-8")
        finally:
            lib.hsd_free(out)

    def render(self, messages, add_generation_prompt=False, tools=None, now=None, **extra):
        """apply_chat_template(messages, tools=..., add_generation_prompt=..., **extra,
        tokenize=False): bos_token and eos_token come from the template's file unless given."""
        ctx = {"messages": list(messages), "add_generation_prompt": bool(add_generation_prompt)}
        if tools is not None:
            ctx["tools"] = tools
        for key, value in (("bos_token", self.bos_token), ("eos_token", self.eos_token)):
            if value is not None:
                ctx[key] = value
        ctx.update(extra)
        return self.render_context(ctx, now=now)
