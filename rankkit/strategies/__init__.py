"""Ranking strategies, one module each, all behind one registry (see :mod:`rankkit.strategies.base`)."""

from rankkit.strategies.base import (
    Ranking,
    Strategy,
    describe_parameters,
    make_strategy,
    rank_by_score,
    register,
    strategy_classes,
)

__all__ = ["Ranking", "Strategy", "describe_parameters", "make_strategy", "rank_by_score", "register",
           "strategy_classes"]
