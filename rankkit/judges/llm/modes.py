"""The judging modes ``logprob`` and ``loglik``, and what every mode shares: how an LLM judge reads a model.

``generate`` mode is in :mod:`rankkit.judges.llm.generate_mode`; :class:`~rankkit.judges.llm.judge.LLMJudge`
picks one from its ``JUDGING_MODES``; see ``docs/judges-llm.md``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from rankkit.data.conversations import plain_text
from rankkit.data.tasks import Candidate, Task
from rankkit.judges.base import add_usage
from rankkit.judges.llm.level_reads import level_fields, logprob_levels
from rankkit.judges.llm.runtime import Chat, ChoiceLogprobs, LLMRuntime, user_turn
from rankkit.judges.llm.verdict_rules import (
    choice_judgment,
    choice_probability,
    expected_digit,
    logprob_points,
    sigmoid,
    winner_from_scores,
)
from rankkit.judgments.values import ComparisonRequest, Grade, GradeRequest, ParseStatus, Verdict
from rankkit.prompts import (
    Template,
    TemplateChoice,
    format_points,
    render_text,
    to_task_scale,
)

#: Bump when the parser or a decision rule changes what a judgment is (part of the fingerprint).
PARSER_VERSION = "3"  # 3: ASCII digits only; generate prompts show the digit scale 0..K
#: How generate mode reads a verdict from a continuation (part of the fingerprint).
VERDICT_RULE = "1"  # expected digit after "<explanation>\n\nFinal verdict: Answer 1: " (then "... Answer 2: ")
#: The verdict paths of generate mode: ``continuation`` reads the verdict after a prefix rankkit
#: appends; ``text`` parses it from the free text (the fallback); ``auto`` picks the first the runtime can do.
VERDICT_PATHS = ("auto", "continuation", "text")
LOGPROB_RULE = "1"  # digits 0..min(M,9); P(1)/(P(1)+P(2)) after the choice prefix
LOGLIK_RULE = "1"  # mean token log-likelihood of the answer after the bare question


@dataclass(frozen=True)
class Prompt:
    """A rendered judge prompt: the conversation plus what is needed to read the reply."""

    conversation: Chat
    template: Template
    max_points: float
    untrusted: tuple[str, ...] = ()  # candidate texts: removed from the reply before parsing


# ---------------------------------------------------------------------------------------------
# The interfaces


class ModeJudge(Protocol):
    """What a mode (and :mod:`rankkit.judges.llm.kway`) reads from the LLM judge it serves: runtime,
    decoding parameters and templates (the prompts are passed down with the requests, so a mode
    never calls back into the judge for them)."""

    runtime: LLMRuntime
    mode: str
    max_new_tokens: int
    temperature: float
    seed: int
    retries: int
    verdict: str  # the verdict option: auto, continuation or text
    verdicts: str  # the verdict scale: binary, tie or graded (rankkit.judgments.levels)

    @property
    def verdict_path(self) -> str:
        """How generate mode reads verdicts for this judge: ``continuation`` or ``text``."""

    @property
    def templates(self) -> TemplateChoice:
        """The templates the judge's prompts come from (their fingerprint is the mode's)."""

    def calibrate_pair_probability(self, task: Task, first: Candidate, second: Candidate, probability: float) -> float:
        """A logprob comparison's P(first) after the judge's per-comparison calibration."""


class JudgingMode(Protocol):
    """One way of reading a model's judgment; see ``docs/judges-llm.md`` for the three."""

    name: str

    def fingerprint_fields(self, judge: ModeJudge) -> dict[str, Any]:
        """What this mode adds to the judge's fingerprint (templates, decoding, rule versions): JSON-ready."""

    def prompt_points(self, max_points: float) -> float:
        """The M a pointwise prompt shows, given the task's (or template's) M."""

    def grade(
        self, judge: ModeJudge, requests: Sequence[GradeRequest], prompts: Sequence[Prompt]
    ) -> Iterator[tuple[int, Grade]]:
        """Grade every request (``prompts``: one per request); yield ``(index in requests, grade)`` as each is ready."""

    def compare(
        self, judge: ModeJudge, requests: Sequence[ComparisonRequest], prompts: Sequence[Prompt]
    ) -> Iterator[tuple[int, Verdict]]:
        """Compare every request (first, second as shown; ``prompts``: one per request); yield
        ``(index in requests, verdict)`` as each is ready."""


