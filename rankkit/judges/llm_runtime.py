"""The contract between an LLM judge and a model runtime: :class:`LLMRuntime` and the values it passes.

A runtime runs a model — transformers in :mod:`rankkit.judges.hf`, an HTTP server in
:mod:`rankkit.judges.openai_compat` — and knows nothing about tasks, templates or verdicts; the
judge (:class:`~rankkit.judges.llm.LLMJudge`) and its modes (:mod:`rankkit.judges.modes`) turn
tasks into conversations and the runtime's output into judgments.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from rankkit.judges.base import JudgeError
from rankkit.judges.prices import Price

#: Chat messages, e.g. ``[{"role": "user", "content": "..."}]``.
Conversation = list[dict[str, str]]


def user_turn(content: str) -> Conversation:
    """A conversation of one user message.

    Parameters
    ----------
    content : str
        The user message's text.

    Returns
    -------
    Conversation
        The conversation: ``[{"role": "user", "content": content}]``.
    """
    return [{"role": "user", "content": content}]


@dataclass(frozen=True)
class Generation:
    """One generated reply: its text and token counts (``prompt_tokens``/``completion_tokens``
    when the runtime knows them, else empty)."""

    text: str
    usage: dict[str, int] = field(default_factory=dict)


class ChoiceLogprobs(dict):
    """What ``next_token_logprobs`` may yield instead of a plain dict: the choices'
    log-probabilities (a ``dict`` to every reader) and what reading them cost, ``usage`` (tokens,
    ``usd_nano``, ``retries``), which the judge charges to the judgment (a hosted API's follow-up
    and prefill reads are requests of their own).

    >>> read = ChoiceLogprobs({"1": -0.1, "2": -2.5}, {"prompt_tokens": 40}, retries=1)
    >>> dict(read), read.usage
    ({'1': -0.1, '2': -2.5}, {'prompt_tokens': 40, 'retries': 1})
    """

    def __init__(self, logprobs: dict[str, float], usage: dict[str, int] | None = None, retries: int = 0):
        super().__init__(logprobs)
        self.usage = dict(usage or {})
        if retries:
            self.usage["retries"] = self.usage.get("retries", 0) + retries


def per_row(assistant_prefix: str | Sequence[str], rows: int) -> list[str]:
    """``assistant_prefix`` as one prefix per row (a single string is every row's).

    Parameters
    ----------
    assistant_prefix : str | Sequence[str]
        One prefix for every row, or one per row.
    rows : int
        The number of rows.

    Returns
    -------
    list[str]
        One prefix per row.

    Examples
    --------
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


def choices_per_row(choices: Sequence[str] | Sequence[Sequence[str]], rows: int) -> list[tuple[str, ...]]:
    """``choices`` as one tuple of choices per row (a flat sequence of strings is every row's).

    Parameters
    ----------
    choices : Sequence[str] | Sequence[Sequence[str]]
        One set of choices for every row, or one set per row.
    rows : int
        The number of rows.

    Returns
    -------
    list[tuple[str, ...]]
        One tuple of choices per row.

    Examples
    --------
    >>> choices_per_row(["0", "1"], 2)
    [('0', '1'), ('0', '1')]
    >>> choices_per_row([["0", "1"], ["0", "1", "2"]], 2)
    [('0', '1'), ('0', '1', '2')]
    """
    if not choices or isinstance(choices[0], str):
        return [tuple(choices)] * rows  # type: ignore[arg-type]
    table = [tuple(row) for row in choices]
    if len(table) != rows:
        raise ValueError(f"{len(table)} sets of choices for {rows} conversations")
    return table


#: The :attr:`LLMRuntime.prefix_read` values whose reads are one sampled choice (a one-hot
#: distribution: a structured-output reply, a prefilled reply's written digit), not probabilities.
SAMPLED_READS = frozenset({"followup_enum", "prefill"})


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
    """What :class:`~rankkit.judges.llm.LLMJudge` needs from a model runtime: four methods, and
    declared attributes with defaults, every one present on every runtime (the judge never probes).

    ``conversations`` are chat messages ``[{"role": "user", "content": ...}]``. Every method
    yields ``(index, result)`` in any order as results become ready, ``index`` being the
    position in ``conversations``.

    * ``generate``: the assistant's reply to each conversation. ``temperature`` 0 means greedy;
      ``seed`` seeds sampling.
    * ``next_token_logprobs``: the reply is forced to begin with ``assistant_prefix`` (one string
      for every conversation, or one per conversation: generate mode's verdict continues each
      judge's own explanation); returns the log-probability of each of ``choices`` as the next
      token (``-inf`` when impossible). Choices must differ in their first token. A read that is
      a request of its own may yield a :class:`ChoiceLogprobs`, whose ``usage`` the judge charges.
    * ``answer_logliks``: the mean per-token log-likelihood of ``answers[i]`` as the assistant's
      reply to ``conversations[i]``. May raise ``NotImplementedError``.
    * ``identity``: what identifies the model for the cache fingerprint (never secrets).

    A prompt that does not fit the runtime's context raises :class:`PromptTooLong`; the judge
    names its task. A class that subclasses this protocol inherits the attributes' defaults
    below and a ``close`` that releases nothing.
    """

    #: The backend name the fingerprint records (``hf``, ``vllm``, ``openai``).
    backend: str
    #: How ``next_token_logprobs`` reads the value that follows ``assistant_prefix``, recorded as
    #: each generate-mode verdict's ``verdict_path``: ``continuation`` (the reply continues the
    #: forced prefix), a hosted API's read of the same value that no answer can steer
    #: (``followup``, ``followup_enum``, ``prefill``: :mod:`rankkit.judges.hosted_verdict`), or
    #: None where it has none (an HTTP server that starts a fresh reply): generate mode then parses
    #: the free text. Reads named in :data:`SAMPLED_READS` are one-hot. An HTTP runtime finds it
    #: by probing on first use (a property), never when built.
    prefix_read: str | None = "continuation"
    #: How many requests it can usefully have in flight: a dispatcher sizes its work from it.
    capacity: int = 1
    #: Whether it gains from full batches (a local model) or streams requests (HTTP).
    fills_batches: bool = False
    #: The model's context in tokens and the setting that gives it (``(8192,
    #: "max_position_embeddings")``), where the runtime checks prompts against it; None: unknown.
    #: The dry run warns about tasks whose prompts would not fit.
    context: tuple[int, str] | None = None
    #: USD per million tokens (:mod:`rankkit.judges.prices`): each result's usage then carries its
    #: cost (``usd_nano``) and the dry run estimates one. None: unpriced (a local model).
    price: Price | None = None
    #: Whether it sends requests through a provider's batch API (``batch=true``): the dry run
    #: counts sequential batches and applies the batch discount.
    batched: bool = False

    def identity(self) -> dict[str, Any]:
        """What identifies the model for the cache fingerprint (never secrets).

        Returns
        -------
        dict[str, Any]
            The identity: JSON-ready values, by name.
        """
        ...

    def generate(
        self, conversations: Sequence[Conversation], *, max_new_tokens: int, temperature: float, seed: int
    ) -> Iterator[tuple[int, Generation]]:
        """Generate a reply to each conversation; yield ``(index, generation)`` as each is ready.

        Parameters
        ----------
        conversations : Sequence[Conversation]
            The chat conversations.
        max_new_tokens : int
            The most tokens generated per reply.
        temperature : float
            The sampling temperature (0: greedy).
        seed : int
            The sampling seed.

        Returns
        -------
        Iterator[tuple[int, Generation]]
            ``(index, generation)``: the index of the conversation and its reply (text and usage).
        """
        ...

    def next_token_logprobs(
        self,
        conversations: Sequence[Conversation],
        *,
        assistant_prefix: str | Sequence[str],
        choices: Sequence[str] | Sequence[Sequence[str]],
    ) -> Iterator[tuple[int, dict[str, float]]]:
        """Each of ``choices``' log-probability as the next token after the forced reply prefix.

        Parameters
        ----------
        conversations : Sequence[Conversation]
            The chat conversations.
        assistant_prefix : str | Sequence[str]
            The forced start of the reply: one for every conversation, or one per conversation.
        choices : Sequence[str] | Sequence[Sequence[str]]
            The choices (their first tokens must differ): one set for every conversation, or one
            per conversation (:func:`choices_per_row`).

        Returns
        -------
        Iterator[tuple[int, dict[str, float]]]
            ``(index, logprobs)``: the index of the conversation and each choice's log-probability (``-inf`` when impossible); a read that is a request of its own may yield a :class:`ChoiceLogprobs`.
        """
        ...

    def answer_logliks(
        self, conversations: Sequence[Conversation], answers: Sequence[str]
    ) -> Iterator[tuple[int, float]]:
        """The mean per-token log-likelihood of ``answers[i]`` as the reply to ``conversations[i]``.

        Parameters
        ----------
        conversations : Sequence[Conversation]
            The chat conversations (the bare questions).
        answers : Sequence[str]
            One answer per conversation.

        Returns
        -------
        Iterator[tuple[int, float]]
            ``(index, loglik)``: the index of the conversation and the answer's mean token log-likelihood.
        """
        ...

    def close(self) -> None:
        """Release what the runtime holds (a shared, cached model stays loaded)."""
        return None

    def show_progress(self, note: Callable[[str], None]) -> None:
        """Report what the run's progress bar should show beside its counts to ``note`` (a batching
        runtime: each batch's id, state and requests done); a runtime with nothing to add ignores it.

        Parameters
        ----------
        note : Callable[[str], None]
            The progress bar's note: shows a line of text beside the counts.
        """
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
        """The identity the real runtime would report.

        Returns
        -------
        dict[str, Any]
            A copy of the identity given.
        """
        return dict(self._identity)

    def _refuse(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        raise JudgeError("a dry-run judge has no model loaded")

    generate = next_token_logprobs = answer_logliks = _refuse
