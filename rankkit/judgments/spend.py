"""What judgments spend, in the four units a budget can be given in: judgments, answers shown, tokens, USD.

A budget is written ``budget=AMOUNT[UNIT]`` (``budget=3``, ``budget=6answers``, ``budget=2000tokens``,
``budget=0.01usd``), always per candidate: a task of N candidates may spend ``AMOUNT · N`` of the unit.
A judgment's tokens are the judge's reported usage (prompt plus completion) when it reports one, else
the dry run's estimate of its prompt; its USD the reported cost, else those tokens at the judge's price.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from rankkit.data.conversations import plain_text
from rankkit.data.specs import SpecError
from rankkit.data.tasks import Candidate, Task

#: The units of a budget; a bare number is in judgments.
UNITS = ("judgments", "answers", "tokens", "usd")
#: Characters per token of the estimate (OpenAI's rule of thumb for English text).
CHARS_PER_TOKEN = 4

#: A number followed by a word: the word must be a unit (a bare number is left to the usual checks).
_BUDGET = re.compile(r"^\s*([+-]?[0-9.eE+-]*[0-9.])\s*([a-z]+)\s*$")


def estimate_tokens(text: str) -> int:
    """Estimated tokens of ``text``: its characters over :data:`CHARS_PER_TOKEN`, rounded up."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def split_budget(text: str, where: str) -> tuple[str, str]:
    """``budget=`` text as (number, unit): ``"6answers"`` -> ``("6", "answers")``, ``"3"`` -> ``("3", "judgments")``.

    Raises
    ------
    SpecError
        Naming ``where`` (the strategy and option), for a number followed by a word not in :data:`UNITS`.
    """
    match = _BUDGET.match(text.lower())
    if match is None:
        return text, "judgments"
    if match.group(2) not in UNITS:
        raise SpecError(
            f"{where}: expected a number of judgments, answers, tokens or usd per candidate "
            f"(e.g. 3, 6answers, 2000tokens, 0.01usd), got {text!r}"
        )
    return match.group(1), match.group(2)


def check_unit(where: str, unit: str) -> None:
    """Refuse a budget unit not in :data:`UNITS`, naming ``where``."""
    if unit not in UNITS:
        raise SpecError(f"{where}: budget_unit must be one of {', '.join(UNITS)}, got {unit!r}")


@dataclass
class Spend:
    """What a task's judgments spent: distinct ``judgments``, ``answers`` shown (2 a comparison, k a
    k-way judgment, 1 a grade), ``tokens`` (prompt plus completion) and ``usd``."""

    judgments: int = 0
    answers: int = 0
    tokens: int = 0
    usd: float = 0.0

    def add(self, other: Spend) -> None:
        """Add ``other``'s spends into this one."""
        self.judgments += other.judgments
        self.answers += other.answers
        self.tokens += other.tokens
        self.usd += other.usd

    def amount(self, unit: str) -> float:
        """The spend in ``unit`` (one of :data:`UNITS`)."""
        return float(getattr(self, unit))


#: Estimated prompt tokens of a judgment showing some of a task's candidates.
PromptEstimate = Callable[[Task, Sequence[Candidate]], float]


def text_estimate(task: Task, shown: Sequence[Candidate]) -> float:
    """Estimated tokens of the question and the answers shown (no template): a judge without prompts."""
    return estimate_tokens(plain_text(task.prompt) + "".join(plain_text(c.text) for c in shown))


@dataclass(frozen=True)
class Meter:
    """Prices a judgment in the four units.

    Parameters
    ----------
    price_in, price_out
        USD per million prompt and completion tokens; None when the judge has no price.
    estimate
        The prompt tokens of a judgment that reports no usage (the run passes the dry run's estimate).
    """

    price_in: float | None = None
    price_out: float | None = None
    estimate: PromptEstimate = text_estimate

    @property
    def priced(self) -> bool:
        """Whether the judge has a price (a ``usd`` budget needs one)."""
        return self.price_in is not None and self.price_out is not None

    def judgment(self, task: Task, shown: Sequence[Candidate], usage: Mapping[str, int]) -> Spend:
        """The spend of one judgment showing ``shown``, from its ``usage`` where it reports one."""
        if "prompt_tokens" in usage or "completion_tokens" in usage:
            prompt, completion = int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))
        else:
            prompt, completion = math.ceil(self.estimate(task, shown)), 0
        if "usd_nano" in usage:
            usd = int(usage["usd_nano"]) / 1e9
        else:
            usd = self.usd(prompt, completion)
        return Spend(judgments=1, answers=len(shown), tokens=prompt + completion, usd=usd)

    def usd(self, prompt_tokens: float, completion_tokens: float) -> float:
        """What the tokens cost at the judge's price (0 without one)."""
        if not self.priced:
            return 0.0
        return (prompt_tokens * self.price_in + completion_tokens * self.price_out) / 1e6  # type: ignore[operator]
