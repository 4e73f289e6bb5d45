"""``setwise_groups``: random groups of k for several rounds; an answer's score is its mean slot score.

Each round the answers are shuffled and cut into groups of ``k`` (a lone leftover sits out); each
answer gets the group's :meth:`~rankkit.judgments.values.GroupChoice.slot_scores` for it. Nothing is
eliminated: the k-way counterpart of averaging grades over random pairs, for noisy judges or
large N. Costs ``rounds`` · (groups per round) judgments, times the presentations of ``order``;
``order=permute`` shows every group in every cyclic shift, so a slot bias adds the same to all.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from rankkit.data.specs import SpecError
from rankkit.data.tasks import Task
from rankkit.judgments.spend import check_unit
from rankkit.strategies._bt_posterior import choice_posterior
from rankkit.strategies._kway import KwayStrategy, mean_scores
from rankkit.strategies._pair_effects import check_rule, choice_weights
from rankkit.strategies._spend import BudgetWatch, judgment_budget, spent_extras
from rankkit.strategies._stopping import (
    Forecast,
    StopTarget,
    check_stopping,
    current_order,
    forecast_more,
    in_contention,
    is_target_settled,
    prior_forecast,
    task_seed,
)
from rankkit.strategies.base import CandidateExtras, Ranking, register
from rankkit.strategies.choices import judgments_per_group

if TYPE_CHECKING:
    import numpy as np

    from rankkit.strategies.choices import GroupMatch
    from rankkit.strategies.matches import MatchSource

#: How a round's groups are formed: ``random`` (every candidate, shuffled) or ``target`` (the
#: candidates still in contention for the stopping target, :func:`contention_groups`).
CRITERIA = ("random", "target")


def group_sizes(n: int, k: int) -> list[int]:
    """The sizes of one round's judged groups of ``n`` answers: groups of k, the last smaller, a lone
    leftover not judged.

    Examples
    --------
    >>> group_sizes(10, 4), group_sizes(9, 4), group_sizes(3, 4)
    ([4, 4, 2], [4, 4], [3])
    """
    return [size for size in (min(k, n - start) for start in range(0, n, k)) if size >= 2]


def contention_groups(
    ids: list[str], mean: np.ndarray, cov: np.ndarray, target: StopTarget, confidence: float, k: int, rng: random.Random
) -> list[list[str]]:
    """One round's groups of ``min(k, len(ids))`` when only candidates in contention for ``target`` are judged.

    The contenders (:func:`~rankkit.strategies._stopping.in_contention`; ``ids`` in the rows of
    ``mean`` and ``cov``) are shuffled and cut into groups of ``k``; a short group is filled with
    random others. With fewer than two in contention the best ``k`` by posterior mean are grouped.

    Examples
    --------
    >>> import numpy as np, random
    >>> mean, cov = np.array([3.0, 2.8, -4.0, -5.0, -6.0]), np.eye(5) * 0.25
    >>> groups = contention_groups(list("abcde"), mean, cov, StopTarget("top1"), 0.95, 3, random.Random(0))
    >>> len(groups), len(groups[0]), {"a", "b"} <= set(groups[0])
    (1, 3, True)
    """
    size = min(k, len(ids))
    ranked = [ids[row] for row in current_order(mean)]
    contenders = [ids[row] for row in in_contention(mean, cov, target, confidence)]
    if len(contenders) < 2:
        contenders = ranked[:size]
    rng.shuffle(contenders)
    chosen = set(contenders)
    # Fillers: those out of contention in a random order (a fixed choice would ask the same
    # question again, which tells nothing new), then the other contenders when too few.
    fillers = [cid for cid in ranked if cid not in chosen]
    rng.shuffle(fillers)
    fillers += contenders
    groups = [contenders[start : start + size] for start in range(0, len(contenders), size)]
    for group in groups:
        group.extend([cid for cid in fillers if cid not in group][: size - len(group)])
        rng.shuffle(group)  # no slot kept for the contenders
    return groups


@register("setwise_groups")
@dataclass(frozen=True)
class SetwiseGroups(KwayStrategy):
    """Random groups of k for ``rounds`` rounds; score = mean slot score (module docstring).

    Parameters
    ----------
    k
        Answers per group (2 to 8).
    rounds
        How many times every answer is grouped.
    order
        ``given`` (groups come from a shuffle), ``random``, ``both`` or ``permute``.
    shifts
        With ``permute``, how many cyclic shifts (0: all).
    until
        A stopping target (``docs/stopping.md``): ``top1``, ``top:K`` or ``order``; None plays every
        round. With one, the first-choice posterior is refitted after every round and the rounds stop
        when it reaches ``confidence`` (``stopped``: ``target``), the rounds or ``budget`` are spent
        (``budget``), or every group was shown in every order (``exhausted``). Scores are then the
        posterior means.
    confidence
        The posterior probability the target must reach.
    budget
        Judgments per candidate: at most ``floor(budget · N)`` per task, cutting a round short
        (None: the rounds alone bound it); in ``budget_unit`` when that is not ``judgments``.
    prior_sd
        The prior sd of the log-strengths (only with ``until``).
    criterion
        ``random`` (every candidate, shuffled) or ``target`` (needs ``until``): after the first round
        only candidates in contention are grouped (:func:`contention_groups`).
    budget_unit
        ``judgments``, ``answers`` (shown), ``tokens`` or ``usd``, per candidate (``docs/stopping.md``);
        a spec writes it after the number: ``budget=2000tokens``.
    stopping
        The posterior's rule (only with ``until``): ``bt`` (every first choice an independent vote;
        0.3's rule, the default) or ``pair_effects`` (a pair shown together in ``n`` choices shares a
        persistent effect, so its choices count less: :func:`rankkit.strategies._pair_effects.choice_weights`).
    pair_sd
        The judge's pair-effect sd in logit units, when known (``stopping=pair_effects`` only; e.g.
        ``rankkit analyze --pair-effects`` on a pilot run): the rule then assumes it instead of
        the mean variance over 0, 1 and 2 (``docs/stopping.md``).
    """

    k: int = 8
    rounds: int = 3
    order: str = "given"
    shifts: int = 0
    until: str | None = None
    confidence: float = 0.95
    budget: float | None = None
    prior_sd: float = 2.0
    criterion: str = "random"
    budget_unit: str = "judgments"
    stopping: str = "bt"
    pair_sd: float | None = None

    description = "random groups of k for several rounds, score = mean slot score (no elimination)"
    ranges: ClassVar[dict[str, tuple[float, float]]] = {
        "rounds": (1, 10_000),
        "shifts": (0, 1000),
        "confidence": (0, 1),
        "budget": (0, 10_000),
        "prior_sd": (0, 100),
    }

    def __post_init__(self) -> None:
        super().__post_init__()
        self.check_size("k", self.k)
        if self.rounds < 1:
            raise SpecError(f"strategy {self.name}: rounds must be >= 1, got {self.rounds}")
        check_stopping(f"strategy {self.name}", self.until, self.confidence)
        if self.budget is not None and not self.budget > 0:
            raise SpecError(f"strategy {self.name}: budget must be > 0 judgments per candidate, got {self.budget}")
        check_unit(f"strategy {self.name}", self.budget_unit)
        if self.prior_sd <= 0:
            raise SpecError(f"strategy {self.name}: prior_sd must be > 0, got {self.prior_sd}")
        if self.criterion not in CRITERIA:
            raise SpecError(
                f"strategy {self.name}: criterion must be one of {', '.join(CRITERIA)}, got {self.criterion!r}"
            )
        check_rule(f"strategy {self.name}", self.stopping, self.pair_sd)
        if self.criterion == "target" and self.until is None:
            raise SpecError(
                f"strategy {self.name}: criterion=target needs a stopping target (until=top1, top:K or order)"
            )

    def rank(self, task: Task, source: MatchSource, rng: random.Random) -> Ranking:
        """Group the candidates at random in groups of k for ``rounds`` rounds; score = mean slot score."""
        if self.until is not None or self.budget is not None:
            return self._rank_until(task, source, rng, self._watch(task, source))
        ids = task.candidate_ids
        received: dict[str, list[float]] = {cid: [] for cid in ids}
        for round_ in range(1, self.rounds + 1):
            groups = _random_groups(ids, self.k, rng)
            for match in source.choose_many(groups, order=self.order, rng=rng, round=round_, shifts=self.shifts):
                if match.winner is None:  # undecided: it tells nothing about its members
                    continue
                for cid in match.members:
                    received[cid].append(match.scores[cid])
        return Ranking(scores=mean_scores(received, task.candidate_ids), extras=_extras(received))

    def _watch(self, task: Task, source: MatchSource) -> BudgetWatch | None:
        """The stop at a budget in answers, tokens or USD (refusing a usd one without a price, before
        judging); None for one in judgments or none."""
        if self.budget is None or self.budget_unit == "judgments":
            return None
        return BudgetWatch(self.name, self.budget, self.budget_unit, task, source)

    def _rank_until(self, task: Task, source: MatchSource, rng: random.Random, watch: BudgetWatch | None) -> Ranking:
        """:meth:`rank` with a stopping target or a budget (see the class docstring)."""
        import numpy as np

        target = check_stopping(f"strategy {self.name}", self.until, self.confidence)
        ids = task.candidate_ids
        rows = list(ids)  # the posterior's rows (``ids`` is shuffled every round)
        index = {cid: k for k, cid in enumerate(rows)}
        received: dict[str, list[float]] = {cid: [] for cid in task.candidate_ids}
        most = self.max_judgments(len(ids))
        self._check_budget_buys_a_group(task, most)
        seed = task_seed(task.task_id)
        asked: set[tuple[str, ...]] = set()  # distinct judgments: the members in the order shown
        choices: list[tuple[tuple[int, ...], int]] = []
        mean, cov = np.zeros(len(ids)), np.eye(len(ids)) * self.prior_sd**2
        # Every distinct question: each group of each size in each order (only small tasks get there).
        possible = sum(math.perm(len(ids), size) for size in set(group_sizes(len(ids), self.k)))
        used = new = 0
        stopped: str | None = "budget" if target is not None else None
        for round_ in range(1, self.rounds + 1):
            if target is not None and is_target_settled(mean, cov, target, self.confidence, seed):
                stopped = "target"
                break
            # A round that asked nothing new (small tasks) is followed by a random one, which can
            # reach every question (so ``exhausted`` is reached when it should be).
            if self.criterion == "target" and choices and new:
                groups = contention_groups(rows, mean, cov, target, self.confidence, self.k, rng)
            else:
                groups = _random_groups(ids, self.k, rng)
            affordable = self._affordable(groups, most - used, watch)
            if not affordable:
                stopped = "budget"
                break
            matches = source.choose_many(affordable, order=self.order, rng=rng, round=round_, shifts=self.shifts)
            new = _record(matches, index, asked, choices, received)
            if target is not None and new:
                weights = choice_weights(choices, self.pair_sd) if self.stopping == "pair_effects" else None
                mean, cov = choice_posterior(choices, len(ids), self.prior_sd, mean, weights)
                if source.wants_forecast:
                    source.forecast(forecast_more(mean, cov, target, self.confidence, len(asked), most, seed))
            used += new  # a group shown again in an order already shown is free
            if target is not None and len(asked) >= possible:
                stopped = "target" if is_target_settled(mean, cov, target, self.confidence, seed) else "exhausted"
                break
            if len(affordable) < len(groups):
                stopped = "budget"
                break
        else:
            if target is not None and is_target_settled(mean, cov, target, self.confidence, seed):
                stopped = "target"
        if target is not None:
            scores = {cid: float(mean[index[cid]]) for cid in task.candidate_ids}
        else:
            scores = mean_scores(received, task.candidate_ids)
        return Ranking(scores=scores, extras=_extras(received, stopped, spent_extras(source)))

    def _check_budget_buys_a_group(self, task: Task, most: int) -> None:
        """Refuse a budget of ``most`` judgments that buys no group of ``task``."""
        n = len(task.candidates)
        sizes = group_sizes(n, self.k)
        if sizes and most < min(judgments_per_group(self.order, size, self.shifts) for size in sizes):
            raise SpecError(
                f"strategy {self.name}: budget={self.budget:g} buys no group on task {task.task_id!r} "
                f"({n} candidates, groups of up to {self.k})"
            )

    def _affordable(self, groups: list[list[str]], left: int, watch: BudgetWatch | None) -> list[list[str]]:
        """The round's first groups that ``left`` judgments (and ``watch``'s budget, if any) pay for:
        the budget always wins, a round is cut short where it could run out."""
        affordable = []
        for group in groups:
            cost = judgments_per_group(self.order, len(group), self.shifts)
            if cost > left:
                break
            affordable.append(group)
            left -= cost
        if watch is not None:
            # Each presentation of a group shows the same answers: its rotations stand for them.
            shown = [
                [tuple(group[i:] + group[:i]) for i in range(judgments_per_group(self.order, len(group), self.shifts))]
                for group in affordable
            ]
            affordable = affordable[: watch.affordable(shown)]
        return affordable

    def max_judgments(self, n_candidates: int) -> int:
        """Every round's groups in each presentation (a repeat is free), at most the budget."""
        rounds = self.rounds * sum(
            judgments_per_group(self.order, size, self.shifts) for size in group_sizes(n_candidates, self.k)
        )
        if self.budget is None:
            return rounds
        return min(rounds, math.floor(judgment_budget(self.budget, self.budget_unit) * n_candidates + 1e-9))

    def forecast_judgments(self, n_candidates: int, seed: int = 0) -> Forecast | None:
        """Before any judgment: :func:`~rankkit.strategies._stopping.prior_forecast`, a choice among k
        counted as k − 1 pairwise outcomes; None without ``until``.
        """
        target = check_stopping(f"strategy {self.name}", self.until, self.confidence)
        if target is None:
            return None
        return prior_forecast(
            n_candidates,
            target,
            self.confidence,
            self.prior_sd,
            self.max_judgments(n_candidates),
            seed,
            pairs_per_judgment=min(self.k, n_candidates) - 1,
        )


