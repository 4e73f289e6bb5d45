"""Human votes on a leaderboard's pairs: the VOTES file and PPI++ ratings from it (``docs/human-labels.md``).

A VOTES file (``.jsonl`` or ``.csv``, untrusted) holds either kind of row:

* a pair vote ``{"task_id": "t1", "a": "c1", "b": "c2", "winner": "c1"}`` — ``winner`` is ``a``,
  ``b``, or null (an empty cell in CSV) for a tie;
* a grade ``{"task_id": "t1", "candidate": "c1", "score": 4}``.

``a``, ``b`` and ``candidate`` name a candidate of the task by id, or by the system that wrote it.
"""

from __future__ import annotations

import csv
import io
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Any

from rankkit.data.file_checks import MAX_FILE_BYTES, check_tree
from rankkit.data.frames import json_object_line
from rankkit.data.tasks import Task
from rankkit.errors import TaskFormatError
from rankkit.leaderboard.board import Leaderboard, LeaderboardError, systems_of
from rankkit.stats.intervals import DEFAULT_LEVEL
from rankkit.stats.ppi import PPIResult, pair_labels, ppi_bradley_terry, ppi_mean

#: A vote's names (task ids, candidate ids, system names) are at most this long.
MAX_NAME_CHARS = 1000
PAIR_FIELDS = ("task_id", "a", "b", "winner")
GRADE_FIELDS = ("task_id", "candidate", "score")


@dataclass(frozen=True)
class PairVote:
    """One human's verdict on a pair; ``winner`` None is a tie; ``line`` is where the file holds it."""

    task_id: str
    a: str
    b: str
    winner: str | None
    line: int

    @property
    def points(self) -> float:
        """``a``'s points: 1 won, ½ tie, 0 lost."""
        return 0.5 if self.winner is None else float(self.winner == self.a)


@dataclass(frozen=True)
class GradeVote:
    """One human's grade of one candidate."""

    task_id: str
    candidate: str
    score: float
    line: int


@dataclass(frozen=True)
class HumanVotes:
    """The rows of one VOTES file; ``path`` names it in errors."""

    path: str
    pairs: tuple[PairVote, ...] = ()
    grades: tuple[GradeVote, ...] = ()


# ---------------------------------------------------------------------------------------------
# Reading


def _name(row: Mapping[str, Any], field: str, path: Path, line: int) -> str:
    value = row.get(field)
    if isinstance(value, int) and not isinstance(value, bool) and field == "task_id":
        value = str(value)  # task files allow integer ids
    if not isinstance(value, str) or not value.strip():
        raise TaskFormatError(path, line, field, f"expected a non-empty string, got {value!r:.60}")
    if len(value) > MAX_NAME_CHARS:
        raise TaskFormatError(path, line, field, f"{len(value)} characters, more than the {MAX_NAME_CHARS} allowed")
    return value


def _score(value: Any, path: Path, line: int) -> float:
    if isinstance(value, str) and path.suffix.lower() == ".csv":  # a CSV cell is text; JSON says what it is
        try:
            value = float(value)
        except ValueError:
            raise TaskFormatError(path, line, "score", f"expected a number, got {value!r:.60}") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise TaskFormatError(path, line, "score", f"expected a finite number, got {value!r:.60}")
    return float(value)


def _vote(row: Mapping[str, Any], path: Path, line: int) -> PairVote | GradeVote:
    """One row as a pair vote or a grade, whichever its fields say; every field checked."""
    is_pair = "a" in row or "b" in row or "winner" in row
    fields = PAIR_FIELDS if is_pair else GRADE_FIELDS
    for field in fields:
        if field not in row:
            raise TaskFormatError(path, line, field, f"missing; a vote row has {', '.join(fields)}")
    task_id = _name(row, "task_id", path, line)
    if not is_pair:
        return GradeVote(task_id, _name(row, "candidate", path, line), _score(row["score"], path, line), line)
    a, b = _name(row, "a", path, line), _name(row, "b", path, line)
    if a == b:
        raise TaskFormatError(path, line, "b", f"a pair needs two different candidates, got {a!r:.60} twice")
    winner = row["winner"]
    if winner == "":  # an empty CSV cell
        winner = None
    if winner is not None and winner not in (a, b):
        raise TaskFormatError(
            path, line, "winner", f"expected {a!r:.60}, {b!r:.60} or null (a tie), got {winner!r:.60}"
        )
    return PairVote(task_id, a, b, winner, line)


