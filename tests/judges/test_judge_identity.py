"""Pins what every LLM judge configuration is to the cache: fingerprint, request keys, judgments, stored rows.

A refactoring of the LLM judges must leave all of it unchanged, or cached judgments would no
longer be found (a changed fingerprint or request key) or would differ from fresh ones (a changed
judgment). Each configuration judges the same requests on a scripted engine with a recording
cache; the test compares a SHA-256 of everything observable with the value recorded before the
judges were split into modules. If a change *means* to change what a judgment is, bump the
version in the fingerprint (``PARSER_VERSION``, ``LOGPROB_RULE``...) and record new values by
printing :func:`observed` for each configuration.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from typing import Any

import pytest

from rankkit.memo import JudgmentMemo
from rankkit.judges import make_judge
from rankkit.judges.base import Verdict, Grade
from rankkit.judges.llm import LLMJudge
from rankkit.tasks import Candidate, Task
from tests.judges.test_llm import ScriptedEngine


class RecordingCache:
    """An in-memory cache that keeps every row written, to pin what the judges store."""

    def __init__(self) -> None:
        self.rows: dict[str, tuple[str, str, dict[str, Any]]] = {}

    def get_keys(self, keys):
        return [self.rows[key][2] if key in self.rows else None for key in keys]

    def put_key(self, key, fingerprint, kind, payload):
        self.rows[key] = (fingerprint, kind, payload)

    def flush(self):
        pass


def _crc(text: str) -> int:
    return zlib.crc32(text.encode("utf-8"))


def reply(prompt: str, seed: int) -> str:
    """A verdict for most prompts; for some, nothing parseable at the first seed (so retries show).
    A PREPAIR analysis is plain prose (a verdict in it would void the decision's)."""
    if "Giving a brief explanation" in prompt:
        return f"Analysis {_crc(prompt) % 97}: adequate."
    if _crc(prompt) % 3 == 0 and seed == 0:
        return "I cannot decide."
    a, b = _crc(prompt) % 5, _crc(prompt[::-1]) % 5
    return f"Explanation: reasons. Answer 1: {a}/4 Answer 2: {b}/4 Score: {a}/4"


def logprobs(prompt: str, prefix: str) -> dict[str, float]:
    return {str(k): -1.0 - ((_crc(prompt + prefix) >> k) % 7) / 3 for k in range(10)}


def loglik(question: str, answer: str) -> float:
    return -0.2 - (_crc(question + answer) % 11) / 10


def tasks() -> list[Task]:
    plain = Task(task_id="t1", prompt="Why is the sky blue?", criterion="points", scale=(0.0, 4.0),
                 meta={"language": "en", "max_points": 4},
                 candidates=tuple(Candidate(f"c{i}", text, human={"points": float(i)})
                                  for i, text in enumerate(("Rayleigh scattering.", "Because.", "Blue paint."))))
    reference = Task(task_id="t2", prompt="2+2?", reference="4", criterion="points", scale=(1.0, 10.0),
                     candidates=(Candidate("a", "4"), Candidate("b", "5"), Candidate("c", "four")))
    return [plain, reference]


def observed(judge: LLMJudge) -> dict[str, Any]:
    """Everything a run could see or store of this judge on the scripted requests."""
    cache = RecordingCache()
    memo = JudgmentMemo(judge, cache)
    judge.bind_memo(memo)
    points, pairs = [], []
    for task in tasks():
        a, b, c = task.candidates
        points.append((task, a))
        points.append((task, c))
        pairs.extend([(task, a, b), (task, b, a), (task, c, a)])
    out: dict[str, Any] = {"fingerprint": judge.fingerprint,
                           "request_keys": [judge.request_key(*p) for p in pairs + points]}
    # Through the memo, as the match layer asks, so cache rows are what a run writes.
    out["pairs"] = [j.to_dict() for j, _ in memo.verdicts(pairs)]
    scored = memo.grades(points)
    out["points"] = [j.to_dict() for j, _ in scored]
    out["rows"] = sorted([key, *row] for key, row in cache.rows.items())
    return out


def digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode("utf-8")).hexdigest()[:16]


def engine() -> ScriptedEngine:
    return ScriptedEngine(reply=reply, logprobs=logprobs, loglik=loglik)


