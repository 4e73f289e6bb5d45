"""Ranking tasks: a prompt, an optional reference and the candidate answers to rank.

Two on-disk formats are read:

* **JSONL**, one task per line, as in ``shared/data``::

    {"task_id": "q1", "prompt": "...", "reference": null,
     "candidates": [{"id": "a", "text": "...", "system": "m1", "human": {"score": 3.5}}, ...],
     "meta": {"main_score": "score", "max_points": 5}}

* **CSV in long form**, one row per candidate, with columns ``task_id, prompt, candidate_id,
  text`` and optionally ``system``, ``reference``; every other column is a human score criterion.

Human scores are "higher is better" throughout. One criterion is the *ground truth* of a run: it
is chosen with ``criterion=`` or taken from ``meta.main_score``, or is the only criterion present.
Every problem found while loading raises :class:`TaskFormatError`, which names the file, the line
and the field.
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any, Iterable, Mapping

SAMPLE_DATA = Path(__file__).parent / "data" / "sample" / "tasks.jsonl"


class TaskFormatError(ValueError):
    """Bad input data. ``str(error)`` reads ``FILE:LINE: field 'F': message``."""

    def __init__(self, path: str | Path, line: int | None, field_name: str | None, message: str):
        self.path = str(path)
        self.line = line
        self.field = field_name
        self.message = message
        where = self.path + (f":{line}" if line is not None else "")
        what = f" field {field_name!r}:" if field_name else ""
        super().__init__(f"{where}:{what} {message}")


@dataclass(frozen=True)
class Candidate:
    """One answer to rank. ``human`` maps criterion name to a score (higher is better)."""

    id: str
    text: str
    system: str | None = None
    human: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Task:
    """A prompt with its candidates.

    ``criterion`` names the human score used as ground truth (None when the data has none) and
    ``scale`` is the ``(low, high)`` range judges grade on: ``(0, meta.max_points)`` when given,
    else the range of the criterion over the whole dataset.
    """

    task_id: str
    prompt: str
    candidates: tuple[Candidate, ...]
    reference: str | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)
    criterion: str | None = None
    scale: tuple[float, float] = (0.0, 10.0)

    @cached_property
    def _by_id(self) -> dict[str, Candidate]:
        # Built once per task: strategies look candidates up several times per comparison, and
        # a linear scan made every comparison O(N) at N in the thousands.
        return {cand.id: cand for cand in self.candidates}

    def candidate(self, candidate_id: str) -> Candidate:
        try:
            return self._by_id[candidate_id]
        except KeyError:
            raise KeyError(f"task {self.task_id!r} has no candidate {candidate_id!r}") from None

    @property
    def candidate_ids(self) -> list[str]:
        return [c.id for c in self.candidates]

    @cached_property
    def _human(self) -> dict[str, float]:
        if self.criterion is None:
            return {}
        return {c.id: float(c.human[self.criterion]) for c in self.candidates}

    def human_scores(self) -> dict[str, float]:
        """The ground-truth score of every candidate (empty when the task has no criterion)."""
        return dict(self._human)

    def human_score(self, candidate_id: str) -> float:
        """One candidate's ground-truth score, without copying the whole mapping."""
        return self._human[candidate_id]

    @cached_property
    def human_spread(self) -> float:
        """Standard deviation of the human scores, falling back to a quarter of the scale."""
        values = list(self._human.values())
        # Plain float arithmetic: statistics.pstdev is exact (Fractions) and slow.
        mean = sum(values) / len(values) if values else 0.0
        spread = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values)) if len(values) > 1 else 0.0
        return spread if spread > 0 else (self.scale[1] - self.scale[0]) / 4 or 1.0


# ---------------------------------------------------------------------------------------------
# Loading


