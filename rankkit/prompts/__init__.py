"""Judge prompts: named, versioned template files, how a task picks one, rendering, and the strict verdict parser.

One module per step:

* :mod:`~rankkit.prompts.templates` — the template file format, the built-in files in
  ``rankkit/templates/`` and loading one by name or path;
* :mod:`~rankkit.prompts.choice` — :class:`TemplateChoice`: which template each task gets;
* :mod:`~rankkit.prompts.render` — the grading scale of a task and the rendered prompt, with
  delimiter tags inside untrusted text defused;
* :mod:`~rankkit.prompts.verdicts` — :func:`parse_pointwise` and :func:`parse_pairwise`, which
  read a verdict from the judge's generated text only and never take one re-quoted from a
  candidate;
* :mod:`~rankkit.prompts.protocol` — judge-protocol text and chat-template tokens inside
  candidates: found (the run's ``suspicious`` candidates) and rewritten inertly (``sanitize=true``;
  the HTTP judge's token neutralisation).
"""

from rankkit.prompts.choice import (
    TemplateChoice,
    auto_template_name,
    is_exam,
    is_german,
    is_translation,
)
from rankkit.prompts.render import (
    DEFAULT_MAX_POINTS,
    NO_REFERENCE,
    defuse,
    format_points,
    prompt_max_points,
    render_pairwise,
    render_pointwise,
    task_values,
    to_task_scale,
)
from rankkit.prompts.templates import (
    FAMILIES,
    FIELDS,
    KINDS,
    PAIRWISE,
    POINTWISE,
    TEMPLATE_DIR,
    Template,
    TemplateError,
    builtin_templates,
    describe_templates,
    load_template,
    load_template_dir,
    parse_template,
)
from rankkit.prompts.verdicts import (
    ParsedVerdict,
    normalised_tokens,
    parse_pairwise,
    parse_pointwise,
    strip_echoes,
)

__all__ = [
    "DEFAULT_MAX_POINTS",
    "FAMILIES",
    "FIELDS",
    "KINDS",
    "NO_REFERENCE",
    "PAIRWISE",
    "POINTWISE",
    "TEMPLATE_DIR",
    "ParsedVerdict",
    "Template",
    "TemplateChoice",
    "TemplateError",
    "auto_template_name",
    "builtin_templates",
    "defuse",
    "describe_templates",
    "format_points",
    "is_exam",
    "is_german",
    "is_translation",
    "load_template",
    "load_template_dir",
    "normalised_tokens",
    "parse_pairwise",
    "parse_pointwise",
    "parse_template",
    "prompt_max_points",
    "render_pairwise",
    "render_pointwise",
    "strip_echoes",
    "task_values",
    "to_task_scale",
]
