"""Loopback servers that behave like the hosted APIs as documented, with an honest judge behind them.

* :class:`OpenAILikeServer` — ``POST /v1/chat/completions`` as api.openai.com documents it: a
  field the API does not document is refused with HTTP 400 ``Unrecognized request argument
  supplied: X`` (vLLM's ``add_generation_prompt``/``continue_final_message`` included); a final
  assistant message is a past turn, so the reply starts afresh (never continues it);
  ``logprobs``/``top_logprobs`` (at most 20) and ``response_format`` (a JSON schema) are honoured;
  ``usage`` carries ``prompt_tokens_details.cached_tokens`` (a prefix seen before, in 128-token
  blocks, once a prompt reaches ``cache_min_tokens``); ``GET /v1/models`` says ``owned_by:
  system``. With ``logprobs=False`` it is a model without log-probabilities (a reasoning model):
  ``logprobs`` is refused with ``Unsupported parameter``.
* :class:`AnthropicLikeServer` — ``POST /v1/messages`` as the Messages API documents it:
  ``x-api-key`` and ``anthropic-version`` required, ``max_tokens`` required, ``system`` top-level
  (a ``system`` role in ``messages`` is refused), unknown fields refused (``X: Extra inputs are
  not permitted``), a final assistant message CONTINUED (prefill; trailing whitespace in it is
  refused, as the API does), no log-probabilities, ``cache_control`` accepted and ``usage`` with
  ``cache_creation_input_tokens``/``cache_read_input_tokens``.

Both judge honestly (:class:`tests.adversarial.stub_judge.HonestJudgeServer`: each answer's hidden
quality, looked up by its text), so every verdict read the right way is right. ``faults`` queues
errors for the next requests (``(status, headers)``: 429 with ``retry-after``, 500, Anthropic's
529), ``refused`` lists every request answered 4xx, ``bodies`` every request body, ``requests``
counts them by kind.

Both have the provider's batch API (create, poll, list newest first, results) with its faults:
``hold_from`` keeps batches numbered from it in progress (a run killed while it waits),
``drop_creations`` accepts that many batch creations and drops the connection instead of replying,
:meth:`forget` makes a batch unknown (404), :meth:`end` expires or cancels one, and
``vary_explanations`` makes every explanation a fresh draw (sampling without a seed).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.adversarial.stub_judge import _FOLLOWUP, HonestJudgeServer, _logprobs_reply, _text_reply
from tests.servers import StubRequest

#: The request fields api.openai.com documents for POST /v1/chat/completions.
OPENAI_CHAT_FIELDS = frozenset(
    {
        "messages",
        "model",
        "audio",
        "frequency_penalty",
        "function_call",
        "functions",
        "logit_bias",
        "logprobs",
        "max_completion_tokens",
        "max_tokens",
        "metadata",
        "modalities",
        "n",
        "parallel_tool_calls",
        "prediction",
        "presence_penalty",
        "prompt_cache_key",
        "reasoning_effort",
        "response_format",
        "safety_identifier",
        "seed",
        "service_tier",
        "stop",
        "store",
        "stream",
        "stream_options",
        "temperature",
        "tool_choice",
        "tools",
        "top_logprobs",
        "top_p",
        "user",
        "verbosity",
        "web_search_options",
    }
)
#: The request fields the Messages API documents for POST /v1/messages.
ANTHROPIC_MESSAGE_FIELDS = frozenset(
    {
        "model",
        "messages",
        "max_tokens",
        "system",
        "temperature",
        "top_p",
        "top_k",
        "stop_sequences",
        "metadata",
        "stream",
        "tools",
        "tool_choice",
        "thinking",
        "service_tier",
        "container",
        "mcp_servers",
    }
)

#: Characters per token of the servers' token counts.
CHARS_PER_TOKEN = 4
#: OpenAI caches prompt prefixes in blocks of 128 tokens.
CACHE_BLOCK_TOKENS = 128


def tokens(text: str) -> int:
    """The servers' token count of ``text`` (four characters a token, at least one)."""
    return max(1, len(text) // CHARS_PER_TOKEN)


def _text_of(content: Any) -> str:
    """A message's content as text: a string, or the text of a list of content blocks."""
    if isinstance(content, str):
        return content
    return "".join(block.get("text", "") for block in content if isinstance(block, dict))


class _HostedServer(HonestJudgeServer):
    """What both hosted-like servers share: fault queue, logs, the honest judge's answers."""

    def __init__(
        self,
        quality: Mapping[str, float],
        quote: str = "none",
        api_key: str | None = None,
        cache_min_tokens: int = 1024,
    ):
        super().__init__(quality, quote=quote, continues=False)
        self.api_key = api_key
        self.cache_min_tokens = cache_min_tokens
        self.faults: list[tuple[int, dict[str, str]]] = []
        self.refused: list[tuple[int, str]] = []
        self.bodies: list[dict[str, Any]] = []
        self.headers_seen: list[dict[str, str]] = []
        self._cache: set[str] = set()
        self._log_lock = threading.Lock()
        #: The batch API: polls a batch stays in progress, custom ids to fail once, and what ran where.
        self.batch_polls = 2
        self.batch_failures: set[str] = set()  # custom ids, or "#N": the request numbered N (rk-TAG-N)
        self.direct_chats = 0
        self.batched_chats = 0
        #: Faults of the batch API: see the module docstring.
        self.hold_from: int | None = None
        self.drop_creations = 0
        self.vary_explanations = False
        self._draws = 0
        self.batch_jobs: dict[str, dict[str, Any]] = {}
        #: Batches created (accepted), forgotten ones included: the number of the next one is this plus one.
        self.batches_created = 0

    def _next_number(self) -> int:
        """The next batch's number (the caller holds the log lock)."""
        self.batches_created += 1
        return self.batches_created

    def inject_failure(self, custom_id: str) -> bool:
        """Whether the batched request ``custom_id`` fails (once): named in ``batch_failures`` by
        its custom id or as ``#N``, its number in its batch (the caller holds the log lock)."""
        for name in (custom_id, "#" + custom_id.rsplit("-", 1)[-1]):
            if name in self.batch_failures:
                self.batch_failures.discard(name)
                return True
        return False

    def draw(self, explanation: str) -> str:
        """``explanation``, numbered as a fresh draw when ``vary_explanations`` (a score read that
        quotes it then differs from call to call, as with sampling)."""
        if not self.vary_explanations:
            return explanation
        with self._log_lock:
            self._draws += 1
            number = self._draws
        head, _, rest = explanation.partition("\n")
        return f"{head} (draw {number})\n{rest}"

    def held(self, batch_id: str) -> bool:
        """Whether ``batch_id`` stays in progress (numbered ``hold_from`` or later)."""
        return self.hold_from is not None and int(batch_id.rsplit("_", 1)[1]) >= self.hold_from

    def drop_creation(self, request: StubRequest) -> bool:
        """Whether to drop the reply to this (accepted) batch creation: the connection closes unanswered."""
        with self._log_lock:
            if self.drop_creations <= 0:
                return False
            self.drop_creations -= 1
        request.close_connection = True
        return True

    def forget(self, batch_id: str) -> None:
        """Make ``batch_id`` unknown to the server (expired from its records, another account's)."""
        with self._log_lock:
            del self.batch_jobs[batch_id]

    def listed(self, query: str) -> list[dict[str, Any]]:
        """The batches ``GET .../batches?limit=N`` lists: newest first, at most ``limit`` (default 20)."""
        limit = int((parse_qs(query).get("limit") or ["20"])[0])
        with self._log_lock:
            jobs = sorted(self.batch_jobs.values(), key=lambda job: -int(job["id"].rsplit("_", 1)[1]))
            return [self.public(job) for job in jobs[: max(1, min(100, limit))]]

    @staticmethod
    def public(batch: dict[str, Any]) -> dict[str, Any]:
        return {key: value for key, value in batch.items() if key not in ("polls", "lines", "requests", "results")}

    def _refuse(
        self, request: StubRequest, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        with self._log_lock:
            if 400 <= status < 500 and status != 429:
                self.refused.append((status, json.dumps(payload)))
        request.send_json(status, payload, headers)

    def _next_fault(self) -> tuple[int, dict[str, str]] | None:
        with self._log_lock:
            return self.faults.pop(0) if self.faults else None

    def _log(self, request: StubRequest, body: dict[str, Any]) -> None:
        with self._log_lock:
            self.bodies.append(body)
            self.headers_seen.append({key.lower(): value for key, value in request.headers.items()})

    def honest_value(self, prompt: str, line: str) -> str:
        """What the judge puts after ``line`` (a verdict line of rankkit's) for ``prompt``."""
        return self._next_token(prompt, line.rstrip() + " ")

    def cached_prefix(self, text: str) -> int:
        """Tokens of ``text``'s longest prefix seen before, in whole cache blocks (0 below
        ``cache_min_tokens``); remembers every block prefix of ``text``."""
        if tokens(text) < self.cache_min_tokens:
            return 0
        block = CACHE_BLOCK_TOKENS * CHARS_PER_TOKEN
        keys = [hashlib.sha256(text[:end].encode()).hexdigest() for end in range(block, len(text) + 1, block)]
        with self._log_lock:
            hits = 0
            for key in keys:
                if key not in self._cache:
                    break
                hits += 1
            self._cache.update(keys)
        return hits * CACHE_BLOCK_TOKENS


def multipart_fields(content_type: str, data: bytes) -> dict[str, bytes]:
    """The fields of a ``multipart/form-data`` body, by name."""
    from email.parser import BytesParser
    from email.policy import default

    message = BytesParser(policy=default).parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode() + data)
    if not message.is_multipart():
        return {}
    return {
        part.get_param("name", header="content-disposition"): part.get_payload(decode=True)
        for part in message.iter_parts()
    }


class OpenAILikeServer(_HostedServer):
    """See the module docstring. ``logprobs``: whether the model returns log-probabilities."""

    def __init__(
        self,
        quality: Mapping[str, float],
        quote: str = "none",
        api_key: str | None = None,
        cache_min_tokens: int = 1024,
        logprobs: bool = True,
    ):
        super().__init__(quality, quote=quote, api_key=api_key, cache_min_tokens=cache_min_tokens)
        self.model_logprobs = logprobs
        self.files: dict[str, bytes] = {}
        self.uploads = 0

    def get(self, request: StubRequest) -> None:
        path, query = urlsplit(request.path).path.rstrip("/"), urlsplit(request.path).query
        if self.api_key and request.headers.get("authorization") != f"Bearer {self.api_key}":
            return self._refuse(request, 401, self.error("Incorrect API key provided", kind="invalid_api_key"))
        if path == "/v1/models":
            return request.send_json(
                200, {"object": "list", "data": [{"id": "gpt-4.1", "object": "model", "owned_by": "system"}]}
            )
        if path == "/v1/batches":
            data = self.listed(query)
            first, last = (data[0]["id"], data[-1]["id"]) if data else (None, None)
            return request.send_json(
                200, {"object": "list", "data": data, "first_id": first, "last_id": last, "has_more": False}
            )
        if path.startswith("/v1/batches/") and path[len("/v1/batches/") :] in self.batch_jobs:
            return request.send_json(200, self.poll_batch(path[len("/v1/batches/") :]))
        if path.startswith("/v1/files/") and path.endswith("/content"):
            file_id = path[len("/v1/files/") : -len("/content")]
            if file_id in self.files:
                return request.send_bytes(200, self.files[file_id])
        return self._refuse(request, 404, self.error(f"Invalid URL (GET {request.path})"))

    @staticmethod
    def error(message: str, param: str | None = None, kind: str = "invalid_request_error") -> dict[str, Any]:
        return {"error": {"message": message, "type": kind, "param": param, "code": None}}

    def receive(self, request: StubRequest, data: bytes) -> None:
        if request.path.rstrip("/") == "/v1/files":
            return self.upload(request, data)
        super().receive(request, data)

    def post(self, request: StubRequest, body: dict[str, Any]) -> None:
        self._log(request, body)
        if self.api_key and request.headers.get("authorization") != f"Bearer {self.api_key}":
            return self._refuse(request, 401, self.error("Incorrect API key provided", kind="invalid_api_key"))
        if request.path.rstrip("/") == "/v1/batches":
            return self.create_batch(request, body)
        if request.path.rstrip("/") != "/v1/chat/completions":
            return self._refuse(request, 404, self.error(f"Invalid URL (POST {request.path})"))
        fault = self._next_fault()
        if fault is not None:
            status, headers = fault
            return request.send_json(status, self.error(f"injected {status}", kind="server_error"), headers)
        problem = self.chat_problem(body)
        if problem is not None:
            return self._refuse(request, 400, problem)
        with self._log_lock:
            self.direct_chats += 1
        request.send_json(200, self.complete_fresh(body))

    def chat_problem(self, body: dict[str, Any]) -> dict[str, Any] | None:
        """The 400 error api.openai.com would answer ``body`` with (None: it takes it)."""
        for field in body:
            if field not in OPENAI_CHAT_FIELDS:
                return self.error(f"Unrecognized request argument supplied: {field}")
        if "model" not in body or not isinstance(body.get("messages"), list) or not body["messages"]:
            return self.error("you must provide a model parameter and messages")
        if body.get("logprobs") and not self.model_logprobs:
            return self.error("Unsupported parameter: 'logprobs' is not supported with this model.", "logprobs")
        top = body.get("top_logprobs")
        if top is not None and (not body.get("logprobs") or not 0 <= top <= 20):
            return self.error(
                f"Invalid 'top_logprobs': expected a value <= 20 with logprobs=true, got {top}", "top_logprobs"
            )
        return None

    # -- the Batch API ---------------------------------------------------------------------------------
    def upload(self, request: StubRequest, data: bytes) -> None:
        """``POST /v1/files`` (multipart: ``purpose``, ``file``)."""
        if self.api_key and request.headers.get("authorization") != f"Bearer {self.api_key}":
            return self._refuse(request, 401, self.error("Incorrect API key provided", kind="invalid_api_key"))
        fields = multipart_fields(request.headers.get("content-type", ""), data)
        if fields.get("purpose") != b"batch" or "file" not in fields:
            return self._refuse(request, 400, self.error("purpose must be 'batch' and a file is required"))
        with self._log_lock:
            file_id = f"file-{len(self.files) + 1}"
            self.files[file_id] = fields["file"]
            self.uploads += 1
        request.send_json(200, {"id": file_id, "object": "file", "purpose": "batch", "bytes": len(fields["file"])})

    def create_batch(self, request: StubRequest, body: dict[str, Any]) -> None:
        """``POST /v1/batches``."""
        allowed = {"input_file_id", "endpoint", "completion_window", "metadata", "output_expires_after"}
        unknown = [field for field in body if field not in allowed]
        if unknown:
            return self._refuse(request, 400, self.error(f"Unrecognized request argument supplied: {unknown[0]}"))
        metadata = body.get("metadata")
        if metadata is not None and not (
            isinstance(metadata, dict)
            and len(metadata) <= 16
            and all(
                isinstance(k, str) and len(k) <= 64 and isinstance(v, str) and len(v) <= 512
                for k, v in metadata.items()
            )
        ):
            return self._refuse(request, 400, self.error("metadata: at most 16 string pairs", "metadata"))
        if (
            body.get("endpoint") != "/v1/chat/completions"
            or body.get("completion_window") != "24h"
            or body.get("input_file_id") not in self.files
        ):
            return self._refuse(request, 400, self.error("invalid endpoint, completion_window or input_file_id"))
        lines = [json.loads(line) for line in self.files[body["input_file_id"]].decode().splitlines() if line.strip()]
        ids = [line.get("custom_id") for line in lines]
        if len(set(ids)) != len(ids) or not all(isinstance(cid, str) and cid for cid in ids):
            return self._refuse(request, 400, self.error("each line needs a custom_id unique in the batch"))
        with self._log_lock:
            batch_id = f"batch_{self._next_number()}"
            self.batch_jobs[batch_id] = {
                "id": batch_id,
                "object": "batch",
                "created_at": int(time.time()),
                "metadata": metadata,
                "endpoint": body["endpoint"],
                "input_file_id": body["input_file_id"],
                "completion_window": "24h",
                "status": "validating",
                "output_file_id": None,
                "error_file_id": None,
                "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
                "polls": 0,
                "lines": lines,
            }
        if self.drop_creation(request):
            return None
        request.send_json(200, self.public(self.batch_jobs[batch_id]))

    def poll_batch(self, batch_id: str) -> dict[str, Any]:
        """``GET /v1/batches/{id}``: validating, in progress for ``batch_polls`` polls, then completed."""
        with self._log_lock:
            batch = self.batch_jobs[batch_id]
            batch["polls"] += 1
            finish = (
                batch["status"] in ("validating", "in_progress")
                and batch["polls"] > self.batch_polls
                and not self.held(batch_id)
            )
            if batch["status"] == "validating":
                batch["status"] = "in_progress"
        if finish:
            self.run_batch(batch)
        return self.public(batch)

    def end(self, batch_id: str, state: str) -> None:
        """End ``batch_id`` unrun, ``expired`` or ``cancelled``: each request in the error file
        (``batch_expired``/``batch_cancelled``), as the API reports them."""
        with self._log_lock:
            batch = self.batch_jobs[batch_id]
            code = {"expired": "batch_expired", "cancelled": "batch_cancelled"}[state]
            records = [
                {
                    "id": f"req-{line['custom_id']}",
                    "custom_id": line["custom_id"],
                    "response": None,
                    "error": {"code": code, "message": f"This request could not be executed before the batch {state}."},
                }
                for line in batch["lines"]
            ]
            file_id = f"file-{len(self.files) + 1}"
            self.files[file_id] = "".join(json.dumps(r) + "\n" for r in records).encode()
            batch.update(status=state, error_file_id=file_id, output_file_id=None)
            batch["request_counts"] = {"total": len(records), "completed": 0, "failed": len(records)}

    def run_batch(self, batch: dict[str, Any]) -> None:
        output, errors = [], []
        for line in batch["lines"]:
            cid, body = line["custom_id"], line["body"]
            problem = self.chat_problem(body) if line.get("url") == "/v1/chat/completions" else self.error("bad url")
            with self._log_lock:
                injected = self.inject_failure(cid)
                self.batched_chats += 0 if problem or injected else 1
            if problem is not None or injected:
                error = problem["error"] if problem else {"code": "server_error", "message": "injected failure"}
                errors.append({"id": f"req-{cid}", "custom_id": cid, "response": None, "error": error})
            else:
                output.append(
                    {
                        "id": f"req-{cid}",
                        "custom_id": cid,
                        "error": None,
                        "response": {"status_code": 200, "request_id": cid, "body": self.complete_fresh(body)},
                    }
                )
        with self._log_lock:
            for name, records in (("output_file_id", output), ("error_file_id", errors)):
                if records:
                    file_id = f"file-{len(self.files) + 1}"
                    self.files[file_id] = "".join(json.dumps(r) + "\n" for r in records).encode()
                    batch[name] = file_id
            batch["request_counts"] = {"total": len(batch["lines"]), "completed": len(output), "failed": len(errors)}
            batch["status"] = "completed"

    def complete_fresh(self, body: dict[str, Any]) -> dict[str, Any]:
        """A fresh reply to the conversation: a final assistant message is a past turn."""
        messages = body["messages"]
        prompt = next(_text_of(m["content"]) for m in messages if m["role"] == "user")
        last_user = next(_text_of(m["content"]) for m in reversed(messages) if m["role"] == "user")
        followup = _FOLLOWUP.search(last_user)
        schema = (body.get("response_format") or {}).get("json_schema", {}).get("schema")
        with self._lock:
            self.requests["followup" if followup else "generate"] += 1
        if followup is not None:
            text = self.honest_value(prompt, followup.group(1))
        elif "<answer" not in prompt:
            text = "9" if schema else "1, 2, 3"  # the probes: counting afresh, or the digit after 8
        else:
            text = self.draw(self._explanation(prompt))
        if schema:
            text = json.dumps({next(iter(schema["properties"])): text})
        cap = CHARS_PER_TOKEN * int(body.get("max_tokens") or body.get("max_completion_tokens") or 10_000)
        reply = _logprobs_reply(text[:cap]) if body.get("logprobs") else _text_reply(text[:cap], tokens(text[:cap]))
        reply["choices"][0]["message"]["content"] = text[:cap]
        if body.get("logprobs") and followup is None:  # the first token of a fresh reply, then the rest
            first = text[:1] or " "
            reply["choices"][0]["logprobs"]["content"][0]["token"] = first
            reply["choices"][0]["logprobs"]["content"][0]["top_logprobs"][0]["token"] = first
        history = "".join(f"<|{m['role']}|>{_text_of(m['content'])}" for m in messages)
        completion = tokens(text[:cap]) if len(text) > 1 else 1
        reply["usage"] = {
            "prompt_tokens": tokens(history),
            "completion_tokens": completion,
            "total_tokens": tokens(history) + completion,
            "prompt_tokens_details": {"cached_tokens": self.cached_prefix(history)},
        }
        reply["model"] = body["model"]
        return reply


class AnthropicLikeServer(_HostedServer):
    """See the module docstring. ``api_key`` is required (the Messages API has no keyless mode)."""

    def __init__(self, quality: Mapping[str, float], api_key: str, quote: str = "none", cache_min_tokens: int = 1024):
        super().__init__(quality, quote=quote, api_key=api_key, cache_min_tokens=cache_min_tokens)
        self.requests["prefill"] = 0

    @staticmethod
    def error(message: str, kind: str = "invalid_request_error") -> dict[str, Any]:
        return {"type": "error", "error": {"type": kind, "message": message}}

    def _headers_problem(self, request: StubRequest) -> tuple[int, dict[str, Any]] | None:
        if request.headers.get("x-api-key") != self.api_key:
            return 401, self.error("invalid x-api-key", "authentication_error")
        if not request.headers.get("anthropic-version"):
            return 400, self.error("anthropic-version: header is required")
        return None

    def get(self, request: StubRequest) -> None:
        problem = self._headers_problem(request)
        if problem is not None:
            return self._refuse(request, *problem)
        path, query = urlsplit(request.path).path.rstrip("/"), urlsplit(request.path).query
        if path == "/v1/messages/batches":
            data = self.listed(query)
            first, last = (data[0]["id"], data[-1]["id"]) if data else (None, None)
            return request.send_json(200, {"data": data, "has_more": False, "first_id": first, "last_id": last})
        parts = path.split("/")  # ["", "v1", "messages", "batches", ID, ("results")]
        if parts[:4] == ["", "v1", "messages", "batches"] and len(parts) in (5, 6) and parts[4] in self.batch_jobs:
            batch = self.batch_jobs[parts[4]]
            if len(parts) == 5:
                return request.send_json(200, self.poll_batch(parts[4]))
            if parts[5] == "results" and batch["processing_status"] == "ended":
                return request.send_bytes(200, batch["results"])
        return self._refuse(request, 404, self.error(f"Not found: {request.path}", "not_found_error"))

    def post(self, request: StubRequest, body: dict[str, Any]) -> None:
        self._log(request, body)
        problem = self._headers_problem(request)
        if problem is not None:
            return self._refuse(request, *problem)
        if request.path.rstrip("/") == "/v1/messages/batches":
            return self.create_batch(request, body)
        if request.path.rstrip("/") != "/v1/messages":
            return self._refuse(request, 404, self.error(f"Not found: {request.path}", "not_found_error"))
        fault = self._next_fault()
        if fault is not None:
            status, headers = fault
            kind = {429: "rate_limit_error", 529: "overloaded_error"}.get(status, "api_error")
            return request.send_json(status, self.error(f"injected {status}", kind), headers)
        problem = self.invalid(body)
        if problem is not None:
            return self._refuse(request, 400, self.error(problem))
        with self._log_lock:
            self.direct_chats += 1
        request.send_json(200, self.reply(body))

    # -- the Message Batches API -------------------------------------------------------------------
    def create_batch(self, request: StubRequest, body: dict[str, Any]) -> None:
        """``POST /v1/messages/batches``: every request's params are checked as a message would be."""
        requests = body.get("requests")
        if set(body) != {"requests"} or not isinstance(requests, list) or not requests:
            return self._refuse(request, 400, self.error("requests: a non-empty list is required (and nothing else)"))
        for index, item in enumerate(requests):
            problem = (
                self.invalid(item.get("params") or {})
                if set(item) == {"custom_id", "params"}
                else "custom_id and params are required"
            )
            if problem is not None:
                return self._refuse(request, 400, self.error(f"requests.{index}.params: {problem}"))
            if not CUSTOM_ID.fullmatch(str(item["custom_id"])):
                return self._refuse(
                    request, 400, self.error(f"requests.{index}.custom_id: must match {CUSTOM_ID.pattern}")
                )
        if len({item["custom_id"] for item in requests}) != len(requests):
            return self._refuse(request, 400, self.error("requests: custom_id values must be unique"))
        with self._log_lock:
            batch_id = f"msgbatch_{self._next_number()}"
            self.batch_jobs[batch_id] = {
                "id": batch_id,
                "type": "message_batch",
                "created_at": datetime.now(timezone.utc).isoformat().replace("+00:00", "Z"),
                "processing_status": "in_progress",
                "request_counts": {
                    "processing": len(requests),
                    "succeeded": 0,
                    "errored": 0,
                    "canceled": 0,
                    "expired": 0,
                },
                "ended_at": None,
                "results_url": None,
                "polls": 0,
                "requests": requests,
            }
        if self.drop_creation(request):
            return None
        request.send_json(200, self.public(self.batch_jobs[batch_id]))

    def end(self, batch_id: str, state: str) -> None:
        """End ``batch_id`` unrun, ``expired`` or ``canceled``: each request's result says so."""
        with self._log_lock:
            batch = self.batch_jobs[batch_id]
            counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
            counts[state] = len(batch["requests"])
            lines = "".join(
                json.dumps({"custom_id": item["custom_id"], "result": {"type": state}}) + "\n"
                for item in batch["requests"]
            )
            batch.update(
                processing_status="ended",
                request_counts=counts,
                ended_at="2026-11-27T00:00:00Z",
                results_url=f"{self.root}/v1/messages/batches/{batch_id}/results",
                results=lines.encode(),
            )

    def poll_batch(self, batch_id: str) -> dict[str, Any]:
        """``GET /v1/messages/batches/{id}``: in progress for ``batch_polls`` polls, then ended."""
        with self._log_lock:
            batch = self.batch_jobs[batch_id]
            batch["polls"] += 1
            finish = (
                batch["processing_status"] != "ended" and batch["polls"] > self.batch_polls and not self.held(batch_id)
            )
        if finish:
            lines, counts = [], {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
            for item in batch["requests"]:
                with self._log_lock:
                    injected = self.inject_failure(item["custom_id"])
                    self.batched_chats += 0 if injected else 1
                if injected:
                    result = {
                        "type": "errored",
                        "error": {"type": "error", "error": {"type": "api_error", "message": "injected"}},
                    }
                    counts["errored"] += 1
                else:
                    result = {"type": "succeeded", "message": self.reply(item["params"])}
                    counts["succeeded"] += 1
                lines.append(json.dumps({"custom_id": item["custom_id"], "result": result}) + "\n")
            with self._log_lock:
                batch.update(
                    processing_status="ended",
                    request_counts=counts,
                    ended_at="2026-11-27T00:00:00Z",
                    results_url=f"{self.root}/v1/messages/batches/{batch_id}/results",
                    results="".join(lines).encode(),
                )
        return self.public(batch)

    def invalid(self, body: dict[str, Any]) -> str | None:
        """Why the Messages API would refuse ``body`` (None: it would not)."""
        for field in body:
            if field not in ANTHROPIC_MESSAGE_FIELDS:
                return f"{field}: Extra inputs are not permitted"
        for field in ("model", "max_tokens", "messages"):
            if field not in body:
                return f"{field}: Field required"
        messages = body["messages"]
        if not isinstance(messages, list) or not messages:
            return "messages: at least one message is required"
        for index, message in enumerate(messages):
            if message.get("role") not in ("user", "assistant"):
                return (
                    f"messages.{index}.role: Input should be 'user' or 'assistant' (a system prompt goes in "
                    f"the top-level system parameter)"
                )
        if messages[0]["role"] != "user":
            return 'messages: first message must use the "user" role'
        if (
            messages[-1]["role"] == "assistant"
            and _text_of(messages[-1]["content"]) != _text_of(messages[-1]["content"]).rstrip()
        ):
            return "messages: final assistant content cannot end with trailing whitespace"
        if "logprobs" in body:
            return "logprobs: Extra inputs are not permitted"
        return None

    def reply(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body["messages"]
        prompt = next(_text_of(m["content"]) for m in messages if m["role"] == "user")
        last = messages[-1]
        if last["role"] == "assistant":  # prefill: the reply continues it
            prefix = _text_of(last["content"])
            with self._lock:
                self.requests["prefill"] += 1
            value = "9" if prefix.endswith(PROBE_TAIL) else self.honest_value(prompt, prefix)
            text = f" {value}"
        else:
            with self._lock:
                self.requests["generate"] += 1
            text = self.draw(self._explanation(prompt)) if "<answer" in prompt else "1, 2, 3"
        cap = CHARS_PER_TOKEN * int(body["max_tokens"])
        text = text[:cap]
        read, written, total = self.cache_usage(body.get("system") or "", messages)
        return {
            "id": "msg_honest",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": [{"type": "text", "text": text}],
            "stop_reason": "max_tokens" if len(text) >= cap else "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": total - read - written,
                "cache_creation_input_tokens": written,
                "cache_read_input_tokens": read,
                "output_tokens": max(1, tokens(text)),
            },
        }

    def cache_usage(self, system: Any, messages: list[dict[str, Any]]) -> tuple[int, int, int]:
        """``(read, written, total)`` input tokens: the prefix up to the last ``cache_control``
        breakpoint is read when seen before, else written (once it reaches ``cache_min_tokens``)."""
        pieces: list[tuple[str, bool]] = []
        for block in [{"text": system}] if isinstance(system, str) else list(system):
            pieces.append((block.get("text", ""), "cache_control" in block))
        for message in messages:
            content = message["content"]
            blocks = [{"text": content}] if isinstance(content, str) else content
            for block in blocks:
                pieces.append((f"<|{message['role']}|>{block.get('text', '')}", "cache_control" in block))
        total = tokens("".join(text for text, _ in pieces))
        marks = [i for i, (_, marked) in enumerate(pieces) if marked]
        if not marks:
            return 0, 0, total
        prefix = "".join(text for text, _ in pieces[: marks[-1] + 1])
        if tokens(prefix) < self.cache_min_tokens:
            return 0, 0, total
        key = hashlib.sha256(prefix.encode()).hexdigest()
        with self._log_lock:
            seen = key in self._cache
            self._cache.add(key)
        return (tokens(prefix), 0, total) if seen else (0, tokens(prefix), total)


#: The custom ids the Message Batches API takes.
CUSTOM_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")
#: How the continuation probe's prefix ends (without the trailing whitespace the API refuses).
PROBE_TAIL = "1, 2, 3, 4, 5, 6, 7, 8,"


def human_quality(tasks: Any) -> dict[str, float]:
    """Answer text -> its human score, for an honest judge of ``tasks`` (rankkit Tasks): the
    score of the task's criterion, on the digit scale generate-mode prompts show (0..K, K the
    task's top when a whole number up to 9, else 9)."""
    from rankkit.judges.llm.verdict_rules import logprob_points

    quality: dict[str, float] = {}
    for task in tasks:
        low, high = task.scale
        top = logprob_points(high)
        for candidate in task.candidates:
            value = candidate.human.get(task.criterion)
            if value is not None:
                quality[candidate.text] = (float(value) - low) / (high - low) * top
    return quality
