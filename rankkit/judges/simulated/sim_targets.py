"""What the simulator's presets are fitted to: the rates of the recorded LLMBar judges.

Read from ``shared/data/llmbar_natural`` by ``benchmarks/calibrate_sim.py`` and the tests; never at judging time.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from statistics import NormalDist

#: preset name -> the LLMBar Natural judge it stands for.
PRESET_JUDGES: dict[str, str] = {"gpt4": "GPT-4", "chatgpt": "ChatGPT", "falcon": "Falcon"}

#: Presets whose judge has no Rating judgments -> the preset whose pointwise-to-pairwise loss of
#: discriminability they are assumed to share (see :func:`preset_targets`).
POINTWISE_DONOR: dict[str, str] = {"falcon": "chatgpt"}


@dataclass(frozen=True)
class JudgeRates:
    """What a judge did on LLMBar Natural (or a simulated judge on the same pairs); shares in [0, 1].

    pairwise_accuracy: pairwise judgments (both orders) choosing the human-preferred answer.
    first_slot: pairwise judgments choosing the answer shown first.
    order_consistency: pairs whose two orders chose the same answer.
    pointwise_accuracy: pairs whose pointwise grades put the preferred answer higher, ties one half
        (None without pointwise judgments).
    pointwise_derived: True when ``pointwise_accuracy`` was derived, not recorded.
    """

    pairwise_accuracy: float
    first_slot: float
    order_consistency: float
    pointwise_accuracy: float | None
    pointwise_derived: bool = False

    def as_tuple(self) -> tuple[float, float, float, float | None]:
        """Pairwise accuracy, first-slot share, order consistency and pointwise accuracy."""
        return self.pairwise_accuracy, self.first_slot, self.order_consistency, self.pointwise_accuracy


def _read_jsonl(path: str | Path) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def llmbar_rates(
    judgments: str | Path,
    tasks: str | Path,
    judge: str,
    pairwise_method: str = "Vanilla",
    pointwise_method: str = "Rating",
) -> JudgeRates:
    """A recorded judge's :class:`JudgeRates` on an LLMBar set.

    Parameters
    ----------
    judgments
        ``judgments.jsonl`` rows, ``a`` shown first; unparsed rows are left out, and a pair counts for
        consistency only with both orders parsed (NaN when none).
    tasks
        The ``tasks.jsonl`` naming each task's preferred answer (``meta.preferred``).
    judge
        The recorded judge's name, e.g. ``GPT-4``.
    pairwise_method
        The pairwise prompt (``Vanilla``).
    pointwise_method
        The grading prompt whose rows carry ``score_a``/``score_b`` (``Rating``).
    """
    preferred = {row["task_id"]: row["meta"]["preferred"] for row in _read_jsonl(tasks)}
    rows = [row for row in _read_jsonl(judgments) if row["judge"] == judge]
    pairwise = [row for row in rows if row["method"] == pairwise_method and row["winner"] is not None]
    if not pairwise:
        raise ValueError(f"no {pairwise_method} judgments of {judge!r} in {judgments}")
    accuracy = sum(row["winner"] == preferred[row["task_id"]] for row in pairwise) / len(pairwise)
    first = sum(row["winner"] == row["a"] for row in pairwise) / len(pairwise)
    by_task: dict[str, list[str]] = {}
    for row in pairwise:
        by_task.setdefault(row["task_id"], []).append(row["winner"])
    both = [winners for winners in by_task.values() if len(winners) == 2]
    consistency = sum(winners[0] == winners[1] for winners in both) / len(both) if both else math.nan
    graded = [row for row in rows if row["method"] == pointwise_method and "score_a" in row]
    pointwise = None
    if graded:

        def credit(row: dict) -> float:
            margin = row["score_a"] - row["score_b"]
            if row["a"] != preferred[row["task_id"]]:
                margin = -margin
            return 1.0 if margin > 0 else 0.5 if margin == 0 else 0.0

        pointwise = sum(credit(row) for row in graded) / len(graded)
    return JudgeRates(accuracy, first, consistency, pointwise)


def debiased_discriminability(rates: JudgeRates) -> float:
    """The latent model's Δ/σ: the mean probit of the accuracy in both orders (removes the slot bias)."""
    probit = NormalDist().inv_cdf
    return (
        probit(rates.pairwise_accuracy + rates.first_slot - 0.5)
        + probit(rates.pairwise_accuracy - rates.first_slot + 0.5)
    ) / 2


def preset_targets(judgments: str | Path, tasks: str | Path) -> dict[str, JudgeRates]:
    """The :class:`JudgeRates` each preset is fitted to, by preset name.

    A preset without pointwise judgments borrows :data:`POINTWISE_DONOR`'s ratio of pointwise probit
    to pairwise discriminability.
    """
    rates = {preset: llmbar_rates(judgments, tasks, judge) for preset, judge in PRESET_JUDGES.items()}
    normal = NormalDist()
    for preset, donor in POINTWISE_DONOR.items():
        mine, theirs = rates[preset], rates[donor]
        if mine.pointwise_accuracy is not None or theirs.pointwise_accuracy is None:
            continue
        ratio = normal.inv_cdf(theirs.pointwise_accuracy) / debiased_discriminability(theirs)
        derived = normal.cdf(ratio * debiased_discriminability(mine))
        rates[preset] = JudgeRates(
            mine.pairwise_accuracy, mine.first_slot, mine.order_consistency, derived, pointwise_derived=True
        )
    return rates
