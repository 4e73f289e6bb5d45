"""A loopback server that stubs or forwards chat completions, injecting the faults a test plans.

:class:`FaultProxy` answers ``POST /v1/chat/completions`` itself (:func:`stub_completion`) or
forwards it to a real server (llama-cpp-python's, vLLM's), and on the requests a test chooses
returns an HTTP error, hangs, drops the connection or sends a body of the test's bytes. It also
tells the test, after each forwarded answer, how many it has passed on, so a test can kill the
real server at an exact point of a run.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from rankkit.judges.hosted.openai_compat import PROBE_PREFIX
from tests.servers import StubRequest, StubServer


def stub_verdict(prompt: str) -> str:
    """A stub judge's reply: the longer answer wins a comparison; a grade is 1."""
    if "<answer_2>" in prompt:
        first = prompt.split("<answer_1>")[-1].split("</answer_1>")[0]
        second = prompt.split("<answer_2>")[-1].split("</answer_2>")[0]
        return (
            f"Explanation: stub. Answer 1: {int(len(first) >= len(second))} Answer 2: {int(len(second) > len(first))}"
        )
    return "Explanation: stub. Score: 1"


def stub_completion(body: dict[str, Any], logprobs: bool = True) -> dict[str, Any]:
    """A chat completion: a verdict for judge prompts, else an echo of the last message, with
    first-token log-probabilities when asked for them and ``logprobs`` (the server supports them)."""
    prompt = body["messages"][-1]["content"]
    text = stub_verdict(prompt) if "<answer" in prompt else f"stub reply to: {prompt[:40]}"
    payload: dict[str, Any] = {
        "id": "stub",
        "object": "chat.completion",
        "model": body.get("model"),
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }
    if body.get("logprobs") and logprobs:
        top = (
            [{"token": " 9", "logprob": -0.1}, {"token": " 1", "logprob": -4.0}]  # it continues the probe
            if body["messages"][-1]["content"] == PROBE_PREFIX
            else [{"token": "A", "logprob": -0.2}, {"token": " B", "logprob": -1.9}, {"token": "B", "logprob": -3.0}]
        )
        payload["choices"][0]["logprobs"] = {
            "content": [{"token": top[0]["token"], "logprob": top[0]["logprob"], "top_logprobs": top}]
        }
    return payload


class FaultProxy(StubServer):
    """An HTTP server on 127.0.0.1 for ``POST /v1/chat/completions``.

    With ``upstream`` (``http://127.0.0.1:PORT``) it forwards each request there; without, it
    answers with :func:`stub_completion`. ``plan(number, body)`` picks what happens to request
    ``number`` (1-based, in arrival order): ``"pass"``, an HTTP status to return instead (with
    ``retry_after`` seconds in a header when set), ``"hang"`` (hold the connection without an
    answer until the test ends or ``hang_limit`` passes), ``"drop"`` (close without answering) or
    ``("body", BYTES)`` (answer 200 with exactly those bytes). Every request is logged as
    ``(number, body, outcome)`` when it ends. ``on_success(count)`` is called for each 200
    response from upstream, with the number of them so far, before that answer goes to the client
    (so a test that kills the upstream there knows that at most the requests already forwarded,
    ``concurrency`` of them, can still be answered). ``max_in_flight`` is the most requests it
    held at once, counted from arrival until the answer starts (so never more than the client had
    open). ``max_forwarded`` is the most requests it had forwarded to ``upstream`` and not yet
    had answered: how many the client kept open at the real server at once.
    """

    def __init__(
        self,
        upstream: str | None = None,
        plan: Callable[[int, dict], Any] | None = None,
        retry_after: float | None = None,
        hang_limit: float = 30.0,
        on_success: Callable[[int], None] | None = None,
        logprobs: bool = True,
        error_text: str = "injected",
    ):
        super().__init__()
        self.upstream = upstream
        self.error_text = error_text
        self.logprobs = logprobs
        self.plan = plan or (lambda number, body: "pass")
        self.retry_after = retry_after
        self.hang_limit = hang_limit
        self.on_success = on_success
        self.log: list[tuple[int, dict, Any]] = []
        self.headers_seen: list[dict[str, str]] = []
        self.arrivals = 0
        self.successes = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.forwarded = 0
        self.max_forwarded = 0
        self._lock = threading.Lock()

    def post(self, request: StubRequest, body: dict[str, Any]) -> None:
        number = self._arrive(request)
        try:
            action = self.plan(number, body)
        finally:
            with self._lock:
                self.in_flight -= 1
        if isinstance(action, tuple) and action[0] == "body":
            self._record(number, body, "body")
            request.send_bytes(200, action[1])
        elif action == "hang":
            self._record(number, body, "hang")
            self.stopping.wait(self.hang_limit)
            request.close_connection = True
        elif action == "drop":
            self._record(number, body, "drop")
            request.close_connection = True
        elif isinstance(action, int):
            self._record(number, body, action)
            extra = {"Retry-After": f"{self.retry_after:g}"} if self.retry_after is not None else {}
            request.send_json(action, {"error": {"message": f"{self.error_text} {action}"}}, extra)
        else:
            self._pass(request, number, body)

    def _arrive(self, request: StubRequest) -> int:
        with self._lock:
            self.arrivals += 1
            self.headers_seen.append(dict(request.headers))
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            return self.arrivals

    def _pass(self, request: StubRequest, number: int, body: dict[str, Any]) -> None:
        """Forward (or stub) the request; count a success and tell ``on_success`` before answering."""
        status, payload = self._forward(body)
        if status == 200:
            with self._lock:
                self.successes += 1
                count = self.successes
            if self.on_success is not None:
                self.on_success(count)
        self._record(number, body, status)
        if status is None:  # upstream unreachable: behave like a dead server
            request.close_connection = True
            return
        request.send_json(status, payload)

    def _record(self, number: int, body: dict, outcome: Any) -> None:
        with self._lock:
            self.log.append((number, body, outcome))

    def _forward(self, body: dict) -> tuple[int | None, Any]:
        if self.upstream is None:
            return 200, stub_completion(body, self.logprobs)
        import httpx

        with self._lock:
            self.forwarded += 1
            self.max_forwarded = max(self.max_forwarded, self.forwarded)
        try:
            response = httpx.post(f"{self.upstream}/v1/chat/completions", json=body, timeout=120.0)
        except httpx.TransportError:
            return None, None
        finally:
            with self._lock:
                self.forwarded -= 1
        return response.status_code, response.json()

    def outcomes(self) -> list[Any]:
        with self._lock:
            return [outcome for _, _, outcome in self.log]
