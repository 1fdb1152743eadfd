"""The public change feed: ``store.changes(after=cursor)``, the store's committed changes in commit
order as minimal RFC 6902 patches per document.

A page (:class:`ChangePage`) holds whole commits, oldest first: one :class:`DocumentChange` per
document a commit changed, whose ``ops`` turn the document's state before the commit into its state
after it, with pointers ``/<collection>/<key>/...`` (so ``page.patch``, every page in order, rebuilds
a copy ``{collection: {key: document}}``). A put of the same document changes nothing and shows
nothing; a document inserted and deleted in one commit shows nothing; one deleted and written again
in one commit shows as an update with no operations when it is the same document (it has a new
place in storage order). ``page.cursor`` is opaque and
resumes right after the page; a cursor whose next commit the log no longer holds (retention, see
``store.changes.log.retention``) is ``JD2128 reset_required``: copy the data again with
``store.changes.snapshot()`` and follow on from the cursor it gives. The feed reads the same change
log the live queries follow.

>>> import jarenlab as jl
>>> model = {"$model": "0.1", "collections": {"t": {"schema": {"type": "object"}, "key": None,
...          "identity": "integer"}}}
>>> with jl.open(model=model) as store:
...     start = store.changes.cursor()
...     key = store["t"].insert({"n": 1, "tags": []})
...     _ = store["t"].put({"n": 1, "tags": []}, key)      # the same document: no change
...     _ = store["t"].patch(key, {"n": 2})
...     page = store.changes(after=start)
...     [(c.change, c.ops) for c in page]
[('insert', [{'op': 'add', 'path': '/t/1', 'value': {'n': 1, 'tags': []}}]), ('update', [{'op': 'replace', 'path': '/t/1/n', 'value': 2}])]
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import html
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

import orjson

from jarenlab.errors import LiveError
from jarenlab.keys import CompositeKey, KeyKind, stored_key
from jarenlab.live.capture import parse_pointer
from jarenlab.reprs import table

if TYPE_CHECKING:
    import pandas as pd

_CURSOR_TEXT = re.compile(r"changes:v1:(0|[1-9][0-9]{0,18})")
#: How many document changes a page's HTML shows.
_SHOWN = 20


def encode_cursor(seq: int) -> str:
    """The opaque cursor meaning "after change record ``seq``" (``0``: before the first).

    >>> decode_cursor(encode_cursor(42))
    42
    """
    return base64.urlsafe_b64encode(f"changes:v1:{seq}".encode()).decode().rstrip("=")


def decode_cursor(cursor: object) -> int:
    """The record a cursor stands for; JD2129 when it is not a change-feed cursor."""
    if not isinstance(cursor, str) or not 0 < len(cursor) <= 48:
        raise LiveError(
            "JD2129", f"{cursor!r} is not a change-feed cursor (use page.cursor or changes.cursor())"
        )
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
    except (binascii.Error, ValueError):
        text = ""
    match = _CURSOR_TEXT.fullmatch(text)
    if match is None or encode_cursor(int(match[1])) != cursor:
        raise LiveError(
            "JD2129", f"{cursor!r} is not a change-feed cursor (use page.cursor or changes.cursor())"
        )
    return int(match[1])


class DocumentChange(NamedTuple):
    """What one commit did to one document.

    ``change`` is ``insert``, ``update``, ``delete``, or ``put`` (a whole new document whose earlier
    state was not recorded); ``ops`` is the minimal RFC 6902 patch, pointers ``/<collection>/<key>/...``.
    """

    seq: int
    at: dt.datetime
    collection: str
    key: Any
    change: str
    ops: list[dict[str, Any]]


def document_changes(
    seq: int, at_ms: int, ops: list[dict[str, Any]], key_types: dict[str, KeyKind]
) -> list[DocumentChange]:
    """The document changes of one stored record (``ops``: its stored operations); a composite
    key is its tuple, named in the pointers by its members' JSON array."""
    at = dt.datetime.fromtimestamp(at_ms / 1000, tz=dt.UTC)
    out = []
    for op in ops:
        path = op["path"]
        coll, token = parse_pointer(path)
        kind = key_types.get(coll)
        key = stored_key(kind, token)
        if isinstance(kind, CompositeKey):
            key = kind.decode(key)
        kind = op["op"]
        if kind == "add":
            out.append(DocumentChange(seq, at, coll, key, "insert", [op]))
        elif kind == "remove":
            out.append(DocumentChange(seq, at, coll, key, "delete", [op]))
        elif "diff" in op:
            steps = [{**step, "path": path + step["path"]} for step in op["diff"]]
            out.append(DocumentChange(seq, at, coll, key, "update", steps))
        else:  # the earlier state is unknown: the whole document, which `add` puts whether or not one was there
            whole = {"op": "add", "path": path, "value": op["value"]}
            out.append(DocumentChange(seq, at, coll, key, "put", [whole]))
    return out