def load_tasks(path: str | Path | Any, criterion: str | None = None, limit: int | None = None,
               columns: Mapping[str, str] | None = None) -> list[Task]:
    """Read tasks from a ``.jsonl`` or ``.csv`` file and resolve the ground-truth criterion.

    ``path`` may also be a ``.parquet`` or JSON-array file, a pandas DataFrame, a
    ``datasets.Dataset`` or a list of row dicts in long form, and ``columns`` maps the source's
    column names to rankkit's (``{"question_id": "task_id", "model": "system"}``); see
    :mod:`rankkit.frames`. ``limit`` keeps the first N tasks. Raises :class:`TaskFormatError` on any
    problem.
    """
    from rankkit.frames import handles, read_source  # tables and mapped columns; pandas stays unimported

    if handles(path, columns):
        path, raw = read_source(path, columns)
    else:
        path = Path(path)
        if not path.exists():
            raise TaskFormatError(path, None, None, "file not found")
        if path.suffix.lower() == ".csv":
            raw = _read_csv(path)
        else:
            raw = _read_jsonl(path, limit)
    if limit is not None:
        raw = raw[:limit]
    if not raw:
        raise TaskFormatError(path, None, None, "no tasks in file")
    tasks = [_validate(path, line, obj) for line, obj in raw]
    return _resolve_criterion(path, tasks, [line for line, _ in raw], criterion)


def _read_jsonl(path: Path, limit: int | None) -> list[tuple[int, dict]]:
    rows = []
    with path.open(encoding="utf-8") as handle:
        for number, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            try:
                obj = json.loads(text)
            except json.JSONDecodeError as err:
                raise TaskFormatError(path, number, None, f"malformed JSON: {err.msg} (column {err.colno})") from None
            if not isinstance(obj, dict):
                raise TaskFormatError(path, number, None, "expected a JSON object per line")
            rows.append((number, obj))
            if limit is not None and len(rows) >= limit:
                break
    return rows


_CSV_FIXED = {"task_id", "prompt", "candidate_id", "text", "system", "reference"}


def _read_csv(path: Path) -> list[tuple[int, dict]]:
    """Group long-form rows (one per candidate) into task objects shaped like the JSONL ones."""
    tasks: dict[str, tuple[int, dict]] = {}
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        header = reader.fieldnames or []
        for required in ("task_id", "prompt", "candidate_id", "text"):
            if required not in header:
                raise TaskFormatError(path, 1, required, "missing column in CSV header")
        criteria = [name for name in header if name not in _CSV_FIXED]
        for row in reader:
            number = reader.line_num
            human = {}
            for name in criteria:
                value = (row.get(name) or "").strip()
                if value == "":
                    continue
                try:
                    human[name] = float(value)
                except ValueError:
                    raise TaskFormatError(path, number, name, f"score is not a number: {value!r}") from None
            task_id = row["task_id"]
            if task_id not in tasks:
                tasks[task_id] = (number, {
                    "task_id": task_id,
                    "prompt": row["prompt"],
                    "reference": row.get("reference") or None,
                    "candidates": [],
                    "meta": {},
                })
            tasks[task_id][1]["candidates"].append({
                "id": row["candidate_id"],
                "text": row["text"],
                "system": row.get("system") or None,
                "human": human,
                "_line": number,
            })
    return list(tasks.values())


def _require(path: Path, line: int, obj: dict, name: str, kind: type | tuple[type, ...]) -> Any:
    if name not in obj:
        raise TaskFormatError(path, line, name, "missing field")
    value = obj[name]
    if not isinstance(value, kind):
        kind_name = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise TaskFormatError(path, line, name, f"expected {kind_name}, got {type(value).__name__}")
    return value


