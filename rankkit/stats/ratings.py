"""Rating models over match results: online Elo, Bradley–Terry, win rates (``docs/strategies.md``)."""

from __future__ import annotations

import math
import random
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy loads where it is used: `rankkit strategies` imports this module
    import numpy as np

#: One match result: (a, b, outcome for a), outcome in {1.0, 0.5, 0.0}.
Outcome = tuple[str, str, float]

#: Any rating function of this module: ``fn(outcomes, items=...) -> {item: rating}``.
RatingFunction = Callable[..., dict[str, float]]

ELO_INITIAL = 1000.0
ELO_SCALE = 400.0
ELO_BASE = 10.0


def item_order(outcomes: Iterable[Outcome], items: Sequence[str] | None = None) -> list[str]:
    """The items to rate, each once: ``items`` then any other item of the outcomes, in order of first appearance."""
    order = list(items) if items is not None else []
    seen = set(order)
    for a, b, _ in outcomes:
        for name in (a, b):
            if name not in seen:
                seen.add(name)
                order.append(name)
    return order


def _check_outcome(outcome: float) -> float:
    if outcome not in (0.0, 0.5, 1.0):
        raise ValueError(f"match outcome must be 1.0 (a won), 0.5 (tie) or 0.0 (b won), got {outcome!r}")
    return float(outcome)


# ---------------------------------------------------------------------------------------------
# Elo


def elo_expected(rating_a: float, rating_b: float, scale: float = ELO_SCALE, base: float = ELO_BASE) -> float:
    """a's expected score against b under Elo, in (0, 1): ``1 / (1 + base ** ((rating_b - rating_a) / scale))``."""
    return 1.0 / (1.0 + base ** ((rating_b - rating_a) / scale))


def online_elo(
    outcomes: Sequence[Outcome],
    items: Sequence[str] | None = None,
    k: float = 16.0,
    initial: float = ELO_INITIAL,
    scale: float = ELO_SCALE,
    base: float = ELO_BASE,
) -> dict[str, float]:
    """Online Elo: play the outcomes in the given order, updating both ratings after each.

    After a match with outcome ``s`` for a, ``r_a += k·(s − E_a)`` and ``r_b −= k·(s − E_a)``, with
    ``E_a`` from :func:`elo_expected`; ratings start at ``initial``. ``k`` is how many points a fully
    unexpected result moves a rating (Chatbot Arena used 4 over hundreds of thousands of votes; a
    ranking task has tens of outcomes, hence 16). The result depends on the order of the outcomes.
    """
    ratings = {name: float(initial) for name in item_order(outcomes, items)}
    for a, b, outcome in outcomes:
        expected_a = elo_expected(ratings[a], ratings[b], scale, base)
        delta = k * (_check_outcome(outcome) - expected_a)
        ratings[a] += delta
        ratings[b] -= delta
    return ratings


#: The most (match position, order) entries :func:`elo_over_permutations` indexes at once (64 MB).
_ELO_BLOCK_ENTRIES = 1 << 24


