"""``swiss``: a Swiss-system tournament under a fixed comparison budget.

More in ``docs/strategies.md``.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING, ClassVar

from rankkit.data.specs import SpecError
from rankkit.data.tasks import Task
from rankkit.judgments.spend import check_unit
from rankkit.stats.ratings import ELO_BASE, ELO_INITIAL, ELO_SCALE, Outcome, bradley_terry, win_rates
from rankkit.strategies._budget import budget_judgments, check_budget, match_outcomes, task_match_count
from rankkit.strategies._graded import corrected_grades, mean_grades
from rankkit.strategies._pair_effects import check_rule
from rankkit.strategies._spend import BudgetWatch, judgment_budget, pair_shown, spent_extras
from rankkit.strategies._stopping import (
    Forecast,
    check_stopping,
    forecast_more,
    is_target_settled,
    prior_forecast,
    task_seed,
)
from rankkit.strategies.base import CandidateExtras, Ranking, Strategy, register
from rankkit.strategies.order import coin_order

if TYPE_CHECKING:  # rankkit.strategies.matches loads networkx; listing strategies should not
    from rankkit.strategies.matches import Match, MatchSource

AGGREGATES = ("bt", "grades", "corrected", "points")


def swiss_pairing(
    candidates: list[str], points: Mapping[str, float], met: set[frozenset[str]], rng: random.Random
) -> list[tuple[str, str]]:
    """One Swiss round: pairs not yet met with equal or close points (win 1, tie 0.5), closest first.

    ``met`` holds the pairs already played as frozensets; ``rng`` orders equal points. Falls back to
    a maximum matching (:func:`closest_matching`) when the greedy pass leaves pairable candidates unpaired.
    """
    standings = sorted(candidates, key=lambda cid: (-points[cid], rng.random()))
    position = {cid: i for i, cid in enumerate(standings)}
    # Greedy, top-down: each unpaired candidate takes the first candidate below it that is unpaired
    # and not yet met. Flags instead of removing from a list keep a round O(N) in the usual case.
    paired: set[str] = set()
    pairs = []
    for i, top in enumerate(standings):
        if top in paired:
            continue
        for j in range(i + 1, len(standings)):
            cid = standings[j]
            if cid not in paired and frozenset((top, cid)) not in met:
                paired.update((top, cid))
                pairs.append((top, cid))
                break
    if len(pairs) < len(candidates) // 2:
        pairs = max(pairs, closest_matching(candidates, points, met, rng), key=len)
    return sorted(pairs, key=lambda pair: (abs(points[pair[0]] - points[pair[1]]), position[pair[0]]))


def closest_matching(
    candidates: list[str], points: Mapping[str, float], met: set[frozenset[str]], rng: random.Random
) -> list[tuple[str, str]]:
    """A maximum-cardinality matching of pairs not yet met with the least total squared points gap
    (networkx's blossom); ties broken by seeded weights too small to outweigh a real gap.
    """
    import networkx as nx  # here, not at the top: `rankkit strategies` imports this module

    n = len(candidates)
    # Integer weights keep the blossom algorithm exact. A unit of squared gap (in half points)
    # weighs `unit`; the jitters of a whole matching (at most n/2 pairs) sum to less than one unit.
    unit = 2 * n * n
    graph = nx.Graph()
    for a, b in combinations(candidates, 2):
        if frozenset((a, b)) not in met:
            gap = round(2 * (points[a] - points[b]))
            graph.add_edge(a, b, weight=gap * gap * unit + rng.randrange(unit // n))
    order = {cid: i for i, cid in enumerate(candidates)}
    return [tuple(sorted(pair, key=order.__getitem__)) for pair in nx.min_weight_matching(graph)]


@register("swiss")
@dataclass(frozen=True)
class Swiss(Strategy):
    """Swiss-system tournament: each round pairs close running scores, never the same pair twice, until
    the budget is spent; Bradley–Terry (or mean grades, or points) at the end.

    Parameters
    ----------
    budget
        Comparisons per candidate: ``floor(budget · N)`` judgments per task (a match in both orders
        costs 2); 3 is about 6 rounds. In ``budget_unit`` when that is not ``judgments``.
    comparisons
        Exactly this many comparisons per task instead (overrides ``budget``).
    order
        ``given`` (each match in a seeded random orientation), ``random`` (a further coin per match)
        or ``both`` (every match in both orders, each an outcome of its own).
    aggregate
        ``bt`` (Bradley–Terry, Elo scale), ``grades`` (mean grade received), ``corrected`` (mean
        grade corrected for the first-slot effect, :func:`rankkit.strategies._graded.corrected_grades`)
        or ``points`` (share of points, ties broken by opponents' mean share).
    until
        A stopping target (``docs/stopping.md``): ``top1``, ``top:K`` or ``order``; None plays to the
        budget. With one, the tournament stops when the posterior gives the answer probability
        ``confidence`` (``stopped``: ``target``), the budget is spent (``budget``) or every pair has
        met (``exhausted``; use ``order=both`` to ask both orders). Scores are then posterior means
        (Elo scale); ``aggregate`` must be ``bt``.
    confidence
        The posterior probability the target must reach.
    prior_sd
        The prior sd of the log-strengths (only with ``until``).
    stopping
        The posterior the target is judged by: ``bt`` (each distinct judgment an independent vote;
        the default) or ``pair_effects`` (a pair's judgments share a persistent effect: with the
        judge's ``pair_sd`` the rule that stays calibrated on judges with preferences of their own).
    pair_sd
        The judge's pair-effect sd in logit units, when known (``stopping=pair_effects`` only; e.g.
        ``rankkit analyze --pair-effects`` on a pilot run): the rule then assumes it instead of
        averaging over 0, 1 and 2 (``docs/stopping.md``).
    budget_unit
        ``judgments``, ``answers`` (shown), ``tokens`` or ``usd``, per candidate (``docs/stopping.md``);
        a spec writes it after the number: ``budget=2000tokens``. A round is cut short where the
        budget runs out.
    """

    budget: float = 3.0
    comparisons: int | None = None
    order: str = "given"
    aggregate: str = "bt"
    until: str | None = None
    confidence: float = 0.95
    prior_sd: float = 2.0
    stopping: str = "bt"
    budget_unit: str = "judgments"
    pair_sd: float | None = None

    description = "Swiss-system tournament: rounds pair close running scores, budget x N comparisons"
    ranges: ClassVar[dict[str, tuple[float, float]]] = {
        "budget": (0, 10_000),
        "comparisons": (0, 100_000_000),
        "prior_sd": (0, 100),
        "confidence": (0, 1),
    }

    def __post_init__(self) -> None:
        super().__post_init__()  # checks order
        check_budget("swiss", self.budget, self.comparisons, self.order)
        check_rule("strategy swiss", self.stopping, self.pair_sd)
        check_unit("strategy swiss", self.budget_unit)
        if self.aggregate not in AGGREGATES:
            raise SpecError(f"strategy swiss: aggregate must be one of {', '.join(AGGREGATES)}, got {self.aggregate!r}")
        if self.prior_sd <= 0:
            raise SpecError(f"strategy swiss: prior_sd must be > 0, got {self.prior_sd}")
        if check_stopping("strategy swiss", self.until, self.confidence) is not None and self.aggregate != "bt":
            raise SpecError(
                f"strategy swiss: until needs aggregate=bt (the answer it settles is the "
                f"posterior's), got aggregate={self.aggregate}"
            )

    def rank(self, task: Task, source: MatchSource, rng: random.Random) -> Ranking:
        """Play a Swiss-system tournament on the task's candidates until the budget is spent."""
        ids = task.candidate_ids
        budget = judgment_budget(self.budget, self.budget_unit)
        matches_left = task_match_count("swiss", task.task_id, len(ids), budget, self.comparisons, self.order)
        watch = (
            None
            if self.budget_unit == "judgments"
            else BudgetWatch("swiss", self.budget, self.budget_unit, task, source)
        )
        points = dict.fromkeys(ids, 0.0)
        opponents: dict[str, list[str]] = {cid: [] for cid in ids}
        met: set[frozenset[str]] = set()
        matches: list[Match] = []
        outcomes: list[Outcome] = []
        round_number = 0
        stopping = _TargetWatch(self, task) if self.until is not None else None
        while matches_left > 0:
            if stopping is not None and stopping.settled():
                break
            pairs = swiss_pairing(ids, points, met, rng)[:matches_left]
            if not pairs:  # every pair has met
                break
            round_number += 1
            # Swiss pairs are (higher, lower) in the standings: each is drawn in a random orientation,
            # so a judge's first-slot preference falls on either alike.
            drawn = [coin_order(a, b, rng) for a, b in pairs]
            if watch is not None:  # cut the round where the budget in answers, tokens or USD runs out
                drawn = drawn[: watch.affordable([pair_shown(a, b, self.order) for a, b in drawn])]
                if not drawn:
                    break
            round_matches = source.play_many(drawn, round=round_number, order=self.order, rng=rng)
            round_outcomes = match_outcomes(round_matches)  # one per judgment: a two-order match gives two
            _tally(round_matches, round_outcomes, points, opponents, met)
            matches += round_matches
            outcomes += round_outcomes
            matches_left -= len(round_matches)
            if stopping is not None:
                stopping.add(round_matches, matches_left, source)

        every_pair_met = len(met) == len(ids) * (len(ids) - 1) // 2
        stopped = "exhausted" if every_pair_met else "budget"
        if stopping is not None:
            stopped = "target" if stopping.settled() else stopped
            extras = _extras(ids, points, opponents, round_number, stopped, spent_extras(source))
            return Ranking(scores=stopping.scores(), extras=extras)
        scores, ranking = self._aggregate(task, matches, outcomes, opponents)
        spent = spent_extras(source) if watch is not None else {}  # a stop recorded only where it decides
        extras = _extras(ids, points, opponents, round_number, stopped if watch is not None else None, spent)
        return Ranking(scores=scores, ranking=ranking, extras=extras)

    def _aggregate(
        self, task: Task, matches: list[Match], outcomes: list[Outcome], opponents: dict[str, list[str]]
    ) -> tuple[dict[str, float], list[str] | None]:
        """The candidates' scores by ``aggregate``, and the ranking where the scores alone do not give
        it (``points``: ties broken by the opponents' mean share, the Buchholz-style schedule strength)."""
        ids = task.candidate_ids
        if self.aggregate == "bt":
            return bradley_terry(outcomes, items=ids), None
        comparisons = [c for match in matches for c in match.comparisons]
        if self.aggregate == "grades":
            return mean_grades(comparisons, ids, unplayed=sum(task.scale) / 2), None
        if self.aggregate == "corrected":
            return corrected_grades(comparisons, ids, unplayed=sum(task.scale) / 2), None
        share = {
            cid: 0.5 if math.isnan(value) else value  # NaN: never played
            for cid, value in win_rates(outcomes, items=ids).items()
        }
        schedule = {cid: statistics.fmean(share[o] for o in opponents[cid]) if opponents[cid] else 0.5 for cid in ids}
        return share, sorted(ids, key=lambda cid: (-share[cid], -schedule[cid]))

    def exact_judgments(self, n_candidates: int) -> int | None:
        """The budget or every pair, whichever is fewer; None with ``until`` (it may stop sooner)."""
        return None if self.until is not None else self.max_judgments(n_candidates)

    def max_judgments(self, n_candidates: int) -> int:
        """The budget's judgments (:func:`~rankkit.strategies._budget.budget_judgments`)."""
        return budget_judgments(
            n_candidates, judgment_budget(self.budget, self.budget_unit), self.comparisons, self.order
        )

    def forecast_judgments(self, n_candidates: int, seed: int = 0) -> Forecast | None:
        """Before any judgment: :func:`~rankkit.strategies._stopping.prior_forecast`; None without ``until``."""
        target = check_stopping("strategy swiss", self.until, self.confidence)
        if target is None:
            return None
        return prior_forecast(
            n_candidates, target, self.confidence, self.prior_sd, self.max_judgments(n_candidates), seed
        )


def _tally(
    matches: list[Match],
    outcomes: list[Outcome],
    points: dict[str, float],
    opponents: dict[str, list[str]],
    met: set[frozenset[str]],
) -> None:
    """Add a round's outcomes to the standings' ``points``, and its matches to who met whom."""
    for a, b, outcome in outcomes:
        points[a] += outcome
        points[b] += 1.0 - outcome
    for match in matches:
        opponents[match.a].append(match.b)
        opponents[match.b].append(match.a)
        met.add(frozenset((match.a, match.b)))


def _extras(
    ids: list[str],
    points: dict[str, float],
    opponents: dict[str, list[str]],
    rounds: int,
    stopped: str | None = None,
    spent: Mapping[str, float] | None = None,
) -> dict[str, CandidateExtras]:
    """Every candidate's matches, points and opponents, with the rounds played, why they stopped
    and what the task spent."""
    return {
        cid: CandidateExtras(
            played=len(opponents[cid]),
            points=points[cid],
            opponents=tuple(opponents[cid]),
            rounds=rounds,
            stopped=stopped,
            **(spent or {}),
        )
        for cid in ids
    }


class _TargetWatch:
    """The posterior of a Swiss tournament with ``until``: is the target settled, and how many judgments are left."""

    def __init__(self, swiss: Swiss, task: Task):
        from rankkit.strategies._bt_posterior import Posterior

        self.ids = task.candidate_ids
        self.index = {cid: k for k, cid in enumerate(self.ids)}
        self.target = check_stopping("strategy swiss", swiss.until, swiss.confidence)
        self.confidence = swiss.confidence
        self.stopping = swiss.stopping
        self.pair_sd = swiss.pair_sd
        self.prior_sd = swiss.prior_sd
        self.most = swiss.max_judgments(len(self.ids))
        self.seed = task_seed(task.task_id)
        self.posterior = Posterior(len(self.ids), swiss.prior_sd, exact=True)
        self.asked: set[tuple[str, str]] = set()
        self._settled: bool | None = None

    def add(self, matches: Sequence[Match], matches_left: int, source: MatchSource) -> None:
        """Add a round's matches (each distinct (first, second) judgment once) and refit."""
        from rankkit.strategies.elo import comparison_outcome

        new = []
        for match in matches:
            for comparison in match.comparisons:
                outcome = comparison_outcome(comparison, match)
                if outcome is not None and (comparison.first, comparison.second) not in self.asked:
                    self.asked.add((comparison.first, comparison.second))
                    new.append((self.index[outcome[0]], self.index[outcome[1]], outcome[2]))
        self.posterior.update(new)
        self._settled = None
        if matches_left > 0 and source.wants_forecast and not self.settled():
            source.forecast(
                forecast_more(
                    self.posterior.mean,
                    self.posterior.cov,
                    self.target,
                    self.confidence,
                    len(self.asked),
                    self.most,
                    self.seed,
                )
            )

    def settled(self) -> bool:
        if self._settled is None:
            self._settled = is_target_settled(
                self.posterior.mean,
                self.posterior.cov,
                self.target,
                self.confidence,
                self.seed,
                self.posterior.evidence,
                self.stopping,
                self.pair_sd,
            )
        return self._settled

    def scores(self) -> dict[str, float]:
        """The posterior means on the Elo scale: the answer whose probability was computed."""
        factor = ELO_SCALE / math.log(ELO_BASE)
        return {cid: float(self.posterior.mean[k] * factor + ELO_INITIAL) for k, cid in enumerate(self.ids)}
