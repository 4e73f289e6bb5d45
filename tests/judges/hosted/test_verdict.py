"""Follow-up verdicts and refusals of hosted APIs (rankkit/judges/hosted/verdict.py)."""

from __future__ import annotations

import json

import pytest

from rankkit.judges.hosted.verdict import (
    enum_response_format,
    followup_conversation,
    known_hosted,
    one_hot,
    read_enum_reply,
    refused_field,
)


@pytest.mark.parametrize(
    "text, field",
    [
        (
            '{"error": {"message": "Unrecognized request argument supplied: continue_final_message", "param": null}}',
            "continue_final_message",
        ),
        (
            "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
            "max_tokens",
        ),
        ("Unsupported value: 'temperature' does not support 0 with this model.", "temperature"),
        (
            'Invalid JSON payload received. Unknown name "add_generation_prompt": Cannot find field.',
            "add_generation_prompt",
        ),
        ("property 'continue_final_message' is unsupported", "continue_final_message"),
        ("logprobs: Extra inputs are not permitted", "logprobs"),
        ('{"error": {"message": "bad value", "param": "top_logprobs"}}', "top_logprobs"),
        ("The model gpt-9 does not exist", None),
    ],
)
def test_the_refused_field_is_read_from_each_providers_message(text, field):
    assert refused_field(text) == field


def test_known_hosted_apis_are_told_by_host_only():
    assert known_hosted("https://api.openai.com/v1") and known_hosted("https://openrouter.ai/api/v1")
    assert not known_hosted("http://api.openai.com.example.org/v1") and not known_hosted("http://10.0.0.2:8000/v1")


def test_the_followup_puts_the_explanation_in_its_own_turn_and_asks_for_the_blank():
    conversation = [{"role": "user", "content": "Grade these."}]
    prefix = "Answer 1 is right.\n\nAnswer 2: wrong.\n\nFinal verdict: Answer 1: 7/9 Answer 2: "
    messages = followup_conversation(conversation, prefix, ["0", "1", "9"])
    assert messages[:2] == [conversation[0], {"role": "assistant", "content": "Answer 1 is right.\n\nAnswer 2: wrong."}]
    assert messages[2]["role"] == "user"
    assert (
        '"Final verdict: Answer 1: 7/9 Answer 2: ?"' in messages[2]["content"] and "0, 1, 9" in messages[2]["content"]
    )
    assert followup_conversation(conversation, "Score: ", ["0"])[1]["content"].startswith(
        'Finish this line of your verdict: "Score: ?"'
    )


def test_a_structured_reply_is_one_of_the_choices_and_read_one_hot():
    schema = enum_response_format(["1", "2"])["json_schema"]["schema"]
    assert schema["properties"]["value"]["enum"] == ["1", "2"] and schema["additionalProperties"] is False
    assert one_hot(read_enum_reply(json.dumps({"value": "2"})), ["1", "2"]) == {"1": float("-inf"), "2": 0.0}
    assert one_hot(read_enum_reply("not json"), ["1", "2"]) == {"1": float("-inf"), "2": float("-inf")}
