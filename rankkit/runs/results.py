"""What a run produces, and its one schema on disk: the results JSON of ``rankkit compare --out``.

Reading a file back, ``where`` is the file and ``path`` a record's place in it, as in
:mod:`rankkit.runs.result_records`. More in ``docs/library.md``.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from typing import Any

from rankkit.data.file_checks import check_results_payload, read_json_file
from rankkit.data.formatting import plain
from rankkit.data.tasks import Task
from rankkit.errors import TaskFormatError
from rankkit.judges.base import Judge
from rankkit.judgments.values import Grade
from rankkit.runs.judgment_stream import JUDGMENT_KEYS, inline_judgments
from rankkit.runs.recorded_run import JudgeRecord, RecordedStrategy, judge_from_record, strategy_from_record
from rankkit.runs.result_records import (
    comparison_from_dict,
    cost_from_dict,
    grade_from_dict,
    grade_record,
    group_comparison_from_dict,
    optional_seconds,
    read_records,
    required,
    suspicious_candidates,
    suspicious_record,
    task_from_record,
    task_record,
)
from rankkit.runs.shards import ShardPart, shard_part_from_record
from rankkit.strategies.base import CandidateExtras, Strategy
from rankkit.strategies.matches import Comparison, Cost, MatchGraph


@dataclass
class TaskResult:
    """One strategy's result on one task."""

    task_id: str
    scores: dict[str, float]
    ranking: list[str]
    champion: str | None
    extras: dict[str, CandidateExtras]
    comparisons: list[Comparison]
    cost: Cost
    #: The k-way judgments the strategy used (:class:`rankkit.strategies.choices.GroupComparison`; empty for
    #: strategies that judge pairs or single answers, and then not written).
    group_comparisons: list[Any] = field(default_factory=list)
    #: The grades of single answers the strategy used, ``(candidate id, Grade)`` in the order first
    #: used (``individual``'s, and those that settled an undecided match; empty for the others,
    #: and then not written).
    grades: list[tuple[str, Grade]] = field(default_factory=list)

    @property
    def has_elimination_rounds(self) -> bool:
        """Whether candidates were eliminated round by round (knockout, double elimination): there
        is a champion, every other candidate with extras reports the round it was eliminated in, and
        there was at least one round."""
        others = [extras for cid, extras in self.extras.items() if cid != self.champion]
        return self.champion is not None and bool(others) and all(e.eliminated_round is not None for e in others)

    def to_dict(self) -> dict[str, Any]:
        """The task's result as the results JSON stores it.

        Returns JSON-ready.
        """
        return {
            "task_id": self.task_id,
            "scores": self.scores,
            "ranking": self.ranking,
            "champion": self.champion,
            "extras": {cid: e.to_dict() for cid, e in self.extras.items()},
            "cost": self.cost.to_dict(),
            "comparisons": [c.to_dict() for c in self.comparisons],
            **({"group_comparisons": [g.to_dict() for g in self.group_comparisons]} if self.group_comparisons else {}),
            **({"grades": [grade_record(cid, grade) for cid, grade in self.grades]} if self.grades else {}),
        }

    @classmethod
    def from_dict(
        cls,
        data: Mapping[str, Any],
        where: str = "results",
        path: str = "task",
        extras_type: type[CandidateExtras] = CandidateExtras,
    ) -> TaskResult:
        """Read :meth:`to_dict` output back.

        Returns the task result; a :class:`TaskFormatError` naming the field when one is missing.

        Parameters
        ----------
        data
            One task's record, as :meth:`to_dict` wrote it.
        extras_type
            The strategy's :attr:`~rankkit.strategies.base.Strategy.extras_type`.
        """
        scores = {
            cid: math.nan if value is None else float(value)  # NaN is written as null
            for cid, value in required(data, "scores", where, path).items()
        }
        comparisons = required(data, "comparisons", where, path)
        extras = {}
        for cid, record in required(data, "extras", where, path).items():
            try:
                extras[cid] = extras_type.from_dict(record)
            except ValueError as err:  # a key the strategy does not report
                raise TaskFormatError(where, None, f"{path}.extras.{cid}", str(err)) from None
        return cls(
            task_id=str(required(data, "task_id", where, path)),
            scores=scores,
            ranking=list(required(data, "ranking", where, path)),
            champion=required(data, "champion", where, path),
            extras=extras,
            comparisons=[comparison_from_dict(c, where, f"{path}.comparisons[{i}]") for i, c in enumerate(comparisons)],
            cost=cost_from_dict(required(data, "cost", where, path), where, f"{path}.cost"),
            group_comparisons=[
                group_comparison_from_dict(g, where, f"{path}.group_comparisons[{i}]")
                for i, g in enumerate(data.get("group_comparisons") or [])
            ],
            grades=[grade_from_dict(g, where, f"{path}.grades[{i}]") for i, g in enumerate(data.get("grades") or [])],
        )


