"""Batch planning and shared-prefix key/value caches for the hf runtime.

:func:`prefix_lengths` picks, for each prompt of a runtime call, the prefix whose keys and values
are computed once and shared; :func:`plan_batches` groups rows by suffix length under the
``batch_size``, ``max_batch_tokens`` and ``max_padding`` caps; :class:`PrefixCache` keeps prefix
caches between calls (a bounded LRU). All of it is pure Python over token ids except the two
adapters to transformers' cache objects at the end (:func:`cache_tensors`, :func:`make_cache`).
See :mod:`rankkit.judges.hf` for how the runtime uses them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: Default shortest shared prompt prefix, in tokens, whose key/value cache is computed once.
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
#: Bounds on the shared prefixes' key/value caches a runtime keeps between calls (an LRU): at
#: most this many prefixes and this many bytes. SmolLM2-135M in bf16 holds 23 KB per token, so
#: 256 MiB is ~11,000 prefix tokens: the instruction and question of a few dozen tasks.
PREFIX_CACHE_ENTRIES = 64
PREFIX_CACHE_BYTES = 256 * 2**20


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
    """How many leading tokens ``a`` and ``b`` have in common.

    Parameters
    ----------
    a : Sequence[int]
        Token ids.
    b : Sequence[int]
        Token ids.

    Returns
    -------
    int
        The length of the common prefix.
    """
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


def prefix_lengths(sequences: Sequence[Sequence[int]], min_shared: int, keep: Sequence[int] | None = None) -> list[int]:
    """For each sequence, how many leading tokens to take from a shared prefix's key/value cache.

    Sorted in token order, prompts form a tree of shared prefixes: chat header and template
    instruction, then one task's question, then one first answer... A prefix is computed once
    for all sequences under it, so each sequence takes the deepest one worth it: at least
    ``min_shared`` tokens long, and saving at least ``min_shared`` tokens of computation over the
    shallower prefix it extends (``extra tokens x (sequences under it - 1)``), which keeps a few
    extra tokens from costing a forward pass of their own.

    Parameters
    ----------
    sequences : Sequence[Sequence[int]]
        The prompts' token ids (any number, from any tasks).
    min_shared : int
        Shortest prefix worth sharing, in tokens; 0 disables sharing.
    keep : Sequence[int] | None
        ``keep[i]`` final tokens of sequence i must be computed in its batch (their logits are
        read), so its prefix never reaches into them; default 1 each.

    Returns
    -------
    list[int]
        Per sequence, the length of the cached prefix it starts from (0: none).
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
    """Token positions a batch holds: rows x (longest prefix + longest suffix + ``extra_tokens``,
    the tokens a generate call appends to every row). Prefixes and suffixes are left-padded.

    Parameters
    ----------
    prefixes : Sequence[int]
        Each row's prefix length.
    suffixes : Sequence[int]
        Each row's suffix length.
    extra_tokens : int
        Tokens a generate call appends to every row.

    Returns
    -------
    int
        The number of token positions.
    """
    return len(suffixes) * (max(prefixes) + max(suffixes) + extra_tokens)