def _validate(path: Path, line: int, obj: dict) -> Task:
    task_id = str(_require(path, line, obj, "task_id", (str, int)))
    prompt = _require(path, line, obj, "prompt", str)
    candidates_raw = _require(path, line, obj, "candidates", list)
    reference = obj.get("reference")
    if reference is not None and not isinstance(reference, str):
        raise TaskFormatError(path, line, "reference", "expected a string or null")
    meta = obj.get("meta") or {}
    if not isinstance(meta, dict):
        raise TaskFormatError(path, line, "meta", "expected an object")
    if len(candidates_raw) < 2:
        raise TaskFormatError(path, line, "candidates", f"task {task_id!r} has {len(candidates_raw)} candidate(s); at least 2 are needed to rank")
    seen: set[str] = set()
    candidates = []
    for index, cand in enumerate(candidates_raw):
        cand_line = cand.pop("_line", line) if isinstance(cand, dict) else line
        where = f"candidates[{index}]"
        if not isinstance(cand, dict):
            raise TaskFormatError(path, cand_line, where, "expected an object")
        for name in ("id", "text"):
            if name not in cand:
                raise TaskFormatError(path, cand_line, f"{where}.{name}", "missing field")
        cand_id = str(cand["id"])
        if cand_id in seen:
            raise TaskFormatError(path, cand_line, f"{where}.id", f"duplicate candidate id {cand_id!r} in task {task_id!r}")
        seen.add(cand_id)
        text = cand["text"]
        if not isinstance(text, str) or not text.strip():
            raise TaskFormatError(path, cand_line, f"{where}.text", f"empty text for candidate {cand_id!r}")
        human_raw = cand.get("human") or {}
        if not isinstance(human_raw, dict):
            raise TaskFormatError(path, cand_line, f"{where}.human", "expected an object mapping criterion to score")
        human = {}
        for name, value in human_raw.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise TaskFormatError(path, cand_line, f"{where}.human.{name}", f"score is not a finite number: {value!r}")
            human[name] = float(value)
        system = cand.get("system")
        candidates.append(Candidate(id=cand_id, text=text, system=None if system is None else str(system), human=human))
    return Task(task_id=task_id, prompt=prompt, reference=reference, candidates=tuple(candidates), meta=meta)


def _resolve_criterion(path: Path, tasks: list[Task], lines: list[int], criterion: str | None) -> list[Task]:
    """Pick the ground-truth criterion, check every candidate has it, and set each task's scale."""
    present = sorted({name for t in tasks for c in t.candidates for name in c.human})
    if criterion is None:
        mains = {t.meta.get("main_score") for t in tasks} - {None}
        if len(mains) == 1 and next(iter(mains)) in present:
            criterion = next(iter(mains))
        elif len(present) == 1:
            criterion = present[0]
        elif not present:
            criterion = None  # unlabelled data: rank it, but there is nothing to correlate with
        else:
            raise TaskFormatError(path, None, "human", f"several human criteria and no meta.main_score; choose one with --criterion ({', '.join(present)})")
    elif criterion not in present:
        raise TaskFormatError(path, None, "human", f"criterion {criterion!r} not in the data (choices: {', '.join(present) or 'none'})")
    values = []
    if criterion is not None:
        for task, line in zip(tasks, lines):
            for index, cand in enumerate(task.candidates):
                if criterion not in cand.human:
                    raise TaskFormatError(path, line, f"candidates[{index}].human.{criterion}", f"candidate {cand.id!r} of task {task.task_id!r} has no score for the criterion")
                values.append(cand.human[criterion])
    default_scale = (min(values), max(values)) if values and min(values) < max(values) else (0.0, 10.0)
    resolved = []
    for task in tasks:
        scale = default_scale
        max_points = task.meta.get("max_points")
        if isinstance(max_points, (int, float)) and max_points > 0:
            scale = (0.0, float(max_points))
        resolved.append(replace(task, criterion=criterion, scale=scale))
    return resolved


def score_spread(task: Task) -> float:
    """Standard deviation of the task's human scores, falling back to a quarter of its scale."""
    return task.human_spread


def iter_candidates(tasks: Iterable[Task]) -> Iterable[tuple[Task, Candidate]]:
    for task in tasks:
        for cand in task.candidates:
            yield task, cand