@dataclass
class StrategyRun:
    """One strategy over all tasks: its per-task results, total cost, time and metrics."""

    strategy: Strategy
    tasks: list[TaskResult] = field(default_factory=list)
    cost: Cost = field(default_factory=Cost)
    seconds: float = 0.0
    metrics: dict[str, float] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.strategy.label

    @property
    def has_elimination_rounds(self) -> bool:
        """Whether the strategy eliminated candidates round by round (knockout, double elimination)
        on every task, and reported extras for every candidate (:attr:`TaskResult.has_elimination_rounds`)."""
        return bool(self.tasks) and all(len(t.extras) == len(t.scores) and t.has_elimination_rounds for t in self.tasks)

    def to_dict(self) -> dict[str, Any]:
        """The strategy's run as the results JSON stores it.

        Returns JSON-ready.
        """
        return {
            "name": self.name,
            "strategy": self.strategy.name,
            "params": self.strategy.params(),
            "comparisons": self.cost.comparisons,
            "grades": self.cost.grades,
            "judge_calls": self.cost.judge_calls,
            "cache_hits": self.cost.cache_hits,
            "cost": self.cost.to_dict(),
            "seconds": round(self.seconds, 4),
            "metrics": self.metrics,
            "tasks": [t.to_dict() for t in self.tasks],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "results", path: str = "strategy") -> StrategyRun:
        """Read :meth:`to_dict` output back.

        Returns the strategy's run; a :class:`TaskFormatError` naming the field when one is missing.

        Parameters
        ----------
        data
            One strategy's record, as :meth:`to_dict` wrote it.
        """
        metrics = {
            k: math.nan if v is None else float(v)  # NaN is written as null
            for k, v in required(data, "metrics", where, path).items()
        }
        strategy = strategy_from_record(data, where, path)
        records = required(data, "tasks", where, path)
        extras_type = strategy.extras_type
        if isinstance(strategy, RecordedStrategy) and not strategy.installed:  # keep what it reported, typed loosely
            extras_type = extras_type.with_fields(
                key for task in records for extras in (task.get("extras") or {}).values() for key in extras
            )
        tasks = [TaskResult.from_dict(t, where, f"{path}.tasks[{i}]", extras_type) for i, t in enumerate(records)]
        return cls(
            strategy=strategy,
            tasks=tasks,
            cost=cost_from_dict(required(data, "cost", where, path), where, f"{path}.cost"),
            seconds=float(required(data, "seconds", where, path)),
            metrics=metrics,
        )


