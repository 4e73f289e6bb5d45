"""The vLLM judge: ``vllm:MODEL`` runs the model in process on vLLM's offline engine (``vllm.LLM``).

``--judge vllm:MODEL[,option=value...]`` is the same judge as ``hf:MODEL`` and ``openai:MODEL`` —
the same prompts, modes, choice tokens and verdict arithmetic
(:class:`~rankkit.judges.llm.LLMJudge`) — on a third engine. MODEL is a local model directory, a
hub id (for users who have the hub) or ``smollm2``: the embedded SmolLM2-135M-Instruct, loaded from
the bf16 safetensors copy the HF judge writes under ``~/.cache/rankkit``
(:func:`~rankkit.judges.hf_loading.smollm2_copy_dir`, made from the GGUF on first use). Options:

==========================  ========================================================================
``dtype``                   ``bfloat16`` (default), ``float32``, ``float16``, ``auto``
``max_model_len``           longest prompt + reply in tokens (default 4096); a longer prompt stops
                            the run naming its task and this option
``max_num_seqs``            most sequences vLLM schedules at once, and how many requests a call
                            takes (the judge's ``capacity``; default 64)
``enforce_eager``           ``true`` (default): no graph compilation, so the engine starts in about
                            half the time on a CPU (``benchmarks/results/vllm_engine.md``);
                            ``false`` for long runs on a GPU, where CUDA graphs pay
``prefix_caching``          ``true`` (default): prompts sharing a prefix (a task's question, the
                            template's instruction) reuse its key/value cache
``kv_cache_gib``            KV-cache size on a CPU, in GiB (default 2)
``tensor_parallel_size``    GPUs one model is split over (default 1)
``gpu_memory_utilization``  share of GPU memory vLLM may take (default: vLLM's, 0.9)
``mode``, ``template``, ``max_new_tokens``, ``temperature``, ``seed``, ``retries``, ...: the judge's
==========================  ========================================================================

**Engine.** :class:`VLLMEngine` renders each conversation with the model's chat template and
appends the forced reply prefix exactly as the hf engine does (:mod:`rankkit.judges.chat_tokens`),
then hands vLLM token ids, so ``hf:`` and ``vllm:`` read the same token sequences. ``logprob`` mode
asks for one token with ``logprob_token_ids`` = the choice tokens: their log-probabilities come
from one forward pass, whatever their rank (the HTTP judge sees only the top 20). The forced
prefix may differ per row (the hardened generate mode continues each judge's own explanation).
``generate`` mode samples with vLLM (greedy at temperature 0, else seeded per request), and
``loglik`` reads prompt log-probabilities. vLLM schedules whole calls itself (continuous batching,
prefix caching), so the engine is a batching backend (``fills_batches``): the runner hands it up to
``max_num_seqs`` requests from many tasks at once, from one thread.

**Fingerprint.** The judge's fingerprint names backend ``vllm``, the model (weights signature or hub
revision), dtype, template, mode and decoding: vLLM's kernels are not the transformers kernels, so
its probabilities are close to ``hf:``'s but not equal (measured in
``benchmarks/results/vllm_engine.md``), and judgments of one are never served as the other's.

**Process.** vLLM runs its engine core in a child process. A model is loaded once per process
(:func:`load_llm`, keyed by what was loaded) and shut down at interpreter exit
(:func:`shutdown_all`); a script that builds a ``vllm:`` judge must do so under
``if __name__ == "__main__":``, as with any code that starts processes. vllm is imported inside
functions only: ``import rankkit`` and the CLI's start-up never load it.

**Errors.** Without vLLM installed, the spec fails (exit 2) naming the ``vllm`` extra. A model
directory that does not exist or holds no ``config.json`` fails naming it (exit 2). A prompt longer
than ``max_model_len`` stops the run with :class:`PromptTooLong` (exit 2) naming the task and the
option, after the judgments of the call that fit were made (and cached). A KV cache too small for
one ``max_model_len`` sequence fails at start (exit 2) naming ``kv_cache_gib``,
``gpu_memory_utilization`` and ``max_model_len``.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import threading
from pathlib import Path
from typing import Any, Iterator, Sequence

from rankkit.judges import chat_tokens
from rankkit.judges.base import JudgeError
from rankkit.judgments import ComparisonRequest, Grade, GradeRequest, GroupRequest, Verdict
from rankkit.judges.hf_loading import import_torch
from rankkit.judges.llm import LLM_OPTIONS, LLMJudge, split_llm_options
from rankkit.judges.llm_engine import Conversation, Generation, per_row
from rankkit.judges.modes import MODES
from rankkit.specs import Spec, SpecError, convert_value

#: What to run when vLLM is missing (see the README's "GPU box" for a GPU's vLLM build).
INSTALL_HINT = ("pip install torch==2.13.0 -e '.[vllm]' && pip uninstall -y torchvision torchaudio torchcodec "
                "(the vllm extra; see the README)")
VLLM_DTYPES = ("bfloat16", "float32", "float16", "auto")

#: Engine options of the spec, with their types (the judge's own options are ``LLM_OPTIONS``).
ENGINE_OPTIONS: dict[str, type] = {"dtype": str, "max_model_len": int, "max_num_seqs": int, "enforce_eager": bool,
                                   "prefix_caching": bool, "kv_cache_gib": float, "tensor_parallel_size": int,
                                   "gpu_memory_utilization": float}
#: Defaults of the engine options (``gpu_memory_utilization`` is left to vLLM).
DEFAULTS: dict[str, Any] = {"dtype": "bfloat16", "max_model_len": 4096, "max_num_seqs": 64, "enforce_eager": True,
                            "prefix_caching": True, "kv_cache_gib": 2.0, "tensor_parallel_size": 1}
#: smollm2's default mode, as for the HF judge: one forward pass per judgment.
SMOLLM2_DEFAULT_MODE = "logprob"


class PromptTooLong(JudgeError):
    """A prompt does not fit ``max_model_len``. Rerunning the same command fails the same way, so
    the command line exits 2: raise ``max_model_len`` (the model must support it)."""

    exit_code = 2
    resumable = False

    def __init__(self, message: str, prompt: str = ""):
        super().__init__(message)
        #: The rendered prompt that did not fit (the judge finds its task from it).
        self.prompt = prompt


# ---------------------------------------------------------------------------------------------
# Specs (nothing loaded)


def vllm_spec_parts(spec: Spec) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """Read a ``vllm:`` spec without loading anything: ``(model_ref, engine options, judge
    options)``, checked and with defaults filled in (used by :func:`from_spec` and the dry run).

    >>> from rankkit.specs import parse_spec
    >>> model, options, judge = vllm_spec_parts(parse_spec("vllm:smollm2,max_model_len=2048"))
    >>> model, options["max_model_len"], options["enforce_eager"], judge["mode"]
    ('smollm2', 2048, True, 'logprob')
    """
    where = "vllm"
    if len(spec.positional) != 1:
        raise SpecError(f"{where}: name exactly one model (a directory, a hub id or smollm2), "
                        f"e.g. vllm:smollm2 or vllm:./my-model, got {list(spec.positional)}")
    model_ref = spec.positional[0]
    defaults = {"mode": SMOLLM2_DEFAULT_MODE, "max_new_tokens": 192} if model_ref == "smollm2" else None
    judge_kwargs, rest = split_llm_options(spec, where, defaults=defaults)
    options = dict(DEFAULTS)
    for key, value in rest.items():
        if key not in ENGINE_OPTIONS:
            known = ", ".join(sorted([*ENGINE_OPTIONS, *LLM_OPTIONS]))
            raise SpecError(f"{where}: unknown option {key!r} (known: {known})")
        options[key] = convert_value(value, ENGINE_OPTIONS[key], where=f"{where}: {key}")
    if options["dtype"] not in VLLM_DTYPES:
        raise SpecError(f"{where}: dtype must be one of {', '.join(VLLM_DTYPES)}, got {options['dtype']!r}")
    for key in ("max_model_len", "max_num_seqs", "tensor_parallel_size"):
        if options[key] < 1:
            raise SpecError(f"{where}: {key} must be >= 1, got {options[key]}")
    if not options["kv_cache_gib"] > 0:
        raise SpecError(f"{where}: kv_cache_gib must be > 0, got {options['kv_cache_gib']}")
    if "gpu_memory_utilization" in options and not 0 < options["gpu_memory_utilization"] <= 1:
        raise SpecError(f"{where}: gpu_memory_utilization must be in (0, 1], got {options['gpu_memory_utilization']}")
    if judge_kwargs.get("mode", "generate") not in MODES:
        raise SpecError(f"{where}: mode must be one of {', '.join(MODES)}, got {judge_kwargs['mode']!r}")
    if model_ref == "smollm2" and options["dtype"] not in ("bfloat16", "float32"):
        raise SpecError(f"{where}: smollm2's copy is made in bfloat16 or float32, got dtype={options['dtype']}")
    return model_ref, options, judge_kwargs


def local_model_dir(model_ref: str) -> Path | None:
    """The local directory ``model_ref`` names, or None for a hub id.

    A reference is local when it exists or looks like a path (starts with ``.``, ``/`` or ``~``,
    or has more than one ``/``); a local one must be a model directory (with ``config.json``).

    Raises
    ------
    SpecError
        A local reference that is not a directory holding ``config.json``.

    >>> local_model_dir("HuggingFaceTB/SmolLM2-135M-Instruct") is None
    True
    """
    path = Path(model_ref).expanduser()
    looks_local = path.exists() or model_ref.startswith((".", "/", "~")) or model_ref.count("/") > 1
    if not looks_local:
        return None
    if not path.is_dir():
        raise SpecError(f"vllm: model directory {model_ref!r} does not exist")
    if not (path / "config.json").is_file():
        raise SpecError(f"vllm: {model_ref!r} is not a model directory (it has no config.json)")
    return path


def model_identity(model_ref: str, dtype: str) -> dict[str, Any]:
    """What names the model in the fingerprint, as for the hf judge: the embedded SmolLM2 by its
    GGUF, a local directory by the signature of its weights, a hub id by the revision it
    resolved to in the local hub cache."""
    from rankkit.judges import hf
    from rankkit.judges.hf_loading import smollm2_identity

    if model_ref == "smollm2":
        return smollm2_identity(dtype)
    local = local_model_dir(model_ref)
    if local is not None:
        return hf.model_identity(str(local), None, dtype, None)
    from rankkit.judges.hf_loading import hub_revision

    return hf.model_identity(model_ref, None, dtype, hub_revision(model_ref))


def require_vllm() -> None:
    """Refuse (exit 2, naming the extra) when vLLM is not installed."""
    if importlib.util.find_spec("vllm") is None:
        raise SpecError(f"vllm: vLLM is not installed; install the vllm extra: {INSTALL_HINT}")


# ---------------------------------------------------------------------------------------------
# Loading (once per process)


#: vLLM engines loaded in this process: key -> ``vllm.LLM``. Shut down at exit.
_LOADED: dict[tuple, Any] = {}
_LOAD_LOCK = threading.Lock()


def llm_kwargs(source: str, options: dict[str, Any], on_cpu: bool) -> dict[str, Any]:
    """``vllm.LLM`` keyword arguments for parsed spec options.

    >>> kwargs = llm_kwargs("/m", dict(DEFAULTS), on_cpu=True)
    >>> kwargs["enable_prefix_caching"], kwargs["kv_cache_memory_bytes"]
    (True, 2147483648)
    """
    kwargs: dict[str, Any] = {"model": source, "dtype": options["dtype"], "max_model_len": options["max_model_len"],
                              "max_num_seqs": options["max_num_seqs"], "enforce_eager": options["enforce_eager"],
                              "enable_prefix_caching": options["prefix_caching"],
                              "tensor_parallel_size": options["tensor_parallel_size"]}
    if "gpu_memory_utilization" in options:
        kwargs["gpu_memory_utilization"] = options["gpu_memory_utilization"]
    if on_cpu:
        kwargs["kv_cache_memory_bytes"] = int(options["kv_cache_gib"] * (1 << 30))
    return kwargs


def load_llm(source: str, options: dict[str, Any]) -> Any:
    """A ``vllm.LLM`` for ``source`` (a directory or hub id), loaded once per process.

    Raises
    ------
    SpecError
        The KV cache cannot hold one ``max_model_len`` sequence (the message names the options).
    JudgeError
        vLLM could not load the model (the message names it and vLLM's reason).
    """
    key = (source, *sorted(options.items()))
    with _LOAD_LOCK:
        if key not in _LOADED:
            os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")  # its INFO and WARNING lines would drown rankkit's output
            # torch first, through rankkit: OpenMP then sleeps rather than spins while it waits, in
            # this process and the engine's (measured: an hf judge sharing a process with vLLM ran
            # ~10x slower on a busy 2-core machine when vLLM had imported torch first)
            import_torch()
            from vllm import LLM
            from vllm.platforms import current_platform

            try:
                _LOADED[key] = LLM(**llm_kwargs(source, options, current_platform.is_cpu()))
            except Exception as err:  # vLLM raises many types; all mean "this model did not load"
                if "kv cache" in str(err).lower():  # too small for one max_model_len sequence: a setting
                    raise SpecError(f"vllm: the KV cache cannot hold one sequence of max_model_len="
                                    f"{options['max_model_len']} tokens for {source!r}; raise kv_cache_gib (CPU) or "
                                    f"gpu_memory_utilization (GPU), or lower max_model_len ({err})") from err
                raise JudgeError(f"vllm: cannot load model {source!r}: {type(err).__name__}: {err}") from err
        return _LOADED[key]


def shutdown_all() -> None:
    """Stop every vLLM engine this process loaded (its engine-core process too). Registered to
    run at interpreter exit; tests call it to free memory between engines."""
    with _LOAD_LOCK:
        while _LOADED:
            _, llm = _LOADED.popitem()
            core = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
            if core is not None:
                core.shutdown()


atexit.register(shutdown_all)


# ---------------------------------------------------------------------------------------------
# The engine


class VLLMEngine:
    """An :class:`~rankkit.judges.llm_engine.LLMEngine` on a loaded ``vllm.LLM``.

    llm: the loaded engine (shared: :meth:`close` leaves it running for other judges).
    identity: what names the weights in the fingerprint.
    max_model_len: the engine's limit; longer prompts raise :class:`PromptTooLong`.
    capacity: requests one call should get (``max_num_seqs``).

    Each method renders all its conversations, sends the ones that fit in one ``llm.generate``
    call (vLLM batches and schedules them) and yields every result, then raises for a prompt that
    did not fit. Calls are serialized by a lock (``vllm.LLM`` is not thread-safe).
    """

    backend = "vllm"
    #: vLLM batches what it is given: waiting for a full call pays.
    fills_batches = True

    def __init__(self, llm: Any, identity: dict[str, Any], *, max_model_len: int, capacity: int = 64):
        self.llm = llm
        self.tokenizer = llm.get_tokenizer()
        self._identity = dict(identity)
        self.max_model_len = max_model_len
        self.capacity = capacity
        self._lock = threading.Lock()
        #: calls: llm.generate calls; rows: prompts sent; prompt_tokens: their tokens.
        self.stats = {"calls": 0, "rows": 0, "prompt_tokens": 0}

    def identity(self) -> dict[str, Any]:
        return dict(self._identity)

    def close(self) -> None:
        """Nothing to release: the engine stays loaded for other judges (:func:`shutdown_all`)."""

    # -- prompts ---------------------------------------------------------------------------------
    def prompt_ids(self, conversation: Conversation, prefix: str = "") -> list[int]:
        """The token ids of a conversation's prompt followed by a forced reply ``prefix``, messages
        and prefix tokenized as text (:func:`.chat_tokens.encode_chat`)."""
        return chat_tokens.encode_chat(self.tokenizer, conversation, prefix)

    def _too_long(self, sequence: Sequence[int], reserve: int) -> PromptTooLong | None:
        """The error for a prompt that leaves no room for ``reserve`` tokens, else None."""
        if len(sequence) + reserve <= self.max_model_len:
            return None
        return PromptTooLong(f"vllm: a prompt of {len(sequence)} tokens (+{reserve} to read or write) does not "
                             f"fit max_model_len={self.max_model_len}; raise it: vllm:MODEL,max_model_len=N",
                             prompt=self.tokenizer.decode(list(sequence)))

    def _run(self, sequences: Sequence[Sequence[int]], params: Any, reserve: int) -> Iterator[tuple[int, Any]]:
        """``llm.generate`` on the sequences that fit; yields ``(index, RequestOutput)``, then
        raises :class:`PromptTooLong` for the first that did not fit."""
        from vllm.inputs import TokensPrompt

        errors = [self._too_long(s, reserve) for s in sequences]
        fits = [i for i, error in enumerate(errors) if error is None]
        if fits:
            prompts = [TokensPrompt(prompt_token_ids=list(sequences[i])) for i in fits]
            with self._lock:
                self.stats["calls"] += 1
                self.stats["rows"] += len(fits)
                self.stats["prompt_tokens"] += sum(len(sequences[i]) for i in fits)
                try:
                    outputs = self.llm.generate(prompts, params, use_tqdm=False)
                except Exception as err:  # the engine process died, ran out of memory...
                    raise JudgeError(f"vllm: the engine failed: {type(err).__name__}: {err}") from err
            yield from zip(fits, outputs)
        error = next((e for e in errors if e is not None), None)
        if error is not None:
            raise error

    # -- the LLMEngine protocol ------------------------------------------------------------------
    def next_token_logprobs(self, conversations: Sequence[Conversation], *, assistant_prefix: str | Sequence[str],
                            choices: Sequence[str]) -> Iterator[tuple[int, dict[str, float]]]:
        """Log-probabilities of each of ``choices`` as the next token after ``assistant_prefix``
        (one str for every row, or one per conversation), from one forward pass per prompt."""
        from vllm import SamplingParams

        prefixes = per_row(assistant_prefix, len(conversations))
        by_prefix = {p: chat_tokens.choice_token_ids(self.tokenizer, p, choices, self.backend) for p in set(prefixes)}
        ids = sorted({token for _, tokens in by_prefix.values() for token in tokens})
        sequences = [self.prompt_ids(c, by_prefix[p][0]) for c, p in zip(conversations, prefixes)]
        params = SamplingParams(max_tokens=1, temperature=0.0, logprob_token_ids=ids)
        for index, output in self._run(sequences, params, reserve=1):
            logprobs = output.outputs[0].logprobs[0]
            tokens = by_prefix[prefixes[index]][1]
            yield index, {choice: float(logprobs[token].logprob) if token in logprobs else float("-inf")
                          for choice, token in zip(choices, tokens)}

    def generate(self, conversations: Sequence[Conversation], *, max_new_tokens: int, temperature: float,
                 seed: int) -> Iterator[tuple[int, Generation]]:
        """Each conversation's reply: greedy at temperature 0, else sampled with ``seed`` per
        request (so a reply does not depend on what it was batched with, up to float noise)."""
        from vllm import SamplingParams

        sequences = [self.prompt_ids(c) for c in conversations]
        params = SamplingParams(max_tokens=max_new_tokens, temperature=temperature, seed=seed)
        for index, output in self._run(sequences, params, reserve=1):
            reply = output.outputs[0]
            yield index, Generation(text=reply.text.strip(),
                                    usage={"prompt_tokens": len(sequences[index]),
                                           "completion_tokens": len(reply.token_ids)})

    def answer_logliks(self, conversations: Sequence[Conversation],
                       answers: Sequence[str]) -> Iterator[tuple[int, float]]:
        """The mean log-likelihood of each answer's tokens as the reply, from vLLM's prompt
        log-probabilities (the answer is appended to the prompt)."""
        from vllm import SamplingParams

        sequences, lengths = chat_tokens.answer_tokens(self.tokenizer, conversations, answers, self.backend)
        params = SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=0)
        for index, output in self._run(sequences, params, reserve=1):
            sequence, n = sequences[index], lengths[index]
            rows = output.prompt_logprobs[-n:]
            yield index, sum(float(row[token].logprob) for row, token in zip(rows, sequence[-n:])) / n


# ---------------------------------------------------------------------------------------------
# The judge


class VLLMJudge(LLMJudge):
    """:class:`~rankkit.judges.llm.LLMJudge` on a :class:`VLLMEngine`, which names the task when
    a prompt (pairwise, pointwise or k-way) does not fit ``max_model_len`` (the engine sees
    conversations, not tasks)."""

    def grade_many(self, requests: Sequence[GradeRequest]) -> Iterator[tuple[int, Grade]]:
        return _naming_task(super().grade_many(requests), [task for task, _ in requests])

    def compare_raw(self, requests: Sequence[ComparisonRequest]) -> Iterator[tuple[int, Verdict]]:
        return _naming_task(super().compare_raw(requests), [task for task, _, _ in requests])

    def choose_many(self, requests: Sequence[GroupRequest]) -> Iterator[tuple[int, Any]]:
        return _naming_task(super().choose_many(requests), [task for task, _ in requests])

    def rank_many(self, requests: Sequence[GroupRequest]) -> Iterator[tuple[int, Any]]:
        return _naming_task(super().rank_many(requests), [task for task, _ in requests])


def _naming_task(judgments: Iterator[tuple[int, Any]], tasks: Sequence[Any]) -> Iterator[tuple[int, Any]]:
    """Pass ``judgments`` on; a :class:`PromptTooLong` is raised again naming the task whose
    prompt it was (found by its prompt text in the rendered prompt)."""
    try:
        yield from judgments
    except PromptTooLong as err:
        task = next((t for t in tasks if t.prompt and t.prompt in err.prompt), None)
        if task is None:
            raise
        raise PromptTooLong(f"task {task.task_id!r}: {err}", prompt=err.prompt) from err


def from_spec(spec: Spec) -> VLLMJudge:
    """``vllm:MODEL[,dtype=..,max_model_len=..,max_num_seqs=..,enforce_eager=..,prefix_caching=..,
    kv_cache_gib=..,tensor_parallel_size=..,gpu_memory_utilization=..,mode=..,template=..]``."""
    model_ref, options, judge_kwargs = vllm_spec_parts(spec)
    identity = model_identity(model_ref, options["dtype"])  # refuses a bad directory first
    require_vllm()
    if model_ref == "smollm2":
        from rankkit.judges.hf_loading import smollm2_copy_dir

        source = str(smollm2_copy_dir(options["dtype"]))
    else:
        local = local_model_dir(model_ref)
        source = str(local) if local is not None else model_ref
    llm = load_llm(source, options)
    engine = VLLMEngine(llm, identity, max_model_len=options["max_model_len"], capacity=options["max_num_seqs"])
    return VLLMJudge(engine, **judge_kwargs)
