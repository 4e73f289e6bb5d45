"""What a ranking strategy is, and the registry that finds strategies by name.

More in ``docs/strategies.md``.
"""

from __future__ import annotations

import dataclasses
import importlib
import math
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any, ClassVar

from rankkit.data.specs import Spec, SpecError, build_dataclass, convert_value, init_parameters, parse_spec
from rankkit.data.tasks import Task
from rankkit.judgments.judge_protocol import JudgeProtocol
from rankkit.judgments.spend import split_budget
from rankkit.strategies.order import ORDERS, check_order

if TYPE_CHECKING:  # rankkit.strategies.matches loads networkx; listing strategies should not
    from rankkit.strategies.matches import MatchSource


@dataclass(frozen=True)
class CandidateExtras:
    """What a strategy reports about one candidate besides its score; a field left None is not reported.

    The results JSON stores :meth:`to_dict`. A third-party strategy may add extras of its own: a
    frozen subclass with more fields (default None), named as its :attr:`Strategy.extras_type`.
    The strategies that fill a field are named in parentheses.

    Parameters
    ----------
    wins
        Matches won (panel_elo).
    draws
        Matches drawn (panel_elo).
    losses
        Matches lost (panel_elo, double_elimination).
    eliminated_round
        The round it was knocked out in (knockout, double_elimination); None for the champion.
    position
        Its place in the sorted order, 1 best (heapsort: None for the unsorted rest; sliding).
    settled
        Whether a pass fixed its position (sliding).
    opponent
        The candidate it was compared with (pairwise).
    parse_failed
        Whether the judge's grade could not be read (individual).
    points
        Points won, a draw counting half (elo, bt, swiss).
    played
        Matches played (all; 0 in individual; in elo and bt each order shown counts once).
    grades
        Every grade received, in order (knockout).
    byes
        Rounds advanced unplayed (knockout).
    opponents
        Every candidate met, in order (swiss).
    rounds
        Rounds the whole tournament took, the same for every candidate (knockout,
        double_elimination, swiss).
    ci_low
        Lower end of the bootstrap 95% interval of its score (bt with ``bootstrap``).
    ci_high
        Upper end of that interval.
    posterior_sd
        Posterior sd of its rating, Elo scale (active).
    steps
        Steps the run took, the same for every candidate (active).
    stopped
        Why it stopped, the same for every candidate (active; swiss and setwise_groups with ``until``).
    spent_judgments
        The task's distinct judgments where it stopped, beside ``stopped`` (active, swiss,
        setwise_groups, with ``until`` or a budget in another unit; ``docs/stopping.md``).
    spent_answers
        The answers those judgments showed (2 a comparison, k a k-way judgment).
    spent_tokens
        Their tokens: reported usage, else the estimate.
    spent_usd
        Their USD: reported cost, else tokens at the judge's price (0 without one).
    undecided
        How many of its comparisons failed, deciding nothing (pairwise strategies; see
        "Undecided comparisons" in :mod:`rankkit.strategies.matches`).
    """

    # The field order is the JSON's key order, the order each strategy has always written its keys in.
    wins: int | None = None
    draws: int | None = None
    losses: int | None = None
    eliminated_round: int | None = None
    position: int | None = None
    settled: bool | None = None
    opponent: str | None = None
    parse_failed: bool | None = None
    points: float | None = None
    played: int | None = None
    grades: tuple[float, ...] | None = None
    byes: int | None = None
    opponents: tuple[str, ...] | None = None
    rounds: int | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    posterior_sd: float | None = None
    steps: int | None = None
    stopped: str | None = None
    spent_judgments: int | None = None
    spent_answers: int | None = None
    spent_tokens: int | None = None
    spent_usd: float | None = None
    undecided: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """The fields that are not None, by name, tuples as lists."""
        return {
            f.name: list(value) if isinstance(value, tuple) else value
            for f in dataclasses.fields(self)
            if (value := getattr(self, f.name)) is not None
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CandidateExtras:
        """Read :meth:`to_dict` back (into this class or a strategy's subclass).

        Raises
        ------
        ValueError
            Naming a key that is not a field of ``cls``.
        """
        known = {f.name for f in dataclasses.fields(cls)}
        for key in data:
            if key not in known:
                raise ValueError(f"unknown candidate extra {key!r} (known: {', '.join(sorted(known))})")
        return cls(**{key: tuple(value) if isinstance(value, list) else value for key, value in data.items()})

    @classmethod
    def with_fields(cls, names: Iterable[str]) -> type[CandidateExtras]:
        """``cls``, or a frozen ``RecordedExtras`` subclass that also holds ``names`` (any JSON value):
        how extras of a strategy not installed here are read from a results file.

        Examples
        --------
        >>> Recorded = CandidateExtras.with_fields(["margin"])
        >>> Recorded.from_dict({"played": 2, "margin": 0.5}).to_dict()
        {'played': 2, 'margin': 0.5}
        """
        known = {f.name for f in dataclasses.fields(cls)}
        extra = [name for name in dict.fromkeys(names) if name not in known]
        if not extra:
            return cls
        return dataclasses.make_dataclass(
            "RecordedExtras", [(name, Any, field(default=None)) for name in extra], bases=(cls,), frozen=True
        )


@dataclass(frozen=True)
class Ranking:
    """A strategy's answer for one task.

    Parameters
    ----------
    scores
        A score per candidate, higher is better, on the strategy's own scale (grades, ratings, or
        rank-derived).
    ranking
        Candidate ids best first; derived from ``scores`` when None.
    champion
        The winner, for strategies that crown one.
    extras
        Per-candidate :class:`CandidateExtras` (may be empty).
    """

    scores: Mapping[str, float]
    ranking: list[str] | None = None
    champion: str | None = None
    extras: Mapping[str, CandidateExtras] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for cid, extras in self.extras.items():
            if not isinstance(extras, CandidateExtras):
                raise TypeError(f"Ranking.extras[{cid!r}] must be a CandidateExtras, got {type(extras).__name__}")

    def ordered(self, candidate_order: list[str]) -> list[str]:
        """The ranking, or the candidates sorted by score (ties keep ``candidate_order``, the data's order)."""
        if self.ranking is not None:
            return list(self.ranking)
        position = {cid: i for i, cid in enumerate(candidate_order)}
        return sorted(self.scores, key=lambda cid: (-self.scores[cid], position.get(cid, 0)))


class Strategy:
    """Base class: subclasses are frozen dataclasses decorated with :func:`register`.

    ``kind`` is the judgment needed: ``"pairwise"``, ``"pointwise"`` or ``"kway"`` (several answers
    at once). ``single_order`` names the one-order alternative of a strategy whose ``order``
    defaults to ``both`` (what ``debias=false`` means). A subclass that validates in
    ``__post_init__`` calls ``super().__post_init__()`` first.
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    #: The class of the extras its rankings report: :class:`CandidateExtras`, or a subclass of it
    #: with fields of the strategy's own (results files are read back into it).
    extras_type: ClassVar[type[CandidateExtras]] = CandidateExtras
    kind: ClassVar[str] = "pairwise"
    single_order: ClassVar[str | None] = None
    #: Each number parameter's accepted range, both ends included: name -> (lowest, highest).
    ranges: ClassVar[Mapping[str, tuple[float, float]]] = {}
    #: Every judgment it uses on a task is distinct, whatever the verdicts: a dry run too large to
    #: simulate counts from :meth:`exact_judgments` instead.
    distinct_requests: ClassVar[bool] = False

    def __post_init__(self) -> None:
        """Check ``order`` (:data:`ORDERS`), that no number parameter is NaN or infinite, and the ranges."""
        if hasattr(self, "order"):
            check_order(f"strategy {self.name}", self.order)
        for field_ in dataclasses.fields(self) if dataclasses.is_dataclass(self) else ():
            value = getattr(self, field_.name)
            if isinstance(value, float) and not math.isfinite(value):
                raise SpecError(f"strategy {self.name}: {field_.name} must be a finite number, got {value}")
        check_ranges(self)

    def rank(self, task: Task, source: MatchSource, rng: random.Random) -> Ranking:
        """Rank one task's candidates, asking ``source`` for judgments; ``rng`` is seeded by the run."""
        raise NotImplementedError

    def budget_in(self) -> str:
        """The unit its ``budget`` counts in: ``judgments`` unless a strategy takes ``budget_unit``
        (``answers``, ``tokens`` or ``usd``; ``docs/stopping.md``)."""
        return getattr(self, "budget_unit", "judgments")

    def exact_judgments(self, n_candidates: int) -> int | None:
        """How many judgments (comparisons + grades) :meth:`rank` uses on ``n_candidates`` whatever the
        verdicts (a knockout's N − 1); None when not fixed or not declared.

        Used, with :meth:`max_judgments`, only for cost: by the dry run and the size check before a
        large run (undeclared counts as every ordered pair and every grade).
        """
        return None

    def max_judgments(self, n_candidates: int) -> int | None:
        """The most judgments :meth:`rank` can use on ``n_candidates`` (default :meth:`exact_judgments`); None when not declared."""
        return self.exact_judgments(n_candidates)

    # -- presentation order -----------------------------------------------------------------
    @classmethod
    def default_order(cls) -> str | None:
        """The default of the ``order`` field (None for a strategy without one)."""
        field_ = cls.__dataclass_fields__.get("order") if dataclasses.is_dataclass(cls) else None
        return None if field_ is None or field_.default is dataclasses.MISSING else field_.default

    def params(self) -> dict[str, Any]:
        """The parameters by name, as results files store them (empty for a non-dataclass); a budget
        in judgments (the default unit) is stored as it always was, without ``budget_unit``."""
        params = dataclasses.asdict(self) if dataclasses.is_dataclass(self) else {}
        if params.get("budget_unit") == "judgments":
            del params["budget_unit"]
        return params

    @property
    def label(self) -> str:
        """Name plus the parameters that differ from the defaults, e.g. ``knockout:order=both``."""
        changed = []
        for f in dataclasses.fields(self) if dataclasses.is_dataclass(self) else ():
            value = getattr(self, f.name)
            default = f.default if f.default is not dataclasses.MISSING else None
            if f.name == "budget_unit":
                continue  # written after the budget's number, as a spec gives it
            if value != default or (f.name == "budget" and getattr(self, "budget_unit", "judgments") != "judgments"):
                text = str(value).lower() if isinstance(value, bool) else str(value)
                if f.name == "budget" and getattr(self, "budget_unit", "judgments") != "judgments":
                    text = f"{value:g}{self.budget_unit}"  # type: ignore[attr-defined]
                changed.append(f"{f.name}={text}")
        return self.name + (":" + ",".join(changed) if changed else "")


#: What each strategy kind needs of a judge (:meth:`~rankkit.judgments.judge_protocol.Capabilities.gives`).
_NEEDS = {
    "pairwise": "pairwise comparisons",
    "pointwise": "pointwise grades",
    "kway": "k-way judgments (several answers at once)",
}


def check_compatible(strategies: Iterable[Strategy], judge: JudgeProtocol) -> None:
    """Raise :class:`SpecError` when a strategy needs a kind of judgment the judge cannot give.

    Called before any judgment, so an impossible pairing (``individual`` with a compare-only judge)
    stops before other strategies have paid for theirs.
    """
    for strategy in strategies:
        if strategy.kind not in _NEEDS:
            raise SpecError(
                f"strategy {strategy.label}: kind must be one of {', '.join(_NEEDS)}, got {strategy.kind!r}"
            )
        what = _NEEDS[strategy.kind]
        if not judge.capabilities.gives(strategy.kind):
            others = [kind for kind in _NEEDS if judge.capabilities.gives(kind)]
            hint = f"; choose {' or '.join(others)} strategies or another judge" if others else ""
            raise SpecError(
                f"strategy {strategy.label} needs {what}, which judge {judge.description} cannot give{hint}"
            )


def check_ranges(strategy: Strategy) -> None:
    """Refuse a number parameter outside its class's :attr:`Strategy.ranges` (None is not checked).

    Raises
    ------
    SpecError
        Naming the strategy, the parameter, its value and the range.
    """
    for name, (lowest, highest) in strategy.ranges.items():
        value = getattr(strategy, name)
        if name == "budget" and getattr(strategy, "budget_unit", "judgments") != "judgments":
            continue  # the range is in judgments per candidate; another unit must only be > 0
        if value is not None and not lowest <= value <= highest:
            raise SpecError(f"strategy {strategy.name}: {name} must be {describe_range(lowest, highest)}, got {value}")


def describe_range(lowest: float, highest: float) -> str:
    """A range as ``rankkit strategies`` shows it, e.g. ``1 to 10,000`` or ``-1,000,000 to 1,000,000``."""
    return " to ".join(f"{end:,.0f}" if float(end).is_integer() else f"{end:g}" for end in (lowest, highest))


# -------------------------------------------------------------------------------------------
# Registry

#: The built-in strategies: name -> ``module:Class``, each imported only when asked for.
BUILTIN_STRATEGIES = {
    "active": "rankkit.strategies.active:Active",
    "bt": "rankkit.strategies.bt:BradleyTerry",
    "double_elimination": "rankkit.strategies.double_elimination:DoubleElimination",
    "elo": "rankkit.strategies.elo:Elo",
    "heapsort": "rankkit.strategies.heapsort:Heapsort",
    "individual": "rankkit.strategies.individual:Individual",
    "knockout": "rankkit.strategies.knockout:Knockout",
    "listwise": "rankkit.strategies.listwise:Listwise",
    "pairwise": "rankkit.strategies.pairwise:Pairwise",
    "panel_elo": "rankkit.strategies.panel_elo:PanelElo",
    "setwise_groups": "rankkit.strategies.setwise_groups:SetwiseGroups",
    "setwise_heapsort": "rankkit.strategies.setwise_heapsort:SetwiseHeapsort",
    "setwise_knockout": "rankkit.strategies.setwise_knockout:SetwiseKnockout",
    "sliding": "rankkit.strategies.sliding:SlidingWindow",
    "swiss": "rankkit.strategies.swiss:Swiss",
}

#: Third-party strategies are found through this entry-point group (see ``docs/strategies.md``).
ENTRY_POINT_GROUP = "rankkit.strategies"

_REGISTRY: dict[str, type[Strategy]] = {}


def register(name: str) -> Callable[[type[Strategy]], type[Strategy]]:
    """Class decorator: make a strategy available under ``name`` in this process (a package uses an
    entry point instead); sets the class's ``name``.

    Raises
    ------
    ValueError
        From the decorator, when another class is already registered under ``name``.
    """

    def decorate(cls: type[Strategy]) -> type[Strategy]:
        if name in _REGISTRY and _REGISTRY[name] is not cls:
            raise ValueError(f"strategy name {name!r} is already registered by {_REGISTRY[name].__module__}")
        cls.name = name
        _REGISTRY[name] = cls
        return cls

    return decorate


def _load(target: str) -> Any:
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)


