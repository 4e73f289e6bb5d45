"""``active``: active Bradley–Terry — ask the judge only the comparisons worth asking.

**Model.** Bradley–Terry: candidate i has a log-strength θ_i and ``P(i beats j) = σ(θ_i − θ_j)``
with σ the logistic function. θ has a Gaussian prior ``N(0, prior_sd² I)``. After the duels played
so far, the posterior over θ is approximated by a Gaussian (Laplace's method): its mean is the
maximum a posteriori strengths, fitted by choix (``opt_pairwise``, Newton-CG), and its covariance
the inverse of the negative log-posterior's Hessian there (choix's ``PairwiseFcts.hessian``). A
tie counts as half a win each way, as in :mod:`rankkit.ratings`. (choix's ``ep_pairwise`` gives an
EP posterior too, but it is about ten times slower per update and draws its update order from
NumPy's global random state, which would break determinism by seed.)

**Which pair next.** For a pair (i, j) not yet played the posterior gives the strength gap
``d = θ_i − θ_j ~ N(m, s²)``. Two criteria:

* ``information`` (default) — the expected information the outcome gives about θ (BALD, Houlsby
  et al. 2011): ``H(E[σ(d)]) − E[H(σ(d))]`` with H the binary entropy, the expectations taken by
  Gauss–Hermite quadrature. It is large when the outcome is uncertain *because θ is uncertain*,
  not merely because the two are evenly matched; so it explores poorly measured candidates and
  then refines close calls.
* ``order`` — the posterior probability that the pair's current order is wrong, ``Φ(−|m|/s)``: it
  spends the budget on the pairs whose order in the ranking is least certain.

Each step picks the ``batch`` best pairs (best first, preferring pairs that share no candidate,
so one batch measures many candidates), plays them in one ``duel_many`` call, and refits. Ties
between equally valuable pairs are broken by a seeded random order. No pair is played twice.

**Stopping rule.** It stops when the budget is spent, when every pair has been played, or — with
``settle`` (the default) — when the ranking is *settled*: the decisive results so far contain no
cycle and admit exactly one order (every two neighbours in that order have met, and the winner
was the one ranked higher). Every further result is then already implied by transitivity, so
only a judge's mistake could change the ranking. (A rule on the posterior, such as "every two
neighbours are ordered right with probability 0.99", never fires here: the Bradley–Terry posterior
cannot become that sure of a pair met only once, and pairs are never repeated.) Ties order
nothing, so a tie between neighbours keeps the ranking unsettled.

**Scores** are the Bradley–Terry ratings (Elo scale) of all the duels played, from
:func:`rankkit.ratings.bradley_terry` — the same aggregation as ``swiss`` and all-pairs ``bt``; its
near-maximum-likelihood fit respects a settled order, where the prior-shrunk posterior mean used
for choosing pairs sometimes does not (a candidate with one win over a much-played one is pulled
toward the middle). ``extras`` give each candidate's posterior standard deviation (Elo scale).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from itertools import combinations
from typing import Sequence

import networkx as nx
import numpy as np
from scipy.stats import norm

from rankkit.matches import MatchSource
from rankkit.ratings import ELO_BASE, ELO_SCALE, MatchRecord, bradley_terry
from rankkit.specs import SpecError
from rankkit.strategies._budget import (
    check_budget,
    comparison_budget,
    duel_records,
    duels_in_budget,
    presented,
)
from rankkit.strategies.base import Ranking, Strategy, register
from rankkit.tasks import Task

CRITERIA = ("information", "order")

#: Gauss–Hermite nodes and weights for expectations over a normal strength gap.
_HERMITE_NODES, _HERMITE_WEIGHTS = np.polynomial.hermite.hermgauss(24)


def bt_posterior(records: Sequence[MatchRecord], items: Sequence[str], prior_sd: float,
                 start: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Laplace approximation of the Bradley–Terry posterior: (mean, covariance) of θ over ``items``.

    The prior is ``θ ~ N(0, prior_sd² I)``; the likelihood of a record ``(a, b, s)`` is
    ``σ(θ_a − θ_b)^s · σ(θ_b − θ_a)^(1−s)``, so a tie (s = ½) is half a win each way.

    choix takes only whole (winner, loser) comparisons, so every record is entered twice — a
    decisive one as two wins, a tie as one win each way — which doubles the log-likelihood
    exactly; the prior is doubled to match (choix's penalty ``alpha·|θ|²``), and the Hessian of
    the doubled objective is halved back.

    start: where the optimiser starts (the previous posterior mean makes a refit after a few more
        duels take a few Newton steps); zeros when None.
    """
    import choix  # choix imports scipy.optimize; keep it off the import path of `import rankkit`

    index = {name: i for i, name in enumerate(items)}
    doubled: list[tuple[int, int]] = []
    for a, b, outcome in records:
        winner, loser = (index[a], index[b]) if outcome > 0.5 else (index[b], index[a])
        doubled += [(winner, loser), (loser, winner)] if outcome == 0.5 else [(winner, loser)] * 2
    penalty = 2.0 * (1.0 / (2.0 * prior_sd ** 2))  # the prior's 1/(2σ²)·|θ|², doubled
    if doubled:
        mean = np.asarray(choix.opt_pairwise(len(items), doubled, alpha=penalty, method="Newton-CG",
                                                 initial_params=None if start is None else start.copy()))
    else:
        mean = np.zeros(len(items))
    hessian = choix.opt.PairwiseFcts(doubled, penalty).hessian(mean.copy()) / 2.0
    return mean, np.linalg.inv(hessian)


