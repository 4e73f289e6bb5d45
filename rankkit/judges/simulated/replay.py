"""``replay``: a judge that answers comparisons from recorded judgments; no LLM is called.

Answers each request by its exact presentation order; a miss is never guessed.
More in ``docs/judges-replay-panels.md``.
"""

from __future__ import annotations

import functools
import hashlib
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rankkit.data.file_checks import check_tree
from rankkit.data.file_parsing import json_object_line
from rankkit.data.specs import SpecError
from rankkit.data.tasks import MAX_POINTS_LIMIT, Candidate, Task, finite_number
from rankkit.errors import TaskFormatError
from rankkit.judges.backends import Argument, Backend, Option, Settings, check_value
from rankkit.judges.base import Judge, JudgeError
from rankkit.judgments.judge_protocol import Capabilities
from rankkit.judgments.values import (
    CHOICE_KIND,
    MAX_LABELS,
    RANKING_KIND,
    GroupChoice,
    GroupRanking,
    ParseStatus,
    Verdict,
    Winner,
)

ON_MISS = ("error", "tie")
SCORE_SOURCES = ("recorded", "verdict")
TIE = "tie"

#: The spec options (all four are the judge's identity: they choose which rows answer).
REPLAY_OPTIONS: tuple[Option, ...] = (
    Option("judge", str, None, "only rows of this judge label"),
    Option("method", str, None, "only rows of this method label"),
    Option("on_miss", str, "error", "an unrecorded comparison: error, or a tie", choices=ON_MISS),
    Option("scores", str, "recorded", "grades: the recorded scores, or 1/0 from the verdict", choices=SCORE_SOURCES),
)


@dataclass(frozen=True)
class RecordingRow:
    """One pairwise row of a recording file as read: ``winner`` is a candidate id, ``"tie"`` or None (unparsed);
    the grades are on the recorded judge's own scale."""

    winner: str | None
    grade_a: float | None = None
    grade_b: float | None = None
    probability: float | None = None  # P(a, shown first, wins), when the recording states it
    judge: str | None = None
    method: str | None = None


RecordKey = tuple[str, str, str]  # (task_id, id shown first, id shown second)


# ---------------------------------------------------------------------------------------------
# Reading recordings


#: The largest grade a recording may hold, in absolute value: the widest scale a task may have
#: (``meta.max_points``). A recording's grades are on the recorded judge's own scale, which the
#: file does not state, so this is the range they are checked against.
MAX_RECORDED_GRADE = MAX_POINTS_LIMIT


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _recorded_number(path: Path, line: int, name: str, value: Any, low: float, high: float) -> float:
    """``value`` as a finite float in [low, high]; else a :class:`TaskFormatError` naming the field."""
    number = finite_number(value)
    if number is None:
        raise TaskFormatError(path, line, name, f"expected a finite number, got {_short(value)}")
    if not low <= number <= high:
        raise TaskFormatError(path, line, name, f"{number:g} is outside [{low:g}, {high:g}]")
    return number


def _optional_number(path: Path, line: int, row: dict, name: str) -> float | None:
    value = row.get(name)
    if value is None:
        return None
    return _recorded_number(path, line, name, value, -MAX_RECORDED_GRADE, MAX_RECORDED_GRADE)


def _number_list(path: Path, line: int, row: dict, name: str, length: int, low: float, high: float) -> None:
    """Refuse ``row[name]`` unless it is null or a list of ``length`` finite numbers in [low, high]."""
    values = row.get(name)
    if values is None:
        return
    if not isinstance(values, list) or len(values) != length:
        raise TaskFormatError(
            path,
            line,
            name,
            f"expected a list of {length} numbers, one per shown candidate (or null), got {_short(values)}",
        )
    for index, value in enumerate(values):
        _recorded_number(path, line, f"{name}[{index}]", value, low, high)


def _check_labels(path: Path, line: int, row: dict) -> None:
    """Refuse ``judge``/``method`` labels that are not a string, number or null."""
    for name in ("judge", "method"):
        if isinstance(row.get(name), (list, dict)):
            raise TaskFormatError(path, line, name, f"expected a string or null, got {_short(row[name])}")


