"""Ranking strategies, one module each, all behind one registry (see :mod:`rankkit.strategies.base`).

The strategy classes are importable from here (``from rankkit.strategies import Knockout``); each
module loads when its class is first asked for.
"""

from __future__ import annotations

from typing import Any

#: The public names of :mod:`rankkit.strategies.base`, loaded on first use, so importing a submodule
#: such as ``rankkit.strategies.order`` (the CLI does, for its choices) does not load the registry.
_BASE = (
    "BUILTIN_STRATEGIES",
    "CandidateExtras",
    "Ranking",
    "Strategy",
    "describe_parameters",
    "make_strategy",
    "rank_by_score",
    "register",
    "strategy_class",
    "strategy_classes",
)

__all__ = [name for name in _BASE if name != "BUILTIN_STRATEGIES"]


def __getattr__(name: str) -> Any:
    from importlib import import_module

    if name in _BASE:
        return getattr(import_module("rankkit.strategies.base"), name)
    builtins = import_module("rankkit.strategies.base").BUILTIN_STRATEGIES
    classes = {target.partition(":")[2]: target for target in builtins.values()}  # class name -> module:Class
    if name in classes:
        module, _, attribute = classes[name].partition(":")
        return getattr(import_module(module), attribute)
    raise AttributeError(f"module 'rankkit.strategies' has no attribute {name!r}")
