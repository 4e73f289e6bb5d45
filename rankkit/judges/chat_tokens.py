"""Conversations to token ids, shared by the runtimes that tokenize locally (``hf:``, ``vllm:``).

Both runtimes render a conversation with the model's chat template up to where the assistant's
reply starts (:func:`chat_text`), append the forced reply prefix and tokenize the result
(:func:`encode_chat`) so that only the chat template's own special tokens are special: a
special-token string inside a message (a candidate's ``<|im_end|>``) or the appended text stays
text. :func:`choice_token_ids` finds the token each choice is read from, and
:func:`answer_tokens` which tokens of a prompt are the answer whose log-likelihood ``loglik`` mode
reads. Sharing these is what makes ``hf:`` and ``vllm:`` judge the same token sequences. Nothing
here imports torch or transformers: the functions take a loaded tokenizer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from rankkit.judges.base import JudgeError
from rankkit.judges.hf_batching import common_prefix_length
from rankkit.judges.llm_runtime import Conversation


def chat_text(tokenizer: Any, conversation: Conversation) -> str:
    """The prompt text up to where the assistant's reply starts, via the chat template.

    Parameters
    ----------
    tokenizer: a transformers tokenizer (its ``chat_template`` may be empty).
    conversation: chat messages.

    Returns
    -------
    The rendered text; a base model without a chat template gets plain turns, each followed by
    a blank line.

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
    """Token ids of trusted ``text`` (a rendered chat template: its special-token strings become
    special tokens). Chat templates already contain their special tokens (e.g. BOS), so none are
    added again. Text that may hold untrusted pieces goes through :func:`encode_text` or
    :func:`encode_chat` instead.

    Parameters
    ----------
    tokenizer : Any
        The model's tokenizer.
    text : str
        Trusted text.

    Returns
    -------
    list[int]
        The token ids.
    """
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def special_texts(tokenizer: Any) -> tuple[str, ...]:
    """Every string the tokenizer turns into one of its special tokens, longest first (empty for
    a tokenizer without any).

    Parameters
    ----------
    tokenizer : Any
        The model's tokenizer.

    Returns
    -------
    tuple[str, ...]
        The strings, longest first.
    """
    texts = {
        token.content
        for token in (getattr(tokenizer, "added_tokens_decoder", None) or {}).values()
        if getattr(token, "special", False) and token.content
    }
    texts.update(getattr(tokenizer, "all_special_tokens", None) or ())
    return tuple(sorted(texts, key=lambda t: (-len(t), t)))


def special_token_pattern(tokenizer: Any) -> re.Pattern | None:
    """A pattern matching every string of :func:`special_texts` (longest first), or None when
    the tokenizer has no special tokens.

    Parameters
    ----------
    tokenizer : Any
        The model's tokenizer.

    Returns
    -------
    re.Pattern | None
        The compiled pattern, or None.
    """
    texts = special_texts(tokenizer)
    return re.compile("|".join(map(re.escape, texts))) if texts else None


def encode_text(tokenizer: Any, text: str) -> list[int]:
    """Token ids of ``text`` as plain text: a special-token string in it stays text (split into
    ordinary tokens). Text without one gets exactly the ids of :func:`encode`.

    Parameters
    ----------
    tokenizer : Any
        The model's tokenizer.
    text : str
        Text that may hold untrusted pieces.

    Returns
    -------
    list[int]
        The token ids.
    """
    pattern = special_token_pattern(tokenizer)
    if pattern is None or not pattern.search(text):
        return encode(tokenizer, text)
    return list(tokenizer(text, add_special_tokens=False, split_special_tokens=True)["input_ids"])


_SENTINEL = re.compile("\ue000([0-9]+)\ue001")  # private-use characters no chat template emits


