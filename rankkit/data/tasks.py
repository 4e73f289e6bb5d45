"""Ranking tasks: a prompt, an optional reference and the candidate answers to rank.

:func:`load_tasks` reads in one direction: :func:`rankkit.data.task_files.read_task_rows` turns any
source (a task file, a table through :mod:`rankkit.data.frames`) into task objects, which are
validated here alike (task dicts too, :func:`tasks_from_records`); a problem raises
:class:`TaskFormatError` naming the file, line and field. Human scores are higher-is-better; the
ground-truth criterion is ``criterion=``, else ``meta.main_score``, else the only one present.
"""

from __future__ import annotations

import json
import math
import random
import re
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from rankkit.data.conversations import (
    Conversation,
    encode_cell,
    plain_text,
    read_answer,
    read_checklist,
    read_prompt,
)
from rankkit.data.task_files import read_task_rows
from rankkit.errors import TaskFormatError

SAMPLE_DATA = Path(__file__).parent / "sample" / "tasks.jsonl"


@dataclass(frozen=True)
class Candidate:
    """One answer to rank. ``human`` maps criterion name to a score (higher is better).

    ``text`` is the final assistant turn, or a multi-turn continuation (:mod:`rankkit.data.conversations`).
    """

    id: str
    text: str | Conversation
    system: str | None = None
    human: Mapping[str, float] = field(default_factory=dict)

    @property
    def length(self) -> int:
        """The answer's length in Unicode characters (not words: a Chinese answer has no spaces); every turn's, summed."""
        return len(plain_text(self.text))

    @cached_property
    def style(self) -> StyleFeatures:
        """The answer's :func:`style_features`, computed once per candidate."""
        return style_features(plain_text(self.text))


#: A markdown header line (``# Title`` to ``###### Title``).
_HEADER = re.compile(r"^ {0,3}#{1,6}\s+\S", re.MULTILINE)
#: A markdown list item: ``-``, ``*`` or ``+`` bullets and ``1.`` / ``1)`` numbers, at any indentation.
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s+\S", re.MULTILINE)
#: A bold span, ``**text**`` or ``__text__`` (not crossing a line).
_BOLD = re.compile(r"\*\*[^*\n]+?\*\*|__[^_\n]+?__")


@dataclass(frozen=True)
class StyleFeatures:
    """An answer's length and markdown formatting, as style control and style bias measure them.

    Attributes
    ----------
    chars
        Unicode characters (:attr:`Candidate.length`).
    tokens
        ``ceil(chars / 4)``: English BPE's four characters per token, without loading a tokenizer.
    headers
        Markdown header lines.
    list_items
        Bullet or numbered list lines.
    bold
        Bold spans.
    """

    chars: int
    tokens: int
    headers: int
    list_items: int
    bold: int

    @property
    def formatting(self) -> int:
        """How many formatting elements the answer has: headers + list items + bold spans."""
        return self.headers + self.list_items + self.bold

    @property
    def format_score(self) -> float:
        """``log2(1 + formatting)``: what the simulator's ``format_bias`` is per unit of (one
        doubling of 1 + the formatting elements), so the first few headers or bullets count most."""
        return math.log2(1 + self.formatting)


def style_features(text: str) -> StyleFeatures:
    """Measure an answer's length and its markdown headers, list items and bold spans.

    The one place rankkit measures style: the simulator's planted biases, the leaderboards' style
    control and the judge-bias diagnostics all read these counts.

    Examples
    --------
    >>> style_features("# Plan\\n\\n- **one**\\n- two\\n1. three")
    StyleFeatures(chars=32, tokens=8, headers=1, list_items=3, bold=1)
    """
    return StyleFeatures(
        chars=len(text),
        tokens=math.ceil(len(text) / 4),
        headers=len(_HEADER.findall(text)),
        list_items=len(_LIST_ITEM.findall(text)),
        bold=len(_BOLD.findall(text)),
    )


def longer_candidate(task: Task, a: str, b: str) -> str | None:
    """Whichever of candidates ``a`` and ``b`` is longer (:attr:`Candidate.length`); None when equally long."""
    length_a, length_b = task.candidate(a).length, task.candidate(b).length
    if length_a == length_b:
        return None
    return a if length_a > length_b else b


