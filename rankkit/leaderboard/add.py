"""Adding a system to a stored leaderboard without rebuilding it: by binary search or against an anchor.

More in ``docs/leaderboards.md``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from rankkit.judges.base import Judge
from rankkit.leaderboard.board import (
    Leaderboard,
    LeaderboardError,
    SystemRating,
    all_systems,
    judge_info,
    restrict,
    systems_of,
)
from rankkit.leaderboard.rating import anchor_ceiling, finite_or_lowest, mean_lengths, none_if_nan
from rankkit.leaderboard.style import controlled_ratings, parse_control
from rankkit.leaderboard.tournament import play_against
from rankkit.matches import Cost, MatchSource
from rankkit.memo import JudgmentMemo
from rankkit.ratings import ELO_BASE, ELO_SCALE, Outcome, win_rates
from rankkit.stats import bootstrap
from rankkit.tasks import Task

ADD_METHODS = ("binary", "anchored")


def _check_newcomer(board: Leaderboard, tasks: Sequence[Task], system: str) -> list[Task]:
    if system in board.names:
        raise LeaderboardError(f"system {system!r} is already on the leaderboard")
    missing = [name for name in board.names if name not in all_systems(tasks)]
    if missing:
        raise LeaderboardError(f"the data lack leaderboard system(s) {', '.join(missing)}")
    used = [t for t in restrict(tasks, [*board.names, system]) if system in systems_of(t)]
    if not used:
        raise LeaderboardError(f"no task has an answer by system {system!r}")
    return used


def binary_search_placement(
    board_order: Sequence[str], tasks: Sequence[Task], system: str, play: Any, rng: random.Random
) -> dict[str, Any]:
    """Seed 003, Algorithm 2: where ``system`` belongs in ``board_order`` (best first).

    ``play(task, opponent)`` returns the newcomer's points (1, ½ or 0); tasks are shuffled, each
    used at most twice. Returns ``{"position": 0-based index to insert at, "tie": bool, "steps": [...]}``,
    each step ``{"opponent", "wins", "matches"}``.
    """
    n_comparisons = max(1, int(math.log2(len(board_order)))) if len(board_order) > 1 else 1
    n_matches = max(1, len(tasks) // n_comparisons)
    pool = list(tasks)
    rng.shuffle(pool)
    pool = pool + pool  # X <- concat(X; X): enough tasks for the extra steps a tie can take
    low, high = 0, len(board_order) - 1
    steps = []
    while low <= high:
        mid = (low + high) // 2
        batch = [pool.pop() for _ in range(min(n_matches, len(pool)))]
        if not batch:
            return {"position": mid, "tie": True, "steps": steps}
        wins = sum(play(task, board_order[mid]) for task in batch)
        steps.append({"opponent": board_order[mid], "wins": wins, "matches": len(batch)})
        if wins > len(batch) / 2:
            high = mid - 1
        elif wins < len(batch) / 2:
            low = mid + 1
        elif not pool:
            return {"position": mid, "tie": True, "steps": steps}
    return {"position": low, "tie": False, "steps": steps}


def rating_against(outcomes: Sequence[Outcome], ratings: dict[str, float]) -> float:
    """The Bradley–Terry rating (Elo scale) that best explains a newcomer's matches against fixed-rated opponents.

    Solves ``sum_i P(win against i | r) = points`` by bisection, with points clipped to
    [½, n − ½] over n matches so that winning (or losing) everything gives a finite rating.
    """
    import numpy as np

    opponents = np.array([ratings[opponent] for _, opponent, _ in outcomes], dtype=float)
    n = len(opponents)
    points = min(n - 0.5, max(0.5, sum(points for _, _, points in outcomes)))
    # The root lies within this bracket: clipped points keep every win probability in [½/n, 1 − ½/n].
    reach = ELO_SCALE * math.log(2 * n, ELO_BASE)
    low, high = opponents.min() - reach, opponents.max() + reach
    for _ in range(60):
        mid = (low + high) / 2
        expected = float(np.sum(1.0 / (1.0 + ELO_BASE ** ((opponents - mid) / ELO_SCALE))))
        low, high = (mid, high) if expected < points else (low, mid)
    return (low + high) / 2


def add_system(
    board: Leaderboard,
    tasks: Sequence[Task],
    judge: Judge,
    system: str,
    method: str = "binary",
    cache: Any = None,
    seed: int | None = None,
    order: str | None = None,
    resamples: int = 200,
    judge_spec: str = "",
    data: str = "",
    control: str | Sequence[str] | None = None,
) -> Leaderboard:
    """A new leaderboard with ``system`` added to ``board`` (which is unchanged); see ``docs/leaderboards.md``.

    Parameters
    ----------
    method
        ``binary`` (Algorithm 2) or ``anchored`` (against the current top, or the board's anchor).
    seed
        Defaults to the stored leaderboard's.
    order
        Default ``both`` when the leaderboard's were, else ``random``.
    control
        Style control (default: the stored board's). With one, every system is re-rated on all
        matches by the controlled model; the stored matches must carry their tasks.
    """
    if method not in ADD_METHODS:
        raise LeaderboardError(f"unknown add method {method!r} (choose {', '.join(ADD_METHODS)})")
    memo = JudgmentMemo(judge, cache)
    judge.check_tasks(tasks)  # before any judgment (the sim judge needs human scores)
    seed = board.seed if seed is None else seed
    order = order or ("both" if board.order == "both" else "random")
    used = _check_newcomer(board, tasks, system)
    control = parse_control(control) if control else tuple(board.control)
    if control and len(board.match_tasks) != len(board.matches):
        raise LeaderboardError(
            "style control re-rates every match, and this leaderboard's stored matches do not "
            "record their tasks (it was written before rankkit 0.3): rebuild it"
        )
    new_outcomes: list[Outcome] = []
    new_task_ids: list[str] = []
    sources: dict[str, MatchSource] = {}

    def source_for(task: Task) -> MatchSource:
        if task.task_id not in sources:
            sources[task.task_id] = MatchSource(task, memo, strategy=f"add:{method}")
        return sources[task.task_id]

    rng = random.Random(f"{seed}|add|{system}")
    rows = sorted(board.systems, key=lambda r: r.rank)
    if method == "binary":

        def play(task: Task, opponent: str) -> float:
            played = play_against(task, source_for(task), rng, opponent, [system], order)
            new_outcomes.extend(played)
            new_task_ids.extend([task.task_id] * len(played))
            if not played:
                return 0.5
            _, _, points = played[0]
            return points

        placement = binary_search_placement([r.name for r in rows], used, system, play, rng)
        newcomer = _searched_rating(board, system, new_outcomes, resamples, rng, placement)
        ordered = [r.name for r in rows]
        ordered.insert(placement["position"], system)
        by_name = {r.name: r for r in rows}
        by_name[system] = newcomer
        systems = [replace(by_name[name], rank=rank) for rank, name in enumerate(ordered, start=1)]
    else:
        opponent = board.anchor if board.scale == "win_rate" and board.anchor else rows[0].name
        for task in used:
            played = play_against(task, source_for(task), rng, opponent, [system], order)
            new_outcomes += played
            new_task_ids += [task.task_id] * len(played)
        if not new_outcomes:
            raise LeaderboardError(f"no task has answers by both {system!r} and {opponent!r}")
        if board.scale == "win_rate":

            def rate(sample: Sequence[Outcome], items: Sequence[str]) -> dict[str, float]:
                return {system: win_rates(sample, items)[system], opponent: 0.5}
        else:
            top_rating = board.system(opponent).rating

            def rate(sample: Sequence[Outcome], items: Sequence[str]) -> dict[str, float]:
                p = win_rates(sample, items)[system]
                floor = 0.5 / len(sample)
                p = min(1.0 - floor, max(floor, p))
                return {system: top_rating + ELO_SCALE * math.log(p / (1.0 - p), ELO_BASE), opponent: top_rating}

        interval = bootstrap(
            lambda sample: rate(sample, [system, opponent]), new_outcomes, resamples=resamples, seed=rng.getrandbits(64)
        )[system]
        newcomer = SystemRating(
            system, interval.estimate, none_if_nan(interval.low), none_if_nan(interval.high), 0, len(new_outcomes)
        )
        ordered_rows = sorted([*rows, newcomer], key=lambda r: -finite_or_lowest(r.rating))
        systems = [replace(r, rank=rank) for rank, r in enumerate(ordered_rows, start=1)]
        placement = {
            "position": [r.name for r in systems].index(system),
            "tie": False,
            "opponent": opponent,
            "win_rate": win_rates(new_outcomes, [system, opponent])[system],
        }
    cost = Cost()
    for source in sources.values():
        cost.add(source.cost)
    memo.flush()
    placement.update(system=system, method=method, matches=len(new_outcomes), judge_calls=cost.judge_calls)
    total = Cost()
    total.add(board.cost)
    total.add(cost)
    matches, match_tasks = [*board.matches, *new_outcomes], [*board.match_tasks, *new_task_ids]
    style = None
    if control:
        systems, style = controlled_ratings(
            tasks, matches, match_tasks, [*board.names, system], control, board.scale, board.anchor, resamples, seed
        )
        placement["controlled_rank"] = [row.name for row in systems].index(system) + 1
    return Leaderboard(
        method=board.method,
        systems=systems,
        matches=matches,
        cost=total,
        scale=board.scale,
        anchor=board.anchor,
        seed=board.seed,
        order=board.order,
        judge=board.judge or judge_info(judge, judge_spec),
        data=data or board.data,
        placement=placement,
        match_tasks=match_tasks if len(match_tasks) == len(matches) else [],
        control=control,
        style=style,
        anchor_ceiling=(
            anchor_ceiling(matches, board.anchor, mean_lengths(tasks))
            if board.scale == "win_rate" and board.anchor is not None
            else None
        ),
    )


def _searched_rating(
    board: Leaderboard,
    system: str,
    outcomes: Sequence[Outcome],
    resamples: int,
    rng: random.Random,
    placement: dict[str, Any],
) -> SystemRating:
    """The row of a system placed by binary search: rated on a BT board, else none with ``placement["rating_note"]``."""
    ratings = {row.name: row.rating for row in board.systems if row.rating is not None and math.isfinite(row.rating)}
    played = [outcome for outcome in outcomes if outcome[1] in ratings]
    if board.scale != "elo":
        placement["rating_note"] = (
            f"no rating: on this leaderboard a rating is the win rate against {board.anchor}, "
            f"which the binary search does not play; add it with --method anchored for one"
        )
        return SystemRating(system, None, None, None, 0, len(outcomes))
    if not played:
        placement["rating_note"] = "no rating: it played no system with a rating"
        return SystemRating(system, None, None, None, 0, len(outcomes))
    interval = bootstrap(
        lambda sample: rating_against(sample, ratings), played, resamples=resamples, seed=rng.getrandbits(64)
    )
    placement["rating_note"] = (
        f"rating fitted to its {len(played)} matches, its opponents' ratings held fixed; "
        f"its rank is the binary search's"
    )
    return SystemRating(
        system, interval.estimate, none_if_nan(interval.low), none_if_nan(interval.high), 0, len(outcomes)
    )
