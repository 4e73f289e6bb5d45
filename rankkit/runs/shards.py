"""Shards of a run: worker ``index`` of ``count`` ranks every ``count``-th task, starting at ``index``.

A task's shard is its position in the task list modulo ``count`` (round robin). The split depends on
nothing but the task list, which every worker reads from the same file with the same options, so
every task goes to exactly one shard whatever launches the workers (a SLURM array, a shell loop,
another machine), and the shards' sizes differ by at most one task (a hash of the task id would
leave some workers with more on a small run). What makes sure the workers read the same list is
the run's fingerprint (:func:`run_fingerprint`): a digest of the tasks, with the strategies, the
judge's fingerprint and the seed, recorded in each part, so that :mod:`rankkit.runs.merge` refuses
parts of different runs. More in ``docs/scale.md``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from rankkit.data.specs import SpecError
from rankkit.data.tasks import Task
from rankkit.errors import TaskFormatError
from rankkit.runs.result_records import task_record
from rankkit.strategies.base import Strategy

T = TypeVar("T")

#: The most shards a run may be split into (a SLURM array's default ``MaxArraySize`` is 1001).
MAX_SHARDS = 100_000


@dataclass(frozen=True)
class Shard:
    """Worker ``index`` (from 0) of ``count``: ranks the tasks at positions ``index``, ``index + count``, ...

    Examples
    --------
    >>> Shard(1, 3).select(["a", "b", "c", "d", "e"])
    ['b', 'e']
    """

    index: int
    count: int

    def __post_init__(self) -> None:
        for name in ("index", "count"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise SpecError(f"shard {name}: expected an integer, got {value!r}")
        if not 1 <= self.count <= MAX_SHARDS:
            raise SpecError(f"shard {self}: the count must be from 1 to {MAX_SHARDS:,}")
        if not 0 <= self.index < self.count:
            raise SpecError(
                f"shard {self}: the index must be from 0 to {self.count - 1} (SLURM: "
                f"--shard $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT with --array=0-{self.count - 1})"
            )

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def select(self, items: Sequence[T]) -> list[T]:
        """The items of this shard, in their order."""
        return list(items[self.index :: self.count])

    def size(self, total: int) -> int:
        """How many of ``total`` tasks this shard ranks."""
        return len(range(self.index, total, self.count))


SHARD_SYNTAX = re.compile(r"\s*(\d{1,9})\s*/\s*(\d{1,9})\s*")


def parse_shard(text: str) -> Shard:
    """``"i/n"`` as a :class:`Shard` (a :class:`SpecError`, exit 2, when it is not one).

    Examples
    --------
    >>> parse_shard("2/4")
    Shard(index=2, count=4)
    """
    match = SHARD_SYNTAX.fullmatch(text)
    if match is None:
        raise SpecError(f"--shard {text!r}: expected INDEX/COUNT, e.g. 0/4 (the first of four workers)")
    return Shard(int(match.group(1)), int(match.group(2)))


@dataclass(frozen=True)
class ShardPart:
    """What a part of a sharded run records (the results JSON's ``shard`` key): which shard it is,
    how many tasks the whole run has, and the whole run's fingerprint."""

    shard: Shard
    total_tasks: int
    run_fingerprint: str

    def to_dict(self) -> dict[str, Any]:
        """The results JSON's ``shard`` key."""
        return {
            "index": self.shard.index,
            "count": self.shard.count,
            "total_tasks": self.total_tasks,
            "run_fingerprint": self.run_fingerprint,
        }


FINGERPRINT_SYNTAX = re.compile(r"[0-9a-f]{64}")


def shard_part_from_record(record: Any, where: str) -> ShardPart:
    """A results file's ``shard`` key read back; a :class:`TaskFormatError` naming the file and field when malformed.

    Parameters
    ----------
    record
        The value of the key, as read from the (untrusted) file.
    where
        The file.
    """
    if not isinstance(record, Mapping):
        raise TaskFormatError(
            where, None, "shard", "expected an object with index, count, total_tasks, run_fingerprint"
        )
    values = {}
    for name in ("index", "count", "total_tasks"):
        value = record.get(name)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 10**9:
            raise TaskFormatError(where, None, f"shard.{name}", f"expected an integer >= 0, got {value!r}")
        values[name] = value
    fingerprint = record.get("run_fingerprint")
    if not isinstance(fingerprint, str) or not FINGERPRINT_SYNTAX.fullmatch(fingerprint):
        raise TaskFormatError(where, None, "shard.run_fingerprint", "expected 64 lowercase hex digits")
    try:
        shard = Shard(values["index"], values["count"])
    except SpecError as err:
        raise TaskFormatError(where, None, "shard", str(err)) from None
    return ShardPart(shard, values["total_tasks"], fingerprint)


def data_digest(tasks: Sequence[Task]) -> str:
    """A SHA-256 of the tasks as the results file keeps them (ids, texts, meta, human scores), in order."""
    digest = hashlib.sha256()
    for task in tasks:
        digest.update(json.dumps(task_record(task), sort_keys=True, ensure_ascii=False, default=str).encode())
        digest.update(b"\n")
    return digest.hexdigest()


def run_fingerprint(tasks: Sequence[Task], strategies: Sequence[Strategy], judge_fingerprint: str, seed: int) -> str:
    """The whole run's identity, the same in every shard: its data (:func:`data_digest`, the
    criterion), strategies (labels and parameters), judge fingerprint and seed."""
    identity = {
        "data": data_digest(tasks),
        "criterion": tasks[0].criterion if tasks else None,
        "strategies": [[s.label, s.params()] for s in strategies],
        "judge": judge_fingerprint,
        "seed": seed,
    }
    return hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()