def elo_over_permutations(
    outcomes: Sequence[Outcome],
    items: Sequence[str] | None = None,
    permutations: int = 100,
    seed: int | random.Random = 0,
    k: float = 16.0,
    initial: float = ELO_INITIAL,
    scale: float = ELO_SCALE,
    base: float = ELO_BASE,
) -> dict[str, float]:
    """Online Elo (parameters as :func:`online_elo`) averaged over ``permutations`` (>= 1) random orders.

    Averaging over shuffled orders removes online Elo's dependence on the order (the last outcomes
    weigh most). The orders are drawn by NumPy from one draw of ``seed`` (an int, or a
    ``random.Random`` advanced by one draw) and played side by side, one vectorised update per match
    position, so the cost barely grows with ``permutations``; each order gives exactly
    :func:`online_elo` on that order.
    """
    if permutations < 1:
        raise ValueError(f"permutations must be >= 1, got {permutations}")
    rng = seed if isinstance(seed, random.Random) else random.Random(seed)
    order = item_order(outcomes, items)
    shuffler_seed = rng.getrandbits(64)
    if not outcomes:
        return {name: float(initial) for name in order}
    import numpy as np

    first, second, outcome = _outcome_arrays(outcomes, {name: i for i, name in enumerate(order)})
    shuffler = np.random.default_rng(shuffler_seed)
    totals = np.zeros(len(order))
    # Orders are played in blocks so that the (match position x order) index table stays within
    # _ELO_BLOCK_ENTRIES entries whatever the number of outcomes.
    block = max(1, min(permutations, _ELO_BLOCK_ENTRIES // len(outcomes)))
    remaining = permutations
    while remaining:
        size = min(block, remaining)
        remaining -= size
        # positions[t, p]: the match played t-th in order p.
        positions = shuffler.permuted(np.tile(np.arange(len(outcomes), dtype=np.int32), (size, 1)), axis=1).T.copy()
        ratings = np.full(size * len(order), float(initial))  # order p's ratings at [p * n_items ...]
        offsets = np.arange(size) * len(order)
        for played in positions:
            a = first[played] + offsets
            b = second[played] + offsets
            expected_a = 1.0 / (1.0 + base ** ((ratings[b] - ratings[a]) / scale))
            delta = k * (outcome[played] - expected_a)
            ratings[a] += delta  # a != b within a match, and each order has its own slice
            ratings[b] -= delta
        totals += ratings.reshape(size, len(order)).sum(axis=0)
    return {name: float(totals[i] / permutations) for i, name in enumerate(order)}


# ---------------------------------------------------------------------------------------------
# Bradley–Terry


def _outcome_arrays(outcomes: Iterable[Outcome], index: Mapping[str, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The outcomes as arrays: row of a, row of b, outcome for a (checked to be 1, ½ or 0)."""
    import numpy as np

    rows = list(outcomes)
    first = np.fromiter((index[a] for a, _, _ in rows), dtype=np.intp, count=len(rows))
    second = np.fromiter((index[b] for _, b, _ in rows), dtype=np.intp, count=len(rows))
    outcome = np.fromiter((o for _, _, o in rows), dtype=float, count=len(rows))
    bad = ~np.isin(outcome, (0.0, 0.5, 1.0))
    if bad.any():
        _check_outcome(rows[int(np.argmax(bad))][2])  # raises, naming the value
    return first, second, outcome


def win_matrix(outcomes: Iterable[Outcome], index: Mapping[str, int]) -> np.ndarray:
    """The outcomes as choix's dense (N, N) matrix: ``wins[i, j]`` = how often i (row ``index[i]``) beat j.

    choix's Bradley–Terry has no ties, so a tie adds 0.5 to both cells (half a win each way);
    fractional counts are exactly weighted comparisons in the likelihood.
    """
    return _wins_from_arrays(*_outcome_arrays(outcomes, index), len(index))


def _wins_from_arrays(first: np.ndarray, second: np.ndarray, outcome: np.ndarray, n_items: int) -> np.ndarray:
    import numpy as np

    # Sums of halves and ones are exact in floating point, so the counting order does not matter.
    cells = n_items * n_items
    wins = np.bincount(first * n_items + second, weights=outcome, minlength=cells)
    wins += np.bincount(second * n_items + first, weights=1.0 - outcome, minlength=cells)
    return wins.reshape(n_items, n_items)


#: The default regularisation gives every item this much pull toward the field whatever the
#: number of items N: ``alpha = BT_PRIOR / (N − 1)`` (see :func:`default_alpha`).
BT_PRIOR = 0.2

#: choix's sparse ``ilsr_pairwise`` (a Python loop over the outcomes per iteration) beats the dense
#: ``ilsr_pairwise_dense`` (several passes over an N x N matrix per iteration) below about
#: N² / 32 match entries (measured at N = 2048: 0.13 s against 0.18 s per iteration at 50,000).
_SPARSE_SHARE = 32


def default_alpha(n_items: int) -> float:
    """:func:`bradley_terry`'s default regularisation: ``0.2 / (n_items − 1)`` (0.2 below 2 items).

    choix's ``alpha`` is a rate between *every* two items of the LSR chain, so a fixed 0.01 is worth
    about ``4 · 0.01 · (N − 1)`` comparisons against the field per item: negligible for 8 candidates,
    about 80 for 2048 systems, where it shrank fitted log-strengths to 0.28 of the planted ones (0.98
    with this default). Dividing by ``N − 1`` keeps the pull at about 0.8 comparisons per item,
    enough to keep an unbeaten item's rating finite.
    """
    return BT_PRIOR / max(1, n_items - 1)


def bradley_terry(
    outcomes: Sequence[Outcome],
    items: Sequence[str] | None = None,
    alpha: float | None = None,
    initial: float = ELO_INITIAL,
    scale: float = ELO_SCALE,
    base: float = ELO_BASE,
) -> dict[str, float]:
    """Bradley–Terry ratings on the Elo scale, fitted with choix's iterative Luce spectral ranking.

    The model: ``P(i beats j) = 1 / (1 + exp(θ_j − θ_i))``, log-strengths ``θ`` of mean zero; a
    rating is ``initial + θ · scale / ln(base)``, so 400 points mean 10:1 odds as in Elo. A tie is
    half a win each way (:func:`win_matrix`). Dense data go to choix's ``ilsr_pairwise_dense``, sparse
    data to ``ilsr_pairwise`` (work per iteration grows with the outcomes, not N²): the same fixed point.

    ``alpha`` (None: :func:`default_alpha`) keeps every rating finite when an item never lost or never
    won, and joins items that never met; it may be 0 only when every item has won and lost within one
    connected set of outcomes.
    """
    order = item_order(outcomes, items)
    if not order:
        return {}
    if len(order) == 1 or not outcomes:
        return {name: float(initial) for name in order}
    import numpy as np

    index = {name: i for i, name in enumerate(order)}
    alpha = default_alpha(len(order)) if alpha is None else alpha
    params = _fit_lsr(*_outcome_arrays(outcomes, index), len(order), alpha)
    params = np.asarray(params) - np.mean(params)
    factor = scale / math.log(base)
    return {name: float(initial + factor * params[index[name]]) for name in order}


#: Serialises choix's fits. choix finds each iterate's stationary distribution by factorising a
#: matrix that is singular by construction and hides scipy's LinAlgWarning with
#: ``warnings.catch_warnings``, which swaps the process-wide filter list: two threads fitting at
#: once (strategies of concurrent tasks) could restore each other's filters and let the warning
#: reach stderr in some runs. Under this lock choix's swaps never overlap; the fits are
#: CPU-bound Python holding the GIL anyway, so serialising them costs next to nothing.
CHOIX_LOCK = threading.Lock()

#: Above this many items the sparse path solves its chain with a sparse solver (:func:`sparse_ilsr`)
#: instead of choix's dense factorisation; below, choix itself (identical results, cheap).
_SPARSE_SOLVE_ITEMS = 256


def _fit_lsr(first: np.ndarray, second: np.ndarray, outcome: np.ndarray, n_items: int, alpha: float) -> np.ndarray:
    """choix's I-LSR estimate of the log-strengths, dense or sparse whichever is cheaper."""
    import choix  # choix imports scipy; keep it off the import path of `import rankkit`
    import numpy as np

    ties = outcome == 0.5
    # choix's sparse form lists (winner, loser) pairs and has no half wins. Doubling every
    # decisive match, listing a tie once each way and doubling alpha scales the LSR Markov chain
    # by 2, which leaves its stationary distribution (the estimate) unchanged.
    doubled = bool(ties.any())
    entries = len(outcome) * (2 if doubled else 1)
    if entries * _SPARSE_SHARE >= n_items * n_items:
        wins = _wins_from_arrays(first, second, outcome, n_items)
        with CHOIX_LOCK:
            return choix.ilsr_pairwise_dense(wins, alpha=alpha, max_iter=1000)
    decisive = ~ties
    winner = np.where(outcome == 1.0, first, second)[decisive]
    loser = np.where(outcome == 1.0, second, first)[decisive]
    pairs = np.column_stack([winner, loser])
    if doubled:
        pairs = np.concatenate(
            [pairs, pairs, np.column_stack([first[ties], second[ties]]), np.column_stack([second[ties], first[ties]])]
        )
    if n_items > _SPARSE_SOLVE_ITEMS and alpha > 0:
        return sparse_ilsr(n_items, pairs[:, 0], pairs[:, 1], alpha=2 * alpha if doubled else alpha, max_iter=1000)
    with CHOIX_LOCK:
        return choix.ilsr_pairwise(n_items, pairs.tolist(), alpha=2 * alpha if doubled else alpha, max_iter=1000)


def sparse_ilsr(
    n_items: int, winners: np.ndarray, losers: np.ndarray, alpha: float, max_iter: int = 1000, tol: float = 1e-8
) -> np.ndarray:
    """choix's I-LSR (``ilsr_pairwise``: same chain, fixed point and convergence test) with a sparse solve.

    The stationary distribution is found by BiCGSTAB with a Jacobi preconditioner (to 1e-14), so an
    iteration costs about the outcomes, not a dense N × N factorisation. The chain: rate ``alpha``
    between every two items plus, per match, ``1 / (w_winner + w_loser)`` from loser to winner. With
    ``alpha > 0``, π solves ``(diag(r) − S)ᵀ π = alpha · 1`` (S: the match rates, ``r_i = alpha·N +
    Σ_j S_ij``), so the all-pairs term is never stored. ``winners``/``losers``: item indices of every
    decisive match (a tie listed once each way). Returns the log-strengths, mean zero.
    """
    import numpy as np
    from choix.convergence import NormOfDifferenceTest
    from scipy import sparse
    from scipy.sparse.linalg import bicgstab, spsolve

    converged = NormOfDifferenceTest(tol, order=1)
    params = np.zeros(n_items)
    for _ in range(max_iter):
        weights = np.exp(params - params.mean())
        weights *= n_items / weights.sum()
        rates = 1.0 / (weights[winners] + weights[losers])
        chain = sparse.coo_matrix((rates, (losers, winners)), shape=(n_items, n_items)).tocsr()
        row_sums = alpha * n_items + np.asarray(chain.sum(axis=1)).ravel()
        system = (sparse.diags(row_sums) - chain).T.tocsr()
        right = np.full(n_items, alpha)
        # The system is an M-matrix (diagonally dominant by alpha·N), where a Jacobi-preconditioned
        # BiCGSTAB converges in a few dozen products; a direct solve is the fallback.
        stationary, info = bicgstab(
            system, right, M=sparse.diags(1.0 / row_sums), rtol=1e-14, atol=0.0, maxiter=10 * n_items
        )
        if info != 0 or not np.all(stationary > 0):
            stationary = spsolve(system.tocsc(), right)
        params = np.log(stationary)
        params -= params.mean()
        if converged(params):
            return params
    raise RuntimeError(f"Did not converge after {max_iter} iterations")


# ---------------------------------------------------------------------------------------------
# Win rates


def win_rates(outcomes: Sequence[Outcome], items: Sequence[str] | None = None) -> dict[str, float]:
    """The share of points each item scored over its matches (a tie is half a point); NaN without a match.

    The anchored-leaderboard statistic when every match is against the same anchor.
    """
    order = item_order(outcomes, items)
    points = dict.fromkeys(order, 0.0)
    played = dict.fromkeys(order, 0)
    for a, b, outcome in outcomes:
        outcome = _check_outcome(outcome)
        points[a] += outcome
        points[b] += 1.0 - outcome
        played[a] += 1
        played[b] += 1
    return {name: points[name] / played[name] if played[name] else math.nan for name in order}
