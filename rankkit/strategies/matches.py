"""What strategies ask for judgments through: the :class:`MatchSource`, and the records it keeps.

More in ``docs/matches.md``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import networkx as nx

from rankkit.data.tasks import Task
from rankkit.judgments.memo import JudgmentMemo, Origin
from rankkit.judgments.spend import Meter, Spend
from rankkit.judgments.values import CHOICE_KIND, RANKING_KIND, Grade, ParseStatus, Verdict, Winner
from rankkit.strategies.order import check_order, coin_order


@dataclass
class Cost:
    """What a strategy used and where it came from.

    ``comparisons``/``grades`` count the distinct judgments it used (a request it repeats is
    counted once; a comparison is a pairwise verdict or a k-way judgment of several answers,
    :mod:`rankkit.strategies.choices`), and each of them came from exactly one place: ``judge_calls`` (new, paid for),
    ``cache_hits`` (the persistent cache) or ``shared_hits`` (made earlier in this run, by another
    strategy or task). So ``comparisons + grades == judge_calls + cache_hits + shared_hits``.
    """

    comparisons: int = 0
    grades: int = 0
    judge_calls: int = 0
    cache_hits: int = 0
    shared_hits: int = 0
    parse_failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    retries: int = 0  # requests a judge had to repeat (HTTP backends: 429, 5xx, timeouts)
    analyses: int = 0  # PREPAIR per-answer analyses generated (their tokens are in the token counts)
    cached_tokens: int = 0  # prompt tokens the provider read from its prompt cache (in prompt_tokens)
    usd: float = 0.0  # what the new judgments cost, priced by the judge (rankkit.judges.hosted.prices); 0 unpriced

    def add(self, other: Cost) -> None:
        """Add another cost's counts into this one, field by field.

        Parameters
        ----------
        other
            The cost to add (left unchanged).
        """
        for name, value in asdict(other).items():
            setattr(self, name, getattr(self, name) + value)

    def to_dict(self) -> dict[str, int | float]:
        """The cost as a plain dict (``usd`` rounded to nano-dollars).

        Returns one entry per field.
        """
        record = asdict(self)
        record["usd"] = round(self.usd, 9)  # nano-dollars: what usage carries
        return record


@dataclass(frozen=True)
class Comparison:
    """One comparison as a strategy used it: who was shown first, the round, and the verdict."""

    first: str
    second: str
    verdict: Verdict
    round: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """The comparison as a JSON-ready dict (the verdict's fields flattened in).

        Returns ``first``, ``second``, ``round``, the two grades, ``winner``, ``probability``,
        ``status``, ``raw`` and, in generate mode, ``verdict_path``.
        """
        record = {
            "first": self.first,
            "second": self.second,
            "round": self.round,
            "first_grade": self.verdict.first_grade,
            "second_grade": self.verdict.second_grade,
            "winner": self.verdict.winner.value,
            "probability": self.verdict.probability,
            "status": self.verdict.status.value,
            "raw": self.verdict.raw,
        }
        if "verdict_path" in self.verdict.extras:  # generate mode: how the verdict was read
            record["verdict_path"] = self.verdict.extras["verdict_path"]
        if self.verdict.level is not None:  # verdicts=tie|graded only: binary records keep their form
            record["level"] = self.verdict.level
        return record


@dataclass(frozen=True)
class Match:
    """The outcome of playing a against b: a shown first, and with ``order=both`` also b first.

    ``grade_a``/``grade_b`` are the grades averaged over the orders decided; ``outcome`` is 1.0 when
    a won, 0.0 when b won and 0.5 for a tie. It comes from the averaged scores; when they are equal
    the judges' own verdicts decide (they may carry information the scores lack, e.g. choice-token
    probabilities), and only when those balance too is it a tie.

    ``settled_by`` says what decided it (see "Undecided comparisons" in ``docs/matches.md``):
    ``verdicts`` (the comparisons), ``grades`` (every comparison failed, so each answer's own
    grade decided), or ``undecided`` (nothing did: ``outcome`` is None, and the grades are the
    middle of the scale, for display only).
    """

    a: str
    b: str
    grade_a: float
    grade_b: float
    outcome: float | None
    comparisons: tuple[Comparison, ...] = field(default=())
    settled_by: str = "verdicts"

    @property
    def decided(self) -> bool:
        return self.outcome is not None


def decided(comparison: Comparison) -> bool:
    """Whether a comparison's verdict was read (a failed one decides nothing).

    Returns True when its verdict's status is a read one.

    Parameters
    ----------
    comparison
        The comparison to check.
    """
    return comparison.verdict.status is not ParseStatus.FAILED


def _verdict_for_a(comparison: Comparison, a: str) -> float:
    if comparison.verdict.winner is Winner.TIE:
        return 0.5
    first_won = comparison.verdict.winner is Winner.FIRST
    return 1.0 if first_won == (comparison.first == a) else 0.0


def make_match(a: str, b: str, comparisons: Sequence[Comparison]) -> Match:
    """Combine the comparisons between a and b (either order) into a :class:`Match`.

    Only decided comparisons count; when none is, the match is undecided (``outcome`` None,
    both grades the mean of the failed verdicts' placeholders).

    Returns the combined match, ``a`` against ``b``.

    Parameters
    ----------
    a, b : str
        The two candidate ids.
    comparisons
        Their comparisons, shown in either order.
    """
    counted = [c for c in comparisons if decided(c)]
    if not counted:
        placeholder = [c.verdict.first_grade for c in comparisons] or [0.0]
        middle = sum(placeholder) / len(placeholder)
        return Match(
            a=a,
            b=b,
            grade_a=middle,
            grade_b=middle,
            outcome=None,
            comparisons=tuple(comparisons),
            settled_by="undecided",
        )
    grade_a = grade_b = 0.0
    for comparison in counted:
        verdict = comparison.verdict
        sa, sb = (
            (verdict.first_grade, verdict.second_grade)
            if comparison.first == a
            else (verdict.second_grade, verdict.first_grade)
        )
        grade_a += sa
        grade_b += sb
    grade_a /= len(counted)
    grade_b /= len(counted)
    if grade_a != grade_b:
        outcome = 1.0 if grade_a > grade_b else 0.0
    else:
        votes = sum(_verdict_for_a(c, a) for c in counted) / len(counted)
        outcome = 1.0 if votes > 0.5 else 0.0 if votes < 0.5 else 0.5
    return Match(a=a, b=b, grade_a=grade_a, grade_b=grade_b, outcome=outcome, comparisons=tuple(comparisons))


def settle_by_grades(match: Match, grade_a: Grade, grade_b: Grade, scale: tuple[float, float]) -> Match:
    """An undecided match decided by each answer's own grade (judged alone, so neither text can
    touch the other's): the higher grade wins, a failed grade loses to any read one; equal grades
    or two failed ones leave the match undecided. The grades become the match's grades (a failed
    one the bottom of the scale).

    Returns the match, decided when the grades differ.

    Parameters
    ----------
    match
        The undecided match.
    grade_a, grade_b : Grade
        The grades of ``match.a`` and ``match.b``, each judged alone.
    scale
        The task's grade scale (low, high); a failed grade counts as ``low``.
    """
    value_a, value_b = (
        g.value if g.value is not None and g.status is not ParseStatus.FAILED else None for g in (grade_a, grade_b)
    )
    if (value_a is None and value_b is None) or value_a == value_b:
        return match
    low = scale[0]
    value_a = low if value_a is None else value_a
    value_b = low if value_b is None else value_b
    return replace(
        match, grade_a=value_a, grade_b=value_b, outcome=1.0 if value_a > value_b else 0.0, settled_by="grades"
    )


class MatchSource:
    """The judgments one strategy asks for on one task (see ``docs/matches.md``).

    Parameters
    ----------
    task:
        The task being ranked.
    memo:
        The run's :class:`~rankkit.judgments.memo.JudgmentMemo`.
    strategy:
        The strategy's label, recorded with its comparisons.
    progress:
        Told about every batch of judgments (the run's progress bar), or None.

    Attributes
    ----------
    cost:
        What the strategy used and where it came from (:class:`Cost`).
    comparisons:
        Every distinct comparison the strategy used, in the order first used.

    Examples
    --------
    >>> import random
    >>> from rankkit.judges import make_judge
    >>> from rankkit.data.tasks import Candidate, Task
    >>> task = Task("t", "2+2?", (Candidate("a", "4", human={"score": 1.0}),
    ...                           Candidate("b", "5", human={"score": 0.0})), criterion="score", scale=(0.0, 1.0))
    >>> source = MatchSource(task, JudgmentMemo(make_judge("sim:preset=gpt4,seed=1")))
    >>> match = source.play("a", "b", order="both", rng=random.Random(0))
    >>> match.outcome, len(match.comparisons), source.cost.comparisons, source.cost.judge_calls
    (1.0, 2, 2, 2)
    """

    def __init__(
        self, task: Task, memo: JudgmentMemo, strategy: str = "", progress: Any = None, meter: Meter | None = None
    ):
        self.task = task
        self.memo = memo
        self.strategy = strategy
        self.progress = progress
        self.cost = Cost()
        #: Prices each judgment used in the four budget units (:mod:`rankkit.judgments.spend`).
        self.meter = meter if meter is not None else Meter()
        #: What the distinct judgments used so far spent, new, cached or reused alike (so a budget
        #: stops at the same place whatever the cache holds).
        self.spend = Spend()
        self._token_ratio = 1.0  # the largest reported / estimated tokens of a judgment so far
        self.comparisons: list[Comparison] = []
        self._verdicts: dict[tuple[str, str], Verdict] = {}  # ordered pairs used so far
        self._grades: dict[str, Grade] = {}  # candidates graded so far
        #: Every distinct grade the strategy used, (candidate id, grade), in the order first used.
        self.grades: list[tuple[str, Grade]] = []
        self._last_shown: dict[frozenset[str], tuple[str, str]] = {}  # per pair, the order shown last
        #: Every distinct k-way judgment the strategy used, in the order first used (rankkit.strategies.choices).
        self.group_comparisons: list[Any] = []
        self._group_judgments: dict[tuple[str, tuple[str, ...]], Any] = {}  # (kind, shown) used so far

    # -- comparisons --------------------------------------------------------------------------
    def compare_many(self, pairs: Sequence[tuple[str, str]], round: int | None = None) -> list[Verdict]:
        """The judge's verdict on each ordered pair ``(first, second)``, first shown first.

        Returns one :class:`~rankkit.judgments.values.Verdict` per pair, in order.

        Parameters
        ----------
        pairs:
            Ordered pairs of candidate ids; a pair asked again returns the same verdict at no cost.
        round:
            The strategy's round, recorded with the comparisons it first uses here.
        """
        for first, second in pairs:
            if first == second:
                raise ValueError(f"cannot compare candidate {first!r} with itself")
        new = list(dict.fromkeys(pair for pair in pairs if pair not in self._verdicts))
        if new:
            task = self.task
            answers = self.memo.verdicts([(task, task.candidate(a), task.candidate(b)) for a, b in new])
            for (first, second), (verdict, _) in zip(new, answers):
                self._verdicts[(first, second)] = verdict
                self.comparisons.append(Comparison(first, second, verdict, round))
                self.cost.comparisons += 1
                self._meter((first, second), verdict.usage)
            self._account(answers)
        return [self._verdicts[pair] for pair in pairs]

    def compare(self, first: str, second: str, round: int | None = None) -> Verdict:
        """One pair's :meth:`compare_many`.

        Returns the judge's verdict.

        Parameters
        ----------
        first, second : str
            The candidate ids, in the order shown.
        round
            The strategy's round, recorded with the comparison.
        """
        return self.compare_many([(first, second)], round)[0]

    def play_many(
        self,
        pairs: Sequence[tuple[str, str]],
        order: str = "given",
        rng: random.Random | None = None,
        round: int | None = None,
    ) -> list[Match]:
        """Play each pair (a, b) in the presentation order ``order`` (see ``docs/matches.md``).

        Returns one :class:`Match` per pair, whose ``a`` is the candidate shown first.

        Parameters
        ----------
        pairs:
            The pairs to play.
        order:
            ``given``, ``random`` or ``both``.
        rng:
            The strategy's generator: ``random`` flips its coins with it (required then).
        round:
            The strategy's round, recorded with the comparisons.
        """
        check_order("play", order)
        shown = [self._present(a, b, order, rng) for a, b in pairs]  # every coin before any judgment
        asked = shown + ([(b, a) for a, b in shown] if order == "both" else [])
        verdicts = dict(zip(asked, self.compare_many(asked, round)))
        played: dict[tuple[str, str], list[Comparison]] = {}
        for first, second in shown:
            played[(first, second)] = [Comparison(first, second, verdicts[(first, second)], round)]
            if order == "both":
                played[(first, second)].append(Comparison(second, first, verdicts[(second, first)], round))
        self._rejudge_reversed(played, round)
        matches = [make_match(first, second, played[(first, second)]) for first, second in shown]
        return self._settle_undecided(matches)

    def _rejudge_reversed(self, played: dict[tuple[str, str], list[Comparison]], round: int | None) -> None:
        """A match whose every comparison failed is asked once more in the other order (a
        failure tied to one presentation order, e.g. a long first answer, may not recur)."""
        retry = [
            (first, second)
            for (first, second), comparisons in played.items()
            if len(comparisons) == 1 and not decided(comparisons[0])
        ]
        if retry:
            reversed_verdicts = self.compare_many([(second, first) for first, second in retry], round)
            for (first, second), verdict in zip(retry, reversed_verdicts):
                played[(first, second)].append(Comparison(second, first, verdict, round))

    def _settle_undecided(self, matches: list[Match]) -> list[Match]:
        """Decide the still undecided matches by the two answers' own grades, when the judge grades
        (:func:`settle_by_grades`)."""
        open_matches = [i for i, match in enumerate(matches) if not match.decided]
        if not open_matches:
            return matches
        grades: dict[str, Grade] = {}
        if self.memo.judge.capabilities.pointwise:
            ids = [cid for i in open_matches for cid in (matches[i].a, matches[i].b)]
            try:
                grades = dict(zip(ids, self.grade_many(ids)))
            except NotImplementedError:  # a judge that only compares (it did not declare so)
                grades = {}
        if grades:
            for i in open_matches:
                match = matches[i]
                matches[i] = settle_by_grades(match, grades[match.a], grades[match.b], self.task.scale)
        return matches

    @property
    def wants_forecast(self) -> bool:
        """Whether anyone shows a stopping strategy's :meth:`forecast` (the run's progress bar, when shown)."""
        return bool(getattr(self.progress, "shows_forecast", False))

    def forecast(self, remaining: Any) -> None:
        """Tell the run's progress bar how many more judgments this task's strategy expects to need
        to reach its stopping target (a :class:`~rankkit.strategies._stopping.Forecast`).

        Parameters
        ----------
        remaining
            The strategy's forecast of the judgments still needed.
        """
        if self.wants_forecast:
            self.progress.forecast(self.task.task_id, self.strategy, remaining)

    def play(
        self, a: str, b: str, order: str = "given", rng: random.Random | None = None, round: int | None = None
    ) -> Match:
        """One pair's :meth:`play_many`.

        Returns the match of ``a`` against ``b``.

        Parameters
        ----------
        a, b : str
            The candidate ids.
        order
            ``given`` (a first), ``random`` (a coin flip from ``rng``) or ``both`` (both orders).
        rng
            The generator for ``order="random"``.
        round
            The strategy's round.
        """
        return self.play_many([(a, b)], order, rng, round)[0]

    def _present(self, a: str, b: str, order: str, rng: random.Random | None) -> tuple[str, str]:
        """The order (a, b) is shown in first: as given, unless ``order`` is ``random`` (then a
        rematch reversed, else a coin from the strategy's generator)."""
        pair = frozenset((a, b))
        if order != "random":
            shown = (a, b)
        elif pair in self._last_shown:
            last = self._last_shown[pair]
            shown = (last[1], last[0])
        else:
            if rng is None:
                raise ValueError("order=random needs the strategy's generator: pass rng=")
            shown = coin_order(a, b, rng)
        self._last_shown[pair] = shown
        return shown

    # -- k-way judgments (rankkit.strategies.choices) ----------------------------------------------------
    def choose_many(
        self,
        groups: Sequence[Sequence[str]],
        order: str = "given",
        rng: random.Random | None = None,
        round: int | None = None,
        shifts: int = 0,
    ) -> list[Any]:
        """Show each group and ask which member is best: one :class:`~rankkit.strategies.choices.GroupMatch`
        per group (``order`` ``given``/``random``/``permute``: :mod:`rankkit.strategies.choices`).

        Returns one per group, in order.

        Parameters
        ----------
        groups
            The groups of candidate ids.
        order
            ``given``, ``random``, ``both`` or ``permute``.
        rng
            The generator for the random orders.
        round
            The strategy's round.
        shifts
            How many extra cyclic shifts of each group to show (``permute``).
        """
        from rankkit.strategies.choices import play_groups

        return play_groups(self, CHOICE_KIND, groups, order, rng, round, shifts)

    def rank_many(
        self,
        groups: Sequence[Sequence[str]],
        order: str = "given",
        rng: random.Random | None = None,
        round: int | None = None,
        shifts: int = 0,
    ) -> list[Any]:
        """Show each group and ask for its members best first: one :class:`~rankkit.strategies.choices.GroupMatch` per group.

        Returns one per group, in order.

        Parameters
        ----------
        groups
            The groups of candidate ids.
        order
            ``given``, ``random``, ``both`` or ``permute``.
        rng
            The generator for the random orders.
        round
            The strategy's round.
        shifts
            How many extra cyclic shifts of each group to show (``permute``).
        """
        from rankkit.strategies.choices import play_groups

        return play_groups(self, RANKING_KIND, groups, order, rng, round, shifts)

    def group_judgments(self, kind: str, shown: Sequence[tuple[str, ...]], round: int | None = None) -> list[Any]:
        """The judge's k-way judgment (``kind`` ``choice`` or ``ranking``) of each group, members
        in the order shown; a group shown again in the same order is free. Each is counted once in
        ``cost.comparisons``.

        Returns one per group, in order.

        Parameters
        ----------
        kind
            ``choice`` or ``ranking``.
        shown
            Each group's candidate ids, in the order shown.
        round
            The strategy's round.
        """
        from rankkit.strategies.choices import GroupComparison

        new = list(dict.fromkeys(group for group in shown if (kind, group) not in self._group_judgments))
        if new:
            task = self.task
            requests = [(task, tuple(task.candidate(cid) for cid in group)) for group in new]
            ask = self.memo.choices if kind == CHOICE_KIND else self.memo.rankings
            answers = ask(requests)
            for group, (judgment, _) in zip(new, answers):
                self._group_judgments[(kind, group)] = judgment
                self.group_comparisons.append(GroupComparison(group, judgment, round))
                self.cost.comparisons += 1
                self._meter(group, judgment.usage)
            self._account(answers)
        return [self._group_judgments[(kind, group)] for group in shown]

    # -- grades -------------------------------------------------------------------------------
    def grade_many(self, candidates: Sequence[str]) -> list[Grade]:
        """The judge's grade of each candidate alone, in order (a candidate asked again is free).

        Returns one grade per candidate, in order.

        Parameters
        ----------
        candidates
            The candidate ids.
        """
        new = list(dict.fromkeys(cid for cid in candidates if cid not in self._grades))
        if new:
            task = self.task
            answers = self.memo.grades([(task, task.candidate(cid)) for cid in new])
            for cid, (grade, _) in zip(new, answers):
                self._grades[cid] = grade
                self.grades.append((cid, grade))
                self.cost.grades += 1
                self._meter((cid,), grade.usage)
            self._account(answers)
        return [self._grades[cid] for cid in candidates]

    def grade(self, candidate: str) -> Grade:
        """One candidate's :meth:`grade_many`.

        Returns the judge's grade.

        Parameters
        ----------
        candidate
            The candidate id.
        """
        return self.grade_many([candidate])[0]

    # -- accounting ---------------------------------------------------------------------------
    def _meter(self, shown: Sequence[str], usage: Any) -> None:
        """Add a newly used judgment showing ``shown`` to :attr:`spend`."""
        candidates = [self.task.candidate(cid) for cid in shown]
        spend = self.meter.judgment(self.task, candidates, usage)
        estimated = self.meter.estimate(self.task, candidates)
        if estimated > 0:
            self._token_ratio = max(self._token_ratio, spend.tokens / estimated)
        self.spend.add(spend)

    def quote(self, shown: Sequence[tuple[str, ...]]) -> Spend:
        """What asking each of ``shown`` (candidate ids in the order shown) would spend, those already
        used free: the estimate, scaled by the largest ratio of reported to estimated tokens so far."""
        quoted = Spend()
        for ids in dict.fromkeys(shown):
            if (len(ids) == 2 and ids in self._verdicts) or any(key[1] == ids for key in self._group_judgments):
                continue
            tokens = math.ceil(
                self.meter.estimate(self.task, [self.task.candidate(cid) for cid in ids]) * self._token_ratio
            )
            quoted.add(Spend(judgments=1, answers=len(ids), tokens=tokens, usd=self.meter.usd(tokens, 0)))
        return quoted

    def _charge(self, judgment: Verdict | Grade, origin: Origin) -> None:
        cost = self.cost
        if origin is Origin.CACHE:
            cost.cache_hits += 1
        elif origin is Origin.MEMORY:
            cost.shared_hits += 1
        else:
            cost.judge_calls += 1
            cost.prompt_tokens += int(judgment.usage.get("prompt_tokens", 0))
            cost.completion_tokens += int(judgment.usage.get("completion_tokens", 0))
            cost.retries += int(judgment.usage.get("retries", 0))
            cost.analyses += int(judgment.usage.get("analyses", 0))
            cost.cached_tokens += int(judgment.usage.get("cached_tokens", 0))
            cost.usd += int(judgment.usage.get("usd_nano", 0)) / 1e9
            if judgment.status is ParseStatus.FAILED:
                cost.parse_failures += 1

    def _account(self, answers: Sequence[tuple[Any, Origin]]) -> None:
        """Charge a batch's answers to :attr:`cost` (:meth:`_charge`) and tell the run's progress
        bar what the batch used, where it came from and what its new judgments cost."""
        usd_before = self.cost.usd
        for judgment, origin in answers:
            self._charge(judgment, origin)
        if self.progress is not None:
            origins = [origin for _, origin in answers]
            self.progress.judged(
                len(origins),
                origins.count(Origin.JUDGE),
                origins.count(Origin.CACHE),
                origins.count(Origin.MEMORY),
                self.cost.usd - usd_before,
            )


# ---------------------------------------------------------------------------------------------
# The record of a run


class MatchGraph:
    """Every comparison the strategies of a run used on one task, as a networkx ``MultiDiGraph``.

    Nodes are candidate ids; each distinct comparison is one edge ``first -> second`` keyed by the
    judge's fingerprint, carrying the verdict, the round and strategy that first used it, and
    ``used_by``: every (strategy, round) that used it.
    """

    def __init__(self, task: Task):
        self.task = task
        self.graph = nx.MultiDiGraph(task_id=task.task_id)
        for cand in task.candidates:
            self.graph.add_node(cand.id)

    def record(self, fingerprint: str, comparison: Comparison, strategy: str) -> None:
        """Add ``comparison`` as used by ``strategy`` (an edge the first time, a use after that).

        Parameters
        ----------
        fingerprint
            The judge's fingerprint (the edge key).
        comparison
            The comparison used.
        strategy
            The strategy that used it.
        """
        first, second = comparison.first, comparison.second
        data = self.graph.get_edge_data(first, second, key=fingerprint)
        if data is None:
            self.graph.add_edge(
                first,
                second,
                key=fingerprint,
                verdict=comparison.verdict,
                strategy=strategy,
                round=comparison.round,
                used_by=[],
            )
            data = self.graph.edges[first, second, fingerprint]
        data["used_by"].append({"strategy": strategy, "round": comparison.round})

    def comparisons(self, fingerprint: str | None = None) -> Iterator[tuple[str, str, Verdict]]:
        """Every recorded comparison (first, second, verdict), optionally of one judge only.

        Yields ``(first, second, verdict)`` per recorded comparison.

        Parameters
        ----------
        fingerprint
            Only this judge's comparisons; None for all.
        """
        for first, second, key, data in self.graph.edges(keys=True, data=True):
            if fingerprint is None or key == fingerprint:
                yield first, second, data["verdict"]
