"""What the simulator's presets are fitted to: the rates of the recorded LLMBar judges.

:func:`preset_targets` reads them from ``shared/data/llmbar_natural`` (development data, used by
``benchmarks/calibrate_sim.py`` and the tests); :mod:`rankkit.judges.sim` holds the parameters
fitted to them, so nothing here runs when a simulated judge judges.
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
    """What a judge did on LLMBar Natural (or what a simulated judge does on the same pairs).

    pairwise_accuracy: share of pairwise judgments (each pair in both orders) that chose the
        human-preferred answer.
    first_slot: share of pairwise judgments that chose the answer shown first.
    order_consistency: share of pairs whose two orders chose the same answer.
    pointwise_accuracy: share of pairs whose two pointwise grades put the preferred answer
        higher, a tie counting one half (None when the judge has no pointwise judgments).
    pointwise_derived: True when ``pointwise_accuracy`` was derived, not recorded.
    """

    pairwise_accuracy: float
    first_slot: float
    order_consistency: float
    pointwise_accuracy: float | None
    pointwise_derived: bool = False

    def as_tuple(self) -> tuple[float, float, float, float | None]:
        """The four rates in order.

        Returns
        -------
        tuple[float, float, float, float | None]
            Pairwise accuracy, first-slot share, order consistency and pointwise accuracy.
        """
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
    """A recorded judge's four rates on an LLMBar set (see :class:`JudgeRates`).

    Parameters
    ----------
    judgments : str | Path
        ``judgments.jsonl`` rows ``{task_id, judge, method, swap, a, b, winner[, score_a,
        score_b]}``, ``a`` shown first; rows whose ``winner`` could not be parsed (null) are left
        out, and a pair counts for order consistency only when both of its orders were parsed
        (NaN when none was).
    tasks : str | Path
        The ``tasks.jsonl`` naming each task's preferred answer (``meta.preferred``).
    judge : str
        The recorded judge's name, e.g. ``GPT-4``.
    pairwise_method : str
        The pairwise prompt whose two rows per pair give accuracy, first-slot share
        and consistency (``Vanilla``, LLMBar's plain prompt).
    pointwise_method : str
        The prompt whose rows carry the two answers' independent grades
        (``score_a``/``score_b``; ``Rating``, the plain grading prompt); ties count one half.

    Returns
    -------
    JudgeRates
        The judge's pairwise accuracy, first-slot share, order consistency and pointwise accuracy.
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
    """The latent model's Δ/σ for a pairwise judge with these rates: the mean of the probits of
    its accuracy in the two orders (``r + f − ½`` with the preferred answer first, ``r − f + ½``
    second), which removes the slot bias.

    Parameters
    ----------
    rates : JudgeRates
        The judge's recorded rates.

    Returns
    -------
    float
        Δ/σ.
    """
    probit = NormalDist().inv_cdf
    return (
        probit(rates.pairwise_accuracy + rates.first_slot - 0.5)
        + probit(rates.pairwise_accuracy - rates.first_slot + 0.5)
    ) / 2


def preset_targets(judgments: str | Path, tasks: str | Path) -> dict[str, JudgeRates]:
    """The four rates each preset is fitted to (used by ``benchmarks/calibrate_sim.py`` and the tests).

    A preset whose judge has no pointwise judgments borrows from :data:`POINTWISE_DONOR`: its
    pointwise probit ``Φ⁻¹(q)`` is its own pairwise discriminability times the donor's ratio
    ``Φ⁻¹(q_donor) / discriminability_donor``, i.e. it is assumed to lose as much when grading
    answers alone as the donor does.

    Parameters
    ----------
    judgments : str | Path
        The LLMBar ``judgments.jsonl``.
    tasks : str | Path
        The LLMBar ``tasks.jsonl``.

    Returns
    -------
    dict[str, JudgeRates]
        The rates, by preset name.
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
