"""The price of one judgment, for forecasts in dollars: the hook a priced judge fills in.

A judge that knows what a judgment costs defines ``usd_per_judgment`` (a number, or a property
returning one; None when unknown). The forecasts of the stopping rules (the progress bar during a
run, ``--dry-run`` before it) multiply the judgments they expect by it; without it they print
judgments only.
"""

from __future__ import annotations

import math
from typing import Any


def price_per_judgment(judge: Any) -> float | None:
    """The judge's price of one judgment in US dollars, or None when it declares none.

    Parameters
    ----------
    judge: any judge; only its optional ``usd_per_judgment`` attribute is read.

    Returns
    -------
    float | None
        The price (>= 0 and finite), or None.

    >>> class Priced:
    ...     usd_per_judgment = 0.002
    >>> price_per_judgment(Priced()), price_per_judgment(object())
    (0.002, None)
    """
    price = getattr(judge, "usd_per_judgment", None)
    if price is None:
        return None
    price = float(price)
    return price if math.isfinite(price) and price >= 0 else None
