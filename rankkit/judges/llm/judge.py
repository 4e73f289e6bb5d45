"""An LLM as the judge, wherever the model runs: :class:`LLMJudge`, and its :class:`RawComparisons`.

More in ``docs/judges-llm.md``.
"""

from __future__ import annotations

import functools
import json
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from rankkit.data.conversations import contents, final_text, map_contents, plain_text
from rankkit.data.specs import Spec, SpecError, parse_spec
from rankkit.data.tasks import Candidate, Task
from rankkit.judges.backends import Argument, Backend, Option, Settings, at_least, check_value
from rankkit.judges.base import Judge, JudgeError, add_usage, answer_directly
from rankkit.judges.llm.calibration import CALIBRATION_METHOD, both_orders, calibrated_verdicts
from rankkit.judges.llm.generate_mode import GenerateMode
from rankkit.judges.llm.level_reads import check_verdicts, with_instruction
from rankkit.judges.llm.modes import VERDICT_PATHS, JudgingMode, LoglikMode, LogprobMode, Prompt
from rankkit.judges.llm.runtime import Chat, Generation, LLMRuntime, PromptTooLong, StandInRuntime, user_turn
from rankkit.judgments.judge_protocol import Capabilities, Found, Needed
from rankkit.judgments.levels import VERDICT_SCALES
from rankkit.judgments.values import VERDICT_KIND, ComparisonRequest, Grade, GradeRequest, Verdict
from rankkit.prompts import (
    PAIRWISE,
    POINTWISE,
    Template,
    TemplateChoice,
    prompt_max_points,
    render_pairwise,
    render_pointwise,
)
from rankkit.prompts.protocol import SANITIZE_VERSION, sanitize_protocol

__all__ = ["LLM_OPTIONS", "LLMJudge", "RawComparisons", "llm_backend"]

#: The judging modes by name (stateless: one instance each serves every judge).
JUDGING_MODES: dict[str, JudgingMode] = {mode.name: mode for mode in (GenerateMode(), LogprobMode(), LoglikMode())}
MODES = tuple(JUDGING_MODES)


# ---------------------------------------------------------------------------------------------
# The judge


