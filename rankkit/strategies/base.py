"""What a ranking strategy is, and the registry that finds strategies by name.

A strategy is a frozen dataclass whose fields are its parameters (scikit-learn style: the
constructor only stores them). ``rank(task, source, rng)`` ranks one task, asking for every
judgment through the :class:`~rankkit.matches.MatchSource` and drawing every random choice from
``rng``, and returns a :class:`Ranking`. Everything else (the shared graph, the cache, counting the
cost, metrics) is the runner's job, so a strategy is only its algorithm.

A pairwise strategy has an ``order`` parameter (``given``, ``random`` or ``both``: which of two
answers the judge sees first), passed to the match source with every duel; its default is the
field's default, its one-order alternative ``single_order``, and ``debias=true|false`` is accepted
as an alias (see :mod:`rankkit.matches` for the policy, :meth:`Strategy.resolve_debias` for the alias).

Strategies register with ``@register("name")``. Other packages add strategies without editing
rankkit through the ``rankkit.strategies`` entry-point group::

    [project.entry-points."rankkit.strategies"]
    mystrategy = "mypackage.module:MyStrategy"
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import random
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Iterable, Mapping

from rankkit.order import ORDERS, check_order
from rankkit.specs import Spec, SpecError, build_dataclass, parse_spec
from rankkit.tasks import Task

if TYPE_CHECKING:  # rankkit.matches loads networkx; listing strategies should not
    from rankkit.judges.base import Judge
    from rankkit.matches import MatchSource


@dataclass(frozen=True)
class CandidateExtras:
    """What a strategy reports about one candidate besides its score; every field is optional.

    Each built-in strategy fills the fields that apply to it (named in parentheses); a field left None
    is not reported. In the results JSON a candidate's extras are :meth:`to_dict`: these field
    names as keys, unreported ones left out (the HTML report's script reads ``eliminated_round``,
    ``played`` and ``byes`` there). A third-party strategy may report none.

    wins / draws / losses: duels it won, drew, lost (panel_elo; losses also double_elimination).
    eliminated_round: the round it was knocked out in (knockout, double_elimination); None for the
        champion, who never was.
    position: its place in the sorted order, 1 best (heapsort: None for the unsorted rest; sliding).
    settled: whether a pass fixed its position (sliding).
    opponent: the candidate it was compared with (pairwise).
    parse_failed: whether the judge's grade could not be read (individual).
    points: points it won, a draw counting half (elo, bt, swiss).
    played: duels it played (every built-in strategy; 0 in ``individual``).
    grades: every grade it received, in the order received (knockout).
    byes: rounds it advanced unplayed (knockout).
    opponents: every candidate it met, in order (swiss).
    rounds: rounds the whole tournament took, the same for every candidate (knockout,
        double_elimination, swiss).
    ci_low / ci_high: the bootstrap 95% interval of its score (bt with ``bootstrap``).
    posterior_sd: the posterior standard deviation of its rating, Elo scale (active).
    steps / stopped: how many steps the run took and why it stopped, the same for every
        candidate (active).
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

    def to_dict(self) -> dict[str, Any]:
        """The reported fields as JSON: field name -> value (tuples as lists), None fields left out."""
        return {f.name: list(value) if isinstance(value, tuple) else value
                for f in dataclasses.fields(self) if (value := getattr(self, f.name)) is not None}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "CandidateExtras":
        """Read :meth:`to_dict` back. Raises ValueError naming a key that is not a field."""
        known = {f.name for f in dataclasses.fields(cls)}
        for key in data:
            if key not in known:
                raise ValueError(f"unknown candidate extra {key!r} (known: {', '.join(sorted(known))})")
        return cls(**{key: tuple(value) if isinstance(value, list) else value for key, value in data.items()})