def _plug_ins() -> dict[str, Any]:
    """The installed packages' strategies, by name (entry points, not yet loaded)."""
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def strategy_class(name: str) -> type[Strategy]:
    """The strategy registered under ``name``, importing only its module.

    Looks in this process's registrations, then :data:`BUILTIN_STRATEGIES`, then installed packages'
    ``rankkit.strategies`` entry points.

    Raises
    ------
    SpecError
        When there is none (naming the known ones), or an entry point is not a Strategy class.
    """
    if name not in _REGISTRY:
        if name in BUILTIN_STRATEGIES:
            _load(BUILTIN_STRATEGIES[name])  # its module registers it
        elif name in (plug_ins := _plug_ins()):
            loaded = plug_ins[name].load()
            if not (isinstance(loaded, type) and issubclass(loaded, Strategy)):
                raise SpecError(f"entry point {name!r} ({plug_ins[name].value}) is not a rankkit Strategy class")
            register(name)(loaded)
    if name not in _REGISTRY:
        raise SpecError(f"unknown strategy {name!r} (known: {', '.join(strategy_classes())})")
    return _REGISTRY[name]


def strategy_classes() -> dict[str, type[Strategy]]:
    """Every strategy by name, sorted (imports them all, for listings such as ``rankkit strategies``)."""
    for name in [*BUILTIN_STRATEGIES, *_plug_ins()]:
        if name not in _REGISTRY:
            strategy_class(name)
    return dict(sorted(_REGISTRY.items()))


