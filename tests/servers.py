"""Loopback servers for the tests and the benchmarks, each kind written once.

* :class:`StubServer`: a threaded HTTP server on 127.0.0.1 (a free port) that answers each
  request's parsed JSON body in :meth:`StubServer.post`. The tests' fault proxy and honest stub
  judge and the HTTP benchmark's latency stub are its subclasses.
* :class:`ServerProcess`: a model server run as a child process in its own process group. It is
  started with a bounded readiness poll, can be killed mid-request (SIGKILL to the whole group)
  and stopped cleanly (SIGTERM, then SIGKILL). :class:`LlamaServer` (llama-cpp-python) and
  :class:`VLLMServer` (vLLM) are its subclasses.

Everything listens on loopback only, every wait is bounded, and a ``with`` block stops what it
started.
"""

from __future__ import annotations

import http.server
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# -- stubs: answers written in Python ------------------------------------------------------------


class StubRequest(http.server.BaseHTTPRequestHandler):
    """One request to a :class:`StubServer`, with helpers to answer it in JSON."""

    protocol_version = "HTTP/1.1"
    # headers and body go out as two writes: without this the client's delayed ACK adds 40 ms
    disable_nagle_algorithm = True

    def log_message(self, *args: Any) -> None:  # keep test output clean
        pass

    def do_GET(self) -> None:
        self.server.stub.get(self)

    def do_POST(self) -> None:
        self.server.stub.receive(self, self.rfile.read(int(self.headers.get("content-length", 0))))

    def send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        """Answer with ``payload`` as JSON and HTTP ``status`` (plus ``headers``)."""
        self.send_bytes(status, json.dumps(payload).encode(), headers)

    def send_bytes(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
        """Answer with exactly ``data`` (declared as JSON) and HTTP ``status``."""
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)


class _ThreadingServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # the default backlog of 5 resets connections a client opens in a burst


class StubServer:
    """An HTTP server on 127.0.0.1 whose subclass answers ``POST`` bodies in :meth:`post`.

    ``GET`` (``/v1/models``) lists one model, ``stub``. ``stopping`` is set when the ``with`` block
    ends, so a request the stub holds on purpose stops waiting.
    """

    def __init__(self) -> None:
        self.server = _ThreadingServer(("127.0.0.1", 0), StubRequest)
        self.server.stub = self  # how a request finds its stub
        self.port = self.server.server_address[1]
        self.root = f"http://127.0.0.1:{self.port}"
        self.base_url = f"{self.root}/v1"
        self.stopping = threading.Event()
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def get(self, request: StubRequest) -> None:
        request.send_json(200, {"object": "list", "data": [{"id": "stub", "object": "model"}]})

    def receive(self, request: StubRequest, data: bytes) -> None:
        """Answer one ``POST`` of raw ``data``: by default a JSON body, for :meth:`post` (a stub
        that takes uploads, such as a batch API's files, reads ``data`` itself)."""
        self.post(request, json.loads(data or b"{}"))

    def post(self, request: StubRequest, body: dict[str, Any]) -> None:
        """Answer one ``POST`` whose JSON body is ``body`` (with ``request.send_json``)."""
        raise NotImplementedError

    def __enter__(self) -> StubServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=5)


# -- real model servers, as child processes ------------------------------------------------------


