"""``replay``: a judge that answers comparisons from recorded judgments; no LLM is called.

Spec::

    replay:FILE[,judge=NAME][,method=NAME][,on_miss=error|tie][,scores=recorded|verdict]

**The file** is JSON Lines in the format of ``shared/data/*/judgments.jsonl``, one judged
comparison per line::

    {"task_id": "q1", "judge": "GPT-4", "method": "Vanilla", "swap": false,
     "a": "o1", "b": "o2", "winner": "o1", "score_a": 7.0, "score_b": 6.0}

``a`` is the candidate id shown **first**, ``b`` the one shown second, so the presentation order
is part of the record: ``compare(task, first, second)`` looks up exactly ``(task_id, first.id,
second.id)`` and never answers one order from the other. ``winner`` is a candidate id, ``"tie"``,
or null when the recorded judge's answer could not be parsed. ``judge``, ``method``, ``swap``,
``grade_a`` and ``grade_b`` are optional.

**k-way judgments** (for ``setwise_knockout``, ``setwise_heapsort``, ``listwise``) are rows with
``shown``, the candidate ids in the order shown, and ``kind``: a ``choice`` names the ``chosen``
id (optional ``probabilities`` or ``grades``, one per slot), an ``ranking`` gives the ``ranking``
of every shown id, best first; null when the recorded answer could not be parsed::

    {"task_id": "q1", "judge": "GPT-4", "method": "setwise", "kind": "choice", "shown": ["o3", "o1", "o2"], "chosen": "o1"}

A choice is looked up by exactly that order of ids. A recording without k-way rows cannot serve a
k-way strategy: the run refuses it before judging anything (exit 2). ``rankkit record --from-run``
exports a run's k-way judgments too.

**Filters.** ``judge=`` and ``method=`` keep only the rows with those labels. After filtering each
(task, first, second) must be recorded at most once; a file holding several judges or methods
therefore needs the filter, and the error says which labels the file has.

**Misses.** A comparison that is not in the file (``unrecorded``), or whose recorded winner is
null (``unparsed``), is a *miss*. A miss is never answered with a guess:

* ``on_miss=error`` (the default) raises :class:`ReplayMiss` (a
  :class:`~rankkit.judges.base.JudgeError`; exit 2 on the command line, since a rerun fails the same
  way) naming the task and the order, so a replay that does not cover the strategy's comparisons
  stops loudly;
* ``on_miss=tie`` answers a tie flagged ``status=failed`` with ``extras["replay_miss"]`` set to
  the reason. The match layer counts failed judgments in ``Cost.parse_failures``, so a run's
  ``parse_failures`` is its number of misses, and ``rankkit judge-report`` lists them as misses.

The judge also keeps counters (``judge.misses`` by reason, ``judge.hits``) of what it answered
in this process; judgments served from the cache do not pass through it.

**Scores.** With ``scores=recorded`` (the default) a row's ``grade_a``/``grade_b`` are the two
grades when the row has them (they are on the recorded judge's own scale). Otherwise the grades
follow the verdict on the task's scale: the winner gets the top of the scale and the loser the
bottom (1 and 0 on LLMBar's 0–1 preference scale), and a recorded tie gives both the middle.
LLMBar's Rating methods store scores only on their ``swap=false`` rows, so when replaying them
in both orders (``order=both``, grades averaged) use ``scores=verdict`` to keep both orders on one scale.

**Record once, replay any strategy.** :func:`record_grid` judges every ordered pair of every
task with any judge (through the cache) and :func:`write_judgments` writes them in this format;
:func:`rows_from_results` exports the comparisons a run made. The
``rankkit record`` command wraps them. Then ``--judge replay:FILE`` runs any pairwise strategy on
the recorded grid for free.

The fingerprint holds the SHA-256 of the file's bytes, the filter and both options (not the
path), so the cache never mixes two recordings and a moved file keeps its cache.
"""

