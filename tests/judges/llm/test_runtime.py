"""The LLM runtime protocol: every runtime declares every member; the judge never probes."""

from __future__ import annotations

import inspect

import pytest

from rankkit.judges.base import JudgeError
from rankkit.judges.hosted.anthropic import AnthropicRuntime
from rankkit.judges.hosted.batch_options import BatchOptions
from rankkit.judges.hosted.http_client import ClientConfig
from rankkit.judges.hosted.openai_compat import OpenAIRuntime
from rankkit.judges.hosted.prices import Price
from rankkit.judges.llm.judge import LLMJudge
from rankkit.judges.llm.runtime import Capacity, LLMRuntime, PromptTooLong, StandInRuntime
from rankkit.judges.local.hf_runtime import HFRuntime
from rankkit.judges.local.vllm import VLLMRuntime
from tests.judges.llm.test_judge import ScriptedRuntime

METHODS = ("identity", "generate", "next_token_logprobs", "answer_logliks")
ATTRIBUTES = {
    "backend": str,
    "verdict_path": str | None,
    "capacity": Capacity,
    "context": tuple[int, str] | None,
}


@pytest.mark.parametrize("runtime_class", [HFRuntime, VLLMRuntime, OpenAIRuntime, AnthropicRuntime, StandInRuntime])
def test_every_builtin_runtime_implements_every_method(runtime_class):
    assert LLMRuntime in runtime_class.__mro__  # declared, so its attribute defaults are inherited
    for name in METHODS:  # its own, not the protocol's empty stub
        assert getattr(runtime_class, name) is not getattr(LLMRuntime, name), (runtime_class.__name__, name)


def test_the_protocol_declares_typed_attributes_and_methods():
    hints = inspect.get_annotations(LLMRuntime, eval_str=True)
    assert hints == ATTRIBUTES
    for name in METHODS:
        signature = inspect.signature(getattr(LLMRuntime, name))
        assert signature.return_annotation is not inspect.Signature.empty, name


def test_runtimes_report_their_capabilities_without_a_model():
    stand_in = StandInRuntime("hf", {"name": "m"})
    assert (stand_in.verdict_path, stand_in.capacity) == ("continuation", Capacity(1, fills_batches=False))
    http = OpenAIRuntime("m", ClientConfig("openai", "http://127.0.0.1:9/v1", concurrency=3))
    assert (http.capacity, http.batched, http.price) == (Capacity(3), False, None)
    hf = HFRuntime(None, None, {"name": "m"}, batch_size=5, exact=False)
    assert (hf.verdict_path, hf.capacity) == ("continuation", Capacity(5, fills_batches=True))
    judge = LLMJudge(hf)
    assert (judge.capabilities.capacity, judge.capabilities.fills_batches) == (5, True)


def test_hosted_runtimes_declare_price_batches_and_their_verdict_read(tmp_path):
    price = Price(3.0, 15.0)
    batch = BatchOptions(journal=str(tmp_path / "batches.json"), size=64)
    local = ClientConfig("anthropic", "http://127.0.0.1:9/v1", concurrency=2)
    anthropic = AnthropicRuntime("claude-sonnet-4-5", local, price=price, batch=batch)
    assert anthropic.verdict_path == "prefill"  # known without a request: the Messages API continues a prefill
    assert (anthropic.price, anthropic.batched, anthropic.capacity) == (price, True, Capacity(64, fills_batches=True))
    local = ClientConfig("openai", "http://127.0.0.1:9/v1", concurrency=2)
    direct, batched = OpenAIRuntime("gpt-4.1", local), OpenAIRuntime("gpt-4.1", local, batch=batch)
    assert (direct.batched, direct.capacity) == (False, Capacity(2))
    assert (batched.batched, batched.capacity) == (True, Capacity(64, fills_batches=True))
    notes: list[str] = []
    batched.show_progress(notes.append)  # a batching runtime hands its batches' state to the progress bar
    batched.batcher.on_status("batch b1: in_progress 3/64")
    StandInRuntime("hf", {"name": "m"}).show_progress(notes.append)  # the protocol's default: nothing to show
    assert notes == ["batch b1: in_progress 3/64"]


def test_the_stand_in_refuses_every_request():
    stand_in = StandInRuntime("vllm", {"name": "m"})
    assert stand_in.identity() == {"name": "m"}
    for call in (
        lambda: stand_in.generate([], max_new_tokens=1, temperature=0.0, seed=0),
        lambda: stand_in.next_token_logprobs([], prefixes=[], choices=[]),
        lambda: stand_in.answer_logliks([], []),
    ):
        with pytest.raises(JudgeError, match="no model loaded"):
            call()


class ShortContext(ScriptedRuntime):
    """A runtime whose context holds short prompts only: a long one raises PromptTooLong."""

    def next_token_logprobs(self, conversations, *, prefixes, choices):
        for index, conversation in enumerate(conversations):
            text = conversation[-1]["content"]
            if len(text) > 2000:
                raise PromptTooLong(f"a prompt of {len(text)} characters does not fit", prompt=text)
            yield index, dict.fromkeys(choices[index], -1.0)


def test_the_judge_names_the_task_of_any_runtimes_prompt_too_long(sample_tasks):
    from dataclasses import replace

    judge = LLMJudge(ShortContext(), mode="logprob", template="generic")
    long_task = replace(sample_tasks[1], prompt="Explain. " * 300)
    with pytest.raises(PromptTooLong, match=rf"^task {long_task.task_id!r}: a prompt of \d+ characters") as caught:
        list(judge.grade_many([(sample_tasks[0], sample_tasks[0].candidates[0]), (long_task, long_task.candidates[0])]))
    assert caught.value.exit_code == 2 and long_task.prompt in caught.value.prompt


def test_the_judge_reads_capabilities_it_never_probes():
    source = inspect.getsource(LLMJudge)
    assert "getattr(self.runtime" not in source and "hasattr(self.runtime" not in source
    import rankkit.judges.llm.kway
    import rankkit.runs.plan.batches
    import rankkit.runs.plan.usd
    import rankkit.runs.runner

    for module in (rankkit.judges.llm.kway, rankkit.runs.plan.batches, rankkit.runs.plan.usd, rankkit.runs.runner):
        text = inspect.getsource(module)
        assert "getattr(" not in text and "hasattr(" not in text, module.__name__
