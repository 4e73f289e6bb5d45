"""Exact mode of the hf runtime: each prompt runs alone from canonical block prefixes.

So a judgment is the same bits whatever else ran. More in ``docs/judges-llm.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rankkit.judges.local.hf_batching import PrefixCache, cache_argument, cache_tensors, make_cache, returned_cache

#: Default block size, in tokens: a pass has a fixed cost, so only long shared prefixes are worth
#: one of their own (measured in ``benchmarks/results/hf_exact.md``).
DEFAULT_BLOCK = 512
#: Default bound on cached blocks (lookups are a dict; the byte bound binds first on real models).
BLOCK_CACHE_ENTRIES = 4096


def exact_identity(identity: dict[str, Any], exact: bool, block: int) -> dict[str, Any]:
    """``identity`` with ``"exact": true, "block": N`` added in exact mode, so exact judgments are cached apart.

    The batched identity is left unchanged, so judgments cached before exact mode are still found.
    """
    return {**identity, "exact": True, "block": block} if exact else dict(identity)


class ExactRows:
    """Forward passes of one prompt at a time from canonical ``block``-token prefixes.

    ``blocks`` caches blocks by the token tuple of the prefix each ends; ``stats`` is updated in place.
    """

    def __init__(self, model: Any, block: int, blocks: PrefixCache, stats: dict[str, int]):
        self.model = model
        self.block = block
        self.blocks = blocks
        self.stats = stats

    def boundary(self, length: int, keep: int) -> int:
        """The last block boundary leaving at least ``keep`` tokens of a ``length``-token prompt to its final pass (0: none)."""
        return max(0, (length - keep) // self.block * self.block)

    def _forward(self, tokens: Sequence[int], start: int, past: list | None) -> Any:
        """The decoder on ``tokens`` at positions ``start``.. after ``past``: one row, no padding, no mask."""
        import torch

        device = self.model.device
        ids = torch.tensor([list(tokens)], device=device)
        positions = torch.arange(start, start + len(tokens), device=device)[None]
        decoder = self.model.get_decoder()
        kwargs: dict[str, Any] = {}
        if past is not None:
            kwargs = cache_argument(decoder, make_cache(past, 1, self.model.config))
        return decoder(input_ids=ids, position_ids=positions, use_cache=True, **kwargs)

    def prefix(self, sequence: Sequence[int], end: int) -> list | None:
        """Keys and values of ``sequence[:end]`` (a block boundary; None when 0), reusing and caching blocks."""
        import torch

        ends = range(self.block, end + 1, self.block)
        found = [self.blocks.get(sequence[:e]) for e in ends]
        hits = next((k for k, kv in enumerate(found) if kv is None), len(found))
        self.stats["blocks_reused"] += hits
        past = _concat(found[:hits]) if hits else None
        for k in range(hits, len(found)):
            start = k * self.block
            if found[k] is None:
                out = self._forward(sequence[start : start + self.block], start, past)
                past = cache_tensors(returned_cache(out))
                # A copy, not a view: a view would keep the whole prefix's tensors alive.
                found[k] = [
                    (
                        keys[:, :, start:].clone(memory_format=torch.contiguous_format),
                        values[:, :, start:].clone(memory_format=torch.contiguous_format),
                    )
                    for keys, values in past
                ]
                self.blocks.put(sequence[: start + self.block], found[k], positions=self.block)
                self.stats["blocks_computed"] += 1
            else:  # cached although an earlier block was not (evicted before it): same tensors
                past = _concat([past, found[k]]) if past is not None else found[k]
                self.stats["blocks_reused"] += 1
        return past

    def hidden(self, sequence: Sequence[int], keep: int = 1) -> Any:
        """Last hidden states ``[1, tokens, hidden]`` of the prompt's final pass (at least ``keep`` tokens)."""
        start = self.boundary(len(sequence), keep)
        out = self._forward(sequence[start:], start, self.prefix(sequence, start))
        self.stats["exact_rows"] += 1
        self.stats["real_tokens"] += len(sequence) - start
        return out.last_hidden_state

    def generate(
        self,
        sequence: Sequence[int],
        *,
        lm_head: Any,
        max_new_tokens: int,
        min_new_tokens: int,
        temperature: float,
        seed: int,
        stop_ids: Sequence[int],
    ) -> list[int]:
        """New token ids after the prompt (stop token excluded), one row, one token per pass.

        Greedy at temperature 0; otherwise sampled from a generator seeded with ``seed`` for this row
        alone, so the reply depends on its prompt and seed only. ``min_new_tokens``: fewest tokens before
        a stop token counts.
        """
        import torch

        start = self.boundary(len(sequence), 1)
        out = self._forward(sequence[start:], start, self.prefix(sequence, start))
        self.stats["exact_rows"] += 1
        self.stats["real_tokens"] += len(sequence) - start
        generator = torch.Generator(device=self.model.device).manual_seed(seed)
        cache, new = returned_cache(out), []
        while len(new) < max_new_tokens:
            logits = lm_head(out.last_hidden_state[:, -1]).float()[0]
            if len(new) < min_new_tokens:
                logits[list(stop_ids)] = -float("inf")
            if temperature > 0:
                token = int(torch.multinomial(torch.softmax(logits / temperature, -1), 1, generator=generator))
            else:
                token = int(logits.argmax())
            if token in stop_ids:
                break
            new.append(token)
            position = len(sequence) + len(new) - 1
            ids = torch.tensor([[token]], device=self.model.device)
            decoder = self.model.get_decoder()
            out = decoder(
                input_ids=ids,
                position_ids=torch.tensor([[position]], device=ids.device),
                use_cache=True,
                **cache_argument(decoder, cache),
            )
            cache = returned_cache(out)
        return new


def _concat(blocks: Sequence[list]) -> list:
    """Per-layer keys and values of consecutive blocks, joined along the positions."""
    import torch

    if len(blocks) == 1:
        return blocks[0]
    return [
        (torch.cat([b[layer][0] for b in blocks], dim=2), torch.cat([b[layer][1] for b in blocks], dim=2))
        for layer in range(len(blocks[0]))
    ]