from __future__ import annotations

import functools

import hashlib
import json
import sys
from collections import Counter
from dataclasses import dataclass
from itertools import permutations
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping, Sequence

from rankkit.errors import TaskFormatError
from rankkit.frames import json_object_line
from rankkit.judges.base import Judge, JudgeError
from rankkit.judgments import (
    Verdict,
    ParseStatus,
    Winner,
    CHOICE_KIND,
    MAX_LABELS,
    RANKING_KIND,
    GroupChoice,
    GroupRanking,
)
from rankkit.specs import Spec, SpecError
from rankkit.tasks import Candidate, Task

if TYPE_CHECKING:  # rankkit.results imports the strategies; replay is imported by the judge registry
    from rankkit.results import RunResult

ON_MISS = ("error", "tie")
SCORE_SOURCES = ("recorded", "verdict")
TIE = "tie"


@dataclass(frozen=True)
class RecordedJudgment:
    """One recorded comparison: ``winner`` is a candidate id, ``"tie"`` or None (unparsed)."""

    winner: str | None
    grade_a: float | None = None
    grade_b: float | None = None
    judge: str | None = None
    method: str | None = None


RecordKey = tuple[str, str, str]  # (task_id, id shown first, id shown second)


# ---------------------------------------------------------------------------------------------
# Reading recordings


def _optional_number(path: Path, line: int, row: dict, name: str) -> float | None:
    value = row.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TaskFormatError(path, line, name, f"expected a number, got {value!r}")
    return float(value)


def read_rows(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line number, row)`` for every non-empty line, checking the required fields."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"replay: recorded judgments file not found: {path}")
    with path.open(encoding="utf-8") as handle:
        for number, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            row = json_object_line(path, number, text)
            if "shown" in row:  # a k-way judgment (see the module docstring)
                check_kway_row(path, number, row)
                yield number, row
                continue
            for name in ("task_id", "a", "b"):
                if not isinstance(row.get(name), (str, int)) or isinstance(row.get(name), bool):
                    raise TaskFormatError(path, number, name, "missing field or not a string")
            if "winner" not in row:
                raise TaskFormatError(path, number, "winner", "missing field (use null for an unparsed answer)")
            winner = row["winner"]
            if winner is not None and str(winner) not in (str(row["a"]), str(row["b"]), TIE):
                raise TaskFormatError(path, number, "winner",
                                      f"{winner!r} is neither a ({row['a']!r}), b ({row['b']!r}), 'tie' nor null")
            yield number, row


def recorded_labels(path: str | Path) -> Counter:
    """How many rows each (judge, method) label pair has in a recording."""
    return Counter((row.get("judge"), row.get("method")) for _, row in read_rows(path))


def check_kway_row(path: Path, number: int, row: dict[str, Any]) -> None:
    """Refuse a malformed k-way row: ``shown`` 2 to 8 distinct ids, ``kind`` choice or ordering,
    ``chosen`` one of them (or null), ``ranking`` each of them exactly once (or null)."""
    shown = row.get("shown")
    if not isinstance(row.get("task_id"), (str, int)) or isinstance(row.get("task_id"), bool):
        raise TaskFormatError(path, number, "task_id", "missing field or not a string")
    if not (isinstance(shown, list) and 2 <= len(shown) <= MAX_LABELS and len({str(c) for c in shown}) == len(shown)):
        raise TaskFormatError(path, number, "shown", f"expected a list of 2 to {MAX_LABELS} distinct candidate ids")
    kind = row.get("kind", CHOICE_KIND)
    if kind not in (CHOICE_KIND, RANKING_KIND):
        raise TaskFormatError(path, number, "kind", f"expected {CHOICE_KIND!r} or {RANKING_KIND!r}, got {kind!r}")
    ids = [str(c) for c in shown]
    if kind == CHOICE_KIND:
        if "chosen" not in row or (row["chosen"] is not None and str(row["chosen"]) not in ids):
            raise TaskFormatError(path, number, "chosen", "missing, or not one of the shown ids (null when unparsed)")
    elif "ranking" not in row or (row["ranking"] is not None and sorted(map(str, row["ranking"])) != sorted(ids)):
        raise TaskFormatError(path, number, "ranking", "missing, or not every shown id exactly once (null when unparsed)")