@dataclass(frozen=True)
class Task:
    """A prompt with its candidates.

    ``criterion`` names the human score used as ground truth (None when the data has none) and
    ``scale`` is the ``(low, high)`` range judges grade on: ``(0, meta.max_points)`` when given,
    else the range of the criterion over the whole dataset. ``prompt`` is a string or a
    conversation ending with the user's turn; ``checklist`` lists what a good answer does (WildBench).
    """

    task_id: str
    prompt: str | Conversation
    candidates: tuple[Candidate, ...]
    reference: str | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)
    criterion: str | None = None
    scale: tuple[float, float] = (0.0, 10.0)
    checklist: tuple[str, ...] = ()

    @cached_property
    def _by_id(self) -> dict[str, Candidate]:
        # Built once per task: strategies look candidates up several times per comparison, and
        # a linear scan made every comparison O(N) at N in the thousands.
        return {cand.id: cand for cand in self.candidates}

    def candidate(self, candidate_id: str) -> Candidate:
        """The candidate with id ``candidate_id``; a ``KeyError`` naming the task when there is none."""
        try:
            return self._by_id[candidate_id]
        except KeyError:
            raise KeyError(f"task {self.task_id!r} has no candidate {candidate_id!r}") from None

    @property
    def candidate_ids(self) -> list[str]:
        """The candidates' ids, in the order given."""
        return [c.id for c in self.candidates]

    @cached_property
    def meta_key(self) -> str:
        """``meta`` as sorted-key JSON: part of every cache key, so computed once per task."""
        return json.dumps(self.meta, sort_keys=True, ensure_ascii=False, default=str)

    @cached_property
    def _human(self) -> dict[str, float]:
        if self.criterion is None:
            return {}
        return {c.id: float(c.human[self.criterion]) for c in self.candidates}

    def human_scores(self) -> dict[str, float]:
        """A copy of every candidate's ground-truth score (empty when the task has no criterion)."""
        return dict(self._human)

    def human_score(self, candidate_id: str) -> float:
        """One candidate's ground-truth score, without copying the whole mapping."""
        return self._human[candidate_id]

    @cached_property
    def human_spread(self) -> float:
        """Standard deviation of the human scores (score units); a quarter of the scale when they are all equal."""
        values = list(self._human.values())
        # Plain float arithmetic: statistics.pstdev is exact (Fractions) and slow.
        mean = sum(values) / len(values) if values else 0.0
        spread = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values)) if len(values) > 1 else 0.0
        return spread if spread > 0 else (self.scale[1] - self.scale[0]) / 4 or 1.0


def task_rng(seed: int, task_id: str, purpose: str | None = None) -> random.Random:
    """The seeded generator of one task's random choices (a bracket's shuffles, coin flips, samples).

    The same (seed, task, purpose) gives the same draws on any machine, independent of the other
    tasks', so a run does not depend on task order or concurrency. A strategy ranks a task with
    ``task_rng(seed, task_id)``; other uses name a ``purpose`` (``arena``, ``anchored``).

    Examples
    --------
    >>> task_rng(0, "q1").randrange(1000), task_rng(0, "q1").randrange(1000)
    (426, 426)
    >>> task_rng(0, "q1", purpose="arena").randrange(1000), task_rng(1, "q1").randrange(1000)
    (206, 672)
    """
    return random.Random(f"{seed}|{task_id}" if purpose is None else f"{seed}|{task_id}|{purpose}")


# ---------------------------------------------------------------------------------------------
# Loading

#: The longest candidate text accepted by default, in characters: about 25,000 tokens (at 4
#: characters a token), several times the longest reply a chat model writes in one answer (output
#: caps run from 4k to 16k tokens), so no real answer is refused; a 2 MB text is not an answer.
DEFAULT_MAX_CANDIDATE_CHARS = 100_000
#: The longest prompt (and reference) accepted by default, in characters: about 50,000 tokens, a
#: long document with its question. A comparison at both limits (a 200k-character prompt and two
#: 100k-character answers) is about 100,000 tokens, which a 128k-token judge still takes: what the
#: limits refuse, no common judge could read whole.
DEFAULT_MAX_PROMPT_CHARS = 200_000


