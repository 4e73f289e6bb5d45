"""Conversations to token ids, shared by the runtimes that tokenize locally (``hf:``, ``vllm:``).

Only the chat template's own special tokens are special: a special-token string inside a message
(a candidate's ``<|im_end|>``) or an appended prefix stays text. Sharing these functions makes
``hf:`` and ``vllm:`` judge the same token sequences. Nothing here imports torch or transformers.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from rankkit.judges.base import JudgeError
from rankkit.judges.llm.runtime import Chat
from rankkit.judges.local.hf_batching import common_prefix_length


def chat_text(tokenizer: Any, conversation: Chat) -> str:
    """The prompt text up to where the assistant's reply starts, via the chat template.

    A base model without a chat template gets plain turns, each followed by a blank line.

    Examples
    --------
    >>> class Plain:  # a tokenizer without a chat template
    ...     chat_template = None
    >>> chat_text(Plain(), [{"role": "user", "content": "Hi"}])
    'Hi\\n\\n'
    """
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(conversation, tokenize=False, add_generation_prompt=True)
    return "".join(f"{m['content']}\n\n" for m in conversation)


def encode(tokenizer: Any, text: str) -> list[int]:
    """Token ids of trusted ``text`` (a rendered chat template): its special-token strings become special tokens.

    No special tokens are added (templates hold their own BOS). Untrusted text goes through
    :func:`encode_text` or :func:`encode_chat`.
    """
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def special_texts(tokenizer: Any) -> tuple[str, ...]:
    """Every string the tokenizer turns into one of its special tokens, longest first."""
    texts = {
        token.content
        for token in (getattr(tokenizer, "added_tokens_decoder", None) or {}).values()
        if getattr(token, "special", False) and token.content
    }
    texts.update(getattr(tokenizer, "all_special_tokens", None) or ())
    return tuple(sorted(texts, key=lambda t: (-len(t), t)))


def special_token_pattern(tokenizer: Any) -> re.Pattern | None:
    """A pattern matching every string of :func:`special_texts`, or None when there are none."""
    texts = special_texts(tokenizer)
    return re.compile("|".join(map(re.escape, texts))) if texts else None


def encode_text(tokenizer: Any, text: str) -> list[int]:
    """Token ids of ``text`` as plain text: a special-token string stays text; otherwise as :func:`encode`."""
    pattern = special_token_pattern(tokenizer)
    if pattern is None or not pattern.search(text):
        return encode(tokenizer, text)
    return list(tokenizer(text, add_special_tokens=False, split_special_tokens=True)["input_ids"])


_SENTINEL = re.compile("\ue000([0-9]+)\ue001")  # private-use characters no chat template emits


def message_spans(tokenizer: Any, conversation: Chat, text: str) -> list[tuple[int, int]] | None:
    """``(start, end)`` of each message's content in ``text`` (:func:`chat_text` of ``conversation``), or None.

    The template is rendered again with a sentinel per message; each message must appear between
    the template's own pieces as given or trimmed. None when the layout cannot be told apart.

    Examples
    --------
    >>> class Plain:  # a tokenizer without a chat template: each turn, then a blank line
    ...     chat_template = None
    >>> conversation = [{"role": "user", "content": "Hi"}, {"role": "user", "content": "there"}]
    >>> message_spans(Plain(), conversation, chat_text(Plain(), conversation))
    [(0, 2), (4, 9)]
    """
    marked = [{**message, "content": f"\ue000{index}\ue001"} for index, message in enumerate(conversation)]
    pieces = _SENTINEL.split(chat_text(tokenizer, marked))
    if [int(p) for p in pieces[1::2]] != list(range(len(conversation))):
        return None  # a message dropped, repeated or reordered by the template
    layout, contents = pieces[0::2], [m["content"] for m in conversation]
    if not text.startswith(layout[0]):
        return None
    spans, position = [], len(layout[0])
    for index, content in enumerate(contents):
        after, last = layout[index + 1], index == len(contents) - 1
        for shown in dict.fromkeys((content, content.strip())):
            end = position + len(shown)
            if text.startswith(shown, position) and (text[end:] == after if last else text.startswith(after, end)):
                spans.append((position, end))
                position = end + len(after)
                break
        else:
            return None
    return spans


def encode_chat(tokenizer: Any, conversation: Chat, continuation: str = "") -> list[int]:
    """Token ids of a conversation's prompt followed by ``continuation``; only the template's special tokens are special.

    When no special-token string touches a message or the continuation (every normal prompt), the ids
    equal :func:`encode` of the whole text, so cache keys do not change.

    Raises
    ------
    JudgeError
        A message holds a special-token string and the template's layout cannot be located.
    """
    prompt = chat_text(tokenizer, conversation)
    text = prompt + continuation
    pattern = special_token_pattern(tokenizer)
    if pattern is None:
        return encode(tokenizer, text)
    spans = message_spans(tokenizer, conversation, prompt)
    if spans is None:
        if any(pattern.search(m["content"]) for m in conversation) or pattern.search(continuation):
            raise JudgeError(
                "a message holds a special-token string and this chat template's layout cannot be "
                "located, so the template's own special tokens cannot be told from the message's"
            )
        return encode(tokenizer, text)
    if continuation:
        spans.append((len(prompt), len(text)))
    widest = len(special_texts(tokenizer)[0])
    if not any(_touches(pattern, text, start, end, widest) for start, end in spans):
        return encode(tokenizer, text)
    return _encode_split(tokenizer, pattern, text, spans)


def _touches(pattern: re.Pattern, text: str, start: int, end: int, widest: int) -> bool:
    """Whether a special-token string (at most ``widest`` characters) overlaps ``text[start:end]`` or its edges."""
    position, stop = max(0, start - widest), min(len(text), end + widest)
    while (match := pattern.search(text, position, stop)) is not None:
        if match.start() < end and match.end() > start:
            return True
        position = match.start() + 1
    return False


def _encode_split(tokenizer: Any, pattern: re.Pattern, text: str, spans: Sequence[tuple[int, int]]) -> list[int]:
    """``text`` cut at the special-token strings outside ``spans``; the pieces between are plain text."""
    structural, position = [], 0
    for start, end in [*spans, (len(text), len(text))]:
        structural.extend(pattern.finditer(text, position, start))
        position = max(position, end)
    ids: list[int] = []
    position = 0
    for match in structural:
        if match.start() > position:
            ids += tokenizer(text[position : match.start()], add_special_tokens=False, split_special_tokens=True)[
                "input_ids"
            ]
        ids.append(tokenizer.convert_tokens_to_ids(match.group(0)))
        position = match.end()
    if position < len(text):
        ids += tokenizer(text[position:], add_special_tokens=False, split_special_tokens=True)["input_ids"]
    return ids


def choice_token_ids(
    tokenizer: Any, assistant_prefix: str, choices: Sequence[str], backend: str = "hf"
) -> tuple[str, list[int]]:
    """``(prefix, ids)``: the prefix to append and the token id of each choice right after it.

    Tokenizers that glue a space to the next digit (``" 1"``) get the prefix without its trailing
    space, each choice read as the space-glued token. ``backend`` names the judge in errors.

    Raises
    ------
    JudgeError
        The choices do not start with distinct tokens after the prefix.
    """
    for prefix, glue in (
        (assistant_prefix, ""),
        (assistant_prefix.rstrip(), assistant_prefix[len(assistant_prefix.rstrip()) :]),
    ):
        base = encode_text(tokenizer, prefix) if prefix else []
        ids = []
        for choice in choices:
            full = encode_text(tokenizer, prefix + glue + choice)
            if full[: len(base)] != base or len(full) <= len(base):
                break
            ids.append(full[len(base)])
        else:
            if len(set(ids)) == len(ids):
                return prefix, ids
    raise JudgeError(
        f"{backend}: choices {list(choices)} after {assistant_prefix!r} do not start with "
        f"distinct tokens for this tokenizer"
    )


def answer_tokens(
    tokenizer: Any, conversations: Sequence[Chat], answers: Sequence[str], backend: str = "hf"
) -> tuple[list[list[int]], list[int]]:
    """``(sequences, lengths)``: each prompt plus its answer as token ids, and the answer's token count.

    The answer's tokens are those after the longest common prefix of the prompt's and the
    prompt-plus-answer's tokens (a tokenizer may merge across the boundary).

    Raises
    ------
    JudgeError
        An answer adds no token (an empty answer has no log-likelihood).
    """
    sequences, lengths = [], []
    for conversation, answer in zip(conversations, answers):
        prompt_ids, full_ids = encode_chat(tokenizer, conversation), encode_chat(tokenizer, conversation, answer)
        length = len(full_ids) - common_prefix_length(prompt_ids, full_ids)
        if length < 1:
            raise JudgeError(f"{backend}: an empty answer has no log-likelihood")
        sequences.append(full_ids)
        lengths.append(length)
    return sequences, lengths
