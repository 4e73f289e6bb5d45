"""The vLLM judge: ``vllm:MODEL`` runs the model in process on vLLM's offline engine (``vllm.LLM``).

vllm is imported inside functions only. More in ``docs/judges-servers.md``.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from rankkit.data.specs import SpecError
from rankkit.judges.backends import Argument, Option, Settings, above, at_least
from rankkit.judges.base import JudgeError
from rankkit.judges.llm.context import check_fit
from rankkit.judges.llm.judge import llm_backend
from rankkit.judges.llm.runtime import Capacity, Chat, Generation, LLMRuntime
from rankkit.judges.local import chat_tokens
from rankkit.judges.local.hf_loading import DTYPES, LOAD_LOCK, LOADED, SMOLLM2_JUDGE_DEFAULTS, import_torch

#: What to run when vLLM is missing (see the README's "GPU box" for a GPU's vLLM build).
INSTALL_HINT = (
    "pip install torch==2.13.0 -e '.[vllm]' && pip uninstall -y torchvision torchaudio torchcodec "
    "(the vllm extra; see the README)"
)

#: The runtime's options, besides the judge's :data:`~rankkit.judges.llm.judge.LLM_OPTIONS`.
VLLM_OPTIONS: tuple[Option, ...] = (
    Option("dtype", str, "bfloat16", "the weights' dtype (smollm2: bfloat16 or float32)", choices=DTYPES),
    Option("max_model_len", int, 4096, "longest prompt plus reply, in tokens", identity=False, check=at_least(1)),
    Option(
        "max_num_seqs",
        int,
        64,
        "requests vLLM batches at once (the judge's capacity)",
        identity=False,
        check=at_least(1),
    ),
    Option("enforce_eager", bool, True, "no CUDA graphs (faster start)", identity=False),
    Option("prefix_caching", bool, True, "vLLM's automatic prefix caching", identity=False),
    Option("kv_cache_gib", float, 2.0, "KV cache size on a CPU, GiB", identity=False, check=above(0)),
    Option("tensor_parallel_size", int, 1, "GPUs the model is split over", identity=False, check=at_least(1)),
    Option(
        "gpu_memory_utilization",
        float,
        None,
        "fraction of GPU memory vLLM may use (default: vLLM's)",
        identity=False,
        check=lambda value: None if 0 < value <= 1 else "must be in (0, 1]",
    ),
)
#: The runtime options' defaults (``gpu_memory_utilization`` None: left to vLLM).
DEFAULTS: dict[str, Any] = {o.name: o.default for o in VLLM_OPTIONS}


# ---------------------------------------------------------------------------------------------
# Specs (nothing loaded)


def local_model_dir(model_ref: str) -> Path | None:
    """The local directory ``model_ref`` names, or None for a hub id.

    A reference is local when it exists or looks like a path (starts with ``.``, ``/`` or ``~``, or
    has more than one ``/``).

    Raises
    ------
    SpecError
        A local reference that is not a directory holding ``config.json``.

    Examples
    --------
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
    """What names the model in the fingerprint: SmolLM2 by its GGUF, a directory by its weights, a hub id by revision."""
    from rankkit.judges.local import hf
    from rankkit.judges.local.hf_loading import smollm2_identity

    if model_ref == "smollm2":
        if dtype not in ("bfloat16", "float32"):
            raise SpecError(f"vllm: smollm2's copy is made in bfloat16 or float32, got dtype={dtype}")
        return smollm2_identity(dtype)
    local = local_model_dir(model_ref)
    if local is not None:
        return hf.model_identity(str(local), None, dtype, None)
    from rankkit.judges.local.hf_loading import hub_revision

    return hf.model_identity(model_ref, None, dtype, hub_revision(model_ref))


def require_vllm() -> None:
    """Refuse (exit 2, naming the extra) when vLLM is not installed."""
    if importlib.util.find_spec("vllm") is None:
        raise SpecError(f"vllm: vLLM is not installed; install the vllm extra: {INSTALL_HINT}")


# ---------------------------------------------------------------------------------------------
# Loading (once per process)


#: vLLM engines are kept with the hf models in :data:`~rankkit.judges.local.hf_loading.LOADED` (one
#: lock for every model load), under keys starting with this; shut down at exit.
LOADED_KEY = "vllm"


