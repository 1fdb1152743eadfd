"""Retry-safe transactions: ``store.transaction(fn, idempotency_key=..., fingerprint=...)``.

The first run of a key runs ``fn(store)`` and stores its result in the same transaction; a replay
with the same fingerprint returns a copy of the stored result without running ``fn``; a replay
with another fingerprint raises JD2092. The call claims its key first (an insert that does
nothing when the key is taken) and runs ``fn`` only when the claim is its own, so of racing calls
(threads, processes, machines) exactly one runs: on SQLite the write lock makes them take turns;
on PostgreSQL a racing claim waits on the unique key until the first call ends, then replays it
(or runs, if it rolled back). A failed run keeps nothing. Keys and fingerprints are stored as
SHA-256 digests only; the newest :data:`KEEP` keys are kept.

The fingerprint defaults to ``None``: the key alone identifies the call. Pass what the call is
about (the request's arguments, any JSON value) to have a reused key with other arguments refused.

>>> import jarenlab as jl
>>> model = {"$model": "0.1", "collections": {"t": {"key": None, "identity": "integer",
...     "schema": {"type": "object", "properties": {"n": {"type": "integer"}}}}}}
>>> with jl.open(model=model) as store:
...     first = store.transaction(lambda s: {"key": s["t"].insert({"n": 1})}, idempotency_key="req-1")
...     again = store.transaction(lambda s: {"key": s["t"].insert({"n": 1})}, idempotency_key="req-1")
...     first, again, store["t"].count()
({'key': 1}, {'key': 1}, 1)
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson

from jarenlab.errors import IdempotencyError, StoreError
from jarenlab.query.lang.values import identical
from jarenlab.store import Subsystem

if TYPE_CHECKING:
    from jarenlab.store import Store

#: How many keys are kept (the newest, by claim order).
KEEP = 1_000
#: The largest stored result, in bytes of JSON.
MAX_RESULT_BYTES = 16 * 1024


def digest(value: Any) -> bytes:
    """SHA-256 of a key (a string) or a fingerprint (any JSON value, members in sorted order).

    >>> digest({"b": 1, "a": 2}) == digest({"a": 2, "b": 1})
    True
    """
    try:
        text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError as exc:
        raise StoreError("JD2010", f"a fingerprint must be a JSON value ({exc})") from None
    return hashlib.sha256(text).digest()


def encode_result(result: Any) -> str:
    """The result as JSON text; JD2093 unless it round-trips exactly and fits in 16 KiB.

    >>> encode_result({"id": 7})
    '{"id":7}'
    >>> encode_result((1, 2))
    Traceback (most recent call last):
    ...
    jarenlab.errors.IdempotencyError: JD2093 idempotent_result_invalid: the result does not round-trip exactly as JSON (it came back as [1,2]); return plain dicts, lists, strings, numbers, booleans and None
    """
    try:
        raw = orjson.dumps(result)
    except TypeError as exc:
        raise IdempotencyError(
            "JD2093", f"the result is not JSON ({exc}); return plain JSON values such as ids"
        ) from None
    if len(raw) > MAX_RESULT_BYTES:
        raise IdempotencyError(
            "JD2093",
            f"the result is {len(raw):,} bytes of JSON, over the {MAX_RESULT_BYTES:,} allowed; return ids, not records",
        )
    if not identical(orjson.loads(raw), result):
        shown = raw[:80].decode(errors="replace")
        raise IdempotencyError(
            "JD2093",
            f"the result does not round-trip exactly as JSON (it came back as {shown}); "
            "return plain dicts, lists, strings, numbers, booleans and None",
        )
    return raw.decode()


def run_idempotent(store: Store, fn: Callable[[Store], Any] | None, key: str | None, fingerprint: Any) -> Any:
    """Run ``fn(store)`` once per key; see the module docstring. Returns the (stored) result."""
    if fn is None or not callable(fn):
        raise StoreError(
            "JD2010", "a retry-safe transaction needs fn: store.transaction(fn, idempotency_key=...)"
        )
    if not isinstance(key, str) or not key:
        raise StoreError("JD2010", f"idempotency_key must be a non-empty string (got {key!r})")
    key_hash, print_hash = digest(key), digest(fingerprint)
    db = store.db
    with db.transaction():
        while db.one("idempotency.claim", {"key": key_hash, "fingerprint": print_hash}) is None:
            stored = db.one("idempotency.lookup", {"key": key_hash})
            if stored is None:
                continue  # evicted since the claim looked: claim it again
            if not stored[1]:
                # Only the claiming transaction sees a claim in flight: a call nested in its own key.
                raise StoreError(
                    "JD2010", "a retry-safe transaction cannot run inside another one with the same key"
                )
            if stored[0] != print_hash:
                raise IdempotencyError(
                    "JD2092",
                    "this idempotency key was used before with a different fingerprint; nothing was run",
                )
            return orjson.loads(stored[1])
        text = encode_result(fn(store))
        db.run("idempotency.record", {"result": text, "key": key_hash})
        db.run("idempotency.prune", {"keep": KEEP})
    return orjson.loads(text)


#: ``store.transaction(fn, idempotency_key=...)`` calls the function this makes.
SUBSYSTEM = Subsystem("idempotency", create=lambda store: functools.partial(run_idempotent, store))
