"""The ``batch=``, ``batch_poll=`` and ``batch_journal=`` options of the HTTP judges (:mod:`rankkit.judges.batches`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rankkit.specs import SpecError

#: The batch options of a judge spec, with their types.
BATCH_OPTIONS: dict[str, type] = {"batch": bool, "batch_poll": float, "batch_journal": str}


@dataclass(frozen=True)
class BatchOptions:
    """How a judge sends its requests as batches.

    poll: seconds before the first poll of a batch (it grows to a minute).
    journal: the file batch ids are kept in until read (default ``.rankkit/batches.json``).
    """

    poll: float = 5.0
    journal: str | None = None

    def __post_init__(self) -> None:
        if not self.poll > 0:
            raise SpecError(f"batch_poll must be > 0 seconds, got {self.poll}")

    @classmethod
    def pop_from(cls, options: dict[str, Any]) -> "BatchOptions | None":
        """The batch options of a spec's converted ``options`` (removed from it); None without ``batch=true``."""
        batch = options.pop("batch", False)
        poll, journal = options.pop("batch_poll", None), options.pop("batch_journal", None)
        if not batch:
            if poll is not None or journal is not None:
                raise SpecError("batch_poll and batch_journal need batch=true")
            return None
        return cls(poll=5.0 if poll is None else poll, journal=journal)

    def runner(self, client: Any, protocol: Any) -> Any:
        """The :class:`~rankkit.judges.batches.BatchRunner` of ``client`` (an HTTP engine) for ``protocol``."""
        from rankkit.judges.batches import DEFAULT_JOURNAL, BatchJournal, BatchRunner

        return BatchRunner(client, protocol, BatchJournal(self.journal or DEFAULT_JOURNAL), poll=self.poll)