@dataclass(frozen=True)
class SizeLimits:
    """The largest candidate text and prompt (or reference) a task may hold, in characters (None: no limit)."""

    max_candidate_chars: int | None = DEFAULT_MAX_CANDIDATE_CHARS
    max_prompt_chars: int | None = DEFAULT_MAX_PROMPT_CHARS


def _check_size(
    path: Path, line: int | None, field_name: str, text: str, limit: int | None, option: str, what: str
) -> None:
    """Refuse ``text`` when it is longer than ``limit`` characters, naming the limit's option."""
    if limit is not None and len(text) > limit:
        raise TaskFormatError(
            path,
            line,
            field_name,
            f"{what} is {len(text):,} characters long, over the limit of "
            f"{limit:,} ({option}; --{option.replace('_', '-')} on the "
            f"command line, 0 for none)",
        )


def check_sizes(tasks: Sequence[Task], path: str | Path, sizes: SizeLimits = SizeLimits()) -> None:
    """Refuse tasks read from elsewhere than a task file (a results file's ``task_data``) whose texts
    a task file of the same limits would refuse.

    Parameters
    ----------
    tasks : Sequence[Task]
        The tasks.
    path : str or Path
        The file they were read from, named in the error.
    sizes : SizeLimits
        The limits (the defaults unless the command line set them).

    Raises
    ------
    TaskFormatError
        Naming the file, the task's field and the limit's option; there is no line to name.
    """
    for task in tasks:
        checklist = "\n".join(task.checklist)
        for name, text in (
            ("prompt", plain_text(task.prompt)),
            ("reference", task.reference),
            ("checklist", checklist),
        ):
            if text is not None:
                what = f"the {name} of task {task.task_id!r}"
                _check_size(Path(path), None, name, text, sizes.max_prompt_chars, "max_prompt_chars", what)
        for index, candidate in enumerate(task.candidates):
            what = f"candidate {candidate.id!r} of task {task.task_id!r}"
            where = f"candidates[{index}].text"
            text = plain_text(candidate.text)
            _check_size(Path(path), None, where, text, sizes.max_candidate_chars, "max_candidate_chars", what)


def load_tasks(
    path: str | Path | Any,
    criterion: str | None = None,
    limit: int | None = None,
    columns: Mapping[str, str] | None = None,
    max_candidate_chars: int | None = DEFAULT_MAX_CANDIDATE_CHARS,
    max_prompt_chars: int | None = DEFAULT_MAX_PROMPT_CHARS,
) -> list[Task]:
    """Read tasks, validate them and resolve the ground-truth criterion.

    ``path`` is a ``.jsonl`` file, a long-form ``.csv``/``.tsv`` (another extension is read as JSONL
    only when its content is: :data:`rankkit.data.task_files.READERS`), a ``.parquet`` or JSON-array file, a
    pandas DataFrame, a ``datasets.Dataset`` or a list of long-form row dicts (:mod:`rankkit.data.frames`).
    ``columns`` renames the source's columns (``{"question_id": "task_id"}``); ``limit`` keeps the
    first N tasks; the size limits are in characters (None: none). Any problem raises
    :class:`TaskFormatError` naming the file, line and field.
    """
    path, raw = read_task_rows(path, columns, limit)
    if limit is not None:
        raw = raw[:limit]
    if not raw:
        raise TaskFormatError(path, None, None, "no tasks in file")
    return _tasks_from_rows(path, raw, criterion, SizeLimits(max_candidate_chars, max_prompt_chars))


