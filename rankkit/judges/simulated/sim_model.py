"""The simulated judges' latent model in numbers: fitted presets, pair accuracy, k-way temperature, style biases.

Pure functions and the style-bias mixin both simulated judges share (``docs/judges-sim.md``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist

from rankkit.data.specs import SpecError
from rankkit.data.tasks import Candidate, Task
from rankkit.prompts.kway_verdicts import ranking_from_scores

_STANDARD_NORMAL = NormalDist()

# Fitted parameters


@dataclass(frozen=True)
class LatentParameters:
    """The latent model's four noise terms, in units of the task's human-score spread."""

    perception: float
    pair_noise: float
    slot_bias: float
    grade_noise: float


#: What a k-way choice of the latent model carries (its ``kway`` parameter).
KWAY_READINGS = ("grades", "choice", "probabilities")

#: How far apart (in ``sd``) the answers of a calibration pair are: LLMBar's 0/1 preferences.
CALIBRATION_GAP = 2.0

#: preset -> fitted latent parameters (``benchmarks/calibrate_sim.py``; table in ``docs/judges-sim.md``).
LATENT_PRESETS: dict[str, LatentParameters] = {
    "gpt4": LatentParameters(perception=0.7301, pair_noise=0.4010, slot_bias=0.0623, grade_noise=0.6928),
    "chatgpt": LatentParameters(perception=0.7884, pair_noise=1.2100, slot_bias=0.8698, grade_noise=2.8279),
    "falcon": LatentParameters(perception=1.3772, pair_noise=0.0, slot_bias=2.0, grade_noise=2.4373),
}

#: preset -> (share right, share first slot) on LLMBar Natural (Vanilla), for :func:`fixed_parameters`.
FIXED_PRESET_RATES: dict[str, tuple[float, float]] = {
    "gpt4": (0.955, 0.505),
    "chatgpt": (0.815, 0.605),
    "falcon": (0.74, 0.74),
}


def fixed_parameters(right: float, first: float) -> tuple[float, float]:
    """(accuracy, position_bias) of the fixed-accuracy judge showing these pairwise rates (both orders).

    ``right`` is the share choosing the human-preferred answer, ``first`` the share choosing the first
    slot; ``first`` <= 0.5 gives no bias.
    """
    bias = max(0.0, 2.0 * first - 1.0)
    accuracy = (right - bias / 2.0) / (1.0 - bias) if bias < 1 else 0.5
    return min(1.0, max(0.0, accuracy)), bias


def latent_pair_accuracy(perception: float, pair_noise: float, slot_bias: float, gap: float = CALIBRATION_GAP) -> float:
    """The latent model's pairwise accuracy on pairs ``gap`` sds apart, each in both orders.

    ``½·[Φ((gap + slot_bias)/s) + Φ((gap − slot_bias)/s)]`` with ``s = √(2·perception² + 2·pair_noise²)``.

    Examples
    --------
    >>> round(latent_pair_accuracy(perception=0.7301, pair_noise=0.4010, slot_bias=0.0623), 3)
    0.955
    """
    spread = math.sqrt(2 * perception**2 + 2 * pair_noise**2)
    if spread == 0:
        return 0.5 * sum(1.0 if gap + bias > 0 else 0.5 if gap + bias == 0 else 0.0 for bias in (slot_bias, -slot_bias))
    return 0.5 * sum(_STANDARD_NORMAL.cdf((gap + bias) / spread) for bias in (slot_bias, -slot_bias))


#: The grid (in standard deviations) the expected confidence is integrated over: trapezoid rule.
_QUADRATURE = [i / 100 - 8.0 for i in range(1601)]
_QUADRATURE_WEIGHTS = [
    math.exp(-z * z / 2) / math.sqrt(2 * math.pi) * (0.5 if abs(z) == 8.0 else 1.0) / 100 for z in _QUADRATURE
]


def _mean_confidence(temperature: float, means: tuple[float, ...], spread: float) -> float:
    """E[σ(|d| / temperature)] for d ~ N(mean, spread²), averaged over ``means`` (the two orders)."""
    total = 0.0
    for mean in means:
        for z, weight in zip(_QUADRATURE, _QUADRATURE_WEIGHTS):
            total += weight / (1.0 + math.exp(-abs(mean + spread * z) / temperature))
    return total / len(means)


@lru_cache(maxsize=64)
def kway_temperature(perception: float, pair_noise: float, slot_bias: float, gap: float = CALIBRATION_GAP) -> float:
    """Softmax temperature (in ``sd``) of the ``kway=probabilities`` reading, calibrated at k = 2.

    The τ at which the mean confidence E[σ(|d| / τ)] on calibration pairs equals
    :func:`latent_pair_accuracy` (no over- or under-confidence); bisection on log τ, deterministic.
    Returns 0 for an always-right judge, ``inf`` for one no better than chance.

    Examples
    --------
    >>> round(kway_temperature(0.7301, 0.4010, 0.0623), 3)
    0.348
    """
    accuracy = latent_pair_accuracy(perception, pair_noise, slot_bias, gap)
    if accuracy >= 1.0 - 1e-12:
        return 0.0
    if accuracy <= 0.5 + 1e-12:
        return math.inf
    means, spread = (gap + slot_bias, gap - slot_bias), math.sqrt(2 * perception**2 + 2 * pair_noise**2)
    low, high = math.log(1e-6), math.log(1e6)  # confidence(low) > accuracy > confidence(high)
    for _ in range(60):
        middle = (low + high) / 2
        if _mean_confidence(math.exp(middle), means, spread) > accuracy:
            low = middle
        else:
            high = middle
    return math.exp((low + high) / 2)


def softmax_probabilities(values: Sequence[float], temperature: float) -> tuple[float, ...]:
    """softmax(values / temperature); temperature 0 puts all mass on the largest, ``inf`` is uniform.

    Examples
    --------
    >>> [round(p, 3) for p in softmax_probabilities([1.0, 0.0], 1.0)]
    [0.731, 0.269]
    """
    k = len(values)
    if temperature == 0:
        best = ranking_from_scores(values)[0]
        return tuple(1.0 if slot == best else 0.0 for slot in range(k))
    if math.isinf(temperature):
        return (1.0 / k,) * k
    top = max(values)
    weights = [math.exp((value - top) / temperature) for value in values]
    mass = sum(weights)
    return tuple(weight / mass for weight in weights)


# The judges


#: The style-bias parameters both models take (0 by default: no shift, no change to the fingerprint).
STYLE_BIAS_KEYS = ("length_bias", "format_bias")


class StyleBias:
    """Planted style biases (``length_bias``, ``format_bias``), in sds of the task's human scores."""

    length_bias: float
    format_bias: float

    def _check_style_bias(self) -> None:
        for name in STYLE_BIAS_KEYS:
            value = getattr(self, name)
            if not math.isfinite(value):
                raise SpecError(f"sim: {name} must be finite, got {value}")

    @property
    def has_style_bias(self) -> bool:
        return self.length_bias != 0 or self.format_bias != 0

    def _style_fields(self) -> dict:
        # Only nonzero biases enter the fingerprint, so judges (and caches) made before them stay valid.
        return {name: getattr(self, name) for name in STYLE_BIAS_KEYS if getattr(self, name) != 0}

    def _style_description(self) -> str:
        return "".join(f",{name}={value:g}" for name, value in self._style_fields().items())

    def style_score(self, candidate: Candidate) -> float:
        """``length_bias · log2(chars) + format_bias · log2(1 + formatting)`` of one answer."""
        features = candidate.style
        return self.length_bias * math.log2(max(1, features.chars)) + self.format_bias * features.format_score

    def group_style_shifts(self, candidates: Sequence[Candidate]) -> list[float]:
        """Each shown answer's shift (``sd``): its style score minus the group's mean.

        E.g. answers of 200 and 100 characters under ``length_bias=0.5``: ``[0.25, -0.25]``.
        """
        if not self.has_style_bias:
            return [0.0] * len(candidates)
        scores = [self.style_score(c) for c in candidates]
        mean = sum(scores) / len(scores)
        return [score - mean for score in scores]

    def point_style_shift(self, task: Task, candidate: Candidate) -> float:
        """An answer's shift (``sd``) graded alone: its style score minus the task's median answer's."""
        if not self.has_style_bias:
            return 0.0
        features = [c.style for c in task.candidates]
        mine = candidate.style
        return self.length_bias * (
            math.log2(max(1, mine.chars)) - _median([math.log2(max(1, f.chars)) for f in features])
        ) + self.format_bias * (mine.format_score - _median([f.format_score for f in features]))


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