def check_pair_row(path: Path, number: int, row: dict[str, Any]) -> None:
    """Refuse a malformed pairwise row (:class:`TaskFormatError` naming file, line ``number`` and field).

    Needs ``task_id``, distinct ``a`` and ``b``, ``winner`` one of them, ``"tie"`` or null, grades
    finite within ±:data:`MAX_RECORDED_GRADE` or null, and ``probability`` (P(a wins)) in [0, 1] or null.
    """
    for name in ("task_id", "a", "b"):
        if not isinstance(row.get(name), (str, int)) or isinstance(row.get(name), bool):
            raise TaskFormatError(path, number, name, "missing field or not a string")
    if str(row["a"]) == str(row["b"]):
        raise TaskFormatError(path, number, "b", f"the same candidate as a ({row['a']!r})")
    if "winner" not in row:
        raise TaskFormatError(path, number, "winner", "missing field (use null for an unparsed answer)")
    winner = row["winner"]
    if winner is not None and (
        isinstance(winner, bool)
        or not isinstance(winner, (str, int))
        or str(winner) not in (str(row["a"]), str(row["b"]), TIE)
    ):
        raise TaskFormatError(
            path, number, "winner", f"{_short(winner)} is neither a ({row['a']!r}), b ({row['b']!r}), 'tie' nor null"
        )
    for name in ("score_a", "score_b"):
        _optional_number(path, number, row, name)
    if row.get("probability") is not None:
        _recorded_number(path, number, "probability", row["probability"], 0.0, 1.0)
    _check_labels(path, number, row)


def read_rows(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line number, row)`` for every non-empty line, each checked (:class:`TaskFormatError` on a problem)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"replay: recorded judgments file not found: {path}")
    with path.open("rb") as handle:  # bytes, so a bad byte is reported with its line
        for number, data in enumerate(handle, start=1):
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as err:
                raise TaskFormatError(
                    path,
                    number,
                    None,
                    f"not valid UTF-8 (byte 0x{data[err.start]:02x} at byte {err.start + 1}); save the file as UTF-8",
                ) from None
            if not text.strip():
                continue
            row = json_object_line(path, number, text)
            check_tree(row, path, number)  # no NaN, Infinity or 1e999 score; no absurd nesting
            if "shown" in row:  # a k-way judgment (see ``docs/judges-replay-panels.md``)
                check_kway_row(path, number, row)
            else:
                check_pair_row(path, number, row)
            yield number, row


def recorded_labels(path: str | Path) -> Counter:
    """Row counts by ``(judge, method)`` label pair in a recording."""
    return Counter((row.get("judge"), row.get("method")) for _, row in read_rows(path))


def _is_id(value: Any) -> bool:
    return isinstance(value, (str, int)) and not isinstance(value, bool)


def check_kway_row(path: Path, number: int, row: dict[str, Any]) -> None:
    """Refuse a malformed k-way row (:class:`TaskFormatError` naming file, line ``number`` and field).

    Needs ``shown`` 2 to 8 distinct ids, ``kind`` choice or ranking, ``chosen``/``ranking`` among them,
    ``probabilities`` in [0, 1] summing to at most 1, ``grades`` within ±:data:`MAX_RECORDED_GRADE`
    (each null allowed).
    """
    shown = row.get("shown")
    if not _is_id(row.get("task_id")):
        raise TaskFormatError(path, number, "task_id", "missing field or not a string")
    if not (
        isinstance(shown, list)
        and 2 <= len(shown) <= MAX_LABELS
        and all(_is_id(c) for c in shown)
        and len({str(c) for c in shown}) == len(shown)
    ):
        raise TaskFormatError(path, number, "shown", f"expected a list of 2 to {MAX_LABELS} distinct candidate ids")
    kind = row.get("kind", CHOICE_KIND)
    if kind not in (CHOICE_KIND, RANKING_KIND):
        raise TaskFormatError(path, number, "kind", f"expected {CHOICE_KIND!r} or {RANKING_KIND!r}, got {_short(kind)}")
    ids = [str(c) for c in shown]
    if kind == CHOICE_KIND:
        chosen = row.get("chosen")
        if "chosen" not in row or (chosen is not None and (not _is_id(chosen) or str(chosen) not in ids)):
            raise TaskFormatError(path, number, "chosen", "missing, or not one of the shown ids (null when unparsed)")
    else:
        ranking = row.get("ranking")
        if "ranking" not in row or (
            ranking is not None
            and not (
                isinstance(ranking, list)
                and all(_is_id(c) for c in ranking)
                and sorted(map(str, ranking)) == sorted(ids)
            )
        ):
            raise TaskFormatError(
                path, number, "ranking", "missing, or not a list of every shown id exactly once (null when unparsed)"
            )
    _number_list(path, number, row, "probabilities", len(shown), 0.0, 1.0)
    if row.get("probabilities") is not None and sum(row["probabilities"]) > 1 + 1e-6:
        raise TaskFormatError(path, number, "probabilities", f"sum to {sum(row['probabilities']):g}, more than 1")
    _number_list(path, number, row, "grades", len(shown), -MAX_RECORDED_GRADE, MAX_RECORDED_GRADE)
    _check_labels(path, number, row)


