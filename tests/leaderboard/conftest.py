"""Planted system-level tasks shared by the leaderboard tests: 8 systems with known strengths."""

from __future__ import annotations

import pytest

from rankkit.judges.simulated.synthetic import planted_tasks

PERFECT = "sim:model=fixed,accuracy=1,position_bias=0,noise=0"
STRENGTHS = {f"s{i}": 1000.0 + 100 * i for i in range(8)}
HUMAN_ORDER = sorted(STRENGTHS, key=lambda s: -STRENGTHS[s])


@pytest.fixture(scope="module")
def system_level_tasks():
    """8 systems x 30 prompts; every prompt agrees with the planted strengths."""
    return planted_tasks(STRENGTHS, 30, noise=0.0, seed=1)


@pytest.fixture(scope="module")
def noisy_tasks():
    """8 systems x 100 prompts; per prompt the better answer follows the BT model of the strengths."""
    return planted_tasks(STRENGTHS, 100, seed=3)