# Misspecified judges: what the pairwise stopping rule must survive (docs/judges-sim.md)

#: The misspecification parameters of the latent model (the defaults plant nothing).
MISSPECIFICATION_KEYS = ("pair_effect", "clip", "tie_margin", "duplicates")

#: How far apart (in ``sd``) a near-duplicate answer is perceived from the answer it copies.
DUPLICATE_GAP = 0.02


class Misspecification:
    """Departures from a judge with one independent draw per question, planted on the latent model.

    pair_effect: sd (``sd`` units) of a persistent preference per pair of answers, drawn once per
        unordered pair: the same in both orders and on every re-ask.
    clip: the judge's grades are clipped at the scale's ends before it compares them; two answers
        both past an end tie (near-top answers look alike).
    tie_margin: two grades closer than this (``sd``) are a tie (None: the verdict scale's default).
    duplicates: the share of answers that near-duplicate an earlier one (by id): perceived
        :data:`DUPLICATE_GAP` sd from it.
    """

    pair_effect: float
    clip: bool
    tie_margin: float | None
    duplicates: float

    def _check_misspecification(self) -> None:
        for name in ("pair_effect", "tie_margin"):
            value = getattr(self, name)
            if value is not None and not (value >= 0 and math.isfinite(value)):
                raise SpecError(f"sim: {name} must be a finite number >= 0, got {value}")
        if not 0.0 <= self.duplicates <= 1.0:
            raise SpecError(f"sim: duplicates must be in [0, 1], got {self.duplicates}")

    def _misspecification_fields(self) -> dict:
        # Only what is planted enters the fingerprint, so judges (and caches) made before stay valid.
        defaults = {"pair_effect": 0.0, "clip": False, "tie_margin": None, "duplicates": 0.0}
        return {name: getattr(self, name) for name in MISSPECIFICATION_KEYS if getattr(self, name) != defaults[name]}

    def _misspecification_description(self) -> str:
        return "".join(
            f",{name}={str(value).lower() if isinstance(value, bool) else f'{value:g}'}"
            for name, value in self._misspecification_fields().items()
        )