def llm_kwargs(source: str, options: dict[str, Any], on_cpu: bool) -> dict[str, Any]:
    """``vllm.LLM`` keyword arguments for parsed spec options (on a CPU the KV cache is sized by ``kv_cache_gib``).

    Examples
    --------
    >>> kwargs = llm_kwargs("/m", DEFAULTS, on_cpu=True)
    >>> kwargs["enable_prefix_caching"], kwargs["kv_cache_memory_bytes"]
    (True, 2147483648)
    """
    kwargs: dict[str, Any] = {
        "model": source,
        "dtype": options["dtype"],
        "max_model_len": options["max_model_len"],
        "max_num_seqs": options["max_num_seqs"],
        "enforce_eager": options["enforce_eager"],
        "enable_prefix_caching": options["prefix_caching"],
        "tensor_parallel_size": options["tensor_parallel_size"],
    }
    if options["gpu_memory_utilization"] is not None:
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
    key = (LOADED_KEY, source, *sorted(options.items()))
    with LOAD_LOCK:
        if key not in LOADED:
            os.environ.setdefault(
                "VLLM_LOGGING_LEVEL", "ERROR"
            )  # its INFO and WARNING lines would drown rankkit's output
            # torch first, through rankkit: OpenMP then sleeps rather than spins while it waits
            import_torch()
            from vllm import LLM
            from vllm.platforms import current_platform

            try:
                LOADED[key] = LLM(**llm_kwargs(source, options, current_platform.is_cpu()))
            except Exception as err:  # vLLM raises many types; all mean "this model did not load"
                if "kv cache" in str(err).lower():  # too small for one max_model_len sequence: a setting
                    raise SpecError(
                        f"vllm: the KV cache cannot hold one sequence of max_model_len="
                        f"{options['max_model_len']} tokens for {source!r}; raise kv_cache_gib (CPU) or "
                        f"gpu_memory_utilization (GPU), or lower max_model_len ({err})"
                    ) from err
                raise JudgeError(f"vllm: cannot load model {source!r}: {type(err).__name__}: {err}") from err
        return LOADED[key]


def shutdown_all() -> None:
    """Stop every vLLM engine this process loaded (and its engine-core process); runs at exit."""
    with LOAD_LOCK:
        for key in [k for k in LOADED if k[0] == LOADED_KEY]:
            llm = LOADED.pop(key)
            core = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
            if core is not None:
                core.shutdown()


atexit.register(shutdown_all)


# ---------------------------------------------------------------------------------------------
# The runtime


