"""Pins what every LLM judge configuration is to the cache: fingerprint, request keys, judgments, stored rows.

A refactoring of the LLM judges must leave all of it unchanged, or cached judgments would no
longer be found (a changed fingerprint or request key) or would differ from fresh ones (a changed
judgment). Each configuration judges the same requests on a scripted runtime with a recording
cache; the test compares three SHA-256 digests with the values recorded:

* ``keys``: the fingerprint and the request keys, exactly;
* ``judgments``: every verdict and grade as a run sees it;
* ``rows``: every row written to the cache (key, fingerprint, kind, payload).

The scripted runtime involves no torch and no BLAS, but the judges turn its log-probabilities into
grades and probabilities with ``math.exp`` (and the calibration with log-odds), whose last bit may
differ between C libraries and CPUs (FMA or not). So before hashing, every float in the judgments
and rows is rounded to ``SIGNIFICANT`` digits (:func:`canonical`): far coarser than such noise, far
finer than any change of a rule. Strings, integers, winners, statuses and keys are hashed as they are.

If a change *means* to change what a judgment is, bump the version in the fingerprint
(``PARSER_VERSION``, ``LOGPROB_RULE``...) and record new values: ``python -m
tests.judges.test_judge_identity`` prints every pin, ready to paste into ``PINNED``.
"""

from __future__ import annotations

import hashlib
import json
import math
import zlib
from typing import Any

import pytest

from rankkit.data.tasks import Candidate, Task
from rankkit.judges import make_judge
from rankkit.judges.llm.judge import LLMJudge
from rankkit.judgments.memo import JudgmentMemo
from tests.judges.llm.test_judge import ScriptedRuntime


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
    plain = Task(
        task_id="t1",
        prompt="Why is the sky blue?",
        criterion="points",
        scale=(0.0, 4.0),
        meta={"language": "en", "max_points": 4},
        candidates=tuple(
            Candidate(f"c{i}", text, human={"points": float(i)})
            for i, text in enumerate(("Rayleigh scattering.", "Because.", "Blue paint."))
        ),
    )
    reference = Task(
        task_id="t2",
        prompt="2+2?",
        reference="4",
        criterion="points",
        scale=(1.0, 10.0),
        candidates=(Candidate("a", "4"), Candidate("b", "5"), Candidate("c", "four")),
    )
    return [plain, reference]


def observed(judge: LLMJudge) -> dict[str, Any]:
    """Everything a run could see or store of this judge on the scripted requests."""
    cache = RecordingCache()
    memo = JudgmentMemo(judge, cache)
    points, pairs = [], []
    for task in tasks():
        a, b, c = task.candidates
        points.append((task, a))
        points.append((task, c))
        pairs.extend([(task, a, b), (task, b, a), (task, c, a)])
    out: dict[str, Any] = {
        "fingerprint": judge.fingerprint,
        "request_keys": [judge.request_key(*p) for p in pairs + points],
    }
    # Through the memo, as the match layer asks, so cache rows are what a run writes.
    out["pairs"] = [j.to_dict() for j, _ in memo.verdicts(pairs)]
    scored = memo.grades(points)
    out["points"] = [j.to_dict() for j, _ in scored]
    out["rows"] = sorted([key, *row] for key, row in cache.rows.items())
    return out


SIGNIFICANT = 9  # digits a computed float keeps in a digest


