"""A leaderboard corrected by human votes: the board whose ``rating`` is the PPI++ one (``docs/human-labels.md``).

:func:`human_leaderboard` takes a judged board, its tasks and a VOTES file's rows and returns the
board re-ranked by the prediction-powered ratings (Elo scale) — or, on an anchored board, the
prediction-powered shares of points — with a :class:`HumanCorrection` beside it holding, per
system, the human-only and judge-only estimates, λ and the effective number of votes. Grades in
the VOTES file give each system's prediction-powered mean human score, the judge's prediction for
an answer being its share of the points the judge gave it in its task.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from rankkit.data.tasks import Task, task_rng
from rankkit.errors import TaskFormatError
from rankkit.judges.base import Judge
from rankkit.leaderboard.board import Leaderboard, systems_of
from rankkit.leaderboard.graded import VerdictWeighting
from rankkit.leaderboard.human import (
    HumanVotes,
    judged_pairs,
    pair_votes,
    ppi_ratings,
    ppi_scores,
    ppi_win_rates,
    system_resolver,
)
from rankkit.leaderboard.tournament import play_all, play_pairs
from rankkit.stats.intervals import DEFAULT_LEVEL
from rankkit.stats.ppi import PPIResult, votes_needed
from rankkit.strategies.matches import Cost


@dataclass(frozen=True)
class HumanCorrection:
    """What the human votes did to a board.

    Attributes
    ----------
    ratings
        Per system, the PPI++ result whose estimate and interval became the board's ``rating``,
        ``ci_low`` and ``ci_high`` (empty when the file holds only grades).
    scores
        Per system, the PPI++ mean human score from the file's grades (empty without grades).
    pair_votes, grade_votes
        How many rows of each kind the file held.
    width
        The interval width asked of the planner (``--human-width``), None when not asked.
    """

    ratings: Mapping[str, PPIResult]
    scores: Mapping[str, PPIResult]
    pair_votes: int
    grade_votes: int
    width: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The ``human`` block of the leaderboard JSON."""
        return {
            "pair_votes": self.pair_votes,
            "grade_votes": self.grade_votes,
            "width": self.width,
            "ratings": {name: estimate_dict(result, self.width) for name, result in self.ratings.items()},
            "scores": {name: estimate_dict(result, self.width) for name, result in self.scores.items()},
        }


def more_votes(result: PPIResult, width: float | None) -> int | None:
    """Human votes still needed to bring ``result``'s interval to ``width``; None when not asked or beyond reach."""
    if width is None:
        return None
    try:
        return votes_needed(result, width)
    except ValueError:
        return None


def estimate_dict(result: PPIResult, width: float | None = None) -> dict[str, Any]:
    """One system's figures, one key per concept (documented in docs/human-labels.md)."""
    return {
        "ppi": result.ppi.to_dict(),
        "human_only": result.human_only.to_dict(),
        "judge_only": result.judge_only,
        "lam": result.lam,
        "n_human": result.n_human,
        "n_judged": result.n_judged,
        "effective_n": result.effective_n,
        "votes_needed": more_votes(result, width),
    }


def judge_answer_points(board: Leaderboard, tasks: Sequence[Task]) -> dict[tuple[str, str], float]:
    """The judge's prediction of each answer's grade: its system's share of points in that task's matches."""
    points: dict[tuple[str, str], list[float]] = defaultdict(list)
    for (a, b, outcome), task in zip(board.matches, board.match_tasks):
        points[(task, a)].append(outcome)
        points[(task, b)].append(1 - outcome)
    candidate_of = {(str(t.task_id), s): c for t in tasks for s, c in systems_of(t).items()}
    return {
        (task, candidate_of[(task, system)]): sum(values) / len(values)
        for (task, system), values in points.items()
        if (task, system) in candidate_of
    }


def _reranked(board: Leaderboard, ratings: Mapping[str, PPIResult]) -> Leaderboard:
    """``board`` with each rated system's rating and interval replaced by its PPI++ one, best first."""
    rows = []
    for row in board.systems:
        result = ratings.get(row.name)
        if result is None:
            rows.append(replace(row, rating=None, ci_low=None, ci_high=None))
        else:
            rows.append(replace(row, rating=result.ppi.estimate, ci_low=result.ppi.low, ci_high=result.ppi.high))
    rows.sort(key=lambda row: (row.rating is None, -(row.rating or 0.0), row.name))
    return replace(board, systems=[replace(row, rank=i + 1) for i, row in enumerate(rows)])


