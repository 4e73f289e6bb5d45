"""Graded and three-way verdicts of LLM judges (``verdicts=tie|graded``): asked for, and read unsteerably.

The prompt ends with :func:`~rankkit.prompts.level_verdicts.level_instruction`. The level is read as
the next token after a line rankkit writes itself (:func:`level_read_prefix`: the levels coded as
digits 1..n, one token in every tokenizer), through the runtime's ``next_token_logprobs``: a forced
continuation on local runtimes and servers, a follow-up turn or a prefill on hosted APIs
(:mod:`rankkit.judges.hosted.verdict`). A candidate's text is never where the level is read. Only
``verdict=text`` parses ``[[A>B]]`` from the judge's own text
(:func:`~rankkit.prompts.level_verdicts.parse_level`). See ``docs/graded-verdicts.md``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from rankkit.data.specs import SpecError
from rankkit.data.tasks import Task
from rankkit.judges.llm.runtime import Chat, LLMRuntime
from rankkit.judges.llm.verdict_rules import failed_comparison
from rankkit.judgments.levels import check_scale, level_label, level_winner, scale_labels, scale_levels
from rankkit.judgments.values import ParseStatus, Verdict
from rankkit.prompts.level_verdicts import level_instruction, level_probabilities, level_reading

#: Bump when the level read changes what a judgment is (part of the fingerprint).
LEVEL_RULE = "1"  # digits 1..n after level_read_prefix; level = most probable, P(first) = P(>0) + P(0)/2


def check_verdicts(backend: str, verdicts: str, mode: str, calibrate: bool, prepair: bool) -> str:
    """``verdicts``; a :class:`SpecError` naming ``backend`` for a scale that is unknown or cannot be read in this setup."""
    try:
        check_scale(verdicts)
    except ValueError as err:
        raise SpecError(f"{backend}: {err}") from None
    if verdicts == "binary":
        return verdicts
    if mode == "loglik":
        raise SpecError(f"{backend}: verdicts={verdicts} needs a judge prompt (mode=generate or logprob)")
    if calibrate or prepair:
        raise SpecError(f"{backend}: verdicts={verdicts} does not combine with calibrate or prepair yet")
    return verdicts


def with_instruction(conversation: Chat, scale: str) -> Chat:
    """``conversation`` with the level instruction appended to its last (user) turn; unchanged on ``binary``."""
    if scale == "binary":
        return conversation
    *earlier, last = conversation
    return [*earlier, {**last, "content": f"{last['content']}\n\n{level_instruction(scale)}"}]


def level_codes(scale: str) -> tuple[str, ...]:
    """The digit each level of ``scale`` is read as, strongest for the first answer first: ``1``..``n``."""
    return tuple(str(code) for code in range(1, len(scale_levels(scale)) + 1))


def level_read_prefix(scale: str) -> str:
    """The verdict line rankkit writes before reading the level's digit.

    Examples
    --------
    >>> level_read_prefix("tie")
    'Final verdict as a number (1 = [[A>B]], 2 = [[A=B]], 3 = [[B>A]]): '
    """
    codes = ", ".join(f"{code} = [[{label}]]" for code, label in zip(level_codes(scale), scale_labels(scale)))
    return f"Final verdict as a number ({codes}): "


def read_levels(
    runtime: LLMRuntime, conversations: Sequence[Chat], prefixes: Sequence[str], scale: str
) -> Iterator[tuple[int, dict[str, float]]]:
    """Yield ``(index, logprobs of the level digits)`` after each conversation's forced ``prefixes[i]``."""
    if not conversations:
        return
    codes = level_codes(scale)
    yield from runtime.next_token_logprobs(conversations, prefixes=prefixes, choices=[codes] * len(conversations))


def label_logprobs(digit_logprobs: Mapping[str, float], scale: str) -> dict[str, float]:
    """The digits' log-probabilities keyed by the labels they stand for."""
    return {
        label: digit_logprobs.get(code, float("-inf")) for code, label in zip(level_codes(scale), scale_labels(scale))
    }


