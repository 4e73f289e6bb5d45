"""What a run produces, and its one schema on disk: the results JSON of ``rankkit compare --out``.

:class:`RunResult` holds every strategy's per-task scores, rankings, matches and cost, the tasks
and the shared match graphs. ``to_dict`` is the results JSON; :meth:`RunResult.from_dict` reads it
back into the same typed objects (the judge and any strategy that is not installed become
:class:`RecordedJudge` / :class:`RecordedStrategy`, which describe themselves but cannot judge or
rank again), so analyses written against these classes work on a live run and on a file alike.
:meth:`RunResult.to_pandas` is the long table of one row per strategy × task × candidate.

Top-level keys of the results JSON: ``judge`` (spec, description, fingerprint, simulated),
``data``, ``seed``, ``criterion``, ``strategies`` (see :meth:`StrategyRun.to_dict`), ``task_data``
(see :func:`task_record`) and, when the run came from the command line, ``config`` — the run
settings ``rankkit compare --config`` reads back (:mod:`rankkit.config`).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Mapping

from rankkit.judges.base import Judge, JudgeError, Verdict, ParseStatus, Winner
from rankkit.matches import Cost, Comparison, MatchGraph
from rankkit.specs import init_parameters
from rankkit.strategies.base import CandidateExtras, Strategy
from rankkit.tasks import Candidate, Task, TaskFormatError


@dataclass
class TaskResult:
    """One strategy's result on one task."""

    task_id: str
    scores: dict[str, float]
    ranking: list[str]
    champion: str | None
    extras: dict[str, CandidateExtras]
    matches: list[Comparison]
    cost: Cost

    @property
    def has_elimination_rounds(self) -> bool:
        """Whether candidates were eliminated round by round (knockout, double elimination): there
        is a champion, and every other candidate with extras reports the round it was eliminated in."""
        return self.champion is not None and bool(self.extras) and all(
            extras.eliminated_round is not None or cid == self.champion for cid, extras in self.extras.items())

    def to_dict(self) -> dict[str, Any]:
        return {"task_id": self.task_id, "scores": self.scores, "ranking": self.ranking,
                "champion": self.champion, "extras": {cid: e.to_dict() for cid, e in self.extras.items()},
                "comparisons": self.cost.comparisons, "judge_calls": self.cost.judge_calls,
                "cost": self.cost.to_dict(), "matches": [m.to_dict() for m in self.matches]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "TaskResult":
        """Read :meth:`to_dict` output back (files written before ``cost`` was stored per task keep
        their ``comparisons`` and ``judge_calls``)."""
        cost = cost_from_dict(data.get("cost") or {"comparisons": data.get("comparisons", 0),
                                                   "judge_calls": data.get("judge_calls", 0)})
        scores = {cid: math.nan if value is None else float(value) for cid, value in data["scores"].items()}
        return cls(task_id=str(data["task_id"]), scores=scores, ranking=list(data["ranking"]),
                   champion=data.get("champion"),
                   extras={k: CandidateExtras.from_dict(v) for k, v in (data.get("extras") or {}).items()},
                   matches=[match_from_dict(m) for m in data.get("matches") or []], cost=cost)


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
        return bool(self.tasks) and all(len(t.extras) == len(t.scores) and t.has_elimination_rounds
                                        for t in self.tasks)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "strategy": self.strategy.name, "params": self.strategy.params(),
                "comparisons": self.cost.comparisons, "grades": self.cost.grades,
                "judge_calls": self.cost.judge_calls, "cache_hits": self.cost.cache_hits,
                "cost": self.cost.to_dict(), "seconds": round(self.seconds, 4),
                "metrics": self.metrics, "tasks": [t.to_dict() for t in self.tasks]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "StrategyRun":
        cost = cost_from_dict(data.get("cost") or {k: data.get(k, 0) for k in
                                                   ("comparisons", "grades", "judge_calls", "cache_hits")})
        metrics = {k: math.nan if v is None else float(v) for k, v in (data.get("metrics") or {}).items()}
        return cls(strategy=strategy_from_record(data), tasks=[TaskResult.from_dict(t) for t in data["tasks"]],
                   cost=cost, seconds=float(data.get("seconds") or 0.0), metrics=metrics)


@dataclass
class RunResult:
    """Everything a run produced; ``to_dict`` is the ``--out`` JSON, ``from_dict`` reads it back.

    config: the run settings (data, judge, strategies, seed, ...) when the run came from the
        command line, so the results file can be re-run (``rankkit compare --config FILE``).
    """

    judge: Judge
    judge_spec: str
    data: str
    seed: int
    tasks: list[Task]
    strategies: list[StrategyRun]
    graphs: dict[str, MatchGraph]
    config: dict[str, Any] | None = None
    #: How the run used the judge: ``workers`` (tasks ranked at once), ``capacity``, and with
    #: concurrent workers ``batches`` (the size of every judge call) and ``max_in_flight``.
    engine: dict[str, Any] = field(default_factory=dict)

    @property
    def criterion(self) -> str | None:
        """The human score the run is measured against (None without one)."""
        return self.tasks[0].criterion if self.tasks else None

    def judge_record(self) -> dict[str, Any]:
        """The judge as the results JSON stores it: spec, description, fingerprint, simulated."""
        return {"spec": self.judge_spec, "description": self.judge.description,
                "fingerprint": self.judge.fingerprint, "simulated": self.judge.simulated}

    def to_dict(self) -> dict[str, Any]:
        payload = {
            "judge": self.judge_record(),
            "data": self.data,
            "seed": self.seed,
            "criterion": self.criterion,
            "strategies": [s.to_dict() for s in self.strategies],
            "task_data": [task_record(t) for t in self.tasks],
        }
        if self.config is not None:
            payload["config"] = self.config
        return strict_json(payload)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "results") -> "RunResult":
        """Read a results JSON (a :meth:`to_dict` payload) into typed objects.

        The match graphs are rebuilt from the matches the strategies used (grades are not stored
        in the file, so the graphs hold comparisons only). Raises :class:`TaskFormatError` naming
        ``where`` and the field when the payload is not a results file.
        """
        for name, kind in (("strategies", list), ("task_data", list), ("judge", dict)):
            if not isinstance(data.get(name), kind):
                raise TaskFormatError(where, None, name, f"missing or not a {'list' if kind is list else 'object'}; "
                                                         f"is this a rankkit compare --out file?")
        judge_info = data["judge"]
        judge = RecordedJudge(spec=judge_info.get("spec") or "", description=judge_info.get("description") or "",
                              fingerprint=judge_info.get("fingerprint") or "",
                              simulated=bool(judge_info.get("simulated")))
        criterion = data.get("criterion")
        tasks = [task_from_record(record, criterion) for record in data["task_data"]]
        strategies = []
        for index, record in enumerate(data["strategies"]):
            try:
                strategies.append(StrategyRun.from_dict(record))
            except (KeyError, TypeError, ValueError) as err:
                raise TaskFormatError(where, None, f"strategies[{index}]", f"cannot be read: {err!r}") from None
        graphs = rebuild_graphs(tasks, strategies, judge.fingerprint)
        return cls(judge=judge, judge_spec=judge.spec, data=data.get("data") or "", seed=int(data.get("seed") or 0),
                   tasks=tasks, strategies=strategies, graphs=graphs, config=data.get("config"))

    def rows(self) -> list[dict[str, Any]]:
        """One row per strategy × task × candidate, best first within a task.

        Columns: ``strategy`` (the label, e.g. ``knockout:debias=true``), ``strategy_name``,
        ``task_id``, ``candidate_id``, ``system``, ``score``, ``rank`` (1 = best), ``champion``,
        ``human`` (the ground-truth score, None without one), and as ``extra_<field>`` every scalar
        :class:`~rankkit.strategies.base.CandidateExtras` field the strategy reports for any candidate
        (``extra_eliminated_round``, ``extra_played``, ...; None where a candidate lacks it).
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
                    row = {"strategy": strategy_run.name, "strategy_name": strategy_run.strategy.name,
                           "task_id": result.task_id, "candidate_id": cid, "system": system,
                           "score": result.scores.get(cid), "rank": position, "champion": cid == result.champion,
                           "human": human.get(cid)}
                    extras = result.extras.get(cid) or CandidateExtras()
                    row.update({f"extra_{name}": getattr(extras, name) for name in columns})
                    rows.append(row)
        return rows

    def to_pandas(self) -> Any:
        """:meth:`rows` as a pandas DataFrame (needs ``pip install 'rankkit[pandas]'``)."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("RunResult.to_pandas needs pandas: pip install 'rankkit[pandas]'") from None
        return pd.DataFrame(self.rows())


