"""What the shard and merge tests share: the results JSON compared without its timing keys."""

from __future__ import annotations

import math
from typing import Any

#: The keys whose values are timings: they differ between a sharded and a single run.
TIMING_KEYS = frozenset({"wall_seconds", "warm_up_seconds", "seconds"})
#: Floats are compared with this relative and absolute tolerance (they are in fact bit-identical).
TOLERANCE = 1e-9


def assert_same_results(merged: Any, single: Any, path: str = "") -> None:
    """Assert two results payloads are equal, timing keys aside, floats within :data:`TOLERANCE`."""
    if isinstance(single, dict):
        assert isinstance(merged, dict), path
        keys = set(single) - TIMING_KEYS
        assert set(merged) - TIMING_KEYS == keys, f"{path}: keys {sorted(set(merged) ^ set(single))}"
        for key in keys:
            assert_same_results(merged[key], single[key], f"{path}.{key}")
    elif isinstance(single, list):
        assert isinstance(merged, list) and len(merged) == len(single), path
        for index, (a, b) in enumerate(zip(merged, single)):
            assert_same_results(a, b, f"{path}[{index}]")
    elif isinstance(single, float) and not isinstance(single, bool):
        assert isinstance(merged, (int, float)), path
        assert (math.isnan(single) and math.isnan(merged)) or math.isclose(
            merged, single, rel_tol=TOLERANCE, abs_tol=TOLERANCE
        ), f"{path}: {merged} != {single}"
    else:
        assert merged == single, f"{path}: {merged!r} != {single!r}"
