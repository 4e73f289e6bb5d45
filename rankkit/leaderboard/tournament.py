"""Playing systems against each other: Arena-lite brackets and matches against one opponent, task by task.

Matches go through a :class:`~rankkit.strategies.matches.MatchSource` over the run's memo, so no judgment
is paid for twice.
"""

from __future__ import annotations

import functools
import random
import sys
from collections.abc import Callable, Sequence
from typing import Any

from rankkit.data.formatting import inert
from rankkit.data.tasks import Task
from rankkit.judges.base import Judge
from rankkit.judgments.memo import JudgmentMemo
from rankkit.leaderboard.board import systems_of
from rankkit.leaderboard.graded import AS_BINARY, LevelledOutcome, VerdictWeighting, match_records
from rankkit.stats.ratings import Outcome
from rankkit.strategies.brackets import play_bracket
from rankkit.strategies.matches import Cost, MatchSource


def play_tournament(
    task: Task,
    source: MatchSource,
    rng: random.Random,
    order: str = "given",
    weighting: VerdictWeighting = AS_BINARY,
) -> list[LevelledOutcome]:
    """Arena-lite on one task: a single-elimination tournament between the systems' answers.

    The bracket is a seeded shuffle; neighbours meet each round (one batch per round), an odd one
    out gets a bye, and a tie is recorded as a tie while a seeded coin decides who advances.
    ``order`` is ``given`` (as the bracket lists it), ``random`` or ``both``. Returns the outcomes
    ``(system a, system b, a's points)`` in play order, each with its level (a match counted by its
    verdicts' levels as ``weighting`` says: :func:`~rankkit.leaderboard.graded.match_records`).
    """
    candidate_of = systems_of(task)
    system_of = {cid: name for name, cid in candidate_of.items()}
    play_round = functools.partial(source.play_many, order=order, rng=rng)
    bracket = play_bracket(list(candidate_of.values()), rng, play_round, reshuffle=False)
    lengths = {candidate.id: candidate.length for candidate in task.candidates}
    return [
        record
        for matches in bracket.rounds
        for match in matches
        if match.decided
        for record in match_records(match, system_of[match.a], system_of[match.b], weighting, lengths)
    ]


def play_against(
    task: Task,
    source: MatchSource,
    rng: random.Random,
    opponent: str,
    systems: Sequence[str] | None = None,
    order: str = "random",
    weighting: VerdictWeighting = AS_BINARY,
) -> list[LevelledOutcome]:
    """Every system of the task (or of ``systems``) against ``opponent``'s answer, in one batch.

    ``order`` ``random`` varies the opponent's slot, ``both`` shows both orders, ``given`` puts the
    opponent second. Returns ``(system, opponent, the system's points)`` per decided match with its
    level from the system's side; empty when the task lacks the opponent.
    """
    candidate_of = systems_of(task)
    if opponent not in candidate_of:
        return []
    names = [s for s in (systems if systems is not None else candidate_of) if s in candidate_of and s != opponent]
    anchor_id = candidate_of[opponent]
    pairs = [(candidate_of[name], anchor_id) for name in names]
    lengths = {candidate.id: candidate.length for candidate in task.candidates}
    outcomes = []
    for name, match in zip(names, source.play_many(pairs, round=1, order=order, rng=rng)):
        if not match.decided:
            continue
        a, b = (name, opponent) if match.a == candidate_of[name] else (opponent, name)
        for (first, _, points), level in match_records(match, a, b, weighting, lengths):
            outcomes.append(_seen_from(name, opponent, first, points, level))
    return outcomes


def play_pairs(
    task: Task,
    source: MatchSource,
    rng: random.Random,
    pairs: Sequence[tuple[str, str]],
    order: str = "given",
    weighting: VerdictWeighting = AS_BINARY,
) -> list[LevelledOutcome]:
    """The named system pairs ``(a, b)`` of the task, in one batch (``a`` first with ``order`` ``given``).

    Returns ``(a, b, a's points)`` per decided match with its level from a's side; pairs naming a system the task lacks are skipped.
    """
    candidate_of = systems_of(task)
    wanted = [(a, b) for a, b in pairs if a in candidate_of and b in candidate_of and a != b]
    lengths = {candidate.id: candidate.length for candidate in task.candidates}
    matches = source.play_many([(candidate_of[a], candidate_of[b]) for a, b in wanted], round=1, order=order, rng=rng)
    outcomes = []
    for (a, b), match in zip(wanted, matches):
        if not match.decided:
            continue
        first, second = (a, b) if match.a == candidate_of[a] else (b, a)
        for (shown_first, _, points), level in match_records(match, first, second, weighting, lengths):
            outcomes.append(_seen_from(a, b, shown_first, points, level))
    return outcomes


def _seen_from(a: str, b: str, shown_first: str, points: float, level: int | None) -> LevelledOutcome:
    """A record ``((a, b, a's points), level from a's side)`` of a comparison that showed ``shown_first`` first."""
    if shown_first == a:
        return (a, b, points), level
    return (a, b, 1.0 - points), None if level is None else -level


def play_all(
    tasks: Sequence[Task],
    play: Callable[[Task, MatchSource], list[LevelledOutcome]],
    judge: Judge,
    cache: Any,
    progress: bool,
    method: str,
) -> tuple[list[Outcome], Cost, list[str], list[int | None]]:
    """Play ``play`` on every task (concurrently when the judge can): outcomes, their cost, each outcome's task id
    and level.

    ``method`` is recorded as the matches' strategy; ``cache`` None means none.
    """
    from tqdm import tqdm

    from rankkit.runs.runner import map_tasks

    judge.check_tasks(tasks)  # before any judgment (the sim judge needs human scores)

    def work(task: Task, memo: JudgmentMemo) -> tuple[str, list[LevelledOutcome], Cost]:
        source = MatchSource(task, memo, strategy=method)
        return task.task_id, play(task, source), source.cost

    outcomes: list[Outcome] = []
    task_ids: list[str] = []
    levels: list[int | None] = []
    total = Cost()
    for task_id, played, cost in tqdm(
        map_tasks(tasks, work, judge, cache),
        total=len(tasks),
        desc=inert(method),
        unit="task",
        file=sys.stderr,
        disable=not progress,
    ):
        outcomes += [outcome for outcome, _ in played]
        levels += [level for _, level in played]
        task_ids += [task_id] * len(played)
        total.add(cost)
    return outcomes, total, task_ids, levels
