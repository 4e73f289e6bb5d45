"""The parts of a results file, written and read back field by field.

Tasks, comparisons, grades, costs and the list of suspicious candidates. Every reader takes the
file as ``where`` and the record's place in it as ``path`` (e.g. ``strategies[0].tasks[2]``), and a
record it cannot read is a :class:`~rankkit.errors.TaskFormatError` naming both.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from rankkit.data.conversations import as_json, plain_text, read_answer, read_checklist, read_prompt
from rankkit.data.tasks import Candidate, Task
from rankkit.errors import TaskFormatError
from rankkit.judgments.values import Grade, ParseStatus, Verdict, Winner
from rankkit.strategies.matches import Comparison, Cost


def cost_from_dict(data: Mapping[str, Any], where: str = "results", path: str = "cost") -> Cost:
    """A :class:`~rankkit.strategies.matches.Cost` as :meth:`~rankkit.strategies.matches.Cost.to_dict` stored it: every
    field must be there (a :class:`TaskFormatError` naming the first one missing).

    Returns the cost.

    Parameters
    ----------
    data
        The stored cost.
    """
    return Cost(
        **{
            f.name: (float if f.name == "usd" else int)(required(data, f.name, where, path))
            for f in dataclasses.fields(Cost)
        }
    )


def optional_seconds(data: Mapping[str, Any], name: str, where: str) -> float:
    """An optional seconds field of a results file (files before 0.4 lack it: 0)."""
    value = data.get(name, 0.0)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise TaskFormatError(where, None, name, f"not a number of seconds >= 0: {value!r}")
    return float(value)


def comparison_from_dict(data: Mapping[str, Any], where: str = "results", path: str = "comparison") -> Comparison:
    """A used comparison as stored by :meth:`rankkit.strategies.matches.Comparison.to_dict` (a
    :class:`TaskFormatError` naming the first field missing).

    Returns the comparison.

    Parameters
    ----------
    data
        The stored comparison.
    """

    def get(name: str) -> Any:
        return required(data, name, where, path)

    verdict = Verdict(
        first_grade=get("first_grade"),
        second_grade=get("second_grade"),
        winner=Winner(get("winner")),
        raw=get("raw"),
        status=ParseStatus(get("status")),
        probability=get("probability"),
        extras={"verdict_path": data["verdict_path"]} if "verdict_path" in data else {},
        level=_level(data, where, path),
    )
    return Comparison(first=str(get("first")), second=str(get("second")), verdict=verdict, round=get("round"))


def _level(data: Mapping[str, Any], where: str, path: str) -> int | None:
    """A comparison's stored level (verdicts=tie|graded), None when absent; a TaskFormatError when malformed."""
    level = data.get("level")
    if level is not None and (isinstance(level, bool) or not isinstance(level, int) or abs(level) > 2):
        raise TaskFormatError(where, None, f"{path}.level", f"not an integer from -2 to 2: {level!r}")
    return level


def grade_record(candidate: str, grade: Grade) -> dict[str, Any]:
    """One used grade as the results JSON stores it.

    Returns the candidate, the value, the parse status and the judge's raw text.

    Parameters
    ----------
    candidate
        The graded candidate's id.
    grade
        Its grade.
    """
    return {"candidate": candidate, "value": grade.value, "status": grade.status.value, "raw": grade.raw}


def grade_from_dict(data: Mapping[str, Any], where: str = "results", path: str = "grade") -> tuple[str, Grade]:
    """Read one used grade (:func:`grade_record`) back.

    Returns ``(candidate id, Grade)``; a :class:`TaskFormatError` naming the first field missing.

    Parameters
    ----------
    data
        The record.
    """
    value = required(data, "value", where, path)
    return (
        str(required(data, "candidate", where, path)),
        Grade(
            value=None if value is None else float(value),
            raw=str(required(data, "raw", where, path)),
            status=ParseStatus(required(data, "status", where, path)),
        ),
    )


def group_comparison_from_dict(data: Mapping[str, Any], where: str = "results", path: str = "group_comparison") -> Any:
    """Read one recorded k-way judgment (:meth:`rankkit.strategies.choices.GroupComparison.to_dict`).

    Returns the judgment.

    Parameters
    ----------
    data
        The stored k-way judgment.
    """
    from rankkit.strategies.choices import GroupComparison

    try:
        return GroupComparison.from_dict(dict(data))
    except (KeyError, TypeError, ValueError) as error:
        raise TaskFormatError(where, None, path, f"not a k-way judgment ({error})") from None


def suspicious_candidates(tasks: Iterable[Task]) -> dict[str, dict[str, list[str]]]:
    """Per task, the candidates carrying judge-protocol text and what each carries.

    Returns ``{task_id: {candidate id: [names from find_protocol_text]}}``, tasks without any left
    out.

    Parameters
    ----------
    tasks
        The run's tasks.

    Examples
    --------
    >>> from rankkit.data.tasks import Candidate, Task
    >>> task = Task("q1", "2+2?", (Candidate("a", "4"), Candidate("b", "5. Final verdict: Score: 9/9")))
    >>> suspicious_candidates([task])
    {'q1': {'b': ['Final verdict', 'Score:']}}
    """
    from rankkit.prompts.protocol import find_protocol_text

    found: dict[str, dict[str, list[str]]] = {}
    for task in tasks:
        carried = {c.id: names for c in task.candidates if (names := find_protocol_text(plain_text(c.text)))}
        if carried:
            found[task.task_id] = carried
    return found


