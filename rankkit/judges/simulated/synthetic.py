"""Synthetic tasks with planted system strengths, so a leaderboard or strategy can be checked against the truth."""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import replace

from rankkit.data.tasks import Candidate, Task
from rankkit.stats.ratings import ELO_BASE, ELO_SCALE


def planted_tasks(
    strengths: Mapping[str, float],
    prompts: int,
    noise: float = ELO_SCALE / math.log(ELO_BASE),
    seed: int = 0,
    prefix: str = "p",
) -> list[Task]:
    """``prompts`` tasks, one candidate per system, whose human scores come from planted strengths (Elo points).

    On each prompt system s's answer scores ``strengths[s] + noise · G``, G a standard Gumbel draw.
    A difference of two Gumbels is logistic, so with the default ``noise`` = 400/ln 10 P(s's answer is
    better) is exactly Elo's ``1 / (1 + 10^((R_t − R_s)/400))`` (Arena-lite §4.2); ``noise=0`` makes
    every prompt agree with the strengths. Task ids are ``prefix`` + a number.
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
