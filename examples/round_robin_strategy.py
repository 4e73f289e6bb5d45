"""``round_robin``: the smallest complete third-party ranking strategy for rankkit.

Every pair of candidates is played once, in the data's order (the first candidate shown first);
a candidate's score is its number of wins, a tie counting half a win for each. That is all a
strategy is: a frozen dataclass subclassing ``Strategy`` whose ``rank(task, source, rng)`` asks the
match source for what it wants judged and returns a ``Ranking``. It needs nothing else: the cache,
sharing judgments with other strategies, counting the cost and the dry run (``--dry-run`` runs
this same ``rank()`` against a stand-in judge) are rankkit's job.

Make it available under its name in one of two ways:

* in code: importing this module registers it (the ``@register("round_robin")`` below), after
  which ``make_strategy("round_robin")`` and ``rankkit.compare(..., strategies=["round_robin"])``
  find it in that process;
* for every user of an installed package, without the import: drop ``@register`` and declare an
  entry point in the package's ``pyproject.toml`` (then ``rankkit compare --strategies round_robin``
  finds it too)::

      [project.entry-points."rankkit.strategies"]
      round_robin = "mypackage.round_robin_strategy:RoundRobin"

A strategy object can also be passed directly, unregistered by any name a user types:

>>> import rankkit
>>> task = {"task_id": "q1", "prompt": "What is the capital of France?", "candidates": [
...     {"id": "a", "text": "Paris.", "human": {"score": 5}},
...     {"id": "b", "text": "Lyon.", "human": {"score": 1}},
...     {"id": "c", "text": "Paris, on the Seine.", "human": {"score": 4}}]}
>>> result = rankkit.compare([task], strategies=[RoundRobin()], judge="sim:preset=gpt4")
>>> run = result.strategies[0]
>>> run.name, run.cost.comparisons
('round_robin', 3)
>>> run.tasks[0].ranking
['a', 'c', 'b']
"""

from dataclasses import dataclass
from itertools import combinations

from rankkit.strategies import Ranking, Strategy, register


@register("round_robin")
@dataclass(frozen=True)
class RoundRobin(Strategy):
    """Every pair once, in the data's order; score = wins (a tie is half a win each)."""

    description = "every pair once, in the data's order; score = wins"

    def rank(self, task, source, rng):
        wins = dict.fromkeys(task.candidate_ids, 0.0)
        for match in source.play_many(list(combinations(task.candidate_ids, 2))):
            wins[match.a] += match.outcome  # 1 when a won, 0 when b won, 0.5 for a tie
            wins[match.b] += 1.0 - match.outcome
        return Ranking(scores=wins)


if __name__ == "__main__":  # python examples/round_robin_strategy.py: compare it with knockout on the sample
    import rankkit
    from rankkit.data.samples import sample_path

    result = rankkit.compare(sample_path("tasks"), strategies=[RoundRobin(), "knockout"], judge="sim:preset=gpt4")
    print(f"{len(result.tasks)} bundled sample tasks, judge sim:preset=gpt4, seed 0")
    for run in result.strategies:
        print(
            f"{run.name:<12} {run.cost.comparisons:>3} comparisons ({run.cost.shared_hits} shared)  "
            f"task_spearman {run.metrics['task_spearman']:.3f}"
        )
