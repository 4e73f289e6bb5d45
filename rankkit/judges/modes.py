"""The judging modes ``generate``, ``logprob`` and ``loglik``: how an LLM judge reads a model.

:class:`~rankkit.judges.llm.LLMJudge` picks one from :data:`JUDGING_MODES`; see ``docs/judges-llm.md``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from rankkit.judges.base import add_usage
from rankkit.judges.llm_runtime import ChoiceLogprobs, Conversation, LLMRuntime, user_turn
from rankkit.judgments import ComparisonRequest, Grade, GradeRequest, ParseStatus, Verdict, Winner
from rankkit.prompts import (
    ParsedVerdict,
    Template,
    TemplateChoice,
    format_points,
    parse_pairwise,
    parse_pointwise,
    to_task_scale,
)
from rankkit.tasks import Candidate, Task

#: Bump when the parser or a decision rule changes what a judgment is (part of the fingerprint).
PARSER_VERSION = "3"  # 3: ASCII digits only; generate prompts show the digit scale 0..K
#: How generate mode reads a verdict from a continuation (part of the fingerprint).
VERDICT_RULE = "1"  # expected digit after "<explanation>\n\nFinal verdict: Answer 1: " (then "... Answer 2: ")
#: The verdict paths of generate mode: ``continuation`` reads the verdict after a prefix rankkit
#: appends; ``text`` parses it from the free text (the fallback); ``auto`` picks the first the runtime can do.
VERDICT_PATHS = ("auto", "continuation", "text")
LOGPROB_RULE = "1"  # digits 0..min(M,9); P(1)/(P(1)+P(2)) after the choice prefix
LOGLIK_RULE = "1"  # mean token log-likelihood of the answer after the bare question

#: Temperature of the one retry when the judge decodes greedily (temperature 0).
RETRY_TEMPERATURE = 0.7


# ---------------------------------------------------------------------------------------------
# Pure scoring rules


def logprob_points(max_points: float) -> int:
    """K of the digit scale ``0..K`` a logprob grade reads: ``max_points`` if a whole number 1..9, else 9."""
    if float(max_points).is_integer() and 1 <= max_points <= 9:
        return int(max_points)
    return 9


def expected_digit(logprobs: Mapping[str, float]) -> tuple[float | None, float]:
    """Expected value of the digits ``"0"..."K"`` in ``logprobs``, renormalised over them.

    Returns ``(expectation, mass)``: ``mass`` is the probability on any digit; the expectation is None
    when it is zero.
    """
    probabilities = {int(k): math.exp(v) for k, v in logprobs.items() if v > -math.inf}
    mass = sum(probabilities.values())
    if mass <= 0:
        return None, 0.0
    return sum(k * p for k, p in probabilities.items()) / mass, mass


def choice_probability(logprob_first: float, logprob_second: float) -> float | None:
    """P(first) = p1 / (p1 + p2) from two log-probabilities; None when both are ``-inf``."""
    top = max(logprob_first, logprob_second)
    if top == -math.inf:
        return None
    p1, p2 = math.exp(logprob_first - top), math.exp(logprob_second - top)
    return p1 / (p1 + p2)


def sigmoid(x: float) -> float:
    """The logistic function ``1 / (1 + exp(-x))``, without overflow for large negative ``x``."""
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def winner_from_scores(first: float, second: float) -> Winner:
    """The verdict two scores give: the higher one wins; equal scores are a tie."""
    if first > second:
        return Winner.FIRST
    if second > first:
        return Winner.SECOND
    return Winner.TIE


def midpoint(task: Task) -> float:
    """The middle of the task's grading scale, ``(low + high) / 2``."""
    return (task.scale[0] + task.scale[1]) / 2


def failed_comparison(task: Task, raw: str, usage: Mapping[str, int], extras: Mapping[str, Any]) -> Verdict:
    """The failure rule of a comparison: a FAILED tie at the middle of the scale, ``probability=0.5``.

    ``raw`` is the judge's output, ``usage`` what the failed attempts cost.
    """
    middle = midpoint(task)
    return Verdict(
        first_grade=middle,
        second_grade=middle,
        winner=Winner.TIE,
        raw=raw,
        status=ParseStatus.FAILED,
        probability=0.5,
        usage=dict(usage),
        extras=dict(extras),
    )


