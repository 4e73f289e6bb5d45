"""Building a system leaderboard: Arena-lite tournaments, win rates against an anchor, or any per-task strategy.

More in ``docs/leaderboards.md``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rankkit.data.tasks import Task, task_rng
from rankkit.judges.base import Judge
from rankkit.leaderboard.board import (
    Leaderboard,
    LeaderboardError,
    all_systems,
    judge_info,
    restrict,
    systems_of,
)
from rankkit.leaderboard.graded import AS_BINARY, VerdictWeighting, graded_matches
from rankkit.leaderboard.rating import (
    anchor_ceiling,
    mean_lengths,
    rate_bt,
    rate_davidson,
    rate_ordinal,
    rate_win_rate,
)
from rankkit.leaderboard.style import controlled_ratings, parse_control
from rankkit.leaderboard.tournament import play_against, play_all, play_tournament
from rankkit.stats.ratings import Outcome
from rankkit.strategies.matches import MatchSource
from rankkit.strategies.order import check_order

BUILD_METHODS = ("arena", "anchored")


def arena(
    tasks: Sequence[Task],
    judge: Judge,
    cache: Any = None,
    seed: int = 0,
    order: str = "given",
    resamples: int = 200,
    alpha: float = 0.01,
    systems: Sequence[str] | None = None,
    progress: bool = False,
    judge_spec: str = "",
    data: str = "",
    control: str | Sequence[str] | None = None,
    weighting: VerdictWeighting | None = None,
) -> Leaderboard:
    """Arena-lite: a tournament between the systems on every task, all matches fitted by BT (Elo scale).

    Parameters
    ----------
    systems
        Only these systems take part (default: all in the data).
    order
        ``given``, ``random``, or ``both`` to decide on the grades averaged over both orders.
    resamples
        Bootstrap resamples for the 95% intervals (0: none; 200 because each refits the whole board).
    control
        ``length``, ``format`` or ``length,format``: rate by style-controlled BT, the plain rating
        kept as ``unadjusted``.
    weighting
        How graded verdicts and ties count (:class:`~rankkit.leaderboard.graded.VerdictWeighting`;
        ``ties=davidson`` fits Davidson's tie model instead of BT, ``ties=ordinal`` the ordinal model on
        every verdict's level). None: as binary verdicts.
    """
    names = list(systems) if systems is not None else all_systems(tasks)
    used = restrict(tasks, names)
    weighting = weighting or AS_BINARY

    def play(task: Task, source: MatchSource) -> list[Outcome]:
        return play_tournament(task, source, task_rng(seed, task.task_id, purpose="arena"), order, weighting)

    control = parse_control(control)
    if control and weighting.ties != "half":
        raise LeaderboardError(f"ties={weighting.ties} does not combine with a style control (it fits plain strengths)")
    outcomes, cost, task_ids, levels = play_all(used, play, judge, cache, progress, "arena")
    if weighting.ties == "davidson":
        rows, style = rate_davidson(outcomes, names, resamples, seed), None
    elif weighting.ties == "ordinal":
        rows, style = rate_ordinal(graded_matches(outcomes, levels), names, resamples, seed), None
    else:
        rows, style = _rate(used, outcomes, task_ids, names, control, "elo", None, resamples, seed, alpha)
    return Leaderboard(
        method="arena",
        systems=rows,
        matches=outcomes,
        cost=cost,
        scale="elo",
        seed=seed,
        order=order,
        judge=judge_info(judge, judge_spec),
        data=data,
        match_tasks=task_ids,
        match_levels=levels,
        control=control,
        style=style,
        weighting=weighting.stored(),
    )


def _rate(
    tasks: Sequence[Task],
    outcomes: Sequence[Outcome],
    task_ids: Sequence[str],
    names: Sequence[str],
    control: tuple[str, ...],
    scale: str,
    anchor: str | None,
    resamples: int,
    seed: int,
    alpha: float = 0.01,
) -> tuple[list, dict[str, Any] | None]:
    """The rows (and, with a control, the style block) of a leaderboard's matches."""
    if control:
        return controlled_ratings(tasks, outcomes, task_ids, names, control, scale, anchor, resamples, seed, alpha)
    if scale == "win_rate":
        return rate_win_rate(outcomes, names, anchor, resamples, seed), None
    return rate_bt(outcomes, names, resamples, seed, alpha), None


def anchored(
    tasks: Sequence[Task],
    judge: Judge,
    anchor: str,
    cache: Any = None,
    seed: int = 0,
    order: str = "random",
    resamples: int = 200,
    systems: Sequence[str] | None = None,
    progress: bool = False,
    judge_spec: str = "",
    data: str = "",
    control: str | Sequence[str] | None = None,
    weighting: VerdictWeighting | None = None,
) -> Leaderboard:
    """Baseline-mediated: each system against ``anchor``'s answer on every task; rating = win rate.

    Parameters
    ----------
    order
        ``random`` (default), ``both`` or ``given``.
    control
        ``length``: rate by the length-controlled win rate, the raw one kept as ``unadjusted``.
    weighting
        How graded verdicts count (``strong_weight``, ``length_margin``: arena-hard-auto's and
        WildBench's win rates); ``ties=davidson`` has no meaning for a win rate and is refused.
    """
    names = list(systems) if systems is not None else all_systems(tasks)
    if anchor not in names:
        raise LeaderboardError(f"anchor {anchor!r} is not among the systems ({', '.join(names)})")
    used = restrict(tasks, names)

    weighting = (weighting or AS_BINARY).for_win_rate()

    def play(task: Task, source: MatchSource) -> list[Outcome]:
        rng = task_rng(seed, task.task_id, purpose="anchored")
        return play_against(task, source, rng, anchor, names, order, weighting)

    control = parse_control(control)
    if control and control != ("length",):
        raise LeaderboardError(
            "the anchored leaderboard takes control=length only (the length-controlled win "
            "rate); use the arena leaderboard for format control"
        )
    outcomes, cost, task_ids, levels = play_all(used, play, judge, cache, progress, "anchored")
    rows, style = _rate(used, outcomes, task_ids, names, control, "win_rate", anchor, resamples, seed)
    ceiling = anchor_ceiling(outcomes, anchor, mean_lengths(used))
    return Leaderboard(
        method="anchored",
        systems=rows,
        matches=outcomes,
        cost=cost,
        scale="win_rate",
        anchor=anchor,
        seed=seed,
        order=order,
        judge=judge_info(judge, judge_spec),
        data=data,
        match_tasks=task_ids,
        match_levels=levels,
        control=control,
        style=style,
        anchor_ceiling=ceiling,
        weighting=weighting.stored(),
    )


def induced_outcomes(task: Task, scores: Mapping[str, float]) -> list[Outcome]:
    """A per-task ranking as pairwise results between its systems: the higher score wins, equal scores tie."""
    candidate_of = systems_of(task)
    names = list(candidate_of)
    outcomes = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            sa, sb = scores[candidate_of[a]], scores[candidate_of[b]]
            outcomes.append((a, b, 1.0 if sa > sb else 0.0 if sa < sb else 0.5))
    return outcomes


def from_strategy(
    strategy_run: Any,
    tasks: Sequence[Task],
    seed: int = 0,
    resamples: int = 200,
    alpha: float = 0.01,
    judge: dict[str, Any] | None = None,
    data: str = "",
    control: str | Sequence[str] | None = None,
) -> Leaderboard:
    """A leaderboard from a per-task strategy's run: its scores read as pairwise results, fitted by BT.

    ``judge`` is what the board stores about the judge (:func:`~rankkit.leaderboard.board.judge_info`);
    ``resamples`` 0 means no intervals.
    """
    by_id = {t.task_id: t for t in tasks}
    outcomes: list[Outcome] = []
    task_ids: list[str] = []
    for result in strategy_run.tasks:
        induced = induced_outcomes(by_id[result.task_id], result.scores)
        outcomes += induced
        task_ids += [result.task_id] * len(induced)
    names = all_systems(tasks)
    control = parse_control(control)
    rows, style = _rate(tasks, outcomes, task_ids, names, control, "elo", None, resamples, seed, alpha)
    return Leaderboard(
        method=strategy_run.name,
        systems=rows,
        matches=outcomes,
        cost=strategy_run.cost,
        scale="elo",
        seed=seed,
        judge=judge or {},
        data=data,
        match_tasks=task_ids,
        control=control,
        style=style,
    )


def build(
    tasks: Sequence[Task],
    judge: Judge,
    method: str = "arena",
    anchor: str | None = None,
    cache: Any = None,
    seed: int = 0,
    order: str | None = None,
    resamples: int = 200,
    systems: Sequence[str] | None = None,
    progress: bool = False,
    judge_spec: str = "",
    data: str = "",
    control: str | Sequence[str] | None = None,
    weighting: VerdictWeighting | None = None,
) -> Leaderboard:
    """One entry point: ``method`` is ``arena``, ``anchored`` (needs ``anchor``) or a strategy spec (``bt`` …).

    Parameters
    ----------
    control
        Style control (``length``, ``format``, ``length,format``; anchored takes ``length`` only).
        None: plain ratings.
    order
        How ``arena`` and ``anchored`` show each match; None: their default. A strategy spec names
        its own order, so giving one with it is an error.
    weighting
        How ``arena`` and ``anchored`` count graded verdicts and ties; None (or the default) for a strategy spec.
    """
    _check_order(method, order)
    if method not in BUILD_METHODS and weighting is not None and weighting != AS_BINARY:
        raise LeaderboardError("ties, strong_weight and length_margin apply to the arena and anchored leaderboards")
    common = {
        "cache": cache,
        "seed": seed,
        "resamples": resamples,
        "systems": systems,
        "progress": progress,
        "judge_spec": judge_spec,
        "data": data,
        "control": control,
    }
    if method == "arena":
        return arena(tasks, judge, order=order or "given", weighting=weighting, **common)
    if method == "anchored":
        if anchor is None:
            raise LeaderboardError(
                f"the anchored leaderboard needs an anchor system (one of: {', '.join(all_systems(tasks))})"
            )
        return anchored(tasks, judge, anchor, order=order or "random", weighting=weighting, **common)
    return _from_strategy_spec(tasks, judge, method, **common)


def _check_order(method: str, order: str | None) -> None:
    """LeaderboardError for an order given with a strategy spec, which names its own."""
    if order is not None:
        check_order("leaderboard", order)
        if method not in BUILD_METHODS:
            raise LeaderboardError(
                f"an order applies to the arena and anchored leaderboards; the strategy "
                f"{method!r} takes its own in the spec (e.g. {method.partition(':')[0]}:order={order})"
            )


def _from_strategy_spec(
    tasks: Sequence[Task],
    judge: Judge,
    spec: str,
    cache: Any,
    seed: int,
    resamples: int,
    systems: Sequence[str] | None,
    progress: bool,
    judge_spec: str,
    data: str,
    control: str | Sequence[str] | None,
) -> Leaderboard:
    """The strategy ``spec`` run on the tasks, and its scores read as a leaderboard (:func:`from_strategy`)."""
    from rankkit.runs.runner import run
    from rankkit.strategies import make_strategy

    strategy = make_strategy(spec)
    used = restrict(tasks, systems) if systems is not None else list(tasks)
    all_systems(used)  # fail early when candidates lack systems
    result = run(used, [strategy], judge, cache, seed=seed, progress=progress, judge_spec=judge_spec, data=data)
    return from_strategy(
        result.strategies[0], used, seed, resamples, judge=judge_info(judge, judge_spec), data=data, control=control
    )