def tasks_from_records(
    records: Sequence[Mapping[str, Any]],
    criterion: str | None = None,
    where: str = "tasks",
    max_candidate_chars: int | None = DEFAULT_MAX_CANDIDATE_CHARS,
    max_prompt_chars: int | None = DEFAULT_MAX_PROMPT_CHARS,
) -> list[Task]:
    """Tasks from dicts in the task schema (what one JSONL line holds), validated as :func:`load_tasks` does.

    Errors name the source ``where:N`` (the N-th record, from 1).

    Examples
    --------
    >>> task, = tasks_from_records([{"task_id": "q1", "prompt": "2+2?", "candidates": [
    ...     {"id": "a", "text": "4", "human": {"ok": 1}}, {"id": "b", "text": "5", "human": {"ok": 0}}]}])
    >>> task.candidate_ids, task.criterion
    (['a', 'b'], 'ok')
    """
    raw = []
    for number, record in enumerate(records, start=1):
        if not isinstance(record, Mapping):
            raise TaskFormatError(where, number, None, f"expected a task object, got {type(record).__name__}")
        copy = dict(record)  # validation consumes the candidates' bookkeeping keys: keep the caller's intact
        if isinstance(copy.get("candidates"), list):
            copy["candidates"] = [dict(c) if isinstance(c, Mapping) else c for c in copy["candidates"]]
        raw.append((number, copy))
    if not raw:
        raise TaskFormatError(where, None, None, "no tasks given")
    return _tasks_from_rows(Path(where), raw, criterion, SizeLimits(max_candidate_chars, max_prompt_chars))


def _tasks_from_rows(
    path: str | Path, raw: list[tuple[int, dict]], criterion: str | None, sizes: SizeLimits
) -> list[Task]:
    """Every task object validated, the task ids checked unique and the ground-truth criterion resolved."""
    tasks = [_validate(path, line, obj, sizes) for line, obj in raw]
    lines = [line for line, _ in raw]
    _check_unique_task_ids(path, tasks, lines)
    return _resolve_criterion(path, tasks, lines, criterion)


def _check_unique_task_ids(path: Path, tasks: list[Task], lines: list[int]) -> None:
    """Task ids key the results, the match graphs and the metrics: a repeated id would merge two
    tasks' results (wrong metrics) or lose one, so it is an error naming both lines."""
    first_line: dict[str, int] = {}
    for task, line in zip(tasks, lines):
        if task.task_id in first_line:
            raise TaskFormatError(
                path, line, "task_id", f"duplicate task id {task.task_id!r} (first on line {first_line[task.task_id]})"
            )
        first_line[task.task_id] = line


def _require(path: Path, line: int, obj: dict, name: str, kind: type | tuple[type, ...]) -> Any:
    if name not in obj:
        raise TaskFormatError(path, line, name, "missing field")
    value = obj[name]
    if not isinstance(value, kind) or isinstance(value, bool):
        kind_name = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise TaskFormatError(path, line, name, f"expected {kind_name}, got {type(value).__name__}")
    return value


#: How deeply a task's fields may nest (``meta`` holds a few levels of small records); deeper is a
#: broken file, and Python's JSON reader and writer fail at about a thousand levels.
MAX_DEPTH = 64


def _check_values(path: Path, line: int, fields: Mapping[str, Any], prefix: str = "") -> None:
    """Refuse what would fail later, naming the field: text that is not valid Unicode (a lone
    surrogate such as ``"\\ud800"``, which a JSON escape can hold but no UTF-8 file, prompt or
    cache can), a NUL character, and nesting deeper than :data:`MAX_DEPTH` levels.

    path, line: where the fields come from, for the message.
    fields: a task object's fields (or one candidate's); keys and values are checked.
    prefix: the name of ``fields`` in messages (``candidates[2].``).
    """
    # (field, its name, its value, depth); breadth first, so the first problem found is the
    # shallowest, and no recursion, so no depth can overflow the stack.
    pending = deque((f"{prefix}{name}", f"{prefix}{name}", value, 1) for name, value in fields.items())
    while pending:
        field_name, name, value, depth = pending.popleft()
        if depth > MAX_DEPTH:
            raise TaskFormatError(path, line, field_name, f"nested deeper than {MAX_DEPTH} levels")
        if isinstance(value, str):
            _check_text(path, line, name, value)
        elif isinstance(value, Mapping):
            for key, item in value.items():
                if isinstance(key, str):
                    _check_text(path, line, f"{name} (a key)", key)
                pending.append((field_name, f"{name}.{key}", item, depth + 1))
        elif isinstance(value, (list, tuple)):
            pending.extend((field_name, f"{name}[{index}]", item, depth + 1) for index, item in enumerate(value))


