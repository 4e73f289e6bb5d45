"""``round_robin``: the smallest complete third-party strategy against the rankkit 0.1 API.

Every pair of candidates is judged once, in the data's order (the first candidate shown first);
a candidate's score is its number of wins (a tie is half a win each). What 0.1 asks of a strategy:
a frozen dataclass subclassing ``Strategy``, registered with ``@register``, whose ``rank(task,
source, rng)`` returns a ``Ranking``, and whose ``plan(task, rng)`` returns the ``Plan`` of exactly
what ``rank`` asks (``--dry-run`` and the progress bar read it).

    import min_strategy  # registers "round_robin"; then make_strategy("round_robin")
"""

from dataclasses import dataclass
from itertools import combinations

from rankkit.strategies import Plan, Ranking, Strategy, register


@register("round_robin")
@dataclass(frozen=True)
class RoundRobin(Strategy):
    description = "every pair once, in the data's order; score = wins"

    def rank(self, task, source, rng):
        wins = dict.fromkeys(task.candidate_ids, 0.0)
        for duel in source.duel_many(list(combinations(task.candidate_ids, 2))):
            wins[duel.a] += duel.outcome
            wins[duel.b] += 1.0 - duel.outcome
        return Ranking(scores=wins)

    def plan(self, task, rng):
        pairs = tuple(combinations(task.candidate_ids, 2))
        return Plan(comparisons=len(pairs), pairs=pairs)