def load_recorded(path: str | Path, judge: str | None = None,
                  method: str | None = None) -> dict[RecordKey, RecordedJudgment]:
    """The recorded judgments of one judge and method, keyed by (task_id, first id, second id).

    path: a judgments.jsonl file (see the module docstring for its format).
    judge, method: keep only rows with these labels (None keeps every row).
    Raises SpecError when the filter matches nothing, or when a comparison is recorded twice
    after filtering (the file holds several judges or methods and no filter chose one).
    """
    path = Path(path)
    table: dict[RecordKey, RecordedJudgment] = {}
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
                f"judge=NAME,method=NAME")
        winner = row["winner"]
        table[key] = RecordedJudgment(
            winner=None if winner is None else str(winner),
            grade_a=_optional_number(path, number, row, "score_a"),
            grade_b=_optional_number(path, number, row, "score_b"),
            judge=row.get("judge"), method=row.get("method"))
    if not table:
        wanted = ", ".join(f"{k}={v}" for k, v in (("judge", judge), ("method", method)) if v is not None)
        raise SpecError(f"replay: no rows of {path} match {wanted or 'anything'}; "
                        f"the file holds {_describe_labels(labels)}")
    return table


#: (task_id, kind, ids in the order shown)
KwayKey = tuple[str, str, tuple[str, ...]]


def load_recorded_kway(path: str | Path, judge: str | None = None,
                       method: str | None = None) -> dict[KwayKey, dict[str, Any]]:
    """The recorded k-way judgments of one judge and method, keyed by (task_id, kind, ids shown);
    empty when the file has none. Raises SpecError when one is recorded twice after filtering."""
    table: dict[KwayKey, dict[str, Any]] = {}
    for number, row in read_rows(path):
        if "shown" not in row or (judge is not None and row.get("judge") != judge) or \
                (method is not None and row.get("method") != method):
            continue
        key = (str(row["task_id"]), row.get("kind", CHOICE_KIND), tuple(str(c) for c in row["shown"]))
        if key in table:
            raise SpecError(f"replay: {path} records the {key[1]} of task {key[0]!r} shown as {list(key[2])} more "
                            f"than once (line {number}); choose one judge and method with judge=NAME,method=NAME")
        table[key] = row
    return table


def _describe_labels(labels: Counter) -> str:
    judges = sorted({str(j) for j, _ in labels})
    methods = sorted({str(m) for _, m in labels})
    return f"judges {', '.join(judges)} and methods {', '.join(methods)}"


def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# ---------------------------------------------------------------------------------------------
# The judge