class LLMJudge(Judge):
    """A judge backed by an :class:`LLMRuntime`, reading judgments through a mode (:mod:`rankkit.judges.llm.modes`).

    runtime: owned (:meth:`close` closes it). mode: ``generate``, ``logprob`` or ``loglik``.
    template: ``auto``, a family, a built-in name or a file, ``+``-joined
        (:class:`rankkit.prompts.TemplateChoice`).
    max_new_tokens / temperature / seed: decoding of ``generate`` mode; ``seed`` + 1 for the retry.
    retries: how often a reply without a verdict is asked again.
    prepair: compare through PREPAIR (:mod:`rankkit.judges.llm.prepair`); analysis_max_new_tokens caps
        its analyses (default ``max_new_tokens``).
    calibrate: average ``logprob`` comparisons' log-odds over both orders (:mod:`rankkit.judges.llm.calibration`).
    verdict: how ``generate`` reads the verdict: ``continuation`` (a read rankkit controls, so nothing
        in the free text can pose as the verdict; :mod:`rankkit.judges.hosted.verdict` on hosted APIs),
        ``text`` (parsed from the free text: the weaker fallback) or ``auto`` (the first the runtime
        offers, warning once on stderr when that is text).
    sanitize: rewrite candidates' judge-protocol text inertly before rendering (not with ``loglik``).
    verdicts: the verdict scale of comparisons: ``binary``, ``tie`` or ``graded``
        (:mod:`rankkit.judges.llm.level_reads`; not with ``loglik``, ``calibrate`` or ``prepair``).
    """

    def __init__(
        self,
        runtime: LLMRuntime,
        *,
        mode: str = "generate",
        template: str = "auto",
        max_new_tokens: int = 256,
        temperature: float = 0.1,
        seed: int = 0,
        retries: int = 1,
        prepair: bool = False,
        analysis_max_new_tokens: int | None = None,
        calibrate: bool = False,
        verdict: str = "auto",
        sanitize: bool = False,
        verdicts: str = "binary",
    ):
        _check_options(
            runtime.backend,
            mode=mode,
            max_new_tokens=max_new_tokens,
            temperature=temperature,
            retries=retries,
            verdict=verdict,
            analysis_max_new_tokens=analysis_max_new_tokens,
            calibrate=calibrate,
            prepair=prepair,
            sanitize=sanitize,
        )
        self.runtime = runtime
        self.backend = runtime.backend  # instance attribute: the fingerprint names the real backend
        self.mode = mode
        self.template = template
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.seed = seed
        self.retries = retries
        self.prepair = prepair
        self.analysis_max_new_tokens = analysis_max_new_tokens or max_new_tokens
        self.calibrate = calibrate
        self.verdict = verdict
        self.sanitize = sanitize
        self.verdicts = check_verdicts(runtime.backend, verdicts, mode, calibrate, prepair)
        self._verdict_path: str | None = None
        self._verdict_lock = threading.Lock()
        #: PREPAIR's analyser (:class:`~rankkit.judges.llm.prepair.Analyser`; None without prepair),
        #: whose analyses the comparisons need. It names the runtime's model only once asked.
        self.analyses: Any = None
        if prepair:
            from rankkit.judges.llm.prepair import Analyser

            self.analyses = Analyser(self._analysis_fingerprint, self._generate_analyses)
        #: The comparisons before calibration, under :attr:`raw_fingerprint` (what calibration needs).
        self.raw_comparisons = RawComparisons(self)

    @functools.cached_property
    def templates(self) -> TemplateChoice:
        """The templates ``template`` names, read on first use (so a bad template fails before the first judgment)."""
        return TemplateChoice(self.template)

    @property
    def verdict_path(self) -> str:
        """The path generate mode reads verdicts by: ``continuation``, ``text`` or a hosted runtime's own read.

        Decided on first use: an HTTP runtime answers with a probe request, which a dry run must never send.
        """
        with self._verdict_lock:
            if self._verdict_path is None:
                self._verdict_path = self._choose_verdict_path()
            return self._verdict_path

    def _choose_verdict_path(self) -> str:
        if self.verdict == "text":
            return "text"
        path = self.runtime.verdict_path  # hosted APIs: a follow-up turn or a prefill (rankkit.judges.hosted.verdict)
        if path is not None:
            return path
        if self.verdict == "continuation":
            raise JudgeError(
                f"{self.backend}: verdict=continuation, but the server neither continues a final "
                f"assistant message nor returns log-probabilities or structured outputs for a follow-up; "
                f"use verdict=text (weaker: the verdict is parsed from free text) or a server that does"
            )
        print(
            f"rankkit: warning: {self.backend}: the server offers no verdict read rankkit controls (no "
            f"continuation, no log-probabilities, no structured outputs), so verdicts are parsed "
            f"from the judge's free text (verdict=text, the weaker fallback: see the README's 'Untrusted "
            f"candidates'); each judgment records verdict_path=text",
            file=sys.stderr,
        )
        return "text"

    @property
    def judging_mode(self) -> JudgingMode:
        """The mode object for :attr:`mode` (stateless, shared by every judge)."""
        return JUDGING_MODES[self.mode]

    # -- identity -----------------------------------------------------------------------------
    def fingerprint_fields(self) -> dict[str, Any]:
        """Everything that changes a judgment: backend, model, template, mode, decoding, options."""
        fields: dict[str, Any] = {
            "model": self.runtime.identity(),
            "mode": self.mode,
            **self.judging_mode.fingerprint_fields(self),
        }
        if self.prepair:
            from rankkit.judges.llm.prepair import ANALYSIS_VERSION, templates_fingerprint

            fields["prepair"] = {
                "templates": templates_fingerprint(),
                "version": ANALYSIS_VERSION,
                "analysis_max_new_tokens": self.analysis_max_new_tokens,
                "temperature": self.temperature,
                "seed": self.seed,
            }
        if self.calibrate:
            fields["calibrate"] = CALIBRATION_METHOD
        if self.sanitize:  # absent when off: the fingerprints of judges without it do not change
            fields["sanitize"] = SANITIZE_VERSION
        return fields

    @property
    def raw_fingerprint(self) -> str:
        """The fingerprint without calibration, which :meth:`compare_raw` judgments are cached under."""
        # Built from a copy, never by switching self.calibrate off and back: other threads may
        # be reading it. Calibration adds exactly the "calibrate" field.
        fields = {"backend": self.backend, "version": self.version, **self.fingerprint_fields()}
        fields.pop("calibrate", None)
        return json.dumps(fields, sort_keys=True, separators=(",", ":"), default=str)

    @property
    def description(self) -> str:
        return self.describe(calibrated=self.calibrate)

    def describe(self, *, calibrated: bool) -> str:
        """``backend:model (mode=..., prepair, calibrate)``; ``calibrated``: its comparisons are calibrated."""
        identity = self.runtime.identity()
        name = identity.get("name") or identity.get("model") or "?"
        extra = "".join(
            f", {flag}"
            for flag, on in (("prepair", self.prepair), ("calibrate", calibrated), ("sanitize", self.sanitize))
            if on
        )
        return f"{self.backend}:{name} (mode={self.mode}{extra})"

    @property
    def capabilities(self) -> Capabilities:  # type: ignore[override]
        """Grades and comparisons in every mode; k-way judgments in ``logprob`` and ``generate``
        mode without PREPAIR; capacity and batching from the runtime."""
        return Capabilities(
            kway=self.mode in ("logprob", "generate") and not self.prepair,
            capacity=self.runtime.capacity.requests,
            fills_batches=self.runtime.capacity.fills_batches,
            mode=self.mode,
            max_new_tokens=self.max_new_tokens if self.mode == "generate" else 0,
            prepair=self.prepair,
            calibrate=self.calibrate,
        )

    def close(self) -> None:
        self.runtime.close()

    def show_progress(self, note: Callable[[str], None]) -> None:
        """Have the runtime report its state (e.g. each batch's) to the progress bar's ``note``."""
        self.runtime.show_progress(note)

    # -- prompts (extension points) -----------------------------------------------------------
    def shown(self, candidate: Candidate) -> Candidate:
        """The candidate as the prompts show it: with ``sanitize`` its protocol text rewritten, else itself."""
        if not self.sanitize:
            return candidate
        text = map_contents(candidate.text, sanitize_protocol)  # every turn of a multi-turn answer
        return candidate if text == candidate.text else replace(candidate, text=text)

    @staticmethod
    def _untrusted(*candidates: Candidate, shown: Sequence[Candidate]) -> tuple[str, ...]:
        """The texts a reply is checked against: each candidate as written and, when sanitized, as shown
        (a multi-turn answer: each turn, and all of it)."""
        texts = [text for c in [*candidates, *shown] for text in (*contents(c.text), plain_text(c.text))]
        return tuple(dict.fromkeys(texts))

    def point_prompt(self, task: Task, candidate: Candidate) -> Prompt:
        """The pointwise prompt for one candidate in the current mode."""
        template = self.templates.template(task, POINTWISE)
        max_points = self.judging_mode.prompt_points(prompt_max_points(task, template))
        shown = self.shown(candidate)
        return Prompt(
            user_turn(render_pointwise(template, task, shown, max_points)),
            template,
            max_points,
            self._untrusted(candidate, shown=[shown]),
        )

    def pair_template(self, task: Task) -> Template:
        """The template of this judge's comparisons of ``task`` (with ``prepair``: the decision's)."""
        if self.prepair:
            from rankkit.judges.llm.prepair import decision_template

            return decision_template(task)
        return self.templates.template(task, PAIRWISE)

    def pair_prompts(
        self, requests: Sequence[ComparisonRequest], analyses: Sequence[tuple[str, str]] = ()
    ) -> list[Prompt]:
        """The pairwise prompts of a batch, in order (with ``prepair``: the decision prompts, showing
        each request's two ``analyses``)."""
        if self.prepair:
            return self.prepair_prompts(requests, analyses)
        prompts = []
        for task, first, second in requests:
            template = self.pair_template(task)
            max_points = self.pair_points(task, template)
            shown = [self.shown(first), self.shown(second)]
            prompts.append(
                Prompt(
                    with_instruction(user_turn(render_pairwise(template, task, *shown, max_points)), self.verdicts),
                    template,
                    max_points,
                    self._untrusted(first, second, shown=shown),
                )
            )
        return prompts

    def shown_pairs(self, requests: Sequence[ComparisonRequest]) -> list[ComparisonRequest]:
        """The comparison requests with each candidate as shown (:meth:`shown`)."""
        return [(task, self.shown(first), self.shown(second)) for task, first, second in requests]

    def pair_points(self, task: Task, template: Template) -> float:
        """The M a pairwise prompt shows: the task's, or in generate mode the digit scale's K."""
        max_points = prompt_max_points(task, template)
        return self.judging_mode.prompt_points(max_points) if self.mode == "generate" else max_points

    # -- PREPAIR -------------------------------------------------------------------------------
    def _analysis_fingerprint(self) -> str:
        from rankkit.judges.llm.prepair import analysis_fingerprint

        return analysis_fingerprint(self.runtime.identity(), self.analysis_max_new_tokens, self.temperature, self.seed)

    def _generate_analyses(self, conversations: Sequence[Chat]) -> Iterator[tuple[int, Generation]]:
        return self.runtime.generate(
            conversations, max_new_tokens=self.analysis_max_new_tokens, temperature=self.temperature, seed=self.seed
        )

    def prepair_prompts(
        self, requests: Sequence[ComparisonRequest], analyses: Sequence[tuple[str, str]]
    ) -> list[Prompt]:
        """PREPAIR decision prompts: both answers as shown and each one's analysis, per request."""
        from rankkit.judges.llm.prepair import render_decision

        if len(analyses) != len(requests):
            raise ValueError(f"PREPAIR: {len(requests)} comparisons, analyses of {len(analyses)}")
        shown_requests = self.shown_pairs(requests)
        prompts = []
        for (task, first, second), (_, shown_first, shown_second), (first_analysis, second_analysis) in zip(
            requests, shown_requests, analyses
        ):
            max_points = self.pair_points(task, self.pair_template(task))
            template, text = render_decision(
                task, shown_first, shown_second, first_analysis, second_analysis, max_points
            )
            untrusted = self._untrusted(first, second, shown=[shown_first, shown_second])
            prompts.append(Prompt(user_turn(text), template, max_points, (*untrusted, first_analysis, second_analysis)))
        return prompts

    def calibrate_pair_probability(self, task: Task, first: Candidate, second: Candidate, probability: float) -> float:
        """Hook for a per-comparison calibration of P(first); identity by default."""
        return probability

    # -- judgments ----------------------------------------------------------------------------
    def grade(self, task: Task, candidate: Candidate) -> Grade:
        """A pointwise grade of ``candidate`` (one request of :meth:`grade_many`)."""
        return next(self.grade_many([(task, candidate)]))[1]

    def compare(self, task: Task, first: Candidate, second: Candidate) -> Verdict:
        """A verdict on ``first`` and ``second`` as shown (one request of :meth:`compare_many`)."""
        return next(self.compare_many([(task, first, second)]))[1]

    def grade_many(self, requests: Sequence[GradeRequest]) -> Iterator[tuple[int, Grade]]:
        """Yield ``(index in requests, grade)`` as the runtime's results arrive."""
        if not requests:
            return iter(())
        return _naming_task(self._graded(requests), [task for task, _ in requests])

    def _graded(self, requests: Sequence[GradeRequest]) -> Iterator[tuple[int, Grade]]:
        prompts = [] if self.mode == "loglik" else [self.point_prompt(task, candidate) for task, candidate in requests]
        yield from self.judging_mode.grade(self, requests, prompts)

    def compare_many(self, requests: Sequence[ComparisonRequest]) -> Iterator[tuple[int, Verdict]]:
        """Yield ``(index in requests, verdict)`` as each is ready (calibrated with ``calibrate=true``).

        Outside a run, a calibrated or PREPAIR judge asks for what it needs itself, remembering nothing.
        """
        if self.calibrate or self.prepair:
            return answer_directly(self, VERDICT_KIND, requests)
        return self.compare_raw(requests)

    # -- what a run's memo asks: needs first (raw comparisons, analyses), then the answers --------
    def needs(self, kind: str, requests: Sequence[Any]) -> list[Needed]:
        """Comparisons need the raw ones in both orders (``calibrate``) or PREPAIR's analyses."""
        if kind != VERDICT_KIND:
            return []
        if self.calibrate:
            return [Needed(self.raw_comparisons, VERDICT_KIND, both_orders(requests))]
        return self.raw_comparisons.needs(kind, requests)

    def answer(self, kind: str, requests: Sequence[Any], found: Found) -> Iterator[tuple[int, Any]]:
        """Comparisons from what :meth:`needs` named; other kinds from their batched method."""
        if kind != VERDICT_KIND:
            return super().answer(kind, requests, found)
        if self.calibrate:
            return calibrated_verdicts(requests, found[0], self.pair_template)
        return self.raw_comparisons.answer(kind, requests, found)

    # -- k-way judgments (rankkit.judges.llm.kway) ----------------------------------------------
    def kway_key(self) -> list[Any]:
        """What a k-way judgment depends on besides the fingerprint: the judge's k-way templates."""
        from rankkit.judges.llm import kway as kway_llm

        return kway_llm.kway_key(self)

    def choose(self, task: Task, candidates: Sequence[Candidate]) -> Any:
        """The best of ``candidates`` as shown, slot 0 first (one request of :meth:`choose_many`)."""
        return next(self.choose_many([(task, tuple(candidates))]))[1]

    def rank(self, task: Task, candidates: Sequence[Candidate]) -> Any:
        """``candidates`` (slot 0 first) ranked best first (one request of :meth:`rank_many`)."""
        return next(self.rank_many([(task, tuple(candidates))]))[1]

    def choose_many(self, requests: Sequence[Any]) -> Iterator[tuple[int, Any]]:
        """Yield ``(index in requests, GroupChoice)`` as each is ready."""
        from rankkit.judges.llm import kway as kway_llm

        if not requests:
            return iter(())
        return _naming_task(kway_llm.choose_many(self, self._shown_groups(requests)), [task for task, _ in requests])

    def rank_many(self, requests: Sequence[Any]) -> Iterator[tuple[int, Any]]:
        """Yield ``(index in requests, GroupRanking)`` as each is ready."""
        from rankkit.judges.llm import kway as kway_llm

        if not requests:
            return iter(())
        return _naming_task(kway_llm.rank_many(self, self._shown_groups(requests)), [task for task, _ in requests])

    def _shown_groups(self, requests: Sequence[Any]) -> list[Any]:
        """k-way requests with each candidate as shown (:meth:`shown`)."""
        return [(task, tuple(self.shown(c) for c in candidates)) for task, candidates in requests]

    def compare_raw(
        self, requests: Sequence[ComparisonRequest], analyses: Sequence[tuple[Any, bool]] = ()
    ) -> Iterator[tuple[int, Verdict]]:
        """The mode's comparisons before any calibration; with PREPAIR, ``analyses`` are what
        :meth:`~rankkit.judges.llm.prepair.Analyser.needed` named, found: shown, and charged where fresh."""
        if not requests:
            return iter(())
        judgments = _naming_task(self._compared(requests, analyses), [task for task, _, _ in requests])
        if not self.prepair:
            return judgments
        from rankkit.judges.llm.prepair import analysis_charges

        return _charged(judgments, analysis_charges(analyses))

    def _compared(
        self, requests: Sequence[ComparisonRequest], analyses: Sequence[tuple[Any, bool]]
    ) -> Iterator[tuple[int, Verdict]]:
        prompts: list[Prompt] = []
        if self.mode != "loglik":
            from rankkit.judges.llm.prepair import analyses_of

            prompts = self.pair_prompts(requests, analyses_of(analyses) if self.prepair else ())
        yield from self.judging_mode.compare(self, requests, prompts)


