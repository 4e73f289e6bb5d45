"""The hand-built results (tests/analysis/hand.py) as a RunResult, fresh for every test."""

from __future__ import annotations

import pytest

from rankkit.results import RunResult
from tests.analysis.hand import hand_results


@pytest.fixture
def results() -> RunResult:
    return RunResult.from_dict(hand_results())
