"""Reading a verdict from a hosted API that will not continue an assistant prefix.

A follow-up turn asks for the value completing the verdict line, read from ``top_logprobs`` or
constrained by structured outputs. More in ``docs/hosted-judges.md``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

#: Separates the judge's explanation from the verdict line rankkit writes after it
#: (:func:`rankkit.judges.llm.modes.verdict_prefix`, and the k-way readers).
EXPLANATION_SEPARATOR = "\n\n"
#: The placeholder the follow-up question asks the judge to replace.
BLANK = "?"

_REFUSAL_PATTERNS = [
    re.compile(pattern)
    for pattern in (
        r"Unrecognized request arguments? supplied:\s*'?([A-Za-z_][\w]*)",  # OpenAI
        r"Unsupported parameter:\s*'([A-Za-z_]\w*)'",  # OpenAI, reasoning models
        r"Unsupported value:\s*'([A-Za-z_]\w*)'",  # OpenAI (e.g. temperature)
        r"Unknown name \"([A-Za-z_]\w*)\"",  # Google's OpenAI endpoint
        r"property '([A-Za-z_]\w*)' is unsupported",  # Groq
        r"([A-Za-z_]\w*): Extra inputs are not permitted",  # pydantic-based servers, Anthropic
        r"'([A-Za-z_]\w*)' is not supported",  # DeepSeek, Together
    )
]

#: Hosts of hosted APIs: none takes vLLM's ``continue_final_message``/``add_generation_prompt``,
#: so they are never sent there (a strict one refuses the whole request).
HOSTED_API_HOSTS = (
    "api.openai.com",
    "generativelanguage.googleapis.com",
    "openrouter.ai",
    "api.together.xyz",
    "api.groq.com",
    "api.deepseek.com",
    "api.mistral.ai",
    "api.fireworks.ai",
    "openai.azure.com",
    "api.anthropic.com",
    "api.x.ai",
)


def refused_field(text: str) -> str | None:
    """The request field a server's error text (JSON error object or plain) says it refuses, or None.

    Examples
    --------
    >>> refused_field('{"error": {"message": "Unrecognized request argument supplied: add_generation_prompt"}}')
    'add_generation_prompt'
    >>> refused_field("Unsupported parameter: 'max_tokens' is not supported with this model.")
    'max_tokens'
    >>> refused_field("model not found") is None
    True
    """
    for pattern in _REFUSAL_PATTERNS:
        match = pattern.search(text)
        if match:
            return match.group(1)
    try:
        error = json.loads(text).get("error")
    except (ValueError, AttributeError):
        return None
    param = error.get("param") if isinstance(error, dict) else None
    return param if isinstance(param, str) and param.isidentifier() else None


def known_hosted(base_url: str) -> bool:
    """Whether ``base_url`` is a hosted API that never continues an assistant prefix on request.

    Examples
    --------
    >>> known_hosted("https://api.openai.com/v1"), known_hosted("https://x.openai.azure.com/openai")
    (True, True)
    >>> known_hosted("http://127.0.0.1:8000/v1")
    False
    """
    host = (urlsplit(base_url).hostname or "").lower()
    return any(host == known or host.endswith("." + known) for known in HOSTED_API_HOSTS)


def split_prefix(assistant_prefix: str) -> tuple[str, str]:
    """``(explanation, verdict line)`` of a forced reply prefix, split at the last blank line, stripped.

    Examples
    --------
    >>> split_prefix("It is right.\\n\\nSo.\\n\\nFinal verdict: Answer 1: ")
    ('It is right.\\n\\nSo.', 'Final verdict: Answer 1:')
    >>> split_prefix("Score: ")
    ('', 'Score:')
    """
    explanation, separator, line = assistant_prefix.rpartition(EXPLANATION_SEPARATOR)
    return explanation.rstrip(), line.strip()


def followup_question(verdict_line: str, choices: Sequence[str]) -> str:
    """The user turn asking for the one value (among ``choices``) completing ``verdict_line``.

    Examples
    --------
    >>> followup_question("Final verdict: Answer 1:", ["0", "1", "2"])
    'Finish this line of your verdict: "Final verdict: Answer 1: ?". Reply with only what replaces "?" (one of 0, 1, 2), nothing else.'
    """
    options = ", ".join(choice.strip() for choice in choices)
    return (
        f'Finish this line of your verdict: "{verdict_line} {BLANK}". Reply with only what replaces '
        f'"{BLANK}" (one of {options}), nothing else.'
    )


def followup_conversation(
    conversation: Sequence[dict[str, str]], assistant_prefix: str, choices: Sequence[str]
) -> list[dict[str, str]]:
    """``conversation``, the explanation as an assistant turn, then :func:`followup_question` as a user turn."""
    explanation, line = split_prefix(assistant_prefix)
    messages = list(conversation)
    if explanation:
        messages.append({"role": "assistant", "content": explanation})
    messages.append({"role": "user", "content": followup_question(line, choices)})
    return messages


#: The field of the structured reply (:func:`enum_response_format`).
ENUM_FIELD = "value"


def enum_response_format(choices: Sequence[str]) -> dict[str, Any]:
    """OpenAI's ``response_format`` for a reply that is one of ``choices`` (a JSON object with one ``enum`` field)."""
    return {
        "type": "json_schema",
        "json_schema": {
            "name": "verdict",
            "strict": True,
            "schema": {
                "type": "object",
                "additionalProperties": False,
                "required": [ENUM_FIELD],
                "properties": {ENUM_FIELD: {"type": "string", "enum": [c.strip() for c in choices]}},
            },
        },
    }


def one_hot(chosen: str | None, choices: Sequence[str]) -> dict[str, float]:
    """Log-probabilities of a sampled choice: 0 for ``chosen``, ``-inf`` for the others (all when None).

    Examples
    --------
    >>> one_hot("2", ["1", "2"])
    {'1': -inf, '2': 0.0}
    """
    wanted = None if chosen is None else chosen.strip()
    return {choice: 0.0 if choice.strip() == wanted else float("-inf") for choice in choices}


def read_enum_reply(text: str) -> str | None:
    """The value of a structured reply (:func:`enum_response_format`), or None when it is not one.

    Examples
    --------
    >>> read_enum_reply('{"value": "7"}'), read_enum_reply("7")
    ('7', None)
    """
    try:
        value = json.loads(text).get(ENUM_FIELD)
    except (ValueError, AttributeError):
        return None
    return value if isinstance(value, str) else None