def _charged(
    judgments: Iterator[tuple[int, Verdict]], charges: Sequence[dict[str, int]]
) -> Iterator[tuple[int, Verdict]]:
    """``judgments`` with each request's charge (its fresh PREPAIR analyses) added to its usage."""
    for index, judgment in judgments:
        if charges[index]:
            usage = dict(judgment.usage)
            add_usage(usage, charges[index])
            judgment = replace(judgment, usage=usage)
        yield index, judgment


def _check_options(backend: str, *, calibrate: bool, prepair: bool, sanitize: bool, **given: Any) -> None:
    """Apply the spec options' rules (:data:`LLM_OPTIONS`) to a judge built in Python too; raise
    :class:`SpecError` naming ``backend``. The template is read on first use, so not checked here."""
    for option in LLM_OPTIONS:
        if option.name in given and given[option.name] is not None:
            check_value(option, given[option.name], backend)
    mode = given["mode"]
    if calibrate and mode != "logprob":
        raise SpecError(
            f"{backend}: calibrate=true corrects choice probabilities and needs mode=logprob (mode is {mode})"
        )
    if prepair and mode == "loglik":
        raise SpecError(f"{backend}: prepair=true needs a judge prompt (mode=generate or logprob)")
    if sanitize and mode == "loglik":
        raise SpecError(
            f"{backend}: sanitize=true rewrites text in judge prompts, and mode=loglik has "
            f"none (use mode=generate or logprob)"
        )