def make_strategy(spec: str | Spec) -> Strategy:
    """Build a strategy from a spec such as ``knockout:order=both`` (or ``knockout:debias=true``).

    Raises
    ------
    SpecError
        For an unknown strategy, positional values, or parameters it does not take or cannot convert.
    """
    parsed = parse_spec(spec) if isinstance(spec, str) else spec
    cls = strategy_class(parsed.name)
    if parsed.positional:
        raise SpecError(f"strategy {parsed.name}: unexpected value(s) {', '.join(parsed.positional)}; use key=value")
    where = f"strategy {parsed.name}"
    options = budget_with_unit(cls, debias_as_order(cls, parsed.options, where=where), where=where)
    return build_dataclass(cls, options, where=where)


def budget_with_unit(cls: type[Strategy], options: dict[str, str], *, where: str) -> dict[str, str]:
    """Split ``budget=6answers`` into ``budget=6`` and ``budget_unit=answers`` for a strategy with a
    ``budget_unit`` (:mod:`rankkit.judgments.spend`); ``where`` names the spec in errors."""
    if "budget" not in options or "budget_unit" not in init_parameters(cls):
        return options
    number, unit = split_budget(options["budget"], f"{where}: budget")
    if unit != "judgments" and options.get("budget_unit", unit) != unit:
        raise SpecError(f"{where}: budget={options['budget']} contradicts budget_unit={options['budget_unit']}")
    split = {**options, "budget": number}
    if unit != "judgments":
        split["budget_unit"] = unit
    return split