def _short_name(name: str) -> str:
    return name if len(name) <= 60 else name[:57] + "..."


def _check_text(path: Path, line: int, name: str, text: str) -> None:
    """A string must be encodable as UTF-8 and hold no NUL character (see :func:`_check_values`)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        raise TaskFormatError(
            path,
            line,
            _short_name(name),
            f"not valid Unicode text: a lone surrogate \\u{ord(text[err.start]):04x} at character {err.start + 1}",
        ) from None
    nul = text.find("\0")
    if nul >= 0:
        raise TaskFormatError(path, line, _short_name(name), f"contains a NUL character at character {nul + 1}")


def finite_number(value: Any) -> float | None:
    """``value`` as a finite float; None for a non-number (a bool is not one), NaN, infinity or an int too large for a float."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _short_repr(value: Any) -> str:
    """``repr(value)`` cut to 40 characters (a score may be a 400-digit integer)."""
    try:
        text = repr(value)
    except ValueError:  # an integer of more than 4300 digits has no repr
        return "an integer too long to print"
    return text if len(text) <= 40 else text[:37] + "..."


def _candidate_id(path: Path, line: int, where: str, value: Any) -> str:
    """A candidate id as text: a string, or an integer read as its digits (``7`` and ``"7"`` are the
    same id); null, a bool, a float or an empty string is an error."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise TaskFormatError(path, line, where, f"expected a string or integer id, got {_short_repr(value)}")
    text = str(value)
    if not text.strip():
        raise TaskFormatError(path, line, where, "empty candidate id")
    return text


def _validate(path: Path, line: int, obj: dict, sizes: SizeLimits = SizeLimits()) -> Task:
    """One task object (a JSONL line, or a task grouped from table rows) as a :class:`Task`."""
    _check_values(path, line, {name: value for name, value in obj.items() if name != "candidates"})
    task_id = str(_require(path, line, obj, "task_id", (str, int)))
    if not task_id.strip():
        raise TaskFormatError(path, line, "task_id", "empty task id")
    prompt = read_prompt(path, line, "prompt", _require(path, line, obj, "prompt", (str, list)))
    checklist = read_checklist(path, line, obj.get("checklist"))
    candidates_raw = _require(path, line, obj, "candidates", list)
    reference = obj.get("reference")
    if reference is not None and not isinstance(reference, str):
        raise TaskFormatError(path, line, "reference", "expected a string or null")
    for name, text in (("prompt", plain_text(prompt)), ("reference", reference), ("checklist", "\n".join(checklist))):
        if text is not None:
            _check_size(
                path, line, name, text, sizes.max_prompt_chars, "max_prompt_chars", f"the {name} of task {task_id!r}"
            )
    meta = obj.get("meta") or {}
    if not isinstance(meta, dict):
        raise TaskFormatError(path, line, "meta", "expected an object")
    meta = _check_meta(path, line, meta)
    if len(candidates_raw) < 2:
        raise TaskFormatError(
            path,
            line,
            "candidates",
            f"task {task_id!r} has {len(candidates_raw)} candidate(s); at least 2 are needed to rank",
        )
    seen: set[str] = set()
    candidates = [
        _validate_candidate(path, line, f"candidates[{index}]", cand, task_id, sizes, seen)
        for index, cand in enumerate(candidates_raw)
    ]
    return Task(
        task_id=task_id,
        prompt=prompt,
        reference=reference,
        candidates=tuple(candidates),
        meta=meta,
        checklist=checklist,
    )


def _validate_candidate(
    path: Path, line: int, where: str, cand: Any, task_id: str, sizes: SizeLimits, seen: set[str]
) -> Candidate:
    """One entry of a task's ``candidates`` (``where``: its name in messages, ``candidates[2]``).

    A candidate grouped from table rows names its own row (``_line``); otherwise errors name the
    task's ``line``. ``seen``: the ids of the task's earlier candidates; this one's is added.
    """
    cand_line = cand.get("_line", line) if isinstance(cand, dict) else line
    if not isinstance(cand, dict):
        raise TaskFormatError(path, cand_line, where, "expected an object")
    _check_values(path, cand_line, {name: value for name, value in cand.items() if name != "_line"}, prefix=f"{where}.")
    for name in ("id", "text"):
        if name not in cand:
            raise TaskFormatError(path, cand_line, f"{where}.{name}", "missing field")
    cand_id = _candidate_id(path, cand_line, f"{where}.id", cand["id"])
    if cand_id in seen:
        raise TaskFormatError(path, cand_line, f"{where}.id", f"duplicate candidate id {cand_id!r} in task {task_id!r}")
    seen.add(cand_id)
    text = cand["text"]
    if not isinstance(text, (str, list)):
        raise TaskFormatError(
            path,
            cand_line,
            f"{where}.text",
            f"text must be a string or a list of messages, got {type(text).__name__} (candidate {cand_id!r})",
        )
    text = read_answer(path, cand_line, f"{where}.text", text)
    if not plain_text(text).strip():
        raise TaskFormatError(path, cand_line, f"{where}.text", f"empty text for candidate {cand_id!r}")
    what = f"candidate {cand_id!r} of task {task_id!r}"
    limit = sizes.max_candidate_chars
    _check_size(path, cand_line, f"{where}.text", plain_text(text), limit, "max_candidate_chars", what)
    human = _human_scores(path, cand_line, where, cand.get("human") or {})
    system = cand.get("system")
    return Candidate(id=cand_id, text=text, system=None if system is None else str(system), human=human)


def _human_scores(path: Path, line: int, where: str, human: Any) -> dict[str, float]:
    """A candidate's ``human`` object: criterion name to a finite score."""
    if not isinstance(human, dict):
        raise TaskFormatError(path, line, f"{where}.human", "expected an object mapping criterion to score")
    scores = {}
    for name, value in human.items():
        number = finite_number(value)
        if number is None:
            raise TaskFormatError(
                path, line, f"{where}.human.{name}", f"score is not a finite number: {_short_repr(value)}"
            )
        scores[name] = number
    return scores


