"""The leaderboard's data: rows and the board itself, and which system wrote which answer."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from os import PathLike
from typing import Any

from rankkit.data.formatting import plain
from rankkit.data.tasks import Task
from rankkit.errors import RankkitError
from rankkit.judges.base import Judge
from rankkit.prompts.normalize import refuse_look_alikes
from rankkit.stats.ratings import Outcome
from rankkit.strategies.matches import Cost


class LeaderboardError(RankkitError, ValueError):
    """Input a leaderboard cannot be built from (missing systems, unknown anchor, ...)."""


# Data types


#: A win rate within this of 0 or 1 against the anchor is at the ceiling: its variance p(1 − p) is
#: small, so neither the raw nor the length-controlled win rate can tell two such systems apart.
CEILING_MARGIN = 0.1
#: The anchored leaderboard warns once more than this share of the systems sit at the ceiling.
CEILING_SHARE = 1 / 3


@dataclass(frozen=True)
class AnchorCeiling:
    """How many systems of an anchored leaderboard sit at the ceiling against its anchor.

    Attributes
    ----------
    anchor
        The anchor every other system played.
    at_ceiling
        The systems whose raw win rate against the anchor is within :data:`CEILING_MARGIN` of 0 or 1.
    share
        Their share of the systems other than the anchor.
    suggestion
        An anchor to try instead: the system with the median mean answer length (so the
        length-controlled rate is read inside the data), else the median raw win rate; None when
        no system played the anchor.
    """

    anchor: str
    at_ceiling: tuple[str, ...]
    share: float
    suggestion: str | None

    @property
    def saturated(self) -> bool:
        """Whether more than :data:`CEILING_SHARE` of the systems sit at the ceiling."""
        return self.share > CEILING_SHARE

    def to_dict(self) -> dict[str, Any]:
        """The check as the leaderboard JSON stores it (``saturated`` included)."""
        return {
            "anchor": self.anchor,
            "at_ceiling": list(self.at_ceiling),
            "share": self.share,
            "saturated": self.saturated,
            "suggestion": self.suggestion,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AnchorCeiling:
        """Read :meth:`to_dict` back (``saturated`` is recomputed from ``share``)."""
        suggestion = data.get("suggestion")
        return cls(
            anchor=str(data["anchor"]),
            at_ceiling=tuple(str(name) for name in data.get("at_ceiling") or ()),
            share=float(data.get("share", 0.0)),
            suggestion=None if suggestion is None else str(suggestion),
        )


@dataclass(frozen=True)
class SystemRating:
    """A leaderboard row.

    ``rating`` is None when it cannot be computed (a system placed by binary search);
    ``unadjusted`` is the rating without the style control, None without one.
    """

    name: str
    rating: float | None
    ci_low: float | None
    ci_high: float | None
    rank: int
    matches: int = 0
    unadjusted: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The row as the leaderboard JSON stores it (``unadjusted`` only when there is one)."""
        out = {
            "name": self.name,
            "rating": self.rating,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "rank": self.rank,
            "matches": self.matches,
        }
        if self.unadjusted is not None:
            out["unadjusted"] = self.unadjusted
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SystemRating:
        """Read :meth:`to_dict` back (``matches`` and ``unadjusted`` may be missing)."""
        return cls(
            name=data["name"],
            rating=data.get("rating"),
            ci_low=data.get("ci_low"),
            ci_high=data.get("ci_high"),
            rank=int(data["rank"]),
            matches=int(data.get("matches", 0)),
            unadjusted=data.get("unadjusted"),
        )


