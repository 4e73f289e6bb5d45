"""calibrate=true: both-order log-odds averaging removes a planted slot bias from a logprob judge."""

from __future__ import annotations

import math
import re

import pytest

from rankkit.data.specs import SpecError
from rankkit.data.tasks import Candidate, Task
from rankkit.judges.llm.calibration import (
    MAX_LOG_ODDS,
    both_orders_log_odds,
    choice_log_odds,
    prior_balancing_threshold,
)
from rankkit.judges.llm.judge import LLMJudge
from rankkit.judges.llm.verdict_rules import sigmoid
from rankkit.judgments.cache import JudgmentCache
from rankkit.judgments.memo import JudgmentMemo
from rankkit.judgments.values import ParseStatus, Winner
from rankkit.reports.judge_report import judge_report
from rankkit.strategies.matches import Cost, MatchSource
from tests.judges.llm.test_judge import ScriptedRuntime

#: How much the simulated judge favours slot 1, in log-odds: enough to pick it for every pair.
SLOT_BIAS = 6.0
QUALITY = {"excellent": 2.0, "good": 1.0, "fair": 0.0, "poor": -1.0}


def biased_logprobs(prompt: str, prefix: str) -> dict[str, float]:
    """log-odds(first) = quality(answer 1) - quality(answer 2) + SLOT_BIAS, as normalised logprobs."""
    first = re.search(r"<answer_1>\n(.*?)\n</answer_1>", prompt, re.DOTALL).group(1)
    second = re.search(r"<answer_2>\n(.*?)\n</answer_2>", prompt, re.DOTALL).group(1)
    log_odds = QUALITY[first] - QUALITY[second] + SLOT_BIAS
    p_first = sigmoid(log_odds)
    return {"1": math.log(p_first), "2": math.log(1.0 - p_first)}


def make_tasks() -> list[Task]:
    tasks = []
    for n in range(3):
        words = list(QUALITY)[n:] + list(QUALITY)[:n]  # candidates listed in different orders
        candidates = tuple(Candidate(f"c{i}", w, human={"points": QUALITY[w]}) for i, w in enumerate(words))
        tasks.append(
            Task(
                task_id=f"t{n}",
                prompt=f"Question {n}?",
                candidates=candidates,
                criterion="points",
                scale=(0.0, 1.0),
                meta={"domain": "dialogue"},
            )
        )
    return tasks


def ordered_pairs(task: Task) -> list[tuple[str, str]]:
    ids = [c.id for c in task.candidates]
    return [(a, b) for a in ids for b in ids if a != b]


def judge_all(judge: LLMJudge, tasks: list[Task], cache=None) -> tuple[list[tuple[Task, str, str, object]], Cost]:
    from rankkit.judgments.cache import NullCache

    cache = cache if cache is not None else NullCache()
    memo = JudgmentMemo(judge, cache)
    cost = Cost()
    out = []
    for task in tasks:
        source = MatchSource(task, memo)
        pairs = ordered_pairs(task)
        for (first, second), judgment in zip(pairs, source.compare_many(pairs)):
            out.append((task, first, second, judgment))
        cost.add(source.cost)
    return out, cost


def first_slot_share(judged) -> float:
    decisive = [j for _, _, _, j in judged if j.winner is not Winner.TIE]
    return sum(j.winner is Winner.FIRST for j in decisive) / len(decisive)


def accuracy(judged) -> float:
    correct = 0
    for task, first, second, judgment in judged:
        better_first = task.candidate(first).human["points"] > task.candidate(second).human["points"]
        correct += judgment.winner is (Winner.FIRST if better_first else Winner.SECOND)
    return correct / len(judged)


def test_calibration_removes_a_planted_slot_bias():
    tasks = make_tasks()
    raw, _ = judge_all(LLMJudge(ScriptedRuntime(logprobs=biased_logprobs), mode="logprob"), tasks)
    assert first_slot_share(raw) == pytest.approx(1.0, abs=1e-12)  # the planted bias: slot 1 always wins
    assert accuracy(raw) == pytest.approx(0.5, abs=1e-12)

    calibrated, _ = judge_all(
        LLMJudge(ScriptedRuntime(logprobs=biased_logprobs), mode="logprob", calibrate=True), tasks
    )
    assert first_slot_share(calibrated) == pytest.approx(0.5, abs=1e-12)
    assert accuracy(calibrated) == pytest.approx(1.0, abs=1e-12)
    for task, first, second, judgment in calibrated:
        content = QUALITY[task.candidate(first).text] - QUALITY[task.candidate(second).text]
        # Exactly the content term: sigmoid(q(a) - q(b)), the bias estimate exactly the planted one.
        assert judgment.probability == pytest.approx(sigmoid(content), abs=1e-9)
        assert judgment.extras["slot_bias"] == pytest.approx(SLOT_BIAS, abs=1e-9)
        assert judgment.extras["raw_probability"] == pytest.approx(sigmoid(content + SLOT_BIAS), abs=1e-9)
        assert judgment.first_grade == pytest.approx(judgment.probability)


