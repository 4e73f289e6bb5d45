"""The hand-built results file every analysis test uses; its numbers are worked out by hand in the tests.

The fixture (``hand_results``): three tasks with candidates a, b, c, d written by systems sa..sd,
answers of 1..4 characters (so the later letter is always the longer answer).

=====  ==========  ================  ==================  =========
task   human       ko scores         pw scores           meta
=====  ==========  ================  ==================  =========
t1     1 2 3 4     1 2 3 4           1 2 3 4             easy, E1
t2     4 3 2 1     1 2 3 4           1 2 3 4             hard, E1
t3     1 2 3 4     2 1 3 4           1 2 3 4             easy, E2
=====  ==========  ================  ==================  =========

``ko`` is a knockout: round 1 a–b and c–d, b and d advance, d beats b in round 2 (so a and c are
eliminated in round 1, b in round 2, d is champion). ``pw`` is a pairwise-like strategy that also
played (b, a); ``oracle`` scores each candidate by its human score.
"""

from __future__ import annotations

HUMAN = {"t1": [1, 2, 3, 4], "t2": [4, 3, 2, 1], "t3": [1, 2, 3, 4]}
KO = {"t1": [1, 2, 3, 4], "t2": [1, 2, 3, 4], "t3": [2, 1, 3, 4]}
IDS = ["a", "b", "c", "d"]
META = {
    "t1": {"difficulty": "easy", "exam": "E1"},
    "t2": {"difficulty": "hard", "exam": "E1"},
    "t3": {"difficulty": "easy", "exam": "E2"},
}


def match(first, second, winner, round=None, first_grade=1.0, second_grade=2.0, raw="Answer 1: 1 Answer 2: 2"):
    return {
        "first": first,
        "second": second,
        "round": round,
        "first_grade": first_grade,
        "second_grade": second_grade,
        "winner": winner,
        "probability": None,
        "status": "ok",
        "raw": raw,
    }


def cost(comparisons=0, grades=0, judge_calls=0) -> dict:
    """A ``cost`` record as the results file stores it (every field of ``rankkit.strategies.matches.Cost``)."""
    from dataclasses import fields

    from rankkit.strategies.matches import Cost

    return {
        **{f.name: 0 for f in fields(Cost)},
        "comparisons": comparisons,
        "grades": grades,
        "judge_calls": judge_calls,
    }


def ranking_of(scores: dict) -> list:
    return sorted(scores, key=lambda c: -scores[c])


def hand_results() -> dict:
    """The fixture described in the module docstring, shaped like `rankkit compare --out`."""
    ko_tasks, pw_tasks, oracle_tasks = [], [], []
    for task_id in ("t1", "t2", "t3"):
        ko_scores = dict(zip(IDS, map(float, KO[task_id])))
        final = match("d", "b", "first", 2) if task_id == "t2" else match("b", "d", "second", 2)
        ko_matches = [match("a", "b", "second", 1), match("c", "d", "second", 1), final]
        extras = {
            "a": {"eliminated_round": 1, "played": 1, "grades": [1.0], "byes": 0, "rounds": 2},
            "b": {"eliminated_round": 2, "played": 2, "grades": [2.0, 1.0], "byes": 0, "rounds": 2},
            "c": {"eliminated_round": 1, "played": 1, "grades": [1.0], "byes": 0, "rounds": 2},
            "d": {"eliminated_round": None, "played": 2, "grades": [2.0, 2.0], "byes": 0, "rounds": 2},
        }
        ko_tasks.append(
            {
                "task_id": task_id,
                "scores": ko_scores,
                "ranking": ranking_of(ko_scores),
                "champion": "d",
                "extras": extras,
                "cost": cost(3, 0, 3),
                "comparisons": ko_matches,
            }
        )
        pw_scores = {c: float(i + 1) for i, c in enumerate(IDS)}
        reverse = match("b", "a", "second" if task_id == "t3" else "first", 1)
        pw_tasks.append(
            {
                "task_id": task_id,
                "scores": pw_scores,
                "ranking": ranking_of(pw_scores),
                "champion": None,
                "extras": {c: {"played": 1} for c in IDS},
                "cost": cost(3, 0, 1),
                "comparisons": [match("a", "b", "second", 1), match("c", "d", "second", 1), reverse],
            }
        )
        oracle_scores = dict(zip(IDS, map(float, HUMAN[task_id])))
        oracle_tasks.append(
            {
                "task_id": task_id,
                "scores": oracle_scores,
                "ranking": ranking_of(oracle_scores),
                "champion": None,
                "extras": {},
                "cost": cost(0, 4, 4),
                "comparisons": [],
            }
        )

    def strategy(name, kind, comparisons, grades, judge_calls, tasks):
        return {
            "name": name,
            "strategy": kind,
            "params": {},
            "comparisons": comparisons,
            "grades": grades,
            "judge_calls": judge_calls,
            "cache_hits": 0,
            "cost": cost(comparisons, grades, judge_calls),
            "seconds": 0.0,
            "metrics": {},
            "tasks": tasks,
        }

    strategies = [
        strategy("ko", "knockout", 9, 0, 9, ko_tasks),
        strategy("pw", "pairwise", 9, 0, 3, pw_tasks),
        strategy("oracle", "individual", 0, 12, 12, oracle_tasks),
    ]
    task_data = [
        {
            "task_id": t,
            "prompt": f"question {t}",
            "reference": None,
            "meta": META[t],
            "scale": [0.0, 4.0],
            "candidates": [
                {"id": c, "system": f"s{c}", "text": "x" * (i + 1), "human": float(HUMAN[t][i])}
                for i, c in enumerate(IDS)
            ],
        }
        for t in ("t1", "t2", "t3")
    ]
    return {
        "judge": {"spec": "hand", "description": "hand-made", "fingerprint": "hand", "simulated": True},
        "data": "hand",
        "seed": 0,
        "criterion": "score",
        "strategies": strategies,
        "task_data": task_data,
    }


