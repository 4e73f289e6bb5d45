"""A simulated answer writer for ``rankkit generate``'s tests and demos: no model, deterministic answers.

``sim:NAME[,quality=Q][,spread=S][,seed=N]`` in ``--models`` answers every conversation with filler
text drawn from (name, seed, conversation), and plants a quality per answer: ``Q`` plus a normal draw
of standard deviation ``S``, clipped to [0, 1]. The planted qualities become the candidates' human
scores (``human.quality``), so the simulated judge (``--judge sim``) can rank the writers and a
board can be checked against the planted order.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterator, Sequence
from typing import Any

from rankkit.data.specs import SpecError, parse_spec
from rankkit.judges.llm.runtime import Capacity, Chat, Generation, LLMRuntime

_WORDS = (
    "the answer follows from the definition so we check each case and note where the claim holds "
    "because every step keeps the invariant while the example shows why a simpler rule fails"
).split()


class SimulatedWriter(LLMRuntime):
    """A runtime whose replies are deterministic filler with a planted quality (see the module docstring)."""

    backend = "sim-writer"
    verdict_path = None
    capacity = Capacity(requests=64)

    def __init__(self, name: str, quality: float = 0.5, spread: float = 0.15, seed: int = 0):
        if not 0.0 <= quality <= 1.0 or spread < 0.0:
            raise SpecError(f"sim:{name}: quality must be in [0, 1] and spread >= 0")
        self.name = name
        self.quality = quality
        self.spread = spread
        self.seed = seed

    @classmethod
    def from_spec(cls, text: str, name: str) -> SimulatedWriter:
        """``sim:NAME,quality=Q,spread=S,seed=N`` (``name=`` already taken out) as a writer named ``name``."""
        spec = parse_spec(text)
        unknown = sorted(set(spec.options) - {"quality", "spread", "seed"})
        if unknown:
            raise SpecError(f"{text}: unknown option {unknown[0]!r} (sim: takes quality, spread, seed, name)")
        try:
            numbers = {key: float(value) for key, value in spec.options.items() if key != "seed"}
            seed = int(spec.options.get("seed", 0))
        except (TypeError, ValueError):
            raise SpecError(f"{text}: quality and spread must be numbers, seed an integer") from None
        return cls(name, seed=seed, **numbers)

    def identity(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "name": self.name,
            "quality": self.quality,
            "spread": self.spread,
            "seed": self.seed,
        }

    def _rng(self, conversation: Chat) -> random.Random:
        text = json.dumps([self.name, self.seed, conversation], ensure_ascii=False)
        return random.Random(hashlib.sha256(text.encode("utf-8")).hexdigest())

    def planted_quality(self, conversation: Chat) -> float:
        """The quality planted in the reply to ``conversation``, in [0, 1]."""
        return min(1.0, max(0.0, self.quality + self._rng(conversation).gauss(0.0, self.spread)))

    def reply(self, conversation: Chat, max_new_tokens: int) -> str:
        rng = self._rng(conversation)
        words = [rng.choice(_WORDS) for _ in range(min(max_new_tokens, 12 + rng.randrange(24)))]
        return f"({self.name}, simulated) " + " ".join(words) + "."

    def generate(
        self, conversations: Sequence[Chat], *, max_new_tokens: int, temperature: float, seed: int
    ) -> Iterator[tuple[int, Generation]]:
        """Yield each reply with token counts (a word a token); ``temperature`` and ``seed`` change nothing."""
        for index, conversation in enumerate(conversations):
            text = self.reply(conversation, max_new_tokens)
            prompt_words = sum(len(m["content"].split()) for m in conversation)
            yield index, Generation(text, {"prompt_tokens": prompt_words, "completion_tokens": len(text.split())})

    def next_token_logprobs(self, conversations, *, prefixes, choices):
        raise NotImplementedError("a simulated writer answers; it does not judge")

    def answer_logliks(self, conversations, answers):
        raise NotImplementedError("a simulated writer answers; it does not judge")