def _random_groups(ids: list[str], k: int, rng: random.Random) -> list[list[str]]:
    """``ids`` shuffled in place and cut into groups of ``k`` (a last group of one is left out)."""
    rng.shuffle(ids)
    groups = [ids[start : start + k] for start in range(0, len(ids), k)]
    return [group for group in groups if len(group) >= 2]


def _extras(
    received: dict[str, list[float]], stopped: str | None = None, spent: Mapping[str, float] | None = None
) -> dict[str, CandidateExtras]:
    """Every candidate's slot scores received (``received``: in the task's order), the reason to stop
    and, beside it, what the task spent."""
    spent = spent if stopped is not None and spent is not None else {}
    return {
        cid: CandidateExtras(played=len(scores), grades=tuple(scores), stopped=stopped, **spent)
        for cid, scores in received.items()
    }


def _record(
    matches: list[GroupMatch],
    index: dict[str, int],
    asked: set[tuple[str, ...]],
    choices: list[tuple[tuple[int, ...], int]],
    received: dict[str, list[float]],
) -> int:
    """Add the matches' judgments not ``asked`` before to ``choices`` (members by row, the choice's
    row) and a decided match's slot scores to ``received``; returns how many judgments were new."""
    new = 0
    for match in matches:
        for comparison in match.comparisons:
            best = comparison.ranking
            if best is not None and comparison.shown not in asked:
                asked.add(comparison.shown)
                choices.append((tuple(index[cid] for cid in comparison.shown), index[best[0]]))
                new += 1
        if match.winner is not None:
            for cid in match.members:
                received[cid].append(match.scores[cid])
    return new