def gap_distribution(mean: np.ndarray, cov: np.ndarray, pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Posterior mean and standard deviation of ``θ_i − θ_j`` for each row (i, j) of ``pairs``."""
    i, j = pairs[:, 0], pairs[:, 1]
    variance = cov[i, i] + cov[j, j] - 2.0 * cov[i, j]
    return mean[i] - mean[j], np.sqrt(np.maximum(variance, 1e-12))


def _entropy(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-12, 1.0 - 1e-12)
    return -(p * np.log(p) + (1.0 - p) * np.log1p(-p))


def expected_information(gap_mean: np.ndarray, gap_sd: np.ndarray) -> np.ndarray:
    """BALD: mutual information (nats) between a duel's outcome and θ, for gaps ``N(gap_mean, gap_sd²)``.

    ``H(E[σ(d)]) − E[H(σ(d))]``: the entropy of the predicted outcome minus the entropy the outcome
    would keep if θ were known. Expectations by Gauss–Hermite quadrature.
    """
    gaps = gap_mean[:, None] + math.sqrt(2.0) * gap_sd[:, None] * _HERMITE_NODES[None, :]
    win = 1.0 / (1.0 + np.exp(-gaps))
    weights = _HERMITE_WEIGHTS / math.sqrt(math.pi)
    return _entropy(win @ weights) - _entropy(win) @ weights


def order_doubt(gap_mean: np.ndarray, gap_sd: np.ndarray) -> np.ndarray:
    """Posterior probability that a pair's order by posterior mean is wrong: ``Φ(−|m|/s)``."""
    return norm.cdf(-np.abs(gap_mean) / gap_sd)


def is_settled(records: Sequence[MatchRecord], items: Sequence[str]) -> bool:
    """Whether the decisive results admit exactly one order of ``items``.

    True when the win graph (an edge winner -> loser per decisive record; ties are left out) has
    no cycle and its topological order is unique, which holds exactly when every two neighbours
    in that order are joined by an edge.
    """
    wins = nx.DiGraph()
    wins.add_nodes_from(items)
    wins.add_edges_from((a, b) if outcome == 1.0 else (b, a) for a, b, outcome in records if outcome != 0.5)
    if not nx.is_directed_acyclic_graph(wins):
        return False
    order = list(nx.topological_sort(wins))
    return all(wins.has_edge(upper, lower) for upper, lower in zip(order, order[1:]))


def pick_batch(pairs: Sequence[tuple[int, int]], values: np.ndarray, tiebreak: dict[tuple[int, int], float],
               size: int) -> list[tuple[int, int]]:
    """The ``size`` most valuable pairs, best first, preferring pairs that share no candidate.

    Values equal to 12 significant digits count as equal, and the seeded ``tiebreak`` numbers
    order them, so a fit's last-digit noise never decides.
    """
    ranked = sorted(range(len(pairs)), key=lambda k: (-float(f"{values[k]:.12g}"), tiebreak[pairs[k]]))
    chosen: list[tuple[int, int]] = []
    busy: set[int] = set()
    for k in ranked:  # first pass: disjoint pairs
        if len(chosen) == size:
            break
        if not busy.intersection(pairs[k]):
            chosen.append(pairs[k])
            busy.update(pairs[k])
    for k in ranked:  # then the best of the rest
        if len(chosen) == size:
            break
        if pairs[k] not in chosen:
            chosen.append(pairs[k])
    return chosen


@register("active")
@dataclass(frozen=True)
class ActiveStrategy(Strategy):
    """Active Bradley–Terry: play the pair (or batch of pairs) with the highest expected
    information under the current posterior; stop at the budget or when the ranking is settled.

    budget: comparisons per candidate; a task of N candidates gets ``floor(budget · N)``
        comparisons (judgments; a debiased duel costs 2).
    comparisons: exactly this many comparisons per task instead (overrides ``budget``).
    batch: duels chosen per step and sent to the judge together (1 = fully sequential; larger
        batches keep a batching judge busy at some cost in information per duel).
    criterion: ``information`` (expected information about the strengths, BALD) or ``order``
        (probability that the pair is currently ordered wrongly).
    settle: stop early once the decisive results admit exactly one order (no cycle, every two
        neighbours met), since then no further result could change the ranking unless the judge
        errs; false spends the whole budget.
    prior_sd: standard deviation of the Gaussian prior on the log-strengths θ (2 means a 1-sd
        strength gap between two candidates is about 88:12 odds).
    debias: play every duel in both orders and average the grades (thesis §3.2.1); each duel
        then costs 2 comparisons. Otherwise each duel is shown in a seeded random order.
    """

    budget: float = 3.0
    comparisons: int | None = None
    batch: int = 1
    criterion: str = "information"
    settle: bool = True
    prior_sd: float = 2.0
    debias: bool = False

    description = "active Bradley-Terry: most informative pairs first, budget x N comparisons"

    def __post_init__(self) -> None:
        check_budget("active", self.budget, self.comparisons)
        if self.batch < 1:
            raise SpecError(f"strategy active: batch must be >= 1, got {self.batch}")
        if self.criterion not in CRITERIA:
            raise SpecError(f"strategy active: criterion must be one of {', '.join(CRITERIA)}, got {self.criterion!r}")
        if self.prior_sd <= 0:
            raise SpecError(f"strategy active: prior_sd must be > 0, got {self.prior_sd}")

    def rank(self, task: Task, source: MatchSource, rng: random.Random) -> Ranking:
        ids = task.candidate_ids
        duels_left = duels_in_budget(len(ids), comparison_budget(len(ids), self.budget, self.comparisons),
                                     self.debias)
        unplayed = list(combinations(range(len(ids)), 2))
        tiebreak = {pair: rng.random() for pair in unplayed}
        value_of = expected_information if self.criterion == "information" else order_doubt
        records: list[MatchRecord] = []
        mean, cov = bt_posterior(records, ids, self.prior_sd)
        steps = 0
        stopped = "budget"
        while duels_left > 0 and unplayed:
            if self.settle and is_settled(records, ids):
                stopped = "settled"
                break
            values = value_of(*gap_distribution(mean, cov, np.array(unplayed)))
            chosen = pick_batch(unplayed, values, tiebreak, min(self.batch, duels_left))
            steps += 1
            shown = [presented(ids[i], ids[j], rng) for i, j in chosen]
            duels = source.duel_many(shown, debias=self.debias, round=steps)
            records += duel_records(duels)
            unplayed = [pair for pair in unplayed if pair not in chosen]
            duels_left -= len(chosen)
            mean, cov = bt_posterior(records, ids, self.prior_sd, start=mean)
        if not unplayed and stopped == "budget" and duels_left > 0:
            stopped = "all pairs played"

        factor = ELO_SCALE / math.log(ELO_BASE)  # log-strength -> Elo points
        posterior_sd = np.sqrt(np.diag(cov)) * factor
        played = dict.fromkeys(ids, 0)
        for a, b, _ in records:
            played[a] += 1
            played[b] += 1
        extras = {cid: {"played": played[cid], "posterior_sd": float(posterior_sd[k]), "steps": steps,
                        "stopped": stopped} for k, cid in enumerate(ids)}
        return Ranking(scores=bradley_terry(records, items=ids), extras=extras)