def read_scores(
    runtime: LLMRuntime, prompts: Sequence[Prompt], prefixes: Sequence[str]
) -> Iterator[tuple[int, dict[str, float]]]:
    """Yield ``(index, logprobs)``: the digits ``0..K`` after each prompt's prefix (K = its ``max_points``)."""
    return next_token_logprobs(
        runtime,
        [p.conversation for p in prompts],
        prefixes,
        [tuple(str(k) for k in range(int(p.max_points) + 1)) for p in prompts],
    )


def read_usage(tables: Sequence[Mapping[str, float]]) -> dict[str, int]:
    """The summed usage of reading ``tables`` when the runtime reports it (hosted APIs); else empty."""
    total: dict[str, int] = {}
    for table in tables:
        if isinstance(table, ChoiceLogprobs):
            add_usage(total, table.usage)
    return total


# ---------------------------------------------------------------------------------------------
# logprob


def next_token_logprobs(
    runtime: LLMRuntime,
    conversations: Sequence[Chat],
    prefixes: Sequence[str],
    choices: Sequence[tuple[str, ...]],
) -> Iterator[tuple[int, dict[str, float]]]:
    """Yield ``(index, logprobs)`` of each conversation's own choices after its own prefix, in one runtime call.

    One call lets an HTTP runtime send every prompt at once rather than one group after another.
    """
    if not conversations:
        return
    yield from runtime.next_token_logprobs(conversations, prefixes=prefixes, choices=[tuple(row) for row in choices])


class LogprobMode:
    """One forward pass per prompt: the probabilities of the score digits or the two choices."""

    name = "logprob"

    def fingerprint_fields(self, judge: ModeJudge) -> dict[str, Any]:
        """Templates and rule versions."""
        return {"templates": judge.templates.fingerprint(), "rule": LOGPROB_RULE, **level_fields(judge)}

    def prompt_points(self, max_points: float) -> float:
        """The digit scale's K (:func:`logprob_points`)."""
        return float(logprob_points(max_points))

    def grade(
        self, judge: ModeJudge, requests: Sequence[GradeRequest], prompts: Sequence[Prompt]
    ) -> Iterator[tuple[int, Grade]]:
        """The expected score digit after ``Score: ``, one forward pass per request."""
        prefixes = [p.template.score_prefix + " " for p in prompts]
        for index, logprobs in read_scores(judge.runtime, prompts, prefixes):
            task = requests[index][0]
            prompt = prompts[index]
            value, mass = expected_digit(logprobs)
            extras = {
                "mode": "logprob",
                "template": prompt.template.name,
                "max_points": prompt.max_points,
                "score_mass": mass,
                "logprobs": dict(logprobs),
            }
            usage = read_usage([logprobs])
            if value is None:
                yield (
                    index,
                    Grade(
                        value=None,
                        raw=prefixes[index],
                        status=ParseStatus.FAILED,
                        usage=usage,
                        extras={**extras, "parse_error": "no probability on any score token"},
                    ),
                )
                continue
            yield (
                index,
                Grade(
                    value=to_task_scale(value, prompt.max_points, task.scale),
                    raw=f"{prefixes[index]}{value:.3f}/{format_points(prompt.max_points)}",
                    usage=usage,
                    extras=extras,
                ),
            )

    def compare(
        self, judge: ModeJudge, requests: Sequence[ComparisonRequest], prompts: Sequence[Prompt]
    ) -> Iterator[tuple[int, Verdict]]:
        """P(1) / (P(1) + P(2)) of the choice tokens after the choice prefix, one forward pass per pair
        (on a level scale: the level digit, :func:`~rankkit.judges.llm.level_reads.logprob_levels`)."""
        if judge.verdicts != "binary":
            conversations = [p.conversation for p in prompts]
            yield from logprob_levels(
                judge.runtime, requests, conversations, [p.template.name for p in prompts], judge.verdicts
            )
            return
        prefixes = [p.template.choice_prefix + " " for p in prompts]
        choices = [("1", "2")] * len(prompts)
        for index, logprobs in next_token_logprobs(judge.runtime, [p.conversation for p in prompts], prefixes, choices):
            task, first, second = requests[index]
            raw_probability = choice_probability(logprobs["1"], logprobs["2"])
            probability = (
                None
                if raw_probability is None
                else judge.calibrate_pair_probability(task, first, second, raw_probability)
            )
            judgment = choice_judgment(task, prompts[index].template.name, prefixes[index], dict(logprobs), probability)
            usage = read_usage([logprobs])
            yield index, replace(judgment, usage=usage) if usage else judgment