# -------------------------------------------------------------------------------------------
# Records of what is no longer live


class RecordedJudge(Judge):
    """The judge of a results file: its identity only. Asking it to judge raises JudgeError."""

    backend = "recorded"

    def __init__(self, spec: str, description: str, fingerprint: str, simulated: bool):
        self.spec = spec
        self._description = description
        self._fingerprint = fingerprint
        self.simulated = simulated  # type: ignore[misc]  (instance value of a class-level flag)

    @property
    def fingerprint(self) -> str:
        return self._fingerprint

    @property
    def description(self) -> str:
        return self._description

    def _refuse(self) -> JudgeError:
        return JudgeError(f"{self._description or 'the recorded judge'} is a record from a results file; "
                          f"rebuild it with make_judge({self.spec!r}) to judge again")

    def grade(self, task: Task, candidate: Candidate) -> Any:
        raise self._refuse()

    def compare(self, task: Task, first: Candidate, second: Candidate) -> Any:
        raise self._refuse()


class RecordedStrategy(Strategy):
    """A strategy from a results file that cannot be rebuilt here (not installed, or its
    parameters changed): it keeps its name, label and parameters; ``rank`` raises."""

    def __init__(self, name: str, label: str, params: Mapping[str, Any]):
        self.name = name  # type: ignore[misc]
        self._label = label
        self._params = dict(params)

    @property
    def label(self) -> str:
        return self._label

    def params(self) -> dict[str, Any]:
        return dict(self._params)

    def rank(self, task: Task, source: Any, rng: Any) -> Any:
        raise NotImplementedError(f"strategy {self._label!r} is a record from a results file")