def load_recorded(
    path: str | Path, judge: str | None = None, method: str | None = None
) -> dict[RecordKey, RecordingRow]:
    """The recorded pairwise judgments by ``(task_id, first id, second id)``; ``judge``/``method`` filter (None: all).

    Raises
    ------
    SpecError
        The filter matches nothing, or a comparison is recorded twice after filtering.
    """
    path = Path(path)
    table: dict[RecordKey, RecordingRow] = {}
    labels: Counter = Counter()
    for number, row in read_rows(path):
        labels[(row.get("judge"), row.get("method"))] += 1
        if "shown" in row:
            continue  # k-way rows: load_recorded_kway
        if judge is not None and row.get("judge") != judge:
            continue
        if method is not None and row.get("method") != method:
            continue
        key = (str(row["task_id"]), str(row["a"]), str(row["b"]))
        if key in table:
            raise SpecError(
                f"replay: {path} records task {key[0]!r} with {key[1]!r} shown first more than once "
                f"(line {number}); the file holds {_describe_labels(recorded_labels(path))} — choose one with "
                f"judge=NAME,method=NAME"
            )
        winner = row["winner"]
        table[key] = RecordingRow(
            winner=None if winner is None else str(winner),
            grade_a=_optional_number(path, number, row, "score_a"),
            grade_b=_optional_number(path, number, row, "score_b"),
            probability=None if row.get("probability") is None else float(row["probability"]),
            judge=row.get("judge"),
            method=row.get("method"),
        )
    if not table:
        wanted = ", ".join(f"{k}={v}" for k, v in (("judge", judge), ("method", method)) if v is not None)
        raise SpecError(
            f"replay: no rows of {path} match {wanted or 'anything'}; the file holds {_describe_labels(labels)}"
        )
    return table


#: (task_id, kind, ids in the order shown)
KwayKey = tuple[str, str, tuple[str, ...]]


def load_recorded_kway(
    path: str | Path, judge: str | None = None, method: str | None = None
) -> dict[KwayKey, dict[str, Any]]:
    """The recorded k-way rows by ``(task_id, kind, ids shown)``; empty when none.

    Raises ``SpecError`` when one is recorded twice after filtering.
    """
    table: dict[KwayKey, dict[str, Any]] = {}
    for number, row in read_rows(path):
        if (
            "shown" not in row
            or (judge is not None and row.get("judge") != judge)
            or (method is not None and row.get("method") != method)
        ):
            continue
        key = (str(row["task_id"]), row.get("kind", CHOICE_KIND), tuple(str(c) for c in row["shown"]))
        if key in table:
            raise SpecError(
                f"replay: {path} records the {key[1]} of task {key[0]!r} shown as {list(key[2])} more "
                f"than once (line {number}); choose one judge and method with judge=NAME,method=NAME"
            )
        table[key] = row
    return table


def _describe_labels(labels: Counter) -> str:
    judges = sorted({str(j) for j, _ in labels})
    methods = sorted({str(m) for _, m in labels})
    return f"judges {', '.join(judges)} and methods {', '.join(methods)}"


