"""The ``batch=``, ``batch_poll=``, ``batch_journal=`` and ``batch_size=`` options of the HTTP judges (:mod:`rankkit.judges.batches`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rankkit.specs import SpecError

#: The batch options of a judge spec, with their types.
BATCH_OPTIONS: dict[str, type] = {"batch": bool, "batch_poll": float, "batch_journal": str, "batch_size": int}


@dataclass(frozen=True)
class BatchOptions:
    """How a judge sends its requests as batches.

    poll: seconds before the first poll of a batch (it grows to a minute).
    journal: the file batch ids are kept in until read (default ``.rankkit/batches.json``).
    size: the most requests one batch holds: the judge's capacity, so the run's dispatcher gathers
        what every task in progress asks (up to twice this many tasks at once) into one call.
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
    def pop_from(cls, options: dict[str, Any]) -> "BatchOptions | None":
        """The batch options of a spec's converted ``options`` (removed from it); None without ``batch=true``."""
        batch = options.pop("batch", False)
        poll, journal, size = options.pop("batch_poll", None), options.pop("batch_journal", None), \
            options.pop("batch_size", None)
        if not batch:
            if poll is not None or journal is not None or size is not None:
                raise SpecError("batch_poll, batch_journal and batch_size need batch=true")
            return None
        return cls(poll=5.0 if poll is None else poll, journal=journal, size=500 if size is None else size)

    def runner(self, client: Any, protocol: Any) -> Any:
        """The :class:`~rankkit.judges.batches.BatchRunner` of ``client`` (an HTTP engine) for ``protocol``."""
        from rankkit.judges.batches import DEFAULT_JOURNAL, BatchJournal, BatchRunner

        return BatchRunner(client, protocol, BatchJournal(self.journal or DEFAULT_JOURNAL), poll=self.poll)
