"""The presentation orders (``given``, ``random``, ``both``) and small helpers strategies share.

What each order means is stated once, in ``docs/matches.md``. No heavy imports (no networkx).
"""

from __future__ import annotations

import random

from rankkit.data.specs import SpecError

#: The presentation orders, as a strategy's ``order`` parameter spells them.
ORDERS = ("given", "random", "both")


def check_order(where: str, order: str) -> None:
    """Raise :class:`SpecError` naming ``where`` unless ``order`` is one of :data:`ORDERS`."""
    if order not in ORDERS:
        raise SpecError(f"{where}: order must be one of {', '.join(ORDERS)}, got {order!r}")


def judgments_per_match(order: str) -> int:
    """What one match costs in judgments: 2 when both orders are shown, else 1."""
    return 2 if order == "both" else 1


def coin_order(a: str, b: str, rng: random.Random) -> tuple[str, str]:
    """The pair in a seeded random order: one draw from ``rng``; below ½ keeps ``(a, b)``."""
    return (a, b) if rng.random() < 0.5 else (b, a)