class VLLMRuntime(LLMRuntime):
    """An :class:`~rankkit.judges.llm.runtime.LLMRuntime` on a loaded, shared ``vllm.LLM``.

    Each method sends the conversations that fit in one ``llm.generate`` call, yields every result,
    then raises :class:`~rankkit.judges.llm.runtime.PromptTooLong` for one longer than
    ``max_model_len``. Calls are serialized by a lock (``vllm.LLM`` is not thread-safe).
    """

    backend = "vllm"

    def __init__(self, llm: Any, identity: dict[str, Any], *, max_model_len: int, capacity: int = 64):
        self.llm = llm
        self.tokenizer = llm.get_tokenizer()
        self._identity = dict(identity)
        self.max_model_len = max_model_len
        self.context = (max_model_len, "max_model_len")
        self.capacity = Capacity(capacity, fills_batches=True)  # vLLM batches what it is given: waiting pays
        self._lock = threading.Lock()
        #: calls: llm.generate calls; rows: prompts sent; prompt_tokens: their tokens.
        self.stats = {"calls": 0, "rows": 0, "prompt_tokens": 0}

    def identity(self) -> dict[str, Any]:
        """The identity the runtime was built with (:func:`model_identity`)."""
        return dict(self._identity)

    def close(self) -> None:
        """Nothing to release: the engine stays loaded for other judges (:func:`shutdown_all`)."""

    # -- prompts ---------------------------------------------------------------------------------
    def prompt_ids(self, conversation: Chat, prefix: str = "") -> list[int]:
        """The token ids of a conversation's prompt followed by a forced reply ``prefix`` (:func:`.chat_tokens.encode_chat`)."""
        return chat_tokens.encode_chat(self.tokenizer, conversation, prefix)

    def _run(self, sequences: Sequence[Sequence[int]], params: Any, reserve: int) -> Iterator[tuple[int, Any]]:
        """``llm.generate`` on the sequences; yields ``(index, RequestOutput)``; PromptTooLong before any runs."""
        from vllm.inputs import TokensPrompt

        check_fit(
            sequences,
            reserve,
            self.max_model_len,
            f"vllm's max_model_len={self.max_model_len}; raise it: vllm:MODEL,max_model_len=N",
            self.tokenizer.decode,
        )
        if not sequences:
            return
        prompts = [TokensPrompt(prompt_token_ids=list(sequence)) for sequence in sequences]
        with self._lock:
            self.stats["calls"] += 1
            self.stats["rows"] += len(sequences)
            self.stats["prompt_tokens"] += sum(len(sequence) for sequence in sequences)
            try:
                outputs = self.llm.generate(prompts, params, use_tqdm=False)
            except Exception as err:  # the engine process died, ran out of memory...
                raise JudgeError(f"vllm: the engine failed: {type(err).__name__}: {err}") from err
        yield from enumerate(outputs)

    # -- the LLMRuntime protocol ------------------------------------------------------------------
    def next_token_logprobs(
        self,
        conversations: Sequence[Chat],
        *,
        prefixes: Sequence[str],
        choices: Sequence[Sequence[str]],
    ) -> Iterator[tuple[int, dict[str, float]]]:
        """Yield ``(index, logprobs)`` of each row's ``choices`` as the next token after its prefix.

        A row's choices' first tokens must differ.
        """
        from vllm import SamplingParams

        keys = [(prefix, tuple(row)) for _, prefix, row in zip(conversations, prefixes, choices, strict=True)]
        read = {key: chat_tokens.choice_token_ids(self.tokenizer, key[0], key[1], self.backend) for key in set(keys)}
        ids = sorted({token for _, tokens in read.values() for token in tokens})
        sequences = [self.prompt_ids(c, read[key][0]) for c, key in zip(conversations, keys)]
        params = SamplingParams(max_tokens=1, temperature=0.0, logprob_token_ids=ids)
        for index, output in self._run(sequences, params, reserve=1):
            logprobs = output.outputs[0].logprobs[0]
            tokens = read[keys[index]][1]
            yield (
                index,
                {
                    choice: float(logprobs[token].logprob) if token in logprobs else float("-inf")
                    for choice, token in zip(keys[index][1], tokens)
                },
            )

    def generate(
        self, conversations: Sequence[Chat], *, max_new_tokens: int, temperature: float, seed: int
    ) -> Iterator[tuple[int, Generation]]:
        """Yield ``(index, Generation)``: greedy at temperature 0, else sampled with ``seed`` per request.

        A per-request seed keeps a reply independent of what it was batched with (up to float noise).
        """
        from vllm import SamplingParams

        sequences = [self.prompt_ids(c) for c in conversations]
        params = SamplingParams(max_tokens=max_new_tokens, temperature=temperature, seed=seed)
        for index, output in self._run(sequences, params, reserve=1):
            reply = output.outputs[0]
            yield (
                index,
                Generation(
                    text=reply.text.strip(),
                    usage={"prompt_tokens": len(sequences[index]), "completion_tokens": len(reply.token_ids)},
                ),
            )

    def answer_logliks(self, conversations: Sequence[Chat], answers: Sequence[str]) -> Iterator[tuple[int, float]]:
        """Yield ``(index, loglik)``: each answer's mean token log-likelihood as the reply to its conversation."""
        from vllm import SamplingParams

        sequences, lengths = chat_tokens.answer_tokens(self.tokenizer, conversations, answers, self.backend)
        params = SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=0)
        for index, output in self._run(sequences, params, reserve=1):
            sequence, n = sequences[index], lengths[index]
            rows = output.prompt_logprobs[-n:]
            yield index, sum(float(row[token].logprob) for row, token in zip(rows, sequence[-n:])) / n


# ---------------------------------------------------------------------------------------------
# The backend


def _vllm_runtime(settings: Settings) -> VLLMRuntime:
    model_ref, options = settings.argument, settings.subset(VLLM_OPTIONS)
    identity = model_identity(model_ref, options["dtype"])  # refuses a bad directory first
    require_vllm()
    if model_ref == "smollm2":
        from rankkit.judges.local.hf_loading import smollm2_copy_dir

        source = str(smollm2_copy_dir(options["dtype"]))
    else:
        local = local_model_dir(model_ref)
        source = str(local) if local is not None else model_ref
    llm = load_llm(source, options)
    return VLLMRuntime(llm, identity, max_model_len=options["max_model_len"], capacity=options["max_num_seqs"])


def _vllm_identity(settings: Settings) -> dict[str, Any]:
    identity = model_identity(settings.argument, settings["dtype"])  # refuses a bad spec first, as the run does
    require_vllm()  # the dry run checks what the real run imports
    return identity


#: ``vllm:MODEL[,option=value...]``: the model in process on vLLM's offline engine.
BACKEND = llm_backend(
    "vllm",
    "vLLM's offline engine, in process (MODEL: a directory, a hub id or smollm2)",
    _vllm_runtime,
    options=VLLM_OPTIONS,
    identity=_vllm_identity,
    context=lambda settings: (settings["max_model_len"], "max_model_len"),
    argument=Argument("model", "vllm:smollm2 or vllm:./my-model"),
    loads_model=True,
    defaults=lambda model: SMOLLM2_JUDGE_DEFAULTS if model == "smollm2" else {},
    in_process=True,
)