def choice_judgment(
    task: Task,
    template: str,
    prefix: str,
    logprobs: Mapping[str, float],
    probability: float | None,
    extras: Mapping[str, Any] | None = None,
) -> Verdict:
    """A logprob comparison from its choice log-probabilities and P(first) (``probability`` None: failed).

    When ``probability`` differs from the raw P(1) / (P(1) + P(2)) of ``logprobs`` (a calibrated
    judge's), the raw one is kept in ``extras["raw_probability"]``.
    """
    extras = {"mode": "logprob", "template": template, "logprobs": dict(logprobs), **(extras or {})}
    raw_probability = choice_probability(logprobs["1"], logprobs["2"])
    if probability is None:
        return failed_comparison(task, prefix, {}, {**extras, "parse_error": "no probability on either choice"})
    if probability != raw_probability:
        extras["raw_probability"] = raw_probability
    low, high = task.scale
    first_grade = low + probability * (high - low)
    second_grade = low + (1.0 - probability) * (high - low)
    chosen = "1" if probability > 0.5 else "2" if probability < 0.5 else "1|2"
    return Verdict(
        first_grade=first_grade,
        second_grade=second_grade,
        winner=winner_from_scores(first_grade, second_grade),
        raw=f"{prefix}{chosen}",
        probability=probability,
        extras=extras,
    )


@dataclass(frozen=True)
class Prompt:
    """A rendered judge prompt: the conversation plus what is needed to read the reply."""

    conversation: Conversation
    template: Template
    max_points: float
    untrusted: tuple[str, ...] = ()  # candidate texts: removed from the reply before parsing


# ---------------------------------------------------------------------------------------------
# The interfaces


class ModeJudge(Protocol):
    """What a mode reads from the judge it serves: runtime, decoding parameters, templates and prompts."""

    runtime: LLMRuntime
    max_new_tokens: int
    temperature: float
    seed: int
    retries: int
    verdict: str  # the verdict option: auto, continuation or text

    @property
    def verdict_path(self) -> str:
        """How generate mode reads verdicts for this judge: ``continuation`` or ``text``."""

    @property
    def templates(self) -> TemplateChoice:
        """The templates the judge's prompts come from (their fingerprint is the mode's)."""

    def point_prompt(self, task: Task, candidate: Candidate) -> Prompt:
        """The pointwise prompt for one candidate."""

    def pair_prompts(self, requests: Sequence[ComparisonRequest]) -> list[Prompt]:
        """The pairwise prompts of a batch, one per request in order (each pair in the order shown)."""

    def calibrate_pair_probability(self, task: Task, first: Candidate, second: Candidate, probability: float) -> float:
        """A logprob comparison's P(first) after the judge's per-comparison calibration."""


class JudgingMode(Protocol):
    """One way of reading a model's judgment; see ``docs/judges-llm.md`` for the three."""

    name: str

    def fingerprint_fields(self, judge: ModeJudge) -> dict[str, Any]:
        """What this mode adds to the judge's fingerprint (templates, decoding, rule versions): JSON-ready."""

    def prompt_points(self, max_points: float) -> float:
        """The M a pointwise prompt shows, given the task's (or template's) M."""

    def grade(self, judge: ModeJudge, requests: Sequence[GradeRequest]) -> Iterator[tuple[int, Grade]]:
        """Grade every request; yield ``(index in requests, grade)`` as each is ready."""

    def compare(self, judge: ModeJudge, requests: Sequence[ComparisonRequest]) -> Iterator[tuple[int, Verdict]]:
        """Compare every request (first, second as shown); yield ``(index in requests, verdict)`` as each is ready."""


# ---------------------------------------------------------------------------------------------
# generate


@dataclass(frozen=True)
class Reading:
    """What a reader took from one reply: the verdict (None: why not), raw text to keep, usage and extras."""

    value: Any
    error: str | None = None
    raw: str | None = None
    usage: Mapping[str, int] = field(default_factory=dict)
    details: Mapping[str, Any] = field(default_factory=dict)


#: Reads the verdicts of a batch of generated replies: ``read(indices, texts)`` yields
#: ``(position in the batch, Reading)`` per reply (a text parse, or continuations rankkit writes).
Reader = Callable[[Sequence[int], Sequence[str]], Iterator[tuple[int, Reading]]]


