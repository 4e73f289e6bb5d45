"""Rendering a prompt for one task: the grading scale, field values with untrusted tags defused, the filled template.

Every field value is inserted literally, and candidate text sits between tags such as
``<answer_1>...</answer_1>``; any such tag *inside* a value is defused first (:func:`defuse`), so
an answer cannot close its own box and pose as the grader.
"""

from __future__ import annotations

import math
import re

from rankkit.prompts.templates import Template
from rankkit.tasks import Candidate, Task

#: Scale used when neither the template, ``meta.max_points`` nor the human range gives one.
DEFAULT_MAX_POINTS = 10.0

#: What ``{reference}`` shows when the task has no reference answer.
NO_REFERENCE = "(no reference answer given)"


def prompt_max_points(task: Task, template: Template) -> float:
    """The M in "grade from 0 to M" for this task and template.

    The template's fixed scale if it has one (MT: 100); else ``meta.max_points``; else the human
    score range when it is non-negative with a top of at least 2 (top rounded up to an integer);
    else 10. Judge scores on ``[0, M]`` are mapped linearly onto the task's scale by
    :func:`to_task_scale`.

    Parameters
    ----------
    task : Task
        The task (its ``meta.max_points`` and human score range).
    template : Template
        The template (its fixed ``max_points``, if any).

    Returns
    -------
    float
        M.
    """
    if template.max_points:
        return float(template.max_points)
    declared = task.meta.get("max_points")
    if isinstance(declared, (int, float)) and not isinstance(declared, bool) and declared > 0:
        return float(declared)
    low, high = task.scale
    if low >= 0 and high >= 2:
        return float(math.ceil(high - 1e-9))
    return DEFAULT_MAX_POINTS


def to_task_scale(value: float, max_points: float, scale: tuple[float, float]) -> float:
    """Map a grade on ``[0, max_points]`` linearly onto the task's ``(low, high)`` scale.

    Parameters
    ----------
    value : float
        The judge's grade.
    max_points : float
        The top of the prompt's scale.
    scale : tuple[float, float]
        The task's ``(low, high)``.

    Returns
    -------
    float
        The grade on the task's scale (unchanged when the scales are the same).
    """
    low, high = scale
    if low == 0 and high == max_points:
        return float(value)
    return low + (value / max_points) * (high - low)


def format_points(value: float) -> str:
    """``4.0`` -> ``"4"``, ``2.5`` -> ``"2.5"``.

    Parameters
    ----------
    value : float
        A number of points.

    Returns
    -------
    str
        Without a trailing ``.0``.
    """
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


_DELIMITER_TAG = re.compile(
    r"<(\s*/?\s*)(question|answer|answer_1|answer_2|reference|request|response|source|translation|"
    r"translation_1|translation_2)(\s*)>",
    re.IGNORECASE,
)


def defuse(text: str) -> str:
    """Make delimiter tags inside untrusted text inert (``</answer_1>`` -> ``‹/answer_1›``).

    Parameters
    ----------
    text : str
        Text put into a prompt.

    Returns
    -------
    str
        The text with its delimiter tags turned into look-alikes.
    """
    return _DELIMITER_TAG.sub(lambda m: f"‹{m.group(1)}{m.group(2)}{m.group(3)}›", text)


def task_values(task: Task, max_points: float) -> dict[str, str]:
    """Field values shared by both kinds: question, reference, source, max_points.

    Parameters
    ----------
    task : Task
        The task.
    max_points : float
        The M of the prompt's scale (:func:`prompt_max_points`).

    Returns
    -------
    dict[str, str]
        ``question``, ``reference`` (or :data:`NO_REFERENCE`), ``source`` (``meta.input``, else the
        question) and ``max_points``, defused.
    """
    source = task.meta.get("input")
    return {
        "question": defuse(task.prompt),
        "reference": defuse(task.reference) if task.reference else NO_REFERENCE,
        "source": defuse(source if isinstance(source, str) and source.strip() else task.prompt),
        "max_points": format_points(max_points),
    }


def render_pointwise(template: Template, task: Task, candidate: Candidate, max_points: float) -> str:
    """The pointwise prompt for one candidate.

    Parameters
    ----------
    template : Template
        The template (pointwise or pairwise, as the function says).
    task : Task
        The task (question, reference, source).
    candidate : Candidate
        The answer graded.
    max_points : float
        The M of the prompt's scale (:func:`prompt_max_points`).

    Returns
    -------
    str
        The rendered prompt.
    """
    values = task_values(task, max_points)
    values["answer"] = defuse(candidate.text)
    return template.render(values)


def render_pairwise(template: Template, task: Task, first: Candidate, second: Candidate, max_points: float) -> str:
    """The pairwise prompt with ``first`` as answer 1 and ``second`` as answer 2.

    Parameters
    ----------
    template : Template
        The template (pointwise or pairwise, as the function says).
    task : Task
        The task (question, reference, source).
    first : Candidate
        Answer 1.
    second : Candidate
        Answer 2.
    max_points : float
        The M of the prompt's scale (:func:`prompt_max_points`).

    Returns
    -------
    str
        The rendered prompt.
    """
    values = task_values(task, max_points)
    values["answer_1"] = defuse(first.text)
    values["answer_2"] = defuse(second.text)
    return template.render(values)
