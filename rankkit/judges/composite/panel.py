"""``panel``: several judges vote on every comparison, in both orders, with an agreement threshold.

More in ``docs/judges-replay-panels.md``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from rankkit.data.specs import Spec, SpecError
from rankkit.data.tasks import Candidate, Task
from rankkit.judges.backends import Argument, Backend, Option, Settings, spec_name
from rankkit.judges.base import Judge, add_usage, answer_directly
from rankkit.judgments.judge_protocol import Capabilities, Found, Needed
from rankkit.judgments.values import VERDICT_KIND, ComparisonRequest, ParseStatus, Verdict, Winner

#: Options of the panel itself (everything else in the spec is the member list).
PANEL_OPTIONS: tuple[Option, ...] = (Option("threshold", float, 0.5, "share of the members a verdict needs"),)

#: A vote, as the outcome for the request's *first* candidate: 1.0 won, 0.0 lost, 0.5 tie, None abstained.
Vote = float | None


@dataclass(frozen=True)
class VoteCount:
    """The votes on one comparison: for its first candidate, for its second, ties, abstentions."""

    first: int = 0
    second: int = 0
    tie: int = 0
    abstained: int = 0

    @property
    def cast(self) -> int:
        """Votes that count towards the share (abstentions do not)."""
        return self.first + self.second + self.tie

    @property
    def share(self) -> float:
        """The majority side's share of the votes cast (NaN when none was cast)."""
        return max(self.first, self.second) / self.cast if self.cast else math.nan

    @classmethod
    def of(cls, votes: Sequence[Vote]) -> VoteCount:
        """Count votes: for the first candidate (1.0), the second (0.0), a tie (0.5) or none (None)."""
        return cls(
            first=sum(v == 1.0 for v in votes),
            second=sum(v == 0.0 for v in votes),
            tie=sum(v == 0.5 for v in votes),
            abstained=sum(v is None for v in votes),
        )


def decide(count: VoteCount, threshold: float) -> Winner:
    """``FIRST``/``SECOND`` when the majority's share of votes cast reaches ``threshold``, else ``TIE``.

    ``threshold`` is in (0, 1]: 1.0 demands unanimity, 0.5 a simple majority; an even split is a draw.
    """
    if count.first == count.second:
        return Winner.TIE
    # A small tolerance so that e.g. 3/4 reaches threshold=0.75 despite floating point.
    if count.share + 1e-12 < threshold:
        return Winner.TIE
    return Winner.FIRST if count.first > count.second else Winner.SECOND


def vote_of(judgment: Verdict, request_first_shown_first: bool) -> Vote:
    """A member verdict as a vote for the request's first candidate: 1.0, 0.0, 0.5 (tie) or None (failed)."""
    if judgment.status is ParseStatus.FAILED:
        return None
    if judgment.winner is Winner.TIE:
        return 0.5
    first_slot_won = judgment.winner is Winner.FIRST
    return 1.0 if first_slot_won == request_first_shown_first else 0.0


def draws_by_threshold(counts: Sequence[VoteCount], thresholds: Sequence[float]) -> dict[float, int]:
    """How many comparisons would be draws at each threshold (no new judgments needed)."""
    return {t: sum(decide(c, t) is Winner.TIE for c in counts) for t in thresholds}


def krippendorff_alpha(votes: Sequence[Sequence[Vote]]) -> float:
    """Krippendorff's alpha (nominal) of the members' votes; NaN when undefined.

    ``votes`` has one row per member and one column per unit (a comparison in one order); None is
    missing. Undefined when no unit has two votes, or only one category was used.
    """
    import krippendorff  # small, numpy-only; imported here to keep `import rankkit` light
    import numpy as np

    data = np.array([[np.nan if v is None else v for v in row] for row in votes], dtype=float)
    if data.size == 0 or len(np.unique(data[~np.isnan(data)])) < 2:
        return math.nan
    if not np.any(np.sum(~np.isnan(data), axis=0) >= 2):
        return math.nan
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"))


# ---------------------------------------------------------------------------------------------
# The judge


MemberPair = tuple[Verdict, Verdict]  # (as requested, reversed order)


