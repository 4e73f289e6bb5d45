"""The Ray executor: an in-process engine's runtime (hf, smollm2, vllm) run in Ray actors, one per GPU or CPU slot.

``--executor ray`` (``make_judge(spec, executor=RayExecutor())``) keeps the judge in the driver — its
prompts, verdict reading, fingerprint, and the memo, cache, bill and progress bar around it — and
replaces only its :class:`~rankkit.judges.llm.runtime.LLMRuntime` by a :class:`RayRuntime`. Each actor
loads the model once; the runtime hands each call's conversations, in chunks of the model's own
capacity, to the least busy actor, as the dispatcher hands requests to an HTTP server's replicas,
and yields every answer under its index. A judge in exact mode (the default on a CPU) answers each
prompt from that prompt alone, so a run gives the same results as the plain run, whichever actor
answers what.

Ray is imported only here, when an executor is built (the optional extra ``rankkit-llm[ray]``).
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rankkit.data.specs import SpecError
from rankkit.judges.base import JudgeError
from rankkit.judges.llm.runtime import Capacity, Chat, Generation, LLMRuntime, PromptTooLong

#: What a Ray actor returns when a prompt does not fit (an exception's own fields do not survive pickling).
TOO_LONG = "prompt too long"


@dataclass(frozen=True)
class RayExecutor:
    """Run an in-process engine's runtime in Ray actors.

    actors: how many actors, each loading the model once (None: one per GPU of the cluster, else one
        per CPU).
    address: the cluster to join (``ray://…`` or ``HOST:PORT``; None: ``$RAY_ADDRESS``, else a local
        cluster started here and stopped when the judge closes). When Ray is already initialised in
        this process, that cluster is used.
    """

    actors: int | None = None
    address: str | None = None

    def __post_init__(self) -> None:
        if self.actors is not None and self.actors < 1:
            raise SpecError(f"ray: actors must be >= 1, got {self.actors}")

    def runtime(self, spec: str) -> RayRuntime:
        """A :class:`RayRuntime` of judge spec ``spec``: the cluster joined or started, the actors loaded."""
        ray = import_ray()
        started = False
        if not ray.is_initialized():
            ray.init(address=self.address, include_dashboard=False, log_to_driver=False)
            started = True
        try:
            return RayRuntime(ray, spec, actor_resources(ray, self.actors), started)
        except BaseException:
            if started:
                ray.shutdown()
            raise


def import_ray() -> Any:
    """The ``ray`` module; a clear error (exit 2) where it is not installed."""
    if importlib.util.find_spec("ray") is None:
        raise SpecError("--executor ray needs Ray; install the ray extra: pip install 'rankkit-llm[ray]'")
    import ray

    return ray


def actor_resources(ray: Any, actors: int | None) -> list[dict[str, float]]:
    """Each actor's Ray resources: one GPU each on a cluster with GPUs, else one CPU each.

    Raises
    ------
    SpecError
        More actors are asked for than the cluster has GPUs (or CPUs): they would wait forever.
    """
    resources = ray.cluster_resources()
    gpus, cpus = int(resources.get("GPU", 0)), int(resources.get("CPU", 0))
    unit, slots = ("GPU", gpus) if gpus else ("CPU", cpus)
    count = slots if actors is None else actors
    if count < 1 or count > slots:
        raise SpecError(f"ray: {count} actors asked for, but the cluster has {slots} {unit} slots")
    each = {"num_gpus": 1.0, "num_cpus": 0.0} if unit == "GPU" else {"num_cpus": 1.0}
    return [dict(each) for _ in range(count)]


def worker_environment() -> dict[str, Any]:
    """The actors' runtime environment: this rankkit first on their ``PYTHONPATH`` (a clone run uninstalled works)."""
    package_root = str(Path(__file__).resolve().parents[3])
    paths = [package_root, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {"env_vars": {"PYTHONPATH": os.pathsep.join(dict.fromkeys(paths))}}


class RuntimeHost:
    """One Ray actor's side: the runtime of a judge spec, loaded once, answering whole calls."""

    def __init__(self, spec: str):
        from rankkit.judges.backends import backend, read_settings, spec_name

        descriptor = backend(spec_name(spec))
        self.runtime = descriptor.runtime(read_settings(descriptor, spec))

    def describe(self) -> dict[str, Any]:
        """What the driver's :class:`RayRuntime` reports as its own: identity, backend, verdict path, capacity, context."""
        runtime = self.runtime
        return {
            "identity": runtime.identity(),
            "backend": runtime.backend,
            "verdict_path": runtime.verdict_path,
            "capacity": runtime.capacity,
            "context": runtime.context,
        }

    def call(self, method: str, conversations: list[Chat], rows: dict[str, list], shared: dict[str, Any]) -> Any:
        """``runtime.method(conversations, **rows, **shared)`` as ``[(index, result), ...]``, or ``(TOO_LONG, message, prompt)``."""
        try:
            return list(getattr(self.runtime, method)(conversations, **rows, **shared))
        except PromptTooLong as error:
            return (TOO_LONG, str(error), error.prompt)


class RayRuntime(LLMRuntime):
    """An :class:`~rankkit.judges.llm.runtime.LLMRuntime` whose model runs in Ray actors.

    It reports the actors' runtime's identity, backend, verdict path and context, so the judge's
    fingerprint, and with it every cache key, is the plain run's. Its capacity is the actors' together,
    streamed like an HTTP server's replicas. Thread-safe: the dispatcher calls it from several threads.
    """

    def __init__(self, ray: Any, spec: str, resources: Sequence[dict[str, float]], owns_cluster: bool):
        self._ray = ray
        self._owns_cluster = owns_cluster
        host = ray.remote(RuntimeHost)
        environment = worker_environment()
        self._actors = [host.options(**each, runtime_env=environment).remote(spec) for each in resources]
        self._busy = [0] * len(self._actors)  # conversations sent to each actor and not yet answered
        #: Conversations each actor has answered (benchmarks and tests).
        self.answered = [0] * len(self._actors)
        self._lock = threading.Lock()
        described = self._get([actor.describe.remote() for actor in self._actors])[0]
        self._identity = described["identity"]
        self.backend = described["backend"]
        self.verdict_path = described["verdict_path"]
        self.context = described["context"]
        self._each = described["capacity"]

    @property
    def actors(self) -> int:
        """How many actors answer."""
        return len(self._actors)

    @property
    def capacity(self) -> Capacity:  # type: ignore[override]
        """Every actor's capacity together, streamed: a free actor gets work at once, as an HTTP replica does."""
        return Capacity(self._each.requests * len(self._actors), fills_batches=False)

    def identity(self) -> dict[str, Any]:
        """The actors' runtime's identity: the fingerprint of the plain run."""
        return dict(self._identity)

    def generate(
        self, conversations: Sequence[Chat], *, max_new_tokens: int, temperature: float, seed: int
    ) -> Iterator[tuple[int, Generation]]:
        """As :meth:`LLMRuntime.generate`, spread over the actors."""
        shared = {"max_new_tokens": max_new_tokens, "temperature": temperature, "seed": seed}
        return self._spread("generate", conversations, {}, shared)

    def next_token_logprobs(
        self, conversations: Sequence[Chat], *, prefixes: Sequence[str], choices: Sequence[Sequence[str]]
    ) -> Iterator[tuple[int, dict[str, float]]]:
        """As :meth:`LLMRuntime.next_token_logprobs`, spread over the actors."""
        return self._spread("next_token_logprobs", conversations, {"prefixes": prefixes, "choices": choices}, {})

    def answer_logliks(self, conversations: Sequence[Chat], answers: Sequence[str]) -> Iterator[tuple[int, float]]:
        """As :meth:`LLMRuntime.answer_logliks`, spread over the actors."""
        return self._spread("answer_logliks", conversations, {"answers": answers}, {})

    def close(self) -> None:
        """Stop the actors, and the local cluster when this runtime started it."""
        for actor in self._actors:
            self._ray.kill(actor)
        self._actors = []
        if self._owns_cluster:
            self._ray.shutdown()

    # -- spreading a call over the actors ---------------------------------------------------------

    def _spread(
        self, method: str, conversations: Sequence[Chat], rows: dict[str, Sequence], shared: dict[str, Any]
    ) -> Iterator[tuple[int, Any]]:
        """Send ``conversations`` in chunks to the least busy actors; yield ``(index, result)`` as chunks finish."""
        pending: dict[Any, tuple[int, list[int]]] = {}  # Ray reference -> (actor, the chunk's indices)
        for chunk in chunks(len(conversations), max(1, self._each.requests)):
            actor = self._least_busy(len(chunk))
            chunk_rows = {name: [values[i] for i in chunk] for name, values in rows.items()}
            reference = self._actors[actor].call.remote(method, [conversations[i] for i in chunk], chunk_rows, shared)
            pending[reference] = (actor, chunk)
        try:
            while pending:
                (ready,), _ = self._ray.wait(list(pending), num_returns=1)
                actor, chunk = pending.pop(ready)
                self._release(actor, len(chunk))
                answered = self._get(ready)
                if isinstance(answered, tuple) and answered[0] == TOO_LONG:
                    raise PromptTooLong(answered[1], answered[2])
                with self._lock:
                    self.answered[actor] += len(chunk)
                for index, result in answered:
                    yield chunk[index], result
        finally:
            for actor, chunk in pending.values():  # abandoned (an error or a closed generator)
                self._release(actor, len(chunk))

    def _least_busy(self, size: int) -> int:
        with self._lock:
            actor = min(range(len(self._busy)), key=self._busy.__getitem__)
            self._busy[actor] += size
            return actor

    def _release(self, actor: int, size: int) -> None:
        with self._lock:
            self._busy[actor] -= size

    def _get(self, references: Any) -> Any:
        """``ray.get``, with an actor's failure raised as the error it was (a dead actor: a resumable JudgeError)."""
        exceptions = self._ray.exceptions
        try:
            return self._ray.get(references)
        except exceptions.RayTaskError as error:
            cause = getattr(error, "cause", None)
            raise (cause if isinstance(cause, Exception) else JudgeError(f"a Ray actor failed: {error}")) from None
        except exceptions.RayActorError as error:
            raise JudgeError(f"a Ray actor died: {error}") from None


def chunks(count: int, size: int) -> list[list[int]]:
    """The indices ``0 … count-1`` in consecutive chunks of at most ``size``.

    Examples
    --------
    >>> chunks(5, 2)
    [[0, 1], [2, 3], [4]]
    """
    return [list(range(start, min(start + size, count))) for start in range(0, count, size)]