def debias_as_order(cls: type[Strategy], options: dict[str, str], *, where: str) -> dict[str, str]:
    """Translate the paper's ``debias=true|false`` option into ``order``: ``both``, or the strategy's
    one-order alternative (``single_order``, else its default). ``where`` names the spec in errors.

    Raises
    ------
    SpecError
        When ``debias`` and ``order`` disagree, or for ``debias`` on a strategy without ``order``.
    """
    if "debias" not in options:
        return options
    default = cls.default_order()
    if default is None:
        raise SpecError(f"{where}: debias is not a parameter here (it has no order of presentation)")
    debias = convert_value(options["debias"], bool, where=f"{where}: debias")
    wanted = "both" if debias else (cls.single_order or default)
    if options.get("order", wanted) != wanted:
        raise SpecError(
            f"{where}: debias={str(debias).lower()} means order={wanted}, which contradicts order={options['order']}"
        )
    translated = {key: value for key, value in options.items() if key != "debias"}
    translated["order"] = wanted
    return translated


def describe_parameters(cls: type[Strategy]) -> list[tuple[str, str, Any]]:
    """(name, type, default) of each field, for ``rankkit strategies``; the type lists ``order``'s values or a number's range."""
    rows = []
    for f in dataclasses.fields(cls) if dataclasses.is_dataclass(cls) else ():
        default = f.default if f.default is not dataclasses.MISSING else None
        type_name = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
        if f.name == "order" and default in ORDERS:
            type_name = "|".join(getattr(cls, "orders", ORDERS))  # k-way strategies: given|random|permute
        if f.name in cls.ranges:
            type_name = f"{type_name}, {describe_range(*cls.ranges[f.name])}"
        rows.append((f.name, type_name, default))
    return rows


def rank_by_score(scores: Mapping[str, float]) -> list[str]:
    """Candidate ids sorted best first (ties keep insertion order)."""
    return sorted(scores, key=lambda cid: -scores[cid])


def most_judgments(n_candidates: int, strategies: Sequence[Strategy]) -> tuple[list[tuple[Strategy, int]], set[str]]:
    """Per strategy the most judgments it can ask of a task of ``n_candidates``, each capped at every
    distinct judgment of the task (``n(n - 1)`` ordered pairs and ``n`` grades), and the names of the
    strategies that declare no bound (counted at that cap)."""
    everything = n_candidates * (n_candidates - 1) + n_candidates
    counts, undeclared = [], set()
    for strategy in strategies:
        worst = strategy.max_judgments(n_candidates)
        if worst is None:
            undeclared.add(strategy.name)
            worst = everything
        counts.append((strategy, min(worst, everything)))
    return counts, undeclared