def choice(shown, chosen, round=1, status="ok"):
    """A k-way choice as the results file stores it (``rankkit.strategies.choices.GroupComparison.to_dict``)."""
    return {
        "kind": "choice",
        "shown": list(shown),
        "round": round,
        "chosen": chosen,
        "probabilities": None,
        "grades": None,
        "raw": "" if chosen is None else f"Best: {'ABCDEFGH'[chosen]}",
        "status": status,
    }


def ranking(shown, permutation, round=1):
    """A k-way ranking (slots best first) as the results file stores it."""
    return {
        "kind": "ranking",
        "shown": list(shown),
        "round": round,
        "permutation": list(permutation),
        "raw": "",
        "status": "ok",
    }


#: The k-way judgments of :func:`kway_hand_results`, per strategy and task. Human-best answer of
#: each group (HUMAN above): t1 (a, b, c) -> c in slot C; t2 (b, c, d) -> b in slot A; t3 (c, a, b)
#: -> c in slot A; t2 (d, c, b, a) -> a in slot D.
KWAY = {
    "sw": {
        "t1": [choice("abc", 0)],  # chose A
        "t2": [choice("bcd", 0)],  # chose A
        "t3": [choice("cab", 2), choice("abd", None, 2, "failed")],
    },  # chose C; one failed
    "lw": {
        "t1": [
            ranking("abc", (1, 0, 2)),  # ranked B first
            choice("abc", 0),
        ],  # sw's t1 judgment again
        "t2": [ranking("dcba", (3, 2, 1, 0))],  # k = 4, ranked D first
        "t3": [],
    },
}


def kway_hand_results() -> dict:
    """:func:`hand_results` plus two k-way strategies, ``sw`` (choices of 3) and ``lw`` (rankings
    of 3 and 4, and one choice shared with ``sw``), with the judgments of :data:`KWAY`."""
    data = hand_results()
    for name, per_task in KWAY.items():
        tasks = []
        for task_id, groups in per_task.items():
            scores = {c: float(i + 1) for i, c in enumerate(IDS)}
            tasks.append(
                {
                    "task_id": task_id,
                    "scores": scores,
                    "ranking": ranking_of(scores),
                    "champion": None,
                    "extras": {},
                    "cost": cost(len(groups), 0, len(groups)),
                    "comparisons": [],
                    "group_comparisons": groups,
                }
            )
        calls = sum(len(groups) for groups in per_task.values())
        data["strategies"].append(
            {
                "name": name,
                "strategy": "setwise_knockout" if name == "sw" else "listwise",
                "params": {},
                "comparisons": calls,
                "grades": 0,
                "judge_calls": calls,
                "cache_hits": 0,
                "cost": cost(calls, 0, calls),
                "seconds": 0.0,
                "metrics": {},
                "tasks": tasks,
            }
        )
    return data
