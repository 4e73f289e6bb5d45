"""A simulated judge for research: the human scores are the latent truth.

The model (in the spirit of Arena-lite's stochastic judge, seed 003 §4.2):

**Pairwise.** For candidates presented as (first, second) with human scores h1, h2:

* with probability ``position_bias`` the judge picks the first-presented candidate, whatever
  its quality (a pure slot preference);
* otherwise it picks the human-better candidate with probability ``accuracy`` and the worse one
  with probability ``1 - accuracy``; on a human tie it flips a fair coin.

So P(first chosen | first is better) = b + (1-b)·a and P(first chosen | first is worse) = b + (1-b)(1-a).
The two scores it returns are noisy human scores, ``h + N(0, (noise·sd)^2)`` clipped to the task's
scale, where ``sd`` is the standard deviation of the task's human scores; they are then ordered so
that the chosen candidate has the higher score (the verdict and the scores never disagree).

**Pointwise.** ``score = clip(h + N(0, (noise·sd)^2))``.

Every draw comes from a generator seeded with (seed, task, candidates, order), so a judgment is a
pure function of its inputs: the same pair in the same order always gets the same verdict, whichever
strategy asks and in whatever sequence, which is what makes strategies comparable on one judge.

**Presets** are calibrated on the Vanilla judgments of LLMBar Natural
(``shared/data/llmbar_natural/judgments.jsonl``), each pair judged in both orders. If a judge chose
the first slot at rate f and was right at rate r there, then b = 2f − 1 and a = (r − b/2)/(1 − b):

=======  ========  ===========  ==============  ========
preset   right r   first f      position_bias   accuracy
=======  ========  ===========  ==============  ========
gpt4     0.955     0.505        0.01            0.9596
chatgpt  0.815     0.605        0.21            0.8987
falcon   0.74      0.74         0.48            0.9615
=======  ========  ===========  ==============  ========
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from rankkit.judges.base import Judge, PairJudgment, PointJudgment, Winner
from rankkit.specs import Spec, SpecError, build_dataclass
from rankkit.tasks import Candidate, Task

#: preset name -> (share judged right, share of first slot chosen), measured on LLMBar Natural.
PRESET_RATES: dict[str, tuple[float, float]] = {
    "gpt4": (0.955, 0.505),
    "chatgpt": (0.815, 0.605),
    "falcon": (0.74, 0.74),
}


def parameters_from_rates(right: float, first: float) -> tuple[float, float]:
    """Invert the model: observed (right, first-slot) rates -> (accuracy, position_bias)."""
    bias = max(0.0, 2.0 * first - 1.0)
    accuracy = (right - bias / 2.0) / (1.0 - bias) if bias < 1 else 0.5
    return min(1.0, max(0.0, accuracy)), bias


@dataclass(frozen=True)
class SimulatedJudge(Judge):
    """Simulated judge; see the module docstring for the model.

    accuracy: probability of picking the human-better candidate when not slot-biased.
    position_bias: probability of picking the first-presented candidate regardless of quality.
    noise: standard deviation of score noise, in units of the task's human-score spread.
    seed: seeds every draw together with the task and the candidates.
    """

    accuracy: float = 0.8
    position_bias: float = 0.0
    noise: float = 0.5
    seed: int = 0
    preset: str | None = None

    backend = "sim"
    simulated = True

    def __post_init__(self) -> None:
        if not 0.0 <= self.accuracy <= 1.0:
            raise SpecError(f"sim: accuracy must be in [0, 1], got {self.accuracy}")
        if not 0.0 <= self.position_bias <= 1.0:
            raise SpecError(f"sim: position_bias must be in [0, 1], got {self.position_bias}")
        if self.noise < 0:
            raise SpecError(f"sim: noise must be >= 0, got {self.noise}")

    def fingerprint_fields(self) -> dict:
        return {"accuracy": self.accuracy, "position_bias": self.position_bias,
                "noise": self.noise, "seed": self.seed}

    @property
    def description(self) -> str:
        name = f"preset={self.preset}" if self.preset else f"accuracy={self.accuracy:g},position_bias={self.position_bias:g}"
        return f"sim:{name} (simulated)"

    def request_key(self, task: Task, *candidates: Candidate) -> list:
        """The simulator's verdict depends on the task id, the candidates' ids (its random draws
        are seeded by them), their human scores and the task's human-score spread, not only on
        the texts: all of that is in the key, so candidates with identical texts never share a
        cached verdict that was drawn for another one."""
        return [*super().request_key(task, *candidates), task.task_id,
                *(candidate.id for candidate in candidates),
                *(task.human_score(candidate.id) for candidate in candidates), task.human_spread]

    def _rng(self, *parts: str) -> random.Random:
        # str seeds are hashed with SHA-512 by `random`, so this is stable across runs and machines.
        return random.Random("|".join([str(self.seed), *parts]))

    def _noisy(self, task: Task, value: float, rng: random.Random) -> float:
        low, high = task.scale
        noisy = value + rng.gauss(0.0, self.noise * task.human_spread)
        return min(high, max(low, noisy))

    def score(self, task: Task, candidate: Candidate) -> PointJudgment:
        _require_truth(task)
        rng = self._rng(task.task_id, candidate.id, "point")
        value = self._noisy(task, task.human_score(candidate.id), rng)
        return PointJudgment(score=value, raw=f"Score: {value:.4g}")

    def compare(self, task: Task, first: Candidate, second: Candidate) -> PairJudgment:
        _require_truth(task)
        rng = self._rng(task.task_id, first.id, second.id, "pair")
        h1, h2 = task.human_score(first.id), task.human_score(second.id)
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
        return PairJudgment(first_score=s1, second_score=s2, winner=winner,
                            raw=f"Answer 1: {s1:.4g} Answer 2: {s2:.4g}")


def _require_truth(task: Task) -> None:
    if task.criterion is None:
        raise SpecError("the sim judge needs human scores in the data (its latent truth)")


def from_spec(spec: Spec) -> SimulatedJudge:
    """``sim:[preset=NAME,]accuracy=A,position_bias=B,noise=S,seed=N``."""
    if spec.positional:
        raise SpecError(f"sim: unexpected value(s) {', '.join(spec.positional)}; use key=value")
    options = dict(spec.options)
    preset = options.get("preset")
    if preset is not None:
        if preset not in PRESET_RATES:
            raise SpecError(f"sim: unknown preset {preset!r} (known: {', '.join(PRESET_RATES)})")
        accuracy, bias = parameters_from_rates(*PRESET_RATES[preset])
        options.setdefault("accuracy", repr(round(accuracy, 4)))
        options.setdefault("position_bias", repr(round(bias, 4)))
    return build_dataclass(SimulatedJudge, options, where="sim")
