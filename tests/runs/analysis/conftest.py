"""The hand-built results (tests/runs/analysis/hand.py) as a RunResult, fresh for every test."""

from __future__ import annotations

import pytest

from rankkit.runs.results import RunResult
from tests.runs.analysis.hand import hand_results


@pytest.fixture
def results() -> RunResult:
    return RunResult.from_dict(hand_results())
