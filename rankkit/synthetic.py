"""Synthetic tasks with planted system strengths, for tests and simulations.

:func:`planted_tasks` makes prompts whose answers' human scores follow known system strengths,
so a leaderboard or strategy can be checked against the truth it should recover.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import replace

from rankkit.ratings import ELO_BASE, ELO_SCALE
from rankkit.tasks import Candidate, Task


def planted_tasks(
    strengths: Mapping[str, float],
    prompts: int,
    noise: float = ELO_SCALE / math.log(ELO_BASE),
    seed: int = 0,
    prefix: str = "p",
) -> list[Task]:
    """Tasks whose answers' human scores come from planted system strengths.

    On each prompt, system s's answer scores ``strengths[s] + noise · G`` with G a standard
    Gumbel draw. The difference of two Gumbels is logistic, so with the default ``noise`` =
    400/ln 10 the probability that s's answer is the human-better one is exactly the Bradley–Terry
    / Elo ``1 / (1 + 10^((R_t − R_s)/400))`` when strengths are Elo ratings (Arena-lite's stochastic
    model, Arena-lite §4.2). ``noise=0`` makes every prompt agree with the strengths.

    Parameters
    ----------
    strengths : Mapping[str, float]
        System name to planted strength (Elo points).
    prompts : int
        The number of tasks.
    noise : float
        The Gumbel scale.
    seed : int
        Seeds the draws.
    prefix : str
        The task ids' prefix.

    Returns
    -------
    list[Task]
        The tasks, one candidate per system.
    """
    rng = random.Random(seed)
    names = list(strengths)
    tasks = []
    for p in range(prompts):
        candidates = []
        for index, name in enumerate(names):
            gumbel = -math.log(-math.log(rng.random() or 1e-12)) if noise else 0.0
            candidates.append(
                Candidate(
                    id=f"c{index:02d}",
                    text=f"answer of {name} to prompt {p}",
                    system=name,
                    human={"quality": strengths[name] + noise * gumbel},
                )
            )
        tasks.append(
            Task(task_id=f"{prefix}{p:04d}", prompt=f"prompt {p}", candidates=tuple(candidates), criterion="quality")
        )
    values = [c.human["quality"] for t in tasks for c in t.candidates]
    scale = (min(values), max(values)) if min(values) < max(values) else (0.0, 1.0)
    return [replace(t, scale=scale) for t in tasks]
