"""Composite keys: a key made of several top-level members, ``"key": ["/date", "/origin"]``.

In Python a composite key is a **tuple** of its members' values in the declared order,
``("2013-01-01", "JFK")``; a dict naming every member, ``{"date": "2013-01-01", "origin": "JFK"}``,
is taken too. Reads and writes hand tuples back (``insert`` and ``put`` return one, ``keys()``
lists them, ``to_pandas()`` is indexed by a ``MultiIndex`` of the members).

The store keeps one key column whatever the arity, so every lookup stays a primary-key lookup:
it holds an **order-preserving encoding** of the members, text whose code-point order is the
members' order (the first member, then the second, ...). Both backends compare that column in
code-point order (SQLite's binary collation, PostgreSQL's ``"C"``), so keyset pages and the
key tie-break of an ordering run in member order. A string member is its text with U+0001 written
``U+0001 U+0002``, ended by ``U+0001 U+0001`` (so a shorter string sorts first); an integer member
is ``n + 2**63`` as 16 hexadecimal digits.

The change feed names a document by a pointer whose last token is the members as a JSON array:
``/flights/["2013-01-01","JFK"]`` (``/`` inside it escaped as ``~1``, as every pointer token is).

>>> k = CompositeKey("f", ("date", "n"), (str, int))
>>> stored = k.coerce(("2013-01-01", 5))
>>> k.decode(stored), k.token(stored), k.decode(k.from_token('["2013-01-01",5]')) == ("2013-01-01", 5)
(('2013-01-01', 5), '["2013-01-01",5]', True)
>>> k.coerce({"n": 5, "date": "2013-01-01"}) == stored
True
>>> sorted([("b", 1), ("a", 10), ("a", -3), ("a\\x01", 0)], key=lambda t: k.coerce(t)) == sorted(
...     [("b", 1), ("a", 10), ("a", -3), ("a\\x01", 0)])
True
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from jarenlab.errors import StoreError

#: Integer members are stored offset into 0 .. 2**64 - 1, so their hex digits sort as the numbers do.
_OFFSET = 1 << 63
_END = "\x01\x01"


@dataclass(frozen=True)
class CompositeKey:
    """How one collection's composite key is read from documents, checked, stored and named.

    ``members`` are the top-level member names in the declared order, ``types`` their Python
    types (``str`` or ``int``). Internally (statements, the change log, sessions) a key is its
    stored text; :meth:`coerce` makes it from what a user passes, :meth:`decode` gives the tuple back.
    """

    collection: str
    members: tuple[str, ...]
    types: tuple[type, ...]

    def _fail(self, code: str, reason: str, key: Any) -> StoreError:
        return StoreError(code, reason, collection=self.collection, key=key)

    def coerce(self, key: Any) -> str:
        """The stored text of a key given as a tuple (or list) of the members' values in order, or
        a dict naming every member. JD2200 for another shape or arity, JD2201 for a member of the
        wrong type or one that cannot be stored (U+0000, an integer beyond 64 bits)."""
        if isinstance(key, Mapping):
            missing = [m for m in self.members if m not in key]
            extra = [str(m) for m in key if m not in self.members]
            if missing or extra:
                what = f"lacks {missing[0]!r}" if missing else f"names {extra[0]!r}, not a key member"
                raise self._fail("JD2200", f"the key of {self.collection!r} {what} ({self.described})", key)
            values = tuple(key[m] for m in self.members)
        elif isinstance(key, (tuple, list)):
            if len(key) != len(self.members):
                raise self._fail(
                    "JD2200",
                    f"the key of {self.collection!r} has {len(self.members)} members ({self.described}), "
                    f"not {len(key)}",
                    key,
                )
            values = tuple(key)
        else:
            raise self._fail(
                "JD2200",
                f"the key of {self.collection!r} is a tuple ({self.described}) or a dict of its members, "
                f"not a {type(key).__name__}",
                key,
            )
        return self.encode(values)

    def of(self, doc: dict[str, Any]) -> str:
        """The stored text of the key a document holds (JD2201 when a member is missing or mistyped)."""
        missing = [m for m in self.members if m not in doc]
        if missing:
            raise self._fail("JD2201", f"the document lacks the key member {missing[0]!r}", None)
        return self.encode(tuple(doc[m] for m in self.members))

    def encode(self, values: tuple[Any, ...]) -> str:
        """The stored text of checked member values, in order (JD2201 for a bad value)."""
        out = []
        for member, kind, value in zip(self.members, self.types, values):
            if kind is int and type(value) is int:
                if not -_OFFSET <= value < _OFFSET:
                    raise self._fail("JD2201", f"key member {member!r} is beyond 64 bits", values)
                out.append(f"{value + _OFFSET:016x}")
            elif kind is str and type(value) is str:
                if "\x00" in value:
                    raise self._fail(
                        "JD2201", f"key member {member!r} holds U+0000, so none is stored", values
                    )
                out.append(value.replace("\x01", "\x01\x02") + _END)
            else:
                raise self._fail(
                    "JD2201",
                    f"key member {member!r} of {self.collection!r} is a {kind.__name__}, "
                    f"not {type(value).__name__}",
                    values,
                )
        return "".join(out)

    def decode(self, stored: str) -> tuple[Any, ...]:
        """The members' values of a stored key text, as a tuple."""
        values: list[Any] = []
        at = 0
        for kind in self.types:
            if kind is int:
                values.append(int(stored[at : at + 16], 16) - _OFFSET)
                at += 16
            else:
                end = stored.index(_END, at)
                values.append(stored[at:end].replace("\x01\x02", "\x01"))
                at = end + 2
        return tuple(values)

    def token(self, stored: str) -> str:
        """The change-feed pointer token of a stored key: its members as a JSON array."""
        return orjson.dumps(list(self.decode(stored))).decode()

    def from_token(self, token: str) -> str:
        """The stored key a change-feed pointer token names."""
        return self.encode(tuple(orjson.loads(token)))

    @property
    def described(self) -> str:
        """The members with their types, for messages: ``date: str, origin: str``."""
        return ", ".join(f"{m}: {t.__name__}" for m, t in zip(self.members, self.types))


def user_key(codec: CompositeKey | None, stored: Any) -> Any:
    """The key a user sees for a stored one: the tuple of a composite key, else the key itself.

    >>> user_key(None, 7), user_key(CompositeKey("c", ("a", "b"), (str, str)), "x\\x01\\x01y\\x01\\x01")
    (7, ('x', 'y'))
    """
    return stored if codec is None or stored is None else codec.decode(stored)


#: What the change log knows of a collection's keys: ``int``, ``str`` or a composite key's codec.
KeyKind = type | CompositeKey


def pointer_token(kind: KeyKind | None, stored: Any) -> Any:
    """The change-log pointer token naming a stored key (a composite key's JSON array).

    >>> pointer_token(int, 3), pointer_token(CompositeKey("c", ("a", "n"), (str, int)), "x\\x01\\x01" + f"{2**63 + 2:016x}")
    (3, '["x",2]')
    """
    return kind.token(stored) if isinstance(kind, CompositeKey) else stored


def stored_key(kind: KeyKind | None, token: str) -> Any:
    """The stored key a change-log pointer token names (the inverse of :func:`pointer_token`).

    >>> stored_key(int, "3"), stored_key(str, "a"), stored_key(CompositeKey("c", ("a", "b"), (str, str)), '["x","y"]')
    (3, 'a', 'x\\x01\\x01y\\x01\\x01')
    """
    if kind is int:
        return int(token)
    return kind.from_token(token) if isinstance(kind, CompositeKey) else token
