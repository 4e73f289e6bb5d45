"""The hf runtime: :class:`HFRuntime` runs an LLM judge's runtime calls on a loaded transformers model.

Batching and shared prefixes: :mod:`rankkit.judges.local.hf_batching`; exact mode:
:mod:`rankkit.judges.local.hf_exact`; the whole story in :mod:`rankkit.judges.local.hf`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from rankkit.data.specs import SpecError
from rankkit.judges.llm.context import check_fit
from rankkit.judges.llm.runtime import Capacity, Chat, Generation, LLMRuntime
from rankkit.judges.local import chat_tokens
from rankkit.judges.local.hf_batching import (
    DEFAULT_MAX_BATCH_TOKENS,
    DEFAULT_MAX_PADDING,
    DEFAULT_SHARED_PREFIX,
    PREFIX_CACHE_BYTES,
    PREFIX_CACHE_ENTRIES,
    Batch,
    PrefixCache,
    cache_argument,
    cache_tensors,
    make_cache,
    plan_batches,
    prefix_lengths,
    returned_cache,
)
from rankkit.judges.local.hf_exact import BLOCK_CACHE_ENTRIES, DEFAULT_BLOCK, ExactRows, exact_identity
from rankkit.judges.local.hf_loading import import_torch


class HFRuntime(LLMRuntime):
    """An :class:`~rankkit.judges.llm.runtime.LLMRuntime` on a loaded transformers causal LM.

    Every method takes any number of conversations and plans its own batches (:func:`plan_batches`),
    yielding ``(index, result)`` per batch as soon as it is done.

    identity: what names the weights in the fingerprint (never a path that moves).
    shared_prefix: minimum shared prefix in tokens whose KV cache is computed once; 0 = off.
    max_batch_tokens / max_padding: caps of :func:`plan_batches`; a longer prompt runs alone.
    threads: torch CPU threads (None: torch's setting), set when the runtime computes.
    min_new_tokens: ``generate`` writes at least this many tokens (benchmarks).
    prefix_cache_entries / prefix_cache_bytes: bounds of the prefix KV cache kept between calls.
    exact: run every prompt alone from canonical ``block``-token prefix blocks
        (:mod:`rankkit.judges.local.hf_exact`), so each judgment depends on its own prompt only; the
        batching options then do not apply and ``capacity`` is 1.
    context: the model's context and its config field; a longer prompt raises
        :class:`~rankkit.judges.llm.runtime.PromptTooLong` before anything is computed. None: unchecked.
    """

    backend = "hf"
    #: The runtime appends a forced prefix to the prompt tokens itself.
    verdict_path = "continuation"

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        identity: dict[str, Any],
        *,
        batch_size: int = 8,
        shared_prefix: int = DEFAULT_SHARED_PREFIX,
        max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS,
        max_padding: float = DEFAULT_MAX_PADDING,
        threads: int | None = None,
        min_new_tokens: int = 0,
        prefix_cache_entries: int | None = None,
        prefix_cache_bytes: int = PREFIX_CACHE_BYTES,
        exact: bool = False,
        block: int = DEFAULT_BLOCK,
        context: tuple[int, str] | None = None,
    ):
        if prefix_cache_entries is None:
            prefix_cache_entries = BLOCK_CACHE_ENTRIES if exact else PREFIX_CACHE_ENTRIES
        check_settings(
            batch_size,
            shared_prefix,
            max_batch_tokens,
            max_padding,
            block,
            prefix_cache_entries,
            prefix_cache_bytes,
            threads,
        )
        self.model = model
        self.tokenizer = tokenizer
        self._identity = dict(identity)
        self.batch_size = batch_size
        self.shared_prefix = shared_prefix
        self.max_batch_tokens = max_batch_tokens
        self.max_padding = max_padding
        self.min_new_tokens = min_new_tokens
        self.threads = threads
        self.stats = runtime_stats()
        self._prefixes = PrefixCache(prefix_cache_entries, prefix_cache_bytes)
        self.exact = exact
        self.block = block
        self.context = context
        self._exact = ExactRows(model, block, self._prefixes, self.stats) if exact else None

    @property
    def capacity(self) -> Capacity:  # type: ignore[override]
        """One call should get ``batch_size`` requests (1 in exact mode) to fill the hardware: waiting for them pays."""
        return Capacity(1 if self.exact else self.batch_size, fills_batches=True)

    def identity(self) -> dict[str, Any]:
        """What names the model for the fingerprint: weights, dtype, and exact mode's settings when on."""
        return exact_identity(self._identity, self.exact, self.block)

    def close(self) -> None:
        """Nothing to release: the model stays loaded for other judges in this process."""

    def _torch(self):
        """torch, with this runtime's CPU threads (process-wide, so applied when it computes)."""
        torch = import_torch()
        if self.threads is not None and torch.get_num_threads() != self.threads:
            torch.set_num_threads(self.threads)
        return torch

    # -- text -> tokens -----------------------------------------------------------------------
    def chat_text(self, conversation: Chat) -> str:
        """The prompt text up to where the assistant's reply starts (:func:`.chat_tokens.chat_text`)."""
        return chat_tokens.chat_text(self.tokenizer, conversation)

    def encode(self, text: str) -> list[int]:
        """Token ids of trusted ``text`` (a template's, never a candidate's), no special tokens added."""
        return chat_tokens.encode(self.tokenizer, text)

    def prompt_ids(self, conversation: Chat, continuation: str = "") -> list[int]:
        """The token ids of a conversation's prompt followed by ``continuation`` (:func:`.chat_tokens.encode_chat`)."""
        return chat_tokens.encode_chat(self.tokenizer, conversation, continuation)

    def choice_token_ids(self, assistant_prefix: str, choices: Sequence[str]) -> tuple[str, list[int]]:
        """The prefix to append and the token id of each choice right after it (:func:`.chat_tokens.choice_token_ids`)."""
        return chat_tokens.choice_token_ids(self.tokenizer, assistant_prefix, choices, "hf")

    def _check_fit(self, sequences: Sequence[Sequence[int]], reserve: int) -> None:
        """Refuse the call before any forward pass when a prompt does not fit the model's context."""
        if self.context is not None:
            limit, field = self.context
            check_fit(
                sequences,
                reserve,
                limit,
                f"the model's context of {limit:,} tokens ({field} in its config); "
                f"shorten the texts (--max-candidate-chars, --max-prompt-chars) or use a model with a "
                f"longer context",
                self.tokenizer.decode,
            )

    # -- forward passes -----------------------------------------------------------------------
    def _prefix_kv(self, prefix: Sequence[int]) -> list:
        """Key/value tensors of a shared prefix, extending the longest cached prefix it starts with; cached."""
        torch = self._torch()
        reused, kv = self._prefixes.longest(prefix)
        if reused == len(prefix):
            self.stats["prefix_cache_hits"] += 1
            self.stats["prefix_tokens_reused"] += reused
            return kv
        decoder = self.model.get_decoder()
        kwargs: dict[str, Any] = {}
        if reused:
            kwargs = cache_argument(decoder, make_cache(kv, 1, self.model.config))
            self.stats["prefix_cache_extensions"] += 1
            self.stats["prefix_tokens_reused"] += reused
        self.stats["prefix_passes"] += 1
        self.stats["prefix_tokens_computed"] += len(prefix) - reused
        ids = torch.tensor([list(prefix[reused:])], device=self.model.device)
        positions = torch.arange(reused, len(prefix), device=self.model.device)[None]
        out = decoder(input_ids=ids, position_ids=positions, use_cache=True, **kwargs)
        kv = cache_tensors(returned_cache(out))
        self._prefixes.put(prefix, kv)
        return kv

    def _count_batch(self, row_lengths: Sequence[int]) -> None:
        """Record one batch: its rows, and the real and padding tokens it computes."""
        self.stats["forward_batches"] += 1
        self.stats["batch_rows"] += len(row_lengths)
        self.stats["real_tokens"] += sum(row_lengths)
        self.stats["padding_tokens"] += len(row_lengths) * max(row_lengths) - sum(row_lengths)

    def _plan(self, sequences: Sequence[Sequence[int]], keep: Sequence[int] | None = None) -> list[Batch]:
        """Batches for one call: each row's prefix the deepest worth sharing or a longer cached one; rows by suffix length."""
        prefixes = prefix_lengths(sequences, self.shared_prefix, keep)
        if self.shared_prefix and len(self._prefixes):
            for i, sequence in enumerate(sequences):
                limit = len(sequence) - (keep[i] if keep is not None else 1)
                cached = min(self._prefixes.cached_length(sequence), limit)
                if cached >= self.shared_prefix and cached > prefixes[i]:
                    prefixes[i] = cached
        return plan_batches(
            [len(s) for s in sequences], prefixes, self.batch_size, self.max_batch_tokens, max_padding=self.max_padding
        )

    def _batch_past(self, sequences: Sequence[Sequence[int]], prefixes: Sequence[int]) -> Any:
        """A batch's starting KV cache: row i holds its first ``prefixes[i]`` tokens' cache, right-aligned (zero-padded)."""
        by_prefix: dict[tuple[int, ...], list] = {}
        row_kv = []
        for sequence, length in zip(sequences, prefixes):
            key = tuple(sequence[:length])
            if length and key not in by_prefix:
                by_prefix[key] = self._prefix_kv(key)
            row_kv.append(by_prefix.get(key) if length else None)
        past = max(prefixes)
        if len(by_prefix) == 1 and min(prefixes) == past:
            return make_cache(next(iter(by_prefix.values())), len(sequences), self.model.config)
        layers = []
        for layer, (keys0, values0) in enumerate(next(iter(by_prefix.values()))):
            keys = keys0.new_zeros((len(sequences), keys0.shape[1], past, keys0.shape[3]))
            values = values0.new_zeros((len(sequences), values0.shape[1], past, values0.shape[3]))
            for row, (kv, length) in enumerate(zip(row_kv, prefixes)):
                if kv is not None:
                    keys[row, :, past - length :] = kv[layer][0][0]
                    values[row, :, past - length :] = kv[layer][1][0]
            layers.append((keys, values))
        self.stats["past_padding_tokens"] += len(sequences) * past - sum(prefixes)
        return make_cache(layers, len(sequences), self.model.config)

    def _hidden(self, sequences: Sequence[Sequence[int]], prefixes: Sequence[int]):
        """Last hidden states ``[batch, length, hidden]`` of the rows' left-padded suffixes, after their cached prefixes."""
        torch = self._torch()
        device = self.model.device
        suffixes = [list(s[p:]) for s, p in zip(sequences, prefixes)]
        length = max(len(s) for s in suffixes)
        pad = self.tokenizer.pad_token_id
        input_ids = torch.tensor([[pad] * (length - len(s)) + s for s in suffixes], device=device)
        mask = torch.tensor([[0] * (length - len(s)) + [1] * len(s) for s in suffixes], device=device)
        # Each row's suffix continues its own prefix's positions.
        positions = (mask.cumsum(-1) - 1).clamp(min=0) + torch.tensor(list(prefixes), device=device)[:, None]
        decoder = self.model.get_decoder()
        kwargs: dict[str, Any] = {}
        past = max(prefixes)
        if past:
            kwargs = cache_argument(decoder, self._batch_past(sequences, prefixes))
            past_mask = torch.tensor([[0] * (past - p) + [1] * p for p in prefixes], dtype=mask.dtype, device=device)
            mask = torch.cat([past_mask, mask], dim=1)
            self.stats["shared_prefix_batches"] += 1
            self.stats["prefix_tokens_saved"] += sum(prefixes)
        self._count_batch([len(s) for s in suffixes])
        out = decoder(input_ids=input_ids, attention_mask=mask, position_ids=positions, use_cache=bool(past), **kwargs)
        return out.last_hidden_state

    def _logits(self, hidden):
        return self.model.get_output_embeddings()(hidden).float()

    def next_token_logprobs(
        self,
        conversations: Sequence[Chat],
        *,
        prefixes: Sequence[str],
        choices: Sequence[Sequence[str]],
    ) -> Iterator[tuple[int, dict[str, float]]]:
        """Yield ``(index, logprobs)`` of each row's ``choices`` as the next token after its forced reply prefix, batched.

        A row's choices' first tokens must differ.
        """
        torch = self._torch()

        keys = [(prefix, tuple(row)) for _, prefix, row in zip(conversations, prefixes, choices, strict=True)]
        read = {key: self.choice_token_ids(*key) for key in dict.fromkeys(keys)}
        sequences = [self.prompt_ids(c, read[key][0]) for c, key in zip(conversations, keys)]
        choice_ids = [read[key][1] for key in keys]
        self._check_fit(sequences, reserve=1)
        if self._exact is not None:
            for index in _token_order(sequences):
                with torch.inference_mode():
                    hidden = self._exact.hidden(sequences[index])
                    row = torch.log_softmax(self._logits(hidden[0, -1]), dim=-1)[choice_ids[index]].tolist()
                yield index, dict(zip(keys[index][1], row))
            return
        for batch in self._plan(sequences):
            with torch.inference_mode():
                hidden = self._hidden([sequences[i] for i in batch.indices], batch.prefixes)
                logprobs = torch.log_softmax(self._logits(hidden[:, -1]), dim=-1)
                rows = [logprobs[row, choice_ids[index]].tolist() for row, index in enumerate(batch.indices)]
            for index, row in zip(batch.indices, rows):
                yield index, dict(zip(keys[index][1], row))

    def answer_logliks(self, conversations: Sequence[Chat], answers: Sequence[str]) -> Iterator[tuple[int, float]]:
        """Yield ``(index, loglik)``: each answer's mean token log-likelihood as the reply to its conversation, batched."""
        torch = self._torch()

        sequences, answer_lengths = chat_tokens.answer_tokens(self.tokenizer, conversations, answers, "hf")
        keep = [n + 1 for n in answer_lengths]  # the logits before each answer token are read
        self._check_fit(sequences, reserve=0)
        if self._exact is not None:
            for index in _token_order(sequences):
                with torch.inference_mode():
                    hidden = self._exact.hidden(sequences[index], keep[index])
                    yield index, self._mean_loglik(hidden[0], sequences[index], answer_lengths[index])
            return
        for batch in self._plan(sequences, keep):
            with torch.inference_mode():
                hidden = self._hidden([sequences[i] for i in batch.indices], batch.prefixes)
                values = [
                    self._mean_loglik(hidden[row], sequences[index], answer_lengths[index])
                    for row, index in enumerate(batch.indices)
                ]
            yield from zip(batch.indices, values)

    def _mean_loglik(self, hidden, sequence: Sequence[int], n: int) -> float:
        """Mean log-likelihood of the last ``n`` tokens of ``sequence``: states [-n-1, -1) predict them."""
        torch = self._torch()
        logits = self._logits(hidden[-n - 1 : -1])
        targets = torch.tensor(sequence[-n:], device=logits.device)
        return float(torch.log_softmax(logits, dim=-1).gather(1, targets[:, None]).mean())

    def generate(
        self, conversations: Sequence[Chat], *, max_new_tokens: int, temperature: float, seed: int
    ) -> Iterator[tuple[int, Generation]]:
        """Yield ``(index, Generation)``: batched generation, sorted by length and left-padded.

        Sampling (``temperature`` > 0) is seeded per batch, so a reply can depend on its batch-mates;
        temperature 0 is greedy, reproducible up to batched float noise. In exact mode each row runs
        alone with its own seeded generator: the reply depends only on its prompt and seed.
        """
        sequences = [self.prompt_ids(c) for c in conversations]
        self._check_fit(sequences, reserve=max_new_tokens)
        decoding = {"max_new_tokens": max_new_tokens, "temperature": temperature, "seed": seed}
        if self._exact is not None:
            yield from self._generate_exact(sequences, **decoding)
            return
        # Generation runs through model.generate, without a shared-prefix cache.
        for batch in plan_batches(
            [len(s) for s in sequences],
            None,
            self.batch_size,
            self.max_batch_tokens,
            extra_tokens=max_new_tokens,
            max_padding=self.max_padding,
        ):
            rows = [sequences[i] for i in batch.indices]
            for row, (text, completion_tokens) in enumerate(self._generate_batch(rows, **decoding)):
                usage = {"prompt_tokens": len(rows[row]), "completion_tokens": completion_tokens}
                yield batch.indices[row], Generation(text=text.strip(), usage=usage)

    def _generate_exact(
        self, sequences: list[list[int]], *, max_new_tokens: int, temperature: float, seed: int
    ) -> Iterator[tuple[int, Generation]]:
        """Exact mode's generation: each row alone, shortest first, with its own seeded generator."""
        torch = self._torch()
        stop_ids = self._stop_ids()
        for index in _token_order(sequences):
            with torch.inference_mode():
                new = self._exact.generate(
                    sequences[index],
                    lm_head=self.model.get_output_embeddings(),
                    max_new_tokens=max_new_tokens,
                    temperature=temperature,
                    seed=seed,
                    min_new_tokens=min(self.min_new_tokens, max_new_tokens),
                    stop_ids=stop_ids,
                )
            text = self.tokenizer.decode(new, skip_special_tokens=True)
            usage = {"prompt_tokens": len(sequences[index]), "completion_tokens": len(new)}
            yield index, Generation(text=text.strip(), usage=usage)

    def _generate_batch(
        self, rows: list[list[int]], *, max_new_tokens: int, temperature: float, seed: int
    ) -> list[tuple[str, int]]:
        """Each left-padded row's reply text (not stripped) and its generated tokens up to a stop token."""
        torch = self._torch()
        stop_ids = self._stop_ids()
        pad = self.tokenizer.pad_token_id
        length = max(len(r) for r in rows)
        input_ids = torch.tensor([[pad] * (length - len(r)) + r for r in rows], device=self.model.device)
        mask = torch.tensor([[0] * (length - len(r)) + [1] * len(r) for r in rows], device=self.model.device)
        sampling = (
            {"do_sample": True, "temperature": temperature, "top_k": None, "top_p": None}
            if temperature > 0
            else {"do_sample": False, "temperature": None, "top_k": None, "top_p": None}
        )
        with torch.inference_mode():
            torch.manual_seed(seed)
            output = self.model.generate(
                input_ids=input_ids,
                attention_mask=mask,
                max_new_tokens=max_new_tokens,
                min_new_tokens=min(self.min_new_tokens, max_new_tokens) or None,
                pad_token_id=pad,
                eos_token_id=stop_ids,
                **sampling,
            )
        self._count_batch([len(r) for r in rows])
        replies = []
        for row in range(len(rows)):
            new = output[row, length:].tolist()
            end = next((k for k, t in enumerate(new) if t in stop_ids), len(new))
            replies.append((self.tokenizer.decode(new[:end], skip_special_tokens=True), end))
        return replies

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


def _token_order(sequences: Sequence[Sequence[int]]) -> list[int]:
    """Indices of ``sequences`` sorted by tokens, so prompts sharing prefix blocks run while those are cached."""
    return sorted(range(len(sequences)), key=lambda i: sequences[i])


def check_settings(
    batch_size: int,
    shared_prefix: int,
    max_batch_tokens: int,
    max_padding: float,
    block: int,
    prefix_cache_entries: int,
    prefix_cache_bytes: int,
    threads: int | None,
) -> None:
    """Refuse an ``hf`` setting out of range (:class:`~rankkit.data.specs.SpecError`, naming it)."""
    if batch_size < 1:
        raise SpecError(f"hf: batch_size must be >= 1, got {batch_size}")
    if shared_prefix < 0:
        raise SpecError(f"hf: shared_prefix must be >= 0, got {shared_prefix}")
    if max_batch_tokens < 1:
        raise SpecError(f"hf: max_batch_tokens must be >= 1, got {max_batch_tokens}")
    if not max_padding >= 0:
        raise SpecError(f"hf: max_padding must be >= 0, got {max_padding}")
    if block < 1:
        raise SpecError(f"hf: block must be >= 1, got {block}")
    if prefix_cache_entries < 1 or prefix_cache_bytes < 0:
        raise SpecError("hf: the prefix cache needs >= 1 entry and >= 0 bytes")
    if threads is not None and threads < 1:
        raise SpecError(f"hf: threads must be >= 1, got {threads}")


def runtime_stats() -> dict[str, int]:
    """The runtime's counters, all 0 (``HFRuntime.stats``)."""
    # forward_batches / batch_rows: batches run and rows in them (mean batch size);
    # real_tokens / padding_tokens: prompt tokens computed and pad tokens computed with them;
    # prefix_*: shared prefixes (tokens not recomputed per row, cache hits and extensions,
    # the one-row passes computing prefixes and their tokens);
    # past_padding_tokens: zero positions padding rows whose prefixes differ in length.
    return {
        "forward_batches": 0,
        "batch_rows": 0,
        "real_tokens": 0,
        "padding_tokens": 0,
        "shared_prefix_batches": 0,
        "prefix_tokens_saved": 0,
        "prefix_cache_hits": 0,
        "prefix_cache_extensions": 0,
        "prefix_tokens_reused": 0,
        "prefix_passes": 0,
        "prefix_tokens_computed": 0,
        "past_padding_tokens": 0,
        # exact mode: rows run alone, prefix blocks taken from the cache or computed
        "exact_rows": 0,
        "blocks_reused": 0,
        "blocks_computed": 0,
    }
