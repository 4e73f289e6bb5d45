"""Writes the bundled samples that are generated rather than hand-written (see ``README.md`` beside it).

* ``leaderboard/tasks.jsonl`` — six made-up systems answering the same twelve arithmetic word
  problems. Each system has an accuracy and a style (it shows its working or not); which answers
  are right is drawn from a seeded generator, and the grade follows from correctness and style:
  4 points for a right answer with working, 3 without, 1 for a wrong answer with working, 0
  without. So the systems have a known order, and an LLM judge can tell right from wrong.
* ``leaderboard/votes.jsonl`` — 48 human pair votes on it (4 seeded random pairs per problem, the
  answer with more points winning), for ``rankkit leaderboard --human``.
* ``sample/judgments.jsonl`` — every ordered pair of every task of ``sample/tasks.jsonl`` judged
  once by the simulated judge ``sim:preset=gpt4`` (no LLM involved), for ``--judge replay:``.

Run from the repository root to regenerate them (the output is the same on every run)::

    python scripts/make_samples.py
"""

from __future__ import annotations

import json
import random
from pathlib import Path

HERE = Path(__file__).resolve().parents[1] / "rankkit" / "data"

#: (prompt, right answer, working, wrong answer, working that leads to it)
PROBLEMS = [
    (
        "A train travels 240 km in 3 hours. What is its average speed in km/h?",
        "80",
        "Average speed is distance over time: 240 / 3 = 80.",
        "720",
        "Speed is distance times time: 240 x 3 = 720.",
    ),
    (
        "Pencils cost 35 cents each. How much do 12 pencils cost, in cents?",
        "420",
        "12 x 35 = 12 x 30 + 12 x 5 = 360 + 60 = 420.",
        "410",
        "12 x 35 = 360 + 50 = 410.",
    ),
    (
        "What is 15% of 260?",
        "39",
        "10% of 260 is 26 and 5% is 13, so 15% is 26 + 13 = 39.",
        "36",
        "10% of 260 is 26 and 5% is 10, so 15% is 36.",
    ),
    (
        "A rectangle is 7 cm wide and 12 cm long. What is its area in square centimetres?",
        "84",
        "Area is width times length: 7 x 12 = 84.",
        "38",
        "Area is twice width plus twice length: 14 + 24 = 38.",
    ),
    (
        "Anna has 50 apples and gives 6 to each of her 7 friends. How many apples does she have left?",
        "8",
        "She gives away 6 x 7 = 42 apples, and 50 - 42 = 8.",
        "37",
        "She gives away 6 + 7 = 13 apples, and 50 - 13 = 37.",
    ),
    (
        "What is the sum of the whole numbers from 1 to 20?",
        "210",
        "The sum is 20 x 21 / 2 = 210.",
        "200",
        "Ten pairs that each add up to 20 make 200.",
    ),
    (
        "A film starts at 18:45 and lasts 1 hour 50 minutes. When does it end?",
        "20:35",
        "18:45 plus 1 hour is 19:45, plus 50 minutes is 20:35.",
        "19:55",
        "1 hour 50 minutes is 2 hours minus 50 minutes: 20:45 - 0:50 = 19:55.",
    ),
    (
        "A shirt costs 40 euros and is reduced by 25%. What is the new price in euros?",
        "30",
        "25% of 40 is 10, and 40 - 10 = 30.",
        "15",
        "40 - 25 = 15.",
    ),
    (
        "How many minutes are there in 3.5 hours?",
        "210",
        "3.5 x 60 = 180 + 30 = 210.",
        "230",
        "3.5 hours is 3 hours and 50 minutes: 180 + 50 = 230.",
    ),
    (
        "A recipe for 4 people needs 300 g of flour. How much flour is needed for 6 people, in grams?",
        "450",
        "Per person it is 300 / 4 = 75 g, and 6 x 75 = 450.",
        "500",
        "Two more people need 100 g each: 300 + 200 = 500.",
    ),
    (
        "What is the average of 12, 15, 21 and 32?",
        "20",
        "The total is 12 + 15 + 21 + 32 = 80, and 80 / 4 = 20.",
        "26.7",
        "The total is 80, and 80 / 3 = 26.7.",
    ),
    (
        "A car uses 6 litres of fuel per 100 km. How many litres does it use for 350 km?",
        "21",
        "350 km is 3.5 times 100 km, so 3.5 x 6 = 21.",
        "58.3",
        "350 / 6 = 58.3.",
    ),
]