class ServerProcess:
    """A model server with an OpenAI-compatible API, run as a child process on 127.0.0.1.

    port / log_path: where it listens and where its output goes (appended across restarts).
    Subclasses give :meth:`command` (and :meth:`environment`). ``start_seconds`` holds how long
    each start took until ``/v1/models`` answered.
    """

    READY_TIMEOUT = 180.0
    name = "the server"

    def __init__(self, port: int, log_path: Path):
        self.port = port
        self.log_path = Path(log_path)
        self.process: subprocess.Popen | None = None
        self.root = f"http://127.0.0.1:{port}"
        self.base_url = f"{self.root}/v1"
        self.start_seconds: list[float] = []

    def command(self) -> list[str]:
        raise NotImplementedError

    def environment(self) -> dict[str, str]:
        return dict(os.environ)

    def start(self) -> None:
        """Start it and wait until ``/v1/models`` answers (at most :attr:`READY_TIMEOUT` s)."""
        import httpx

        if self.process is not None and self.process.poll() is None:
            return  # already running
        began = time.monotonic()
        with open(self.log_path, "ab") as log:
            # its own process group, so a kill takes its children (vLLM's engine core) along
            self.process = subprocess.Popen(
                self.command(),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self.environment(),
                start_new_session=True,
            )
        while time.monotonic() < began + self.READY_TIMEOUT:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"{self.name} exited with {self.process.returncode}; see {self.log_path}:\n"
                    f"{self.log_path.read_text(errors='replace')[-3000:]}"
                )
            try:
                if httpx.get(f"{self.base_url}/models", timeout=2.0).status_code == 200:
                    self.start_seconds.append(time.monotonic() - began)
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.25)
        self.stop()
        raise RuntimeError(f"{self.name} was not ready after {self.READY_TIMEOUT:g} s; see {self.log_path}")

    def kill(self) -> None:
        """SIGKILL to its process group: it vanishes mid-request, as a crashed or preempted one does."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)

    def stop(self) -> None:
        """SIGTERM (a clean shutdown), then SIGKILL after 20 s."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()
        self.process = None

    def __enter__(self) -> ServerProcess:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class LlamaServer(ServerProcess):
    """``python -m llama_cpp.server`` serving a GGUF as ``smollm2``.

    threads: ggml's compute threads. One by default: they spin while waiting for each other, so on
        a small shared machine two threads are several times slower than one.
    """

    name = "llama_cpp.server"

    def __init__(self, model: Path, port: int, log_path: Path, threads: int = 1):
        super().__init__(port, log_path)
        self.model = model
        self.threads = threads

    def command(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(self.model),
            "--model_alias",
            "smollm2",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--n_ctx",
            "2048",
            "--n_threads",
            str(self.threads),
            "--n_threads_batch",
            str(self.threads),
            "--verbose",
            "False",
        ]


class VLLMServer(ServerProcess):
    """vLLM's OpenAI-compatible server serving a model directory as ``smollm2``.

    model_dir: the model directory (SmolLM2's bf16 copy).
    prefix_caching: ``--enable-prefix-caching`` or ``--no-enable-prefix-caching``.
    enforce_eager: ``--enforce-eager`` (no compilation: it starts in about half the time).
    kv_cache_gib: ``VLLM_CPU_KVCACHE_SPACE`` (GiB of KV cache on a CPU).
    """

    READY_TIMEOUT = 420.0
    name = "the vLLM server"

    def __init__(
        self,
        model_dir: Path,
        port: int,
        log_path: Path,
        *,
        prefix_caching: bool = True,
        enforce_eager: bool = True,
        kv_cache_gib: int = 1,
        max_model_len: int = 4096,
    ):
        super().__init__(port, log_path)
        self.model_dir = model_dir
        self.prefix_caching = prefix_caching
        self.enforce_eager = enforce_eager
        self.kv_cache_gib = kv_cache_gib
        self.max_model_len = max_model_len

    def command(self) -> list[str]:
        """The server's command line (the distribution is ``vllm-cpu``, so its ``vllm`` console
        script cannot find its own metadata: the module is run instead)."""
        command = [
            sys.executable,
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            str(self.model_dir),
            "--served-model-name",
            "smollm2",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--dtype",
            "bfloat16",
            "--max-model-len",
            str(self.max_model_len),
            "--enable-prefix-caching" if self.prefix_caching else "--no-enable-prefix-caching",
        ]
        return command + (["--enforce-eager"] if self.enforce_eager else [])

    def environment(self) -> dict[str, str]:
        return {**os.environ, "VLLM_CPU_KVCACHE_SPACE": str(self.kv_cache_gib)}

    def metric(self, name: str) -> float:
        """The sum over labels of a Prometheus metric at ``/metrics`` (0 when absent)."""
        import httpx

        total = 0.0
        for line in httpx.get(f"{self.root}/metrics", timeout=5.0).text.splitlines():
            if line.startswith(name) and line[len(name) : len(name) + 1] in ("{", " "):
                total += float(line.rsplit(" ", 1)[1])
        return total