def level_verdict(
    task: Task,
    scale: str,
    probabilities: Mapping[int, float] | None,
    raw: str,
    usage: Mapping[str, int],
    extras: Mapping[str, Any],
    status: ParseStatus = ParseStatus.OK,
) -> Verdict:
    """The verdict of level ``probabilities`` (None: unreadable, the failure rule's tie).

    The grades put P(first) on the task's scale, as a logprob comparison's do; ``extras`` gains the
    scale, the label and the probabilities.
    """
    if probabilities is None:
        return failed_comparison(task, raw, usage, {**extras, "parse_error": "no probability on any level"})
    level, first = level_reading(probabilities)
    low, high = task.scale
    return Verdict(
        first_grade=low + first * (high - low),
        second_grade=low + (1.0 - first) * (high - low),
        winner=level_winner(level),
        raw=raw,
        status=status,
        probability=first,
        usage=dict(usage),
        extras={
            **extras,
            "verdicts": scale,
            "label": level_label(level),
            "level_probabilities": {level_label(lv): p for lv, p in probabilities.items()},
        },
        level=level,
    )


def digit_probabilities(digit_logprobs: Mapping[str, float], scale: str) -> dict[int, float] | None:
    """P(level) from the digits' log-probabilities (None when no digit has mass)."""
    return level_probabilities(label_logprobs(digit_logprobs, scale), scale)


def logprob_levels(
    runtime: LLMRuntime,
    requests: Sequence[tuple[Task, Any, Any]],
    conversations: Sequence[Chat],
    template_names: Sequence[str],
    scale: str,
) -> Iterator[tuple[int, Verdict]]:
    """``mode=logprob`` on a level scale: one read of the level digit per pair, after :func:`level_read_prefix`."""
    prefix = level_read_prefix(scale)
    for index, logprobs in read_levels(runtime, conversations, [prefix] * len(conversations), scale):
        probabilities = digit_probabilities(logprobs, scale)
        shown = "?" if probabilities is None else _code_of(level_reading(probabilities)[0], scale)
        extras = {"mode": "logprob", "template": template_names[index], "logprobs": possible(logprobs)}
        usage = getattr(logprobs, "usage", {})
        yield index, level_verdict(requests[index][0], scale, probabilities, prefix + shown, usage, extras)


def possible(logprobs: Mapping[str, float]) -> dict[str, float]:
    """The digits a read gave any probability: an impossible one (``-inf``) is left out, since what a
    judgment keeps goes to the cache, which stores finite numbers only (absent reads as impossible).

    >>> possible({"1": -0.1, "2": float("-inf")})
    {'1': -0.1}
    """
    return {code: value for code, value in logprobs.items() if math.isfinite(value)}


def _code_of(level: int, scale: str) -> str:
    return level_codes(scale)[scale_levels(scale).index(level)]


def continuation_levels(
    runtime: LLMRuntime, conversations: Sequence[Chat], texts: Sequence[str], scale: str
) -> list[tuple[dict[int, float] | None, dict[str, Any]]]:
    """``mode=generate``'s level of each explanation: the digit after ``<explanation>\\n\\n`` + :func:`level_read_prefix`.

    Returns per explanation P(level) (None: no mass on any digit) and what was read (``logprobs``,
    ``continuation``, ``usage``).
    """
    prefix = level_read_prefix(scale)
    prefixes = [f"{text.rstrip()}\n\n{prefix}" for text in texts]
    tables = dict(read_levels(runtime, conversations, prefixes, scale))
    results = []
    for index in range(len(texts)):
        probabilities = digit_probabilities(tables[index], scale)
        shown = "?" if probabilities is None else _code_of(level_reading(probabilities)[0], scale)
        usage = dict(getattr(tables[index], "usage", {}))
        read = {"logprobs": [possible(tables[index])], "continuation": prefix + shown, "usage": usage}
        results.append((probabilities, read))
    return results


def level_fields(judge: Any) -> dict[str, Any]:
    """What a level scale adds to a mode's fingerprint: nothing on ``binary`` (fingerprints made before stay valid)."""
    scale = getattr(judge, "verdicts", "binary")
    return {} if scale == "binary" else {"verdicts": scale, "level_rule": LEVEL_RULE}