@dataclass
class Leaderboard:
    """A system leaderboard, best first, with what it cost; ``to_dict`` is the ``--out`` JSON.

    Parameters
    ----------
    method
        ``arena``, ``anchored`` or the label of the per-task strategy that was aggregated.
    scale
        ``elo`` (Bradley–Terry ratings on the Elo scale) or ``win_rate`` (against ``anchor``).
    matches
        Every system-level result in play order, ``(system a, system b, a's points)``: 1 a won,
        0 b won, ½ a tie.
    order
        How the arena's or anchored matches were shown (``given``, ``random``, ``both``); None for
        a leaderboard aggregated from a strategy.
    placement
        For a leaderboard made by :func:`add_system`, how the newcomer was placed.
    match_tasks
        The task of each match, parallel to ``matches`` (empty for old boards).
    match_levels
        The verdict level of each match from a's side (2 A>>B … -2 B>>A; None: a binary judge, or a
        match averaging several verdicts), parallel to ``matches`` (empty when unknown: old boards).
    control
        The style control the ratings were fitted with (``length``, ``format``; empty: none).
    style
        With a control, the model and its coefficients with their intervals; None without.
    anchor_ceiling
        On an anchored leaderboard, the ceiling check (:class:`AnchorCeiling`); None on the others.
    weighting
        How graded verdicts and ties were counted (:meth:`rankkit.leaderboard.graded.VerdictWeighting.to_dict`);
        None: as binary verdicts, and then absent from the JSON.
    """

    method: str
    systems: list[SystemRating]
    matches: list[Outcome]
    cost: Cost = field(default_factory=Cost)
    scale: str = "elo"
    anchor: str | None = None
    seed: int = 0
    order: str | None = None
    judge: dict[str, Any] = field(default_factory=dict)
    data: str = ""
    placement: dict[str, Any] | None = None
    match_tasks: list[str] = field(default_factory=list)
    match_levels: list[int | None] = field(default_factory=list)
    control: tuple[str, ...] = ()
    style: dict[str, Any] | None = None
    anchor_ceiling: AnchorCeiling | None = None
    weighting: dict[str, Any] | None = None

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.systems]

    def system(self, name: str) -> SystemRating:
        """The row of system ``name``.

        Raises
        ------
        KeyError
            When ``name`` is not on the leaderboard.
        """
        for row in self.systems:
            if row.name == name:
                return row
        raise KeyError(f"system {name!r} is not on the leaderboard")

    def to_dict(self) -> dict[str, Any]:
        """The leaderboard as the ``--out`` JSON; matches as ``{"a", "b", "outcome", "level"}`` (+ ``"task"`` if
        recorded; ``level`` null where binary or unknown)."""
        return plain(
            {
                "method": self.method,
                "scale": self.scale,
                "anchor": self.anchor,
                "seed": self.seed,
                "order": self.order,
                "judge": self.judge,
                "data": self.data,
                "systems": [s.to_dict() for s in self.systems],
                "judge_calls": self.cost.judge_calls,
                "comparisons": self.cost.comparisons,
                "cost": self.cost.to_dict(),
                "placement": self.placement,
                "control": list(self.control),
                "style": self.style,
                "anchor_ceiling": None if self.anchor_ceiling is None else self.anchor_ceiling.to_dict(),
                **self._weighting_entry(),
                "matches": [
                    {"a": a, "b": b, "outcome": outcome, "level": level, **({"task": task} if task is not None else {})}
                    for (a, b, outcome), task, level in zip(
                        self.matches, self._tasks_or_none(), self.levels_of_matches()
                    )
                ],
            }
        )

    def _weighting_entry(self) -> dict[str, Any]:
        """``{"weighting": ...}`` when one was given (boards without keep their form)."""
        return {} if self.weighting is None else {"weighting": dict(self.weighting)}

    def _tasks_or_none(self) -> list[str | None]:
        return list(self.match_tasks) if len(self.match_tasks) == len(self.matches) else [None] * len(self.matches)

    def levels_of_matches(self) -> list[int | None]:
        """:attr:`match_levels`, or None for every match when they are unknown (an old board)."""
        return list(self.match_levels) if len(self.match_levels) == len(self.matches) else [None] * len(self.matches)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Leaderboard:
        """Read :meth:`to_dict` back (also older boards: ``match_tasks`` empty when any match lacks its task,
        every level None when the matches carry none)."""
        cost = Cost(**{k: int(v) for k, v in (data.get("cost") or {}).items() if k in Cost.__dataclass_fields__})
        return cls(
            method=data["method"],
            systems=[SystemRating.from_dict(s) for s in data["systems"]],
            matches=[(str(m["a"]), str(m["b"]), float(m["outcome"])) for m in data.get("matches") or []],
            cost=cost,
            scale=data.get("scale", "elo"),
            anchor=data.get("anchor"),
            seed=int(data.get("seed", 0)),
            order=data.get("order"),
            judge=dict(data.get("judge") or {}),
            data=data.get("data", ""),
            placement=data.get("placement"),
            match_tasks=_match_tasks(data.get("matches") or []),
            match_levels=[None if m.get("level") is None else int(m["level"]) for m in data.get("matches") or []],
            control=tuple(data.get("control") or ()),
            style=data.get("style"),
            anchor_ceiling=AnchorCeiling.from_dict(data["anchor_ceiling"]) if data.get("anchor_ceiling") else None,
            weighting=dict(data["weighting"]) if data.get("weighting") else None,
        )


