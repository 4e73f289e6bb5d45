"""Prompts against a local model's context: a prompt that does not fit stops its call before anything is judged.

A prompt past the context would be cut or misread silently, so local runtimes check each call
(:func:`check_fit`) and raise :class:`PromptTooLong` naming the setting that sets the limit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rankkit.judges.llm.runtime import PromptTooLong


def check_fit(
    sequences: Sequence[Sequence[int]], reserve: int, limit: int | None, what: str, decode: Callable[[list[int]], str]
) -> None:
    """Raise :class:`PromptTooLong` before any of a call runs when a prompt leaves no room for ``reserve`` tokens.

    Parameters
    ----------
    reserve
        Tokens each prompt needs beyond itself (the next token, or a reply).
    limit
        The model's context in tokens; None: unknown, nothing is checked.
    what
        The limit as the message names it, with how to change it (``max_model_len=4096; raise it: ...``).
    decode
        Token ids to text, so the error carries the prompt.
    """
    if limit is None:
        return
    for sequence in sequences:
        if len(sequence) + reserve > limit:
            raise PromptTooLong(
                f"a prompt of {len(sequence):,} tokens (+{reserve} to read or write) does not fit {what}",
                prompt=decode(list(sequence)),
            )


#: The config fields that hold a transformers model's context, in the order they are read.
CONTEXT_FIELDS = ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length")


def config_context(config: Any) -> tuple[int, str] | None:
    """``(tokens, field)``: a model's context from its config (object or ``config.json`` mapping); None if none.

    Examples
    --------
    >>> config_context({"max_position_embeddings": 8192})
    (8192, 'max_position_embeddings')
    >>> config_context({"hidden_size": 64}) is None
    True
    """
    for name in CONTEXT_FIELDS:
        value = config.get(name) if isinstance(config, Mapping) else getattr(config, name, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value, name
    return None