@dataclass
class Reply:
    """A generated reply once its verdict was read, or could not be after the retries."""

    text: str
    reading: Reading
    status: ParseStatus
    usage: dict[str, int]
    history: list[str]  # every reply generated for the prompt, this one last

    @property
    def raw(self) -> str:
        return self.text if self.reading.raw is None else self.reading.raw


def generate_and_read(
    judge: ModeJudge, conversations: Sequence[Conversation], read: Reader, batched: bool = True
) -> Iterator[tuple[int, Reply]]:
    """Generate a reply to each conversation and read its verdict with ``read``; yield ``(index, Reply)``.

    A reply without a verdict is asked again with the next seed, up to the judge's ``retries`` (at
    :data:`RETRY_TEMPERATURE` when the judge decodes greedily, since a greedy retry would repeat
    itself). ``batched`` reads a whole attempt's replies at once (continuations), else each as it
    arrives (text parse). Each reply is yielded as soon as it is final, so the caller caches it.
    """
    history: dict[int, list[str]] = {i: [] for i in range(len(conversations))}
    usage: dict[int, dict[str, int]] = {i: {} for i in range(len(conversations))}
    pending = list(range(len(conversations)))
    for attempt in range(judge.retries + 1):
        temperature = judge.temperature if (attempt == 0 or judge.temperature > 0) else RETRY_TEMPERATURE
        failed: list[int] = []

        # attempt and failed are bound now: settle runs within this attempt, but says so explicitly
        def settle(
            indices: Sequence[int], texts: Sequence[str], attempt: int = attempt, failed: list[int] = failed
        ) -> Iterator[tuple[int, Reply]]:
            for local, reading in read(indices, texts):
                index = indices[local]
                add_usage(usage[index], reading.usage)
                if reading.value is None and attempt < judge.retries:
                    failed.append(index)
                    continue
                status = (
                    ParseStatus.FAILED
                    if reading.value is None
                    else ParseStatus.OK
                    if attempt == 0
                    else ParseStatus.RETRIED
                )
                yield index, Reply(texts[local], reading, status, usage[index], history[index])

        generated: dict[int, str] = {}
        for local, generation in judge.runtime.generate(
            [conversations[i] for i in pending],
            max_new_tokens=judge.max_new_tokens,
            temperature=temperature,
            seed=judge.seed + attempt,
        ):
            index = pending[local]
            history[index].append(generation.text)
            add_usage(usage[index], generation.usage)
            if batched:
                generated[index] = generation.text
            else:
                yield from settle([index], [generation.text])
        if generated:
            order = sorted(generated)
            yield from settle(order, [generated[i] for i in order])
        pending = sorted(failed)
        if not pending:
            return


def verdict_prefix(prompt: Prompt, explanation: str, slot: int | None) -> str:
    r"""The assistant prefix read after an explanation: ``<explanation>\n\nFinal verdict: Answer 1: ``.

    ``slot`` is 1 or 2 for a comparison's answer, None for a pointwise ``... Score: ``; the
    explanation's trailing whitespace is dropped.

    Examples
    --------
    >>> from rankkit.prompts import builtin_templates
    >>> prompt = Prompt([], builtin_templates()["paper-pairwise-en"], 4.0)
    >>> verdict_prefix(prompt, "Both are fine.  ", 1)
    'Both are fine.\n\nFinal verdict: Answer 1: '
    """
    template = prompt.template
    label = template.score_prefix if slot is None else f"{template.slot_label} {slot}:"
    return f"{explanation.rstrip()}\n\n{template.verdict_prefix} {label} "


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


def _argmax_digit(logprobs: Mapping[str, float]) -> str:
    return max(logprobs, key=lambda digit: (logprobs[digit], -int(digit)))


