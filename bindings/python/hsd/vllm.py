"""hsd's string-level drafting (SLEM) as a vLLM speculative proposer.

    vllm serve TARGET --additional-config '{"hsd": {"draft": "drafter.gguf"}}' \\
        --speculative-config '{"method": "custom_class",
                               "model": "hsd.vllm.HsdProposer",
                               "num_speculative_tokens": 5}'

(docs/VLLM.md has the whole recipe.) Written against vLLM's `custom_class` proposer interface
(PR 39487): vLLM imports the class named by speculative_config.model, builds it with the
VllmConfig, may call load_model(...), and after every step calls, from the GPU model runner,

    propose(sampled_token_ids,                    # list[list[int]], one per request in the batch
            self.input_batch.num_tokens_no_spec,  # np.ndarray int32 [max_num_reqs]
            self.input_batch.token_ids_cpu,       # np.ndarray int32 [max_num_reqs, max_model_len]
            slot_mappings=slot_mappings)          # unused here

Request i of the batch has the committed ids token_ids_cpu[i, :num_tokens_no_spec[i]] (the
prompt and every accepted token, including sampled_token_ids[i], the ids this step added);
an empty sampled_token_ids[i] means "do not draft for it" (a prefill chunk, a discarded
request). The result is one list of draft target ids per request; vLLM's rejection sampler
verifies them as point-mass proposals, so greedy output is the target's and sampled output
keeps the target's law.

vLLM passes no request ids. A request's bridge state (hsd's slot: committed text, both
sides' tokens, the drafter's KV cache) is found by its token prefix: this step's context
minus the ids it just gained is the context it had at its previous proposal (keyed by its
length and last ids; hsd checks the whole prefix before reusing a state). States live in
the drafter's sequence slots, so their number (max_states) bounds the memory; the least
recently used one is given to a request that has none.

Configuration, from vllm_config.additional_config["hsd"] (`--additional-config`), else the
environment (HSD_VLLM_<KEY>, upper case), else the default:
    draft             drafter model: GGUF, safetensors directory or llama2.c .bin (required)
    draft_tokenizer   its tokenizer (default: the GGUF itself, or DIR/tokenizer.json)
    target_tokenizer  the target's tokenizer (default: model_config.tokenizer/tokenizer.json
                      when that is a local directory, else required)
    n_draft           drafter forwards per step, SLEM's k (default ceil(num_speculative_tokens
                      / 2): k drafter tokens spell about 2k target tokens)
    max_states        request states kept = drafter sequence slots, each with its own KV
                      cache of draft_n_ctx positions: the memory bound (default
                      min(max_num_seqs, 32)); requests past it in one step get no drafts
    n_threads         drafter threads (default 0: hsd's default)
    draft_n_ctx       drafter KV capacity per slot (default 0: its context, capped at 4096)
    backend           where the drafter runs: auto, cpu, cuda (default cpu)
    add_bos           drafter BOS at the start of a fresh state (default true)
    draft_head        a cheaper LM head for the drafter, as hsd's --draft-head: "trim:IDS_FILE",
                      "spec:K[/R][:FILE]", "lowrank:R[:FILE]" (default: its own head). It
                      changes only what is proposed, never what is accepted
"""
import os

from . import HsdError, Model, Proposer, Tokenizer

__all__ = ["HsdProposer", "CONFIG_KEYS"]

CONFIG_KEYS = ("draft", "draft_tokenizer", "target_tokenizer", "n_draft", "max_states",
               "n_threads", "draft_n_ctx", "backend", "add_bos", "draft_head")


def _config(vllm_config, key, default=None):
    extra = getattr(vllm_config, "additional_config", None) or {}
    section = extra.get("hsd", {}) if isinstance(extra, dict) else {}
    if key in section:
        return section[key]
    env = os.environ.get("HSD_VLLM_" + key.upper())
    return env if env not in (None, "") else default


def _as_bool(v):
    if isinstance(v, str):
        return v.strip().lower() not in ("0", "false", "no", "off", "")
    return bool(v)


def _host(x):
    """vLLM's CPU buffers are numpy arrays; a torch CPU tensor is viewed as one."""
    if hasattr(x, "numpy") and not hasattr(x, "tobytes"):
        return x.numpy()
    return x


