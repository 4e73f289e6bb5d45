"""The judge and the strategies of a results file, read back.

They keep what the file records (identity, parameters, a simulated judge's truth) and refuse to
judge or rank anew.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rankkit.data.tasks import Candidate, Task
from rankkit.errors import TaskFormatError
from rankkit.judges.base import Judge, JudgeError
from rankkit.runs.result_records import required
from rankkit.strategies.base import CandidateExtras, Strategy


class JudgeRecord(Judge):
    """The judge of a results file: its identity, and a simulated judge's recorded truth
    (:meth:`latent`). Asking it to judge raises JudgeError."""

    backend = "recorded"

    def __init__(
        self,
        spec: str,
        description: str,
        fingerprint: str,
        simulated: bool,
        latent: Mapping[str, Mapping[str, float]] | None = None,
    ):
        self.spec = spec
        self._description = description
        self._fingerprint = fingerprint
        self.simulated = simulated  # type: ignore[misc]  (instance value of a class-level flag)
        self._latent = (
            None
            if latent is None
            else {task_id: {cid: float(value) for cid, value in values.items()} for task_id, values in latent.items()}
        )

    @property
    def recorded_latent(self) -> dict[str, dict[str, float]] | None:
        """The ``judge.latent`` of the results file (task id -> candidate id -> value), None without one."""
        return None if self._latent is None else {task_id: dict(values) for task_id, values in self._latent.items()}

    def latent(self, task: Task) -> dict[str, float]:
        """The recorded latent values of ``task`` (a simulated judge's truth, see
        :meth:`rankkit.judges.simulated.sim.LatentJudge.latent`); JudgeError when the file holds none for it.

        Returns candidate id to latent value.

        Parameters
        ----------
        task
            The task.

        Raises
        ------
        JudgeError
            When the file holds no latent values for ``task``.
        """
        if self._latent is None or task.task_id not in self._latent:
            raise JudgeError(
                f"{self._description or 'the recorded judge'}: the results file records no latent "
                f"values for task {task.task_id!r}"
            )
        return dict(self._latent[task.task_id])

    @property
    def fingerprint(self) -> str:
        return self._fingerprint

    @property
    def description(self) -> str:
        return self._description

    def _refuse(self) -> JudgeError:
        return JudgeError(
            f"{self._description or 'the recorded judge'} is a record from a results file; "
            f"rebuild it with make_judge({self.spec!r}) to judge again"
        )

    def grade(self, task: Task, candidate: Candidate) -> Any:
        """Refused: a recorded judge cannot judge (raises JudgeError)."""
        raise self._refuse()

    def compare(self, task: Task, first: Candidate, second: Candidate) -> Any:
        """Refused: a recorded judge cannot judge (raises JudgeError)."""
        raise self._refuse()


class RecordedStrategy(Strategy):
    """A strategy from a results file that cannot be rebuilt here (not installed, or its
    parameters changed): it keeps its name, label and parameters; ``rank`` raises."""

    def __init__(self, name: str, label: str, params: Mapping[str, Any], cls: type[Strategy] | None = None):
        self.name = name  # type: ignore[misc]
        self._label = label
        self._params = dict(params)
        #: Whether the strategy is installed here (only its parameters changed): its extras are read
        #: into its own ``extras_type``; otherwise into one made from the keys the file holds.
        self.installed = cls is not None
        self.extras_type = cls.extras_type if cls is not None else CandidateExtras  # type: ignore[misc]

    @property
    def label(self) -> str:
        return self._label

    def params(self) -> dict[str, Any]:
        """The recorded parameters (a copy).

        Returns parameter name to value.
        """
        return dict(self._params)

    def rank(self, task: Task, source: Any, rng: Any) -> Any:
        """Refused: a recorded strategy cannot rank (raises NotImplementedError)."""
        raise NotImplementedError(f"strategy {self._label!r} is a record from a results file")


def strategy_from_record(record: Mapping[str, Any], where: str = "results", path: str = "strategy") -> Strategy:
    """The strategy of a results record (:meth:`~rankkit.runs.results.StrategyRun.to_dict`).

    Returns the strategy rebuilt from its parameters when it is installed, takes them and gives the
    same label; else a :class:`RecordedStrategy` that keeps them.

    Parameters
    ----------
    record
        The strategy's record: its ``name`` (label), ``strategy`` and ``params``.
    """
    from rankkit.strategies import strategy_classes

    label = str(required(record, "name", where, path))
    name = str(required(record, "strategy", where, path))
    params = dict(required(record, "params", where, path))
    cls = strategy_classes().get(name)
    if cls is not None:
        try:
            strategy = cls(**params)
            if strategy.label == label:
                return strategy
        except (TypeError, ValueError):  # parameters this version's class does not take
            pass
    return RecordedStrategy(name, label, params, cls)


def judge_from_record(record: Mapping[str, Any], where: str = "results") -> JudgeRecord:
    """The judge of a results file, from its ``judge`` record
    (:meth:`~rankkit.runs.results.RunResult.judge_record`).

    Returns the recorded judge; a :class:`TaskFormatError` naming the field when one is missing or
    ``latent`` is not task id -> candidate id -> number.

    Parameters
    ----------
    record
        The file's ``judge`` object.
    """
    judge_field = {
        name: required(record, name, where, "judge") for name in ("spec", "description", "fingerprint", "simulated")
    }
    latent = record.get("latent")  # only simulated judges write it
    if latent is not None and not (
        isinstance(latent, dict)
        and all(
            isinstance(values, dict) and all(isinstance(v, (int, float)) for v in values.values())
            for values in latent.values()
        )
    ):
        raise TaskFormatError(where, None, "judge.latent", "not an object of task id -> {candidate id: number}")
    return JudgeRecord(
        spec=judge_field["spec"],
        description=judge_field["description"],
        fingerprint=judge_field["fingerprint"],
        simulated=bool(judge_field["simulated"]),
        latent=latent,
    )
