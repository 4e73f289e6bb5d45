"""Conversations to token ids, shared by the runtimes that tokenize locally (``hf:``, ``vllm:``).

Both runtimes render a conversation with the model's chat template up to where the assistant's
reply starts (:func:`chat_text`), append the forced reply prefix and tokenize the result without
adding special tokens again (:func:`encode`); :func:`choice_token_ids` finds the token each
choice is read from, and :func:`answer_tokens` which tokens of a prompt are the answer whose
log-likelihood ``loglik`` mode reads. Sharing these is what makes ``hf:`` and ``vllm:`` judge the same token
sequences. Nothing here imports torch or transformers: the functions take a loaded tokenizer.
"""

from __future__ import annotations

from typing import Any, Sequence

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

    >>> class Plain:  # a tokenizer without a chat template
    ...     chat_template = None
    >>> chat_text(Plain(), [{"role": "user", "content": "Hi"}])
    'Hi\\n\\n'
    """
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(conversation, tokenize=False, add_generation_prompt=True)
    return "".join(f"{m['content']}\n\n" for m in conversation)


def encode(tokenizer: Any, text: str) -> list[int]:
    """Token ids of ``text``. Chat templates already contain their special tokens (e.g. BOS), so
    none are added again."""
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def choice_token_ids(tokenizer: Any, assistant_prefix: str, choices: Sequence[str],
                     backend: str = "hf") -> tuple[str, list[int]]:
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
    for prefix, glue in ((assistant_prefix, ""),
                         (assistant_prefix.rstrip(), assistant_prefix[len(assistant_prefix.rstrip()):])):
        base = encode(tokenizer, prefix) if prefix else []
        ids = []
        for choice in choices:
            full = encode(tokenizer, prefix + glue + choice)
            if full[:len(base)] != base or len(full) <= len(base):
                break
            ids.append(full[len(base)])
        else:
            if len(set(ids)) == len(ids):
                return prefix, ids
    raise JudgeError(f"{backend}: choices {list(choices)} after {assistant_prefix!r} do not start with "
                     f"distinct tokens for this tokenizer")


def answer_tokens(tokenizer: Any, conversations: Sequence[Conversation], answers: Sequence[str],
                  backend: str = "hf") -> tuple[list[list[int]], list[int]]:
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
        prompt = chat_text(tokenizer, conversation)
        prompt_ids, full_ids = encode(tokenizer, prompt), encode(tokenizer, prompt + answer)
        length = len(full_ids) - common_prefix_length(prompt_ids, full_ids)
        if length < 1:
            raise JudgeError(f"{backend}: an empty answer has no log-likelihood")
        sequences.append(full_ids)
        lengths.append(length)
    return sequences, lengths
