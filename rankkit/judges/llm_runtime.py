"""The contract between an LLM judge and a model runtime: :class:`LLMRuntime` and the values it passes.

A runtime runs a model — transformers in :mod:`rankkit.judges.hf`, an HTTP server in
:mod:`rankkit.judges.openai_compat` — and knows nothing about tasks, templates or verdicts; the
judge (:class:`~rankkit.judges.llm.LLMJudge`) and its modes (:mod:`rankkit.judges.modes`) turn
tasks into conversations and the runtime's output into judgments.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator, Protocol, Sequence, runtime_checkable

from rankkit.judges.base import JudgeError

#: Chat messages, e.g. ``[{"role": "user", "content": "..."}]``.
Conversation = list[dict[str, str]]


def user_turn(content: str) -> Conversation:
    """A conversation of one user message."""
    return [{"role": "user", "content": content}]


@dataclass(frozen=True)
class Generation:
    """One generated reply: its text and token counts (``prompt_tokens``/``completion_tokens``
    when the runtime knows them, else empty)."""

    text: str
    usage: dict[str, int] = field(default_factory=dict)


def per_row(assistant_prefix: str | Sequence[str], rows: int) -> list[str]:
    """``assistant_prefix`` as one prefix per row (a single string is every row's).

    >>> per_row("Score: ", 2)
    ['Score: ', 'Score: ']
    >>> per_row(["a", "b"], 2)
    ['a', 'b']
    """
    if isinstance(assistant_prefix, str):
        return [assistant_prefix] * rows
    prefixes = list(assistant_prefix)
    if len(prefixes) != rows:
        raise ValueError(f"{len(prefixes)} assistant prefixes for {rows} conversations")
    return prefixes


class PromptTooLong(JudgeError):
    """A prompt does not fit the runtime's context (``max_model_len``). Rerunning the same command
    fails the same way, so the command line exits 2. The runtime sees conversations, not tasks:
    :class:`~rankkit.judges.llm.LLMJudge` raises it again naming the task whose ``prompt`` it was."""

    exit_code = 2
    resumable = False

    def __init__(self, message: str, prompt: str = ""):
        super().__init__(message)
        #: The rendered prompt that did not fit (the judge finds its task from it).
        self.prompt = prompt


@runtime_checkable
class LLMRuntime(Protocol):
    """What :class:`~rankkit.judges.llm.LLMJudge` needs from a model runtime: four methods and four
    declared attributes, every one present on every runtime (the judge never probes).

    ``conversations`` are chat messages ``[{"role": "user", "content": ...}]``. Every method
    yields ``(index, result)`` in any order as results become ready, ``index`` being the
    position in ``conversations``.

    * ``generate``: the assistant's reply to each conversation. ``temperature`` 0 means greedy;
      ``seed`` seeds sampling.
    * ``next_token_logprobs``: the reply is forced to begin with ``assistant_prefix`` (one string
      for every conversation, or one per conversation: generate mode's verdict continues each
      judge's own explanation); returns the log-probability of each of ``choices`` as the next
      token (``-inf`` when impossible). Choices must differ in their first token.
    * ``answer_logliks``: the mean per-token log-likelihood of ``answers[i]`` as the assistant's
      reply to ``conversations[i]``. May raise ``NotImplementedError``.
    * ``identity``: what identifies the model for the cache fingerprint (never secrets).

    A prompt that does not fit the runtime's context raises :class:`PromptTooLong`; the judge
    names its task. A class that subclasses this protocol inherits the attributes' defaults
    below and a ``close`` that releases nothing.
    """

    #: The backend name the fingerprint records (``hf``, ``vllm``, ``openai``).
    backend: str
    #: Whether ``next_token_logprobs`` really continues a forced prefix (an HTTP server may start a
    #: fresh reply instead); generate mode reads its verdict by continuation only when it does.
    continues_prefix: bool = True
    #: How many requests it can usefully have in flight: a dispatcher sizes its work from it.
    capacity: int = 1
    #: Whether it gains from full batches (a local model) or streams requests (HTTP).
    fills_batches: bool = False
    #: The model's context in tokens and the setting that gives it (``(8192,
    #: "max_position_embeddings")``), where the runtime checks prompts against it; None: unknown.
    #: The dry run warns about tasks whose prompts would not fit.
    context: tuple[int, str] | None = None

    def identity(self) -> dict[str, Any]: ...

    def generate(self, conversations: Sequence[Conversation], *, max_new_tokens: int,
                 temperature: float, seed: int) -> Iterator[tuple[int, Generation]]: ...

    def next_token_logprobs(self, conversations: Sequence[Conversation], *, assistant_prefix: str | Sequence[str],
                            choices: Sequence[str]) -> Iterator[tuple[int, dict[str, float]]]: ...

    def answer_logliks(self, conversations: Sequence[Conversation],
                       answers: Sequence[str]) -> Iterator[tuple[int, float]]: ...

    def close(self) -> None:
        """Release what the runtime holds (a shared, cached model stays loaded)."""
        return None


class StandInRuntime(LLMRuntime):
    """A runtime with a model's identity and no model: the dry run's stand-in, enough for the judge's
    fingerprint and prompts; any request raises :class:`~rankkit.judges.base.JudgeError`.

    backend: the real runtime's backend name.
    identity: the identity the real runtime would report (its descriptor computes it unloaded).
    context: the real runtime's context, where it is known without loading the model.
    """

    def __init__(self, backend: str, identity: dict[str, Any], context: tuple[int, str] | None = None):
        self.backend = backend
        self._identity = identity
        self.context = context

    def identity(self) -> dict[str, Any]:
        return dict(self._identity)

    def _refuse(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        raise JudgeError("a dry-run judge has no model loaded")

    generate = next_token_logprobs = answer_logliks = _refuse
