"""Playing systems against each other: Arena-lite brackets and matches against one opponent, task by task.

Every match is asked through a :class:`~rankkit.matches.MatchSource` over the run's
:class:`~rankkit.memo.JudgmentMemo`, so a judgment already made in the run or in the cache is
never paid for twice; :func:`play_all` plays every task through the runner's task pool.
"""

from __future__ import annotations

import functools
import random
import sys
from collections.abc import Callable, Sequence
from typing import Any

from rankkit.brackets import play_bracket
from rankkit.formatting import inert
from rankkit.judges.base import Judge
from rankkit.leaderboard.board import systems_of
from rankkit.matches import Cost, MatchSource
from rankkit.memo import JudgmentMemo
from rankkit.ratings import Outcome
from rankkit.tasks import Task


def play_tournament(task: Task, source: MatchSource, rng: random.Random, order: str = "given") -> list[Outcome]:
    """Arena-lite on one task: a single-elimination tournament between the systems' answers.

    The bracket (:func:`rankkit.brackets.play_bracket`) is a seeded shuffle of the systems, fixed
    once drawn; each round pairs neighbours in bracket order (one batch of matches per round),
    winners keep their bracket order, and with an odd number the last one gets a bye. A tied match
    is recorded as a tie (half a win each way for BT); a seeded coin decides who advances.

    Parameters
    ----------
    task : Task
        The task (every candidate with a system).
    source : MatchSource
        Where the task's judgments come from.
    rng : random.Random
        Draws the bracket, the coins for ties and, with ``random``, the order of each pair.
    order : str, default "given"
        How each pair is shown (:mod:`rankkit.matches`): ``given`` as the shuffled bracket lists
        it, ``random`` in a seeded random order, ``both`` in both orders.

    Returns
    -------
    list[Outcome]
        The matches' outcomes ``(system a, system b, a's points)`` in play order.
    """
    candidate_of = systems_of(task)
    system_of = {cid: name for name, cid in candidate_of.items()}
    play_round = functools.partial(source.play_many, order=order, rng=rng)
    bracket = play_bracket(list(candidate_of.values()), rng, play_round, reshuffle=False)
    return [
        (system_of[match.a], system_of[match.b], match.outcome)
        for matches in bracket.rounds
        for match in matches
        if match.decided
    ]


def play_against(
    task: Task,
    source: MatchSource,
    rng: random.Random,
    opponent: str,
    systems: Sequence[str] | None = None,
    order: str = "random",
) -> list[Outcome]:
    """Every system of the task (or of ``systems``) against ``opponent``'s answer, in one batch.

    Parameters
    ----------
    task : Task
        The task (every candidate with a system).
    source : MatchSource
        Where the task's judgments come from.
    rng : random.Random
        The coins of the ``random`` order.
    opponent : str
        The system every other one plays (the anchor).
    systems : Sequence[str] or None, optional
        Only these systems play (default: all of the task's).
    order : str, default "random"
        How each match is shown (:mod:`rankkit.matches`): ``random`` in a seeded random order, so
        the opponent is not always in the same slot; ``both`` in both orders; ``given`` with the
        opponent always second.

    Returns
    -------
    list[Outcome]
        Each decided match's outcome ``(system, opponent, the system's points)``; empty when the
        task lacks the opponent.
    """
    candidate_of = systems_of(task)
    if opponent not in candidate_of:
        return []
    names = [s for s in (systems if systems is not None else candidate_of) if s in candidate_of and s != opponent]
    anchor_id = candidate_of[opponent]
    pairs = [(candidate_of[name], anchor_id) for name in names]
    outcomes = []
    for name, match in zip(names, source.play_many(pairs, round=1, order=order, rng=rng)):
        if not match.decided:
            continue
        outcome = match.outcome if match.a == candidate_of[name] else 1.0 - match.outcome
        outcomes.append((name, opponent, outcome))
    return outcomes


def play_all(
    tasks: Sequence[Task],
    play: Callable[[Task, MatchSource], list[Outcome]],
    judge: Judge,
    cache: Any,
    progress: bool,
    method: str,
) -> tuple[list[Outcome], Cost, list[str]]:
    """Play ``play`` on every task through :func:`rankkit.runner.map_tasks` (tasks concurrently when
    the judge has capacity), and gather the outcomes, the cost and each outcome's task id in task order.

    Parameters
    ----------
    tasks : Sequence[Task]
        The tasks.
    play : Callable[[Task, MatchSource], list[Outcome]]
        Plays one task (e.g. :func:`play_tournament` with its options bound).
    judge : Judge
        The judge.
    cache : Any
        The persistent cache (None: none).
    progress : bool
        Show a progress bar.
    method : str
        The leaderboard method, recorded as the matches' strategy.

    Returns
    -------
    tuple[list[Outcome], Cost, list[str]]
        The outcomes, their cost, and the task id of each outcome.
    """
    from tqdm import tqdm

    from rankkit.runner import map_tasks

    judge.check_tasks(tasks)  # before any judgment (the sim judge needs human scores)

    def work(task: Task, memo: JudgmentMemo) -> tuple[str, list[Outcome], Cost]:
        source = MatchSource(task, memo, strategy=method)
        return task.task_id, play(task, source), source.cost

    outcomes: list[Outcome] = []
    task_ids: list[str] = []
    total = Cost()
    for task_id, played, cost in tqdm(
        map_tasks(tasks, work, judge, cache),
        total=len(tasks),
        desc=inert(method),
        unit="task",
        file=sys.stderr,
        disable=not progress,
    ):
        outcomes += played
        task_ids += [task_id] * len(played)
        total.add(cost)
    return outcomes, total, task_ids
