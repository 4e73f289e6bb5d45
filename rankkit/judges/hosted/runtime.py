"""What the hosted runtimes (openai, anthropic) share: the HTTP client they hold, their price, ``batch=true``.

A :class:`HostedRuntime` holds a :class:`~rankkit.judges.hosted.http_client.RetryingClient` (built on the
spec's :class:`~rankkit.judges.hosted.http_client.ClientConfig`) and, with ``batch=true``, a
:class:`~rankkit.judges.hosted.batches.BatchRunner` on that client. Each response's cost is priced here
(``usd_nano`` in its usage); the runtime protocol carries no price.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from rankkit.judges.hosted.batch_options import BatchOptions
from rankkit.judges.hosted.http_client import RetryingClient
from rankkit.judges.hosted.prices import Price, with_cost
from rankkit.judges.llm.runtime import Capacity, LLMRuntime

T = TypeVar("T")
#: How one response is read: ``(value, usage)`` from its JSON.
Read = Callable[[dict[str, Any]], tuple[Any, dict[str, int]]]


class HostedRuntime(LLMRuntime):
    """A runtime on a provider's HTTP API: sends through the client it holds, directly or as batches.

    model: the model name the API knows.
    client: what sends the requests (replicas, concurrency, retries, pacing).
    price: USD per million tokens (:mod:`rankkit.judges.hosted.prices`); None: cost not counted.
    batch: send each call's requests as one batch on the provider's batch API (:mod:`rankkit.judges.hosted.batches`).
    batch_api: the provider's batch protocol (``OpenAIBatches()``, ``AnthropicBatches()``).
    """

    def __init__(
        self, model: str, client: RetryingClient, price: Price | None, batch: BatchOptions | None, batch_api: Any
    ):
        self.model = model
        self.client = client
        self.price = price
        #: With ``batch=true``: what sends each runtime call's requests as one batch (else None).
        self.batcher = None if batch is None else batch.runner(client, batch_api)
        self.batch_size = batch.size if batch is not None else 0

    def __repr__(self) -> str:  # never shows the key
        config = self.client.config
        return (
            f"{type(self).__name__}(model={self.model!r}, base_url={self.client.base_url!r}, "
            f"concurrency={config.concurrency}, timeout={config.timeout}, api_key={'set' if config.api_key else 'none'})"
        )

    @property
    def batched(self) -> bool:
        """Whether requests go out as batches (``batch=true``): the dry run applies the batch discount."""
        return self.batcher is not None

    @property
    def capacity(self) -> Capacity:  # type: ignore[override]
        """``concurrency`` per replica streamed, or with ``batch=true`` ``batch_size`` gathered from every task's step."""
        if self.batcher is not None:
            return Capacity(self.batch_size, fills_batches=True)
        return Capacity(self.client.capacity)

    def show_progress(self, note: Callable[[str], None]) -> None:
        """With ``batch=true``, send each batch's id, state and requests done to ``note``."""
        if self.batcher is not None:
            self.batcher.on_status = note

    def close(self) -> None:
        """Let the batcher clear the journal entries of a run that ended well, then close the client."""
        if self.batcher is not None:
            self.batcher.close()
        self.client.close()

    def send_one(self, body: dict[str, Any], abort: threading.Event | None, read: Read) -> tuple[Any, int]:
        """POST one request directly: ``((value, usage), retries)``."""
        raise NotImplementedError

    def batch_body(self, body: dict[str, Any]) -> dict[str, Any]:
        """``body`` as a batch line carries it (a runtime may adapt it as it adapts direct requests)."""
        return body

    def send_all(
        self, requests: Sequence[tuple[dict[str, Any], Read]], finish: Callable[[Any, dict[str, int]], T]
    ) -> Iterator[tuple[int, T]]:
        """Send ``(body, read)`` requests (direct or batched); yield ``(index, finish(value, usage))`` as they come.

        ``usage`` carries the retries and, with a price, the cost (``usd_nano``; ``batched`` in a batch).
        """
        if self.batcher is not None:
            bodies = [self.batch_body(body) for body, _ in requests]
            for index, (value, usage) in self.batcher.run(bodies, lambda i, payload: requests[i][1](payload)):
                yield index, finish(value, with_cost(usage, self.price, batch=True))
            return

        def job(body: dict[str, Any], read: Read) -> Callable[[threading.Event], T]:
            def call(abort: threading.Event) -> T:
                (value, usage), retries = self.send_one(body, abort, read)
                if retries:
                    usage["retries"] = usage.get("retries", 0) + retries
                return finish(value, with_cost(usage, self.price))

            return call

        yield from self.client.run_all([job(body, read) for body, read in requests])