def _row(token_ids_cpu, i, n):
    """Request i's committed ids as a contiguous int32 buffer when the input allows (a numpy
    row slice or an array('i') needs no copy), else as a list."""
    row = token_ids_cpu[i]
    try:
        part = row[:n]
        memoryview(part)  # numpy rows and stdlib arrays
        return part
    except TypeError:
        return list(row[:n])


_TAIL = 32  # ids of a prefix's end that key it, with its length


def _key(ids, end=None):
    """The key of the prefix ids[:end]: its length and its last _TAIL ids, in O(1) (a
    memoryview slice of a numpy row or stdlib array; a tuple for lists). A key is a hint: hsd
    checks that a state's context really is a prefix of the new one and starts afresh if
    not, so two prefixes that share a key only cost a rebuild."""
    end = len(ids) if end is None else end
    lo = max(0, end - _TAIL)
    try:
        return end, bytes(memoryview(ids)[lo:end].cast("B"))
    except TypeError:
        return end, tuple(ids[lo:end])


class HsdProposer:
    """vLLM `custom_class` proposer: hsd's SLEM drafts (any drafter, any tokenizer)."""

    def __init__(self, vllm_config):
        self.vllm_config = vllm_config
        spec = vllm_config.speculative_config
        model_config = vllm_config.model_config
        self.k = int(spec.num_speculative_tokens)
        if not 1 <= self.k <= 64:
            raise ValueError("hsd: num_speculative_tokens must be 1..64 (got %d)" % self.k)
        self.max_model_len = int(model_config.max_model_len)
        get_vocab = getattr(model_config, "get_vocab_size", None)
        self.target_vocab = int(get_vocab()) if get_vocab else 0
        sched = getattr(vllm_config, "scheduler_config", None)
        max_seqs = int(getattr(sched, "max_num_seqs", 0) or 256)
        c = lambda key, default=None: _config(vllm_config, key, default)  # noqa: E731
        self.draft_path = c("draft")
        if not self.draft_path:
            raise ValueError("hsd: no drafter: set additional_config {\"hsd\": {\"draft\": PATH}} "
                             "or HSD_VLLM_DRAFT")
        self.draft_tokenizer_path = c("draft_tokenizer") or self._default_tokenizer(
            self.draft_path, "draft_tokenizer")
        tt = c("target_tokenizer")
        if not tt:
            local = getattr(model_config, "tokenizer", None) or getattr(model_config, "model", "")
            tt = self._default_tokenizer(str(local), "target_tokenizer")
        self.target_tokenizer_path = tt
        self.n_draft = min(int(c("n_draft", (self.k + 1) // 2)), 63)
        self.max_states = int(c("max_states", min(max_seqs, 32)))
        self.n_threads = int(c("n_threads", 0))
        self.draft_n_ctx = int(c("draft_n_ctx", 0))
        self.backend = str(c("backend", "cpu"))
        self.add_bos = _as_bool(c("add_bos", True))
        self.draft_head = c("draft_head")
        if self.max_states < 1:
            raise ValueError("hsd: max_states must be >= 1 (got %d)" % self.max_states)
        self._prop = None
        # prefix key -> slot; per slot: its key, the step it was last used in
        self._by_key = {}
        self._slot_key = [None] * self.max_states
        self._last_used = [-1] * self.max_states
        self._step = 0
        self.proposals_skipped = 0  # requests past the slots of one step (got [])

    @staticmethod
    def _default_tokenizer(model_path, what):
        if model_path.endswith(".gguf") and os.path.isfile(model_path):
            return model_path
        if os.path.isdir(model_path) and os.path.isfile(os.path.join(model_path, "tokenizer.json")):
            return os.path.join(model_path, "tokenizer.json")
        raise ValueError("hsd: cannot tell the %s for %r: set it (additional_config hsd.%s or "
                         "HSD_VLLM_%s)" % (what, model_path, what, what.upper()))

    def load_model(self, *args, **kwargs):
        """vLLM calls this with its target model; hsd's drafter is loaded here (once)."""
        if self._prop is not None:
            return
        self.target_tokenizer = Tokenizer(self.target_tokenizer_path)
        self.draft_tokenizer = Tokenizer(self.draft_tokenizer_path)
        self.drafter = Model(self.draft_path, n_ctx=self.draft_n_ctx, n_threads=self.n_threads,
                             n_seq=self.max_states, backend=self.backend)
        if self.draft_head:
            self.drafter.set_head(str(self.draft_head))
        self._prop = Proposer(self.drafter, self.draft_tokenizer, self.target_tokenizer,
                              n_draft=self.n_draft, n_ctx=self.max_model_len,
                              target_vocab=self.target_vocab, add_bos=self.add_bos)
        self._vocab = min(self.target_tokenizer.vocab_size,
                          self.target_vocab or self.target_tokenizer.vocab_size)

    def _lru_slot(self, claimed):
        """A free slot, else the least recently used one not claimed in this step."""
        best = None
        for s in range(self.max_states):
            if s not in claimed and (best is None or self._last_used[s] < self._last_used[best]):
                best = s
        return best

    def _ids_ok(self, ids, new):
        """Every id the state has not seen yet (all of them for a fresh state) is a target id:
        hsd rejects the call otherwise, and one request must not fail the step."""
        part = ids[len(ids) - new:] if new else ids
        if hasattr(part, "min") and hasattr(part, "max"):  # numpy: no Python loop
            return len(part) == 0 or (int(part.min()) >= 0 and int(part.max()) < self._vocab)
        return all(0 <= int(t) < self._vocab for t in part)

    def propose(self, sampled_token_ids, num_tokens_no_spec, token_ids_cpu, slot_mappings=None,
                **unused):
        """One list of draft target ids per request (an empty list: no proposal)."""
        if self._prop is None:
            self.load_model()
        num_tokens_no_spec = _host(num_tokens_no_spec)
        token_ids_cpu = _host(token_ids_cpu)
        self._step += 1
        n_req = len(sampled_token_ids)
        result = [[] for _ in range(n_req)]
        wanted = []  # (request, context, key of its previous context, ids gained)
        for i, sampled in enumerate(sampled_token_ids):
            n_new = len(sampled)
            if not n_new:
                continue  # vLLM: nothing to draft for this request this step
            n = int(num_tokens_no_spec[i])
            if n >= self.max_model_len or n < 1:
                continue
            ctx = _row(token_ids_cpu, i, n)
            wanted.append((i, ctx, _key(ctx, n - n_new) if n > n_new else None, n_new))
        # requests that find their state first, so that a newcomer never evicts the state of
        # a request of the same step; then the others, on free or least recently used slots
        claimed, batch, rest = set(), [], []
        for i, ctx, prev, n_new in wanted:
            slot = self._by_key.get(prev) if prev is not None else None
            if slot is None or slot in claimed:
                rest.append((i, ctx))
            elif self._ids_ok(ctx, n_new):
                claimed.add(slot)
                batch.append((i, slot, ctx))
            else:
                self._release(slot)
        for i, ctx in rest:
            if len(claimed) == self.max_states:
                self.proposals_skipped += 1
                continue
            if not self._ids_ok(ctx, 0):
                continue
            slot = self._lru_slot(claimed)
            claimed.add(slot)
            batch.append((i, slot, ctx))
        if not batch:
            return result
        slots = [b[1] for b in batch]
        try:
            props = self._prop.propose(slots, [b[2] for b in batch], self.k)
        except HsdError:
            for s in slots:  # hsd forgot them too; the step goes on without drafts
                self._release(s)
            return result
        for (i, slot, ctx), prop in zip(batch, props):
            result[i] = list(prop)
            self._release(slot)
            key = _key(ctx)
            self._slot_key[slot] = key
            self._by_key[key] = slot
            self._last_used[slot] = self._step
        return result

    def _release(self, slot):
        key = self._slot_key[slot]
        if key is not None and self._by_key.get(key) == slot:
            del self._by_key[key]
        self._slot_key[slot] = None

    def stats(self):
        """hsd's proposer counters (hsd_proposer_stats) plus requests skipped for lack of slots."""
        st = self._prop.stats() if self._prop else {}
        st["proposals_skipped"] = self.proposals_skipped
        return st
