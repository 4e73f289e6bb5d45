"""The ``batch=``, ``batch_poll=``, ``batch_journal=`` and ``batch_size=`` options of the hosted judges (:mod:`rankkit.judges.hosted.batches`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rankkit.data.specs import SpecError
from rankkit.judges.backends import Option, Settings, above, at_least

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

        Raises :class:`~rankkit.data.specs.SpecError` when another batch option is set without it.
        """
        if not settings["batch"]:
            given = [name for name in BATCH_ONLY if name in settings.given]
            if given:
                raise SpecError(f"{settings.backend}: {', '.join(given)} set, but these options need batch=true")
            return None
        return cls(poll=settings["batch_poll"], journal=settings["batch_journal"], size=settings["batch_size"])

    def runner(self, client: Any, protocol: Any) -> Any:
        """The :class:`~rankkit.judges.hosted.batches.BatchRunner` sending through ``client`` (a hosted runtime's) by ``protocol``."""
        from rankkit.judges.hosted.batch_journal import DEFAULT_JOURNAL, BatchJournal
        from rankkit.judges.hosted.batches import BatchRunner

        return BatchRunner(client, protocol, BatchJournal(self.journal or DEFAULT_JOURNAL), poll=self.poll)
