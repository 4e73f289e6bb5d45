"""Recompute a strategy's ranking of one task from the judgments a finished run recorded.

A strategy is run again (its own ``rank``, the same seed) against a memo that answers only from
the task's recorded judgments, optionally changed: a judgment flipped (its winner reversed) or
removed (it gives no answer, like a judgment whose answer could not be read). A strategy that
then asks for a judgment the run never made — a bracket whose flipped match sends another
answer on — has left the record, and :class:`OffRecord` says so. The robustness report
(:mod:`rankkit.runs.analysis.robustness`) and ``rankkit rejudge`` (:mod:`rankkit.runs.rejudging`) rank this
way; ``docs/robustness.md`` explains both.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from rankkit.data.tasks import Task, task_rng
from rankkit.judgments.judge_protocol import Capabilities
from rankkit.judgments.memo import Origin
from rankkit.judgments.values import (
    CHOICE_KIND,
    GRADE_KIND,
    RANKING_KIND,
    VERDICT_KIND,
    Grade,
    ParseStatus,
    Verdict,
    Winner,
)
from rankkit.strategies.base import Ranking, Strategy
from rankkit.strategies.matches import Comparison, MatchSource, decided, make_match


class OffRecord(Exception):
    """The replayed strategy asked for a judgment the run did not record."""


@dataclass(frozen=True)
class RecordedJudgment:
    """One judgment a strategy used: its kind (``verdict``, ``grade``, ``choice``, ``ranking``),
    the candidate ids as shown (one for a grade, two for a verdict, the group for k-way) and the
    judgment itself."""

    kind: str
    shown: tuple[str, ...]
    judgment: Any

    @property
    def key(self) -> tuple[str, tuple[str, ...]]:
        return self.kind, self.shown


def recorded_judgments(result: Any) -> list[RecordedJudgment]:
    """Every judgment a task result records.

    Returns its comparisons, its k-way judgments and its grades, in that order.

    Parameters
    ----------
    result:
        A :class:`~rankkit.runs.results.TaskResult`.
    """
    record = [RecordedJudgment(VERDICT_KIND, (c.first, c.second), c.verdict) for c in result.comparisons]
    record += [RecordedJudgment(g.kind, tuple(g.shown), g.judgment) for g in result.group_comparisons]
    record += [RecordedJudgment(GRADE_KIND, (cid,), grade) for cid, grade in result.grades]
    return record


def verdict_outcome(judgment: RecordedJudgment) -> float | None:
    """A verdict's outcome for the answer shown first.

    Returns 1 won, 0.5 tie, 0 lost (read as everywhere in rankkit: the higher grade, then the
    verdict); None for a failed verdict or a judgment of another kind.

    Parameters
    ----------
    judgment:
        A recorded judgment.
    """
    if judgment.kind != VERDICT_KIND:
        return None
    comparison = Comparison(judgment.shown[0], judgment.shown[1], judgment.judgment)
    if not decided(comparison):
        return None
    return make_match(comparison.first, comparison.second, [comparison]).outcome


def flipped(judgment: Any) -> Verdict:
    """A verdict with its winner reversed.

    Returns the same two answers in the same order, the grades swapped sides and the winner
    reversed.

    Parameters
    ----------
    judgment:
        The :class:`~rankkit.judgments.values.Verdict`.
    """
    return judgment.swapped()


def removed(kind: str, judgment: Any = None) -> Any:
    """A judgment that gives no answer.

    Returns the judgment with a failed parse status and no value, as an unreadable answer would be.

    Parameters
    ----------
    kind:
        ``verdict``, ``grade``, ``choice`` or ``ranking``.
    judgment:
        The judgment to empty (a verdict may be None: a verdict on a pair nobody answered).
    """
    if kind == VERDICT_KIND:
        base = judgment or Verdict(0.0, 0.0, Winner.TIE)
        return replace(base, winner=Winner.TIE, status=ParseStatus.FAILED)
    if kind == GRADE_KIND:
        return Grade(value=None, status=ParseStatus.FAILED)
    if kind == CHOICE_KIND:
        return replace(judgment, chosen=None, probabilities=None, grades=None, status=ParseStatus.FAILED)
    if kind == RANKING_KIND:
        return replace(judgment, permutation=None, status=ParseStatus.FAILED)
    raise ValueError(f"unknown judgment kind {kind!r}")


class _RecordedJudge:
    """What a :class:`~rankkit.strategies.matches.MatchSource` reads of its memo's judge."""

    def __init__(self, grades: bool):
        self.capabilities = Capabilities(pointwise=grades)


