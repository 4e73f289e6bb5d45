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
class Ranking:
    """A strategy's answer for one task.

    scores: a score per candidate, higher is better (its scale is the strategy's own: grades for
        ``individual`` and ``knockout``, ratings for ``elo``, rank-derived for sorting strategies).
    ranking: candidate ids best first; derived from ``scores`` when not given.
    champion: the winner, for strategies that crown one (a tournament's last survivor).
    extras: per-candidate details, e.g. ``{"c01": {"eliminated_round": 1, "played": 1}}``.
    """

    scores: Mapping[str, float]
    ranking: list[str] | None = None
    champion: str | None = None
    extras: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def ordered(self, candidate_order: list[str]) -> list[str]:
        """The ranking, or the candidates sorted by score (ties keep the data's order)."""
        if self.ranking is not None:
            return list(self.ranking)
        position = {cid: i for i, cid in enumerate(candidate_order)}
        return sorted(self.scores, key=lambda cid: (-self.scores[cid], position.get(cid, 0)))


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

    def exact_judgments(self, n_candidates: int) -> int | None:
        """How many judgments (comparisons + grades, counted as the run counts them) :meth:`rank`
        uses on a task of ``n_candidates`` whatever the verdicts, when that number is fixed (a
        knockout's N − 1); None when it is not, or not declared.

        Only the dry run (``--dry-run``) reads it and :meth:`max_judgments`, and only for a
        strategy whose path depends on verdicts (see :mod:`rankkit.plan.dry_run`): with them, its
        figures there are exact or bounds rather than estimates.
        """
        return None

    def max_judgments(self, n_candidates: int) -> int | None:
        """The most judgments :meth:`rank` can use on a task of ``n_candidates``, whatever the
        verdicts (default: :meth:`exact_judgments`); None when not declared."""
        return self.exact_judgments(n_candidates)

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
