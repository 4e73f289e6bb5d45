"""Bradley–Terry with a persistent effect per pair: the pairwise stopping rule's likelihood (``stopping=pair_effects``).

``P(i beats j) = σ(θ_i − θ_j + u_ij)`` with ``u_ij ~ N(0, s²)`` drawn once per unordered pair and
shared by both presentation orders and every re-ask, so the judgments of one pair are correlated
votes, not independent ones; ``s = 0`` is plain Bradley–Terry. The pair effect is integrated out
per pair by Gauss–Hermite quadrature. Why: ``docs/stopping.md``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from functools import cache
from itertools import combinations
from typing import TYPE_CHECKING

from rankkit.data.specs import SpecError

if TYPE_CHECKING:  # numpy loads when a task is ranked, not on import
    import numpy as np

    from rankkit.strategies._bt_posterior import Evidence

#: The pair effect's sd s (logit units) is one of these, equally likely, under ``stopping=pair_effects``
#: (0: some judges have none; 2: a pair preference as large as a strong judge's whole noise).
PAIR_SDS = (0.0, 1.0, 2.0)

#: The pairwise stopping rules (``stopping=``): the pair effect's sds each averages over. ``pair_effects``: the
#: judgments of one pair share an effect (with ``pair_sd=`` the judge's own sd instead of these);
#: ``bt``: every distinct judgment an independent Bradley–Terry vote (the default).
STOPPING_RULES: dict[str, tuple[float, ...]] = {"pair_effects": PAIR_SDS, "bt": (0.0,)}

#: Gauss–Hermite nodes per table entry: with s up to 4 the integrand's sigmoids need many (8 erred by up
#: to 0.05 per pair at s = 2, 48 by 0.005 at s = 4); a table is built once per (judgments, wins, s).
NODES = 120


def check_rule(where: str, stopping: str, pair_sd: float | None = None) -> None:
    """Raise :class:`SpecError` (naming ``where``) unless ``stopping`` names a rule in :data:`STOPPING_RULES`
    and ``pair_sd`` (the judge's pair-effect sd, logit units) is None or >= 0 with ``stopping=pair_effects``."""
    if stopping not in STOPPING_RULES:
        raise SpecError(f"{where}: stopping must be one of {', '.join(STOPPING_RULES)}, got {stopping!r}")
    if pair_sd is not None and stopping != "pair_effects":
        raise SpecError(f"{where}: pair_sd needs stopping=pair_effects, got stopping={stopping}")
    if pair_sd is not None and not 0 <= pair_sd <= MOST_PAIR_SD:
        raise SpecError(f"{where}: pair_sd must be between 0 and {MOST_PAIR_SD:g} (logit units), got {pair_sd}")


#: The largest pair-effect sd ``pair_sd=`` takes (logit units): beyond it a pair's verdict says nothing.
MOST_PAIR_SD = 10.0


def rule_pair_sds(stopping: str, pair_sd: float | None = None) -> tuple[float, ...]:
    """The pair-effect sds a rule averages over: ``(pair_sd,)`` when the judge's is known (``pair_sd=``,
    e.g. :func:`rankkit.strategies._pair_sd.pair_sd_posterior` of a pilot run), else :data:`STOPPING_RULES`'s.

    >>> rule_pair_sds("pair_effects"), rule_pair_sds("pair_effects", 1.5), rule_pair_sds("bt")
    ((0.0, 1.0, 2.0), (1.5,), (0.0,))
    """
    return (pair_sd,) if pair_sd is not None and stopping == "pair_effects" else STOPPING_RULES[stopping]


def pair_totals(evidence: Evidence) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The outcomes per unordered pair: (lower rows, higher rows, wins of the lower row — a tie half
    each way —, judgments), one entry per pair that has any."""
    import numpy as np

    first, second, outcome = evidence.arrays
    low, high = np.minimum(first, second), np.maximum(first, second)
    wins_of_low = np.where(first == low, outcome, 1.0 - outcome)
    keys, where = np.unique(low * evidence.n_items + high, return_inverse=True)
    wins = np.bincount(where, wins_of_low, len(keys))
    counts = np.bincount(where, None, len(keys)).astype(float)
    return keys // evidence.n_items, keys % evidence.n_items, wins, counts


def pair_effect_log_likelihood(theta: np.ndarray, evidence: Evidence, pair_sd: float) -> np.ndarray:
    """Each draw's (row of ``theta``) log-likelihood of the evidence with the pair effects integrated out.

    With ``pair_sd > 0`` each pair's term is read off a table of its integral over the gap
    (:func:`integrated_table`), interpolated linearly: a pair's term depends on the gap and on its
    (judgments, wins) only, and a task has few distinct such counts.

    Examples
    --------
    >>> import numpy as np
    >>> from rankkit.strategies._bt_posterior import Evidence
    >>> evidence = Evidence(2); evidence.add(0, 1, 1.0); evidence.add(1, 0, 0.0)  # row 0 wins in both orders
    >>> independent = pair_effect_log_likelihood(np.zeros((1, 2)), evidence, 0.0)  # log ¼
    >>> correlated = pair_effect_log_likelihood(np.zeros((1, 2)), evidence, 2.0)  # E[σ(u)²] > ¼
    >>> bool(correlated[0] > independent[0]), round(float(independent[0]), 4)
    (True, -1.3863)
    """
    import numpy as np

    low, high, wins, counts = pair_totals(evidence)
    gaps = theta[:, low] - theta[:, high]
    if pair_sd == 0:
        return -(counts * np.logaddexp(0.0, -gaps) + (counts - wins) * gaps).sum(axis=1)
    kinds, kind_of_pair = np.unique(np.stack([counts, wins], axis=1), axis=0, return_inverse=True)
    # Past the gap where the effect's tilted mass (at ∓ m·s², m the larger of wins and losses) is
    # TABLE_MARGIN inside, the term is linear in the gap: slope −(n − w) above, w below.
    reach = TABLE_MARGIN + math.ceil(float(np.maximum(kinds[:, 1], kinds[:, 0] - kinds[:, 1]).max()) * pair_sd**2)
    tables = np.stack([integrated_table(float(n), float(w), pair_sd, reach) for n, w in kinds])
    inside = np.clip(gaps, -reach, reach)
    position = (inside + reach) / TABLE_STEP
    index = np.minimum(position.astype(np.intp), tables.shape[1] - 2)
    fraction = position - index
    row = kind_of_pair.reshape(-1)[None, :]
    values = tables[row, index] * (1.0 - fraction) + tables[row, index + 1] * fraction
    beyond = gaps - inside
    values += np.where(beyond > 0, -(counts - wins), wins) * beyond
    return values.sum(axis=1)


#: The gap tables reach this far (logit units) past the pair effect's tilt, by this step; linear
#: interpolation errs by at most step²·n/32 per pair of n judgments (the term's curvature is at most n/4).
TABLE_MARGIN = 40
TABLE_STEP = 0.01


@cache
def integrated_table(counts: float, wins: float, pair_sd: float, reach: int) -> np.ndarray:
    """``log E_u[σ(x + u)^w σ(−x − u)^(n − w)]``, ``u ~ N(0, pair_sd²)``, at ``x`` from −``reach``
    to +``reach`` by :data:`TABLE_STEP`, by :data:`NODES`-point Gauss–Hermite quadrature."""
    import numpy as np

    x = np.linspace(-reach, reach, round(2 * reach / TABLE_STEP) + 1)
    nodes, weights = np.polynomial.hermite_e.hermegauss(NODES)
    shifted = x[:, None] + pair_sd * nodes
    # log σ(y)^w σ(−y)^(n−w) = −n·log(1 + e^−y) − (n − w)·y
    per_node = -(counts * np.logaddexp(0.0, -shifted) + (counts - wins) * shifted)
    top = per_node.max(axis=1)
    return top + np.log(np.exp(per_node - top[:, None]) @ (weights / weights.sum()))


def vote_weights(evidence: Evidence, curvature: np.ndarray, pair_sd: float) -> np.ndarray:
    """Each outcome's share of a vote under the pair effect: ``1 / (1 + n c s²)``, ``n`` its pair's
    judgments and ``c`` its curvature — the mean of ``n`` votes of information ``c`` that share an
    effect of variance ``s²`` has variance ``1/(n c) + s²``. Scales the Laplace proposal's curvature.
    """
    import numpy as np

    first, second, _ = evidence.arrays
    keys, where = np.unique(
        np.minimum(first, second) * evidence.n_items + np.maximum(first, second), return_inverse=True
    )
    counts = np.bincount(where, None, len(keys))[where]
    return 1.0 / (1.0 + counts * curvature * pair_sd**2)


def choice_weights(choices: Sequence[tuple[Sequence[int], int]], pair_sd: float | None = None) -> list[float]:
    """Each first choice's share of a vote under persistent pair effects (``setwise_groups:stopping=pair_effects``).

    A choice ``(members, chosen)`` is a vote on the pairs (chosen, other member); a pair shown together
    in ``n`` choices shares one effect, so (as in :func:`vote_weights`) its votes count
    ``1 / (1 + n c s²)`` each, with ``s²`` the judge's ``pair_sd²`` when known, else the mean pair-effect variance under :data:`PAIR_SDS`, and
    ``c = ¼`` a vote's largest curvature (conservative). ``n`` is averaged over the choice's pairs.

    Examples
    --------
    >>> [round(w, 3) for w in choice_weights([((0, 1), 0), ((1, 0), 1), ((2, 3), 2)])]
    [0.545, 0.545, 0.706]
    """
    variance = pair_sd**2 if pair_sd is not None else sum(sd**2 for sd in PAIR_SDS) / len(PAIR_SDS)
    shown_together = Counter(frozenset(pair) for members, _ in choices for pair in combinations(members, 2))
    weights = []
    for members, chosen in choices:
        counts = [shown_together[frozenset((chosen, other))] for other in members if other != chosen]
        weights.append(1.0 / (1.0 + sum(counts) / len(counts) * variance / 4))
    return weights
