"""The synthetic data files bundled with rankkit, by name, so examples run from a fresh install.

``rankkit/data/*/README.md`` says how each was made; ``../shared/data`` in a checkout is for
benchmarks and tests only.
"""

from __future__ import annotations

from pathlib import Path

DATA_DIR = Path(__file__).parent

#: name -> (path under rankkit/data, what it holds)
SAMPLES = {
    "tasks": ("sample/tasks.jsonl", "6 exam questions, 4-5 graded answers each (the default --data)"),
    "judgments": (
        "sample/judgments.jsonl",
        "every ordered pair of `tasks` judged once by sim:preset=gpt4, for --judge replay:FILE",
    ),
    "leaderboard": (
        "leaderboard/tasks.jsonl",
        "6 systems answering the same 12 word problems, graded, for rankkit leaderboard",
    ),
    "votes": (
        "leaderboard/votes.jsonl",
        "48 human pair votes on `leaderboard` (task_id, a, b, winner), for rankkit leaderboard --human",
    ),
    "conversations": (
        "sample/conversations.jsonl",
        "3 two-turn tasks (message lists), 3 multi-turn answers each, with checklists",
    ),
    "questions": (
        "sample/questions.jsonl",
        "12 MT-Bench-style questions (6 with a second turn), for rankkit generate --questions",
    ),
}


def sample_path(name: str) -> Path:
    """The bundled sample ``name`` (a key of :data:`SAMPLES`); a ``KeyError`` listing them otherwise."""
    if name not in SAMPLES:
        raise KeyError(f"no bundled sample {name!r}; choose one of {', '.join(SAMPLES)}")
    return DATA_DIR / SAMPLES[name][0]