class RecordedMemo:
    """A memo that answers from recorded judgments, changed as asked (see the module docstring).

    Parameters
    ----------
    record:
        The judgments (:func:`recorded_judgments`).
    flips:
        Indices into ``record`` of the judgments answered flipped (verdicts only).
    removals:
        Indices into ``record`` of the judgments answered with no answer.
    """

    def __init__(self, record: Sequence[RecordedJudgment], flips: Collection[int] = (), removals: Collection[int] = ()):
        self.answers: dict[tuple[str, tuple[str, ...]], Any] = {}
        for index, item in enumerate(record):
            judgment = item.judgment
            if index in removals:
                judgment = removed(item.kind, judgment)
            elif index in flips:
                if item.kind != VERDICT_KIND:
                    raise ValueError(f"only verdicts can be flipped, not a {item.kind}")
                judgment = flipped(judgment)
            self.answers[item.key] = judgment
        # A pair every recorded verdict of which was removed gives no answer in either order (a
        # match whose one comparison failed is asked again reversed: that gets no answer either).
        pairs: dict[frozenset[str], bool] = {}
        for index, item in enumerate(record):
            if item.kind == VERDICT_KIND:
                pair = frozenset(item.shown)
                pairs[pair] = pairs.get(pair, True) and index in removals
        self.silent_pairs = {pair for pair, gone in pairs.items() if gone}
        self.judge = _RecordedJudge(grades=any(item.kind == GRADE_KIND for item in record))

    def _answer(self, kind: str, shown: tuple[str, ...]) -> tuple[Any, Origin]:
        if (kind, shown) in self.answers:
            return self.answers[(kind, shown)], Origin.MEMORY
        if kind == VERDICT_KIND and frozenset(shown) in self.silent_pairs:
            return removed(VERDICT_KIND), Origin.MEMORY
        raise OffRecord(f"the run recorded no {kind} of {', '.join(shown)}")

    def verdicts(self, requests: Iterable[tuple[Any, ...]]) -> list[tuple[Any, Origin]]:
        """The recorded verdicts, as :meth:`rankkit.judgments.memo.JudgmentMemo.verdicts` answers.

        Returns each recorded (changed) verdict; :class:`OffRecord` for one never recorded.

        Parameters
        ----------
        requests:
            ``(task, first, second)`` per verdict.
        """
        return [self._answer(VERDICT_KIND, (first.id, second.id)) for _, first, second in requests]

    def grades(self, requests: Iterable[tuple[Any, ...]]) -> list[tuple[Any, Origin]]:
        """The recorded grades, as :meth:`verdicts` answers verdicts.

        Returns each recorded (changed) judgment; :class:`OffRecord` for one never recorded.

        Parameters
        ----------
        requests:
            ``(task, candidate)`` per grade.
        """
        return [self._answer(GRADE_KIND, (candidate.id,)) for _, candidate in requests]

    def choices(self, requests: Iterable[tuple[Any, ...]]) -> list[tuple[Any, Origin]]:
        """The recorded choices, as :meth:`verdicts` answers verdicts.

        Returns each recorded (changed) judgment; :class:`OffRecord` for one never recorded.

        Parameters
        ----------
        requests:
            ``(task, group)`` per k-way choice.
        """
        return [self._answer(CHOICE_KIND, tuple(c.id for c in group)) for _, group in requests]

    def rankings(self, requests: Iterable[tuple[Any, ...]]) -> list[tuple[Any, Origin]]:
        """The recorded rankings, as :meth:`verdicts` answers verdicts.

        Returns each recorded (changed) judgment; :class:`OffRecord` for one never recorded.

        Parameters
        ----------
        requests:
            ``(task, group)`` per k-way ranking.
        """
        return [self._answer(RANKING_KIND, tuple(c.id for c in group)) for _, group in requests]


def replay(
    strategy: Strategy,
    task: Task,
    record: Sequence[RecordedJudgment],
    seed: int,
    flips: Collection[int] = (),
    removals: Collection[int] = (),
) -> Ranking:
    """The strategy's ranking of ``task`` recomputed from ``record`` (changed by ``flips`` and
    ``removals``), with the generator the run gave it (``task_rng(seed, task_id)``).

    Returns the strategy's :class:`~rankkit.strategies.base.Ranking`; :class:`OffRecord` when it
    asks for a judgment outside the record.

    Parameters
    ----------
    strategy:
        The strategy that made the record (rebuilt from the results file).
    task:
        The task.
    record:
        The judgments it used (:func:`recorded_judgments`), or others on the same questions.
    seed:
        The run's seed.
    flips:
        Judgments answered flipped, as in :class:`RecordedMemo`.
    removals:
        Judgments answered with no answer, as in :class:`RecordedMemo`.

    Examples
    --------
    >>> from rankkit.judgments.values import Verdict, Winner
    >>> from rankkit.strategies import make_strategy
    >>> from rankkit.data.tasks import Candidate, Task
    >>> task = Task("t", "?", (Candidate("a", "x"), Candidate("b", "y"), Candidate("c", "z")))
    >>> record = [RecordedJudgment("verdict", (a, b), Verdict(4.0, 2.0, Winner.FIRST))
    ...           for a, b in (("a", "b"), ("a", "c"), ("b", "c"))]
    >>> replay(make_strategy("bt:order=given"), task, record, seed=0).ordered(task.candidate_ids)
    ['a', 'b', 'c']
    >>> replay(make_strategy("bt:order=given"), task, record, seed=0, flips={0, 1}).ordered(task.candidate_ids)[0]
    'b'
    """
    source = MatchSource(task, RecordedMemo(record, flips, removals), strategy=strategy.label)  # type: ignore[arg-type]
    return strategy.rank(task, source, task_rng(seed, task.task_id))


def leader(ranking: Ranking, candidate_ids: Sequence[str]) -> str:
    """The #1 of a ranking.

    Returns its champion when the strategy crowns one, else the first ranked.

    Parameters
    ----------
    ranking:
        A strategy's :class:`~rankkit.strategies.base.Ranking`.
    candidate_ids:
        The task's candidates in data order (ties in the scores keep it).
    """
    return ranking.champion if ranking.champion is not None else ranking.ordered(list(candidate_ids))[0]
