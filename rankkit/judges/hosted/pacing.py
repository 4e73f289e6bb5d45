"""Pacing requests to a hosted API's rate limits: ``rpm=``/``tpm=`` and the providers' rate-limit headers.

:class:`Pacer` keeps token buckets of requests and tokens per minute, waits for the reset when a
response's headers (:func:`header_pauses`) say a limit is exhausted, and pauses every thread on a
429's ``Retry-After``. No single wait exceeds :data:`MAX_PAUSE`.
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
from collections.abc import Callable, Mapping
from datetime import datetime, timezone  # noqa: F401 - timezone: the doctest's
from typing import Any

from rankkit.data.specs import SpecError
from rankkit.judges.backends import Option, above

#: The longest one pause lasts, in seconds (a reset far ahead is waited for in steps of this).
MAX_PAUSE = 120.0
#: How long, in total, one request keeps retrying HTTP 429 before it gives up (seconds): rate
#: limits are about time, so a burst of 429s is waited out rather than counted against max_attempts.
MAX_RATE_LIMIT_WAIT = 900.0

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")


def parse_reset(value: str | None, now: float | None = None) -> float | None:
    """Seconds until a rate-limit reset header's time, or None when unreadable.

    Takes durations (``"6m0s"``, ``"20ms"``), RFC 3339 times (read against ``now``, Unix time,
    default the clock) or plain seconds.

    Examples
    --------
    >>> parse_reset("6m0s"), parse_reset("20ms"), parse_reset("1.5")
    (360.0, 0.02, 1.5)
    >>> parse_reset("2026-11-27T04:00:10Z", now=datetime(2026, 11, 27, 4, 0, 0, tzinfo=timezone.utc).timestamp())
    10.0
    """
    if not value or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        parts = _DURATION.findall(text)
        if parts and "".join(f"{number}{unit}" for number, unit in parts) == text:
            scale = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
            seconds = sum(float(number) * scale[unit] for number, unit in parts)
        else:
            try:
                when = datetime.fromisoformat(text.replace("Z", "+00:00"))
            except ValueError:
                return None
            if when.tzinfo is None:
                return None
            seconds = when.timestamp() - (time.time() if now is None else now)
    return None if math.isnan(seconds) or math.isinf(seconds) else max(0.0, seconds)


#: (remaining header, reset header) pairs of the providers' rate-limit headers.
LIMIT_HEADERS = (
    ("x-ratelimit-remaining-requests", "x-ratelimit-reset-requests"),
    ("x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens"),
    *(
        (f"anthropic-ratelimit-{kind}-remaining", f"anthropic-ratelimit-{kind}-reset")
        for kind in ("requests", "tokens", "input-tokens", "output-tokens")
    ),
)


def header_pauses(headers: Mapping[str, str], now: float | None = None) -> float:
    """Seconds every request should wait: until the latest reset of an exhausted limit (0 when none).

    Examples
    --------
    >>> header_pauses({"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "2s"})
    2.0
    >>> header_pauses({"x-ratelimit-remaining-requests": "7", "x-ratelimit-reset-requests": "2s"})
    0.0
    """
    lowered = {key.lower(): value for key, value in headers.items()}
    wait = 0.0
    for remaining_key, reset_key in LIMIT_HEADERS:
        try:
            remaining = float(lowered.get(remaining_key, "nan"))
        except ValueError:
            continue
        if remaining <= 0:
            wait = max(wait, parse_reset(lowered.get(reset_key), now) or 0.0)
    return wait


def estimate_request_tokens(body: Mapping[str, Any]) -> int:
    """A request's estimated tokens against a TPM limit: its JSON at 4 characters a token plus its ``max_tokens``."""
    allowed = body.get("max_tokens") or body.get("max_completion_tokens") or 0
    return math.ceil(len(json.dumps(body, ensure_ascii=False)) / 4) + int(allowed)


#: The pacing options of a hosted judge's spec (speed only: not in the fingerprint).
PACING_OPTIONS: tuple[Option, ...] = (
    Option(
        "rpm",
        float,
        None,
        "requests per minute to stay under (rate-limit headers are honoured either way)",
        identity=False,
        check=above(0),
    ),
    Option("tpm", float, None, "tokens per minute to stay under", identity=False, check=above(0)),
)


class Pacer:
    """Rate-limit pacing shared by the threads of one client; see the module docstring.

    rpm, tpm: requests and tokens per minute allowed (None: no limit of that kind).
    clock, sleep: the monotonic clock and the sleep it waits with (tests pass fakes).
    """

    def __init__(
        self,
        rpm: float | None = None,
        tpm: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Any] | None = None,
    ):
        for name, value in (("rpm", rpm), ("tpm", tpm)):
            if value is not None and not value > 0:
                raise SpecError(f"{name} must be > 0 per minute, got {value}")
        self.rpm, self.tpm = rpm, tpm
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._requests = float(rpm or 0)  # the buckets start full
        self._tokens = float(tpm or 0)
        self._filled_at = clock()
        self._paused_until = 0.0
        #: Seconds requests spent waiting, in total (for the run's figures).
        self.waited = 0.0

    def _refill(self, now: float) -> None:
        elapsed = max(0.0, now - self._filled_at)
        self._filled_at = now
        if self.rpm:
            self._requests = min(self.rpm, self._requests + elapsed * self.rpm / 60.0)
        if self.tpm:
            self._tokens = min(self.tpm, self._tokens + elapsed * self.tpm / 60.0)

    def _wait_needed(self, tokens: int, now: float) -> float:
        """Seconds until a request of ``tokens`` may go (0: now); takes its share when it may."""
        self._refill(now)
        wait = max(0.0, self._paused_until - now)
        cost = min(float(tokens), float(self.tpm)) if self.tpm else 0.0
        if self.rpm and self._requests < 1.0:
            wait = max(wait, (1.0 - self._requests) * 60.0 / self.rpm)
        if self.tpm and self._tokens < cost:
            wait = max(wait, (cost - self._tokens) * 60.0 / self.tpm)
        if wait <= 0:
            if self.rpm:
                self._requests -= 1.0
            if self.tpm:
                self._tokens -= cost
        return wait

    def wait_turn(self, tokens: int = 0, abort: threading.Event | None = None) -> float:
        """Block until a request of ``tokens`` may be sent; return the seconds waited (early when ``abort`` is set)."""
        waited = 0.0
        while True:
            with self._lock:
                wait = self._wait_needed(tokens, self._clock())
            if wait <= 0:
                with self._lock:
                    self.waited += waited
                return waited
            step = min(wait, MAX_PAUSE)
            if self._sleep is not None:
                self._sleep(step)
            elif abort is not None:
                if abort.wait(step):
                    return waited
            else:
                time.sleep(step)
            waited += step

    def pause(self, seconds: float) -> None:
        """Hold every request back for ``seconds`` from now, capped at :data:`MAX_PAUSE`."""
        if seconds > 0:
            with self._lock:
                self._paused_until = max(self._paused_until, self._clock() + min(seconds, MAX_PAUSE))

    def observe(self, headers: Mapping[str, str]) -> None:
        """Pause as a response's rate-limit headers say (:func:`header_pauses`)."""
        self.pause(header_pauses(headers))