@dataclass
class RunResult:
    """Everything a run produced; ``to_dict`` is the ``--out`` JSON, ``from_dict`` reads it back.

    Attributes
    ----------
    config
        The run settings (data, judge, strategies, seed, ...) when the run came from the command
        line, so the results file can be re-run (``rankkit compare --config FILE``).
    """

    judge: Judge
    judge_spec: str
    data: str
    seed: int
    tasks: list[Task]
    strategies: list[StrategyRun]
    config: dict[str, Any] | None = None
    #: How the run used the judge: ``workers`` (tasks ranked at once), ``capacity``, and with
    #: concurrent workers ``batches`` (the size of every judge call) and ``max_in_flight``.
    dispatch: dict[str, Any] = field(default_factory=dict)
    #: Seconds from the first task started to the last done (what the whole run took).
    wall_seconds: float = 0.0
    #: Seconds of one-off start-up before it (imports, :func:`rankkit.runs.runner.warm_up`), charged to no strategy.
    warm_up_seconds: float = 0.0
    #: Which part of a sharded run this is (``rankkit compare --shard``; None: the whole run).
    shard: ShardPart | None = None
    #: The sidecar's file name when the judgments were streamed (:mod:`rankkit.runs.judgment_stream`): the
    #: tasks' results then hold no judgments, and the results JSON names the sidecar. None: inline.
    judgments_file: str | None = None
    #: With streamed judgments, ``verdict_paths`` as the stream counted them (the comparisons are not kept).
    streamed_verdict_paths: dict[str, int] = field(default_factory=dict)

    @functools.cached_property
    def graphs(self) -> dict[str, MatchGraph]:
        """Per task, the :class:`~rankkit.strategies.matches.MatchGraph` of every comparison the strategies
        used (built on first use from their records; grades are not in it).

        Returns task id to its graph.
        """
        return match_graphs(self.tasks, self.strategies, self.judge.fingerprint)

    @property
    def criterion(self) -> str | None:
        """The human score the run is measured against (None without one)."""
        return self.tasks[0].criterion if self.tasks else None

    def judge_record(self) -> dict[str, Any]:
        """The judge as the results JSON stores it: spec, description, fingerprint, simulated,
        for a generate-mode judge ``verdict_paths``: how many comparisons had their verdict read
        from a continuation and how many parsed from free text (the weaker fallback), and for a
        simulated judge that knows its own truth ``latent``: task id -> candidate id -> the value
        its judgments are noisy readings of (:meth:`rankkit.judges.simulated.sim.LatentJudge.latent`).

        Returns JSON-ready.
        """
        record = {
            "spec": self.judge_spec,
            "description": self.judge.description,
            "fingerprint": self.judge.fingerprint,
            "simulated": self.judge.simulated,
        }
        if isinstance(self.judge, JudgeRecord):  # a results file read back: write what it recorded
            if self.judge.recorded_latent is not None:
                record["latent"] = self.judge.recorded_latent
        elif self.judge.simulated and self.judge.capabilities.latent:
            record["latent"] = {task.task_id: self.judge.latent(task) for task in self.tasks}
        paths = collections.Counter(self.streamed_verdict_paths)
        paths.update(
            c.verdict.extras["verdict_path"]
            for s in self.strategies
            for t in s.tasks
            for c in t.comparisons
            if "verdict_path" in c.verdict.extras
        )
        if paths:
            record["verdict_paths"] = dict(sorted(paths.items()))
        return record

    @functools.cached_property
    def suspicious(self) -> dict[str, dict[str, list[str]]]:
        """The candidates whose text carries judge-protocol strings, ``{task_id: {candidate id:
        [what it carries]}}`` (:func:`rankkit.prompts.protocol.find_protocol_text`); tasks
        without any are left out. A property of the data, the same for every strategy.

        Returns task id to candidate id to what it carries.
        """
        return suspicious_candidates(self.tasks)

    def to_dict(self) -> dict[str, Any]:
        """The whole run as the results JSON stores it (:meth:`from_dict` reads it back).

        Returns JSON-ready (NaN kept).
        """
        payload = {
            "judge": self.judge_record(),
            "data": self.data,
            "seed": self.seed,
            "criterion": self.criterion,
            "strategies": [self._strategy_record(s) for s in self.strategies],
            "task_data": [task_record(t) for t in self.tasks],
            "suspicious": suspicious_record(self.suspicious),
            "wall_seconds": round(self.wall_seconds, 4),
            "warm_up_seconds": round(self.warm_up_seconds, 4),
        }
        if self.judgments_file is not None:
            payload["judgments_file"] = self.judgments_file
        if self.config is not None:
            payload["config"] = self.config
        if self.shard is not None:
            payload["shard"] = self.shard.to_dict()
        return plain(payload)

    def _strategy_record(self, strategy_run: StrategyRun) -> dict[str, Any]:
        """A strategy's record; with streamed judgments its tasks carry none (they are in the sidecar)."""
        record = strategy_run.to_dict()
        if self.judgments_file is not None:
            for task in record["tasks"]:
                for key in JUDGMENT_KEYS:
                    task.pop(key, None)
        return record

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "results") -> RunResult:
        """Read a results JSON (a :meth:`to_dict` payload) into typed objects.

        Raises :class:`TaskFormatError` naming
        ``where`` and the field when the payload is not a results file.

        Returns the run.

        Parameters
        ----------
        data
            A :meth:`to_dict` payload.

        Raises
        ------
        TaskFormatError
            When the payload is not a results file.
        """
        for name, kind in (("strategies", list), ("task_data", list), ("judge", dict)):
            if not isinstance(data.get(name), kind):
                raise TaskFormatError(
                    where,
                    None,
                    name,
                    f"missing or not a {'list' if kind is list else 'object'}; is this a rankkit compare --out file?",
                )
        check_results_payload(data, where)
        judge = judge_from_record(data["judge"], where)
        criterion = required(data, "criterion", where, "")
        tasks = read_records(
            data["task_data"], "task_data", where, lambda record, path: task_from_record(record, criterion, where, path)
        )
        strategies = read_records(
            data["strategies"], "strategies", where, lambda record, path: StrategyRun.from_dict(record, where, path)
        )
        return cls(
            judge=judge,
            judge_spec=judge.spec,
            data=required(data, "data", where, ""),
            seed=int(required(data, "seed", where, "")),
            tasks=tasks,
            strategies=strategies,
            config=data.get("config"),
            wall_seconds=optional_seconds(data, "wall_seconds", where),
            warm_up_seconds=optional_seconds(data, "warm_up_seconds", where),
            shard=None if data.get("shard") is None else shard_part_from_record(data["shard"], where),
        )  # only runs from the command line have a config

    def rows(self) -> list[dict[str, Any]]:
        """One row per strategy × task × candidate, best first within a task.

        Columns: ``strategy`` (the label, e.g. ``knockout:order=both``), ``strategy_name``,
        ``task_id``, ``candidate_id``, ``system``, ``score``, ``rank`` (1 = best), ``champion``,
        ``human`` (the ground-truth score, None without one), and as ``extra_<field>`` every scalar
        :class:`~rankkit.strategies.base.CandidateExtras` field the strategy reports for any candidate
        (``extra_eliminated_round``, ``extra_played``, ...; None where a candidate lacks it).

        Returns the rows.
        """
        by_id = {t.task_id: t for t in self.tasks}
        rows = []
        for strategy_run in self.strategies:
            columns = scalar_extras_reported(strategy_run)
            for result in strategy_run.tasks:
                task = by_id.get(result.task_id)
                human = task.human_scores() if task else {}
                for position, cid in enumerate(result.ranking, start=1):
                    system = task.candidate(cid).system if task and cid in task.candidate_ids else None
                    row = {
                        "strategy": strategy_run.name,
                        "strategy_name": strategy_run.strategy.name,
                        "task_id": result.task_id,
                        "candidate_id": cid,
                        "system": system,
                        "score": result.scores.get(cid),
                        "rank": position,
                        "champion": cid == result.champion,
                        "human": human.get(cid),
                    }
                    extras = result.extras.get(cid) or CandidateExtras()
                    row.update({f"extra_{name}": getattr(extras, name) for name in columns})
                    rows.append(row)
        return rows

    def to_pandas(self) -> Any:
        """:meth:`rows` as a pandas DataFrame (needs ``pip install 'rankkit-llm[pandas]'``).

        Returns one row per strategy × task × candidate.
        """
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("RunResult.to_pandas needs pandas: pip install 'rankkit-llm[pandas]'") from None
        return pd.DataFrame(self.rows())