def pair_offsets(effects: Sequence[Sequence[float]]) -> list[float]:
    """Each shown answer's persistent shift from the pair effects among the shown answers.

    ``effects[i][j]`` is the preference (``sd``) of answer i over answer j (antisymmetric). Answer i
    moves by ``Σ_j effects[i][j] / (2 (k − 1))``, so two answers move apart by exactly their pair's
    effect at k = 2.

    Examples
    --------
    >>> pair_offsets([[0.0, 1.0], [-1.0, 0.0]])
    [0.5, -0.5]
    """
    k = len(effects)
    if k < 2:
        return [0.0] * k
    return [sum(row) / (2 * (k - 1)) for row in effects]


def pair_effects(ids: Sequence[str], draw: Callable[[str, str], float], sd: float) -> list[list[float]]:
    """The antisymmetric matrix of pair preferences among ``ids``: ``sd · draw(low, high)`` for the
    answer whose id sorts first, its negative for the other (the same whatever the order shown).

    Examples
    --------
    >>> pair_effects(["b", "a"], lambda low, high: 1.0, 0.5)
    [[0.0, -0.5], [0.5, 0.0]]
    """
    effects = [[0.0] * len(ids) for _ in ids]
    for i, first in enumerate(ids):
        for j in range(i + 1, len(ids)):
            low, high = sorted((first, ids[j]))
            effect = sd * draw(low, high) * (1 if first == low else -1)
            effects[i][j], effects[j][i] = effect, -effect
    return effects