class ReplayJudge(Judge):
    """Answers ``compare`` from a recording; see the module docstring.

    path: the judgments.jsonl file.
    judge, method: label filters (None keeps every row).
    on_miss: ``error`` raises JudgeError on a miss; ``tie`` answers a failed-status tie.
    scores: ``recorded`` uses a row's grade_a/grade_b when present; ``verdict`` always derives the
        grades from the verdict on the task's scale.
    """

    backend = "replay"
    version = "1"
    supports_pointwise = False
    supports_pairwise = True

    def __init__(self, path: str | Path, judge: str | None = None, method: str | None = None,
                 on_miss: str = "error", scores: str = "recorded"):
        if on_miss not in ON_MISS:
            raise SpecError(f"replay: on_miss must be one of {', '.join(ON_MISS)}, got {on_miss!r}")
        if scores not in SCORE_SOURCES:
            raise SpecError(f"replay: scores must be one of {', '.join(SCORE_SOURCES)}, got {scores!r}")
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
        return load_recorded(self.path, self.judge_label, self.method)

    @functools.cached_property
    def kway_table(self) -> dict[KwayKey, dict[str, Any]]:
        return load_recorded_kway(self.path, self.judge_label, self.method)

    @property
    def supports_kway(self) -> bool:  # type: ignore[override]
        """Whether the recording holds k-way judgments (a recording of pairs only cannot answer them)."""
        return bool(self.kway_table)

    @functools.cached_property
    def sha256(self) -> str:
        return file_sha256(self.path)

    def request_key(self, task: Task, *candidates: Candidate) -> list[Any]:
        """A recorded verdict is looked up by task and candidate ids, so they are part of the key
        (two candidates with the same text may have different recorded verdicts)."""
        return [*super().request_key(task, *candidates), task.task_id, *(c.id for c in candidates)]

    def fingerprint_fields(self) -> dict[str, Any]:
        return {"sha256": self.sha256, "judge": self.judge_label, "method": self.method,
                "on_miss": self.on_miss, "scores": self.scores}

    @property
    def description(self) -> str:
        labels = ",".join(f"{k}={v}" for k, v in (("judge", self.judge_label), ("method", self.method)) if v)
        return f"replay:{self.path.name}" + (f" ({labels})" if labels else "")

    def compare(self, task: Task, first: Candidate, second: Candidate) -> Verdict:
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
        return Verdict(first_grade=first_grade, second_grade=second_grade, winner=winner, raw=raw,
                            extras={"replay": "recorded"})

    def choose(self, task: Task, candidates: Sequence[Candidate]) -> GroupChoice:
        shown = tuple(c.id for c in candidates)
        row = self.kway_table.get((task.task_id, CHOICE_KIND, shown))
        answer = None if row is None else row.get("chosen")
        if answer is None:
            return self._kway_miss(task, shown, CHOICE_KIND, "unrecorded" if row is None else "unparsed")
        self.hits += 1
        probabilities, grades = row.get("probabilities"), row.get("grades")
        return GroupChoice(chosen=shown.index(str(answer)),
                              probabilities=None if probabilities is None else tuple(probabilities),
                              grades=None if grades is None or self.scores != "recorded" else tuple(grades),
                              raw=f"recorded {row.get('judge') or '?'}/{row.get('method') or '?'}: best {answer}",
                              extras={"replay": "recorded"})

    def rank(self, task: Task, candidates: Sequence[Candidate]) -> GroupRanking:
        shown = tuple(c.id for c in candidates)
        row = self.kway_table.get((task.task_id, RANKING_KIND, shown))
        ranking = None if row is None else row.get("ranking")
        if ranking is None:
            return self._kway_miss(task, shown, RANKING_KIND, "unrecorded" if row is None else "unparsed")
        self.hits += 1
        return GroupRanking(permutation=tuple(shown.index(str(cid)) for cid in ranking),
                             raw=f"recorded {row.get('judge') or '?'}/{row.get('method') or '?'}: "
                                 + " > ".join(map(str, ranking)), extras={"replay": "recorded"})

    def _kway_miss(self, task: Task, shown: tuple[str, ...], kind: str, reason: str) -> Any:
        self.misses[reason] += 1
        if self.on_miss == "error":
            raise ReplayMiss(f"replay miss: no recorded {kind} ({reason}) for task {task.task_id!r} with "
                             f"{list(shown)} shown in that order in {self.description}; a rerun fails the same "
                             f"way: pass on_miss=tie to count misses as failed judgments, or fix the recorded file")
        extras = {"replay_miss": reason}
        if kind == CHOICE_KIND:
            return GroupChoice(chosen=None, raw=f"replay miss: {reason}", status=ParseStatus.FAILED, extras=extras)
        return GroupRanking(permutation=None, raw=f"replay miss: {reason}", status=ParseStatus.FAILED, extras=extras)

    def _miss(self, task: Task, first: Candidate, second: Candidate, reason: str) -> Verdict:
        self.misses[reason] += 1
        if self.on_miss == "error":
            what = ("no recorded judgment" if reason == "unrecorded"
                    else "the recorded answer could not be parsed (winner is null)")
            raise ReplayMiss(f"replay miss: {what} for task {task.task_id!r} with {first.id!r} shown first "
                             f"and {second.id!r} second in {self.description}; a rerun fails the same way: "
                             f"pass on_miss=tie to count misses as failed ties, or fix the recorded file")
        middle = (task.scale[0] + task.scale[1]) / 2
        return Verdict(first_grade=middle, second_grade=middle, winner=Winner.TIE,
                            raw=f"replay miss: {reason}", status=ParseStatus.FAILED,
                            extras={"replay_miss": reason})