CONFIGURATIONS: dict[str, dict[str, Any]] = {
    "generate": {},
    "generate-options": {"template": "generic", "temperature": 0.0, "seed": 3, "retries": 2, "max_new_tokens": 64},
    "generate-prepair": {"prepair": True, "analysis_max_new_tokens": 32},
    "logprob": {"mode": "logprob"},
    "logprob-calibrate": {"mode": "logprob", "calibrate": True},
    "logprob-prepair": {"mode": "logprob", "prepair": True},
    "logprob-prepair-calibrate": {"mode": "logprob", "prepair": True, "calibrate": True},
    "loglik": {"mode": "loglik"},
}

PINNED: dict[str, Any] = {
    "generate": ("72dbba6f21fda29d", "dadcfbb2835e4b86"),
    "generate-options": ("e01363c719e9368a", "99b7183a7de787d0"),
    "generate-prepair": ("52d5dcae307caa33", "fd9c16d9710a6cba"),
    "logprob": ("fc9eb05dda9b549c", "fe5734e0e3f5f208"),
    "logprob-calibrate": ("0f8dfd21e764e40a", "f832cb287d629384"),
    "logprob-prepair": ("df380285ab3d8bac", "b23859a6d7064876"),
    # Rows changed once, on purpose, when calibration became a wrapper (judgments did not): the raw
    # judgments it stores now carry the PREPAIR analyses they paid for in their usage, exactly as
    # the uncalibrated judge stores them (a cached judgment's usage is never counted again).
    "logprob-prepair-calibrate": ("c2fb1c059c8da7c9", "be486b9685872f6c"),
    "loglik": ("b325d8dc4876cd07", "600e58aa53b9ffd0"),
    "hf+openai": "b58051c10c5e7930",
}


@pytest.mark.parametrize("name", list(CONFIGURATIONS))
def test_each_llm_judge_configuration_is_what_it_was(name):
    seen = observed(LLMJudge(engine(), **CONFIGURATIONS[name]))
    rows = seen.pop("rows")
    assert (digest(seen), digest(rows)) == PINNED[name]


def test_hf_and_openai_fingerprints_are_what_they_were():
    from rankkit.judges.hf_engine import HFEngine

    hf_judge = LLMJudge(HFEngine(None, None, {"name": "m", "dtype": "bfloat16", "weights": "abc"}), mode="logprob")
    openai_judge = make_judge("openai:some/model,base_url=http://127.0.0.1:9/v1,mode=logprob,calibrate=true")
    assert digest([hf_judge.fingerprint, openai_judge.fingerprint,
                   openai_judge.raw_fingerprint]) == PINNED["hf+openai"]


def test_the_exact_hf_engine_has_its_own_fingerprint():
    """Exact mode (issue: batch-invariant hf judging) changes what a judgment is in its last bits,
    so its identity adds ``"exact": true, "block": 512`` and its judgments are cached apart. This
    is a new pin, not a re-pin: the batched engine's fingerprint (``hf+openai`` above) is
    unchanged, so judgments cached by batched runs are still found under ``exact=false``. It is
    the default ``smollm2`` (and ``hf:`` on a CPU) fingerprint that changed, because exact mode
    became their default."""
    from rankkit.judges.hf_engine import HFEngine

    identity = {"name": "m", "dtype": "bfloat16", "weights": "abc"}
    exact = LLMJudge(HFEngine(None, None, identity, exact=True), mode="logprob")
    batched = LLMJudge(HFEngine(None, None, identity), mode="logprob")
    assert exact.fingerprint != batched.fingerprint
    assert digest(exact.fingerprint) == "64adc67eec398b3b"


@pytest.mark.parametrize("prepair", [False, True])
def test_the_calibration_wrapper_is_the_calibrate_option(prepair):
    from rankkit.judges.llm import CalibratedJudge

    option = LLMJudge(engine(), mode="logprob", prepair=prepair, calibrate=True)
    wrapper = CalibratedJudge(LLMJudge(engine(), mode="logprob", prepair=prepair))
    assert wrapper.fingerprint == option.fingerprint and wrapper.raw_fingerprint == option.raw_fingerprint
    assert wrapper.description == option.description
    assert observed(wrapper) == observed(option)


def test_the_calibration_wrapper_needs_logprob_mode():
    from rankkit.judges.llm import CalibratedJudge
    from rankkit.specs import SpecError

    with pytest.raises(SpecError, match="mode=logprob"):
        CalibratedJudge(LLMJudge(engine(), mode="generate"))
