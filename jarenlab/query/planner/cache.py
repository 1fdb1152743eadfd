"""The store-wide statement cache: bounded, keyed by a complete serialization, never a hash.

The key is the canonical text of the document (``document.canonical``) plus the collection
and every option that changes a plan (pushdown, strict, the profile's own canonical text, the
UDF hatch). A 32-bit or even 64-bit hash would one day answer one query with another's plan,
so whole strings are compared. To keep a repeated call cheap, the exact ``repr`` of a document
already seen is remembered as an alias of its canonical key (``repr`` tells ``1`` from
``1.0`` and ``True``, lists from tuples, and prints every literal in full).

>>> c = StatementCache(2)
>>> c.put("a", 1); c.put("b", 2); c.get("a"); c.put("c", 3)
1
>>> c.get("b") is None, c.stats()
(True, {'hits': 1, 'misses': 1, 'evictions': 1, 'size': 2, 'capacity': 2})
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any


class StatementCache:
    """An LRU map from complete key strings to prepared plans, with hit/miss/eviction counters."""

    def __init__(self, capacity: int = 128) -> None:
        self.capacity = capacity
        self._entries: OrderedDict[str, Any] = OrderedDict()
        self._aliases: dict[str, str] = {}
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self.evictions = 0

    def lookup_alias(self, raw: str) -> Any:
        """The entry for an exact document ``repr`` seen before (counts a hit), or None."""
        with self._lock:
            key = self._aliases.get(raw)
            if key is None or key not in self._entries:
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return self._entries[key]

    def get(self, key: str) -> Any:
        """The entry under a complete key (counts a hit or a miss), or None."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return entry

    def put(self, key: str, entry: Any, alias: str | None = None) -> None:
        """Store an entry, evicting the least recently used beyond capacity."""
        with self._lock:
            self._entries[key] = entry
            self._entries.move_to_end(key)
            if alias is not None:
                self._aliases[alias] = key
            while len(self._entries) > self.capacity:
                old, _ = self._entries.popitem(last=False)
                self.evictions += 1
                self._aliases = {a: k for a, k in self._aliases.items() if k != old}

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._aliases.clear()

    def keys(self) -> list[str]:
        with self._lock:
            return list(self._entries)

    def stats(self) -> dict[str, int]:
        """Counters as ``store.stats()`` reports them."""
        with self._lock:
            return {
                "hits": self.hits,
                "misses": self.misses,
                "evictions": self.evictions,
                "size": len(self._entries),
                "capacity": self.capacity,
            }