def _naming_task(judgments: Iterator[tuple[int, Any]], tasks: Sequence[Task]) -> Iterator[tuple[int, Any]]:
    """Pass ``judgments`` on; re-raise a runtime's :class:`PromptTooLong` naming the task of the prompt."""
    try:
        yield from judgments
    except PromptTooLong as err:
        found = [t for t in tasks if final_text(t.prompt) and final_text(t.prompt) in err.prompt]
        if not found:
            raise
        task = max(found, key=lambda t: len(final_text(t.prompt)))  # one task's prompt may be part of another's
        raise PromptTooLong(f"task {task.task_id!r}: {err}", prompt=err.prompt) from err


# ---------------------------------------------------------------------------------------------
# Raw comparisons: what calibration needs


class RawComparisons(Judge):
    """An LLM judge's comparisons before calibration, as judgments of their own: cached under its
    :attr:`LLMJudge.raw_fingerprint`, so calibrated and uncalibrated runs share them. With PREPAIR
    they need the answers' analyses."""

    def __init__(self, judge: LLMJudge):
        self.judge = judge

    @property
    def fingerprint(self) -> str:
        return self.judge.raw_fingerprint

    @property
    def description(self) -> str:
        return self.judge.describe(calibrated=False)

    def request_key(self, task: Task, *candidates: Candidate) -> list[Any]:
        """The LLM judge's request key."""
        return self.judge.request_key(task, *candidates)

    def needs(self, kind: str, requests: Sequence[Any]) -> list[Needed]:
        """With PREPAIR: the analyses of both answers of each comparison, as shown."""
        if kind != VERDICT_KIND or self.judge.analyses is None:
            return []
        return [self.judge.analyses.needed(self.judge.shown_pairs(requests))]

    def answer(self, kind: str, requests: Sequence[Any], found: Found) -> Iterator[tuple[int, Any]]:
        """The raw comparisons (with PREPAIR: showing, and charging, the analyses found)."""
        return self.judge.compare_raw(requests, found[0] if found else ())

    def compare_many(self, requests: Sequence[ComparisonRequest]) -> Iterator[tuple[int, Verdict]]:
        """The raw comparisons, asking for any analyses they need directly."""
        return answer_directly(self, VERDICT_KIND, requests)