# ---------------------------------------------------------------------------------------------
# loglik


def _loglik_score(task: Task, mean_loglik: float) -> float:
    low, high = task.scale
    return low + math.exp(mean_loglik) * (high - low)


class LoglikMode:
    """No judge prompt: the likelihood of each answer as the model's own reply to the question."""

    name = "loglik"

    def fingerprint_fields(self, judge: ModeJudge) -> dict[str, Any]:
        """What loglik mode adds to the fingerprint."""
        return {"rule": LOGLIK_RULE}

    def prompt_points(self, max_points: float) -> float:
        """The task's M unchanged (loglik mode shows no judge prompt)."""
        return max_points

    @staticmethod
    def _answer_logliks(judge: ModeJudge, pairs: Sequence[tuple[Task, Candidate]]) -> Iterator[tuple[int, float]]:
        """Mean log-likelihood of each (task, candidate), computing each distinct text once."""
        unique: dict[tuple[str, str], list[int]] = {}
        for index, (task, candidate) in enumerate(pairs):
            # A conversation is shown as its rendered turns in one user message (no judge prompt here).
            question = task.prompt if isinstance(task.prompt, str) else render_text(task.prompt)
            unique.setdefault((question, plain_text(candidate.text)), []).append(index)
        keys = list(unique)
        for local, value in judge.runtime.answer_logliks([user_turn(q) for q, _ in keys], [a for _, a in keys]):
            for index in unique[keys[local]]:
                yield index, value

    def grade(
        self, judge: ModeJudge, requests: Sequence[GradeRequest], prompts: Sequence[Prompt]
    ) -> Iterator[tuple[int, Grade]]:
        """Each answer's mean token log-likelihood as a reply to the bare question, mapped onto the scale
        (``prompts`` are not used: this mode shows no judge prompt)."""
        for index, value in self._answer_logliks(judge, requests):
            task = requests[index][0]
            yield (
                index,
                Grade(
                    value=_loglik_score(task, value),
                    raw=f"mean log-likelihood {value:.4f}",
                    extras={"mode": "loglik", "mean_loglik": value},
                ),
            )

    def compare(
        self, judge: ModeJudge, requests: Sequence[ComparisonRequest], prompts: Sequence[Prompt]
    ) -> Iterator[tuple[int, Verdict]]:
        """The two answers' mean log-likelihoods compared: ``probability = sigmoid(ll_first - ll_second)``
        (``prompts`` are not used)."""
        flat = [(task, cand) for task, first, second in requests for cand in (first, second)]
        values: dict[int, float] = {}
        for flat_index, value in self._answer_logliks(judge, flat):
            values[flat_index] = value
            index, other = divmod(flat_index, 2)
            if 2 * index + (1 - other) not in values:
                continue  # wait until both answers of this comparison are known
            task = requests[index][0]
            first_ll, second_ll = values[2 * index], values[2 * index + 1]
            first_grade, second_grade = _loglik_score(task, first_ll), _loglik_score(task, second_ll)
            yield (
                index,
                Verdict(
                    first_grade=first_grade,
                    second_grade=second_grade,
                    winner=winner_from_scores(first_ll, second_ll),
                    raw=f"mean log-likelihoods {first_ll:.4f} vs {second_ll:.4f}",
                    probability=sigmoid(first_ll - second_ll),
                    extras={"mode": "loglik", "mean_loglik": [first_ll, second_ll]},
                ),
            )
