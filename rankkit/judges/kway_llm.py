"""k-way judgments from an LLM judge (``hf:``, ``smollm2``, ``openai:``): setwise choices and listwise orderings.

The prompts are :mod:`rankkit.prompts.kway`'s (answers labelled ``A``…``H``). Two modes, as for pairs:

* ``logprob`` — one forward pass per prompt, the reply forced to begin with ``Best: `` (a
  continuation rankkit writes, so nothing the answers say can stand in for the verdict); the
  label tokens' log-probabilities, renormalised over the k labels, are P(best = slot i), and the
  choice is the most probable slot. An *ordering* in logprob mode sorts the slots by those same
  probabilities (single-token listwise ranking, as FIRST, Reddy et al. 2024, reads a ranking from
  the first token's logits), so a listwise window costs one forward pass too.
* ``generate`` — the judge writes a short explanation; then, as for pairs (see
  :mod:`rankkit.judges.modes`), rankkit appends its own ``Best: `` (setwise) or ``Ranking: ``
  (listwise) after it and reads the label tokens' probabilities as the next token: the chosen
  slot, or the slots sorted by them. Nothing the answers say can stand in for the verdict. Only
  where the engine cannot continue a prefix (the judge's ``verdict_path`` is ``text``) is the
  verdict line (``Best: X`` or ``Ranking: X > Y > ...``) parsed from the generated text, after
  removing whatever it copied verbatim from the answers (:func:`~rankkit.judges.kway.strip_echoes`).
  A verdict that cannot be read is asked again once with the next seed (``retries``), then the
  judgment has status FAILED and the strategy treats its group as undecided.

``loglik`` mode and PREPAIR have no k-way form: such a judge does not offer k-way judgments
(:attr:`rankkit.judges.llm.LLMJudge.supports_kway`), and a k-way strategy is refused before anything is judged.
"""

from __future__ import annotations

from typing import Any, Iterator, Protocol, Sequence

from rankkit.judges.base import GroupRequest, ParseStatus, add_usage
from rankkit.judges.kway import (CHOICE_PREFIX, ORDERING_PREFIX, ChoiceJudgment, OrderJudgment, labels,
                                 order_from_scores, parse_choice, parse_ordering, probabilities_from_logprobs,
                                 strip_echoes)
from rankkit.judges.llm_engine import LLMEngine, user_turn
from rankkit.judges.modes import RETRY_TEMPERATURE, next_token_logprobs
from rankkit.prompts.kway import defuse_kway, render_kway, templates_fingerprint



class KwayJudge(Protocol):
    """What these functions read from the judge they serve (an :class:`~rankkit.judges.llm.LLMJudge`,
    which imports this module, so it is named by what it has, as the modes name it)."""

    engine: LLMEngine
    mode: str
    max_new_tokens: int
    temperature: float
    seed: int
    retries: int

    @property
    def verdict_path(self) -> str:
        """``continuation`` or ``text``: how generate mode reads a verdict (rankkit.judges.llm)."""

#: Bumped when the reading of a k-way reply changes (part of the k-way cache key).
KWAY_READER_VERSION = "2"  # 2: generate mode reads the labels after its own "Best: " / "Ranking: "


def kway_key(judge: KwayJudge) -> list[Any]:
    """What an LLM judge's k-way judgments depend on beyond its fingerprint: the k-way templates
    and the reader's version."""
    return [{"kway_templates": templates_fingerprint(), "kway_reader": KWAY_READER_VERSION}]


