"""An LLM as the judge, independent of where the model runs.

:class:`LLMJudge` turns tasks into chat prompts (:mod:`rankkit.prompts`), drives an *engine*
(:class:`LLMEngine`: transformers in :mod:`rankkit.judges.hf`, an HTTP server in
:mod:`rankkit.judges.openai_compat`) and turns the engine's output into judgments. It has three
modes:

``generate`` — the paper's way. The judge writes an explanation, then a verdict
    (``Answer 1: X/M Answer 2: Y/M`` or ``Score: X/M``), which :mod:`rankkit.prompts` parses
    from the generated text only, ignoring any verdict that re-quotes candidate text (even with
    case, whitespace or punctuation changed). A missing, out-of-range, off-scale or ambiguous
    (two different verdicts) verdict is asked again
    once with the next seed (at temperature 0.7 when the judge decodes greedily, since a greedy
    retry would repeat itself); if that fails too the judgment is recorded with status FAILED.
    **Decision rule for failures:** a failed grade has ``score=None`` (the ``individual``
    strategy scores it at the middle of the scale); a failed comparison is a tie with both
    answers at the middle of the scale and ``probability=0.5``. Both are counted as
    ``parse_failures`` in the run's cost and keep the raw output for inspection.

``logprob`` — no generation, one forward pass per prompt. Pointwise: the reply is forced to
    start with the template's score prefix (``Score: ``) and the score is the expected value
    of the next token over the digits ``0..K`` (the weighted sum of G-Eval, used by PREPAIR,
    The Comparative Trap §5.3.4), where K is the task's M when it is a whole number up to 9 and 9
    otherwise (the prompt then says "0 to 9"); it is mapped linearly onto the task's scale.
    Pairwise: the reply is forced to start with the template's choice prefix (``The better
    answer is Answer ``) and ``probability`` = P(1) / (P(1) + P(2)) of the two choice tokens;
    the scores are that probability and its complement mapped onto the task's scale.

``loglik`` — pointwise score = mean token log-likelihood of the answer as a reply to the
    bare question (no judge prompt), mapped onto the scale as ``low + exp(mean) * (high-low)``
    (the geometric-mean token probability). A comparison compares the two answers' mean
    log-likelihoods, with ``probability = sigmoid(ll_first - ll_second)``; it has no position
    bias because neither answer is "first" to the model.

**Engines** yield ``(index, result)`` pairs as results are ready, and :meth:`LLMJudge.score_many`
/ :meth:`LLMJudge.compare_many` pass each judgment on the moment it exists, so the match layer
caches every judgment even when a batch fails half-way.

**Options on top of the modes:**

* ``prepair=true`` — PREPAIR (:mod:`rankkit.judges.prepair`): :meth:`LLMJudge.pair_prompts`
  returns decision prompts holding a per-answer analysis of each side, generated once per answer
  and cached through ``self.cache`` (set by :meth:`bind_cache`); everything downstream
  (generation, parsing, retries, logprob choice) is unchanged. Works in ``generate`` and
  ``logprob`` mode.
* ``calibrate=true`` — position-bias calibration of ``logprob`` comparisons
  (:mod:`rankkit.judges.calibration`): :meth:`LLMJudge.compare_calibrated` reads each pair in
  both orders and averages the log-odds. :meth:`LLMJudge.calibrate_pair_probability` remains a
  per-comparison hook (identity) for other calibrations.
* Extra fingerprint fields: extend :meth:`LLMJudge.fingerprint_fields`.

**Concurrent callers.** :meth:`LLMJudge.score_many` / :meth:`LLMJudge.compare_many` may be
called from several threads at once (as a dispatcher does, sizing its work from
:attr:`LLMJudge.capacity` and :attr:`LLMJudge.fills_batches`, both the engine's). The judge's own
state tolerates it: a PREPAIR analysis or a calibration's raw choice that two calls need is
computed by one and waited for by the other (the run's :class:`~rankkit.engine.JudgmentStore`
keeps one request per key in flight); whether the engine itself may be called concurrently is
the engine's to say (the HTTP engine may).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator, Mapping, Protocol, Sequence, runtime_checkable

from rankkit.engine import as_store
from rankkit.judges.base import (
    Judge,
    PairJudgment,
    PairRequest,
    ParseStatus,
    PointJudgment,
    PointRequest,
    Winner,
)
from rankkit.prompts import (
    PAIRWISE,
    POINTWISE,
    Template,
    TemplateChoice,
    Verdict,
    format_points,
    parse_pairwise,
    parse_pointwise,
    prompt_max_points,
    render_pairwise,
    render_pointwise,
    to_task_scale,
)
from rankkit.specs import Spec, SpecError, convert_value
from rankkit.tasks import Candidate, Task

MODES = ("generate", "logprob", "loglik")

#: Bump when the parser or a decision rule changes what a judgment is (part of the fingerprint).
PARSER_VERSION = "2"  # 2: loose re-quotes of candidates dropped; conflicting verdicts fail
LOGPROB_RULE = "1"  # digits 0..min(M,9); P(1)/(P(1)+P(2)) after the choice prefix
LOGLIK_RULE = "1"   # mean token log-likelihood of the answer after the bare question

#: Temperature of the one retry when the judge decodes greedily (temperature 0).
RETRY_TEMPERATURE = 0.7

Conversation = list[dict[str, str]]


# ---------------------------------------------------------------------------------------------
# The engine contract


@dataclass(frozen=True)
class Generation:
    """One generated reply: its text and token counts (``prompt_tokens``/``completion_tokens``
    when the engine knows them, else empty)."""

    text: str
    usage: dict[str, int] = field(default_factory=dict)


@runtime_checkable
class LLMEngine(Protocol):
    """What :class:`LLMJudge` needs from a model runtime.

    ``conversations`` are chat messages ``[{"role": "user", "content": ...}]``. Every method
    yields ``(index, result)`` in any order as results become ready, ``index`` being the
    position in ``conversations``.

    * ``generate``: the assistant's reply to each conversation. ``temperature`` 0 means greedy;
      ``seed`` seeds sampling.
    * ``next_token_logprobs``: the reply is forced to begin with ``assistant_prefix``; returns
      the log-probability of each of ``choices`` as the next token (``-inf`` when impossible).
      Choices must differ in their first token.
    * ``answer_logliks``: the mean per-token log-likelihood of ``answers[i]`` as the assistant's
      reply to ``conversations[i]``. May raise ``NotImplementedError``.
    * ``identity``: what identifies the model for the cache fingerprint (never secrets).
    """

    backend: str

    def identity(self) -> dict[str, Any]: ...

    def generate(self, conversations: Sequence[Conversation], *, max_new_tokens: int,
                 temperature: float, seed: int) -> Iterator[tuple[int, Generation]]: ...

    def next_token_logprobs(self, conversations: Sequence[Conversation], *, assistant_prefix: str,
                            choices: Sequence[str]) -> Iterator[tuple[int, dict[str, float]]]: ...

    def answer_logliks(self, conversations: Sequence[Conversation],
                       answers: Sequence[str]) -> Iterator[tuple[int, float]]: ...

    def close(self) -> None: ...


# ---------------------------------------------------------------------------------------------
# Pure scoring rules


def logprob_points(max_points: float) -> int:
    """K of the digit scale ``0..K`` a logprob grade reads: M if a whole number 1..9, else 9."""
    if float(max_points).is_integer() and 1 <= max_points <= 9:
        return int(max_points)
    return 9


def expected_digit(logprobs: Mapping[str, float]) -> tuple[float | None, float]:
    """Expected value of the digit choices, renormalised over them.

    ``logprobs`` maps ``"0"..."K"`` to next-token log-probabilities. Returns
    ``(sum_k k * p_k / sum_k p_k, sum_k p_k)``; the second value is the probability mass the
    model put on any score at all. The expectation is None when that mass is zero.
    """
    probabilities = {int(k): math.exp(v) for k, v in logprobs.items() if v > -math.inf}
    mass = sum(probabilities.values())
    if mass <= 0:
        return None, 0.0
    return sum(k * p for k, p in probabilities.items()) / mass, mass


def choice_probability(logprob_first: float, logprob_second: float) -> float | None:
    """P(first) = p1 / (p1 + p2) from two log-probabilities (None when both are impossible)."""
    top = max(logprob_first, logprob_second)
    if top == -math.inf:
        return None
    p1, p2 = math.exp(logprob_first - top), math.exp(logprob_second - top)
    return p1 / (p1 + p2)


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def winner_from_scores(first: float, second: float) -> Winner:
    if first > second:
        return Winner.FIRST
    if second > first:
        return Winner.SECOND
    return Winner.TIE


def midpoint(task: Task) -> float:
    return (task.scale[0] + task.scale[1]) / 2


def user_turn(content: str) -> Conversation:
    return [{"role": "user", "content": content}]


@dataclass(frozen=True)
class Prompt:
    """A rendered judge prompt: the conversation plus what is needed to read the reply."""

    conversation: Conversation
    template: Template
    max_points: float
    untrusted: tuple[str, ...] = ()  # candidate texts: removed from the reply before parsing


@dataclass
class _Outcome:
    """The end of the generate loop for one prompt."""

    text: str
    verdict: Verdict
    attempts: list[str]
    usage: dict[str, int]

    @property
    def status(self) -> ParseStatus:
        if not self.verdict.ok:
            return ParseStatus.FAILED
        return ParseStatus.OK if len(self.attempts) == 1 else ParseStatus.RETRIED


def _add_usage(total: dict[str, int], usage: Mapping[str, int]) -> None:
    for key, value in usage.items():
        total[key] = total.get(key, 0) + int(value)


# ---------------------------------------------------------------------------------------------
# The judge


class LLMJudge(Judge):
    """A judge backed by an :class:`LLMEngine`; see the module docstring for the modes.

    engine: the model runtime (owned: :meth:`close` closes it).
    mode: ``generate``, ``logprob`` or ``loglik``.
    template: ``auto``, a family (``paper``/``generic``/``mt``), a built-in template name or a
        file, ``+``-joined (see :class:`rankkit.prompts.TemplateChoice`).
    max_new_tokens / temperature / seed: decoding of ``generate`` mode (temperature 0.1 as in
        the paper); ``seed`` + 1 is used for the retry.
    retries: how many times a verdict that cannot be parsed is asked again (1).
    prepair: compare through PREPAIR — a cached per-answer analysis first, then a decision that
        sees both analyses (:mod:`rankkit.judges.prepair`).
    analysis_max_new_tokens: length cap of a PREPAIR analysis (default: ``max_new_tokens``).
    calibrate: remove the slot bias of ``logprob`` comparisons by averaging log-odds over both
        presentation orders (:mod:`rankkit.judges.calibration`).
    """

    def __init__(self, engine: LLMEngine, *, mode: str = "generate", template: str = "auto",
                 max_new_tokens: int = 256, temperature: float = 0.1, seed: int = 0, retries: int = 1,
                 prepair: bool = False, analysis_max_new_tokens: int | None = None, calibrate: bool = False):
        if mode not in MODES:
            raise SpecError(f"{engine.backend}: mode must be one of {', '.join(MODES)}, got {mode!r}")
        if max_new_tokens < 1:
            raise SpecError(f"{engine.backend}: max_new_tokens must be >= 1, got {max_new_tokens}")
        if temperature < 0:
            raise SpecError(f"{engine.backend}: temperature must be >= 0, got {temperature}")
        if retries < 0:
            raise SpecError(f"{engine.backend}: retries must be >= 0, got {retries}")
        if calibrate and mode != "logprob":
            raise SpecError(f"{engine.backend}: calibrate=true corrects choice probabilities and needs "
                            f"mode=logprob (mode is {mode})")
        if prepair and mode == "loglik":
            raise SpecError(f"{engine.backend}: prepair=true needs a judge prompt (mode=generate or logprob)")
        if analysis_max_new_tokens is not None and analysis_max_new_tokens < 1:
            raise SpecError(f"{engine.backend}: analysis_max_new_tokens must be >= 1, got {analysis_max_new_tokens}")
        self.engine = engine
        self.backend = engine.backend  # instance attribute: the fingerprint names the real backend
        self.mode = mode
        self.templates = TemplateChoice(template)
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.seed = seed
        self.retries = retries
        self.cache: Any = as_store(None)  # the run's store once bound (bind_cache)
        self.prepair = prepair
        self.analysis_max_new_tokens = analysis_max_new_tokens or max_new_tokens
        self.calibrate = calibrate
        #: Raw choice log-probabilities by the pair's cache key (:meth:`_pair_key`): the
        #: in-memory half of what calibration reuses between the two orders of a pair.
        self._raw_choices: dict[str, dict[str, float]] = {}
        self.analyses: Any = None
        if prepair:
            from rankkit.judges.prepair import AnalysisStore, analysis_fingerprint

            self.analyses = AnalysisStore(
                analysis_fingerprint(engine.identity(), self.analysis_max_new_tokens, temperature, seed),
                self._generate_analyses, self.cache)

    # -- identity -----------------------------------------------------------------------------
    def fingerprint_fields(self) -> dict[str, Any]:
        fields: dict[str, Any] = {"model": self.engine.identity(), "mode": self.mode}
        if self.mode == "generate":
            fields.update(templates=self.templates.fingerprint(), parser=PARSER_VERSION,
                          max_new_tokens=self.max_new_tokens, temperature=self.temperature,
                          seed=self.seed, retries=self.retries, retry_temperature=RETRY_TEMPERATURE)
        elif self.mode == "logprob":
            fields.update(templates=self.templates.fingerprint(), rule=LOGPROB_RULE)
        else:
            fields.update(rule=LOGLIK_RULE)
        if self.prepair:
            from rankkit.judges.prepair import ANALYSIS_VERSION, templates_fingerprint

            fields["prepair"] = {"templates": templates_fingerprint(), "version": ANALYSIS_VERSION,
                                 "analysis_max_new_tokens": self.analysis_max_new_tokens,
                                 "temperature": self.temperature, "seed": self.seed}
        if self.calibrate:
            from rankkit.judges.calibration import CALIBRATION_METHOD

            fields["calibrate"] = CALIBRATION_METHOD
        return fields

    @property
    def description(self) -> str:
        identity = self.engine.identity()
        name = identity.get("name") or identity.get("model") or "?"
        extra = "".join(f", {flag}" for flag in ("prepair", "calibrate") if getattr(self, flag))
        return f"{self.backend}:{name} (mode={self.mode}{extra})"

    @property
    def capacity(self) -> int:
        """How many requests the engine can usefully have in flight (1 when it does not say):
        a dispatcher sizes the work it hands over from it."""
        return getattr(self.engine, "capacity", 1)

    @property
    def fills_batches(self) -> bool:
        """Whether the engine gains from full batches (a local model) or streams requests (HTTP)."""
        return getattr(self.engine, "fills_batches", False)

    def bind_cache(self, cache: Any) -> None:
        """Keep the run's cache for judge-internal products (PREPAIR analyses, the raw
        judgments a calibrated judge builds on)."""
        self.cache = as_store(cache)  # one store, so concurrent calls share what is in flight
        if self.analyses is not None:
            self.analyses.cache = self.cache

    def close(self) -> None:
        self.engine.close()

    # -- prompts (extension points) -----------------------------------------------------------
    def point_prompt(self, task: Task, candidate: Candidate) -> Prompt:
        """The pointwise prompt for one candidate in the current mode."""
        template = self.templates.template(task, POINTWISE)
        max_points = prompt_max_points(task, template)
        if self.mode == "logprob":
            max_points = float(logprob_points(max_points))
        return Prompt(user_turn(render_pointwise(template, task, candidate, max_points)), template, max_points,
                      (candidate.text,))

    def pair_prompts(self, requests: Sequence[PairRequest]) -> list[Prompt]:
        """The pairwise prompts of a batch, in order (with ``prepair``: the decision prompts)."""
        if self.prepair:
            return self.prepair_prompts(requests)
        prompts = []
        for task, first, second in requests:
            template = self.templates.template(task, PAIRWISE)
            max_points = prompt_max_points(task, template)
            prompts.append(Prompt(user_turn(render_pairwise(template, task, first, second, max_points)),
                                  template, max_points, (first.text, second.text)))
        return prompts

    # -- PREPAIR -------------------------------------------------------------------------------
    def _generate_analyses(self, conversations: Sequence[Conversation]) -> Iterator[tuple[int, Generation]]:
        return self.engine.generate(conversations, max_new_tokens=self.analysis_max_new_tokens,
                                    temperature=self.temperature, seed=self.seed)

    def prepair_prompts(self, requests: Sequence[PairRequest]) -> list[Prompt]:
        """PREPAIR decision prompts: both answers and each one's analysis (generated if missing)."""
        from rankkit.judges.prepair import render_decision

        self.analyses.ensure([(task, c) for task, first, second in requests for c in (first, second)])
        prompts = []
        for task, first, second in requests:
            first_analysis = self.analyses.text(task, first)
            second_analysis = self.analyses.text(task, second)
            template = self._decision_template(task)
            max_points = prompt_max_points(task, template)
            template, text = render_decision(task, first, second, first_analysis, second_analysis, max_points)
            prompts.append(Prompt(user_turn(text), template, max_points,
                                  (first.text, second.text, first_analysis, second_analysis)))
        return prompts

    @staticmethod
    def _decision_template(task: Task) -> Template:
        from rankkit.judges.prepair import decision_template

        return decision_template(task)

    def _with_analysis_charges(self, requests: Sequence[PairRequest],
                               judgments: Iterator[tuple[int, PairJudgment]]) -> Iterator[tuple[int, PairJudgment]]:
        """Generate the batch's missing analyses first, then charge each fresh one (tokens and an
        ``analyses`` count in ``usage``) to the first judgment that used it."""
        fresh = self.analyses.ensure([(task, c) for task, first, second in requests for c in (first, second)])
        charges = self.analyses.charges(requests, fresh)
        for index, judgment in judgments:
            if charges[index]:
                usage = dict(judgment.usage)
                _add_usage(usage, charges[index])
                judgment = replace(judgment, usage=usage)
            yield index, judgment

    def calibrate_pair_probability(self, task: Task, first: Candidate, second: Candidate,
                                   probability: float) -> float:
        """Hook for position-bias calibration of logprob comparisons; identity by default."""
        return probability

    # -- single judgments ---------------------------------------------------------------------
    def score(self, task: Task, candidate: Candidate) -> PointJudgment:
        return next(self.score_many([(task, candidate)]))[1]

    def compare(self, task: Task, first: Candidate, second: Candidate) -> PairJudgment:
        return next(self.compare_many([(task, first, second)]))[1]

    # -- batched judgments --------------------------------------------------------------------
    def score_many(self, requests: Sequence[PointRequest]) -> Iterator[tuple[int, PointJudgment]]:
        if not requests:
            return iter(())
        if self.mode == "generate":
            return self.score_generate(requests)
        if self.mode == "logprob":
            return self.score_logprob(requests)
        return self.score_loglik(requests)

    def compare_many(self, requests: Sequence[PairRequest]) -> Iterator[tuple[int, PairJudgment]]:
        if not requests:
            return iter(())
        if self.mode == "generate":
            judgments = self.compare_generate(requests)
        elif self.mode == "logprob":
            judgments = self.compare_calibrated(requests) if self.calibrate else self.compare_logprob(requests)
        else:
            return self.compare_loglik(requests)
        return self._with_analysis_charges(requests, judgments) if self.prepair else judgments

    # -- generate mode ------------------------------------------------------------------------
    def _generate_verdicts(self, prompts: Sequence[Prompt],
                           parse: Callable[[str, float, Sequence[str]], Verdict]) -> Iterator[tuple[int, _Outcome]]:
        """Generate, parse, retry the unparseable once with the next seed; yield as ready."""
        history: dict[int, list[str]] = {i: [] for i in range(len(prompts))}
        usage: dict[int, dict[str, int]] = {i: {} for i in range(len(prompts))}
        pending = list(range(len(prompts)))
        for attempt in range(self.retries + 1):
            temperature = self.temperature if (attempt == 0 or self.temperature > 0) else RETRY_TEMPERATURE
            failed = []
            conversations = [prompts[i].conversation for i in pending]
            for local, generation in self.engine.generate(conversations, max_new_tokens=self.max_new_tokens,
                                                          temperature=temperature, seed=self.seed + attempt):
                index = pending[local]
                history[index].append(generation.text)
                _add_usage(usage[index], generation.usage)
                verdict = parse(generation.text, prompts[index].max_points, prompts[index].untrusted)
                if verdict.ok or attempt == self.retries:
                    yield index, _Outcome(generation.text, verdict, history[index], usage[index])
                else:
                    failed.append(index)
            pending = sorted(failed)
            if not pending:
                return

    @staticmethod
    def _generate_extras(prompt: Prompt, outcome: _Outcome) -> dict[str, Any]:
        extras: dict[str, Any] = {"mode": "generate", "template": prompt.template.name,
                                  "max_points": prompt.max_points}
        if outcome.verdict.scores is not None:
            extras["verdict"] = list(outcome.verdict.scores)
        if outcome.verdict.error:
            extras["parse_error"] = outcome.verdict.error
        if len(outcome.attempts) > 1:
            extras["earlier_attempts"] = outcome.attempts[:-1]
        return extras

    def score_generate(self, requests: Sequence[PointRequest]) -> Iterator[tuple[int, PointJudgment]]:
        prompts = [self.point_prompt(task, candidate) for task, candidate in requests]
        for index, outcome in self._generate_verdicts(prompts, parse_pointwise):
            task = requests[index][0]
            prompt = prompts[index]
            score = None
            if outcome.verdict.scores is not None:
                score = to_task_scale(outcome.verdict.scores[0], prompt.max_points, task.scale)
            yield index, PointJudgment(score=score, raw=outcome.text, status=outcome.status,
                                       usage=dict(outcome.usage), extras=self._generate_extras(prompt, outcome))

    def compare_generate(self, requests: Sequence[PairRequest]) -> Iterator[tuple[int, PairJudgment]]:
        prompts = self.pair_prompts(requests)
        for index, outcome in self._generate_verdicts(prompts, parse_pairwise):
            task = requests[index][0]
            prompt = prompts[index]
            extras = self._generate_extras(prompt, outcome)
            if outcome.verdict.scores is None:  # the documented failure rule: a tie at the midpoint
                middle = midpoint(task)
                judgment = PairJudgment(first_score=middle, second_score=middle, winner=Winner.TIE,
                                        raw=outcome.text, status=ParseStatus.FAILED, probability=0.5,
                                        usage=dict(outcome.usage), extras=extras)
            else:
                first, second = (to_task_scale(v, prompt.max_points, task.scale) for v in outcome.verdict.scores)
                judgment = PairJudgment(first_score=first, second_score=second,
                                        winner=winner_from_scores(first, second), raw=outcome.text,
                                        status=outcome.status, usage=dict(outcome.usage), extras=extras)
            yield index, judgment

    # -- logprob mode -------------------------------------------------------------------------
    def _next_token_logprobs(self, conversations: Sequence[Conversation], prefixes: Sequence[str],
                             choices: Sequence[tuple[str, ...]]) -> Iterator[tuple[int, dict[str, float]]]:
        """Group prompts by (prefix, choices) — e.g. English and German tasks — and ask the engine."""
        groups: dict[tuple[str, tuple[str, ...]], list[int]] = {}
        for index, key in enumerate(zip(prefixes, choices)):
            groups.setdefault(key, []).append(index)
        for (prefix, group_choices), indices in groups.items():
            for local, logprobs in self.engine.next_token_logprobs(
                    [conversations[i] for i in indices], assistant_prefix=prefix, choices=list(group_choices)):
                yield indices[local], logprobs

    def score_logprob(self, requests: Sequence[PointRequest]) -> Iterator[tuple[int, PointJudgment]]:
        prompts = [self.point_prompt(task, candidate) for task, candidate in requests]
        prefixes = [p.template.score_prefix + " " for p in prompts]
        choices = [tuple(str(k) for k in range(int(p.max_points) + 1)) for p in prompts]
        for index, logprobs in self._next_token_logprobs([p.conversation for p in prompts], prefixes, choices):
            task = requests[index][0]
            prompt = prompts[index]
            value, mass = expected_digit(logprobs)
            extras = {"mode": "logprob", "template": prompt.template.name, "max_points": prompt.max_points,
                      "score_mass": mass, "logprobs": logprobs}
            if value is None:
                yield index, PointJudgment(score=None, raw=prefixes[index], status=ParseStatus.FAILED,
                                           extras={**extras, "parse_error": "no probability on any score token"})
                continue
            yield index, PointJudgment(score=to_task_scale(value, prompt.max_points, task.scale),
                                       raw=f"{prefixes[index]}{value:.3f}/{format_points(prompt.max_points)}",
                                       extras=extras)

    def compare_logprob(self, requests: Sequence[PairRequest]) -> Iterator[tuple[int, PairJudgment]]:
        prompts = self.pair_prompts(requests)
        prefixes = [p.template.choice_prefix + " " for p in prompts]
        choices = [("1", "2")] * len(prompts)
        for index, logprobs in self._next_token_logprobs([p.conversation for p in prompts], prefixes, choices):
            task, first, second = requests[index]
            raw_probability = choice_probability(logprobs["1"], logprobs["2"])
            probability = None if raw_probability is None else \
                self.calibrate_pair_probability(task, first, second, raw_probability)
            yield index, self._choice_judgment(task, prompts[index].template.name, prefixes[index], logprobs,
                                               probability)

    @staticmethod
    def _choice_judgment(task: Task, template: str, prefix: str, logprobs: Mapping[str, float],
                         probability: float | None, extras: Mapping[str, Any] | None = None) -> PairJudgment:
        """A logprob comparison from its choice log-probabilities and P(first) (None: failed)."""
        extras = {"mode": "logprob", "template": template, "logprobs": dict(logprobs), **(extras or {})}
        raw_probability = choice_probability(logprobs["1"], logprobs["2"])
        if probability is None:
            middle = midpoint(task)
            return PairJudgment(first_score=middle, second_score=middle, winner=Winner.TIE,
                                raw=prefix, status=ParseStatus.FAILED, probability=0.5,
                                extras={**extras, "parse_error": "no probability on either choice"})
        if probability != raw_probability:
            extras["raw_probability"] = raw_probability
        low, high = task.scale
        first_score = low + probability * (high - low)
        second_score = low + (1.0 - probability) * (high - low)
        chosen = "1" if probability > 0.5 else "2" if probability < 0.5 else "1|2"
        return PairJudgment(first_score=first_score, second_score=second_score,
                            winner=winner_from_scores(first_score, second_score),
                            raw=f"{prefix}{chosen}", probability=probability, extras=extras)

    # -- calibrated logprob mode --------------------------------------------------------------
    @property
    def raw_fingerprint(self) -> str:
        """The fingerprint of this judge without calibration: the raw judgments are its own."""
        # Built from a copy, never by switching self.calibrate off and back: other threads may
        # be reading it. Calibration adds exactly the "calibrate" field.
        fields = {"backend": self.backend, "version": self.version, **self.fingerprint_fields()}
        fields.pop("calibrate", None)
        return json.dumps(fields, sort_keys=True, separators=(",", ":"), default=str)

    def _pair_key(self, task: Task, first: Candidate, second: Candidate) -> str:
        # The match layer's cache key for a comparison (Judge.request_key), as one hashable value.
        return json.dumps(self.request_key(task, first, second), ensure_ascii=False)

    def _raw_choice_logprobs(self, requests: Sequence[PairRequest]) -> dict[str, dict[str, float]]:
        """Raw choice log-probabilities of every request, from memory, the run's store (under
        :attr:`raw_fingerprint`, as the uncalibrated judge stores them) or the engine."""
        found: dict[str, dict[str, float]] = {}
        missing: dict[str, PairRequest] = {}
        for task, first, second in requests:
            key = self._pair_key(task, first, second)
            if key in found or key in missing:
                continue
            if key in self._raw_choices:
                found[key] = self._raw_choices[key]
            else:
                missing[key] = (task, first, second)
        if missing:
            keys = list(missing)

            def ask(indices: list[int]) -> Iterator[tuple[int, PairJudgment]]:
                batch = [missing[keys[i]] for i in indices]
                prompts = self.pair_prompts(batch)
                prefixes = [p.template.choice_prefix + " " for p in prompts]
                for index, logprobs in self._next_token_logprobs([p.conversation for p in prompts], prefixes,
                                                                 [("1", "2")] * len(prompts)):
                    yield index, self._choice_judgment(batch[index][0], prompts[index].template.name,
                                                       prefixes[index], logprobs,
                                                       choice_probability(logprobs["1"], logprobs["2"]))

            judged = self.cache.fetch(self.raw_fingerprint, "pair", [json.loads(k) for k in keys], ask,
                                                PairJudgment.from_dict, PairJudgment.to_dict)
            for key, (raw, _) in zip(keys, judged):
                found[key] = self._raw_choices[key] = dict(raw.extras["logprobs"])
        return found

    def compare_calibrated(self, requests: Sequence[PairRequest]) -> Iterator[tuple[int, PairJudgment]]:
        """Logprob comparisons with the slot bias removed by both-order log-odds averaging (see
        :mod:`rankkit.judges.calibration`): each pair is also read in the swapped order."""
        from rankkit.judges.calibration import (
            CALIBRATION_METHOD,
            both_orders_log_odds,
            choice_log_odds,
        )

        both = list(requests) + [(task, second, first) for task, first, second in requests]
        raw = self._raw_choice_logprobs(both)
        for index, (task, first, second) in enumerate(requests):
            forward = raw[self._pair_key(task, first, second)]
            backward = raw[self._pair_key(task, second, first)]
            used = self._decision_template(task) if self.prepair else self.templates.template(task, PAIRWISE)
            template, prefix = used.name, used.choice_prefix + " "
            forward_odds, backward_odds = choice_log_odds(forward), choice_log_odds(backward)
            if forward_odds is None or backward_odds is None:
                yield index, self._choice_judgment(task, template, prefix, forward, None,
                                                   {"calibration": CALIBRATION_METHOD, "swapped_logprobs": backward})
                continue
            calibrated, bias = both_orders_log_odds(forward_odds, backward_odds)
            extras = {"calibration": CALIBRATION_METHOD, "swapped_logprobs": dict(backward),
                      "raw_log_odds": forward_odds, "swapped_raw_log_odds": backward_odds, "slot_bias": bias}
            yield index, self._choice_judgment(task, template, prefix, forward, sigmoid(calibrated), extras)

    # -- loglik mode --------------------------------------------------------------------------
    def _answer_logliks(self, pairs: Sequence[tuple[Task, Candidate]]) -> Iterator[tuple[int, float]]:
        """Mean log-likelihood of each (task, candidate), computing each distinct text once."""
        unique: dict[tuple[str, str], list[int]] = {}
        for index, (task, candidate) in enumerate(pairs):
            unique.setdefault((task.prompt, candidate.text), []).append(index)
        keys = list(unique)
        for local, value in self.engine.answer_logliks([user_turn(q) for q, _ in keys], [a for _, a in keys]):
            for index in unique[keys[local]]:
                yield index, value

    @staticmethod
    def _loglik_score(task: Task, mean_loglik: float) -> float:
        low, high = task.scale
        return low + math.exp(mean_loglik) * (high - low)

    def score_loglik(self, requests: Sequence[PointRequest]) -> Iterator[tuple[int, PointJudgment]]:
        for index, value in self._answer_logliks(requests):
            task = requests[index][0]
            yield index, PointJudgment(score=self._loglik_score(task, value), raw=f"mean log-likelihood {value:.4f}",
                                       extras={"mode": "loglik", "mean_loglik": value})

    def compare_loglik(self, requests: Sequence[PairRequest]) -> Iterator[tuple[int, PairJudgment]]:
        flat = [(task, cand) for task, first, second in requests for cand in (first, second)]
        values: dict[int, float] = {}
        for flat_index, value in self._answer_logliks(flat):
            values[flat_index] = value
            index, other = divmod(flat_index, 2)
            if 2 * index + (1 - other) not in values:
                continue  # wait until both answers of this comparison are known
            task = requests[index][0]
            first_ll, second_ll = values[2 * index], values[2 * index + 1]
            first_score, second_score = self._loglik_score(task, first_ll), self._loglik_score(task, second_ll)
            yield index, PairJudgment(
                first_score=first_score, second_score=second_score, winner=winner_from_scores(first_ll, second_ll),
                raw=f"mean log-likelihoods {first_ll:.4f} vs {second_ll:.4f}",
                probability=sigmoid(first_ll - second_ll),
                extras={"mode": "loglik", "mean_loglik": [first_ll, second_ll]})


# ---------------------------------------------------------------------------------------------
# Spec options shared by every LLM backend


#: Options every LLM backend accepts, with their types; backends add their own.
LLM_OPTIONS: dict[str, type] = {"mode": str, "template": str, "max_new_tokens": int, "temperature": float,
                                "seed": int, "retries": int, "prepair": bool, "analysis_max_new_tokens": int,
                                "calibrate": bool}


def split_llm_options(spec: Spec, where: str, defaults: Mapping[str, Any] | None = None
                      ) -> tuple[dict[str, Any], dict[str, str]]:
    """Split a spec's options into :class:`LLMJudge` keyword arguments (converted) and the rest.

    ``defaults`` fills judge options the spec does not set (e.g. ``mode`` for smollm2).
    """
    judge_kwargs: dict[str, Any] = dict(defaults or {})
    rest: dict[str, str] = {}
    for key, value in spec.options.items():
        if key in LLM_OPTIONS:
            judge_kwargs[key] = convert_value(value, LLM_OPTIONS[key], where=f"{where}: {key}")
        else:
            rest[key] = value
    return judge_kwargs, rest
