"""Ranking strategies, one module each, all behind one registry (see :mod:`rankkit.strategies.base`).

The strategy classes are importable from here (``from rankkit.strategies import Knockout``); each
module loads when its class is first asked for.
"""

from __future__ import annotations

from typing import Any

from rankkit.strategies.base import (
    BUILTIN_STRATEGIES,
    CandidateExtras,
    Ranking,
    Strategy,
    describe_parameters,
    make_strategy,
    rank_by_score,
    register,
    strategy_class,
    strategy_classes,
)

#: Class name -> its ``module:Class`` target, for the lazy exports below.
_CLASSES = {target.partition(":")[2]: target for target in BUILTIN_STRATEGIES.values()}

__all__ = [
    "CandidateExtras",
    "Ranking",
    "Strategy",
    "describe_parameters",
    "make_strategy",
    "rank_by_score",
    "register",
    "strategy_class",
    "strategy_classes",
    *_CLASSES,
]


def __getattr__(name: str) -> Any:
    if name in _CLASSES:
        from importlib import import_module

        module, _, attribute = _CLASSES[name].partition(":")
        return getattr(import_module(module), attribute)
    raise AttributeError(f"module 'rankkit.strategies' has no attribute {name!r}")