@dataclass(frozen=True)
class Ranking:
    """A strategy's answer for one task.

    scores: a score per candidate, higher is better (its scale is the strategy's own: grades for
        ``individual`` and ``knockout``, ratings for ``elo``, rank-derived for sorting strategies).
    ranking: candidate ids best first; derived from ``scores`` when not given.
    champion: the winner, for strategies that crown one (a tournament's last survivor).
    extras: per-candidate details, e.g. ``{"c01": CandidateExtras(eliminated_round=1, played=1)}``
        (may be empty).
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
        """The ranking, or the candidates sorted by score (ties keep the data's order)."""
        if self.ranking is not None:
            return list(self.ranking)
        position = {cid: i for i, cid in enumerate(candidate_order)}
        return sorted(self.scores, key=lambda cid: (-self.scores[cid], position.get(cid, 0)))


@dataclass(frozen=True)
class Plan:
    """What a strategy will ask on one task, known before anything is asked (``--dry-run``).

    comparisons: the pairwise judgments it will use, counted as the run's ``comparisons`` column
        counts them (distinct ordered pairs): exact, or an upper bound when ``exact`` is False.
    grades: the pointwise judgments it will use (exact, or an upper bound).
    exact: whether both counts are exact.
    pairs: ordered pairs (first shown first) certain to be asked — all of them when the strategy's
        pairs are fixed in advance, a part (knockout's first round) when later ones depend on verdicts.
    points: candidates certain to be graded.
    note: how the counts were obtained, shown beside them (e.g. "later rounds depend on verdicts").
    """

    comparisons: int
    grades: int = 0
    exact: bool = True
    pairs: tuple[tuple[str, str], ...] = ()
    points: tuple[str, ...] = ()
    note: str = ""

    @property
    def complete(self) -> bool:
        """Whether every judgment is known in advance (so the cache can be asked about each)."""
        return self.exact and len(set(self.pairs)) == self.comparisons and len(set(self.points)) == self.grades


class Strategy:
    """Base class: subclasses are frozen dataclasses decorated with :func:`register`.

    ``kind`` says which judgments the strategy needs: ``"pairwise"`` or ``"pointwise"``.

    ``single_order`` is the order ``debias=false`` stands for in a strategy whose ``order`` field
    defaults to ``both``; in the others it is None, and ``debias=false`` is the field's default.
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    kind: ClassVar[str] = "pairwise"
    single_order: ClassVar[str | None] = None

    def rank(self, task: Task, source: MatchSource, rng: random.Random) -> Ranking:
        raise NotImplementedError

    def plan(self, task: Task, rng: random.Random) -> Plan:
        """What :meth:`rank` will ask on ``task``, without asking (see :class:`Plan`).

        rng: a generator seeded exactly like the one :meth:`rank` gets, so a strategy whose pairs
            are drawn at random can name them; a plan must draw from it in the same order as rank.

        The default holds for any strategy, because a run counts each ordered pair and each grade
        once: at most N(N−1) comparisons and N grades. Strategies override it with their own
        exact count or tighter bound.
        """
        n = len(task.candidates)
        return Plan(comparisons=n * (n - 1), grades=n, exact=False,
                    note="bound for any strategy: each ordered pair and each grade once")

    # -- presentation order -----------------------------------------------------------------
    @classmethod
    def default_order(cls) -> str | None:
        """The default of the ``order`` field (None for a strategy without one)."""
        field_ = cls.__dataclass_fields__.get("order") if dataclasses.is_dataclass(cls) else None
        return None if field_ is None or field_.default is dataclasses.MISSING else field_.default

    @classmethod
    def undebiased_order(cls) -> str | None:
        """The order ``debias=false`` stands for: ``single_order``, or the default when that is one order."""
        return cls.single_order or cls.default_order()

    def resolve_debias(self, debias: bool | None) -> None:
        """Apply the ``debias`` alias and check ``order``; pairwise strategies call this first in
        ``__post_init__`` (their ``debias`` is an ``InitVar``, stored nowhere but in ``order``).

        ``debias=true`` is ``order=both``, ``debias=false`` the strategy's one order
        (:meth:`undebiased_order`); naming an ``order`` other than the default that contradicts it
        is an error.
        """
        if debias is not None:
            wanted = "both" if debias else self.undebiased_order()
            if self.order not in (self.default_order(), wanted):
                raise SpecError(f"strategy {self.name}: debias={str(debias).lower()} means order={wanted}, "
                                f"which contradicts order={self.order}")
            object.__setattr__(self, "order", wanted)  # frozen: the alias is resolved once, at construction
        check_order(f"strategy {self.name}", self.order)

    def _written(self, key: str, value: Any) -> tuple[str, Any]:
        """A parameter as labels and results files spell it: ``order`` through the ``debias``
        alias where the alias can say it (so names written before ``order`` existed still match)."""
        if key == "order" and value in ORDERS:
            if value == "both":
                return "debias", True
            if value == self.undebiased_order():
                return "debias", False
        return key, value

    def params(self) -> dict[str, Any]:
        """The parameters (``order`` spelled as ``debias`` where the alias can say it)."""
        values = dataclasses.asdict(self) if dataclasses.is_dataclass(self) else {}
        return dict(self._written(key, value) for key, value in values.items())

    @property
    def label(self) -> str:
        """Name plus the parameters that differ from the defaults, e.g. ``knockout:debias=true``."""
        changed = []
        for f in dataclasses.fields(self) if dataclasses.is_dataclass(self) else ():
            value = getattr(self, f.name)
            default = f.default if f.default is not dataclasses.MISSING else None
            if value != default:
                key, value = self._written(f.name, value)
                text = str(value).lower() if isinstance(value, bool) else str(value)
                changed.append(f"{key}={text}")
        return self.name + (":" + ",".join(changed) if changed else "")


#: The judge capability (a ``Judge`` class attribute) each strategy kind needs, and what it is called.
_NEEDS = {"pairwise": ("supports_pairwise", "pairwise comparisons"),
          "pointwise": ("supports_pointwise", "pointwise grades")}


def check_compatible(strategies: Iterable[Strategy], judge: "Judge") -> None:
    """Raise :class:`SpecError` when a strategy needs a kind of judgment the judge cannot give.

    Called before any judgment is asked, so an impossible pairing (say ``individual``, which
    grades single answers, with a ``replay:`` or ``panel:`` judge, which only compares) stops at
    once instead of after the other strategies have paid for their judgments.

    strategies: the strategies of a run; each declares what it needs in ``Strategy.kind``.
    judge: the run's judge; it declares what it gives in ``supports_pairwise`` / ``supports_pointwise``.
    """
    for strategy in strategies:
        if strategy.kind not in _NEEDS:
            raise SpecError(f"strategy {strategy.label}: kind must be one of {', '.join(_NEEDS)}, "
                            f"got {strategy.kind!r}")
        capability, what = _NEEDS[strategy.kind]
        if not getattr(judge, capability, True):
            others = [kind for kind, (flag, _) in _NEEDS.items() if getattr(judge, flag, True)]
            hint = f"; choose {' or '.join(others)} strategies or another judge" if others else ""
            raise SpecError(f"strategy {strategy.label} needs {what}, which judge {judge.description} "
                            f"cannot give{hint}")


# -------------------------------------------------------------------------------------------
# Registry

_REGISTRY: dict[str, type[Strategy]] = {}
_loaded = False


def register(name: str) -> Callable[[type[Strategy]], type[Strategy]]:
    """Class decorator: make a strategy available under ``name``."""

    def decorate(cls: type[Strategy]) -> type[Strategy]:
        if name in _REGISTRY and _REGISTRY[name] is not cls:
            raise ValueError(f"strategy name {name!r} is already registered by {_REGISTRY[name].__module__}")
        cls.name = name
        _REGISTRY[name] = cls
        return cls

    return decorate


def _load_all() -> None:
    """Import the built-in strategy modules and the entry-point plug-ins (once)."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    # Every module of this package except `base` holds built-in strategies: adding a strategy is
    # adding a module, with no list to keep in step.
    package = importlib.import_module("rankkit.strategies")
    for info in pkgutil.iter_modules(package.__path__):
        if info.name != "base" and not info.name.startswith("_"):
            importlib.import_module(f"rankkit.strategies.{info.name}")
    for ep in entry_points(group="rankkit.strategies"):
        obj = ep.load()
        if isinstance(obj, type) and issubclass(obj, Strategy) and ep.name not in _REGISTRY:
            register(ep.name)(obj)


def strategy_classes() -> dict[str, type[Strategy]]:
    """All registered strategies by name (built-ins and plug-ins)."""
    _load_all()
    return dict(sorted(_REGISTRY.items()))


def make_strategy(spec: str | Spec) -> Strategy:
    """Build a strategy from a spec such as ``knockout:debias=true``."""
    parsed = parse_spec(spec) if isinstance(spec, str) else spec
    classes = strategy_classes()
    if parsed.name not in classes:
        raise SpecError(f"unknown strategy {parsed.name!r} (known: {', '.join(classes)})")
    if parsed.positional:
        raise SpecError(f"strategy {parsed.name}: unexpected value(s) {', '.join(parsed.positional)}; use key=value")
    strategy = build_dataclass(classes[parsed.name], parsed.options, where=f"strategy {parsed.name}")
    # Both spellings of the order in one spec must agree (resolve_debias cannot tell an order
    # named explicitly from the default).
    if "debias" in parsed.options and parsed.options.get("order", strategy.order) != strategy.order:
        raise SpecError(f"strategy {parsed.name}: debias={parsed.options['debias']} means order={strategy.order}, "
                        f"which contradicts order={parsed.options['order']}")
    return strategy


def describe_parameters(cls: type[Strategy]) -> list[tuple[str, str, Any]]:
    """(name, type, default) of each parameter, for ``rankkit strategies``; a strategy with an
    ``order`` also lists its ``debias`` alias, right after it."""
    rows = []
    for f in dataclasses.fields(cls) if dataclasses.is_dataclass(cls) else ():
        default = f.default if f.default is not dataclasses.MISSING else None
        type_name = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
        if f.name == "order" and default in ORDERS:
            type_name = "|".join(ORDERS)
        rows.append((f.name, type_name, default))
        if f.name == "order" and default in ORDERS:
            rows.append(("debias", f"bool, alias: true = order=both, false = order={cls.undebiased_order()}",
                         default == "both"))
    return rows


def rank_by_score(scores: Mapping[str, float]) -> list[str]:
    """Candidate ids sorted best first (ties keep insertion order)."""
    return sorted(scores, key=lambda cid: -scores[cid])