def unjudged_votes(board: Leaderboard, tasks: Sequence[Task], votes: HumanVotes) -> dict[str, list[tuple[str, str]]]:
    """Per task, the voted system pairs ``(a, b)`` the board's judge has not compared (each once)."""
    judged = judged_pairs(board)
    system = system_resolver(tasks, votes.path)
    missing: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for vote in votes.pairs:
        a = system(vote.task_id, vote.a, vote.line, "a")
        b = system(vote.task_id, vote.b, vote.line, "b")
        key = (vote.task_id, *sorted((a, b)))
        if key not in judged and key[1:] not in {tuple(sorted(pair)) for pair in missing[vote.task_id]}:
            missing[vote.task_id].append((a, b))
    return {task_id: pairs for task_id, pairs in missing.items() if pairs}


def judge_voted_pairs(
    board: Leaderboard,
    tasks: Sequence[Task],
    votes: HumanVotes,
    judge: Judge,
    cache: Any = None,
    progress: bool = False,
) -> Leaderboard:
    """``board`` with the judge's verdicts on the voted pairs it has not compared yet, added to its matches.

    PPI needs the judge's label on every human-labelled unit; a vote on a pair the board's
    tournament never played is judged here (through the memo and ``cache``, in the board's order and
    weighting), so a VOTES file need not follow the board's schedule. The ratings stay the board's:
    :func:`human_leaderboard` replaces them.
    """
    missing = unjudged_votes(board, tasks, votes)
    if not missing:
        return board
    weighting = VerdictWeighting(**board.weighting) if board.weighting else VerdictWeighting()
    order = board.order or "given"

    def play(task: Task, source: Any) -> list:
        rng = task_rng(board.seed, task.task_id, purpose="human votes")
        return play_pairs(task, source, rng, missing[str(task.task_id)], order, weighting)

    used = [task for task in tasks if str(task.task_id) in missing]
    outcomes, cost, task_ids, levels = play_all(used, play, judge, cache, progress, "human votes")
    total = Cost()
    total.add(board.cost)
    total.add(cost)
    return replace(
        board,
        matches=[*board.matches, *outcomes],
        match_tasks=[*board.match_tasks, *task_ids],
        match_levels=[*board.levels_of_matches(), *levels],
        cost=total,
    )


def human_leaderboard(
    board: Leaderboard,
    tasks: Sequence[Task],
    votes: HumanVotes,
    width: float | None = None,
    level: float = DEFAULT_LEVEL,
) -> tuple[Leaderboard, HumanCorrection]:
    """The board whose ``rating`` is the PPI++ one, and the correction's figures.

    Raises
    ------
    TaskFormatError
        A vote naming an unknown task or candidate, or a pair the board's judge never compared
        (file, line and field named; exit code 2), or pair votes too few to rate any system.
    """
    ratings: dict[str, PPIResult] = {}
    if votes.pairs:
        paired = pair_votes(board, tasks, votes)
        ratings = ppi_ratings(paired, level) if board.scale == "elo" else ppi_win_rates(paired, level)
        if not ratings:
            raise TaskFormatError(votes.path, None, None, "too few pair votes to correct any system's rating")
    scores = ppi_scores(tasks, votes, judge_answer_points(board, tasks), level) if votes.grades else {}
    corrected = _reranked(board, ratings) if ratings else board
    return corrected, HumanCorrection(ratings, scores, len(votes.pairs), len(votes.grades), width)


def human_rows(correction: HumanCorrection) -> list[dict[str, Any]]:
    """Table rows beside the board: per system, the human-only and judge-only estimates, λ, the effective votes."""
    rows = []
    for kind, results in (("rating", correction.ratings), ("score", correction.scores)):
        for name, result in sorted(results.items(), key=lambda item: -item[1].ppi.estimate):
            row = {
                "name": name,
                "estimate": kind,
                "ppi": result.ppi.estimate,
                "human_only": result.human_only.estimate,
                "human_low": result.human_only.low,
                "human_high": result.human_only.high,
                "judge_only": result.judge_only,
                "lam": result.lam,
                "n_human": result.n_human,
                "effective_n": result.effective_n,
            }
            if correction.width is not None:
                row["votes_needed"] = more_votes(result, correction.width)
            rows.append(row)
    return rows