def duplicate_sources(ids: Sequence[str], draws: Sequence[tuple[float, float]], share: float) -> dict[str, str]:
    """Which answers near-duplicate which: answer ``ids[n]`` (n >= 1, ids sorted) copies an earlier
    one when its first uniform draw is below ``share``, the earlier one picked by its second.

    Examples
    --------
    >>> duplicate_sources(["a", "b", "c"], [(0.9, 0.0), (0.1, 0.7), (0.9, 0.5)], 0.5)
    {'b': 'a'}
    """
    sources = {}
    for n, (candidate, (copies, which)) in enumerate(zip(ids, draws)):
        if n and copies < share:
            sources[candidate] = ids[min(n - 1, int(which * n))]
    return sources


#: The defaults of ``sim:verdicts=tie`` (and of 0.4's ``graded``): half-widths, in human-score sds of
#: the judge's noisy difference, of the tie band and of the "slightly better" band. Not fitted to
#: recorded judgments (the three-level scale has none at hand); ``graded`` has its fitted
#: :data:`GRADED_TIE_MARGIN` and :data:`GRADED_STRONG_MARGIN`.
TIE_MARGIN = 0.2
STRONG_MARGIN = 1.0

#: Recorded Arena-Hard level counts per model against the baseline claude-3-haiku-20240307: levels
#: 2 (A>>B, A the model) … -2, over 120 questions × 2 games each. Decoded from
#: lmarena/arena-hard-auto, commit 74e8b6f0ae60529b62c4c2feb71a479ae1311e2d, ``data/arena_hard_battles.jsonl``
#: (judge gpt-4-1106-preview) by ``benchmarks/level_frequencies.py``.
ARENA_HARD_LEVEL_COUNTS = {
    "claude-3-opus-20240229": (112, 48, 13, 42, 25),
    "gpt-4o-mini": (119, 59, 7, 32, 23),
    "gpt-4o": (141, 55, 6, 22, 16),
    "claude-3-5-sonnet-20240620": (139, 63, 5, 20, 13),
}

#: The defaults of ``sim:verdicts=graded`` (the ``tie`` scale keeps :data:`TIE_MARGIN` and
#: :data:`STRONG_MARGIN`): fitted by ``benchmarks/level_frequencies.py`` so that the level
#: frequencies match :data:`ARENA_HARD_LEVEL_COUNTS` (``docs/judges-sim.md``).
GRADED_TIE_MARGIN = 0.12
GRADED_STRONG_MARGIN = 1.36


def planted_level(difference: float, scale: str, tie_margin: float, strong_margin: float) -> int | None:
    """The level a noisy grade ``difference`` (first minus second, in human-score sds) gives on ``scale``.

    None on the binary scale; 0 inside ``±tie_margin``; ±2 beyond ``±strong_margin`` on the graded
    scale; ±1 otherwise.

    Examples
    --------
    >>> planted_level(0.1, "graded", 0.2, 1.0), planted_level(-1.5, "graded", 0.2, 1.0), planted_level(-1.5, "tie", 0.2, 1.0)
    (0, -2, -1)
    """
    if scale == "binary":
        return None
    if abs(difference) < tie_margin:
        return 0
    sign = 1 if difference > 0 else -1
    return 2 * sign if scale == "graded" and abs(difference) > strong_margin else sign
