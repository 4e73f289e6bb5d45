"""Style control: style-controlled Bradley–Terry, the length-controlled win rate, and self-preference flags."""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest
from click.testing import CliRunner

from rankkit.cli import main
from rankkit.data.tasks import Candidate, Task
from rankkit.judges import make_judge
from rankkit.leaderboard import Leaderboard, LeaderboardError, add_system, build, restrict
from rankkit.leaderboard.display import report, style_lines
from rankkit.leaderboard.style import (
    Battle,
    battles_of,
    contextual_bradley_terry,
    length_controlled_win_rates,
    parse_control,
    self_preference_systems,
)

#: True quality (human score) of each system; "verbose" is the weakest and writes the longest answers.
QUALITY = {"strong": 3.0, "mid": 2.0, "verbose": 1.0, "terse": 1.5}
#: Typical answer length (characters) of each system.
LENGTH = {"strong": 300, "mid": 300, "verbose": 2400, "terse": 150}


def styled_tasks(n_tasks: int = 80, seed: int = 0) -> list[Task]:
    """Tasks whose answers' lengths vary around each system's typical length (so a length
    coefficient can be told apart from a system's strength), human score = the system's quality."""
    rng = random.Random(seed)
    tasks = []
    for t in range(n_tasks):
        candidates = tuple(
            Candidate(
                id=f"{name}-{t}",
                text="x" * int(LENGTH[name] * 2 ** rng.uniform(-1.5, 1.5)),
                system=name,
                human={"score": QUALITY[name]},
            )
            for name in QUALITY
        )
        tasks.append(Task(task_id=f"t{t}", prompt=f"q{t}", candidates=candidates, criterion="score", scale=(0.0, 4.0)))
    return tasks


#: Latent judge with little noise and no slot bias; the planted length bias is added per test.
JUDGE = "sim:perception=0.3,pair_noise=0.3,slot_bias=0,grade_noise=0.3"


def test_parse_control_and_refusals():
    assert parse_control("length") == ("length",)
    assert parse_control(["format", "length"]) == ("length", "format")
    assert parse_control("") == ()
    with pytest.raises(LeaderboardError, match="unknown control 'size'"):
        parse_control("length,size")


def test_contextual_bradley_terry_recovers_planted_strengths_and_style_coefficient():
    rng = np.random.default_rng(0)
    theta = {"a": 1.0, "b": 0.0, "c": -1.0}
    gamma = 2.0
    battles = []
    for _ in range(6000):
        a, b = rng.choice(list(theta), size=2, replace=False)
        x = rng.uniform(-0.8, 0.8)
        p = 1.0 / (1.0 + math.exp(-(theta[a] - theta[b] + gamma * x)))
        battles.append(Battle(str(a), str(b), float(rng.random() < p), (x,)))
    fitted = contextual_bradley_terry(battles, list(theta), ["tokens"], alpha=1e-4)
    factor = 400 / math.log(10)
    assert fitted["style:length"] == pytest.approx(gamma, abs=0.15)
    assert (fitted["a"] - fitted["c"]) / factor == pytest.approx(2.0, abs=0.15)
    assert np.mean([fitted[name] for name in theta]) == pytest.approx(1000.0, abs=1e-6)


def test_length_control_undoes_a_planted_length_bias_in_the_arena():
    tasks = styled_tasks()
    biased = make_judge(f"{JUDGE},length_bias=1.5")
    plain = build(tasks, biased, "arena", seed=0, resamples=0)
    controlled = build(tasks, biased, "arena", seed=0, resamples=30, control="length")
    truth = sorted(QUALITY, key=lambda s: -QUALITY[s])
    assert plain.names.index("verbose") < plain.names.index("terse")  # the bias lifts the verbose system
    assert controlled.names == truth
    length = controlled.style["coefficients"]["length"]
    assert length["estimate"] > 1 and length["ci_low"] > 0
    assert all(row.unadjusted is not None for row in controlled.systems)
    assert controlled.control == ("length",) and "style-controlled Bradley-Terry" in controlled.style["model"]
    # Without a bias the control finds no length preference: its interval holds 0.
    unbiased = build(tasks, make_judge(JUDGE), "arena", seed=0, resamples=30, control="length")
    free = unbiased.style["coefficients"]["length"]
    assert free["ci_low"] <= 0 <= free["ci_high"]


def test_format_control_fits_one_coefficient_per_markdown_feature_and_none_for_plain_text():
    tasks = styled_tasks(20)
    board = build(tasks, make_judge(JUDGE), "arena", seed=0, resamples=0, control="length,format")
    assert list(board.style["coefficients"]) == ["length", "headers", "list_items", "bold"]
    assert board.style["coefficients"]["headers"]["estimate"] is None  # no answer has a header
    assert board.style["coefficients"]["length"]["estimate"] is not None


def test_length_controlled_win_rate_undoes_a_planted_length_bias_against_the_anchor():
    tasks = styled_tasks(120)
    biased = make_judge(f"{JUDGE},length_bias=1.5")
    plain = build(tasks, biased, "anchored", anchor="mid", seed=0, resamples=0)
    controlled = build(tasks, biased, "anchored", anchor="mid", seed=0, resamples=20, control="length")
    assert plain.system("verbose").rating > plain.system("terse").rating
    assert controlled.system("verbose").rating < controlled.system("terse").rating
    assert controlled.names[0] == "strong"
    assert controlled.system("mid").rating == pytest.approx(0.5, abs=1e-12)
    # the raw win rate is kept beside the controlled one
    assert controlled.system("verbose").unadjusted == pytest.approx(plain.system("verbose").rating, abs=1e-12)
    assert controlled.style["coefficients"]["length"]["ci_low"] > 0


