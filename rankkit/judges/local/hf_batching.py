"""Batch planning and shared-prefix key/value caches for the hf runtime (:mod:`rankkit.judges.local.hf`).

Pure Python over token ids, except the adapters to transformers' cache objects at the end.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: Default shortest shared prompt prefix, in tokens, whose key/value cache is computed once.
DEFAULT_SHARED_PREFIX = 64
#: Default cap on a batch's padded tokens: it bounds a forward pass's activations (raise it on a GPU).
DEFAULT_MAX_BATCH_TOKENS = 8192
#: Default cap on a batch's padding, as a fraction of its rows' real tokens: on a CPU padding is
#: pure waste; raise it (``max_padding=inf``) on a GPU, where fuller batches pay.
DEFAULT_MAX_PADDING = 0.25
#: Bounds on the prefix caches a runtime keeps between calls (256 MiB: ~11,000 tokens of SmolLM2-135M).
PREFIX_CACHE_ENTRIES = 64
PREFIX_CACHE_BYTES = 256 * 2**20


# ---------------------------------------------------------------------------------------------
# Batch planning (pure)


@dataclass(frozen=True)
class Batch:
    """Prompts run together: their indices and, per row, how many leading tokens come from a cached prefix (0: none)."""

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


#: How deep :func:`prefix_lengths` follows nested prefixes: keeps pathological input from exhausting recursion.
MAX_PREFIX_DEPTH = 32


def prefix_lengths(sequences: Sequence[Sequence[int]], min_shared: int, keep: Sequence[int] | None = None) -> list[int]:
    """For each sequence, how many leading tokens to take from a shared prefix's key/value cache (0: none).

    Sorted in token order, prompts form a tree of shared prefixes (instruction, question, first
    answer...). Each sequence takes the deepest prefix at least ``min_shared`` tokens long that also
    saves at least ``min_shared`` tokens over the shallower one it extends (``min_shared=0`` disables
    sharing). ``keep[i]`` final tokens of sequence i are never cached (their logits are read;
    default 1).
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
        common = min(lcp[lo : hi - 1])
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
    """Token positions a batch holds: rows x (longest prefix + longest suffix + ``extra_tokens``), left-padded."""
    return len(suffixes) * (max(prefixes) + max(suffixes) + extra_tokens)


def plan_batches(
    lengths: Sequence[int],
    prefixes: Sequence[int] | None,
    batch_size: int,
    max_tokens: float | None = None,
    extra_tokens: int = 0,
    max_padding: float | None = None,
) -> list[Batch]:
    """Split sequences (any number, from any tasks) into batches, longest suffix first.

    A batch closes when one more row would exceed ``batch_size``, ``max_tokens`` or ``max_padding``.

    Parameters
    ----------
    prefixes
        Leading tokens of each sequence that come from a cached prefix (:func:`prefix_lengths`; None: none).
    max_tokens
        Most padded tokens per batch (:func:`padded_tokens`; None: no limit). A sequence too long
        for it alone still runs, alone.
    extra_tokens
        Tokens each row grows by while the batch runs (``max_new_tokens`` when generating).
    max_padding
        Most padding per batch, as a fraction of its rows' own suffix tokens (None: no limit).
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
        if rows and (
            len(rows) >= batch_size
            or padded_tokens([prefixes[i] for i in grown], [suffixes[i] for i in grown], extra_tokens) > budget
            or padding > waste * sum(suffixes[i] for i in grown)
        ):
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
    """The first ``length`` positions of per-layer ``[batch, heads, positions, dim]`` keys and values (views)."""
    return [(k[:, :, :length], v[:, :, :length]) for k, v in kv]


class PrefixCache:
    """Key/value caches of prompt prefixes kept between runtime calls: an LRU bounded by ``max_entries`` and ``max_bytes``.

    A causal model's keys and values at position t depend only on tokens 0..t, so the cache of any
    prefix of a cached prompt is a slice of it: :meth:`longest` reuses one task's instruction for
    every other task's prompt.
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
        """``(m, kv)``: the most leading tokens of ``tokens`` any entry holds and their cache (``(0, None)``: none).

        The entry used becomes the most recently used.
        """
        best_key, best = self._best(tokens)
        if best_key is None:
            return 0, None
        entry = self._entries.pop(best_key)
        self._entries[best_key] = entry
        kv = entry[0]
        return best, (kv if best == len(best_key) else kv_prefix(kv, best))

    def get(self, tokens: Sequence[int]) -> list | None:
        """The entry stored under exactly ``tokens`` (None if none), made the most recently used."""
        key = tuple(tokens)
        entry = self._entries.pop(key, None)
        if entry is None:
            return None
        self._entries[key] = entry
        return entry[0]

    def put(self, tokens: Sequence[int], kv: list, positions: int | None = None) -> None:
        """Keep ``kv``, the cache of ``tokens`` (or of their last ``positions`` tokens), evicting LRU entries.

        Not kept: an entry bigger than ``max_bytes`` alone, and caches without one position per token
        (sliding-window layers), which cannot be sliced.
        """
        key = tuple(tokens)
        size = kv_nbytes(kv)
        held = len(key) if positions is None else positions
        if key in self._entries or size > self.max_bytes or any(k.shape[-2] != held for k, _ in kv):
            return
        while self._entries and (len(self._entries) >= self.max_entries or self.nbytes + size > self.max_bytes):
            _, freed = self._entries.pop(next(iter(self._entries)))
            self.nbytes -= freed
        self._entries[key] = (kv, size)
        self.nbytes += size


# ---------------------------------------------------------------------------------------------
# transformers' cache objects


def cache_argument(module: Any, cache: Any) -> dict[str, Any]:
    """``{"cache": cache}`` or ``{"past_key_values": cache}``: the keyword ``module``'s forward documents.

    transformers 5 renamed ``past_key_values`` to ``cache`` and warns on the old name; 4.x knows only the old one.
    """
    import inspect

    takes_cache = "cache" in inspect.signature(module.forward).parameters
    return {"cache" if takes_cache else "past_key_values": cache}


def returned_cache(output: Any) -> Any:
    """The cache a forward pass returned: ``output.cache`` in transformers 5, ``output.past_key_values`` in 4.x."""
    return output["cache"] if "cache" in output.keys() else output["past_key_values"]


def cache_tensors(cache: Any) -> list[tuple[Any, Any]]:
    """Per-layer (keys, values) of a transformers cache object (4.x and 5.x layouts)."""
    if hasattr(cache, "layers"):
        return [(layer.keys, layer.values) for layer in cache.layers]
    if hasattr(cache, "key_cache"):
        return list(zip(cache.key_cache, cache.value_cache))
    return [(k, v) for k, v in cache]


def make_cache(kv: list[tuple[Any, Any]], batch: int, config: Any) -> Any:
    """A fresh DynamicCache holding one row's ``kv`` broadcast to ``batch`` rows (the forward pass appends to it)."""
    from transformers import DynamicCache

    expanded = [(k.expand(batch, -1, -1, -1), v.expand(batch, -1, -1, -1)) for k, v in kv]
    try:
        return DynamicCache(ddp_cache_data=expanded, config=config)
    except TypeError:  # transformers 4.x
        return DynamicCache.from_legacy_cache(tuple(expanded))
