"""Human votes against each strategy of a ``compare`` run: agreement and PPI++ win rates (``docs/human-labels.md``).

A strategy's per-task ranking says, for every pair of a task's answers, which it prefers (equal
scores: a tie). Those induced verdicts are the strategy's "judge labels": on the pairs humans voted
on they meet the votes, on every other pair they stand alone. PPI++ then gives, per strategy and
system, the share of points the *humans* would give the system over all the tasks' pairs, from the
strategy's verdicts corrected by the votes; a strategy that orders answers the way humans do earns
a large λ and a narrow interval. Grades are predicted by the answer's share of the pairs the
strategy ranks it above (its normalised rank).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rankkit.data.tasks import Task
from rankkit.leaderboard.board import Leaderboard, SystemRating, all_systems
from rankkit.leaderboard.build import induced_outcomes
from rankkit.leaderboard.human import HumanVotes, PairedVotes, pair_votes, ppi_scores, ppi_win_rates
from rankkit.leaderboard.human_board import estimate_dict, judge_answer_points, more_votes
from rankkit.stats.intervals import DEFAULT_LEVEL
from rankkit.stats.ppi import PPIResult


@dataclass(frozen=True)
class StrategyAgreement:
    """One strategy's verdicts beside the human votes.

    Attributes
    ----------
    strategy
        The strategy's label.
    agreement
        Mean of ``1 − |human points − strategy points|`` over the pair votes: 1 every vote agrees,
        ½ for a tie against a preference; None without pair votes.
    win_rates
        Per system, the PPI++ share of points (from the strategy's verdicts on all pairs).
    scores
        Per system, the PPI++ mean human grade (from the file's grades; empty without grades).
    """

    strategy: str
    agreement: float | None
    win_rates: Mapping[str, PPIResult]
    scores: Mapping[str, PPIResult]

    def to_dict(self, width: float | None = None) -> dict[str, Any]:
        """The strategy's entry in the results JSON's ``human`` block."""
        return {
            "agreement": self.agreement,
            "win_rates": {name: estimate_dict(result, width) for name, result in self.win_rates.items()},
            "scores": {name: estimate_dict(result, width) for name, result in self.scores.items()},
        }


def induced_board(label: str, tasks: Sequence[Task], task_scores: Mapping[str, Mapping[str, float]]) -> Leaderboard:
    """The strategy's per-task scores as a board of every pair's induced verdict (no ratings fitted)."""
    matches, match_tasks = [], []
    for task in tasks:
        scores = task_scores.get(str(task.task_id))
        if not scores:
            continue
        outcomes = induced_outcomes(task, scores)
        matches += outcomes
        match_tasks += [str(task.task_id)] * len(outcomes)
    rows = [SystemRating(name, None, None, None, rank=0) for name in all_systems(tasks)]
    return Leaderboard(method=label, systems=rows, matches=matches, match_tasks=match_tasks)


def agreement(paired: PairedVotes) -> float | None:
    """Mean agreement of the human and judge points over the voted pairs (None without votes)."""
    if not paired.labelled:
        return None
    return sum(1 - abs(human - judge) for _, _, human, judge in paired.labelled) / len(paired.labelled)


def strategy_agreements(result: Any, votes: HumanVotes, level: float = DEFAULT_LEVEL) -> list[StrategyAgreement]:
    """Per strategy of ``result`` (a :class:`~rankkit.runs.results.RunResult`), its agreement with the
    votes and PPI++ estimates.

    Raises
    ------
    TaskFormatError
        A vote naming an unknown task or candidate, or an answer a strategy left unscored.
    LeaderboardError
        A task whose candidates name no system.
    """
    out = []
    for run in result.strategies:
        board = induced_board(run.name, result.tasks, {t.task_id: t.scores for t in run.tasks})
        paired = pair_votes(board, result.tasks, votes) if votes.pairs else None
        scores = (
            ppi_scores(result.tasks, votes, judge_answer_points(board, result.tasks), level) if votes.grades else {}
        )
        out.append(
            StrategyAgreement(
                run.name,
                agreement(paired) if paired else None,
                ppi_win_rates(paired, level) if paired else {},
                scores,
            )
        )
    return out


def agreement_rows(agreements: Sequence[StrategyAgreement], width: float | None = None) -> list[dict[str, Any]]:
    """Table rows: per strategy and system, the judge-only and PPI++ estimates with their intervals
    (and with ``width``, the votes still needed for it)."""
    rows = []
    for item in agreements:
        for kind, results in (("win_rate", item.win_rates), ("score", item.scores)):
            for name, res in results.items():
                rows.append(
                    {
                        "strategy": item.strategy,
                        "agreement": item.agreement,
                        "name": name,
                        "estimate": kind,
                        "judge_only": res.judge_only,
                        "ppi": res.ppi.estimate,
                        "ci_low": res.ppi.low,
                        "ci_high": res.ppi.high,
                        "human_only": res.human_only.estimate,
                        "lam": res.lam,
                        "effective_n": res.effective_n,
                        "votes_needed": more_votes(res, width),
                    }
                )
    return rows
