"""The contract between an LLM judge and a model runtime: :class:`LLMRuntime` and the values it passes.

A runtime runs a model and knows nothing about tasks, templates or verdicts; the judge
(:class:`~rankkit.judges.llm.judge.LLMJudge`) and its modes turn tasks into conversations and outputs
into judgments.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from rankkit.judges.base import JudgeError

#: Chat messages, e.g. ``[{"role": "user", "content": "..."}]``.
Chat = list[dict[str, str]]


def user_turn(content: str) -> Chat:
    """A chat of one user message: ``[{"role": "user", "content": content}]``."""
    return [{"role": "user", "content": content}]


@dataclass(frozen=True)
class Generation:
    """One generated reply: its text and token counts (``prompt_tokens``/``completion_tokens``, else empty)."""

    text: str
    usage: dict[str, int] = field(default_factory=dict)


class ChoiceLogprobs(dict):
    """Choices' log-probabilities (a ``dict`` to every reader) with what reading them cost, ``usage``.

    ``next_token_logprobs`` may yield it where a read is a request of its own (a hosted API's
    follow-up or prefill); the judge charges ``usage`` to the judgment.

    >>> read = ChoiceLogprobs({"1": -0.1, "2": -2.5}, {"prompt_tokens": 40}, retries=1)
    >>> dict(read), read.usage
    ({'1': -0.1, '2': -2.5}, {'prompt_tokens': 40, 'retries': 1})
    """

    def __init__(self, logprobs: dict[str, float], usage: dict[str, int] | None = None, retries: int = 0):
        super().__init__(logprobs)
        self.usage = dict(usage or {})
        if retries:
            self.usage["retries"] = self.usage.get("retries", 0) + retries


@dataclass(frozen=True)
class Capacity:
    """How much work a runtime takes at once: a dispatcher sizes its work from it.

    requests: how many requests it can usefully have in flight.
    fills_batches: whether it gains from full batches (a local model, a batch API) or streams requests (HTTP).
    """

    requests: int = 1
    fills_batches: bool = False


#: The :attr:`LLMRuntime.verdict_path` values whose reads are one sampled choice (a one-hot
#: distribution: a structured-output reply, a prefilled reply's written digit), not probabilities.
SAMPLED_VERDICT_PATHS = frozenset({"followup_enum", "prefill"})


class PromptTooLong(JudgeError):
    """A prompt does not fit the runtime's context (exit 2: a rerun fails the same way).

    :class:`~rankkit.judges.llm.judge.LLMJudge` raises it again naming the task whose prompt it was.
    """

    exit_code = 2
    resumable = False

    def __init__(self, message: str, prompt: str = ""):
        super().__init__(message)
        #: The rendered prompt that did not fit (the judge finds its task from it).
        self.prompt = prompt


@runtime_checkable
class LLMRuntime(Protocol):
    """What :class:`~rankkit.judges.llm.judge.LLMJudge` needs from a model runtime: four methods and the attributes below.

    ``conversations`` are chat messages ``[{"role": "user", "content": ...}]``. Every method yields
    ``(index in conversations, result)`` in any order as results become ready. A prompt that does not
    fit raises :class:`PromptTooLong`. A subclass inherits the attributes' defaults and a ``close``
    that releases nothing.
    """

    #: The backend name the fingerprint records (``hf``, ``vllm``, ``openai``).
    backend: str
    #: How ``next_token_logprobs`` reads what follows a prefix: ``continuation``, a
    #: hosted API's read no answer can steer (``followup``, ``followup_enum``, ``prefill``), or None
    #: (generate mode then parses the free text). An HTTP runtime probes on first use, never when built.
    verdict_path: str | None = "continuation"
    #: How many requests it takes at once, and whether it gains from full batches.
    capacity: Capacity = Capacity()
    #: The model's context in tokens and the setting that gives it (``(8192, "max_position_embeddings")``);
    #: None: unknown.
    context: tuple[int, str] | None = None

    def identity(self) -> dict[str, Any]:
        """What identifies the model for the cache fingerprint (JSON-ready; never secrets)."""
        ...

    def generate(
        self, conversations: Sequence[Chat], *, max_new_tokens: int, temperature: float, seed: int
    ) -> Iterator[tuple[int, Generation]]:
        """Yield ``(index, Generation)``: the reply to each conversation (``temperature`` 0: greedy)."""
        ...

    def next_token_logprobs(
        self,
        conversations: Sequence[Chat],
        *,
        prefixes: Sequence[str],
        choices: Sequence[Sequence[str]],
    ) -> Iterator[tuple[int, dict[str, float]]]:
        """Yield ``(index, logprobs)``: each of ``choices[i]`` as the next token after the forced reply ``prefixes[i]``.

        One prefix and one set of choices per conversation (the judge expands shared ones); a row's
        choices must differ in their first token. An impossible choice is ``-inf``. A read that is a
        request of its own may yield a :class:`ChoiceLogprobs`.
        """
        ...

    def answer_logliks(self, conversations: Sequence[Chat], answers: Sequence[str]) -> Iterator[tuple[int, float]]:
        """Yield ``(index, loglik)``: the mean token log-likelihood of ``answers[i]`` as the reply to ``conversations[i]``.

        May raise ``NotImplementedError``.
        """
        ...

    def close(self) -> None:
        """Release what the runtime holds (a shared, cached model stays loaded)."""
        return None

    def show_progress(self, note: Callable[[str], None]) -> None:
        """Report what the progress bar should show beside its counts (e.g. each batch's state) to ``note``."""
        return None


class StandInRuntime(LLMRuntime):
    """A runtime with a model's identity and no model: the dry run's stand-in.

    Enough for the judge's fingerprint and prompts; any request raises
    :class:`~rankkit.judges.base.JudgeError`. ``context`` is the real runtime's, where known unloaded.
    """

    def __init__(self, backend: str, identity: dict[str, Any], context: tuple[int, str] | None = None):
        self.backend = backend
        self._identity = identity
        self.context = context

    def identity(self) -> dict[str, Any]:
        """A copy of the identity the real runtime would report."""
        return dict(self._identity)

    def _refuse(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        raise JudgeError("a dry-run judge has no model loaded")

    generate = next_token_logprobs = answer_logliks = _refuse
