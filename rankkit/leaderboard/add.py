"""Adding a system to a stored leaderboard without rebuilding it: by binary search or against an anchor.

More in ``docs/leaderboards.md``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from rankkit.data.tasks import Task
from rankkit.judges.base import Judge
from rankkit.judgments.memo import JudgmentMemo
from rankkit.leaderboard.board import (
    AnchorCeiling,
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
from rankkit.stats.intervals import bootstrap
from rankkit.stats.ratings import ELO_BASE, ELO_SCALE, Outcome, win_rates
from rankkit.strategies.matches import Cost, MatchSource

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
    control = _checked_control(board, control)
    games = NewcomerGames(memo, f"add:{method}", system, order, random.Random(f"{seed}|add|{system}"))
    place = place_by_binary_search if method == "binary" else place_against_anchor
    systems, placement = place(board, used, games, resamples)
    cost = games.cost()
    memo.flush()
    placement.update(system=system, method=method, matches=len(games.outcomes), judge_calls=cost.judge_calls)
    matches, match_tasks = [*board.matches, *games.outcomes], [*board.match_tasks, *games.task_ids]
    style = None
    if control:
        systems, style = controlled_ratings(
            tasks, matches, match_tasks, [*board.names, system], control, board.scale, board.anchor, resamples, seed
        )
        placement["controlled_rank"] = [row.name for row in systems].index(system) + 1
    return replace(  # the stored board's method, scale, anchor, seed and order kept
        board,
        systems=systems,
        matches=matches,
        cost=games.total_cost(board.cost),
        judge=board.judge or judge_info(judge, judge_spec),
        data=data or board.data,
        placement=placement,
        match_tasks=match_tasks if len(match_tasks) == len(matches) else [],
        match_levels=[*board.levels_of_matches(), *games.levels],
        control=control,
        style=style,
        anchor_ceiling=_anchor_ceiling(board, matches, tasks),
    )


def _anchor_ceiling(board: Leaderboard, matches: Sequence[Outcome], tasks: Sequence[Task]) -> AnchorCeiling | None:
    """The new board's anchor ceiling, on a win-rate board with an anchor (None on others)."""
    if board.scale == "win_rate" and board.anchor is not None:
        return anchor_ceiling(matches, board.anchor, mean_lengths(tasks))
    return None


def _checked_control(board: Leaderboard, control: str | Sequence[str] | None) -> tuple[str, ...]:
    """The style control of the new board (default: the stored board's); LeaderboardError when the
    stored matches do not record their tasks, which re-rating every match needs."""
    control = parse_control(control) if control else tuple(board.control)
    if control and len(board.match_tasks) != len(board.matches):
        raise LeaderboardError(
            "style control re-rates every match, and this leaderboard's stored matches do not "
            "record their tasks (it was written before rankkit 0.3): rebuild it"
        )
    return control


class NewcomerGames:
    """The newcomer's matches as they are played, one :class:`~rankkit.strategies.matches.MatchSource` per task."""

    def __init__(self, memo: JudgmentMemo, strategy: str, system: str, order: str, rng: random.Random):
        self.memo, self.strategy, self.system, self.order, self.rng = memo, strategy, system, order, rng
        #: The results played so far, and the task and verdict level of each.
        self.outcomes: list[Outcome] = []
        self.task_ids: list[str] = []
        self.levels: list[int | None] = []
        self._sources: dict[str, MatchSource] = {}

    def play(self, task: Task, opponent: str) -> list[Outcome]:
        """The newcomer against ``opponent`` on ``task`` (in one or both orders); the results are kept.

        Returns the results of this task.
        """
        if task.task_id not in self._sources:
            self._sources[task.task_id] = MatchSource(task, self.memo, strategy=self.strategy)
        records = play_against(task, self._sources[task.task_id], self.rng, opponent, [self.system], self.order)
        played = [outcome for outcome, _ in records]
        self.outcomes.extend(played)
        self.levels.extend(level for _, level in records)
        self.task_ids.extend([task.task_id] * len(played))
        return played

    def cost(self) -> Cost:
        """What the matches cost, over every task."""
        cost = Cost()
        for source in self._sources.values():
            cost.add(source.cost)
        return cost

    def total_cost(self, before: Cost) -> Cost:
        """The cost ``before`` these matches (the stored board's) plus theirs."""
        total = Cost()
        total.add(before)
        total.add(self.cost())
        return total