def continuation_verdicts(
    runtime: LLMRuntime, prompts: Sequence[Prompt], texts: Sequence[str], slots: int
) -> list[tuple[ParsedVerdict, dict[str, Any]]]:
    """The verdict of each explanation, read from continuations rankkit controls.

    After the explanation rankkit appends :func:`verdict_prefix` and reads the score digits ``0..K``
    as the next token; the score is their expected value. With ``slots=2`` the second score is read
    after the first one's most likely digit (``... Answer 1: 7/9 Answer 2: ``). The free text is
    never searched for a verdict, so nothing a candidate writes can be read as one. A slot with no
    mass on any digit fails. Returns per prompt the :class:`ParsedVerdict` (scores on ``[0, K]``)
    and what was read (``logprobs``, ``continuation``).
    """
    results: list[tuple[ParsedVerdict, dict[str, Any]]] = []
    prefixes = [verdict_prefix(p, t, 1 if slots == 2 else None) for p, t in zip(prompts, texts)]
    first = dict(read_scores(runtime, prompts, prefixes))
    second: dict[int, dict[str, float]] = {}
    if slots == 2:
        readable = [i for i in range(len(prompts)) if expected_digit(first[i])[0] is not None]
        follow = [
            f"{prefixes[i]}{_argmax_digit(first[i])}/{format_points(prompts[i].max_points)} "
            f"{prompts[i].template.slot_label} 2: "
            for i in readable
        ]
        for local, logprobs in read_scores(runtime, [prompts[i] for i in readable], follow):
            second[readable[local]] = logprobs
    for index, prompt in enumerate(prompts):
        tables = [first[index]] + ([second[index]] if index in second else [])
        values = [expected_digit(table)[0] for table in tables]
        template = prompt.template
        labels = [template.score_prefix] if slots == 1 else [f"{template.slot_label} {n}:" for n in (1, 2)]
        shown = template.verdict_prefix + "".join(
            f" {label} {'?' if v is None else format(v, '.2f')}/{format_points(prompt.max_points)}"
            for label, v in zip(labels, values)
        )
        read = {"logprobs": tables, "continuation": shown, "usage": read_usage(tables)}
        if len(values) < slots or any(v is None for v in values):
            results.append((ParsedVerdict(None, "no probability on any score digit after the verdict prefix"), read))
        else:
            results.append((ParsedVerdict(tuple(values)), read))
    return results


class GenerateMode:
    """The judge writes its reasoning; the verdict is read from a continuation rankkit controls.

    Where the runtime cannot continue a prefix, the verdict is parsed from the text (the flagged
    fallback). One retry with the next seed when no verdict can be read.
    """

    name = "generate"

    def fingerprint_fields(self, judge: ModeJudge) -> dict[str, Any]:
        """Templates, parser and verdict rule, decoding and retries."""
        return {
            "templates": judge.templates.fingerprint(),
            "parser": PARSER_VERSION,
            "verdict": judge.verdict,
            "verdict_rule": VERDICT_RULE,
            "max_new_tokens": judge.max_new_tokens,
            "temperature": judge.temperature,
            "seed": judge.seed,
            "retries": judge.retries,
            "retry_temperature": RETRY_TEMPERATURE,
        }

    def prompt_points(self, max_points: float) -> float:
        """The digit scale's K (:func:`logprob_points`): the verdict is read as one digit."""
        return float(logprob_points(max_points))

    def grade(self, judge: ModeJudge, requests: Sequence[GradeRequest]) -> Iterator[tuple[int, Grade]]:
        """Generate an explanation per request, then read its score after ``Final verdict: Score: ``."""
        prompts = [judge.point_prompt(task, candidate) for task, candidate in requests]
        for index, reply in self._verdicts(judge, prompts, 1):
            task = requests[index][0]
            prompt = prompts[index]
            scores = reply.reading.value
            score = None if scores is None else to_task_scale(scores[0], prompt.max_points, task.scale)
            yield (
                index,
                Grade(
                    value=score,
                    raw=reply.raw,
                    status=reply.status,
                    usage=dict(reply.usage),
                    extras=self._extras(judge, prompt, reply),
                ),
            )

    def compare(self, judge: ModeJudge, requests: Sequence[ComparisonRequest]) -> Iterator[tuple[int, Verdict]]:
        """Generate an explanation per pair, then read both answers' scores after rankkit's verdict prefix."""
        prompts = judge.pair_prompts(requests)
        for index, reply in self._verdicts(judge, prompts, 2):
            task = requests[index][0]
            prompt = prompts[index]
            extras = self._extras(judge, prompt, reply)
            if reply.reading.value is None:
                yield index, failed_comparison(task, reply.raw, reply.usage, extras)
                continue
            first, second = (to_task_scale(v, prompt.max_points, task.scale) for v in reply.reading.value)
            yield (
                index,
                Verdict(
                    first_grade=first,
                    second_grade=second,
                    winner=winner_from_scores(first, second),
                    raw=reply.raw,
                    status=reply.status,
                    usage=dict(reply.usage),
                    extras=extras,
                ),
            )

    @staticmethod
    def _verdicts(judge: ModeJudge, prompts: Sequence[Prompt], slots: int) -> Iterator[tuple[int, Reply]]:
        """Each prompt's verdict: continuations read in batched calls per attempt, or text parsed as it arrives."""
        conversations = [p.conversation for p in prompts]
        if judge.verdict_path == "text":
            parse = parse_pairwise if slots == 2 else parse_pointwise

            def parse_texts(indices: Sequence[int], texts: Sequence[str]) -> Iterator[tuple[int, Reading]]:
                for local, (index, text) in enumerate(zip(indices, texts)):
                    verdict = parse(text, prompts[index].max_points, prompts[index].untrusted)
                    yield local, Reading(verdict.scores, verdict.error)

            return generate_and_read(judge, conversations, parse_texts, batched=False)

        def read_continuations(indices: Sequence[int], texts: Sequence[str]) -> Iterator[tuple[int, Reading]]:
            read = continuation_verdicts(judge.runtime, [prompts[i] for i in indices], texts, slots)
            for local, (verdict, what) in enumerate(read):
                raw = f"{texts[local].rstrip()}\n\n[read by rankkit] {what['continuation']}"
                yield (
                    local,
                    Reading(
                        verdict.scores,
                        verdict.error,
                        raw,
                        {"verdict_reads": len(what["logprobs"]), **what["usage"]},
                        {"logprobs": what["logprobs"]},
                    ),
                )

        return generate_and_read(judge, conversations, read_continuations)

    @staticmethod
    def _extras(judge: ModeJudge, prompt: Prompt, reply: Reply) -> dict[str, Any]:
        reading = reply.reading
        extras: dict[str, Any] = {
            "mode": "generate",
            "template": prompt.template.name,
            "max_points": prompt.max_points,
            "verdict_path": judge.verdict_path if "logprobs" in reading.details else "text",
        }
        if reading.value is not None:
            extras["verdict"] = list(reading.value)
        extras.update(reading.details)
        if reading.error:
            extras["parse_error"] = reading.error
        if len(reply.history) > 1:
            extras["earlier_attempts"] = reply.history[:-1]
        return extras