def test_each_pair_is_read_once_per_order_and_raw_judgments_are_the_uncalibrated_judges(tmp_path):
    tasks = make_tasks()
    with JudgmentCache(tmp_path / "cache.sqlite") as cache:
        runtime = ScriptedRuntime(logprobs=biased_logprobs)
        calibrated_judge = LLMJudge(runtime, mode="logprob", calibrate=True)
        _, cost = judge_all(calibrated_judge, tasks, cache)
        assert cost.judge_calls == 36
        assert len(runtime.prompts) == 36  # 12 ordered pairs a task: each read once, never twice

        # The uncalibrated judge finds every raw judgment in the cache and calls nothing.
        plain_engine = ScriptedRuntime(logprobs=biased_logprobs)
        plain = LLMJudge(plain_engine, mode="logprob")
        assert plain.fingerprint == calibrated_judge.raw_fingerprint != calibrated_judge.fingerprint
        judged, cost = judge_all(plain, tasks, cache)
        assert plain_engine.prompts == [] and cost.cache_hits == 36
        assert first_slot_share(judged) == pytest.approx(1.0, abs=1e-12)

        # A calibrated judge in a new process reuses the raw judgments for pairs it never judged.
        fresh_engine = ScriptedRuntime(logprobs=biased_logprobs)
        fresh = LLMJudge(fresh_engine, mode="logprob", calibrate=True)
        memo = JudgmentMemo(fresh, JudgmentCacheView(cache, hide=fresh.fingerprint))
        task = tasks[0]
        ((judgment, _),) = memo.verdicts([(task, task.candidates[0], task.candidates[1])])
        assert fresh_engine.prompts == [] and judgment.extras["calibration"]


class JudgmentCacheView:
    """A cache that hides one fingerprint's entries (to test the raw-judgment path alone)."""

    def __init__(self, cache, hide):
        self.cache, self.hide, self.hidden_rows = cache, hide, set()

    def get_keys(self, keys):
        return [None if key in self.hidden_rows else found for key, found in zip(keys, self.cache.get_keys(keys))]

    def put_key(self, key, fingerprint, kind, payload):
        if fingerprint == self.hide:
            self.hidden_rows.add(key)
        self.cache.put_key(key, fingerprint, kind, payload)

    def flush(self):
        self.cache.flush()


def test_a_calibrated_judgment_does_not_depend_on_the_rest_of_the_batch():
    task = make_tasks()[0]
    a, b, c = task.candidates[:3]
    alone = LLMJudge(ScriptedRuntime(logprobs=biased_logprobs), mode="logprob", calibrate=True).compare(task, a, b)
    batch = dict(
        LLMJudge(ScriptedRuntime(logprobs=biased_logprobs), mode="logprob", calibrate=True).compare_many(
            [(task, c, a), (task, a, b), (task, b, c)]
        )
    )
    assert batch[1].probability == alone.probability


def test_judge_report_shows_the_effect():
    tasks = make_tasks()
    raw = judge_report(tasks, LLMJudge(ScriptedRuntime(logprobs=biased_logprobs), mode="logprob"), resamples=50)
    calibrated = judge_report(
        tasks, LLMJudge(ScriptedRuntime(logprobs=biased_logprobs), mode="logprob", calibrate=True), resamples=50
    )
    assert raw["metrics"]["first_slot"]["value"] == pytest.approx(1.0, abs=1e-12)
    assert raw["metrics"]["order_consistency"]["value"] == pytest.approx(0.0, abs=1e-12)
    assert calibrated["metrics"]["first_slot"]["value"] == pytest.approx(0.5, abs=1e-12)
    assert calibrated["metrics"]["order_consistency"]["value"] == pytest.approx(1.0, abs=1e-12)
    assert calibrated["metrics"]["accuracy_single"]["value"] == pytest.approx(1.0, abs=1e-12)
    assert calibrated["counts"]["judge_calls"] == raw["counts"]["judge_calls"]


def test_a_choice_with_no_probability_fails_as_a_tie():
    runtime = ScriptedRuntime(logprobs=lambda prompt, prefix: {})
    task = make_tasks()[0]
    judgment = LLMJudge(runtime, mode="logprob", calibrate=True).compare(task, task.candidates[0], task.candidates[1])
    assert judgment.status is ParseStatus.FAILED and judgment.winner is Winner.TIE and judgment.probability == 0.5


def test_calibrate_needs_logprob_mode():
    with pytest.raises(SpecError, match="mode=logprob"):
        LLMJudge(ScriptedRuntime(), mode="generate", calibrate=True)


def test_pure_functions():
    assert choice_log_odds({"1": -0.5, "2": -1.5}) == pytest.approx(1.0)
    assert choice_log_odds({"1": -math.inf, "2": -1.0}) == -MAX_LOG_ODDS
    assert choice_log_odds({"1": -math.inf, "2": -math.inf}) is None
    assert both_orders_log_odds(7.0, 5.0) == pytest.approx((1.0, 6.0), abs=1e-12)
    assert prior_balancing_threshold([5.0, 7.0, 6.5, 1.0]) == pytest.approx(5.75)
    with pytest.raises(ValueError):
        prior_balancing_threshold([])
