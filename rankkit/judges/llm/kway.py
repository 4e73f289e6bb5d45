"""k-way judgments from an LLM judge: setwise choices and listwise rankings.

The ``choose`` / ``rank`` side of :class:`~rankkit.judges.llm.judge.LLMJudge`, in ``logprob`` or
``generate`` mode. More in ``docs/judges-llm.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from rankkit.data.conversations import contents
from rankkit.judges.base import add_usage
from rankkit.judges.llm.generate_mode import Reader, Reading, Reply, generate_and_read
from rankkit.judges.llm.modes import ModeJudge, next_token_logprobs, read_usage
from rankkit.judges.llm.runtime import SAMPLED_VERDICT_PATHS, user_turn
from rankkit.judgments.values import GroupChoice, GroupRanking, GroupRequest, ParseStatus, labels
from rankkit.prompts.kway import defuse_kway, kway_templates_fingerprint, render_kway
from rankkit.prompts.kway_verdicts import (
    CHOICE_PREFIX,
    RANKING_PREFIX,
    parse_choice,
    parse_ranking,
    probabilities_from_logprobs,
    ranking_from_scores,
)
from rankkit.prompts.verdicts import ECHOED_KWAY_BOXES, strip_echoes

#: Bumped when the reading of a k-way reply changes (part of the k-way cache key).
KWAY_READER_VERSION = "2"  # 2: generate mode reads the labels after its own "Best: " / "Ranking: "


def kway_key(judge: ModeJudge) -> list[Any]:
    """What an LLM judge's k-way judgments depend on beyond its fingerprint: k-way templates, reader version."""
    return [{"kway_templates": kway_templates_fingerprint(), "kway_reader": KWAY_READER_VERSION}]


def choose_many(judge: ModeJudge, requests: Sequence[GroupRequest]) -> Iterator[tuple[int, GroupChoice]]:
    """Yield ``(index in requests, GroupChoice)`` per ``(task, candidates)`` request."""
    prompts = [render_kway("setwise", task, candidates) for task, candidates in requests]
    if judge.mode == "logprob":
        yield from _logprob_choices(judge, requests, prompts)
        return
    if judge.verdict_path != "text":  # a read rankkit controls (continuation, follow-up, prefill)
        read = _label_reader(judge, prompts, requests, CHOICE_PREFIX)
        for index, reply in generate_and_read(judge, [user_turn(p) for p in prompts], read):
            chosen = None if reply.reading.value is None else ranking_from_scores(reply.reading.value)[0]
            yield (
                index,
                GroupChoice(
                    chosen=chosen,
                    probabilities=reply.reading.value,
                    raw=reply.raw,
                    status=reply.status,
                    usage=reply.usage,
                    extras=_extras(reply, "setwise", judge.verdict_path),
                ),
            )
        return
    read = _text_reader(requests, parse_choice)
    for index, reply in generate_and_read(judge, [user_turn(p) for p in prompts], read, batched=False):
        yield (
            index,
            GroupChoice(
                chosen=reply.reading.value,
                raw=reply.raw,
                status=reply.status,
                usage=reply.usage,
                extras=_extras(reply, "setwise", "text"),
            ),
        )


def _logprob_choices(
    judge: ModeJudge, requests: Sequence[GroupRequest], prompts: Sequence[str]
) -> Iterator[tuple[int, GroupChoice]]:
    """Setwise choices read from the label probabilities after the choice prefix, one forward pass each."""
    prefix = CHOICE_PREFIX + " "
    choices = [labels(len(candidates)) for _, candidates in requests]
    conversations = [user_turn(prompt) for prompt in prompts]
    for index, logprobs in next_token_logprobs(judge.runtime, conversations, [prefix] * len(prompts), choices):
        k = len(choices[index])
        probabilities = probabilities_from_logprobs(logprobs, k)
        extras = {"mode": "logprob", "kind": "setwise", "logprobs": dict(logprobs)}
        if probabilities is None:
            yield (
                index,
                GroupChoice(
                    chosen=None,
                    raw=prefix,
                    status=ParseStatus.FAILED,
                    usage=read_usage([logprobs]),
                    extras={**extras, "parse_error": "no probability on any label"},
                ),
            )
            continue
        chosen = ranking_from_scores(probabilities)[0]
        yield (
            index,
            GroupChoice(
                chosen=chosen,
                probabilities=probabilities,
                usage=read_usage([logprobs]),
                raw=f"{prefix}{labels(k)[chosen]}",
                extras=extras,
            ),
        )


def rank_many(judge: ModeJudge, requests: Sequence[GroupRequest]) -> Iterator[tuple[int, GroupRanking]]:
    """Yield ``(index in requests, GroupRanking)`` per ``(task, candidates)`` request."""
    if judge.mode == "logprob":
        for index, choice in choose_many(judge, requests):
            permutation = None if choice.probabilities is None else ranking_from_scores(choice.probabilities)
            yield (
                index,
                GroupRanking(
                    permutation=permutation,
                    raw=choice.raw,
                    status=choice.status,
                    usage=choice.usage,
                    extras={**choice.extras, "kind": "listwise"},
                ),
            )
        return
    prompts = [render_kway("listwise", task, candidates) for task, candidates in requests]
    if judge.verdict_path != "text":  # a read rankkit controls (continuation, follow-up, prefill)
        sampled = judge.verdict_path in SAMPLED_VERDICT_PATHS  # one label per read: the ranking is read place by place
        read = (_ranking_reader if sampled else _label_reader)(judge, prompts, requests, RANKING_PREFIX)
        for index, reply in generate_and_read(judge, [user_turn(p) for p in prompts], read):
            permutation = None if reply.reading.value is None else ranking_from_scores(reply.reading.value)
            yield (
                index,
                GroupRanking(
                    permutation=permutation,
                    raw=reply.raw,
                    status=reply.status,
                    usage=reply.usage,
                    extras=_extras(reply, "listwise", judge.verdict_path),
                ),
            )
        return
    read = _text_reader(requests, parse_ranking)
    for index, reply in generate_and_read(judge, [user_turn(p) for p in prompts], read, batched=False):
        yield (
            index,
            GroupRanking(
                permutation=reply.reading.value,
                raw=reply.raw,
                status=reply.status,
                usage=reply.usage,
                extras=_extras(reply, "listwise", "text"),
            ),
        )


