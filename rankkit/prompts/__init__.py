"""Judge prompts: named, versioned template files, how a task picks one, rendering, and the strict verdict parser.

* :mod:`~rankkit.prompts.templates` — the template file format, built-in files and loading;
* :mod:`~rankkit.prompts.choice` — :class:`TemplateChoice`: which template each task gets;
* :mod:`~rankkit.prompts.render` — a task's grading scale and the prompt, untrusted tags defused;
* :mod:`~rankkit.prompts.verdicts` — :func:`parse_pointwise` and :func:`parse_pairwise`, never
  taking a verdict re-quoted from a candidate;
* :mod:`~rankkit.prompts.protocol` — protocol text and chat-template tokens in candidates;
* :mod:`~rankkit.prompts.normalize` — untrusted text as a tokenizer reads it.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

#: The names this package offers, each imported on first use from the module that defines it, so
#: a run needing only :mod:`~rankkit.prompts.protocol` does not load the rest.
_EXPORTS: dict[str, str] = {
    "DEFAULT_MAX_POINTS": "rankkit.prompts.render",
    "FAMILIES": "rankkit.prompts.templates",
    "FIELDS": "rankkit.prompts.templates",
    "KINDS": "rankkit.prompts.templates",
    "NO_REFERENCE": "rankkit.prompts.render",
    "PAIRWISE": "rankkit.prompts.templates",
    "POINTWISE": "rankkit.prompts.templates",
    "ParsedVerdict": "rankkit.prompts.verdicts",
    "TEMPLATE_DIR": "rankkit.prompts.templates",
    "Template": "rankkit.prompts.templates",
    "TemplateChoice": "rankkit.prompts.choice",
    "TemplateError": "rankkit.prompts.templates",
    "auto_template_name": "rankkit.prompts.choice",
    "builtin_templates": "rankkit.prompts.templates",
    "defuse": "rankkit.prompts.render",
    "describe_templates": "rankkit.prompts.templates",
    "format_points": "rankkit.prompts.render",
    "is_exam": "rankkit.prompts.choice",
    "is_german": "rankkit.prompts.choice",
    "is_translation": "rankkit.prompts.choice",
    "load_template": "rankkit.prompts.templates",
    "load_template_dir": "rankkit.prompts.templates",
    "normalised_tokens": "rankkit.prompts.verdicts",
    "parse_pairwise": "rankkit.prompts.verdicts",
    "parse_pointwise": "rankkit.prompts.verdicts",
    "parse_template": "rankkit.prompts.templates",
    "prompt_max_points": "rankkit.prompts.render",
    "render_pairwise": "rankkit.prompts.render",
    "render_pointwise": "rankkit.prompts.render",
    "render_text": "rankkit.prompts.render",
    "strip_echoes": "rankkit.prompts.verdicts",
    "task_values": "rankkit.prompts.render",
    "to_task_scale": "rankkit.prompts.render",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'rankkit.prompts' has no attribute {name!r}")