def _csv_row(path: Path, line: int, row: dict[str | None, Any]) -> tuple[int, dict[str, Any]]:
    """A CSV row with as many cells as the header: a short row would read a missing winner as a tie."""
    if None in row:
        raise TaskFormatError(path, line, None, "more cells than the header has columns")
    missing = [name for name, value in row.items() if value is None]
    if missing:
        raise TaskFormatError(path, line, missing[0], "fewer cells than the header has columns")
    return line, row


def _rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """``(line, row)`` of a JSONL or CSV file (the extension decides)."""
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise TaskFormatError(path, None, None, f"{size} bytes, more than the {MAX_FILE_BYTES} a file may have")
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise TaskFormatError(path, None, None, f"not valid UTF-8 (byte {err.start + 1}); save it as UTF-8") from None
    if path.suffix.lower() == ".jsonl":
        rows = []
        for number, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                row = json_object_line(path, number, line)
                check_tree(row, path, number)
                rows.append((number, row))
        return rows
    if path.suffix.lower() == ".csv":
        reader = csv.DictReader(io.StringIO(text, newline=""))
        try:
            return [_csv_row(path, reader.line_num, row) for row in reader]
        except csv.Error as err:
            raise TaskFormatError(path, reader.line_num, None, f"malformed CSV: {err}") from None
    raise TaskFormatError(path, None, None, "a VOTES file is .jsonl or .csv")


def read_votes(path: str | PathLike[str]) -> HumanVotes:
    """The pair votes and grades of a VOTES file, every row checked.

    Raises
    ------
    TaskFormatError
        Naming the file, the line and the field of the first bad row (exit code 2).
    """
    path = Path(path)
    pairs, grades = [], []
    for line, row in _rows(path):
        vote = _vote(row, path, line)
        (pairs if isinstance(vote, PairVote) else grades).append(vote)
    if not pairs and not grades:
        raise TaskFormatError(path, None, None, "no votes in the file")
    return HumanVotes(str(path), tuple(pairs), tuple(grades))


# ---------------------------------------------------------------------------------------------
# Votes meet the leaderboard


def system_resolver(tasks: Sequence[Task], where: str):
    """A function ``(task_id, name, line, field) -> system`` reading ``name`` as a candidate id or a system."""
    by_task = {}
    for task in tasks:
        systems = systems_of(task)
        by_task[str(task.task_id)] = {**{system: system for system in systems}, **{c: s for s, c in systems.items()}}

    def system(task_id: str, name: str, line: int, field: str) -> str:
        if task_id not in by_task:
            raise TaskFormatError(where, line, "task_id", f"{task_id!r:.60} is not a task of the data")
        if name not in by_task[task_id]:
            raise TaskFormatError(where, line, field, f"{name!r:.60} is neither a candidate nor a system of the task")
        return by_task[task_id][name]

    return system


def judged_pairs(board: Leaderboard) -> dict[tuple[str, str, str], float]:
    """The judge's mean points per ``(task, a, b)`` with ``a < b`` (both orders of a pair averaged)."""
    if len(board.match_tasks) != len(board.matches):
        raise LeaderboardError("the leaderboard records no task per match; rebuild it to pair human votes with it")
    points: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for (a, b, outcome), task in zip(board.matches, board.match_tasks):
        key, flipped = ((task, a, b), False) if a < b else ((task, b, a), True)
        points[key].append(1 - outcome if flipped else outcome)
    return {key: sum(values) / len(values) for key, values in points.items()}


@dataclass(frozen=True)
class PairedVotes:
    """Votes beside the judge's verdicts on the same pairs, as :func:`ppi_bradley_terry` takes them.

    ``labelled`` rows are ``(a, b, human points, judge points)``; ``unlabelled`` rows ``(a, b, judge
    points)`` for the judged pairs no human voted on.
    """

    systems: tuple[str, ...]
    labelled: tuple[tuple[str, str, float, float], ...]
    unlabelled: tuple[tuple[str, str, float], ...]