def read_board(path: str | PathLike[str]) -> Leaderboard:
    """The leaderboard stored in file ``path``, checked as untrusted input first.

    A problem is a :class:`~rankkit.errors.TaskFormatError` naming the file and the field (exit 2).
    """
    from rankkit.data.file_checks import check_board_payload, read_json_file

    data = read_json_file(path)
    check_board_payload(data, str(path))
    return Leaderboard.from_dict(data)


def _match_tasks(matches: Sequence[Mapping[str, Any]]) -> list[str]:
    """The stored matches' task ids, or none when any match lacks one."""
    tasks = [m.get("task") for m in matches]
    return [str(task) for task in tasks] if tasks and all(task is not None for task in tasks) else []


def judge_info(judge: Judge, spec: str = "") -> dict[str, Any]:
    """What a board stores about its judge: ``spec`` (as given), ``description``, ``fingerprint``, ``simulated``."""
    return {
        "spec": spec,
        "description": judge.description,
        "fingerprint": judge.fingerprint,
        "simulated": judge.simulated,
    }


# Systems in tasks


def systems_of(task: Task) -> dict[str, str]:
    """System name -> candidate id for one task, in candidate order.

    Raises
    ------
    LeaderboardError
        When a candidate has no system, or two candidates share one.
    """
    found: dict[str, str] = {}
    for cand in task.candidates:
        if cand.system is None:
            raise LeaderboardError(
                f"task {task.task_id!r}: candidate {cand.id!r} has no system; "
                f"system leaderboards need a 'system' on every candidate"
            )
        if cand.system in found:
            raise LeaderboardError(
                f"task {task.task_id!r}: system {cand.system!r} has two candidates "
                f"({found[cand.system]!r} and {cand.id!r})"
            )
        found[cand.system] = cand.id
    return found


def all_systems(tasks: Iterable[Task]) -> list[str]:
    """Every system of the tasks, in order of first appearance."""
    names: dict[str, None] = {}
    for task in tasks:
        for name in systems_of(task):
            names.setdefault(name, None)
    refuse_look_alikes(names, "the candidates' systems", LeaderboardError)  # they would show as identical rows
    return list(names)


def restrict(tasks: Sequence[Task], systems: Iterable[str]) -> list[Task]:
    """The tasks with only the candidates of ``systems`` (tasks left with fewer than 2 dropped).

    Candidate ids and texts are unchanged, so cached judgments still apply.
    """
    keep = set(systems)
    out = []
    for task in tasks:
        candidates = tuple(c for c in task.candidates if c.system in keep)
        if len(candidates) >= 2:
            out.append(replace(task, candidates=candidates))
    return out