def file_sha256(path: str | Path) -> str:
    """The hex SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# ---------------------------------------------------------------------------------------------
# The judge


class ReplayJudge(Judge):
    """Answers ``compare`` from a recording; see ``docs/judges-replay-panels.md``.

    judge, method: label filters (None keeps every row).
    on_miss: ``error`` raises JudgeError on a miss; ``tie`` answers a failed-status tie.
    scores: ``recorded`` uses a row's grades when present; ``verdict`` derives them from the verdict.
    """

    backend = "replay"
    version = "1"

    def __init__(
        self,
        path: str | Path,
        judge: str | None = None,
        method: str | None = None,
        on_miss: str = "error",
        scores: str = "recorded",
    ):
        for option, value in zip(REPLAY_OPTIONS[2:], (on_miss, scores)):
            check_value(option, value, "replay")
        self.path = Path(path)
        self.judge_label = judge
        self.method = method
        self.on_miss = on_miss
        self.scores = scores
        self.hits = 0
        self.misses: Counter = Counter()

    # The recording is read (and hashed) on first use, not in the constructor, which only stores
    # parameters: building a judge to describe it or check a spec costs nothing.
    @functools.cached_property
    def table(self) -> dict[tuple[str, str, str], Any]:
        """The recorded pairwise judgments by ``(task_id, first id, second id)``, read on first use."""
        return load_recorded(self.path, self.judge_label, self.method)

    @functools.cached_property
    def kway_table(self) -> dict[KwayKey, dict[str, Any]]:
        """The recorded k-way rows by ``(task_id, kind, ids shown)``, read on first use."""
        return load_recorded_kway(self.path, self.judge_label, self.method)

    @property
    def capabilities(self) -> Capabilities:  # type: ignore[override]
        """Comparisons; k-way judgments when the recording holds some (read on first use)."""
        return Capabilities(pointwise=False, kway=bool(self.kway_table))

    @functools.cached_property
    def sha256(self) -> str:
        """The hex SHA-256 of the recording, read on first use."""
        return file_sha256(self.path)

    def request_key(self, task: Task, *candidates: Candidate) -> list[Any]:
        """The texts' key plus the candidates' ids (recorded verdicts are looked up by id)."""
        return [*super().request_key(task, *candidates), task.task_id, *(c.id for c in candidates)]

    def fingerprint_fields(self) -> dict[str, Any]:
        """The recording's SHA-256, the label filter and both options (not the path)."""
        return {
            "sha256": self.sha256,
            "judge": self.judge_label,
            "method": self.method,
            "on_miss": self.on_miss,
            "scores": self.scores,
        }

    @property
    def description(self) -> str:
        labels = ",".join(f"{k}={v}" for k, v in (("judge", self.judge_label), ("method", self.method)) if v)
        return f"replay:{self.path.name}" + (f" ({labels})" if labels else "")

    def compare(self, task: Task, first: Candidate, second: Candidate) -> Verdict:
        """The recorded verdict of exactly ``(task_id, first.id, second.id)``; a miss raises or ties (``on_miss``)."""
        record = self.table.get((task.task_id, first.id, second.id))
        if record is None:
            return self._miss(task, first, second, "unrecorded")
        if record.winner is None:
            return self._miss(task, first, second, "unparsed")
        self.hits += 1
        winner = Winner.TIE if record.winner == TIE else (Winner.FIRST if record.winner == first.id else Winner.SECOND)
        if self.scores == "recorded" and record.grade_a is not None and record.grade_b is not None:
            first_grade, second_grade = record.grade_a, record.grade_b
        else:
            first_grade, second_grade = verdict_scores(task, winner)
        raw = f"recorded {record.judge or '?'}/{record.method or '?'}: winner {record.winner}"
        return Verdict(
            first_grade=first_grade,
            second_grade=second_grade,
            winner=winner,
            raw=raw,
            probability=record.probability,
            extras={"replay": "recorded"},
        )

    def choose(self, task: Task, candidates: Sequence[Candidate]) -> GroupChoice:
        """The recorded choice among exactly these ids in this order; a miss raises or fails (``on_miss``)."""
        shown = tuple(c.id for c in candidates)
        row = self.kway_table.get((task.task_id, CHOICE_KIND, shown))
        answer = None if row is None else row.get("chosen")
        if answer is None:
            return self._kway_miss(task, shown, CHOICE_KIND, "unrecorded" if row is None else "unparsed")
        self.hits += 1
        probabilities, grades = row.get("probabilities"), row.get("grades")
        return GroupChoice(
            chosen=shown.index(str(answer)),
            probabilities=None if probabilities is None else tuple(probabilities),
            grades=None if grades is None or self.scores != "recorded" else tuple(grades),
            raw=f"recorded {row.get('judge') or '?'}/{row.get('method') or '?'}: best {answer}",
            extras={"replay": "recorded"},
        )

    def rank(self, task: Task, candidates: Sequence[Candidate]) -> GroupRanking:
        """The recorded ranking of exactly these ids in this order; a miss raises or fails (``on_miss``)."""
        shown = tuple(c.id for c in candidates)
        row = self.kway_table.get((task.task_id, RANKING_KIND, shown))
        ranking = None if row is None else row.get("ranking")
        if ranking is None:
            return self._kway_miss(task, shown, RANKING_KIND, "unrecorded" if row is None else "unparsed")
        self.hits += 1
        return GroupRanking(
            permutation=tuple(shown.index(str(cid)) for cid in ranking),
            raw=f"recorded {row.get('judge') or '?'}/{row.get('method') or '?'}: " + " > ".join(map(str, ranking)),
            extras={"replay": "recorded"},
        )

    def _kway_miss(self, task: Task, shown: tuple[str, ...], kind: str, reason: str) -> Any:
        self.misses[reason] += 1
        if self.on_miss == "error":
            raise ReplayMiss(
                f"replay miss: no recorded {kind} ({reason}) for task {task.task_id!r} with "
                f"{list(shown)} shown in that order in {self.description}; a rerun fails the same "
                f"way: pass on_miss=tie to count misses as failed judgments, or fix the recorded file"
            )
        extras = {"replay_miss": reason}
        if kind == CHOICE_KIND:
            return GroupChoice(chosen=None, raw=f"replay miss: {reason}", status=ParseStatus.FAILED, extras=extras)
        return GroupRanking(permutation=None, raw=f"replay miss: {reason}", status=ParseStatus.FAILED, extras=extras)

    def _miss(self, task: Task, first: Candidate, second: Candidate, reason: str) -> Verdict:
        self.misses[reason] += 1
        if self.on_miss == "error":
            what = (
                "no recorded judgment"
                if reason == "unrecorded"
                else "the recorded answer could not be parsed (winner is null)"
            )
            raise ReplayMiss(
                f"replay miss: {what} for task {task.task_id!r} with {first.id!r} shown first "
                f"and {second.id!r} second in {self.description}; a rerun fails the same way: "
                f"pass on_miss=tie to count misses as failed ties, or fix the recorded file"
            )
        middle = (task.scale[0] + task.scale[1]) / 2
        return Verdict(
            first_grade=middle,
            second_grade=middle,
            winner=Winner.TIE,
            raw=f"replay miss: {reason}",
            status=ParseStatus.FAILED,
            extras={"replay_miss": reason},
        )


