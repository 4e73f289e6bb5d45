"""Shared fixtures: the bundled sample, the shared datasets (skipped when absent), a fresh cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from rankkit.tasks import SAMPLE_DATA, load_tasks

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