class ReplayMiss(JudgeError):
    """A comparison the recording cannot answer. Unlike other judge failures a rerun of the same
    command fails identically, so the command line exits 2 (change the command or the file) and does
    not advise rerunning."""

    exit_code = 2
    resumable = False


def verdict_scores(task: Task, winner: Winner) -> tuple[float, float]:
    """Grades that state a verdict on the task's scale: (top, bottom), (bottom, top) or the middle twice."""
    low, high = task.scale
    if winner is Winner.FIRST:
        return high, low
    if winner is Winner.SECOND:
        return low, high
    middle = (low + high) / 2
    return middle, middle


def is_miss(judgment: Verdict) -> bool:
    """Whether a judgment is a replay miss answered under ``on_miss=tie``."""
    return "replay_miss" in judgment.extras


def from_spec(spec: Spec) -> ReplayJudge:
    """``replay:FILE[,judge=NAME][,method=NAME][,on_miss=error|tie][,scores=recorded|verdict]``."""
    if len(spec.positional) != 1:
        raise SpecError("replay: give exactly one recorded judgments file, e.g. "
                        "replay:judgments.jsonl,judge=GPT-4,method=Vanilla")
    known = {"judge", "method", "on_miss", "scores"}
    unknown = set(spec.options) - known
    if unknown:
        raise SpecError(f"replay: unknown parameter(s) {', '.join(sorted(unknown))} (known: {', '.join(sorted(known))})")
    judge = ReplayJudge(spec.positional[0], judge=spec.options.get("judge"), method=spec.options.get("method"),
                        on_miss=spec.options.get("on_miss", "error"), scores=spec.options.get("scores", "recorded"))
    # Read the recording now: a bad file or filter is reported before anything runs. A recording of
    # k-way judgments only has no pairs to check.
    if not judge.kway_table:
        judge.table
    return judge


# ---------------------------------------------------------------------------------------------
# Recording: write judgments in the replay format


def judgment_row(task: Task, first: str, second: str, judgment: Verdict, judge_label: str,
                 method: str) -> dict[str, Any]:
    """One judged comparison as a recording row (``swap`` = shown against the task's order).

    A tie is recorded as ``"tie"``; a judgment whose output could not be parsed as null, so that
    replaying it is a counted miss rather than a made-up verdict.
    """
    if judgment.status is ParseStatus.FAILED:
        winner: str | None = None
    elif judgment.winner is Winner.TIE:
        winner = TIE
    else:
        winner = first if judgment.winner is Winner.FIRST else second
    order = task.candidate_ids
    return {"task_id": task.task_id, "judge": judge_label, "method": method,
            "swap": order.index(first) > order.index(second), "a": first, "b": second, "winner": winner,
            "score_a": judgment.first_grade, "score_b": judgment.second_grade}