def scalar_extras_reported(strategy_run: StrategyRun) -> list[str]:
    """The :class:`~rankkit.strategies.base.CandidateExtras` fields holding one value (not a
    sequence) that the strategy reported for at least one candidate, in field order.

    Returns field names.

    Parameters
    ----------
    strategy_run
        The strategy's run.
    """
    reported = {
        name
        for result in strategy_run.tasks
        for extras in result.extras.values()
        for name, value in extras.to_dict().items()
        if not isinstance(value, (list, dict))
    }
    names = dict.fromkeys(
        f.name for result in strategy_run.tasks for extras in result.extras.values() for f in dataclasses.fields(extras)
    )  # the strategy's own fields after the common ones
    return [name for name in names if name in reported]


def read_results(path: str | PathLike[str]) -> RunResult:
    """Read a results file written by ``rankkit compare --out``, its judgments inline or in a sidecar
    (``--stream-judgments``: read back into their tasks, so both forms read back equal).

    Returns the run; FileNotFoundError when there is no file, :class:`TaskFormatError` naming the
    file and the field when it is not a results file or its sidecar is not a plain file beside it.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: file not found")
    data = read_json_file(path)
    if not isinstance(data, dict):
        raise TaskFormatError(path, None, None, "expected a JSON object (the output of rankkit compare --out)")
    if "judgments_file" in data:
        inline_judgments(data, path)
    return RunResult.from_dict(data, where=str(path))


def match_graphs(tasks: Iterable[Task], strategies: Iterable[StrategyRun], fingerprint: str) -> dict[str, MatchGraph]:
    """One :class:`MatchGraph` per task, holding every comparison the strategies used.

    Returns task id to its graph.

    Parameters
    ----------
    tasks
        The tasks.
    strategies
        The strategies' runs (their used comparisons).
    fingerprint
        The judge's fingerprint (the edge key).
    """
    graphs = {task.task_id: MatchGraph(task) for task in tasks}
    for strategy_run in strategies:
        for result in strategy_run.tasks:
            graph = graphs.get(result.task_id)
            if graph is not None:
                for comparison in result.comparisons:
                    graph.record(fingerprint, comparison, strategy_run.name)
    return graphs