#: system -> (share of right answers, shows its working)
SYSTEMS = {
    "atlas-large": (0.95, True),
    "breeze-medium": (0.85, True),
    "cobalt-medium": (0.80, False),
    "delta-small": (0.55, True),
    "ember-small": (0.45, False),
    "fable-tiny": (0.25, False),
}

#: points for (right, shows its working)
POINTS = {(True, True): 4.0, (True, False): 3.0, (False, True): 1.0, (False, False): 0.0}


def leaderboard_tasks(seed: int = 24) -> list[dict]:
    """The leaderboard sample's tasks: every system answers every problem (see the module docstring)."""
    rng = random.Random(seed)
    tasks = []
    for number, (prompt, right, working, wrong, wrong_working) in enumerate(PROBLEMS, start=1):
        candidates = []
        for index, (system, (accuracy, explains)) in enumerate(SYSTEMS.items(), start=1):
            correct = rng.random() < accuracy
            answer, steps = (right, working) if correct else (wrong, wrong_working)
            text = f"{steps} So the answer is {answer}." if explains else f"{answer}."
            candidates.append(
                {
                    "id": f"p{number:02d}-{index}",
                    "text": text,
                    "system": system,
                    "human": {"points": POINTS[(correct, explains)]},
                }
            )
        rng.shuffle(candidates)  # the data order says nothing about quality
        tasks.append(
            {
                "task_id": f"p{number:02d}",
                "prompt": prompt,
                "reference": right,
                "candidates": candidates,
                "meta": {
                    "main_score": "points",
                    "max_points": 4,
                    "language": "en",
                    "source": "rankkit synthetic leaderboard sample",
                },
            }
        )
    return tasks


def leaderboard_votes(tasks: list[dict], per_task: int = 4, seed: int = 7) -> list[dict]:
    """Human pair votes on the leaderboard sample, for ``--human``: ``per_task`` seeded random pairs of
    each task, the answer with more points winning (null: a tie)."""
    rng = random.Random(seed)
    votes = []
    for task in tasks:
        candidates = task["candidates"]
        pairs = [(a, b) for i, a in enumerate(candidates) for b in candidates[i + 1 :]]
        for a, b in rng.sample(pairs, per_task):
            points_a, points_b = a["human"]["points"], b["human"]["points"]
            winner = a["id"] if points_a > points_b else b["id"] if points_b > points_a else None
            votes.append({"task_id": task["task_id"], "a": a["id"], "b": b["id"], "winner": winner})
    return votes


def write_jsonl(rows: list[dict], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")


def recording_rows() -> list[dict]:
    """Every ordered pair of the bundled sample judged by ``sim:preset=gpt4``, as replay rows."""
    from rankkit.data.tasks import SAMPLE_DATA, load_tasks
    from rankkit.judges import make_judge
    from rankkit.judgments.cache import NullCache
    from rankkit.runs.recording import record_grid

    judge = make_judge("sim:preset=gpt4")
    rows, _ = record_grid(load_tasks(SAMPLE_DATA), judge, NullCache(), "sim-gpt4", "recorded")
    return rows


if __name__ == "__main__":
    board_tasks = leaderboard_tasks()
    write_jsonl(board_tasks, HERE / "leaderboard" / "tasks.jsonl")
    write_jsonl(leaderboard_votes(board_tasks), HERE / "leaderboard" / "votes.jsonl")
    write_jsonl(recording_rows(), HERE / "sample" / "judgments.jsonl")
    print(f"wrote {HERE / 'leaderboard'}/tasks.jsonl, votes.jsonl and {HERE / 'sample' / 'judgments.jsonl'}")
