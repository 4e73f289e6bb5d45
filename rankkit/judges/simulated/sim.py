"""Simulated judges for research: the human scores are the latent truth.

:class:`LatentJudge` (``sim:``, Thurstonian noise, slot and style biases, presets fitted to LLMBar) and
:class:`FixedAccuracyJudge` (``sim:model=fixed``). Judgments are pure functions of (seed, task,
candidates, order). See ``docs/judges-sim.md``.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from statistics import NormalDist

from rankkit.data.specs import SpecError
from rankkit.data.tasks import Candidate, Task
from rankkit.judges.backends import Backend, Option, Settings
from rankkit.judges.base import Judge
from rankkit.judges.simulated.sim_model import (
    DUPLICATE_GAP,
    FIXED_PRESET_RATES,
    GRADED_STRONG_MARGIN,
    GRADED_TIE_MARGIN,
    KWAY_READINGS,
    LATENT_PRESETS,
    MISSPECIFICATION_KEYS,
    STRONG_MARGIN,
    STYLE_BIAS_KEYS,
    TIE_MARGIN,
    Misspecification,
    StyleBias,
    duplicate_sources,
    fixed_parameters,
    kway_temperature,
    pair_effects,
    pair_offsets,
    planted_level,
    softmax_probabilities,
)
from rankkit.judgments.judge_protocol import Capabilities
from rankkit.judgments.levels import VERDICT_SCALES
from rankkit.judgments.values import LABELS, Grade, GroupChoice, GroupRanking, Verdict, Winner, labels
from rankkit.prompts.kway_verdicts import CHOICE_PREFIX, RANKING_PREFIX, ranking_from_scores


def _require_truth(task: Task) -> None:
    if task.criterion is None:
        raise SpecError("the sim judge needs human scores in the data (its latent truth)")


class _Simulated(Judge):
    """What both simulated models share: the cache key and the truth they read."""

    backend = "sim"
    simulated = True
    capabilities = Capabilities(latent=True)

    def check_tasks(self, tasks: Sequence[Task]) -> None:
        """Raise ``SpecError`` unless every candidate has a human score (the simulator's truth)."""
        for task in tasks:
            for candidate in task.candidates:
                if task.criterion is None or task.criterion not in candidate.human:
                    raise SpecError(
                        f"sim needs human scores for every candidate (task {task.task_id!r}, "
                        f"candidate {candidate.id!r} has none); use data with human scores "
                        f"or another judge"
                    )

    def request_key(self, task: Task, *candidates: Candidate) -> list:
        """The base key plus task id, candidate ids, human scores and spread (what the draws depend on)."""
        return [
            *super().request_key(task, *candidates),
            task.task_id,
            *(candidate.id for candidate in candidates),
            *(task.human_score(candidate.id) for candidate in candidates),
            task.human_spread,
        ]


def _clip(task: Task, value: float) -> float:
    low, high = task.scale
    return min(high, max(low, value))


def _normals(*parts: str, count: int = 1) -> list[float]:
    """``count`` standard normal draws, a pure function of ``parts`` (BLAKE2b, stable everywhere)."""
    key = "".join(f"{len(part)}:{part}" for part in parts).encode("utf-8")
    digest = hashlib.blake2b(key, digest_size=8 * count).digest()
    quantile = _STANDARD_NORMAL.inv_cdf
    # 53 bits: a double's mantissa; +0.5 keeps u strictly inside (0, 1).
    return [
        quantile(((int.from_bytes(digest[8 * i : 8 * i + 8], "little") >> 11) + 0.5) / 2.0**53) for i in range(count)
    ]


_STANDARD_NORMAL = NormalDist()


@dataclass(unsafe_hash=True)  # hashed by its parameters; `spec` is set by make_judge
class LatentJudge(Misspecification, StyleBias, _Simulated):
    """Latent-perception simulated judge (model in ``docs/judges-sim.md``); noise terms in sds of ``Task.human_spread``.

    perception: sd of the perception of an answer, shared by every judgment.
    pair_noise: sd of the extra noise on each grade of one pairwise judgment.
    slot_bias: first slot's pairwise advantage (half to each slot); > 0 favours the first.
    grade_noise: sd of the extra noise on a pointwise grade.
    seed: seeds every draw, with the task, the answers and the order.
    preset: the name the parameters came from (descriptions only).
    kway: what a k-way choice carries: ``grades`` (every answer's grade), ``choice`` (only the chosen
        slot) or ``probabilities`` (P(best) per slot, softmax at :meth:`kway_temperature`).
    length_bias, format_bias: ``sd`` per doubling of the length, and of 1 + formatting elements,
        relative to the other answers.
    pair_effect, clip, tie_margin, duplicates: planted misspecifications
        (:class:`~rankkit.judges.simulated.sim_model.Misspecification`); ``latent`` stays each
        answer's perception. ``tie_margin`` unset is 0 on the binary scale,
        :data:`~rankkit.judges.simulated.sim_model.TIE_MARGIN` on ``tie`` and
        :data:`~rankkit.judges.simulated.sim_model.GRADED_TIE_MARGIN` on ``graded``.
    verdicts: the verdict scale of a comparison: ``binary``, ``tie`` or ``graded``
        (:func:`~rankkit.judges.simulated.sim_model.planted_level` with ``tie_margin`` and ``strong_margin``, in sds).
    strong_margin: unset, :data:`~rankkit.judges.simulated.sim_model.GRADED_STRONG_MARGIN` on ``graded``
        (fitted to recorded Arena-Hard judgments, ``docs/judges-sim.md``) and
        :data:`~rankkit.judges.simulated.sim_model.STRONG_MARGIN` otherwise.
    """

    perception: float = LATENT_PRESETS["gpt4"].perception
    pair_noise: float = LATENT_PRESETS["gpt4"].pair_noise
    slot_bias: float = LATENT_PRESETS["gpt4"].slot_bias
    grade_noise: float = LATENT_PRESETS["gpt4"].grade_noise
    seed: int = 0
    preset: str | None = None
    kway: str = "grades"
    length_bias: float = 0.0
    format_bias: float = 0.0
    pair_effect: float = 0.0
    clip: bool = False
    tie_margin: float | None = None
    duplicates: float = 0.0
    verdicts: str = "binary"
    strong_margin: float | None = None

    def __post_init__(self) -> None:
        if self.verdicts not in VERDICT_SCALES:
            raise SpecError(f"sim: verdicts must be one of {', '.join(VERDICT_SCALES)}, got {self.verdicts!r}")
        if self.kway not in KWAY_READINGS:
            raise SpecError(f"sim: kway must be one of {', '.join(KWAY_READINGS)}, got {self.kway!r}")
        for name in ("perception", "pair_noise", "grade_noise"):
            value = getattr(self, name)
            if not (value >= 0 and math.isfinite(value)):
                raise SpecError(f"sim: {name} must be a finite number >= 0, got {value}")
        if not math.isfinite(self.slot_bias):
            raise SpecError(f"sim: slot_bias must be finite, got {self.slot_bias}")
        self._check_style_bias()
        self._check_misspecification()
        if not 0 <= self.tie_band <= self.strong_band < math.inf:
            raise SpecError(
                f"sim: need 0 <= tie_margin <= strong_margin (finite), got {self.tie_band} and {self.strong_band}"
            )

    @property
    def tie_band(self) -> float:
        """Half-width (sds) of the band inside which two grades tie: ``tie_margin``, or its scale's default."""
        if self.tie_margin is not None:
            return self.tie_margin
        return {"binary": 0.0, "tie": TIE_MARGIN}.get(self.verdicts, GRADED_TIE_MARGIN)

    @property
    def strong_band(self) -> float:
        """The margin (sds) beyond which a ``graded`` verdict is strong: ``strong_margin``, or its scale's default."""
        if self.strong_margin is not None:
            return self.strong_margin
        return GRADED_STRONG_MARGIN if self.verdicts == "graded" else STRONG_MARGIN

    @property
    def _tie_level(self) -> int | None:
        return None if self.verdicts == "binary" else 0

    def fingerprint_fields(self) -> dict:
        """Everything that changes a judgment (``kway`` and style biases only when not the default)."""
        fields = {
            "model": "latent",
            "perception": self.perception,
            "pair_noise": self.pair_noise,
            "slot_bias": self.slot_bias,
            "grade_noise": self.grade_noise,
            "seed": self.seed,
        }
        if self.kway != "grades":  # the default adds nothing, so caches made before it stay valid
            fields["kway"] = self.kway
        if self.verdicts != "binary":  # likewise
            fields.update(verdicts=self.verdicts, tie_margin=self.tie_band, strong_margin=self.strong_band)
        fields.update(self._style_fields())
        fields.update(self._misspecification_fields())
        return fields

    @property
    def description(self) -> str:
        if self.preset:
            name = f"preset={self.preset}"
        else:
            name = (
                f"perception={self.perception:g},pair_noise={self.pair_noise:g},"
                f"slot_bias={self.slot_bias:g},grade_noise={self.grade_noise:g}"
            )
        if self.kway != "grades":
            name += f",kway={self.kway}"
        if self.verdicts != "binary":
            unset_band = f",tie_margin={self.tie_band:g}" if self.tie_margin is None else ""
            name += f",verdicts={self.verdicts}{unset_band},strong_margin={self.strong_band:g}"
        return f"sim:{name}{self._style_description()}{self._misspecification_description()} (simulated)"

    def perceived(self, task: Task, candidate: Candidate) -> float:
        """The perceived quality of an answer on the task's scale (unclipped): one draw per (seed, task, answer);
        a near-duplicate's (``duplicates``) is its source's plus :data:`DUPLICATE_GAP` sd times a draw."""
        source = self._duplicate_sources(task).get(candidate.id) if self.duplicates else None
        if source is not None:
            (z,) = _normals(str(self.seed), task.task_id, candidate.id, "duplicate")
            return self.perceived(task, task.candidate(source)) + DUPLICATE_GAP * task.human_spread * z
        (z,) = _normals(str(self.seed), task.task_id, candidate.id, "perception")
        return task.human_score(candidate.id) + self.perception * task.human_spread * z

    def _duplicate_sources(self, task: Task) -> dict[str, str]:
        ids = sorted(candidate.id for candidate in task.candidates)
        draws = [
            tuple(_STANDARD_NORMAL.cdf(z) for z in _normals(str(self.seed), task.task_id, cid, "copies", count=2))
            for cid in ids
        ]
        return duplicate_sources(ids, draws, self.duplicates)

    def _pair_shifts(self, task: Task, candidates: Sequence[Candidate]) -> list[float]:
        """Each shown answer's shift (``sd``) from the persistent pair effects (:func:`pair_offsets`)."""
        if not self.pair_effect:
            return [0.0] * len(candidates)
        draw = lambda low, high: _normals(str(self.seed), task.task_id, low, high, "pair_effect")[0]  # noqa: E731
        return pair_offsets(pair_effects([c.id for c in candidates], draw, self.pair_effect))

    def latent(self, task: Task) -> dict[str, float]:
        """Each answer's perception (:meth:`perceived`), by candidate id: the judge's order in the limit.

        Examples
        --------
        >>> from rankkit.data.tasks import Candidate, Task
        >>> task = Task(task_id="t", prompt="q", criterion="h", candidates=(
        ...     Candidate(id="a", text="x", human={"h": 1.0}), Candidate(id="b", text="y", human={"h": 0.0})))
        >>> LatentJudge(perception=0.0).latent(task)
        {'a': 1.0, 'b': 0.0}
        """
        _require_truth(task)
        return {candidate.id: self.perceived(task, candidate) for candidate in task.candidates}

    def grade(self, task: Task, candidate: Candidate) -> Grade:
        """A pointwise grade: ``clip(p + sd · grade_noise · w)``, shifted by the style biases."""
        _require_truth(task)
        (w,) = _normals(str(self.seed), task.task_id, candidate.id, "grade")
        value = _clip(
            task,
            self.perceived(task, candidate)
            + task.human_spread * (self.grade_noise * w + self.point_style_shift(task, candidate)),
        )
        return Grade(value=value, raw=f"Score: {value:.4g}")

    def compare(self, task: Task, first: Candidate, second: Candidate) -> Verdict:
        """A verdict from the two answers' noisy grades with their slots' bias; grades agree with it."""
        _require_truth(task)
        spread = task.human_spread
        t1, t2 = self.group_grades(task, (first, second))
        if abs(t1 - t2) <= self.tie_band * spread:  # without a tie band only when both clip or without noise
            s = _clip(task, (t1 + t2) / 2)
            raw = f"Answer 1: {s:.4g} Answer 2: {s:.4g}"
            return Verdict(first_grade=s, second_grade=s, winner=Winner.TIE, raw=raw, level=self._tie_level)
        level = planted_level((t1 - t2) / spread, self.verdicts, self.tie_band, self.strong_band)
        s1, s2 = _agreeing_grades(task, t1, t2)
        winner = Winner.FIRST if t1 > t2 else Winner.SECOND
        raw = f"Answer 1: {s1:.4g} Answer 2: {s2:.4g}"
        return Verdict(first_grade=s1, second_grade=s2, winner=winner, raw=raw, level=level)

    capabilities = Capabilities(kway=True, latent=True)

    def slot_offsets(self, k: int) -> list[float]:
        """Per-slot bias (``sd``) of a k-way judgment: +slot_bias/2 (first) to −slot_bias/2 (last), evenly.

        For k > 2 an extrapolation (no k-way data calibrates it).

        Examples
        --------
        >>> LatentJudge(slot_bias=1.0).slot_offsets(3)
        [0.5, 0.0, -0.5]
        """
        return [self.slot_bias * (0.5 - slot / (k - 1)) for slot in range(k)]

    def group_grades(self, task: Task, candidates: Sequence[Candidate]) -> list[float]:
        """Each shown answer's k-way grade: ``p_i + sd · (offset_i + pair_noise · e_i + style_i + pair_i)``,
        unclipped unless ``clip`` (``pair_i``: :meth:`_pair_shifts`).

        At k = 2 these are the pairwise grades (same draws).
        """
        _require_truth(task)
        spread = task.human_spread
        noise = _normals(str(self.seed), task.task_id, *(c.id for c in candidates), "pair", count=len(candidates))
        styles = self.group_style_shifts(candidates)
        pairs = self._pair_shifts(task, candidates)
        grades = [
            self.perceived(task, c) + spread * (offset + self.pair_noise * e + style + pair)
            for c, offset, e, style, pair in zip(candidates, self.slot_offsets(len(candidates)), noise, styles, pairs)
        ]
        return [_clip(task, grade) for grade in grades] if self.clip else grades

    def kway_temperature(self) -> float:
        """This judge's ``kway=probabilities`` temperature in ``sd`` (see :func:`kway_temperature`)."""
        return kway_temperature(self.perception, self.pair_noise, self.slot_bias)

    def choose(self, task: Task, candidates: Sequence[Candidate]) -> GroupChoice:
        """The best of k answers: the highest of :meth:`group_grades`, carrying what ``kway`` says."""
        labels(len(candidates))  # 2 to 8 answers
        grades = self.group_grades(task, candidates)
        chosen = ranking_from_scores(grades)[0]
        raw = f"{CHOICE_PREFIX} {LABELS[chosen]}"
        if self.kway == "probabilities":
            spread = task.human_spread
            probabilities = softmax_probabilities([grade / spread for grade in grades], self.kway_temperature())
            return GroupChoice(chosen=chosen, probabilities=probabilities, raw=raw)
        clipped = tuple(_clip(task, grade) for grade in grades) if self.kway == "grades" else None
        return GroupChoice(chosen=chosen, grades=clipped, raw=raw)

    def rank(self, task: Task, candidates: Sequence[Candidate]) -> GroupRanking:
        """The k answers (slots) best first by :meth:`group_grades`; the same in every ``kway`` reading."""
        labels(len(candidates))
        permutation = ranking_from_scores(self.group_grades(task, candidates))
        return GroupRanking(
            permutation=permutation, raw=f"{RANKING_PREFIX} " + " > ".join(LABELS[slot] for slot in permutation)
        )


def _agreeing_grades(task: Task, t1: float, t2: float) -> tuple[float, float]:
    """Both grades clipped to the scale, nudged a hair apart when clipping ties them, so they agree with the verdict."""
    s1, s2 = _clip(task, t1), _clip(task, t2)
    if s1 != s2:
        return s1, s2
    low, high = task.scale
    step = (high - low) * 1e-6 or 1e-6
    first_wins = t1 > t2
    if s1 > low:  # both at the top (or equal inside): lower the loser
        return (s1, s2 - step) if first_wins else (s1 - step, s2)
    return (s1 + step, s2) if first_wins else (s1, s2 + step)  # both at the bottom: raise the winner


@dataclass(unsafe_hash=True)  # hashed by its parameters; `spec` is set by make_judge
class FixedAccuracyJudge(StyleBias, _Simulated):
    """Fixed-accuracy simulated judge (model in ``docs/judges-sim.md``).

    accuracy: probability of picking the human-better answer when the slot preference does not decide.
    position_bias: probability of picking the answer shown first.
    noise: sd of the Gaussian noise on every grade, in sds of ``Task.human_spread``.
    seed: seeds every draw, with the task and the answers.
    preset: the name the parameters came from (descriptions only).
    length_bias, format_bias: style biases shifting the human scores it reads.
    """

    accuracy: float = 0.8
    position_bias: float = 0.0
    noise: float = 0.5
    seed: int = 0
    preset: str | None = None
    length_bias: float = 0.0
    format_bias: float = 0.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.accuracy <= 1.0:
            raise SpecError(f"sim: accuracy must be in [0, 1], got {self.accuracy}")
        if not 0.0 <= self.position_bias <= 1.0:
            raise SpecError(f"sim: position_bias must be in [0, 1], got {self.position_bias}")
        if not (self.noise >= 0 and math.isfinite(self.noise)):
            raise SpecError(f"sim: noise must be a finite number >= 0, got {self.noise}")
        self._check_style_bias()

    def fingerprint_fields(self) -> dict:
        """Everything that changes a judgment: model, accuracy, position bias, noise, seed, style biases."""
        return {
            "model": "fixed",
            "accuracy": self.accuracy,
            "position_bias": self.position_bias,
            "noise": self.noise,
            "seed": self.seed,
            **self._style_fields(),
        }

    @property
    def description(self) -> str:
        if self.preset:
            return f"sim:model=fixed,preset={self.preset}{self._style_description()} (simulated)"
        return (
            f"sim:model=fixed,accuracy={self.accuracy:g},position_bias={self.position_bias:g},"
            f"noise={self.noise:g}{self._style_description()} (simulated)"
        )

    def latent(self, task: Task) -> dict[str, float]:
        """The human scores by candidate id: unlimited judgments' majority follows their order."""
        _require_truth(task)
        return {candidate.id: task.human_score(candidate.id) for candidate in task.candidates}

    def _rng(self, *parts: str) -> random.Random:
        # str seeds are hashed with SHA-512 by `random`, so this is stable across runs and machines.
        return random.Random("|".join([str(self.seed), *parts]))

    def _noisy(self, task: Task, value: float, rng: random.Random) -> float:
        return _clip(task, value + rng.gauss(0.0, self.noise * task.human_spread))

    def grade(self, task: Task, candidate: Candidate) -> Grade:
        """A pointwise grade: the (style-shifted) human score plus Gaussian ``noise``, clipped."""
        _require_truth(task)
        rng = self._rng(task.task_id, candidate.id, "point")
        shifted = task.human_score(candidate.id) + task.human_spread * self.point_style_shift(task, candidate)
        value = self._noisy(task, shifted, rng)
        return Grade(value=value, raw=f"Score: {value:.4g}")

    def compare(self, task: Task, first: Candidate, second: Candidate) -> Verdict:
        """First slot with probability ``position_bias``, else the human-better answer with probability ``accuracy``."""
        _require_truth(task)
        rng = self._rng(task.task_id, first.id, second.id, "pair")
        h1, h2 = task.human_score(first.id), task.human_score(second.id)
        if self.has_style_bias:
            style1, style2 = self.group_style_shifts((first, second))
            h1, h2 = h1 + task.human_spread * style1, h2 + task.human_spread * style2
        if rng.random() < self.position_bias:
            first_wins = True
        elif h1 == h2:
            first_wins = rng.random() < 0.5
        else:
            right = rng.random() < self.accuracy
            first_wins = (h1 > h2) == right
        s1, s2 = self._noisy(task, h1, rng), self._noisy(task, h2, rng)
        high, low = max(s1, s2), min(s1, s2)
        if high == low:  # keep the scores strictly consistent with the verdict
            step = (task.scale[1] - task.scale[0]) * 1e-6 or 1e-6
            low -= step
        s1, s2 = (high, low) if first_wins else (low, high)
        winner = Winner.FIRST if first_wins else Winner.SECOND
        return Verdict(first_grade=s1, second_grade=s2, winner=winner, raw=f"Answer 1: {s1:.4g} Answer 2: {s2:.4g}")


# Specs

#: model name -> the parameters only that model takes.
MODEL_KEYS: dict[str, tuple[str, ...]] = {
    "latent": (
        "perception",
        "pair_noise",
        "slot_bias",
        "grade_noise",
        "kway",
        *MISSPECIFICATION_KEYS,
        "verdicts",
        "strong_margin",
    ),
    "fixed": ("accuracy", "position_bias", "noise"),
}


_GPT4 = LATENT_PRESETS["gpt4"]

#: The spec options of both models (each model's own are in :data:`MODEL_KEYS`).
SIM_OPTIONS: tuple[Option, ...] = (
    Option(
        "model",
        str,
        "latent",
        "latent (perception + noise) or fixed (accuracy + position bias)",
        choices=tuple(MODEL_KEYS),
    ),
    Option(
        "preset",
        str,
        None,
        f"fills the parameters not given (latent: {', '.join(LATENT_PRESETS)}; "
        f"fixed: {', '.join(FIXED_PRESET_RATES)}); latent without parameters is gpt4",
    ),
    Option("seed", int, 0, "seeds every draw"),
    Option("perception", float, _GPT4.perception, "latent: sd of the perception of an answer"),
    Option("pair_noise", float, _GPT4.pair_noise, "latent: sd of the noise on a pairwise grade"),
    Option("slot_bias", float, _GPT4.slot_bias, "latent: first slot's advantage (> 0 favours it)"),
    Option("grade_noise", float, _GPT4.grade_noise, "latent: sd of the noise on a pointwise grade"),
    Option(
        "kway",
        str,
        "grades",
        "latent: what a k-way choice carries: grades, choice or probabilities (P(best) per slot)",
        choices=KWAY_READINGS,
    ),
    Option("pair_effect", float, 0.0, "latent: sd of a persistent preference per pair (both orders, every re-ask)"),
    Option("clip", bool, False, "latent: compare grades clipped at the scale's ends (answers past an end tie)"),
    Option(
        "tie_margin",
        float,
        None,
        f"latent: grades closer than this (in sds) are a tie (default 0; {TIE_MARGIN:g} with verdicts=tie, "
        f"{GRADED_TIE_MARGIN:g} with verdicts=graded)",
    ),
    Option("duplicates", float, 0.0, "latent: share of answers that near-duplicate another"),
    Option(
        "verdicts",
        str,
        "binary",
        "latent: the verdict scale: binary, tie (A, tie, B) or graded (A>>B, A>B, A=B, B>A, B>>A)",
        choices=VERDICT_SCALES,
    ),
    Option(
        "strong_margin",
        float,
        None,
        f"latent, verdicts=graded: A>>B when |difference| > this (sds; default {GRADED_STRONG_MARGIN:g})",
    ),
    Option("accuracy", float, 0.8, "fixed: probability of picking the human-better answer"),
    Option("position_bias", float, 0.0, "fixed: probability of picking the answer shown first"),
    Option("noise", float, 0.5, "fixed: sd of the noise on every grade"),
    Option(
        "length_bias",
        float,
        0.0,
        "both: planted preference, in human-score sds, per doubling of the answer's length relative to the other(s)",
    ),
    Option(
        "format_bias",
        float,
        0.0,
        "both: planted preference, in human-score sds, per doubling of (1 + headers, list items, bold)",
    ),
)


def _shown(value: object) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def build(settings: Settings) -> LatentJudge | FixedAccuracyJudge:
    """Build a simulated judge from ``sim:[model=latent|fixed,][preset=NAME,]PARAMETERS...,seed=N``.

    ``sim`` alone is ``sim:preset=gpt4``; a preset fills the parameters not given.

    Raises
    ------
    SpecError
        An unknown preset, or a parameter of the other model.
    """
    model = settings["model"]
    for other, keys in MODEL_KEYS.items():
        wrong = [key for key in keys if key in settings.given and other != model]
        if wrong:
            raise SpecError(
                f"sim: {', '.join(wrong)} belong(s) to model={other}, not model={model}; "
                f"write sim:model={other},{wrong[0]}={_shown(settings[wrong[0]])}"
            )
    preset = settings["preset"]
    presets = FIXED_PRESET_RATES if model == "fixed" else LATENT_PRESETS
    if preset is not None and preset not in presets:
        raise SpecError(f"sim: unknown preset {preset!r} for model={model} (known: {', '.join(presets)})")
    explicit = {key: settings[key] for key in MODEL_KEYS[model] if key in settings.given}
    styles = settings.subset(STYLE_BIAS_KEYS)  # both models; 0 (the default) plants nothing
    if model == "fixed":
        if preset is not None:
            accuracy, bias = fixed_parameters(*FIXED_PRESET_RATES[preset])
            explicit.setdefault("accuracy", round(accuracy, 4))
            explicit.setdefault("position_bias", round(bias, 4))
        return FixedAccuracyJudge(**explicit, **styles, seed=settings["seed"], preset=preset)
    if preset is None and not any(key in explicit for key in asdict(_GPT4)):
        preset = "gpt4"
    if preset is not None:
        for key, value in asdict(LATENT_PRESETS[preset]).items():
            explicit.setdefault(key, value)
    return LatentJudge(**explicit, **styles, seed=settings["seed"], preset=preset)


#: ``sim:...``: the simulated judges (research; they read the data's human scores).
BACKEND = Backend("sim", "a simulated judge drawn from the data's human scores (research)", SIM_OPTIONS, build)
