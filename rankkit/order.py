"""The presentation orders (``given``, ``random``, ``both``) and the small helpers strategies share.

What each order means, and which one every strategy uses by default, is stated once, in
``docs/matches.md``; :class:`~rankkit.matches.MatchSource` applies it.
This module has no heavy imports, so strategies use it without loading networkx.
"""

from __future__ import annotations

import random

from rankkit.specs import SpecError

#: The presentation orders, as a strategy's ``order`` parameter spells them.
ORDERS = ("given", "random", "both")


def check_order(where: str, order: str) -> None:
    """Raise :class:`SpecError` unless ``order`` is one of :data:`ORDERS`.

    Parameters
    ----------
    where : str
        What to name in the error (the strategy).
    order : str
        The presentation order.

    Raises
    ------
    SpecError
        When ``order`` is not allowed.
    """
    if order not in ORDERS:
        raise SpecError(f"{where}: order must be one of {', '.join(ORDERS)}, got {order!r}")


def judgments_per_match(order: str) -> int:
    """What one match costs in judgments: 2 when both orders are shown, else 1.

    Parameters
    ----------
    order : str
        The presentation order.

    Returns
    -------
    int
        1 or 2.
    """
    return 2 if order == "both" else 1


def coin_order(a: str, b: str, rng: random.Random) -> tuple[str, str]:
    """The pair in a seeded random order: one draw from ``rng``; below ½ keeps it as passed.

    Parameters
    ----------
    a, b : str
        The candidate ids.
    rng : random.Random
        The strategy's generator.

    Returns
    -------
    tuple[str, str]
        ``(a, b)`` or ``(b, a)``.
    """
    return (a, b) if rng.random() < 0.5 else (b, a)
