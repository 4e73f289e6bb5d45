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

#: Up to this many candidates every step refits exactly and scores every unplayed pair; above it
#: updates are incremental and only pre-selected pairs are scored.
EXACT_UP_TO = 256

#: With a stopping target and a progress bar, the forecast is refreshed every this many steps.
FORECAST_EVERY = 8


@register("active")
@dataclass(frozen=True)
class Active(Strategy):
    """Active Bradley–Terry: play the pair (or batch) with the highest expected information under the
    current posterior; stop at the budget or when the ranking is settled.

    Parameters
    ----------
    budget
        Comparisons per candidate: ``floor(budget · N)`` judgments per task (a match in both orders
        costs 2).
    comparisons
        Exactly this many comparisons per task instead (overrides ``budget``).
    batch
        Matches chosen per step and sent together (1: fully sequential).
    criterion
        ``information`` (BALD), ``order`` (probability the pair is ordered wrongly) or, with
        ``until``, ``target``: the unasked pair the answer rests on most likely ordered wrongly
        (LUCB-style), then ``information`` over the rest.
    settle
        Stop once the decisive results admit exactly one order; false spends the whole budget.
    prior_sd
        The sd of the Gaussian prior on the log-strengths (2: one sd apart is about 88:12 odds).
    order
        ``given`` (each match in a seeded random orientation), ``random`` (a further coin per match)
        or ``both`` (every match in both orders, each an outcome of its own; costs 2).
    aggregate
        ``bt`` (Bradley–Terry, Elo scale), ``grades`` (mean grade received) or ``corrected`` (mean
        grade corrected for the first-slot effect, :func:`rankkit.strategies._graded.corrected_grades`).
    until
        A stopping target (``docs/stopping.md``): ``top1``, ``top:K`` or ``order``; None plays to the
        budget or ``settle``. With one, it stops once the answer has posterior probability
        ``confidence`` (checked every ⌈N/16⌉ steps), the budget is spent, or every distinct judgment
        was asked; ``stopped`` says which (``target``, ``budget``, ``exhausted``). Scores are then the
        posterior means (Elo scale); ``settle`` is unused and ``aggregate`` must be ``bt``.
    confidence
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
        """Play the most informative pairs until the budget is spent (or the target is settled), then rate by Bradley–Terry."""
        from threadpoolctl import threadpool_limits

        # One BLAS thread: these matrices are small, and a multi-threaded BLAS waiting for busy
        # cores is far slower.
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
        """The budget, without ``settle`` or ``until`` (with them, it may stop sooner)."""
        return None if self.settle or self.until is not None else self.max_judgments(n_candidates)

    def max_judgments(self, n_candidates: int) -> int:
        """The budget; with ``until`` up to two plays of each pair (once per presentation order)."""
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
        """Before any judgment: :func:`~rankkit.strategies._stopping.prior_forecast`; None without ``until``."""
        target = check_stopping("strategy active", self.until, self.confidence)
        if target is None:
            return None
        return prior_forecast(
            n_candidates, target, self.confidence, self.prior_sd, self.max_judgments(n_candidates), seed
        )