def strategy_from_record(record: Mapping[str, Any]) -> Strategy:
    """The strategy of a results record: rebuilt from its name and parameters when it is
    installed and gives the same label, else a :class:`RecordedStrategy`."""
    from rankkit.strategies import strategy_classes

    name = record.get("strategy") or str(record["name"]).partition(":")[0]
    params = dict(record.get("params") or {})
    cls = strategy_classes().get(name)
    if cls is not None:
        try:
            # init_parameters includes the `debias` alias, the name older files store the order under.
            fields = set(init_parameters(cls)) if dataclasses.is_dataclass(cls) else set()
            strategy = cls(**{k: v for k, v in params.items() if k in fields})
            if strategy.label == record["name"]:
                return strategy
        except (TypeError, ValueError):
            pass
    return RecordedStrategy(name, str(record["name"]), params)


def scalar_extras_reported(strategy_run: StrategyRun) -> list[str]:
    """The :class:`~rankkit.strategies.base.CandidateExtras` fields holding one value (not a
    sequence) that the strategy reported for at least one candidate, in field order."""
    reported = {name for result in strategy_run.tasks for extras in result.extras.values()
                for name, value in extras.to_dict().items() if not isinstance(value, list)}
    return [f.name for f in dataclasses.fields(CandidateExtras) if f.name in reported]


def cost_from_dict(data: Mapping[str, Any]) -> Cost:
    known = {f.name for f in dataclasses.fields(Cost)}
    return Cost(**{k: int(v or 0) for k, v in data.items() if k in known})


def match_from_dict(data: Mapping[str, Any]) -> Comparison:
    """A used comparison as stored by :meth:`rankkit.matches.Comparison.to_dict`."""
    judgment = Verdict(first_grade=data["first_grade"], second_grade=data["second_grade"],
                            winner=Winner(data["winner"]), raw=data.get("raw") or "",
                            status=ParseStatus(data.get("status") or "ok"), probability=data.get("probability"))
    return Comparison(first=str(data["first"]), second=str(data["second"]), judgment=judgment, round=data.get("round"))


def task_record(task: Task) -> dict[str, Any]:
    """A task as stored in results JSON (enough for analyses and reports to work offline)."""
    return {"task_id": task.task_id, "prompt": task.prompt, "reference": task.reference,
            "meta": dict(task.meta), "scale": list(task.scale),
            "candidates": [{"id": c.id, "system": c.system, "text": c.text,
                            "human": c.human.get(task.criterion) if task.criterion else None}
                           for c in task.candidates]}


def task_from_record(record: Mapping[str, Any], criterion: str | None) -> Task:
    """The inverse of :func:`task_record` (only the ground-truth criterion is in the file)."""
    candidates = tuple(
        Candidate(id=str(c["id"]), text=c["text"], system=c.get("system"),
                  human={criterion: float(c["human"])} if criterion and c.get("human") is not None else {})
        for c in record["candidates"])
    scale = record.get("scale") or (0.0, 10.0)
    return Task(task_id=str(record["task_id"]), prompt=record["prompt"], candidates=candidates,
                reference=record.get("reference"), meta=dict(record.get("meta") or {}), criterion=criterion,
                scale=(float(scale[0]), float(scale[1])))


def rebuild_graphs(tasks: list[Task], strategies: list[StrategyRun], fingerprint: str) -> dict[str, MatchGraph]:
    """Comparison graphs holding every comparison the strategies used, with who used it."""
    graphs = {task.task_id: MatchGraph(task) for task in tasks}
    for strategy_run in strategies:
        for result in strategy_run.tasks:
            graph = graphs.get(result.task_id)
            if graph is None:
                continue
            for match in result.matches:
                if graph.find_pair(fingerprint, match.first, match.second) is None:
                    graph.add_pair(fingerprint, match.first, match.second, match.judgment,
                                   strategy_run.name, match.round)
                graph.mark_used(fingerprint, match.first, match.second, strategy_run.name, match.round)
    return graphs


def strict_json(value: Any) -> Any:
    """Make a structure strict JSON: NaN and infinities (which JSON lacks) become null."""
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else value
    if isinstance(value, dict):
        return {k: strict_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict_json(v) for v in value]
    return value
