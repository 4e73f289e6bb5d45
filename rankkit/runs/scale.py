"""The size check before a run: a run that would ask for more judgments than a limit does not start.

More in ``docs/dry-run.md``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rankkit.errors import RankkitError

if TYPE_CHECKING:  # the CLI reads DEFAULT_MAX_JUDGMENTS at start-up: nothing heavier loads with it
    from rankkit.data.tasks import Task
    from rankkit.strategies.base import Strategy

#: The most judgments a run may plan without the caller's consent (``max_judgments=`` in the
#: library, ``--yes`` or ``--max-judgments`` on the command line).
DEFAULT_MAX_JUDGMENTS = 50_000


@dataclass(frozen=True)
class ScalePlan:
    """What a run can ask for at most (see ``docs/dry-run.md``).

    Attributes
    ----------
    judgments
        Comparisons and grades, summed over tasks.
    prompt_tokens
        Their estimated prompt tokens; None for judges that read no prompts.
    undeclared
        The strategies counted by the generic bound (they declare no worst case).
    """

    judgments: int
    prompt_tokens: float | None
    undeclared: tuple[str, ...]

    def describe(self) -> str:
        """The plan in words, e.g. ``up to 999,000 judgments (about 120,000,000 prompt tokens)``.

        Returns the description.
        """
        tokens = f" (about {self.prompt_tokens:,.0f} prompt tokens)" if self.prompt_tokens is not None else ""
        generic = (
            f"; {', '.join(self.undeclared)} declare{'s' if len(self.undeclared) == 1 else ''} no worst case, "
            f"counted as every judgment of a task"
            if self.undeclared
            else ""
        )
        return f"up to {self.judgments:,} judgments{tokens}{generic}"


class TooManyJudgments(RankkitError, ValueError):
    """A run plans more judgments than its limit allows (exit code 2): nothing was judged.

    Parameters
    ----------
    plan
        The plan.
    limit
        The limit it passed.
    """

    def __init__(self, plan: ScalePlan, limit: int):
        self.plan = plan
        self.limit = limit
        super().__init__(
            f"this run plans {plan.describe()}, more than max_judgments={limit:,} allows; pass "
            f"max_judgments={plan.judgments} (or more) to run it, or use fewer candidates or a "
            f"strategy that asks for fewer judgments"
        )


def plan_scale(
    tasks: Sequence[Task], strategies: Sequence[Strategy], judge: Any = None, tokens: bool = True
) -> ScalePlan:
    """Count the judgments a run can ask for at most (the rules in ``docs/dry-run.md``).

    Returns the :class:`ScalePlan`.

    Parameters
    ----------
    tasks, strategies
        The run's.
    judge
        The run's judge, for its prompts' sizes (None, or a judge without prompts: no tokens).
    tokens
        Estimate prompt tokens (renders about one prompt per candidate and kind per task).
    """
    sizes = None
    if tokens and judge is not None:  # only a refusal estimates tokens: the dry run's machinery loads then
        from rankkit.runs.plan.tokens import PromptSizes

        sizes = PromptSizes(judge) if PromptSizes.applies(judge) else None
    from rankkit.strategies.base import most_judgments

    judgments, prompt_tokens, undeclared = 0, 0.0, set()
    for task in tasks:
        n = len(task.candidates)
        everything = n * (n - 1) + n
        counts, unbounded = most_judgments(n, strategies)
        undeclared |= unbounded
        asked = sum(count for _, count in counts)
        task_judgments = min(asked, everything)
        judgments += task_judgments
        if sizes is not None and asked:
            # Each strategy's judgments at the task's mean prompt size of their kind, scaled down
            # as the count was (judgments several strategies ask for are paid once).
            share = task_judgments / asked
            prompt_tokens += share * sum(
                count * sizes.mean(task, "point" if s.kind == "pointwise" else "pair") for s, count in counts if count
            )
    return ScalePlan(judgments, prompt_tokens if sizes is not None else None, tuple(sorted(undeclared)))


def check_scale(
    tasks: Sequence[Task], strategies: Sequence[Strategy], judge: Any = None, max_judgments: int | float | None = None
) -> ScalePlan:
    """Refuse a run that plans more judgments than ``max_judgments`` (before anything is judged).

    Returns the :class:`ScalePlan` (without prompt tokens when it is within the limit).

    Parameters
    ----------
    tasks, strategies, judge
        The run's.
    max_judgments
        The limit; None: :data:`DEFAULT_MAX_JUDGMENTS`; ``math.inf``: no limit.

    Raises
    ------
    TooManyJudgments
        The plan passes the limit.
    SpecError
        The limit is not a non-negative number.
    """
    from rankkit.data.specs import SpecError

    limit = DEFAULT_MAX_JUDGMENTS if max_judgments is None else max_judgments
    if isinstance(limit, bool) or not isinstance(limit, (int, float)) or math.isnan(limit) or limit < 0:
        raise SpecError(f"max_judgments must be a non-negative number (math.inf: no limit), got {max_judgments!r}")
    plan = plan_scale(tasks, strategies, judge, tokens=False)
    if plan.judgments <= limit:
        return plan
    plan = plan_scale(tasks, strategies, judge, tokens=True)  # the estimate goes with the refusal
    raise TooManyJudgments(plan, int(limit))