def record_grid(tasks: Sequence[Task], judge: Judge, cache: Any, judge_label: str, method: str,
                progress: bool = False) -> tuple[list[dict[str, Any]], Any]:
    """Judge every ordered pair of every task (N·(N−1) comparisons per task) and return the rows.

    Judgments go through the usual memory -> cache -> judge lookup, one batch per task, so an
    interrupted recording resumes from the cache. Returns ``(rows, cost)``.
    """
    from tqdm import tqdm

    from rankkit.matches import Cost, MatchSource
    from rankkit.memo import JudgmentMemo

    memo = JudgmentMemo(judge, cache)
    judge.bind_memo(memo)
    judge.check_tasks(tasks)  # before any judgment (the sim judge needs human scores)
    cost = Cost()
    rows: list[dict[str, Any]] = []
    try:
        for task in tqdm(tasks, desc="recording", unit="task", file=sys.stderr, disable=not progress):
            source = MatchSource(task, memo, strategy="record")
            pairs = list(permutations(task.candidate_ids, 2))
            for (first, second), verdict in zip(pairs, source.compare_many(pairs, round=1)):
                rows.append(judgment_row(task, first, second, verdict, judge_label, method))
            cost.add(source.cost)
    finally:
        memo.flush()
    return rows, cost


def rows_from_results(results: RunResult, judge_label: str | None = None,
                      method: str = "recorded") -> list[dict[str, Any]]:
    """Every distinct comparison of a run (e.g. a ``rankkit compare --out`` file read by
    :meth:`rankkit.results.RunResult.from_dict`), as recording rows.

    The results hold each strategy's comparisons (who was shown first and the verdict); a comparison
    used by several strategies is written once. ``judge_label`` defaults to the run's judge spec.
    """
    label = judge_label or results.judge_spec or "unknown"
    order = {t.task_id: t.candidate_ids for t in results.tasks}
    seen: set[tuple[str, str, str]] = set()
    rows = []
    for strategy in results.strategies:
        for task in strategy.tasks:
            for comparison in task.comparisons:
                key = (task.task_id, comparison.first, comparison.second)
                if key in seen:
                    continue
                seen.add(key)
                verdict = comparison.verdict
                if verdict.status is ParseStatus.FAILED:
                    winner = None
                elif verdict.winner is Winner.TIE:
                    winner = TIE
                else:
                    winner = comparison.first if verdict.winner is Winner.FIRST else comparison.second
                ids = order.get(task.task_id, [])
                swap = ids.index(comparison.first) > ids.index(comparison.second) if comparison.first in ids else None
                rows.append({"task_id": task.task_id, "judge": label, "method": method, "swap": swap,
                             "a": comparison.first, "b": comparison.second, "winner": winner,
                             "score_a": verdict.first_grade, "score_b": verdict.second_grade})
            for group in task.group_comparisons:
                kway_key = (task.task_id, group.kind, group.shown)
                if kway_key in seen:
                    continue
                seen.add(kway_key)
                rows.append(kway_row(task.task_id, group, label, method))
    return rows


def kway_row(task_id: str, group: Any, judge_label: str, method: str) -> dict[str, Any]:
    """One k-way judgment (a :class:`rankkit.choices.GroupComparison`) as a recording row; an
    unparsed one records null, so that replaying it is a counted miss."""
    judgment = group.judgment
    row: dict[str, Any] = {"task_id": task_id, "judge": judge_label, "method": method, "kind": group.kind,
                           "shown": list(group.shown)}
    ranking = group.ranking
    if group.kind == CHOICE_KIND:
        row["chosen"] = None if ranking is None else ranking[0]
        for name in ("probabilities", "grades"):
            if getattr(judgment, name) is not None:
                row[name] = list(getattr(judgment, name))
    else:
        row["ranking"] = None if ranking is None else list(ranking)
    return row


def write_judgments(rows: Iterable[Mapping[str, Any]], path: str | Path) -> int:
    """Write recording rows as JSON Lines; returns how many were written."""
    count = 0
    with Path(path).open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
            count += 1
    return count
