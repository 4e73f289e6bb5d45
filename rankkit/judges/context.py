"""Prompts against a local model's context: a prompt that does not fit stops its batch before anything in it is judged.

A model judges only the tokens it can attend to: a prompt past its context is cut or misread,
silently. So every local runtime (``hf:``/``smollm2``: the config's ``max_position_embeddings``;
``vllm:``: ``max_model_len``) checks each prompt of a call before it computes anything
(:func:`check_fit`), and refuses the call with :class:`PromptTooLong` (exit 2: a rerun fails the
same way) naming the option or setting that sets the limit. The runtime sees conversations, not
tasks, so :class:`~rankkit.judges.llm.LLMJudge` names the task whose prompt it was.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rankkit.judges.llm_runtime import PromptTooLong


def check_fit(
    sequences: Sequence[Sequence[int]], reserve: int, limit: int | None, what: str, decode: Callable[[list[int]], str]
) -> None:
    """Refuse a call before any of it runs when one prompt leaves no room for ``reserve`` tokens.

    Parameters
    ----------
    sequences:
        The token ids of the call's prompts.
    reserve:
        Tokens each prompt needs beyond itself (to read the next token's probabilities, or to write
        a reply).
    limit:
        The model's context in tokens; None: unknown, nothing is checked.
    what:
        The limit as the message names it, with how to change it (``max_model_len=4096; raise it: ...``).
    decode:
        Token ids to text, so the error carries the prompt (its task is found from it).

    Raises
    ------
    PromptTooLong
        For the first prompt that does not fit.
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
    """A transformers model's context from its config (an object or a ``config.json`` mapping):
    ``(tokens, field)``, None when the config names none.

    Parameters
    ----------
    config : Any
        A model config object, or a ``config.json`` mapping.

    Returns
    -------
    tuple[int, str] | None
        ``(tokens, field)``, or None.

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