def _own_text(text: str, request: GroupRequest) -> str:
    """The reply without what it copied from the candidates (:func:`~rankkit.prompts.verdicts.strip_echoes`)."""
    task, candidates = request
    # As written and as the prompt showed it (delimiter tags defused).
    pieces = [piece for c in candidates for turn in contents(c.text) for piece in (turn, defuse_kway(turn))]
    return strip_echoes(text, pieces, ECHOED_KWAY_BOXES)


def _extras(reply: Reply, kind: str, path: str) -> dict[str, Any]:
    extras: dict[str, Any] = {"mode": "generate", "kind": kind, "verdict_path": path}
    if reply.reading.error:
        extras["parse_error"] = reply.reading.error
    if len(reply.history) > 1:
        extras["earlier_attempts"] = reply.history[:-1]
    return extras


def _text_reader(requests: Sequence[GroupRequest], parse: Callable[[str, int], tuple[Any, str | None]]) -> Reader:
    """The verdict line parsed strictly from the reply without what it copied (the text fallback)."""

    def read(indices: Sequence[int], texts: Sequence[str]) -> Iterator[tuple[int, Reading]]:
        for local, (index, text) in enumerate(zip(indices, texts)):
            yield local, Reading(*parse(_own_text(text, requests[index]), len(requests[index][1])))

    return read


def _label_reader(judge: ModeJudge, prompts: Sequence[str], requests: Sequence[GroupRequest], prefix: str) -> Reader:
    """P(best) per slot read after ``<reply>\n\n<prefix> ``, all the batch's replies in one runtime call."""

    def read(indices: Sequence[int], texts: Sequence[str]) -> Iterator[tuple[int, Reading]]:
        prefixes = [f"{text.rstrip()}\n\n{prefix} " for text in texts]
        choices = [labels(len(requests[i][1])) for i in indices]
        for local, logprobs in next_token_logprobs(
            judge.runtime, [user_turn(prompts[i]) for i in indices], prefixes, choices
        ):
            probabilities = probabilities_from_logprobs(logprobs, len(choices[local]))
            label = "?" if probabilities is None else choices[local][ranking_from_scores(probabilities)[0]]
            error = "no probability on any label after the verdict prefix" if probabilities is None else None
            raw = f"{texts[local].rstrip()}\n\n[read by rankkit] {prefix} {label}"
            yield local, Reading(probabilities, error, raw, {"verdict_reads": 1, **read_usage([logprobs])})

    return read


def _ranking_reader(judge: ModeJudge, prompts: Sequence[str], requests: Sequence[GroupRequest], prefix: str) -> Reader:
    """A ranking read place by place, for runtimes whose reads are a sampled label (Anthropic's prefill).

    k - 1 reads, each one call for the batch; the reading is the slots' places as scores (first: k).
    A place not filled with a remaining label fails the reading.
    """

    def read(indices: Sequence[int], texts: Sequence[str]) -> Iterator[tuple[int, Reading]]:
        sizes = [len(requests[i][1]) for i in indices]
        chosen: list[list[str]] = [[] for _ in indices]
        usage: list[dict[str, int]] = [{} for _ in indices]
        failed: set[int] = set()
        for place in range(max(sizes) - 1):
            active = [n for n, k in enumerate(sizes) if place < k - 1 and n not in failed]
            if not active:
                break
            heads = [
                f"{texts[n].rstrip()}\n\n{prefix} " + "".join(f"{label} > " for label in chosen[n]) for n in active
            ]
            remaining = [tuple(label for label in labels(sizes[n]) if label not in chosen[n]) for n in active]
            for local, logprobs in next_token_logprobs(
                judge.runtime, [user_turn(prompts[indices[n]]) for n in active], heads, remaining
            ):
                n = active[local]
                add_usage(usage[n], read_usage([logprobs]))
                best = [label for label, value in logprobs.items() if value > float("-inf")]
                if len(best) != 1:
                    failed.add(n)
                else:
                    chosen[n].append(best[0])
        for n in range(len(indices)):
            k = sizes[n]
            if n in failed:
                yield (
                    n,
                    Reading(
                        None,
                        f"no remaining label after '{prefix} {' > '.join(chosen[n])}'",
                        f"{texts[n].rstrip()}\n\n[read by rankkit] {prefix} {' > '.join(chosen[n])} > ?",
                        {"verdict_reads": len(chosen[n]) + 1, **usage[n]},
                    ),
                )
                continue
            order = chosen[n] + [label for label in labels(k) if label not in chosen[n]]
            scores = tuple(float(k - order.index(label)) for label in labels(k))
            raw = f"{texts[n].rstrip()}\n\n[read by rankkit] {prefix} {' > '.join(order)}"
            yield n, Reading(scores, None, raw, {"verdict_reads": k - 1, **usage[n]})

    return read