def plan_batches(
    lengths: Sequence[int],
    prefixes: Sequence[int] | None,
    batch_size: int,
    max_tokens: float | None = None,
    extra_tokens: int = 0,
    max_padding: float | None = None,
) -> list[Batch]:
    """Split sequences (any number, from any tasks) into batches.

    Rows are taken longest suffix first, so rows of similar length share a batch and little
    padding is computed; a batch closes when one more row would exceed ``batch_size``,
    ``max_tokens`` or ``max_padding``.

    Parameters
    ----------
    lengths : Sequence[int]
        Each sequence's length in tokens.
    prefixes : Sequence[int] | None
        How many leading tokens of each come from a cached prefix (:func:`prefix_lengths`;
        None: none); the rest, the suffix, is computed in the batch.
    batch_size : int
        Most rows per batch.
    max_tokens : float | None
        Most padded tokens per batch (:func:`padded_tokens`; None: no limit). A sequence
        too long for it on its own still runs, alone.
    extra_tokens : int
        Tokens each row grows by while the batch runs (``max_new_tokens`` when
        generating), counted against ``max_tokens``.
    max_padding : float | None
        Most padding a batch may compute, as a fraction of its rows' own suffix tokens
        (None: no limit). Padding is pure waste where compute is the bottleneck (a CPU), and
        nearly free where a batch is not (a GPU with room to spare).

    Returns
    -------
    list[Batch]
        The batches: each its rows' indices and their prefix lengths.
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
    """Bytes held by per-layer (keys, values) tensors.

    Parameters
    ----------
    kv : Sequence[tuple[Any, Any]]
        Per-layer (keys, values) tensors.

    Returns
    -------
    int
        The bytes.
    """
    return sum(t.numel() * t.element_size() for pair in kv for t in pair)


def kv_prefix(kv: Sequence[tuple[Any, Any]], length: int) -> list[tuple[Any, Any]]:
    """The first ``length`` positions of per-layer ``[batch, heads, positions, dim]`` keys and
    values: a causal model's cache of a prompt's first ``length`` tokens (views, no copy).

    Parameters
    ----------
    kv : Sequence[tuple[Any, Any]]
        Per-layer (keys, values) tensors.
    length : int
        How many leading positions to keep.

    Returns
    -------
    list[tuple[Any, Any]]
        Per-layer (keys, values) views.
    """
    return [(k[:, :, :length], v[:, :, :length]) for k, v in kv]


class PrefixCache:
    """Key/value caches of prompt prefixes kept between runtime calls, least recently used first
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
        """The most leading tokens of ``tokens`` any entry holds (the LRU order is untouched).

        Parameters
        ----------
        tokens : Sequence[int]
            Token ids.

        Returns
        -------
        int
            The number of tokens.
        """
        return self._best(tokens)[1]

    def longest(self, tokens: Sequence[int]) -> tuple[int, list | None]:
        """(m, kv): the most leading tokens of ``tokens`` any entry holds, and their cache
        (``(0, None)`` when none). The entry used becomes the most recently used.

        Parameters
        ----------
        tokens : Sequence[int]
            Token ids.

        Returns
        -------
        tuple[int, list | None]
            ``(m, kv)``.
        """
        best_key, best = self._best(tokens)
        if best_key is None:
            return 0, None
        entry = self._entries.pop(best_key)
        self._entries[best_key] = entry
        kv = entry[0]
        return best, (kv if best == len(best_key) else kv_prefix(kv, best))

    def get(self, tokens: Sequence[int]) -> list | None:
        """The entry stored under exactly ``tokens`` (None if there is none), made the most
        recently used. Exact mode's blocks are looked up this way (:mod:`rankkit.judges.hf_exact`).

        Parameters
        ----------
        tokens : Sequence[int]
            Token ids.

        Returns
        -------
        list | None
            The cached per-layer keys and values, or None.
        """
        key = tuple(tokens)
        entry = self._entries.pop(key, None)
        if entry is None:
            return None
        self._entries[key] = entry
        return entry[0]

    def put(self, tokens: Sequence[int], kv: list, positions: int | None = None) -> None:
        """Keep ``kv``, the cache of ``tokens`` (or, given ``positions``, of their last
        ``positions`` tokens: an exact-mode block), evicting the least recently used entries to
        stay within bounds. Not kept: an entry bigger than ``max_bytes`` alone, and caches that do
        not hold one position per token (sliding-window layers), which cannot be sliced.

        Parameters
        ----------
        tokens : Sequence[int]
            Token ids.
        kv : list
            Their per-layer keys and values.
        positions : int | None
            How many of the last tokens ``kv`` covers (None: all of them).
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
    """The keyword that passes ``cache`` to ``module``'s forward pass, as a one-item dict.

    transformers 5 renamed ``past_key_values`` to ``cache`` and warns (a FutureWarning, once per
    module class: three times per run) on the old name; 4.x knows only the old one. The name is
    read from the forward's signature, so each version gets the name it documents.

    Parameters
    ----------
    module : Any
        The model (or layer) whose forward pass takes the cache.
    cache : Any
        The cache.

    Returns
    -------
    dict[str, Any]
        ``{"cache": cache}`` or ``{"past_key_values": cache}``.
    """
    import inspect

    takes_cache = "cache" in inspect.signature(module.forward).parameters
    return {"cache" if takes_cache else "past_key_values": cache}


def returned_cache(output: Any) -> Any:
    """The cache a forward pass with ``use_cache=True`` returned: ``output.cache`` in transformers
    5 (whose ``past_key_values`` property logs a deprecation), ``output.past_key_values`` in 4.x.

    Parameters
    ----------
    output : Any
        A forward pass's output.

    Returns
    -------
    Any
        The cache.
    """
    return output["cache"] if "cache" in output.keys() else output["past_key_values"]


def cache_tensors(cache: Any) -> list[tuple[Any, Any]]:
    """Per-layer (keys, values) of a transformers cache object (4.x and 5.x layouts).

    Parameters
    ----------
    cache : Any
        A transformers cache object.

    Returns
    -------
    list[tuple[Any, Any]]
        Per-layer (keys, values) tensors.
    """
    if hasattr(cache, "layers"):
        return [(layer.keys, layer.values) for layer in cache.layers]
    if hasattr(cache, "key_cache"):
        return list(zip(cache.key_cache, cache.value_cache))
    return [(k, v) for k, v in cache]


def make_cache(kv: list[tuple[Any, Any]], batch: int, config: Any) -> Any:
    """A fresh DynamicCache holding ``kv`` broadcast to ``batch`` rows (the forward pass appends
    to it, so every batch needs its own).

    Parameters
    ----------
    kv : list[tuple[Any, Any]]
        Per-layer (keys, values) tensors of one row.
    batch : int
        The number of rows.
    config : Any
        The model's config.

    Returns
    -------
    DynamicCache
        The cache.
    """
    from transformers import DynamicCache

    expanded = [(k.expand(batch, -1, -1, -1), v.expand(batch, -1, -1, -1)) for k, v in kv]
    try:
        return DynamicCache(ddp_cache_data=expanded, config=config)
    except TypeError:  # transformers 4.x
        return DynamicCache.from_legacy_cache(tuple(expanded))