#: The largest ``meta.max_points`` accepted: grading scales run to 10 or 100; far beyond, a judge's
#: grade and the arithmetic on the scale mean nothing.
MAX_POINTS_LIMIT = 1_000_000


def _check_meta(path: Path, line: int, meta: dict[str, Any]) -> dict[str, Any]:
    """The metadata rankkit itself reads: ``max_points`` a number in (0, MAX_POINTS_LIMIT] (a
    numeric text, as a CSV column mapped to ``meta.max_points`` holds, becomes its number),
    ``main_score`` a string (that it names a criterion is checked with the whole data).
    Returns the metadata, with such a text replaced by its number."""
    if "max_points" in meta and meta["max_points"] is not None:
        value = meta["max_points"]
        if isinstance(value, str):
            try:
                meta = {**meta, "max_points": float(value)}
            except ValueError:
                pass  # refused below, naming the text
        number = finite_number(meta["max_points"])
        if number is None or not 0 < number <= MAX_POINTS_LIMIT:
            raise TaskFormatError(
                path,
                line,
                "meta.max_points",
                f"expected a number above 0 and at most {MAX_POINTS_LIMIT:,}, got {_short_repr(meta['max_points'])}",
            )
    main = meta.get("main_score")
    if main is not None and not isinstance(main, str):
        raise TaskFormatError(
            path, line, "meta.main_score", f"expected the name of a criterion, got {_short_repr(main)}"
        )
    return meta


def _resolve_criterion(path: Path, tasks: list[Task], lines: list[int], criterion: str | None) -> list[Task]:
    """Pick the ground-truth criterion, check every candidate has it, and set each task's scale."""
    present = sorted({name for t in tasks for c in t.candidates for name in c.human})
    for task, line in zip(tasks, lines):
        main = task.meta.get("main_score")
        if main is not None and main not in present:
            raise TaskFormatError(
                path,
                line,
                "meta.main_score",
                f"names {main!r}, which no candidate has a score "
                f"for (criteria in the data: {', '.join(present) or 'none'})",
            )
    criterion = _choose_criterion(path, tasks, present, criterion)
    values = [] if criterion is None else _criterion_scores(path, tasks, lines, criterion)
    default_scale = (min(values), max(values)) if values and min(values) < max(values) else (0.0, 10.0)
    resolved = []
    for task in tasks:
        scale = default_scale
        max_points = task.meta.get("max_points")
        if max_points is not None:  # checked by _check_meta: a number in (0, MAX_POINTS_LIMIT]
            scale = (0.0, float(max_points))
        resolved.append(replace(task, criterion=criterion, scale=scale))
    return resolved


