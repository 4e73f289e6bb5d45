"""Reading an OpenAI-compatible server's chat completions: reply text, usage, first-token log-probabilities.

Pure functions of a response's JSON; a wrong shape raises
:class:`~rankkit.judges.hosted.http_retry.BadResponse` (retried), a server without log-probabilities
:class:`LogprobsUnavailable`. :class:`~rankkit.judges.hosted.openai_compat.OpenAIRuntime` sends the requests.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from rankkit.judges.base import JudgeError
from rankkit.judges.hosted.http_retry import BadResponse


class LogprobsUnavailable(JudgeError):
    """``logprob`` mode cannot work on this server (no logprobs, no continuation): exit 2; use ``mode=generate``."""

    exit_code = 2
    resumable = False


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def first_choice(payload: dict[str, Any]) -> dict[str, Any]:
    """``choices[0]`` of a chat completion; :class:`BadResponse` when missing or not an object."""
    choices = payload.get("choices")
    if not isinstance(choices, list) or not choices:
        raise BadResponse(f"has no choices list (choices is {_kind(choices)})")
    if not isinstance(choices[0], dict):
        raise BadResponse(f"choices[0] is {_kind(choices[0])}, not an object")
    return choices[0]


def read_reply(payload: dict[str, Any]) -> tuple[str, dict[str, int]]:
    """The reply text and token usage of a chat completion.

    Null ``content`` is an empty reply; a missing or mistyped ``message``/``content`` is a :class:`BadResponse`.
    """
    message = first_choice(payload).get("message")
    if not isinstance(message, dict):
        raise BadResponse(f"choices[0].message is {_kind(message)}, not an object")
    if "content" not in message:
        raise BadResponse("choices[0].message has no content")
    content = message["content"]
    if content is not None and not isinstance(content, str):
        raise BadResponse(f"choices[0].message.content is {_kind(content)}, not a string")
    return content or "", usage_of(payload)


def usage_of(payload: dict[str, Any], retries: int = 0) -> dict[str, int]:
    """The token counts the server reported (invalid ones left out), plus ``retries`` when nonzero."""
    usage: dict[str, int] = {}
    reported = payload.get("usage") or {}
    for key in ("prompt_tokens", "completion_tokens"):
        value = reported.get(key) if isinstance(reported, dict) else None
        if isinstance(value, int) and not isinstance(value, bool):
            usage[key] = value
    details = reported.get("prompt_tokens_details") if isinstance(reported, dict) else None
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    if isinstance(cached, int) and not isinstance(cached, bool) and cached > 0:
        usage["cached_tokens"] = cached  # OpenAI's prompt caching: billed at the cached-input price
    if retries:
        usage["retries"] = retries
    return usage


def prefill_fields(conversation: list[dict[str, str]], assistant_prefix: str, switches: bool = True) -> dict[str, Any]:
    """Request fields making the reply continue ``assistant_prefix``: a final unfinished assistant message.

    With ``switches``, adds vLLM's ``continue_final_message: true`` and ``add_generation_prompt: false``
    (SGLang takes them; llama-server continues without them). Servers that ignore them read a fresh reply.
    """
    fields: dict[str, Any] = {"messages": [*conversation, {"role": "assistant", "content": assistant_prefix}]}
    if switches:
        fields.update(continue_final_message=True, add_generation_prompt=False)
    return fields


def _logprob(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadResponse(f"{where} is {_kind(value)}, not a number")
    return float(value)


def first_token_alternatives(payload: dict[str, Any], where: str = "the server") -> dict[str, float]:
    """``{token: logprob}`` of the first generated token's alternatives.

    Raises :class:`LogprobsUnavailable` when there are none, :class:`BadResponse` on a wrong shape;
    ``where`` names the request in messages.
    """
    logprobs = first_choice(payload).get("logprobs")
    if logprobs is not None and not isinstance(logprobs, dict):
        raise BadResponse(f"choices[0].logprobs is {_kind(logprobs)}, not an object")
    content = (logprobs or {}).get("content") or []
    if not isinstance(content, list):
        raise BadResponse(f"choices[0].logprobs.content is {_kind(content)}, not a list")
    first = content[0] if content else {}
    if not isinstance(first, dict):
        raise BadResponse(f"choices[0].logprobs.content[0] is {_kind(first)}, not an object")
    top = first.get("top_logprobs") or []
    if not isinstance(top, list):
        raise BadResponse(f"top_logprobs is {_kind(top)}, not a list")
    alternatives: dict[str, float] = {}
    for item in top:
        if not isinstance(item, dict):
            raise BadResponse(f"a top_logprobs entry is {_kind(item)}, not an object")
        if isinstance(item.get("token"), str) and item.get("logprob") is not None:
            alternatives[item["token"]] = _logprob(item["logprob"], "a top_logprobs logprob")
    if not alternatives and isinstance(first.get("token"), str) and first.get("logprob") is not None:
        alternatives = {first["token"]: _logprob(first["logprob"], "the first token's logprob")}
    if not alternatives:
        raise LogprobsUnavailable(
            f"{where} returned no logprobs/top_logprobs for a chat completion, so mode=logprob cannot "
            f"work against it; use mode=generate (vLLM, llama.cpp's server and OpenAI return them)"
        )
    return alternatives


def choice_logprobs(alternatives: dict[str, float], choices: Sequence[str]) -> dict[str, float]:
    """Each choice's log-probability among first-token ``alternatives``.

    Tokens compare stripped; tokens spelling the same choice add up; a choice none spells gets ``-inf``.
    """
    out: dict[str, float] = {}
    for choice in choices:
        matching = [lp for token, lp in alternatives.items() if token.strip() == choice.strip()]
        if not matching:
            out[choice] = float("-inf")
            continue
        top = max(matching)
        out[choice] = top + math.log(sum(math.exp(lp - top) for lp in matching))
    return out


def model_owner(listing: Any, model: str) -> str | None:
    """``owned_by`` of ``model`` (else of the first model) in a ``/models`` listing, or None.

    Examples
    --------
    >>> model_owner({"data": [{"id": "m", "owned_by": "vllm"}]}, "m")
    'vllm'
    """
    entries = listing.get("data") if isinstance(listing, dict) else None
    if not isinstance(entries, list) or not entries:
        return None
    entry = next((e for e in entries if isinstance(e, dict) and e.get("id") == model), entries[0])
    owner = entry.get("owned_by") if isinstance(entry, dict) else None
    return owner if isinstance(owner, str) else None
