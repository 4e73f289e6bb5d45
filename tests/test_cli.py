"""The command line as a user runs it: compare, rank, strategies, bad input, plug-ins."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from click.testing import CliRunner

from rankkit.cli import main
from tests.conftest import REPO_ROOT, shared_dataset


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_compare_on_the_sample_writes_the_documented_json(tmp_path):
    out = tmp_path / "r.json"
    result = invoke("compare", "--judge", "sim:preset=chatgpt", "--cache", str(tmp_path / "c.sqlite"),
                    "--strategies", "knockout:debias=true,pairwise,individual", "--out", str(out), "--quiet")
    assert result.exit_code == 0, result.output
    assert "knockout:debias=true" in result.output and "individual" in result.output
    data = json.loads(out.read_text())
    assert {"judge", "data", "seed", "strategies"} <= set(data)
    assert data["judge"]["simulated"] is True
    entry = data["strategies"][0]
    assert {"name", "params", "comparisons", "judge_calls", "cache_hits", "seconds", "metrics", "tasks"} <= set(entry)
    assert set(entry["metrics"]) >= {"pearson", "spearman", "kendall", "task_pearson", "task_spearman",
                                     "task_kendall", "pairwise_accuracy", "top1_accuracy"}
    task = entry["tasks"][0]
    assert {"task_id", "scores", "ranking", "champion", "extras"} <= set(task)
    # 6 sample tasks with 5,4,5,4,4,5 candidates: knockout debiased costs 2(N-1) per task
    assert entry["comparisons"] == 2 * sum(n - 1 for n in (5, 4, 5, 4, 4, 5))
    # a second run asks the judge nothing
    again = invoke("compare", "--judge", "sim:preset=chatgpt", "--cache", str(tmp_path / "c.sqlite"),
                   "--strategies", "knockout:debias=true,pairwise,individual", "--format", "json", "--quiet")
    assert all(s["judge_calls"] == 0 for s in json.loads(again.stdout)["strategies"])


def test_rank_writes_per_candidate_scores(tmp_path):
    out = tmp_path / "ranked.jsonl"
    result = invoke("rank", "--judge", "sim", "--no-cache", "--strategy", "knockout", "--out", str(out), "--quiet")
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 27
    first_task = [r for r in rows if r["task_id"] == "q01"]
    assert [r["rank"] for r in first_task] == [1, 2, 3, 4, 5]
    assert sum(r["champion"] for r in first_task) == 1


@pytest.mark.parametrize("content,needle", [
    ('{"task_id": "t", "prompt": ', ":1: malformed JSON"),
    ('{"task_id": "t", "candidates": []}', ":1: field 'prompt': missing field"),
    ('{"task_id": "t", "prompt": "q", "candidates": [{"id": "a", "text": "x"}, {"id": "a", "text": "y"}]}',
     "field 'candidates[1].id': duplicate candidate id"),
    ('{"task_id": "t", "prompt": "q", "candidates": [{"id": "a", "text": ""}, {"id": "b", "text": "y"}]}',
     "field 'candidates[0].text': empty text"),
    ('{"task_id": "t", "prompt": "q", "candidates": [{"id": "a", "text": "x"}]}', "at least 2"),
    ('{"task_id": "t", "prompt": "q", "candidates": [{"id": "a", "text": "x", "human": {"s": "bad"}}, {"id": "b", "text": "y", "human": {"s": 1}}]}',
     "field 'candidates[0].human.s'"),
])
def test_bad_input_exits_2_with_file_line_field(tmp_path, content, needle):
    path = tmp_path / "bad.jsonl"
    path.write_text(content + "\n")
    result = CliRunner().invoke(main, ["compare", "--data", str(path), "--judge", "sim", "--no-cache", "--quiet"])
    assert result.exit_code == 2
    assert str(path) in result.output and needle in result.output


def test_bad_usage_exits_2():
    assert CliRunner().invoke(main, ["compare", "--strategies", "nosuch", "--judge", "sim", "--no-cache"]).exit_code == 2
    bad_param = CliRunner().invoke(main, ["compare", "--strategies", "knockout:debais=true", "--judge", "sim", "--no-cache"])
    assert bad_param.exit_code == 2 and "unknown parameter 'debais'" in bad_param.output
    assert CliRunner().invoke(main, ["compare", "--judge", "nosuchjudge", "--no-cache"]).exit_code == 2
    assert CliRunner().invoke(main, ["compare", "--data", "/nonexistent.jsonl", "--judge", "sim"]).exit_code == 2
    assert CliRunner().invoke(main, ["compare", "--limit", "0"]).exit_code == 2


def test_strategies_lists_parameters():
    result = invoke("strategies")
    assert "knockout" in result.output and "debias=false" in result.output and "tie=coin" in result.output


def test_plugin_strategy_from_an_entry_point(tmp_path):
    """A test-only package registers a strategy through the entry-point group; rankkit lists and runs it."""
    package = tmp_path / "rankkit_plugin_demo"
    package.mkdir()
    (package / "__init__.py").write_text(textwrap.dedent('''
        from dataclasses import dataclass
        from rankkit.strategies import Ranking, Strategy

        @dataclass(frozen=True)
        class LengthStrategy(Strategy):
            """Longer answers rank higher (a toy plug-in)."""
            description = "plug-in demo: score = answer length"
            kind = "pointwise"
            bonus: float = 0.0

            def rank(self, task, source, rng):
                return Ranking(scores={c.id: len(c.text) + self.bonus for c in task.candidates})
    '''))
    dist = tmp_path / "rankkit_plugin_demo-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: rankkit-plugin-demo\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[rankkit.strategies]\nlength = rankkit_plugin_demo:LengthStrategy\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO_ROOT)])}
    listed = subprocess.run([sys.executable, "-m", "rankkit.cli", "strategies"], env=env,
                            capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr
    assert "length" in listed.stdout and "plug-in demo" in listed.stdout and "bonus=0.0" in listed.stdout
    ran = subprocess.run([sys.executable, "-m", "rankkit.cli", "compare", "--judge", "sim", "--no-cache", "--quiet",
                          "--strategies", "length:bonus=1,knockout", "--format", "json"],
                         env=env, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    names = [s["name"] for s in json.loads(ran.stdout)["strategies"]]
    assert names == ["length:bonus=1.0", "knockout"]


def test_import_and_help_stay_light():
    code = ("import sys, rankkit, rankkit.cli\n"
            "from click.testing import CliRunner\n"
            "CliRunner().invoke(rankkit.cli.main, ['--help'])\n"
            "CliRunner().invoke(rankkit.cli.main, ['strategies'])\n"
            "heavy = [m for m in ('torch', 'transformers', 'matplotlib', 'httpx') if m in sys.modules]\n"
            "print(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""


def test_listing_strategies_loads_no_numerical_library():
    # `rankkit strategies` imports every strategy module: none may pull numpy, scipy, networkx
    # or choix in at import time (they made the listing 20 times slower than bare Python).
    code = ("import sys, rankkit.cli\n"
            "from click.testing import CliRunner\n"
            "result = CliRunner().invoke(rankkit.cli.main, ['strategies'])\n"
            "assert 'active' in result.output and 'swiss' in result.output, result.output\n"
            "heavy = [m for m in ('numpy', 'scipy', 'networkx', 'choix', 'tqdm') if m in sys.modules]\n"
            "print(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""


def test_compare_builds_the_results_json_only_to_write_it(tmp_path, monkeypatch):
    from rankkit.runner import RunResult

    built = []
    original = RunResult.to_dict
    monkeypatch.setattr(RunResult, "to_dict", lambda self: built.append(1) or original(self))
    args = ["compare", "--judge", "sim", "--no-cache", "--strategies", "knockout", "--quiet"]
    assert invoke(*args).exit_code == 0
    assert built == []
    assert invoke(*args, "--out", str(tmp_path / "r.json")).exit_code == 0
    assert built == [1] and json.loads((tmp_path / "r.json").read_text())["strategies"]


def test_done_when_command_on_usr_topicalchat(tmp_path):
    data = shared_dataset("usr_topicalchat")
    out = tmp_path / "r.json"
    result = invoke("compare", "--data", str(data), "--strategies", "knockout:debias=true,pairwise,individual",
                    "--judge", "sim:preset=chatgpt", "--no-cache", "--out", str(out), "--quiet")
    assert result.exit_code == 0
    metrics = {s["name"]: s["metrics"] for s in json.loads(out.read_text())["strategies"]}
    assert metrics["knockout:debias=true"]["task_spearman"] > 0.2
