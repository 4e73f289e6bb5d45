"""What a judge spec read from a file may choose: backends declare their trusted-only settings."""

from __future__ import annotations

import pytest

from rankkit.data.specs import SpecError
from rankkit.judges.trust import file_spec_risks


def test_local_judges_carry_no_risk():
    assert file_spec_risks("sim:preset=gpt4,seed=3") == []
    assert file_spec_risks("replay:judgments.jsonl,on_miss=tie") == []
    assert file_spec_risks("smollm2:mode=logprob") == []


def test_openai_names_each_trusted_only_option_and_the_network_backend():
    risks = file_spec_risks("openai:m,base_url=http://evil.example/v1,api_key_env=AWS_SECRET,concurrency=2")
    assert risks == [
        "base_url=http://evil.example/v1",
        "api_key_env=AWS_SECRET",
        "backend openai (sends every prompt over the network)",
    ]
    # Without base_url the backend still sends the data (to $OPENAI_BASE_URL or OpenAI's API).
    assert file_spec_risks("openai:gpt-4o") == ["backend openai (sends every prompt over the network)"]


def test_anthropic_is_a_network_backend_and_a_file_may_not_choose_where_batch_ids_are_written():
    risks = file_spec_risks(
        "anthropic:claude-sonnet-4-5,base_url=http://evil.example/v1,batch=true,"
        "batch_journal=/home/me/.bashrc,price_in=3"
    )
    assert risks == [
        "base_url=http://evil.example/v1",
        "batch_journal=/home/me/.bashrc",
        "backend anthropic (sends every prompt over the network)",
    ]
    assert file_spec_risks("openai:gpt-4.1,price_in=2,price_out=8,rpm=100") == [
        "backend openai (sends every prompt over the network)"
    ]  # prices and pacing are no risk of their own


def test_a_panel_is_checked_member_by_member():
    risks = file_spec_risks("panel:sim:preset=gpt4+openai:m;base_url=http://h/v1,threshold=0.5")
    assert risks == ["base_url=http://h/v1", "backend openai (sends every prompt over the network)"]
    assert file_spec_risks("panel:sim:preset=gpt4+sim:preset=falcon") == []


def test_an_unknown_backend_is_refused_as_building_it_would_be():
    with pytest.raises(SpecError, match="unknown judge"):
        file_spec_risks("nosuch:x")


@pytest.mark.parametrize("spec", ["hf:some-org/some-model", "hf:./my-model", "vllm:some-org/some-model"])
def test_a_backend_that_loads_the_model_it_names_is_a_risk(spec):
    # A file-chosen model is a file-chosen download (or a file-chosen directory to load code from).
    name = spec.split(":")[0]
    assert file_spec_risks(spec) == [f"backend {name} (loads the model it names, downloading it from a hub if needed)"]


def test_a_panel_member_that_loads_a_model_is_a_risk():
    assert file_spec_risks("panel:sim:preset=gpt4+hf:some-org/some-model") == [
        "backend hf (loads the model it names, downloading it from a hub if needed)"
    ]