def choose_many(judge: KwayJudge, requests: Sequence[GroupRequest]) -> Iterator[tuple[int, ChoiceJudgment]]:
    """Yield ``(index, ChoiceJudgment)`` per ``(task, candidates)`` request (module docstring)."""
    prompts = [render_kway("setwise", task, candidates) for task, candidates in requests]
    if judge.mode == "logprob":
        prefix = CHOICE_PREFIX + " "
        choices = [labels(len(candidates)) for _, candidates in requests]
        conversations = [user_turn(prompt) for prompt in prompts]
        for index, logprobs in next_token_logprobs(judge.engine, conversations, [prefix] * len(prompts), choices):
            k = len(choices[index])
            probabilities = probabilities_from_logprobs(logprobs, k)
            extras = {"mode": "logprob", "kind": "setwise", "logprobs": dict(logprobs)}
            if probabilities is None:
                yield index, ChoiceJudgment(chosen=None, raw=prefix, status=ParseStatus.FAILED,
                                            extras={**extras, "parse_error": "no probability on any label"})
                continue
            chosen = order_from_scores(probabilities)[0]
            yield index, ChoiceJudgment(chosen=chosen, probabilities=probabilities,
                                        raw=f"{prefix}{labels(k)[chosen]}", extras=extras)
        return
    if judge.verdict_path == "continuation":
        for index, text, probabilities, status, usage, history in _continued(judge, prompts, requests,
                                                                              CHOICE_PREFIX):
            chosen = None if probabilities is None else order_from_scores(probabilities)[0]
            yield index, ChoiceJudgment(chosen=chosen, probabilities=probabilities, raw=text, status=status,
                                        usage=usage,
                                        extras=_generate_extras("setwise", _unread(probabilities), history, "continuation"))
        return
    for index, text, status, usage, history in _generate(judge, prompts, requests, parse_choice):
        chosen, error = parse_choice(_own_text(text, requests[index]), len(requests[index][1]))
        extras = _generate_extras("setwise", error, history)
        yield index, ChoiceJudgment(chosen=chosen, raw=text, status=status, usage=usage, extras=extras)


def order_many(judge: KwayJudge, requests: Sequence[GroupRequest]) -> Iterator[tuple[int, OrderJudgment]]:
    """Yield ``(index, OrderJudgment)`` per ``(task, candidates)`` request (module docstring)."""
    if judge.mode == "logprob":
        for index, choice in choose_many(judge, requests):
            permutation = None if choice.probabilities is None else order_from_scores(choice.probabilities)
            yield index, OrderJudgment(permutation=permutation, raw=choice.raw, status=choice.status,
                                       usage=choice.usage, extras={**choice.extras, "kind": "listwise"})
        return
    prompts = [render_kway("listwise", task, candidates) for task, candidates in requests]
    if judge.verdict_path == "continuation":
        for index, text, probabilities, status, usage, history in _continued(judge, prompts, requests,
                                                                              ORDERING_PREFIX):
            permutation = None if probabilities is None else order_from_scores(probabilities)
            yield index, OrderJudgment(permutation=permutation, raw=text, status=status, usage=usage,
                                       extras=_generate_extras("listwise", _unread(probabilities), history, "continuation"))
        return
    for index, text, status, usage, history in _generate(judge, prompts, requests, parse_ordering):
        permutation, error = parse_ordering(_own_text(text, requests[index]), len(requests[index][1]))
        yield index, OrderJudgment(permutation=permutation, raw=text, status=status, usage=usage,
                                   extras=_generate_extras("listwise", error, history))


def _own_text(text: str, request: GroupRequest) -> str:
    """The reply without what it copied from the candidates (:func:`~rankkit.judges.kway.strip_echoes`)."""
    task, candidates = request
    # As written and as the prompt showed it (delimiter tags defused).
    return strip_echoes(text, [piece for c in candidates for piece in (c.text, defuse_kway(c.text))])


