"""Shared fixtures: the bundled sample, the shared datasets (skipped when absent), a fresh cache."""

from __future__ import annotations

import os
from pathlib import Path

# Each pytest-xdist worker shares the cores with the others: OpenBLAS's own threads (read when
# numpy loads it, below) would spin against the other workers' and more than double the CPU time
# of the linear-algebra tests. Model runtimes (torch, vLLM, llama.cpp) keep their settings.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import pytest

from rankkit.data.tasks import SAMPLE_DATA, load_tasks

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"


def shared_dataset(name: str) -> Path:
    """Path of ``shared/data/<name>/tasks.jsonl``; skips the test when it is not there."""
    path = SHARED_DATA / name / "tasks.jsonl"
    if not path.exists():
        pytest.skip(f"shared dataset {name!r} not available at {path}")
    return path


@pytest.fixture
def sample_tasks():
    return load_tasks(SAMPLE_DATA)


@pytest.fixture
def cache_path(tmp_path: Path) -> Path:
    return tmp_path / "cache.sqlite"