class ChangePage:
    """One page of the change feed: whole commits in commit order (``store.changes(after=...)``).

    Iterate it for :class:`DocumentChange` items; ``patch`` is every operation in order, ``cursor``
    resumes after the page, ``has_more`` says whether the log holds more already, ``commits``
    counts the commits read, ``to_frame()`` is a DataFrame (one row per document change).
    """

    def __init__(self, items: list[DocumentChange], cursor: str, commits: int, has_more: bool) -> None:
        self.items = items
        self.cursor = cursor
        self.commits = commits
        self.has_more = has_more

    def __iter__(self) -> Iterator[DocumentChange]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    @property
    def patch(self) -> list[dict[str, Any]]:
        """Every operation of the page in commit order (one RFC 6902 patch over ``{collection: {key: doc}}``)."""
        return [op for item in self.items for op in item.ops]

    def to_frame(self) -> pd.DataFrame:
        """One row per document change: seq, at, collection, key, change, ops (the patch), n_ops."""
        import pandas as pd

        return pd.DataFrame(
            {
                "seq": [c.seq for c in self.items],
                "at": pd.to_datetime([c.at for c in self.items], utc=True),
                "collection": [c.collection for c in self.items],
                "key": pd.Series([c.key for c in self.items], dtype=object),
                "change": [c.change for c in self.items],
                "ops": pd.Series([c.ops for c in self.items], dtype=object),
                "n_ops": [len(c.ops) for c in self.items],
            }
        )

    def __repr__(self) -> str:
        more = ", more waiting" if self.has_more else ""
        return f"<jarenlab.ChangePage {len(self.items)} document changes in {self.commits} commits{more}; cursor {self.cursor}>"

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td style='text-align:right'>{c.seq}</td><td>{html.escape(c.at.isoformat(timespec='milliseconds'))}</td>"
            f"<td><code>{html.escape(c.collection)}</code></td><td><code>{html.escape(repr(c.key))}</code></td>"
            f"<td>{c.change}</td><td><code>{html.escape(_short(c.ops))}</code></td></tr>"
            for c in self.items[:_SHOWN]
        )
        hidden = len(self.items) - _SHOWN
        tail = (
            f"<div><small>{hidden:,} more document changes on this page</small></div>" if hidden > 0 else ""
        )
        more = "; the log holds more (ask again with the cursor)" if self.has_more else ""
        return (
            f"<div><b>changes</b>: {len(self.items):,} document changes in {self.commits:,} commits{more}"
            f"<br><small>cursor <code>{html.escape(self.cursor)}</code></small>"
            f"{table(['seq', 'at', 'collection', 'key', 'change', 'patch'], rows)}{tail}</div>"
        )


def _short(ops: list[dict[str, Any]], limit: int = 120) -> str:
    text = orjson.dumps(ops).decode()
    return text if len(text) <= limit else text[: limit - 1] + "…"