# ---------------------------------------------------------------------------------------------
# logprob


def next_token_logprobs(
    runtime: LLMRuntime,
    conversations: Sequence[Conversation],
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
        return {"templates": judge.templates.fingerprint(), "rule": LOGPROB_RULE}

    def prompt_points(self, max_points: float) -> float:
        """The digit scale's K (:func:`logprob_points`)."""
        return float(logprob_points(max_points))

    def grade(self, judge: ModeJudge, requests: Sequence[GradeRequest]) -> Iterator[tuple[int, Grade]]:
        """The expected score digit after ``Score: ``, one forward pass per request."""
        prompts = [judge.point_prompt(task, candidate) for task, candidate in requests]
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

    def compare(self, judge: ModeJudge, requests: Sequence[ComparisonRequest]) -> Iterator[tuple[int, Verdict]]:
        """P(1) / (P(1) + P(2)) of the choice tokens after the choice prefix, one forward pass per pair."""
        prompts = judge.pair_prompts(requests)
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
            unique.setdefault((task.prompt, candidate.text), []).append(index)
        keys = list(unique)
        for local, value in judge.runtime.answer_logliks([user_turn(q) for q, _ in keys], [a for _, a in keys]):
            for index in unique[keys[local]]:
                yield index, value

    def grade(self, judge: ModeJudge, requests: Sequence[GradeRequest]) -> Iterator[tuple[int, Grade]]:
        """Each answer's mean token log-likelihood as a reply to the bare question, mapped onto the scale."""
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

    def compare(self, judge: ModeJudge, requests: Sequence[ComparisonRequest]) -> Iterator[tuple[int, Verdict]]:
        """The two answers' mean log-likelihoods compared: ``probability = sigmoid(ll_first - ll_second)``."""
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


#: The modes by name (stateless: one instance each serves every judge).
JUDGING_MODES: dict[str, JudgingMode] = {mode.name: mode for mode in (GenerateMode(), LogprobMode(), LoglikMode())}
MODES = tuple(JUDGING_MODES)