def pair_votes(board: Leaderboard, tasks: Sequence[Task], votes: HumanVotes) -> PairedVotes:
    """The board's judged pairs split into those with human votes (each vote one row) and the rest.

    Raises
    ------
    TaskFormatError
        A vote on an unknown task or candidate, or on a pair the board's judge never judged.
    """
    judged = judged_pairs(board)
    system = system_resolver(tasks, votes.path)
    labelled, voted = [], set()
    for vote in votes.pairs:
        a = system(vote.task_id, vote.a, vote.line, "a")
        b = system(vote.task_id, vote.b, vote.line, "b")
        key, points = ((vote.task_id, a, b), vote.points) if a < b else ((vote.task_id, b, a), 1 - vote.points)
        if key not in judged:
            raise TaskFormatError(votes.path, vote.line, "b", f"the judge never compared {a!r:.60} with {b!r:.60} here")
        labelled.append((key[1], key[2], points, judged[key]))
        voted.add(key)
    unlabelled = tuple((a, b, points) for (task, a, b), points in judged.items() if (task, a, b) not in voted)
    return PairedVotes(tuple(board.names), tuple(labelled), unlabelled)


def ppi_ratings(paired: PairedVotes, level: float = DEFAULT_LEVEL) -> dict[str, PPIResult]:
    """Each system's PPI++ Bradley–Terry rating (Elo scale) from :func:`pair_votes`' split."""
    index = {name: i for i, name in enumerate(paired.systems)}

    def labels(rows: Sequence[tuple], column: int):
        return pair_labels([index[r[0]] for r in rows], [index[r[1]] for r in rows], [r[column] for r in rows])

    return ppi_bradley_terry(
        paired.systems,
        labels(paired.labelled, 2),
        [row[3] for row in paired.labelled],
        labels(paired.unlabelled, 2),
        level=level,
    )


def ppi_win_rates(paired: PairedVotes, level: float = DEFAULT_LEVEL) -> dict[str, PPIResult]:
    """Each system's PPI++ share of points over the pairs it played (ties ½), from its own side."""
    out = {}
    for name in paired.systems:
        mine = [(h, j) if a == name else (1 - h, 1 - j) for a, b, h, j in paired.labelled if name in (a, b)]
        theirs = [p if a == name else 1 - p for a, b, p in paired.unlabelled if name in (a, b)]
        if len(mine) >= 2:
            out[name] = ppi_mean([h for h, _ in mine], [j for _, j in mine], theirs, level=level)
    return out


def ppi_scores(
    tasks: Sequence[Task],
    votes: HumanVotes,
    judge_scores: Mapping[tuple[str, str], float],
    level: float = DEFAULT_LEVEL,
) -> dict[str, PPIResult]:
    """Each system's PPI++ mean score from the judge's grades ``{(task_id, candidate_id): score}`` and
    the human grades (a system with fewer than 2 human grades is left out).

    Raises
    ------
    TaskFormatError
        A grade of an unknown task or candidate, or of a candidate the judge did not grade.
    """
    system = system_resolver(tasks, votes.path)
    candidate_of = {(str(t.task_id), s): c for t in tasks for s, c in systems_of(t).items()}
    human: dict[str, list[tuple[float, float]]] = defaultdict(list)
    graded = set()
    for grade in votes.grades:
        name = system(grade.task_id, grade.candidate, grade.line, "candidate")
        key = (grade.task_id, candidate_of[(grade.task_id, name)])
        if key not in judge_scores:
            raise TaskFormatError(votes.path, grade.line, "candidate", "the judge did not grade this candidate")
        human[name].append((grade.score, judge_scores[key]))
        graded.add(key)
    system_of = {(str(t.task_id), c): s for t in tasks for s, c in systems_of(t).items()}
    judge_only: dict[str, list[float]] = defaultdict(list)
    for key, score in judge_scores.items():
        if key not in graded and key in system_of:
            judge_only[system_of[key]].append(score)
    return {
        name: ppi_mean([h for h, _ in rows], [j for _, j in rows], judge_only[name], level=level)
        for name, rows in human.items()
        if len(rows) >= 2
    }