class ReplayMiss(JudgeError):
    """A comparison the recording cannot answer; a rerun fails identically, so exit 2."""

    exit_code = 2
    resumable = False


def verdict_scores(task: Task, winner: Winner) -> tuple[float, float]:
    """(first, second) grades stating ``winner`` on the task's scale: top/bottom, or the middle twice."""
    low, high = task.scale
    if winner is Winner.FIRST:
        return high, low
    if winner is Winner.SECOND:
        return low, high
    middle = (low + high) / 2
    return middle, middle


def is_miss(judgment: Verdict) -> bool:
    """Whether a verdict is a replay miss answered under ``on_miss=tie``."""
    return "replay_miss" in judgment.extras


def build(settings: Settings) -> ReplayJudge:
    """``replay:FILE[,judge=NAME][,method=NAME][,on_miss=error|tie][,scores=recorded|verdict]``."""
    judge = ReplayJudge(settings.argument, **settings.subset(REPLAY_OPTIONS))
    # Read the recording now: a bad file or filter is reported before anything runs. A recording of
    # k-way judgments only has no pairs to check.
    if not judge.kway_table:
        _ = judge.table  # a cached property: reading it parses and checks the file
    return judge


#: ``replay:FILE[,option=value...]``: judgments recorded earlier (``rankkit record``) or elsewhere.
BACKEND = Backend(
    "replay",
    "judgments recorded in a file (rankkit record, or a paper's data)",
    REPLAY_OPTIONS,
    build,
    argument=Argument("recorded judgments file", "replay:judgments.jsonl,judge=GPT-4,method=Vanilla"),
)