# ---------------------------------------------------------------------------------------------
# Spec options shared by every LLM backend, and the backend descriptor of an LLM runtime


def _template_complaint(name: str) -> None:
    """Read the template now, so a spec naming a bad one fails before a model loads (raises)."""
    TemplateChoice(name)


#: Options every LLM backend accepts: :class:`LLMJudge`'s keyword arguments, with its defaults.
LLM_OPTIONS: tuple[Option, ...] = (
    Option("mode", str, "generate", "generate | logprob | loglik (see rankkit.judges.llm.modes)", choices=tuple(MODES)),
    Option(
        "template",
        str,
        "auto",
        "auto, paper, generic, mt, checklist, a template name or a FILE",
        check=_template_complaint,
    ),
    Option("max_new_tokens", int, 256, "length cap of a generated verdict", check=at_least(1)),
    Option("temperature", float, 0.1, "sampling temperature of generate mode (0: greedy)", check=at_least(0)),
    Option("seed", int, 0, "seeds sampling; seed+1 is used for the retry"),
    Option("retries", int, 1, "how often an unreadable verdict is asked again", check=at_least(0)),
    Option("prepair", bool, False, "compare through per-answer analyses first (PREPAIR)"),
    Option(
        "analysis_max_new_tokens",
        int,
        None,
        "length cap of a PREPAIR analysis (default: max_new_tokens)",
        check=at_least(1),
    ),
    Option("calibrate", bool, False, "average logprob comparisons over both orders (mode=logprob)"),
    Option("verdict", str, "auto", "how generate mode reads its verdict", choices=tuple(VERDICT_PATHS)),
    Option("sanitize", bool, False, "rewrite judge-protocol text in candidates inertly before rendering"),
    Option(
        "verdicts",
        str,
        "binary",
        "the verdict scale of comparisons: binary, tie (A, tie, B) or graded (A>>B ... B>>A)",
        choices=VERDICT_SCALES,
    ),
)


