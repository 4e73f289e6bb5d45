"""A two-candidate task for the prompt tests, with the meta, reference and scale a test needs."""

from __future__ import annotations

from rankkit.data.tasks import Candidate, Task


def make_task(meta=None, reference=None, scale=(0.0, 4.0), prompt="What is 2+2?") -> Task:
    candidates = (Candidate("a", "It is 4."), Candidate("b", "It is 5."))
    return Task(
        task_id="t",
        prompt=prompt,
        candidates=candidates,
        reference=reference,
        meta=meta or {},
        criterion=None,
        scale=scale,
    )
