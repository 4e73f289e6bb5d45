"""``active``: active Bradley–Terry — ask the judge only the comparisons worth asking.

More in ``docs/strategies.md``.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from rankkit.order import coin_order, judgments_per_match
from rankkit.ratings import ELO_BASE, ELO_INITIAL, ELO_SCALE, Outcome, bradley_terry
from rankkit.specs import SpecError
from rankkit.strategies._bt_posterior import Posterior
from rankkit.strategies._budget import (
    budget_judgments,
    check_budget,
    comparison_budget,
    match_outcomes,
    task_match_count,
)
from rankkit.strategies._graded import corrected_grades, mean_grades
from rankkit.strategies._pair_choice import candidate_pairs, choose_pairs, is_settled
from rankkit.strategies._stopping import (
    Forecast,
    check_stopping,
    current_order,
    forecast_more,
    is_target_settled,
    prior_forecast,
    relevant_pairs,
    task_seed,
)
from rankkit.strategies.base import CandidateExtras, Ranking, Strategy, register
from rankkit.strategies.elo import comparison_outcome
from rankkit.tasks import Task

if TYPE_CHECKING:  # numpy and rankkit.matches (networkx) load when a task is ranked, not on import
    from rankkit.matches import Match, MatchSource

CRITERIA = ("information", "order", "target")
AGGREGATES = ("bt", "grades", "corrected")

#: Up to this many candidates every step refits the posterior exactly and scores every unplayed
#: pair; above it the posterior is updated incrementally and only pre-selected pairs are scored
#: (see "Computation" in ``docs/strategies.md``).
EXACT_UP_TO = 256

#: With a stopping target and a progress bar, the forecast is refreshed every this many steps.
FORECAST_EVERY = 8


@register("active")
@dataclass(frozen=True)
class Active(Strategy):
    """Active Bradley–Terry: play the pair (or batch of pairs) with the highest expected
    information under the current posterior; stop at the budget or when the ranking is settled.

    Parameters
    ----------
    budget : float, default 3.0
        Comparisons per candidate; a task of N candidates gets ``floor(budget · N)``
        comparisons (judgments; a match in both orders costs 2).
    comparisons : int | None, default None
        Exactly this many comparisons per task instead (overrides ``budget``).
    batch : int, default 1
        Matches chosen per step and sent to the judge together (1 = fully sequential; larger
        batches keep a batching judge busy at some cost in information per match).
    criterion : str, default "information"
        ``information`` (expected information about the strengths, BALD), ``order``
        (probability that the pair is currently ordered wrongly) or, with ``until``, ``target``:
        among the unasked pairs the current answer rests on (the leader against each other
        candidate for ``top1``, each of the K best against each of the rest for ``top:K``,
        neighbours for ``order``), the one most likely ordered wrongly, as LUCB-style best-arm
        identification does; when every such pair has been asked, ``information`` over the rest.
    settle : bool, default True
        Stop early once the decisive results admit exactly one order (no cycle, every two
        neighbours met), since then no further result could change the ranking unless the judge
        errs; false spends the whole budget.
    prior_sd : float, default 2.0
        Standard deviation of the Gaussian prior on the log-strengths θ (with 2, two
        candidates one prior sd apart meet at about 88:12 odds).
    order : str, default "given"
        ``given`` (default) — each match shown as chosen, its two candidates in a seeded random
        orientation; ``random`` — a further seeded coin per match; ``both`` — every match in both
        orders (thesis §3.2.1), each order an outcome of its own in the fit (as in ``bt``), a match
        costing 2 comparisons.
    aggregate : str, default "bt"
        The final scores: ``bt`` (Bradley–Terry ratings, Elo scale), ``grades`` (mean
        grade received) or ``corrected`` (mean grade corrected for the judge's first-slot effect,
        :func:`rankkit.strategies._graded.corrected_grades`).
    until : str | None, default None
        A stopping target (``docs/stopping.md``): ``top1`` (the winner), ``top:K`` (the set of
        the K best) or ``order`` (the whole ranking); None (default) plays to the budget or
        ``settle`` as above. With a target the strategy stops as soon as its answer (by the
        posterior mean) has probability ``confidence`` of being the true one under the exact
        Bradley–Terry posterior with a hyperprior on the strengths' scale (importance-sampled
        Monte Carlo, seeded per task; checked every ⌈N/16⌉ steps), or when the budget is spent (the budget always wins), or
        when every distinct judgment has been asked (each pair in both orders, since a judge asked
        the same question twice answers the same: only distinct judgments are evidence). The
        scores are then the posterior means (Elo scale), the answer whose probability was
        computed; ``settle`` is not used, and ``aggregate`` must be ``bt``. Every candidate's
        ``stopped`` says why: ``target``, ``budget`` or ``exhausted``.
    confidence : float, default 0.95
        The posterior probability the target must reach (strictly between 0 and 1).
    """

    budget: float = 3.0
    comparisons: int | None = None
    batch: int = 1
    criterion: str = "information"
    settle: bool = True
    prior_sd: float = 2.0
    order: str = "given"
    aggregate: str = "bt"
    until: str | None = None
    confidence: float = 0.95

    description = "active Bradley-Terry: most informative pairs first, budget x N comparisons"
    ranges: ClassVar[dict[str, tuple[float, float]]] = {
        "budget": (0, 10_000),
        "comparisons": (0, 100_000_000),
        "batch": (1, 10_000),
        "prior_sd": (0, 100),
        "confidence": (0, 1),
    }

    def __post_init__(self) -> None:
        super().__post_init__()  # checks order
        check_budget("active", self.budget, self.comparisons, self.order)
        if self.batch < 1:
            raise SpecError(f"strategy active: batch must be >= 1, got {self.batch}")
        if self.criterion not in CRITERIA:
            raise SpecError(f"strategy active: criterion must be one of {', '.join(CRITERIA)}, got {self.criterion!r}")
        if self.aggregate not in AGGREGATES:
            raise SpecError(
                f"strategy active: aggregate must be one of {', '.join(AGGREGATES)}, got {self.aggregate!r}"
            )
        if self.prior_sd <= 0:
            raise SpecError(f"strategy active: prior_sd must be > 0, got {self.prior_sd}")
        if self.criterion == "target" and self.until is None:
            raise SpecError("strategy active: criterion=target needs a stopping target (until=top1, top:K or order)")
        if check_stopping("strategy active", self.until, self.confidence) is not None and self.aggregate != "bt":
            raise SpecError(
                f"strategy active: until needs aggregate=bt (the answer it settles is the "
                f"posterior's), got aggregate={self.aggregate}"
            )

    def rank(self, task: Task, source: MatchSource, rng: random.Random) -> Ranking:
        """Play the most informative pairs until the budget is spent (or the target is settled), then rate by Bradley–Terry.

        Parameters
        ----------
        task : Task
            The task whose candidates are ranked.
        source : MatchSource
            Where the task's judgments come from.
        rng : random.Random
            The strategy's random numbers for this task.

        Returns
        -------
        Ranking
            The scores, the ranking and the per-candidate extras.
        """
        from threadpoolctl import threadpool_limits

        # One BLAS thread: these matrices are small, and a multi-threaded BLAS waiting for busy
        # cores made one 128 x 128 factorisation 10-50 times slower on a shared 2-core machine.
        with threadpool_limits(limits=1, user_api="blas"):
            if self.until is not None:
                return self._rank_until(task, source, rng)
            return self._rank(task, source, rng)

    def _rank(self, task: Task, source: MatchSource, rng: random.Random) -> Ranking:
        import numpy as np

        ids = task.candidate_ids
        n = len(ids)
        index = {cid: k for k, cid in enumerate(ids)}
        matches_left = task_match_count("active", task.task_id, n, self.budget, self.comparisons, self.order)
        unplayed_count = n * (n - 1) // 2
        # One seeded tiebreak number per pair, drawn in the order of itertools.combinations.
        upper = np.triu_indices(n, 1)
        tiebreak = np.zeros((n, n))
        tiebreak[upper] = np.fromiter((rng.random() for _ in range(unplayed_count)), dtype=float, count=unplayed_count)
        played = np.zeros((n, n), dtype=bool)
        opponents = np.zeros(n, dtype=np.intp)
        posterior = Posterior(n, self.prior_sd, exact=n <= EXACT_UP_TO)
        matches: list[Match] = []
        outcomes: list[Outcome] = []
        # Who has won and who has lost a decisive match: the settle check's cheap precondition.
        winners: set[str] = set()
        losers: set[str] = set()
        steps = 0
        stopped = "budget"
        while matches_left > 0 and unplayed_count:
            if self.settle and len(winners) == n - 1 == len(losers) and is_settled(outcomes, ids):
                stopped = "settled"
                break
            size = min(self.batch, matches_left)
            pairs = None if posterior.exact else candidate_pairs(posterior.mean, played, int(opponents.max()))
            if pairs is None or len(pairs) < size:
                pairs = np.column_stack(np.nonzero(np.triu(~played, 1)))
            chosen = choose_pairs(pairs, posterior.mean, posterior.cov, tiebreak, size, self.criterion, self.prior_sd)
            steps += 1
            # Rows are (i, j) with i < j, i.e. data order: each pair is drawn in a random orientation.
            drawn = [coin_order(ids[i], ids[j], rng) for i, j in chosen]
            step_matches = source.play_many(drawn, round=steps, order=self.order, rng=rng)
            step_outcomes = match_outcomes(step_matches)
            matches += step_matches
            outcomes += step_outcomes
            for a, b, outcome in step_outcomes:
                if outcome != 0.5:
                    winners.add(a if outcome == 1.0 else b)
                    losers.add(b if outcome == 1.0 else a)
            for i, j in chosen:
                played[i, j] = played[j, i] = True
                opponents[[i, j]] += 1
            unplayed_count -= len(chosen)
            matches_left -= len(chosen)
            posterior.update([(index[a], index[b], outcome) for a, b, outcome in step_outcomes])
        if not unplayed_count and stopped == "budget" and matches_left > 0:
            stopped = "all pairs played"
        if not posterior.exact:
            posterior.refresh()  # report the exact Laplace covariance at the final mean

        factor = ELO_SCALE / math.log(ELO_BASE)  # log-strength -> Elo points
        posterior_sd = np.sqrt(np.diag(posterior.cov)) * factor
        if self.aggregate == "bt":
            scores = bradley_terry(outcomes, items=ids)
        elif self.aggregate == "corrected":
            scores = corrected_grades(
                [c for match in matches for c in match.comparisons], ids, unplayed=sum(task.scale) / 2
            )
        else:
            scores = mean_grades([c for match in matches for c in match.comparisons], ids, unplayed=sum(task.scale) / 2)
        extras = {
            cid: CandidateExtras(
                played=int(opponents[k]), posterior_sd=float(posterior_sd[k]), steps=steps, stopped=stopped
            )
            for k, cid in enumerate(ids)
        }
        return Ranking(scores=scores, extras=extras)

    def _rank_until(self, task: Task, source: MatchSource, rng: random.Random) -> Ranking:
        """:meth:`rank` with a stopping target (``until``): see the class docstring and ``docs/stopping.md``."""
        import numpy as np

        target = check_stopping("strategy active", self.until, self.confidence)
        ids = task.candidate_ids
        n = len(ids)
        index = {cid: k for k, cid in enumerate(ids)}
        # A pair may be asked once per presentation order: twice in one order at a time, once as a
        # two-order match. Asking it again in an order already asked would only repeat an answer.
        per_match = 2 if self.order == "both" else 1
        plays_per_pair = 2 // per_match
        most = self.max_judgments(n)
        task_match_count(
            "active", task.task_id, n, self.budget, self.comparisons, self.order
        )  # refuses a budget buying none
        matches_left = most // per_match
        upper = np.triu_indices(n, 1)
        tiebreak = np.zeros((n, n))
        pair_count = n * (n - 1) // 2
        tiebreak[upper] = np.fromiter((rng.random() for _ in range(pair_count)), dtype=float, count=pair_count)
        plays = np.zeros((n, n), dtype=np.intp)
        first_shown: dict[tuple[int, int], tuple[str, str]] = {}
        opponents = np.zeros(n, dtype=np.intp)
        posterior = Posterior(n, self.prior_sd, exact=n <= EXACT_UP_TO)
        asked: set[tuple[str, str]] = set()  # distinct judgments: (first, second) as shown
        seed = task_seed(task.task_id)
        # The target is checked every `check_every` steps (each check fits the posterior under every
        # prior scale), and always before the budget or the questions run out.
        check_every = max(1, math.ceil(n / 16))
        steps = 0
        stopped = None
        while stopped is None:
            open_pairs = np.triu(plays < plays_per_pair, 1)
            last = matches_left <= 0 or not open_pairs.any()
            if (last or not steps % check_every) and is_target_settled(
                posterior.mean, posterior.cov, target, self.confidence, seed, posterior.evidence
            ):
                stopped = "target"
                break
            if not open_pairs.any():
                stopped = "exhausted"
                break
            if matches_left <= 0:
                stopped = "budget"
                break
            if steps and steps % FORECAST_EVERY == 0 and source.wants_forecast:
                source.forecast(
                    forecast_more(posterior.mean, posterior.cov, target, self.confidence, len(asked), most, seed)
                )
            size = min(self.batch, matches_left)
            chosen = None
            if self.criterion == "target":
                # The pairs the answer rests on, (lower row, higher row) as `plays` is kept, still open.
                asserted = np.sort(relevant_pairs(current_order(posterior.mean), target), axis=1)
                asserted = asserted[open_pairs[asserted[:, 0], asserted[:, 1]]]
                if len(asserted):
                    chosen = choose_pairs(
                        asserted, posterior.mean, posterior.cov, tiebreak, size, "order", self.prior_sd
                    )
            if chosen is None:
                pairs = (
                    None
                    if posterior.exact
                    else candidate_pairs(posterior.mean, plays >= plays_per_pair, int(opponents.max()))
                )
                if pairs is None or len(pairs) < size:
                    pairs = np.column_stack(np.nonzero(open_pairs))
                criterion = "information" if self.criterion == "target" else self.criterion
                chosen = choose_pairs(pairs, posterior.mean, posterior.cov, tiebreak, size, criterion, self.prior_sd)
            steps += 1
            drawn = []
            for i, j in chosen:
                if (i, j) in first_shown:  # its second play: the order not yet asked
                    a, b = first_shown[(i, j)]
                    drawn.append((b, a))
                else:
                    drawn.append(first_shown.setdefault((i, j), coin_order(ids[i], ids[j], rng)))
            # order=random reverses a rematch itself (the match source remembers the last order shown).
            step_matches = source.play_many(drawn, round=steps, order=self.order, rng=rng)
            new = []
            for match in step_matches:
                for comparison in match.comparisons:
                    outcome = comparison_outcome(comparison, match)
                    if outcome is not None and (comparison.first, comparison.second) not in asked:
                        asked.add((comparison.first, comparison.second))
                        new.append((index[outcome[0]], index[outcome[1]], outcome[2]))
            for i, j in chosen:
                plays[i, j] += 1
                opponents[[i, j]] += 1
            matches_left -= len(chosen)
            posterior.update(new)
        if not posterior.exact:
            posterior.refresh()
        factor = ELO_SCALE / math.log(ELO_BASE)  # log-strength -> Elo points
        posterior_sd = np.sqrt(np.diag(posterior.cov)) * factor
        scores = {cid: float(posterior.mean[k] * factor + ELO_INITIAL) for k, cid in enumerate(ids)}
        extras = {
            cid: CandidateExtras(
                played=int(opponents[k]), posterior_sd=float(posterior_sd[k]), steps=steps, stopped=stopped
            )
            for k, cid in enumerate(ids)
        }
        return Ranking(scores=scores, extras=extras)

    def exact_judgments(self, n_candidates: int) -> int | None:
        """The budget, without ``settle`` or ``until`` (with them, it may stop sooner).

        Parameters
        ----------
        n_candidates : int
            The number of candidates of the task.

        Returns
        -------
        int or None
            The number of judgments, or None when it is not fixed.
        """
        return None if self.settle or self.until is not None else self.max_judgments(n_candidates)

    def max_judgments(self, n_candidates: int) -> int:
        """The budget; with ``until`` up to two plays of each pair (once per presentation order).

        Parameters
        ----------
        n_candidates : int
            The number of candidates of the task.

        Returns
        -------
        int
            The number of judgments.
        """
        if self.until is None:
            return budget_judgments(n_candidates, self.budget, self.comparisons, self.order)
        every = n_candidates * (n_candidates - 1)  # every ordered pair: the distinct judgments
        return min(
            every,
            comparison_budget(n_candidates, self.budget, self.comparisons)
            // judgments_per_match(self.order)
            * judgments_per_match(self.order),
        )

    def forecast_judgments(self, n_candidates: int, seed: int = 0) -> Forecast | None:
        """Before any judgment: the prior-based :func:`~rankkit.strategies._stopping.prior_forecast`
        of the judgments the target needs on a task of ``n_candidates``; None without ``until``.

        Parameters
        ----------
        n_candidates : int
            The number of candidates of the task.
        seed : int, default 0
            The Monte Carlo seed of the forecast.

        Returns
        -------
        Forecast or None
            The forecast, or None without ``until``.
        """
        target = check_stopping("strategy active", self.until, self.confidence)
        if target is None:
            return None
        return prior_forecast(
            n_candidates, target, self.confidence, self.prior_sd, self.max_judgments(n_candidates), seed
        )
