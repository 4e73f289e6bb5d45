"""``active``: active Bradley–Terry — ask the judge only the comparisons worth asking.

More in ``docs/strategies.md``.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from rankkit.data.specs import SpecError
from rankkit.data.tasks import Task
from rankkit.judgments.spend import check_unit
from rankkit.stats.ratings import ELO_BASE, ELO_INITIAL, ELO_SCALE, Outcome, bradley_terry
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
from rankkit.strategies._pair_effects import check_rule
from rankkit.strategies._spend import BudgetWatch, judgment_budget, pair_shown, spent_extras
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
from rankkit.strategies.order import coin_order, judgments_per_match

if TYPE_CHECKING:  # numpy and rankkit.strategies.matches (networkx) load when a task is ranked, not on import
    from rankkit.strategies.matches import Match, MatchSource

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
        costs 2); in ``budget_unit`` when that is not ``judgments``.
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
        a spec writes it after the number: ``budget=2000tokens``.
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
    stopping: str = "bt"
    budget_unit: str = "judgments"
    pair_sd: float | None = None

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
        check_unit("strategy active", self.budget_unit)
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
        check_rule("strategy active", self.stopping, self.pair_sd)
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
            watch = self._watch(task, source)  # a usd budget without a price is refused here, before judging
            if self.until is not None:
                return self._rank_until(task, source, rng, watch)
            return self._rank(task, source, rng, watch)

    @property
    def _judgment_budget(self) -> float:
        return judgment_budget(self.budget, self.budget_unit)

    def _watch(self, task: Task, source: MatchSource) -> BudgetWatch | None:
        """The stop at a budget in answers, tokens or USD; None for one in judgments."""
        if self.budget_unit == "judgments":
            return None
        return BudgetWatch("active", self.budget, self.budget_unit, task, source)

    def _affordable(
        self, watch: BudgetWatch | None, chosen: Any, drawn: list[tuple[str, str]]
    ) -> tuple[Any, list[tuple[str, str]]]:
        """The first of the ``chosen`` pairs (rows) and their ``drawn`` orders that the budget still
        pays for (all without a watch)."""
        if watch is None:
            return chosen, drawn
        count = watch.affordable([pair_shown(a, b, self.order) for a, b in drawn])
        return chosen[:count], drawn[:count]

    def _rank(self, task: Task, source: MatchSource, rng: random.Random, watch: BudgetWatch | None) -> Ranking:
        import numpy as np

        ids = task.candidate_ids
        n = len(ids)
        index = {cid: k for k, cid in enumerate(ids)}
        matches_left = task_match_count("active", task.task_id, n, self._judgment_budget, self.comparisons, self.order)
        unplayed_count = n * (n - 1) // 2
        tiebreak = _tiebreaks(n, rng)
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
            pairs = _pairs_to_score(posterior, played, opponents, size)
            chosen = choose_pairs(pairs, posterior.mean, posterior.cov, tiebreak, size, self.criterion, self.prior_sd)
            steps += 1
            # Rows are (i, j) with i < j, i.e. data order: each pair is drawn in a random orientation.
            chosen, drawn = self._affordable(watch, chosen, [coin_order(ids[i], ids[j], rng) for i, j in chosen])
            if not drawn:
                break  # the budget in answers, tokens or USD is spent
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
        if not unplayed_count and stopped == "budget" and matches_left > 0 and watch is None:
            stopped = "all pairs played"
        if not posterior.exact:
            posterior.refresh()  # report the exact Laplace covariance at the final mean
        scores = self._aggregate(task, matches, outcomes)
        return Ranking(
            scores=scores, extras=_extras(ids, opponents, posterior, steps, stopped, source if watch else None)
        )

    def _aggregate(self, task: Task, matches: list[Match], outcomes: list[Outcome]) -> dict[str, float]:
        """The candidates' scores from the matches played, by ``aggregate``."""
        ids = task.candidate_ids
        if self.aggregate == "bt":
            return bradley_terry(outcomes, items=ids)
        comparisons = [c for match in matches for c in match.comparisons]
        if self.aggregate == "corrected":
            return corrected_grades(comparisons, ids, unplayed=sum(task.scale) / 2)
        return mean_grades(comparisons, ids, unplayed=sum(task.scale) / 2)

    def _rank_until(self, task: Task, source: MatchSource, rng: random.Random, watch: BudgetWatch | None) -> Ranking:
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
        # Refuses a budget buying none.
        task_match_count("active", task.task_id, n, self._judgment_budget, self.comparisons, self.order)
        matches_left = most // per_match
        tiebreak = _tiebreaks(n, rng)
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
        while True:
            open_pairs = np.triu(plays < plays_per_pair, 1)
            checked = matches_left <= 0 or not open_pairs.any() or not steps % check_every
            stopped = self._stop_reason(posterior, target, seed, open_pairs, matches_left, checked)
            if stopped is not None:
                break
            if steps and steps % FORECAST_EVERY == 0 and source.wants_forecast:
                source.forecast(
                    forecast_more(posterior.mean, posterior.cov, target, self.confidence, len(asked), most, seed)
                )
            size = min(self.batch, matches_left)
            chosen = self._choose_until(posterior, target, plays >= plays_per_pair, opponents, tiebreak, size)
            steps += 1
            chosen, drawn = self._affordable(watch, chosen, _unasked_orders(chosen, first_shown, ids, rng))
            if not drawn:  # the budget in answers, tokens or USD is spent: the target is tested once more
                stopped = self._stop_reason(posterior, target, seed, open_pairs, 0, True)
                break
            # order=random reverses a rematch itself (the match source remembers the last order shown).
            step_matches = source.play_many(drawn, round=steps, order=self.order, rng=rng)
            new = _new_outcomes(step_matches, asked, index)
            for i, j in chosen:
                plays[i, j] += 1
                opponents[[i, j]] += 1
            matches_left -= len(chosen)
            posterior.update(new)
        if not posterior.exact:
            posterior.refresh()
        factor = ELO_SCALE / math.log(ELO_BASE)  # log-strength -> Elo points
        scores = {cid: float(posterior.mean[k] * factor + ELO_INITIAL) for k, cid in enumerate(ids)}
        return Ranking(scores=scores, extras=_extras(ids, opponents, posterior, steps, stopped, source))

    def _stop_reason(
        self, posterior: Posterior, target: Any, seed: int, open_pairs: Any, matches_left: int, check: bool
    ) -> str | None:
        """Why asking stops now (``target`` settled, pairs ``exhausted``, ``budget`` spent), None to go
        on; the target is tested only when ``check``."""
        if check and is_target_settled(
            posterior.mean,
            posterior.cov,
            target,
            self.confidence,
            seed,
            posterior.evidence,
            self.stopping,
            self.pair_sd,
        ):
            return "target"
        if not open_pairs.any():
            return "exhausted"
        if matches_left <= 0:
            return "budget"
        return None

    def _choose_until(
        self, posterior: Posterior, target: Any, done: Any, opponents: Any, tiebreak: Any, size: int
    ) -> Any:
        """The next ``size`` pairs to play (rows ``(i, j)``, ``i < j``) among those not ``done``; with
        ``criterion=target``, those the answer rests on first."""
        import numpy as np

        if self.criterion == "target":
            # The pairs the answer rests on, (lower row, higher row) as `plays` is kept, still open.
            asserted = np.sort(relevant_pairs(current_order(posterior.mean), target), axis=1)
            asserted = asserted[~done[asserted[:, 0], asserted[:, 1]]]
            if len(asserted):
                return choose_pairs(asserted, posterior.mean, posterior.cov, tiebreak, size, "order", self.prior_sd)
        pairs = _pairs_to_score(posterior, done, opponents, size)
        criterion = "information" if self.criterion == "target" else self.criterion
        return choose_pairs(pairs, posterior.mean, posterior.cov, tiebreak, size, criterion, self.prior_sd)

    def exact_judgments(self, n_candidates: int) -> int | None:
        """The budget, without ``settle`` or ``until`` (with them, it may stop sooner)."""
        return None if self.settle or self.until is not None else self.max_judgments(n_candidates)

    def max_judgments(self, n_candidates: int) -> int:
        """The budget; with ``until`` up to two plays of each pair (once per presentation order)."""
        if self.until is None:
            return budget_judgments(n_candidates, self._judgment_budget, self.comparisons, self.order)
        every = n_candidates * (n_candidates - 1)  # every ordered pair: the distinct judgments
        return min(
            every,
            comparison_budget(n_candidates, self._judgment_budget, self.comparisons)
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


def _tiebreaks(n: int, rng: random.Random) -> Any:
    """One seeded tiebreak number per pair (upper triangle of an n x n array), drawn in the order
    of itertools.combinations."""
    import numpy as np

    count = n * (n - 1) // 2
    tiebreak = np.zeros((n, n))
    tiebreak[np.triu_indices(n, 1)] = np.fromiter((rng.random() for _ in range(count)), dtype=float, count=count)
    return tiebreak


def _pairs_to_score(posterior: Posterior, done: Any, opponents: Any, size: int) -> Any:
    """The pairs worth scoring for the next ``size`` choices (rows ``(i, j)``, ``i < j``), none of them
    ``done``: every open pair up to :data:`EXACT_UP_TO` candidates or when the pre-selection
    finds too few, else the pre-selected ones."""
    import numpy as np

    pairs = None if posterior.exact else candidate_pairs(posterior.mean, done, int(opponents.max()))
    if pairs is None or len(pairs) < size:
        pairs = np.column_stack(np.nonzero(np.triu(~done, 1)))
    return pairs


def _unasked_orders(
    chosen: Any, first_shown: dict[tuple[int, int], tuple[str, str]], ids: list[str], rng: random.Random
) -> list[tuple[str, str]]:
    """The chosen pairs as shown: a coin flip at a pair's first play (remembered in
    ``first_shown``), the order not yet asked at its second."""
    drawn = []
    for i, j in chosen:
        if (i, j) in first_shown:
            a, b = first_shown[(i, j)]
            drawn.append((b, a))
        else:
            drawn.append(first_shown.setdefault((i, j), coin_order(ids[i], ids[j], rng)))
    return drawn


def _new_outcomes(
    matches: list[Match], asked: set[tuple[str, str]], index: dict[str, int]
) -> list[tuple[int, int, float]]:
    """The outcomes of the judgments in ``matches`` not ``asked`` before (added to it), by row index."""
    new = []
    for match in matches:
        for comparison in match.comparisons:
            outcome = comparison_outcome(comparison, match)
            if outcome is not None and (comparison.first, comparison.second) not in asked:
                asked.add((comparison.first, comparison.second))
                new.append((index[outcome[0]], index[outcome[1]], outcome[2]))
    return new


def _extras(
    ids: list[str], opponents: Any, posterior: Posterior, steps: int, stopped: str, source: MatchSource | None
) -> dict[str, CandidateExtras]:
    """Every candidate's opponents played, posterior standard deviation (Elo points), and the run's
    steps, reason to stop and, from ``source`` (where a target or a budget in another unit than
    judgments decides; None keeps the extras as they were), what it spent."""
    import numpy as np

    factor = ELO_SCALE / math.log(ELO_BASE)  # log-strength -> Elo points
    posterior_sd = np.sqrt(np.diag(posterior.cov)) * factor
    return {
        cid: CandidateExtras(
            played=int(opponents[k]),
            posterior_sd=float(posterior_sd[k]),
            steps=steps,
            stopped=stopped,
            **(spent_extras(source) if source is not None else {}),
        )
        for k, cid in enumerate(ids)
    }
