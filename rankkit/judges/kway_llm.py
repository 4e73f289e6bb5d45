"""k-way judgments from an LLM judge (``hf:``, ``smollm2``, ``openai:``): setwise choices and listwise orderings.

The prompts are :mod:`rankkit.prompts.kway`'s (answers labelled ``A``…``H``). Two modes, as for pairs:

* ``logprob`` — one forward pass per prompt, the reply forced to begin with ``Best: `` (a
  continuation rankkit writes, so nothing the answers say can stand in for the verdict); the
  label tokens' log-probabilities, renormalised over the k labels, are P(best = slot i), and the
  choice is the most probable slot. An *ordering* in logprob mode sorts the slots by those same
  probabilities (single-token listwise ranking, as FIRST, Reddy et al. 2024, reads a ranking from
  the first token's logits), so a listwise window costs one forward pass too.
* ``generate`` — the judge writes a short explanation and a verdict line (``Best: X`` or
  ``Ranking: X > Y > ...``). A *choice* is then read from a continuation rankkit writes: the
  judge's own explanation (up to its last ``Best:`` line), then ``Best: ``, then the label tokens'
  probabilities, as in logprob mode — so neither an answer's text nor a malformed verdict line
  decides it; the written verdict is kept in ``extras["written"]``. On an engine that cannot read
  a continuation (an HTTP server that does not continue a final assistant message), and for
  *orderings*, the verdict line is parsed strictly from the generated text only, after removing whatever
  it copied verbatim from the answers (:func:`~rankkit.judges.kway.strip_echoes`), so a verdict
  line written inside an answer is not read even when the judge quotes it;
  an unparseable reply is asked again once with the next seed (``retries``), then the judgment
  has status FAILED and the strategy treats its group as undecided.

``loglik`` mode and PREPAIR have no k-way form: such a judge does not offer k-way judgments
(:attr:`rankkit.judges.llm.LLMJudge.supports_kway`), and a k-way strategy is refused before anything is judged.
"""

from __future__ import annotations

from typing import Any, Iterator, Protocol, Sequence

from rankkit.judges.base import GroupRequest, JudgeError, ParseStatus, add_usage
from rankkit.judges.kway import (CHOICE_PREFIX, ORDERING_PREFIX, ChoiceJudgment, OrderJudgment, labels,
                                 order_from_scores, parse_choice, parse_ordering, probabilities_from_logprobs,
                                 strip_echoes, text_before_verdict)
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

#: Bumped when the reading of a k-way reply changes (part of the k-way cache key).
KWAY_READER_VERSION = "2"


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
    generated = {index: rest for index, *rest in _generate(judge, prompts, requests, parse_choice)}
    continued = _continue(judge, prompts, requests, {index: rest[0] for index, rest in generated.items()})
    for index, (text, status, usage, history) in generated.items():
        k = len(requests[index][1])
        written, error = parse_choice(_own_text(text, requests[index]), k)
        extras = _generate_extras("setwise", error, history)
        probabilities = continued.get(index)
        if probabilities is None:  # no continuation read: the written verdict, strictly parsed
            yield index, ChoiceJudgment(chosen=written, raw=text, status=status, usage=usage, extras=extras)
            continue
        chosen = order_from_scores(probabilities)[0]
        extras.update(read="continuation", written=written)
        yield index, ChoiceJudgment(
            chosen=chosen, probabilities=probabilities, raw=f"{text_before_verdict(text)}\n{CHOICE_PREFIX} {labels(k)[chosen]}",
            status=ParseStatus.OK if status is ParseStatus.OK else ParseStatus.RETRIED, usage=usage, extras=extras)


def _continue(judge: KwayJudge, prompts: Sequence[str], requests: Sequence[GroupRequest],
              texts: dict[int, str]) -> dict[int, tuple[float, ...]]:
    """P(best = slot) read from a continuation rankkit writes: the judge's own explanation, then
    ``Best: ``, then the label tokens' probabilities. Empty when the engine cannot read a
    continuation (a server that does not continue a final assistant message refuses with exit
    code 2, and a rerun would fail the same way): the written verdict is then all there is."""
    indices = sorted(texts)
    prefixes = [f"{text_before_verdict(texts[i])}\n{CHOICE_PREFIX} " for i in indices]
    choices = [labels(len(requests[i][1])) for i in indices]
    read: dict[int, tuple[float, ...]] = {}
    try:
        for local, logprobs in next_token_logprobs(judge.engine, [user_turn(prompts[i]) for i in indices],
                                                   prefixes, choices):
            probabilities = probabilities_from_logprobs(logprobs, len(choices[local]))
            if probabilities is not None:
                read[indices[local]] = probabilities
    except NotImplementedError:
        return {}
    except JudgeError as error:
        if getattr(error, "exit_code", 1) != 2:
            raise
        return {}
    return read


def order_many(judge: KwayJudge, requests: Sequence[GroupRequest]) -> Iterator[tuple[int, OrderJudgment]]:
    """Yield ``(index, OrderJudgment)`` per ``(task, candidates)`` request (module docstring)."""
    if judge.mode == "logprob":
        for index, choice in choose_many(judge, requests):
            permutation = None if choice.probabilities is None else order_from_scores(choice.probabilities)
            yield index, OrderJudgment(permutation=permutation, raw=choice.raw, status=choice.status,
                                       usage=choice.usage, extras={**choice.extras, "kind": "listwise"})
        return
    prompts = [render_kway("listwise", task, candidates) for task, candidates in requests]
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


def _generate_extras(kind: str, error: str | None, history: list[str]) -> dict[str, Any]:
    extras: dict[str, Any] = {"mode": "generate", "kind": kind}
    if error:
        extras["parse_error"] = error
    if len(history) > 1:
        extras["earlier_attempts"] = history[:-1]
    return extras