def _choose_criterion(path: Path, tasks: list[Task], present: list[str], criterion: str | None) -> str | None:
    """The criterion asked for, else the tasks' one ``meta.main_score``, else the only one
    ``present``; None for unlabelled data (ranked, with nothing to correlate with)."""
    if criterion is not None:
        if criterion not in present:
            raise TaskFormatError(
                path,
                None,
                "human",
                f"criterion {criterion!r} not in the data (choices: {', '.join(present) or 'none'})",
            )
        return criterion
    mains = {t.meta.get("main_score") for t in tasks} - {None}
    if len(mains) == 1 and next(iter(mains)) in present:
        return next(iter(mains))
    if len(present) == 1:
        return present[0]
    if not present:
        return None
    raise TaskFormatError(
        path,
        None,
        "human",
        f"several human criteria and no meta.main_score; choose one with criterion= (--criterion on the command line): {', '.join(present)}",
    )


def _criterion_scores(path: Path, tasks: list[Task], lines: list[int], criterion: str) -> list[float]:
    """Every candidate's score for ``criterion``, refusing a candidate without one."""
    values = []
    for task, line in zip(tasks, lines):
        for index, cand in enumerate(task.candidates):
            if criterion not in cand.human:
                raise TaskFormatError(
                    path,
                    line,
                    f"candidates[{index}].human.{criterion}",
                    f"candidate {cand.id!r} of task {task.task_id!r} has no score for the criterion",
                )
            values.append(cand.human[criterion])
    return values


# ---------------------------------------------------------------------------------------------
# Writing: tasks back to a long table (the inverse of :mod:`rankkit.data.frames`)


def task_rows(tasks: Iterable[Task]) -> list[dict[str, Any]]:
    """Tasks in long form, one row per candidate, tasks in order, as :func:`load_tasks` reads them back.

    Columns: ``task_id, prompt, reference, candidate_id, text, system``, ``checklist`` when a task
    has one, one per human criterion (its bare name) and ``meta.NAME`` per metadata field. A
    conversation or checklist is a JSON-encoded cell (:func:`rankkit.data.conversations.encode_cell`).
    """
    tasks = list(tasks)
    criteria = list(dict.fromkeys(name for t in tasks for c in t.candidates for name in c.human))
    meta_keys = list(dict.fromkeys(key for t in tasks for key in t.meta))
    has_checklist = any(t.checklist for t in tasks)
    rows = []
    for task in tasks:
        for cand in task.candidates:
            row = {
                "task_id": task.task_id,
                "prompt": encode_cell(task.prompt),
                "reference": task.reference,
                "candidate_id": cand.id,
                "text": encode_cell(cand.text),
                "system": cand.system,
            }
            if has_checklist:
                row["checklist"] = encode_cell(task.checklist or None)
            row.update({name: cand.human.get(name) for name in criteria})
            row.update({f"meta.{key}": task.meta.get(key) for key in meta_keys})
            rows.append(row)
    return rows


def tasks_to_pandas(tasks: Iterable[Task]) -> Any:
    """:func:`task_rows` as a pandas DataFrame (needs ``pip install 'rankkit-llm[pandas]'``)."""
    try:
        import pandas as pd
    except ImportError:
        raise ImportError("tasks_to_pandas needs pandas: pip install 'rankkit-llm[pandas]'") from None
    return pd.DataFrame(task_rows(tasks))


def tasks_to_dataset(tasks: Iterable[Task]) -> Any:
    """:func:`task_rows` as a Hugging Face ``datasets.Dataset`` (needs ``pip install 'rankkit-llm[datasets]'``)."""
    try:
        import datasets
    except ImportError:
        raise ImportError("tasks_to_dataset needs datasets: pip install 'rankkit-llm[datasets]'") from None
    return datasets.Dataset.from_list(task_rows(tasks))
