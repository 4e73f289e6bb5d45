"""The ``batch=``, ``batch_poll=``, ``batch_journal=`` and ``batch_size=`` options of the hosted judges (:mod:`rankkit.judges.batches`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rankkit.judges.backends import Option, Settings, above, at_least
from rankkit.specs import SpecError

#: The batch options of a hosted judge's spec (none of them changes the fingerprint: a batch
#: returns the same judgments as direct requests).
BATCH_OPTIONS: tuple[Option, ...] = (
    Option(
        "batch",
        bool,
        False,
        "send each step's requests as one batch on the provider's batch API (half price)",
        identity=False,
    ),
    Option(
        "batch_poll",
        float,
        5.0,
        "seconds before a batch's first poll (it grows to a minute)",
        identity=False,
        check=above(0),
    ),
    Option(
        "batch_journal",
        str,
        None,
        "the file batch requests and their answers are kept in until the run ends (default .rankkit/batches.json)",
        identity=False,
        trusted_only=True,
    ),
    Option("batch_size", int, 500, "the most requests one batch holds", identity=False, check=at_least(1)),
)
#: The options that only mean something with ``batch=true``.
BATCH_ONLY = ("batch_poll", "batch_journal", "batch_size")


@dataclass(frozen=True)
class BatchOptions:
    """How a judge sends its requests as batches.

    poll: seconds before the first poll of a batch (grows to a minute).
    journal: where requests and answers are kept until the run ends (default ``.rankkit/batches.json``).
    size: the most requests one batch holds (the judge's capacity).
    """

    poll: float = 5.0
    journal: str | None = None
    size: int = 500

    def __post_init__(self) -> None:
        if not self.poll > 0:
            raise SpecError(f"batch_poll must be > 0 seconds, got {self.poll}")
        if self.size < 1:
            raise SpecError(f"batch_size must be >= 1, got {self.size}")

    @classmethod
    def from_settings(cls, settings: Settings) -> BatchOptions | None:
        """The batch options of a spec, None without ``batch=true``.

        Raises :class:`~rankkit.specs.SpecError` when another batch option is set without it.
        """
        if not settings["batch"]:
            given = [name for name in BATCH_ONLY if name in settings.given]
            if given:
                raise SpecError(f"{settings.backend}: {', '.join(given)} set, but these options need batch=true")
            return None
        return cls(poll=settings["batch_poll"], journal=settings["batch_journal"], size=settings["batch_size"])

    def runner(self, client: Any, protocol: Any) -> Any:
        """The :class:`~rankkit.judges.batches.BatchRunner` of HTTP runtime ``client`` for ``protocol``."""
        from rankkit.judges.batches import DEFAULT_JOURNAL, BatchJournal, BatchRunner

        return BatchRunner(client, protocol, BatchJournal(self.journal or DEFAULT_JOURNAL), poll=self.poll)


class BatchSwitch:
    """What ``batch=true`` changes in the openai and anthropic HTTP runtimes (mixed in before the client).

    With a ``batcher``, requests go out as batches, a whole step of every task goes in one call and
    each batch's state reaches the progress bar.
    """

    batcher: Any = None
    batch_size: int = 0

    @property
    def batched(self) -> bool:
        """Whether requests go out as batches (``batch=true``)."""
        return self.batcher is not None

    def show_progress(self, note: Callable[[str], None]) -> None:
        """With ``batch=true``, send each batch's id, state and requests done to ``note``."""
        if self.batcher is not None:
            self.batcher.on_status = note

    def close(self) -> None:
        """Let the batcher clear the journal entries of a run that ended well, then close the client."""
        if self.batcher is not None:
            self.batcher.close()
        super().close()  # type: ignore[misc]

    @property
    def fills_batches(self) -> bool:
        """Whether the dispatcher gathers a whole step of every task into one call (``batch=true``)."""
        return self.batcher is not None

    @property
    def capacity(self) -> int:
        """Requests usefully in flight: ``concurrency`` per replica, or ``batch_size`` with ``batch=true``."""
        return self.batch_size if self.batcher is not None else super().capacity  # type: ignore[misc]
