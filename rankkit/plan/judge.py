"""The judge of a dry run: an LLM judge with its real fingerprint and prompts, but no model loaded.

Nothing is loaded and nothing is called: :class:`PlanEngine` stands in for the model engine and
refuses any request.
"""

from __future__ import annotations

from typing import Any, Iterator

from rankkit.judges.base import Judge, JudgeError
from rankkit.judges.hf_loading import hub_revision


class PlanEngine:
    """An :class:`~rankkit.judges.llm.LLMEngine` with a model's identity and no model: enough for
    the judge's fingerprint and prompts; any request raises :class:`JudgeError`.

    context: the model's context in tokens and the setting that gives it, where known without
    loading the model (a dry run flags the tasks whose prompts would not fit); None: unknown.
    """

    def __init__(self, backend: str, identity: dict[str, Any], context: tuple[int, str] | None = None):
        self.backend = backend
        self._identity = identity
        self.context = context

    def identity(self) -> dict[str, Any]:
        return dict(self._identity)

    def _refuse(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        raise JudgeError("a dry-run judge has no model loaded")

    generate = next_token_logprobs = answer_logliks = _refuse

    def close(self) -> None:
        return None


def plan_judge(spec: str) -> Judge:
    """The judge of ``spec`` for a dry run: ``hf:``, ``smollm2`` and ``vllm:`` judges with their real
    fingerprint and prompts but no model loaded; panels of such members; any other judge as
    :func:`rankkit.judges.make_judge` builds it (they load nothing heavy: sim, replay, openai)."""
    from rankkit.judges import make_judge
    from rankkit.specs import convert_value, parse_spec

    parsed = parse_spec(spec)
    if parsed.name in ("hf", "smollm2"):
        return _llm_plan_judge(parsed)
    if parsed.name == "vllm":
        return _vllm_plan_judge(parsed)
    if parsed.name == "panel":
        from rankkit.judges.panel import PanelJudge, split_panel_spec

        members, options = split_panel_spec(spec)
        threshold = convert_value(options.get("threshold", "0.5"), float, where="panel: threshold")
        return PanelJudge([plan_judge(member) for member in members], threshold=threshold)
    return make_judge(parsed)


def _llm_plan_judge(spec: Any) -> Judge:
    """``hf:`` / ``smollm2`` read as :func:`rankkit.judges.hf.from_spec` and ``smollm2_from_spec``
    read them (same options, defaults and identity), minus loading the weights."""
    from rankkit.judges import hf
    from rankkit.judges.hf_loading import SMOLLM2_CONTEXT, smollm2_identity
    from rankkit.judges.llm import LLMJudge

    if spec.name == "smollm2":
        options, judge_kwargs = hf.smollm2_spec_parts(spec)
        identity = smollm2_identity(options.get("dtype", "bfloat16"))
        engine = PlanEngine("hf", hf.engine_identity(identity, options, smollm2=True),
                            context=(SMOLLM2_CONTEXT, "max_position_embeddings"))
        return LLMJudge(engine, **judge_kwargs)
    model_ref, gguf, options, judge_kwargs = hf.hf_spec_parts(spec, spec.name)
    identity = hf.model_identity(model_ref, gguf, options.get("dtype", "bfloat16"), hub_revision(model_ref))
    engine = PlanEngine("hf", hf.engine_identity(identity, options, smollm2=False), context=_local_context(model_ref))
    return LLMJudge(engine, **judge_kwargs)


def _local_context(model_ref: str) -> tuple[int, str] | None:
    """A local model directory's context, from its ``config.json`` (None for a hub id or a config
    that names none: the dry run then cannot check prompts against it)."""
    import json
    from pathlib import Path

    from rankkit.judges.context import config_context

    config = Path(model_ref).expanduser() / "config.json"
    try:
        return config_context(json.loads(config.read_text(encoding="utf-8")))
    except (OSError, ValueError, AttributeError):  # no directory, no config, not a JSON object
        return None


def _vllm_plan_judge(spec: Any) -> Judge:
    """``vllm:`` read as :func:`rankkit.judges.vllm.from_spec` reads it (same options, defaults and
    identity), minus starting vLLM (which need not be installed for a dry run)."""
    from rankkit.judges import vllm
    from rankkit.judges.llm import LLMJudge

    model_ref, options, judge_kwargs = vllm.vllm_spec_parts(spec)
    identity = vllm.model_identity(model_ref, options["dtype"])
    return LLMJudge(PlanEngine("vllm", identity, context=(options["max_model_len"], "max_model_len")), **judge_kwargs)