class PanelJudge(Judge):
    """Several judges voting in both orders, aggregated with an agreement threshold.

    members: at least two, no duplicates.
    threshold: the majority share needed for a win, in (0, 1] (see :func:`decide`).
    """

    backend = "panel"
    version = "1"

    def __init__(self, members: Sequence[Judge], threshold: float = 0.5):
        if len(members) < 2:
            raise SpecError("panel: give at least two member judges, joined by '+'")
        if not 0.0 < threshold <= 1.0:
            raise SpecError(f"panel: threshold must be in (0, 1], got {threshold}")
        fingerprints = [m.fingerprint for m in members]
        if len(set(fingerprints)) != len(fingerprints):
            raise SpecError("panel: the same judge is listed twice; its votes would count double")
        for member in members:
            if not member.capabilities.pairwise:
                raise SpecError(f"panel: member {member.description} cannot compare pairs")
        self.members = list(members)
        self.threshold = float(threshold)

    def fingerprint_fields(self) -> dict[str, Any]:
        """The members' fingerprints and the threshold."""
        return {"members": sorted(m.fingerprint for m in self.members), "threshold": self.threshold}

    @property
    def simulated(self) -> bool:  # type: ignore[override]  # derived from the members, not stored
        return any(m.simulated for m in self.members)

    @property
    def description(self) -> str:
        return f"panel({' + '.join(m.description for m in self.members)}; threshold={self.threshold:g})"

    def request_key(self, task: Task, *candidates: Candidate) -> list[Any]:
        """Each member's request key."""
        return [member.request_key(task, *candidates) for member in self.members]

    @property
    def capabilities(self) -> Capabilities:  # type: ignore[override]
        """Comparisons only; members are asked one after another, each with the whole batch."""
        members = [member.capabilities for member in self.members]
        return Capabilities(
            pointwise=False,
            capacity=max(member.capacity for member in members),
            fills_batches=any(member.fills_batches for member in members),
        )

    def check_tasks(self, tasks: Sequence[Task]) -> None:
        """Let every member check the tasks."""
        for member in self.members:
            member.check_tasks(tasks)

    # -- member votes -------------------------------------------------------------------------
    def needs(self, kind: str, requests: Sequence[Any]) -> list[Needed]:
        """Every member's verdicts on each request in both orders (as requested, then reversed),
        cached under the member's own fingerprint."""
        both_orders = [
            order for task, first, second in requests for order in ((task, first, second), (task, second, first))
        ]
        return [Needed(member, VERDICT_KIND, both_orders) for member in self.members]

    @staticmethod
    def member_judgments(
        requests: Sequence[ComparisonRequest], found: Found
    ) -> tuple[list[list[MemberPair]], list[list[Verdict]]]:
        """``(pairs, fresh)`` from what :meth:`needs` named, found: ``pairs[i][m]`` is member m's
        (as requested, reversed) pair for request i; ``fresh[i]`` the new (paid) judgments request i needed."""
        pairs: list[list[MemberPair]] = [[] for _ in requests]
        fresh: list[list[Verdict]] = [[] for _ in requests]
        for judged in found:
            for index in range(len(requests)):
                as_requested, reversed_order = judged[2 * index], judged[2 * index + 1]
                pairs[index].append((as_requested[0], reversed_order[0]))
                fresh[index].extend(judgment for judgment, charged in (as_requested, reversed_order) if charged)
        return pairs, fresh

    def votes(self, member_pairs: Sequence[MemberPair]) -> list[Vote]:
        """The 2·members votes on one request for its first candidate (member by member, order by order)."""
        out: list[Vote] = []
        for as_requested, reversed_order in member_pairs:
            out.append(vote_of(as_requested, request_first_shown_first=True))
            out.append(vote_of(reversed_order, request_first_shown_first=False))
        return out

    # -- decisions ----------------------------------------------------------------------------
    def _decision(self, task: Task, member_pairs: Sequence[MemberPair], fresh: Sequence[Verdict]) -> Verdict:
        votes = self.votes(member_pairs)
        count = VoteCount.of(votes)
        winner = decide(count, self.threshold)
        low, high = task.scale
        middle = (low + high) / 2
        first_grade, second_grade = {
            Winner.FIRST: (high, low),
            Winner.SECOND: (low, high),
            Winner.TIE: (middle, middle),
        }[winner]
        usage: dict[str, int] = {}
        for judgment in fresh:
            add_usage(usage, judgment.usage)
        share = count.share
        raw = (
            f"votes first={count.first} second={count.second} tie={count.tie} abstained={count.abstained}; "
            f"majority share {share:.3f} vs threshold {self.threshold:g} -> {winner.value}"
        )
        members = [
            {"member": member.description, "votes": [votes[2 * m], votes[2 * m + 1]]}
            for m, member in enumerate(self.members)
        ]
        extras = {
            "votes": {"first": count.first, "second": count.second, "tie": count.tie, "abstained": count.abstained},
            "share": None if math.isnan(share) else share,
            "threshold": self.threshold,
            "members": members,
            "member_calls": len(fresh),
        }
        status = ParseStatus.FAILED if count.cast == 0 else ParseStatus.OK
        return Verdict(
            first_grade=first_grade,
            second_grade=second_grade,
            winner=winner,
            raw=raw,
            status=status,
            usage=usage,
            extras=extras,
        )

    def compare(self, task: Task, first: Candidate, second: Candidate) -> Verdict:
        """The panel's verdict on ``first`` and ``second`` as shown."""
        return next(self.compare_many([(task, first, second)]))[1]

    def compare_many(self, requests: Sequence[ComparisonRequest]) -> Iterator[tuple[int, Verdict]]:
        """Yield ``(index, verdict)`` for each request, asking the members directly (outside a run)."""
        return answer_directly(self, VERDICT_KIND, requests)

    def answer(self, kind: str, requests: Sequence[Any], found: Found) -> Iterator[tuple[int, Verdict]]:
        """Yield ``(index, verdict)`` for each request from its members' votes (what :meth:`needs` named, found)."""
        pairs, fresh = self.member_judgments(requests, found)
        for index, (task, _, _) in enumerate(requests):
            yield index, self._decision(task, pairs[index], fresh[index])

    def show_progress(self, note: Callable[[str], None]) -> None:
        """Pass the progress bar's ``note`` to every member, each line named by the member."""
        for member in self.members:
            member.show_progress(lambda text, name=member.description: note(f"{name}: {text}"))

    def close(self) -> None:
        for member in self.members:
            member.close()


