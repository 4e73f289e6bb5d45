"""Playing systems against each other: Arena-lite brackets and matches against one opponent, task by task.

Every match is asked through a :class:`~rankkit.matches.MatchSource` on the task's
:class:`~rankkit.matches.MatchGraph`, so a judgment already in the run's graph or in the cache is
never paid for twice; :func:`play_all` plays every task through the runner's task pool.
"""

from __future__ import annotations

import functools
import random
import sys
from typing import Any, Callable, Sequence

from rankkit.brackets import play_bracket
from rankkit.judges.base import Judge
from rankkit.leaderboard.board import systems_of
from rankkit.matches import Cost, MatchGraph, MatchSource
from rankkit.ratings import Outcome
from rankkit.tasks import Task


def play_tournament(task: Task, source: MatchSource, rng: random.Random, debias: bool = False) -> list[Outcome]:
    """Arena-lite on one task: a single-elimination tournament between the systems' answers.

    The bracket (:func:`rankkit.brackets.play_bracket`) is a seeded shuffle of the systems, fixed
    once drawn; each round pairs neighbours in bracket order (one batch of duels per round),
    winners keep their bracket order, and with an odd number the last one gets a bye. A tied duel
    is recorded as a tie (half a win each way for BT); a seeded coin decides who advances. Each
    pair is shown as the shuffled bracket lists it (``order=given``), or in both orders with
    ``debias``. Returns the matches' outcomes ``(system a, system b, a's points)`` in play order.
    """
    candidate_of = systems_of(task)
    system_of = {cid: name for name, cid in candidate_of.items()}
    play_round = functools.partial(source.play_many, order="both" if debias else "given")
    bracket = play_bracket(list(candidate_of.values()), rng, play_round, reshuffle=False)
    return [(system_of[duel.a], system_of[duel.b], duel.outcome) for duels in bracket.rounds for duel in duels]


def play_against(task: Task, source: MatchSource, rng: random.Random, opponent: str,
                 systems: Sequence[str] | None = None, debias: bool = False) -> list[Outcome]:
    """Every system of the task (or of ``systems``) against ``opponent``'s answer, in one batch.

    Without ``debias`` each match shows the two answers in a seeded random order (``order=random``,
    coins from ``rng``), so the opponent is not always in the same slot; with it, in both orders.
    Returns each match's outcome ``(system, opponent, the system's points)``; nothing when the
    task lacks the opponent.
    """
    candidate_of = systems_of(task)
    if opponent not in candidate_of:
        return []
    names = [s for s in (systems if systems is not None else candidate_of) if s in candidate_of and s != opponent]
    anchor_id = candidate_of[opponent]
    pairs = [(candidate_of[name], anchor_id) for name in names]
    matches = []
    for name, duel in zip(names, source.play_many(pairs, round=1, order="both" if debias else "random", rng=rng)):
        outcome = duel.outcome if duel.a == candidate_of[name] else 1.0 - duel.outcome
        matches.append((name, opponent, outcome))
    return matches


def play_all(tasks: Sequence[Task], play: Callable[[Task, MatchSource], list[Outcome]], judge: Judge,
             cache: Any, graphs: dict[str, MatchGraph] | None, progress: bool, method: str
             ) -> tuple[list[Outcome], Cost]:
    """Play ``play`` on every task through :func:`rankkit.runner.map_tasks` (tasks concurrently when
    the judge has capacity), and gather the outcomes and the cost in task order."""
    from tqdm import tqdm

    from rankkit.runner import map_tasks

    def work(task: Task, engine: Any) -> tuple[list[Outcome], Cost]:
        cost = Cost()
        source = MatchSource(task, task_graph(graphs, task), judge, engine.store, cost, strategy=method, engine=engine)
        return play(task, source), cost

    matches: list[Outcome] = []
    total = Cost()
    for played, cost in tqdm(map_tasks(tasks, work, judge, cache), total=len(tasks), desc=method, unit="task",
                             file=sys.stderr, disable=not progress):
        matches += played
        total.add(cost)
    return matches, total


def task_graph(graphs: dict[str, MatchGraph] | None, task: Task) -> MatchGraph:
    """The run's graph for the task (created on first use), or a fresh one when not sharing."""
    if graphs is None:
        return MatchGraph(task)
    if task.task_id not in graphs:
        graphs[task.task_id] = MatchGraph(task)
    return graphs[task.task_id]

