"""What judges built on other judges share: a judgment looked up in memory, then the run's store, then asked.

A panel asks each member for both orders of a comparison; a calibrated judge asks the judge it
wraps for both orders of a pair. Both need the same thing: the wrapped judge's own judgment of
each request, cached under the wrapped judge's fingerprint and request key (so they are shared
with single-judge runs of it), asked once however many requests need it, and charged — its usage
counted — to the first request that needed it. :func:`fetch_pairs` is that lookup.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, Sequence

from rankkit.cache import content_hash
from rankkit.engine import JudgmentStore, Origin
from rankkit.judges.base import Verdict, ComparisonRequest

#: In-memory judgments by (fingerprint, hash of the request key): kept by the judge that asks.
Memo = dict[tuple[str, str], Verdict]


def fetch_pairs(store: JudgmentStore, memo: Memo, fingerprint: str, request_key: Callable[..., list[Any]],
                compare_many: Callable[[Sequence[ComparisonRequest]], Iterator[tuple[int, Verdict]]],
                requests: Sequence[ComparisonRequest]) -> list[tuple[Verdict, bool]]:
    """Each request's judgment by one judge, and whether this request pays for it.

    store: the run's store; memo: judgments already seen in this process (filled in here).
    fingerprint / request_key / compare_many: the judge's identity, its cache key of a request,
        and how to ask it (one batch with every request neither in memory nor in the store, in
        the order of ``requests``).
    Returns ``(judgment, charged)`` per request: ``charged`` is True at the first position of a
    judgment the judge was asked for now (not found in memory or the store), so its usage is
    counted once.
    """
    keys = [(fingerprint, content_hash(request_key(*request))) for request in requests]
    wanted: dict[tuple[str, str], ComparisonRequest] = {}
    for key, request in zip(keys, requests):
        if key not in memo and key not in wanted:
            wanted[key] = request
    fresh: set[tuple[str, str]] = set()
    if wanted:
        order = list(wanted)
        judged = store.fetch(fingerprint, "pair", [request_key(*wanted[key]) for key in order],
                             lambda indices: compare_many([wanted[order[i]] for i in indices]),
                             Verdict.from_dict, Verdict.to_dict)
        for key, (judgment, origin) in zip(order, judged):
            memo[key] = judgment
            if origin is Origin.JUDGE:
                fresh.add(key)
    out = []
    for key in keys:
        out.append((memo[key], key in fresh))
        fresh.discard(key)  # charged once, at its first position
    return out