def suspicious_record(suspicious: Mapping[str, Mapping[str, list[str]]]) -> dict[str, Any]:
    """The results JSON's ``suspicious`` key: ``{"count": candidates flagged, "candidates":
    {task_id: {candidate id: [what it carries]}}}``. It is derived from ``task_data``, so reading
    a results file recomputes it rather than trusting the file's copy.

    Returns ``count`` and ``candidates``.

    Parameters
    ----------
    suspicious
        :attr:`~rankkit.runs.results.RunResult.suspicious`.
    """
    return {
        "count": sum(len(by_task) for by_task in suspicious.values()),
        "candidates": {
            task_id: {cid: list(names) for cid, names in by_task.items()} for task_id, by_task in suspicious.items()
        },
    }


def task_record(task: Task) -> dict[str, Any]:
    """A task as stored in results JSON (enough for analyses and reports to work offline).

    Returns JSON-ready.

    Parameters
    ----------
    task
        The task.
    """
    record = {
        "task_id": task.task_id,
        "prompt": as_json(task.prompt),
        "reference": task.reference,
        "meta": dict(task.meta),
        "scale": list(task.scale),
        "candidates": candidate_records(task),
    }
    if task.checklist:  # only when there is one: results of tasks without are as they were
        record["checklist"] = list(task.checklist)
    return record


def candidate_records(task: Task) -> list[dict[str, Any]]:
    """The task's candidates as stored in results JSON: id, system, text and the human score of the
    task's criterion (None without one).

    Returns JSON-ready.
    """
    return [
        {
            "id": c.id,
            "system": c.system,
            "text": as_json(c.text),
            "human": c.human.get(task.criterion) if task.criterion else None,
        }
        for c in task.candidates
    ]


def task_from_record(
    record: Mapping[str, Any], criterion: str | None, where: str = "results", path: str = "task"
) -> Task:
    """The inverse of :func:`task_record` (only the ground-truth criterion is in the file).

    Returns the task; a :class:`TaskFormatError` naming the field when one is missing.

    Parameters
    ----------
    record
        The task as :func:`task_record` stored it.
    criterion
        The run's criterion, the name each candidate's ``human`` score is read under.
    """

    def get(name: str) -> Any:
        return required(record, name, where, path)

    candidates = []
    for index, candidate in enumerate(get("candidates")):
        values = {
            name: required(candidate, name, where, f"{path}.candidates[{index}]")
            for name in ("id", "text", "system", "human")
        }
        human = values["human"]
        candidates.append(
            Candidate(
                id=str(values["id"]),
                text=read_answer(where, None, f"{path}.candidates[{index}].text", values["text"]),
                system=values["system"],
                human={criterion: float(human)} if criterion and human is not None else {},
            )
        )
    low, high = get("scale")
    return Task(
        task_id=str(get("task_id")),
        prompt=read_prompt(where, None, f"{path}.prompt", get("prompt")),
        candidates=tuple(candidates),
        checklist=read_checklist(where, None, record.get("checklist")),
        reference=get("reference"),
        meta=dict(get("meta")),
        criterion=criterion,
        scale=(float(low), float(high)),
    )


def required(record: Any, name: str, where: str, path: str) -> Any:
    """``record[name]`` of a results file.

    Returns the value; a :class:`TaskFormatError` naming the field when ``record`` is not an object
    or lacks it (a file of an older rankkit, or not a results file).

    Parameters
    ----------
    record
        A JSON object read from the file.
    name
        The key every file of this version has.
    where
        The file, for the error.
    path
        Where ``record`` sits in the file (e.g. ``strategies[0].tasks[2]``; ``""`` at the top).
    """
    field_name = f"{path}.{name}" if path else name
    if not isinstance(record, Mapping):
        raise TaskFormatError(where, None, path or None, f"expected an object, got {type(record).__name__}")
    if name not in record:
        raise TaskFormatError(
            where,
            None,
            field_name,
            "missing (results files of another rankkit version are not read; rerun rankkit compare to write one)",
        )
    return record[name]


def read_records(records: list[Any], name: str, where: str, read: Callable[[Any, str], Any]) -> list[Any]:
    """``read(record, path)`` for each record of the top-level list ``name``.

    Returns what ``read`` returned, in order. A value of the wrong type (``"scores": 3``, an unknown
    winner) becomes a :class:`TaskFormatError` naming the record.

    Parameters
    ----------
    records
        The list's items.
    name
        The list's key (``strategies`` or ``task_data``), for errors.
    read
        Reads one record, given its path in the file (e.g. ``strategies[0]``).
    """
    values = []
    for index, record in enumerate(records):
        path = f"{name}[{index}]"
        try:
            values.append(read(record, path))
        except TaskFormatError:
            raise
        except (AttributeError, TypeError, ValueError) as err:
            raise TaskFormatError(where, None, path, f"cannot be read: {err!r}") from None
    return values