def canonical(value: Any) -> Any:
    """``value`` with every float rounded to SIGNIFICANT significant digits (NaN and infinities as text)."""
    if isinstance(value, float):
        if not math.isfinite(value):
            return repr(value)
        return float(f"{value:.{SIGNIFICANT}g}") + 0.0  # + 0.0: -0.0 and 0.0 hash alike
    if isinstance(value, dict):
        return {key: canonical(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [canonical(item) for item in value]
    return value


def digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode("utf-8")).hexdigest()[:16]


def pins(judge: LLMJudge) -> dict[str, str]:
    """The three digests of a configuration: keys exactly, judgments and rows with floats rounded."""
    seen = observed(judge)
    return {
        "keys": digest([seen["fingerprint"], seen["request_keys"]]),
        "judgments": digest(canonical([seen["pairs"], seen["points"]])),
        "rows": digest(canonical(seen["rows"])),
    }


def runtime() -> ScriptedRuntime:
    return ScriptedRuntime(reply=reply, logprobs=logprobs, loglik=loglik)


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

# The configurations' pins are to be recorded (``python -m tests.judges.test_judge_identity``)
# since their digests became three, with floats rounded. Checked before that change: on one
# machine the 0.1 code (fbcd9c3) and the current code observe the same fingerprints, request keys,
# cache keys and numbers for every configuration; only field names differ (first_score ->
# first_grade, second_score -> second_grade, score -> value). Earlier history: the rows of
# logprob-prepair-calibrate changed once, on purpose, when calibration became a wrapper (judgments
# did not): the raw judgments it stores carry the PREPAIR analyses they paid for in their usage,
# exactly as the uncalibrated judge stores them (a cached judgment's usage is never counted again).
# Recorded for 0.2: judgments' fields renamed (first_grade, second_grade, value) and cache kinds
# `verdict`/`grade`; fingerprints and request keys are those of 0.1.
PINNED: dict[str, Any] = {
    "generate": {"keys": "46655514b0540f08", "judgments": "687b6bfbee58d01c", "rows": "3585ed4deffde021"},
    "generate-options": {"keys": "789c2497e7869edc", "judgments": "77da5f245e9756a9", "rows": "92cb731e83a4148d"},
    "generate-prepair": {"keys": "710a5430d247236e", "judgments": "e26603ed6e2f16db", "rows": "08c52e48972fcabe"},
    "logprob": {"keys": "8dbf429060a78047", "judgments": "4f781a16af3adb35", "rows": "3f26571f234c8311"},
    "logprob-calibrate": {"keys": "865007531bf3bf2b", "judgments": "412d8eab6f7d9ae4", "rows": "049be565223275f9"},
    "logprob-prepair": {"keys": "d73ef7be6e10f593", "judgments": "09baf4529d63628f", "rows": "fe00611bc26c85ee"},
    "logprob-prepair-calibrate": {
        "keys": "5f16e25b28353e66",
        "judgments": "5cff2836e7427402",
        "rows": "0217aa0fd1a0843c",
    },
    "loglik": {"keys": "5f38f8bcb4a5a748", "judgments": "e326961887f6cf50", "rows": "5442dcbb818d6f65"},
    "hf+openai": "b58051c10c5e7930",
    "exact": "64adc67eec398b3b",
}


@pytest.mark.parametrize("name", list(CONFIGURATIONS))
def test_each_llm_judge_configuration_is_what_it_was(name):
    assert pins(LLMJudge(runtime(), **CONFIGURATIONS[name])) == PINNED[name], (
        "if the change is intended, record the new pins: python -m tests.judges.test_judge_identity"
    )


def hf_and_openai_fingerprints() -> str:
    """The digest of an hf judge's and a calibrated openai judge's fingerprints (no model loaded)."""
    from rankkit.judges.local.hf_runtime import HFRuntime

    hf_judge = LLMJudge(HFRuntime(None, None, {"name": "m", "dtype": "bfloat16", "weights": "abc"}), mode="logprob")
    openai_judge = make_judge("openai:some/model,base_url=http://127.0.0.1:9/v1,mode=logprob,calibrate=true")
    return digest([hf_judge.fingerprint, openai_judge.fingerprint, openai_judge.raw_fingerprint])


def exact_and_batched_hf_judges() -> tuple[LLMJudge, LLMJudge]:
    """An exact and a batched hf judge of the same (unloaded) model."""
    from rankkit.judges.local.hf_runtime import HFRuntime

    identity = {"name": "m", "dtype": "bfloat16", "weights": "abc"}
    return (
        LLMJudge(HFRuntime(None, None, identity, exact=True), mode="logprob"),
        LLMJudge(HFRuntime(None, None, identity), mode="logprob"),
    )


def test_hf_and_openai_fingerprints_are_what_they_were():
    assert hf_and_openai_fingerprints() == PINNED["hf+openai"]


def test_the_exact_hf_engine_has_its_own_fingerprint():
    """Exact mode (issue: batch-invariant hf judging) changes what a judgment is in its last bits,
    so its identity adds ``"exact": true, "block": 512`` and its judgments are cached apart. This
    is a new pin, not a re-pin: the batched runtime's fingerprint (``hf+openai`` above) is
    unchanged, so judgments cached by batched runs are still found under ``exact=false``. It is
    the default ``smollm2`` (and ``hf:`` on a CPU) fingerprint that changed, because exact mode
    became their default."""
    exact, batched = exact_and_batched_hf_judges()
    assert exact.fingerprint != batched.fingerprint
    assert digest(exact.fingerprint) == PINNED["exact"]


@pytest.mark.parametrize("prepair", [False, True])
def test_the_calibration_wrapper_is_the_calibrate_option(prepair):
    from rankkit.judges.llm.calibrated_judge import CalibratedJudge

    option = LLMJudge(runtime(), mode="logprob", prepair=prepair, calibrate=True)
    wrapper = CalibratedJudge(LLMJudge(runtime(), mode="logprob", prepair=prepair))
    assert wrapper.fingerprint == option.fingerprint and wrapper.raw_fingerprint == option.raw_fingerprint
    assert wrapper.description == option.description
    assert observed(wrapper) == observed(option)


def test_the_calibration_wrapper_needs_logprob_mode():
    from rankkit.data.specs import SpecError
    from rankkit.judges.llm.calibrated_judge import CalibratedJudge

    with pytest.raises(SpecError, match="mode=logprob"):
        CalibratedJudge(LLMJudge(runtime(), mode="generate"))


if __name__ == "__main__":  # print every pin, to paste into PINNED after an intended change
    print("PINNED: dict[str, Any] = {")
    for config, options in CONFIGURATIONS.items():
        print(f"    {config!r}: {pins(LLMJudge(runtime(), **options))!r},")
    print(f"    'hf+openai': {hf_and_openai_fingerprints()!r},")
    print(f"    'exact': {digest(exact_and_batched_hf_judges()[0].fingerprint)!r},")
    print("}")