def llm_backend(
    name: str,
    summary: str,
    runtime: Callable[[Settings], LLMRuntime],
    *,
    options: Sequence[Option] = (),
    argument: Argument | None = None,
    identity: Callable[[Settings], dict[str, Any]] | None = None,
    runtime_name: str | None = None,
    context: Callable[[Settings], tuple[int, str] | None] | None = None,
    network: bool = False,
    loads_model: bool = False,
    defaults: Callable[[str | None], Mapping[str, Any]] | None = None,
    llm_options: Sequence[Option] = LLM_OPTIONS,
    read: Callable[[str], Spec] = parse_spec,
    in_process: bool = False,
) -> Backend:
    """The :class:`~rankkit.judges.backends.Backend` of a judge on an LLM runtime.

    ``name``, ``summary``, ``argument``, ``defaults``, ``read``, ``network`` and ``loads_model`` are as in
    :class:`~rankkit.judges.backends.Backend`.

    Parameters
    ----------
    runtime
        ``runtime(settings)``: the loaded runtime for the parsed spec.
    options
        The runtime's own options, besides :data:`LLM_OPTIONS`.
    identity
        ``identity(settings)``: the runtime's identity without loading it (for the dry run); None
        when ``runtime`` loads nothing.
    context
        ``context(settings)``: the model's context ``(tokens, setting)`` without loading it; None: unknown.
    runtime_name
        The runtime's ``backend`` when it differs from ``name`` (``smollm2`` runs on ``hf``).
    llm_options
        :data:`LLM_OPTIONS`, possibly with other defaults.
    in_process
        ``runtime`` runs the model in this process (hf, vllm), so an executor may run it elsewhere
        (``--executor ray``): the backend then declares ``runtime``.

    Returns
    -------
    Backend
        Options: ``llm_options`` then ``options``; builds ``LLMJudge(runtime(settings), ...)``.
    """
    judge_names = [o.name for o in llm_options]

    def judge_on(settings: Settings, loaded: LLMRuntime) -> LLMJudge:
        return LLMJudge(loaded, **settings.subset(judge_names))

    def build(settings: Settings) -> LLMJudge:
        return judge_on(settings, runtime(settings))

    def stand_in(settings: Settings) -> LLMJudge:
        runtime = StandInRuntime(runtime_name or name, identity(settings), context(settings) if context else None)
        return LLMJudge(runtime, **settings.subset(judge_names))

    return Backend(
        name,
        summary,
        (*llm_options, *options),
        build,
        argument=argument,
        stand_in=stand_in if identity is not None else None,
        defaults=defaults,
        read=read,
        network=network,
        loads_model=loads_model,
        runtime=runtime if in_process else None,
        judge_on=judge_on,
    )
