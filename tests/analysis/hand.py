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
META = {"t1": {"difficulty": "easy", "exam": "E1"}, "t2": {"difficulty": "hard", "exam": "E1"},
        "t3": {"difficulty": "easy", "exam": "E2"}}


def match(first, second, winner, round=None, first_grade=1.0, second_grade=2.0, raw="Answer 1: 1 Answer 2: 2"):
    return {"first": first, "second": second, "round": round, "first_grade": first_grade, "second_grade": second_grade,
            "winner": winner, "probability": None, "status": "ok", "raw": raw}


def ranking_of(scores: dict) -> list:
    return sorted(scores, key=lambda c: -scores[c])


def hand_results() -> dict:
    """The fixture described in the module docstring, shaped like `rankkit compare --out`."""
    ko_tasks, pw_tasks, oracle_tasks = [], [], []
    for task_id in ("t1", "t2", "t3"):
        ko_scores = dict(zip(IDS, map(float, KO[task_id])))
        final = match("d", "b", "first", 2) if task_id == "t2" else match("b", "d", "second", 2)
        ko_matches = [match("a", "b", "second", 1), match("c", "d", "second", 1), final]
        extras = {"a": {"eliminated_round": 1, "played": 1, "grades": [1.0], "byes": 0, "rounds": 2},
                  "b": {"eliminated_round": 2, "played": 2, "grades": [2.0, 1.0], "byes": 0, "rounds": 2},
                  "c": {"eliminated_round": 1, "played": 1, "grades": [1.0], "byes": 0, "rounds": 2},
                  "d": {"eliminated_round": None, "played": 2, "grades": [2.0, 2.0], "byes": 0, "rounds": 2}}
        ko_tasks.append({"task_id": task_id, "scores": ko_scores, "ranking": ranking_of(ko_scores), "champion": "d",
                         "extras": extras, "comparisons": 3, "judge_calls": 3, "matches": ko_matches})
        pw_scores = {c: float(i + 1) for i, c in enumerate(IDS)}
        reverse = match("b", "a", "second" if task_id == "t3" else "first", 1)
        pw_tasks.append({"task_id": task_id, "scores": pw_scores, "ranking": ranking_of(pw_scores), "champion": None,
                         "extras": {c: {"played": 1} for c in IDS}, "comparisons": 3, "judge_calls": 1,
                         "matches": [match("a", "b", "second", 1), match("c", "d", "second", 1), reverse]})
        oracle_scores = dict(zip(IDS, map(float, HUMAN[task_id])))
        oracle_tasks.append({"task_id": task_id, "scores": oracle_scores, "ranking": ranking_of(oracle_scores),
                             "champion": None, "extras": {}, "comparisons": 0, "judge_calls": 4, "matches": []})
    strategies = [
        {"name": "ko", "strategy": "knockout", "params": {}, "comparisons": 9, "grades": 0, "judge_calls": 9, "tasks": ko_tasks},
        {"name": "pw", "strategy": "pairwise", "params": {}, "comparisons": 9, "grades": 0, "judge_calls": 3, "tasks": pw_tasks},
        {"name": "oracle", "strategy": "individual", "params": {}, "comparisons": 0, "grades": 12, "judge_calls": 12,
         "tasks": oracle_tasks},
    ]
    task_data = [{"task_id": t, "prompt": f"question {t}", "reference": None, "meta": META[t], "scale": [0.0, 4.0],
                  "candidates": [{"id": c, "system": f"s{c}", "text": "x" * (i + 1), "human": float(HUMAN[t][i])}
                                 for i, c in enumerate(IDS)]} for t in ("t1", "t2", "t3")]
    return {"judge": {"spec": "hand", "description": "hand-made", "fingerprint": "hand", "simulated": True},
            "data": "hand", "seed": 0, "criterion": "score", "strategies": strategies, "task_data": task_data}