def message_spans(tokenizer: Any, conversation: Conversation, text: str) -> list[tuple[int, int]] | None:
    """Where each message's content sits in ``text`` (:func:`chat_text` of ``conversation``), as
    ``(start, end)`` character ranges in message order; None when the template's layout cannot
    be told apart from the messages.

    The template is rendered once more with a sentinel in place of each message (its skeleton);
    the text between the sentinels is the template's own, and each message must appear between
    those pieces as given or trimmed (Llama 3's and Gemma's templates trim it).

    Parameters
    ----------
    tokenizer : Any
        The model's tokenizer (its chat template).
    conversation : Conversation
        The chat conversation.
    text : str
        The rendered prompt text of ``conversation``.

    Returns
    -------
    list[tuple[int, int]] | None
        ``(start, end)`` per message, or None.

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


def encode_chat(tokenizer: Any, conversation: Conversation, continuation: str = "") -> list[int]:
    """Token ids of a conversation's prompt (:func:`chat_text`) followed by ``continuation`` (a
    forced reply prefix, an answer), where only the chat template's own special-token strings
    become special tokens: one inside a message or in ``continuation`` stays text.

    When no special-token string touches a message or the continuation (every normal prompt),
    the ids are exactly those of :func:`encode` on the whole text, so judgments and their cache
    keys do not change. Otherwise the text is cut at the template's own special tokens and each
    piece between them is tokenized with special tokens split (``split_special_tokens``), as the
    tokenizer cuts at special tokens itself.

    Parameters
    ----------
    tokenizer: a transformers tokenizer.
    conversation: chat messages; their contents are treated as text.
    continuation: text appended after the rendered prompt, also treated as text.

    Returns
    -------
    The token ids.

    Raises
    ------
    JudgeError
        A message holds a special-token string and the chat template's layout cannot be located
        (it drops, repeats or rewrites message contents), so the template's own special tokens
        cannot be told from the message's.
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
    """Whether a special-token string (at most ``widest`` characters) overlaps ``text[start:end]``,
    one straddling its edge included."""
    position, stop = max(0, start - widest), min(len(text), end + widest)
    while (match := pattern.search(text, position, stop)) is not None:
        if match.start() < end and match.end() > start:
            return True
        position = match.start() + 1
    return False


def _encode_split(tokenizer: Any, pattern: re.Pattern, text: str, spans: Sequence[tuple[int, int]]) -> list[int]:
    """``text`` cut at the special-token strings that lie wholly outside ``spans`` (the template's
    own): those become their special ids, everything between is tokenized as plain text."""
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
    """The prefix to append and the token id of each choice right after it.

    Usually ``encode(prefix + choice)`` is ``encode(prefix)`` plus one token. Tokenizers that
    glue a space to the following digit (``" 1"``) instead tokenize ``"Answer "`` with a lone
    trailing space; then the prefix is used without its trailing space and each choice is read
    as the space-glued token.

    Parameters
    ----------
    tokenizer: a transformers tokenizer.
    assistant_prefix: the text the reply is forced to start with.
    choices: the texts whose first tokens are read; they must start with distinct tokens.
    backend: names the judge in the error message.

    Returns
    -------
    ``(prefix, ids)``: the prefix to append (``assistant_prefix``, or it without its trailing
    whitespace) and one token id per choice.

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
    tokenizer: Any, conversations: Sequence[Conversation], answers: Sequence[str], backend: str = "hf"
) -> tuple[list[list[int]], list[int]]:
    """Each answer appended to its conversation as the assistant's reply, as token ids, and how
    many of the last ids are the answer's (``loglik`` mode averages their log-probabilities).

    The answer's tokens are those after the longest common prefix of the prompt's tokens and the
    prompt-plus-answer's (a tokenizer may merge the prompt's last characters with the answer's first).

    Parameters
    ----------
    tokenizer: a transformers tokenizer.
    conversations / answers: one answer per conversation.
    backend: names the judge in the error message.

    Returns
    -------
    ``(sequences, lengths)``: the prompt-plus-answer token ids of each, and its answer's token count.

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
