"""Playing systems against each other: Arena-lite brackets and matches against one opponent, task by task.

Every match is asked through a :class:`~rankkit.matches.MatchSource` on the task's
:class:`~rankkit.matches.MatchGraph`, so a judgment already in the run's graph or in the cache is
never paid for twice; :func:`play_all` plays every task through the runner's task pool.
"""

from __future__ import annotations

import random
import sys
from typing import Any, Callable, Sequence

from rankkit.judges.base import Judge
from rankkit.leaderboard.board import SystemMatch, systems_of
from rankkit.matches import Cost, MatchSource
from rankkit.memo import JudgmentMemo
from rankkit.tasks import Task


def play_tournament(task: Task, source: MatchSource, rng: random.Random, order: str = "given") -> list[SystemMatch]:
    """Arena-lite on one task: a single-elimination tournament between the systems' answers.

    The bracket is a seeded shuffle of the systems; each round pairs neighbours in bracket order
    (one batch of duels per round), winners keep their bracket order, and with an odd number the
    last one gets a bye. A tied duel is recorded as a tie (half a win each way for BT); a seeded
    coin decides who advances. Each pair is shown as ``order`` says (:mod:`rankkit.matches`):
    ``given`` (default) as the shuffled bracket lists it, ``random`` in a seeded random order
    (coins from ``rng``), ``both`` in both orders.
    """
    candidate_of = systems_of(task)
    system_of = {cid: name for name, cid in candidate_of.items()}
    alive = list(candidate_of.values())
    rng.shuffle(alive)
    matches: list[SystemMatch] = []
    round_number = 0
    while len(alive) > 1:
        round_number += 1
        pairs = [(alive[i], alive[i + 1]) for i in range(0, len(alive) - 1, 2)]
        advancing = []
        for duel in source.play_many(pairs, round=round_number, order=order, rng=rng):
            matches.append(SystemMatch(task.task_id, system_of[duel.a], system_of[duel.b], duel.outcome, round_number))
            a_advances = duel.outcome == 1.0 or (duel.outcome == 0.5 and rng.random() < 0.5)
            advancing.append(duel.a if a_advances else duel.b)
        if len(alive) % 2:
            advancing.append(alive[-1])
        alive = advancing
    return matches


def play_against(task: Task, source: MatchSource, rng: random.Random, opponent: str,
                 systems: Sequence[str] | None = None, order: str = "random") -> list[SystemMatch]:
    """Every system of the task (or of ``systems``) against ``opponent``'s answer, in one batch.

    ``order`` says how each match is shown (:mod:`rankkit.matches`): ``random`` (default) in a
    seeded random order (coins from ``rng``), so the opponent is not always in the same slot;
    ``both`` in both orders; ``given`` with the opponent always second.
    Returns nothing when the task lacks the opponent.
    """
    candidate_of = systems_of(task)
    if opponent not in candidate_of:
        return []
    names = [s for s in (systems if systems is not None else candidate_of) if s in candidate_of and s != opponent]
    anchor_id = candidate_of[opponent]
    pairs = [(candidate_of[name], anchor_id) for name in names]
    matches = []
    for name, duel in zip(names, source.play_many(pairs, round=1, order=order, rng=rng)):
        outcome = duel.outcome if duel.a == candidate_of[name] else 1.0 - duel.outcome
        matches.append(SystemMatch(task.task_id, name, opponent, outcome, 1))
    return matches


def play_all(tasks: Sequence[Task], play: Callable[[Task, MatchSource], list[SystemMatch]], judge: Judge,
             cache: Any, progress: bool, method: str) -> tuple[list[SystemMatch], Cost]:
    """Play ``play`` on every task through :func:`rankkit.runner.map_tasks` (tasks concurrently when
    the judge has capacity), and gather the matches and the cost in task order."""
    from tqdm import tqdm

    from rankkit.runner import map_tasks

    def work(task: Task, memo: JudgmentMemo) -> tuple[list[SystemMatch], Cost]:
        source = MatchSource(task, memo, strategy=method)
        return play(task, source), source.cost

    matches: list[SystemMatch] = []
    total = Cost()
    for played, cost in tqdm(map_tasks(tasks, work, judge, cache), total=len(tasks), desc=method, unit="task",
                             file=sys.stderr, disable=not progress):
        matches += played
        total.add(cost)
    return matches, total