# ---------------------------------------------------------------------------------------------
# Spec parsing


def read_spec(text: str) -> Spec:
    """Split ``panel:M1+M2+...,threshold=T`` into members (``+``-joined, own options ``;``-separated) and options."""
    _, _, rest = text.strip().partition(":")
    member_pieces: list[str] = []
    options: dict[str, str] = {}
    for piece in (p.strip() for p in rest.split(",")):
        if not piece:
            continue
        key, eq, value = piece.partition("=")
        if eq and key.strip() in {o.name for o in PANEL_OPTIONS}:
            options[key.strip()] = value.strip()
        else:
            member_pieces.append(piece)
    if len(member_pieces) != 1:
        raise SpecError(
            f"panel: cannot read {text!r}: write the members as one '+'-joined list and separate a "
            f"member's own options with ';' (e.g. panel:sim:preset=gpt4;seed=1+sim:preset=falcon,threshold=0.5); "
            f"the panel's own options are {', '.join(o.name for o in PANEL_OPTIONS)}"
        )
    return Spec(name="panel", positional=(member_pieces[0],), options=options, text=text)


def member_specs(settings: Settings) -> list[str]:
    """The members' spec texts (``;`` -> ``,``); a panel cannot be a member of a panel."""
    members = [m.strip().replace(";", ",") for m in settings.argument.split("+") if m.strip()]
    if any(spec_name(member) == "panel" for member in members):
        raise SpecError("panel: a panel cannot be a member of a panel")
    return members


def build(settings: Settings) -> PanelJudge:
    """``panel:MEMBER+MEMBER+...[,threshold=0.5]`` (see ``docs/judges-replay-panels.md``)."""
    from rankkit.judges import make_judge

    return PanelJudge([make_judge(member) for member in member_specs(settings)], threshold=settings["threshold"])


def stand_in(settings: Settings) -> PanelJudge:
    """The dry run's panel: each member's stand-in judge."""
    from rankkit.judges import make_judge

    return PanelJudge(
        [make_judge(member, stand_in=True) for member in member_specs(settings)], threshold=settings["threshold"]
    )


#: ``panel:MEMBER+MEMBER+...[,threshold=T]``: several judges and an agreement threshold.
BACKEND = Backend(
    "panel",
    "several judges; a verdict needs the threshold's share of their votes",
    PANEL_OPTIONS,
    build,
    argument=Argument("members", "panel:sim:preset=gpt4;seed=1+sim:preset=falcon,threshold=0.5"),
    stand_in=stand_in,
    read=read_spec,
)