def _generate(judge: KwayJudge, prompts: Sequence[str], requests: Sequence[GroupRequest], parse: Any
              ) -> Iterator[tuple[int, str, ParseStatus, dict[str, int], list[str]]]:
    """Generate each prompt's reply; ask an unparseable one again with the next seed, up to the
    judge's ``retries``. Yields ``(index, last text, status, usage, every text)`` as each is final."""
    history: dict[int, list[str]] = {i: [] for i in range(len(prompts))}
    usage: dict[int, dict[str, int]] = {i: {} for i in range(len(prompts))}
    pending = list(range(len(prompts)))
    for attempt in range(judge.retries + 1):
        temperature = judge.temperature if (attempt == 0 or judge.temperature > 0) else RETRY_TEMPERATURE
        failed = []
        conversations = [user_turn(prompts[i]) for i in pending]
        for local, generation in judge.engine.generate(conversations, max_new_tokens=judge.max_new_tokens,
                                                       temperature=temperature, seed=judge.seed + attempt):
            index = pending[local]
            history[index].append(generation.text)
            add_usage(usage[index], generation.usage)
            parsed, _ = parse(_own_text(generation.text, requests[index]), len(requests[index][1]))
            if parsed is not None:
                status = ParseStatus.OK if attempt == 0 else ParseStatus.RETRIED
                yield index, generation.text, status, usage[index], history[index]
            elif attempt == judge.retries:
                yield index, generation.text, ParseStatus.FAILED, usage[index], history[index]
            else:
                failed.append(index)
        pending = sorted(failed)
        if not pending:
            return


def _continued(judge: KwayJudge, prompts: Sequence[str], requests: Sequence[GroupRequest], prefix: str
               ) -> Iterator[tuple[int, str, tuple[float, ...] | None, ParseStatus, dict[str, int], list[str]]]:
    """Generate each prompt's explanation, then read the label probabilities after
    ``<explanation>\n\n<prefix> `` (a continuation rankkit writes); a reply with no probability on
    any label is asked again with the next seed, up to ``retries``. Yields ``(index, text shown
    with the label read, P(best) per slot or None, status, usage, every text)`` as each is final."""
    history: dict[int, list[str]] = {i: [] for i in range(len(prompts))}
    usage: dict[int, dict[str, int]] = {i: {} for i in range(len(prompts))}
    pending = list(range(len(prompts)))
    for attempt in range(judge.retries + 1):
        temperature = judge.temperature if (attempt == 0 or judge.temperature > 0) else RETRY_TEMPERATURE
        texts: dict[int, str] = {}
        for local, generation in judge.engine.generate([user_turn(prompts[i]) for i in pending],
                                                       max_new_tokens=judge.max_new_tokens,
                                                       temperature=temperature, seed=judge.seed + attempt):
            index = pending[local]
            texts[index] = generation.text
            history[index].append(generation.text)
            add_usage(usage[index], generation.usage)
        order = sorted(texts)
        prefixes = [f"{texts[i].rstrip()}\n\n{prefix} " for i in order]
        choices = [labels(len(requests[i][1])) for i in order]
        failed = []
        for local, logprobs in next_token_logprobs(judge.engine, [user_turn(prompts[i]) for i in order], prefixes,
                                                   choices):
            index = order[local]
            add_usage(usage[index], {"verdict_reads": 1})
            probabilities = probabilities_from_logprobs(logprobs, len(choices[local]))
            if probabilities is None and attempt < judge.retries:
                failed.append(index)
                continue
            status = (ParseStatus.FAILED if probabilities is None
                      else ParseStatus.OK if attempt == 0 else ParseStatus.RETRIED)
            read = "?" if probabilities is None else labels(len(choices[local]))[order_from_scores(probabilities)[0]]
            yield (index, f"{texts[index].rstrip()}\n\n[read by rankkit] {prefix} {read}", probabilities, status,
                   usage[index], history[index])
        pending = sorted(failed)
        if not pending:
            return


def _unread(probabilities: tuple[float, ...] | None) -> str | None:
    return "no probability on any label after the verdict prefix" if probabilities is None else None


def _generate_extras(kind: str, error: str | None, history: list[str], path: str = "text") -> dict[str, Any]:
    extras: dict[str, Any] = {"mode": "generate", "kind": kind, "verdict_path": path}
    if error:
        extras["parse_error"] = error
    if len(history) > 1:
        extras["earlier_attempts"] = history[:-1]
    return extras
