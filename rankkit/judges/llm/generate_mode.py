"""``generate`` mode: the judge writes its reasoning; the verdict is read from a continuation rankkit controls.

One of the :mod:`rankkit.judges.llm.modes`; see ``docs/judges-llm.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rankkit.judges.base import add_usage
from rankkit.judges.llm.level_reads import continuation_levels, level_fields, level_verdict
from rankkit.judges.llm.modes import (
    PARSER_VERSION,
    VERDICT_RULE,
    ModeJudge,
    Prompt,
    read_scores,
    read_usage,
)
from rankkit.judges.llm.runtime import Chat, LLMRuntime
from rankkit.judges.llm.verdict_rules import expected_digit, failed_comparison, logprob_points, winner_from_scores
from rankkit.judgments.values import ComparisonRequest, Grade, GradeRequest, ParseStatus, Verdict
from rankkit.prompts import ParsedVerdict, format_points, parse_pairwise, parse_pointwise, to_task_scale
from rankkit.prompts.level_verdicts import parse_level

#: Temperature of the one retry when the judge decodes greedily (temperature 0).
RETRY_TEMPERATURE = 0.7


# ---------------------------------------------------------------------------------------------
# Generating replies and reading their verdicts (also k-way judgments' generate mode)


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
    judge: ModeJudge, conversations: Sequence[Chat], read: Reader, batched: bool = True
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
            **level_fields(judge),
        }

    def prompt_points(self, max_points: float) -> float:
        """The digit scale's K (:func:`logprob_points`): the verdict is read as one digit."""
        return float(logprob_points(max_points))

    def grade(
        self, judge: ModeJudge, requests: Sequence[GradeRequest], prompts: Sequence[Prompt]
    ) -> Iterator[tuple[int, Grade]]:
        """Generate an explanation per request, then read its score after ``Final verdict: Score: ``."""
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

    def compare(
        self, judge: ModeJudge, requests: Sequence[ComparisonRequest], prompts: Sequence[Prompt]
    ) -> Iterator[tuple[int, Verdict]]:
        """Generate an explanation per pair, then read both answers' scores after rankkit's verdict prefix
        (on a level scale: the level, :mod:`rankkit.judges.llm.level_reads`)."""
        if judge.verdicts != "binary":
            yield from self._levels(judge, requests, prompts)
            return
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

    def _levels(
        self, judge: ModeJudge, requests: Sequence[ComparisonRequest], prompts: Sequence[Prompt]
    ) -> Iterator[tuple[int, Verdict]]:
        """Each pair's level: read after rankkit's level line, or (``verdict=text``) parsed from ``[[A>B]]``."""
        scale = judge.verdicts
        conversations = [p.conversation for p in prompts]
        if judge.verdict_path == "text":

            def parse_texts(indices: Sequence[int], texts: Sequence[str]) -> Iterator[tuple[int, Reading]]:
                for local, (index, text) in enumerate(zip(indices, texts)):
                    parsed = parse_level(text, scale, prompts[index].untrusted)
                    yield local, Reading(None if parsed.level is None else {parsed.level: 1.0}, parsed.error)

            replies = generate_and_read(judge, conversations, parse_texts, batched=False)
        else:

            def read_continuations(indices: Sequence[int], texts: Sequence[str]) -> Iterator[tuple[int, Reading]]:
                read = continuation_levels(judge.runtime, [conversations[i] for i in indices], texts, scale)
                for local, (probabilities, what) in enumerate(read):
                    raw = f"{texts[local].rstrip()}\n\n[read by rankkit] {what['continuation']}"
                    error = None if probabilities is not None else "no probability on any level digit"
                    details = {"logprobs": what["logprobs"]}
                    yield local, Reading(probabilities, error, raw, {"verdict_reads": 1, **what["usage"]}, details)

            replies = generate_and_read(judge, conversations, read_continuations)
        for index, reply in replies:
            extras = self._extras(judge, prompts[index], reply)
            extras.pop("verdict", None)  # the probabilities are kept as level_probabilities
            task = requests[index][0]
            yield index, level_verdict(task, scale, reply.reading.value, reply.raw, reply.usage, extras, reply.status)

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
