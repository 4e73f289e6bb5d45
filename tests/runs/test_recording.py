"""rankkit.runs.recording: a grid of judgments, or a run's results, written as rows that replay reads."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from rankkit.cli import main
from rankkit.data.tasks import SAMPLE_DATA, load_tasks
from rankkit.judges import make_judge
from rankkit.judgments.cache import JudgmentCache
from rankkit.judgments.values import GroupChoice, GroupRanking, ParseStatus
from rankkit.runs.recording import kway_row, record_grid, rows_from_results, write_judgments
from rankkit.runs.runner import run
from rankkit.strategies import make_strategy
from rankkit.strategies.choices import GroupComparison
from tests.crafted_files import DEEP, HUGE_INT
from tests.helpers import perfect_judge


def test_record_once_replay_any_strategy(tmp_path):
    """A grid recorded with a judge replays every strategy exactly as the judge itself would."""
    tasks = load_tasks(SAMPLE_DATA)
    live = make_judge("sim:preset=chatgpt")
    rows, cost = record_grid(tasks, live, JudgmentCache(tmp_path / "c.sqlite"), "chatgpt-sim", "grid")
    assert cost.judge_calls == len(rows) == sum(len(t.candidates) * (len(t.candidates) - 1) for t in tasks)
    path = tmp_path / "grid.jsonl"
    write_judgments(rows, path)
    strategies = [make_strategy(s) for s in ("knockout:order=both", "pairwise", "panel_elo")]
    expected = run(tasks, strategies, live, progress=False)
    replayed = run(tasks, strategies, make_judge(f"replay:{path}"), progress=False)
    for a, b in zip(expected.strategies, replayed.strategies):
        assert [t.scores for t in a.tasks] == [t.scores for t in b.tasks]
        assert a.metrics == b.metrics
        assert b.cost.parse_failures == 0


def test_export_from_a_run_and_from_its_results_json(tmp_path):
    tasks = load_tasks(SAMPLE_DATA)
    judge = perfect_judge()
    result = run(tasks, [make_strategy("knockout")], judge, progress=False)
    rows = rows_from_results(result, "perfect", "knockout")
    assert len(rows) == result.strategies[0].cost.comparisons == sum(len(t.candidates) - 1 for t in tasks)
    results_json = tmp_path / "run.json"
    results_json.write_text(json.dumps(result.to_dict()))
    out = tmp_path / "exported.jsonl"
    cli = CliRunner().invoke(main, ["record", "--from-run", str(results_json), "--out", str(out)])
    assert cli.exit_code == 0, cli.output
    exported = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted((r["task_id"], r["a"], r["b"]) for r in exported) == sorted(
        (r["task_id"], r["a"], r["b"]) for r in rows
    )
    assert {r["winner"] for r in exported} <= {c.id for t in tasks for c in t.candidates}
    # The same knockout replayed from the export gives the same scores for free.
    again = run(tasks, [make_strategy("knockout")], make_judge(f"replay:{out}"), progress=False)
    assert [t.scores for t in again.strategies[0].tasks] == [t.scores for t in result.strategies[0].tasks]


def test_k_way_rows_name_ids_and_record_an_unparsed_judgment_as_null():
    chosen = GroupComparison(("c2", "c0", "c1"), GroupChoice(chosen=1, probabilities=(0.2, 0.5, 0.3)))
    row = kway_row("t1", chosen, "J", "M")
    assert row["kind"] == "choice" and row["chosen"] == "c0" and row["shown"] == ["c2", "c0", "c1"]
    assert row["probabilities"] == [0.2, 0.5, 0.3] and "grades" not in row
    ordered = GroupComparison(("c2", "c0", "c1"), GroupRanking(permutation=(2, 0, 1)))
    assert kway_row("t1", ordered, "J", "M")["ranking"] == ["c1", "c2", "c0"]
    unparsed = GroupComparison(("c0", "c1"), GroupRanking(permutation=None, status=ParseStatus.FAILED))
    assert kway_row("t1", unparsed, "J", "M")["ranking"] is None
    unchosen = GroupComparison(("c0", "c1"), GroupChoice(chosen=None, status=ParseStatus.FAILED))
    assert kway_row("t1", unchosen, "J", "M")["chosen"] is None


def test_a_judgment_several_strategies_used_is_written_once(tmp_path):
    tasks = load_tasks(SAMPLE_DATA)
    result = run(
        tasks, [make_strategy("knockout"), make_strategy("knockout:order=given")], perfect_judge(), progress=False
    )
    rows = rows_from_results(result, "perfect", "two")
    keys = [(r["task_id"], r["a"], r["b"]) for r in rows]
    assert len(keys) == len(set(keys))
    used = {(t.task_id, c.first, c.second) for s in result.strategies for t in s.tasks for c in t.comparisons}
    assert set(keys) == used
    assert write_judgments(rows, tmp_path / "rows.jsonl") == len(rows)
    assert [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()] == rows


def test_the_sims_probability_choices_round_trip_through_a_recording_and_the_cache(tmp_path):
    """k-way choices carrying P(best) (``sim:kway=probabilities``), written from a run and replayed,
    or read back from the cache, give the strategies the same scores as the live judge."""
    tasks = load_tasks(SAMPLE_DATA)
    live = make_judge("sim:preset=chatgpt,kway=probabilities")
    strategies = [make_strategy(s) for s in ("setwise_knockout:k=3,order=both", "setwise_heapsort", "listwise")]
    cache = JudgmentCache(tmp_path / "c.sqlite")
    expected = run(tasks, strategies, live, cache=cache, progress=False)
    rows = rows_from_results(expected, "chatgpt-sim", "kway")
    choices = [row for row in rows if row.get("kind") == "choice"]
    assert choices and all(len(row["probabilities"]) == len(row["shown"]) and "grades" not in row for row in choices)
    write_judgments(rows, tmp_path / "kway.jsonl")
    for judge, cached in ((make_judge(f"replay:{tmp_path / 'kway.jsonl'}"), None), (live, cache)):
        again = run(tasks, strategies, judge, cache=cached, progress=False)
        for a, b in zip(expected.strategies, again.strategies):
            assert [t.scores for t in a.tasks] == [t.scores for t in b.tasks]
            assert b.cost.parse_failures == 0
    assert again.strategies[0].cost.cache_hits > 0


#: A recording's first line changed: (name, the field named in the error, old text, new text).
CRAFTED_RECORDINGS = [
    ("5001-digit integer", None, '"winner"', '"confidence": ' + HUGE_INT + ', "winner"'),
    ("100k nested lists", "extra", '"winner"', '"extra": ' + DEEP + ', "winner"'),
    ("NaN in an extra field", "confidence", '"winner"', '"confidence": NaN, "winner"'),
    ("1e999 score", "score_a", '"score_a": ', '"score_a": 1e999, "was": '),
    ("integer winner of no candidate", "winner", '"winner": "', '"winner": 5, "was": "'),
]


@pytest.mark.parametrize(
    ("name", "field_name", "old", "new"), CRAFTED_RECORDINGS, ids=[c[0] for c in CRAFTED_RECORDINGS]
)
def test_a_crafted_recording_exits_2_naming_the_file_line_and_field(tmp_path, name, field_name, old, new):
    tasks = load_tasks(SAMPLE_DATA)[:1]
    rows, _ = record_grid(tasks, make_judge("sim"), None, "sim", "grid")
    recording = tmp_path / "grid.jsonl"
    write_judgments(rows, recording)
    first, rest = recording.read_text(encoding="utf-8").split("\n", 1)
    recording.write_text(first.replace(old, new, 1) + "\n" + rest, encoding="utf-8")
    command = [
        "compare",
        "--judge",
        f"replay:{recording}",
        "--limit",
        "1",
        "--no-cache",
        "--quiet",
        "--strategies",
        "knockout",
    ]
    result = CliRunner().invoke(main, command)
    assert result.exit_code == 2, (name, result.output, result.exception)
    assert isinstance(result.exception, SystemExit)  # a clean exit, no traceback
    message = " ".join(result.output.split())
    assert f"{recording}:1:" in message
    assert field_name is None or f"field '{field_name}'" in message