def place_by_binary_search(
    board: Leaderboard, used: Sequence[Task], games: NewcomerGames, resamples: int
) -> tuple[list[SystemRating], dict[str, Any]]:
    """The board's rows with the newcomer inserted where the binary search placed it (the others keep their order).

    Returns the ranked rows and the placement.
    """
    rows = sorted(board.systems, key=lambda r: r.rank)
    system = games.system

    def points(task: Task, opponent: str) -> float:
        played = games.play(task, opponent)
        if not played:
            return 0.5
        _, _, won = played[0]
        return won

    placement = binary_search_placement([r.name for r in rows], used, system, points, games.rng)
    newcomer = _searched_rating(board, system, games.outcomes, resamples, games.rng, placement)
    ordered = [r.name for r in rows]
    ordered.insert(placement["position"], system)
    by_name = {r.name: r for r in rows}
    by_name[system] = newcomer
    return [replace(by_name[name], rank=rank) for rank, name in enumerate(ordered, start=1)], placement


def place_against_anchor(
    board: Leaderboard, used: Sequence[Task], games: NewcomerGames, resamples: int
) -> tuple[list[SystemRating], dict[str, Any]]:
    """The newcomer rated on every task against the board's anchor (a win-rate board's) or its top
    system, and ranked by that rating among the others.

    Returns the ranked rows and the placement.
    """
    rows = sorted(board.systems, key=lambda r: r.rank)
    system = games.system
    opponent = board.anchor if board.scale == "win_rate" and board.anchor else rows[0].name
    for task in used:
        games.play(task, opponent)
    if not games.outcomes:
        raise LeaderboardError(f"no task has answers by both {system!r} and {opponent!r}")
    rate = _anchored_rate(board, system, opponent)
    interval = bootstrap(
        lambda sample: rate(sample, [system, opponent]),
        games.outcomes,
        resamples=resamples,
        seed=games.rng.getrandbits(64),
    )[system]
    newcomer = SystemRating(
        system, interval.estimate, none_if_nan(interval.low), none_if_nan(interval.high), 0, len(games.outcomes)
    )
    ordered_rows = sorted([*rows, newcomer], key=lambda r: -finite_or_lowest(r.rating))
    systems = [replace(r, rank=rank) for rank, r in enumerate(ordered_rows, start=1)]
    placement = {
        "position": [r.name for r in systems].index(system),
        "tie": False,
        "opponent": opponent,
        "win_rate": win_rates(games.outcomes, [system, opponent])[system],
    }
    return systems, placement


def _anchored_rate(
    board: Leaderboard, system: str, opponent: str
) -> Callable[[Sequence[Outcome], Sequence[str]], dict[str, float]]:
    """How a sample of the newcomer's matches rates it: its win rate against the anchor (which stays
    at ½), or on an Elo board the rating that win rate means against the top system's."""
    if board.scale == "win_rate":

        def rate(sample: Sequence[Outcome], items: Sequence[str]) -> dict[str, float]:
            return {system: win_rates(sample, items)[system], opponent: 0.5}

        return rate
    top_rating = board.system(opponent).rating

    def elo_rate(sample: Sequence[Outcome], items: Sequence[str]) -> dict[str, float]:
        p = win_rates(sample, items)[system]
        floor = 0.5 / len(sample)
        p = min(1.0 - floor, max(floor, p))
        return {system: top_rating + ELO_SCALE * math.log(p / (1.0 - p), ELO_BASE), opponent: top_rating}

    return elo_rate


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
