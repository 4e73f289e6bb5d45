"""Conversations: a task's prompt or a candidate's answer as chat messages (``docs/conversations.md``).

A prompt is a string or a :data:`Conversation` ending with a ``user`` message (an optional leading
``system``, then alternating ``user``/``assistant``); a candidate's text is a string or a
multi-turn continuation that starts and ends with ``assistant`` and alternates. Read from files as
lists of ``{"role": ..., "content": ...}`` objects (a table cell holds the list JSON-encoded).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rankkit.errors import TaskFormatError

SYSTEM, USER, ASSISTANT = "system", "user", "assistant"
ROLES = (SYSTEM, USER, ASSISTANT)


@dataclass(frozen=True)
class Message:
    """One chat message: who speaks (:data:`ROLES`) and what they say."""

    role: str
    content: str


#: A conversation: its messages in order.
Conversation = tuple[Message, ...]


def _messages(path: str | Path, line: int | None, field_name: str, value: list) -> Conversation:
    """``value`` as messages: each an object with a known ``role`` and a string ``content``."""
    if not value:
        raise TaskFormatError(path, line, field_name, "empty conversation: give at least one message")
    messages = []
    for index, item in enumerate(value):
        where = f"{field_name}[{index}]"
        if not isinstance(item, dict):
            raise TaskFormatError(path, line, where, f"expected a message object, got {type(item).__name__}")
        extra = sorted(set(item) - {"role", "content"})
        if extra:
            raise TaskFormatError(path, line, f"{where}.{extra[0]}", "unknown message field (known: role, content)")
        role, content = item.get("role"), item.get("content")
        if role not in ROLES:
            raise TaskFormatError(path, line, f"{where}.role", f"expected one of {', '.join(ROLES)}, got {role!r:.40}")
        if not isinstance(content, str):
            raise TaskFormatError(path, line, f"{where}.content", f"expected a string, got {type(content).__name__}")
        if not content.strip():
            raise TaskFormatError(path, line, f"{where}.content", "empty message")
        messages.append(Message(role, content))
    return tuple(messages)


def _check_turns(path: str | Path, line: int | None, field_name: str, roles: Sequence[str], first: str) -> None:
    """Roles alternate user/assistant from ``first`` on; the first mismatch is named."""
    other = {USER: ASSISTANT, ASSISTANT: USER}
    expected = first
    for index, role in enumerate(roles):
        if role != expected:
            raise TaskFormatError(
                path, line, f"{field_name}[{index}].role", f"expected {expected!r} (turns alternate), got {role!r}"
            )
        expected = other[expected]


def read_prompt(path: str | Path, line: int | None, field_name: str, value: Any) -> str | Conversation:
    """A task's prompt: a string as it is, or a message list as a :data:`Conversation` ending with ``user``.

    Raises
    ------
    TaskFormatError
        Naming the file, line and field: a bad role, turns that do not alternate, a system message
        that is not first, non-string content, an empty conversation.
    """
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise TaskFormatError(path, line, field_name, f"expected a string or a list of messages, got {_kind(value)}")
    messages = _messages(path, line, field_name, value)
    start = 1 if messages[0].role == SYSTEM else 0
    _check_turns(path, line, field_name, [m.role for m in messages[start:]], USER)
    if start == len(messages) or messages[-1].role != USER:
        where = f"{field_name}[{len(messages) - 1}].role"
        raise TaskFormatError(path, line, where, "a prompt conversation must end with a 'user' message")
    return messages


def read_answer(path: str | Path, line: int | None, field_name: str, value: Any) -> str | Conversation:
    """A candidate's text: a string, or a message list starting and ending with ``assistant`` (a continuation)."""
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise TaskFormatError(path, line, field_name, f"expected a string or a list of messages, got {_kind(value)}")
    messages = _messages(path, line, field_name, value)
    _check_turns(path, line, field_name, [m.role for m in messages], ASSISTANT)
    if messages[-1].role != ASSISTANT:
        where = f"{field_name}[{len(messages) - 1}].role"
        raise TaskFormatError(path, line, where, "a multi-turn answer must end with an 'assistant' message")
    return messages


def read_checklist(path: str | Path, line: int | None, value: Any) -> tuple[str, ...]:
    """A task's ``checklist``: a list of non-empty strings (None or absent: no checklist)."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise TaskFormatError(path, line, "checklist", f"expected a list of strings, got {_kind(value)}")
    for index, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            raise TaskFormatError(path, line, f"checklist[{index}]", f"expected a non-empty string, got {_kind(item)}")
    return tuple(value)


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def decode_cell(value: Any) -> Any:
    """A table cell as a task field: a JSON array in text (a CSV cell) as the list it encodes.

    A cell whose text starts with ``[`` and parses as a JSON array is a message list (or a
    checklist); any other value is returned as it is, so plain prompts are unchanged.
    """
    if isinstance(value, str) and value.lstrip().startswith("["):
        try:
            decoded = json.loads(value)
        except ValueError:
            return value
        if isinstance(decoded, list):
            return decoded
    return value


def encode_cell(value: str | Conversation | Sequence[str] | None) -> Any:
    """The inverse of :func:`decode_cell` for writing a table: a conversation or checklist as JSON text."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(as_json(value), ensure_ascii=False)


def as_json(value: str | Conversation | Sequence[str]) -> Any:
    """A prompt, answer or checklist as JSON-ready data: a string stays a string, messages become role/content objects."""
    if isinstance(value, str):
        return value
    return [{"role": m.role, "content": m.content} if isinstance(m, Message) else m for m in value]


def is_conversation(value: str | Conversation) -> bool:
    return not isinstance(value, str)


def plain_text(value: str | Conversation) -> str:
    """All the text: a string itself, a conversation's contents joined by blank lines (length, style, token estimates)."""
    return value if isinstance(value, str) else "\n\n".join(m.content for m in value)


def contents(value: str | Conversation) -> list[str]:
    """The texts a value is made of: a string alone, or each message's content in order."""
    return [value] if isinstance(value, str) else [m.content for m in value]


def transcript(value: str | Conversation) -> str:
    """A conversation as text for reading (reports): ``[role]`` then the content, turn after turn; a string itself."""
    return value if isinstance(value, str) else "\n\n".join(f"[{m.role}]\n{m.content}" for m in value)


def final_text(value: str | Conversation) -> str:
    """The last message's content (the final answer of a continuation, the final question of a prompt)."""
    return value if isinstance(value, str) else value[-1].content


def map_contents(value: str | Conversation, rewrite: Any) -> str | Conversation:
    """``rewrite`` (text -> text) applied to a string or to every message's content."""
    if isinstance(value, str):
        return rewrite(value)
    return tuple(Message(m.role, rewrite(m.content)) for m in value)
