"""rankkit: rank candidate answers with an LLM as the judge, and compare ranking strategies fairly.

The library in two calls (heavy backends such as torch load only when a judge needs them)::

    import rankkit
    ranking = rankkit.rank(task, strategy="knockout", judge="sim:preset=gpt4")   # one task
    result = rankkit.compare("tasks.jsonl", strategies=["knockout", "bt"])       # many, side by side

See :mod:`rankkit.api`. The concepts behind them: a :class:`Task` and its candidates, a strategy
(:mod:`rankkit.strategies`), a judge (:mod:`rankkit.judges`), the :class:`JudgmentCache`.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.3.0"

#: Public names, each loaded from its module on first use, so `import rankkit` stays light.
_EXPORTS = {
    "rank": "rankkit.api",
    "compare": "rankkit.api",
    "rejudge": "rankkit.api",
    "merge": "rankkit.api",
    "Task": "rankkit.data.tasks",
    "Candidate": "rankkit.data.tasks",
    "load_tasks": "rankkit.data.tasks",
    "RankkitError": "rankkit.errors",
    "TaskFormatError": "rankkit.errors",
    "Judge": "rankkit.judges.base",
    "make_judge": "rankkit.judges",
    "Strategy": "rankkit.strategies.base",
    "Ranking": "rankkit.strategies.base",
    "make_strategy": "rankkit.strategies.base",
    "register": "rankkit.strategies.base",
    "JudgmentCache": "rankkit.judgments.cache",
    "RunResult": "rankkit.runs.results",
    "run": "rankkit.runs.runner",
}

__all__ = [*_EXPORTS, "__version__"]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'rankkit' has no attribute {name!r}")