def test_length_controlled_win_rate_without_length_differences_is_the_model_win_rate():
    battles = [Battle("s", "anchor", 1.0 if i % 4 else 0.0, (0.0,)) for i in range(400)]
    rates = length_controlled_win_rates(battles, [f"t{i % 40}" for i in range(400)], ["s"])
    assert rates["s"] == pytest.approx(0.75, abs=0.01)


def test_an_anchored_leaderboard_takes_length_control_only():
    with pytest.raises(LeaderboardError, match="control=length only"):
        build(styled_tasks(5), make_judge(JUDGE), "anchored", anchor="mid", resamples=0, control="format")


def test_a_controlled_leaderboard_round_trips_through_json_with_each_matchs_task():
    tasks = styled_tasks(10)
    board = build(tasks, make_judge(f"{JUDGE},length_bias=1"), "arena", seed=0, resamples=5, control="length")
    stored = json.loads(json.dumps(board.to_dict()))
    assert all("task" in match for match in stored["matches"])
    again = Leaderboard.from_dict(stored)
    assert again.match_tasks == board.match_tasks and again.control == ("length",)
    assert again.style == stored["style"]
    assert [row.unadjusted for row in again.systems] == pytest.approx([row.unadjusted for row in board.systems])
    covariates = [b.covariates for b in battles_of(tasks, again.matches, again.match_tasks, ["tokens"])]
    assert all(-1 < x[0] < 1 for x in covariates)


def test_adding_a_system_to_a_controlled_leaderboard_rerates_every_match_with_the_control():
    tasks = styled_tasks(60)
    judge = make_judge(f"{JUDGE},length_bias=1.5")
    board = build(restrict(tasks, ["strong", "mid", "terse"]), judge, "arena", seed=0, resamples=0, control="length")
    added = add_system(board, tasks, judge, "verbose", method="anchored", resamples=0)
    assert added.control == ("length",) and added.style is not None
    assert len(added.match_tasks) == len(added.matches) > len(board.matches)
    assert added.names[-1] == "verbose"  # its length no longer buys it a place
    assert added.placement["controlled_rank"] == 4
    old = Leaderboard.from_dict(
        {**board.to_dict(), "matches": [{"a": a, "b": b, "outcome": o} for a, b, o in board.matches]}
    )
    with pytest.raises(LeaderboardError, match="do not record their tasks"):
        add_system(old, tasks, judge, "verbose", resamples=0)


def test_the_cli_fits_a_style_control_and_prints_its_coefficients(tmp_path):
    data = tmp_path / "tasks.jsonl"
    with data.open("w", encoding="utf-8") as handle:
        for task in styled_tasks(30):
            handle.write(
                json.dumps(
                    {
                        "task_id": task.task_id,
                        "prompt": task.prompt,
                        "candidates": [
                            {"id": c.id, "text": c.text, "system": c.system, "human": dict(c.human)}
                            for c in task.candidates
                        ],
                    }
                )
                + "\n"
            )
    out = tmp_path / "board.json"
    result = CliRunner().invoke(
        main,
        [
            "leaderboard",
            "--data",
            str(data),
            "--judge",
            f"{JUDGE},length_bias=1.5",
            "--control",
            "length",
            "--no-cache",
            "--quiet",
            "--bootstrap",
            "10",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "style-controlled (length)" in result.output and "style coefficients" in result.output
    assert "unadjusted" in result.output
    assert json.loads(out.read_text())["style"]["coefficients"]["length"]["estimate"] > 0
    bad = CliRunner().invoke(
        main, ["leaderboard", "--data", str(data), "--judge", JUDGE, "--control", "size", "--no-cache", "--quiet"]
    )
    assert bad.exit_code == 2 and "unknown control 'size'" in bad.output


def test_self_preference_flags_the_judges_own_model_by_name():
    judge = {"spec": "openai:model=gpt-4o,base_url=http://localhost", "simulated": False}
    assert self_preference_systems(judge, ["gpt-4o-2024-05-13", "gpt-4-turbo", "claude-3-opus"]) == [
        "gpt-4o-2024-05-13"
    ]
    assert self_preference_systems(
        {"spec": "hf:HuggingFaceTB/SmolLM2-360M-Instruct"}, ["smollm2-360m-instruct", "smollm2-1.7b"]
    ) == ["smollm2-360m-instruct"]
    assert self_preference_systems({"spec": "sim:preset=gpt4", "simulated": True}, ["gpt4"]) == []
    board = Leaderboard(method="arena", systems=[], matches=[], judge=judge)
    board.systems = Leaderboard.from_dict(
        {
            "method": "arena",
            "systems": [{"name": "gpt-4o-2024-05-13", "rating": 1, "ci_low": None, "ci_high": None, "rank": 1}],
        }
    ).systems
    assert any("self-preference: gpt-4o-2024-05-13" in line for line in style_lines(board))
    assert any("self-preference" in line for line in report(board, None)[1])
