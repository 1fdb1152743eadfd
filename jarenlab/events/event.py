"""One committed event, its opaque cursor, and how events render in a notebook.

A cursor means "after this event". It is the URL-safe base64 of ``v1:<seq>`` without padding;
treat it as opaque and store it as is. Only the canonical spelling decodes, anything else is
JD2081.

>>> cursor = encode_cursor(42)
>>> cursor, decode_cursor(cursor)
('djE6NDI', 42)
>>> decode_cursor("not a cursor")
Traceback (most recent call last):
...
jarenlab.errors.EventError: JD2081 cursor_expired: 'not a cursor' is not an event cursor
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import html
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from jarenlab.errors import EventError
from jarenlab.reprs import table

_CURSOR_TEXT = re.compile(r"v1:(0|[1-9][0-9]{0,18})\Z")


def encode_cursor(seq: int) -> str:
    """The opaque cursor meaning "after event ``seq``" (``0``: before the first event)."""
    return base64.urlsafe_b64encode(f"v1:{seq}".encode()).decode().rstrip("=")


def decode_cursor(cursor: object) -> int:
    """The sequence number a cursor stands for; JD2081 when it is not a canonical cursor."""
    if not isinstance(cursor, str) or not 0 < len(cursor) <= 40:
        raise EventError("JD2081", f"{cursor!r} is not an event cursor")
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
    except (binascii.Error, ValueError):
        text = ""
    match = _CURSOR_TEXT.match(text)
    if match is None or encode_cursor(int(match[1])) != cursor:
        raise EventError("JD2081", f"{cursor!r} is not an event cursor")
    return int(match[1])


def from_ms(ms: int) -> dt.datetime:
    """A UTC datetime from epoch milliseconds (how ``at`` is stored)."""
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)


def from_row(row: tuple[Any, ...], *, deduplicated: bool = False) -> Event:
    """An :class:`Event` from a row of the ledger's statements (``seq, type, payload, at_ms, ...``)."""
    seq, type, payload, at_ms, dedupe_key, outcome, job, attempt = row
    return Event(
        seq, type, orjson.loads(payload), from_ms(at_ms), dedupe_key,
        None if outcome is None else orjson.loads(outcome), job, attempt, deduplicated,
    )  # fmt: skip


@dataclass(frozen=True, slots=True)
class Event:
    """A committed (or just emitted) event.

    ``seq`` is its place in the global order; ``cursor`` resumes *after* it; ``outcome`` is what a
    handler returned; ``caused_by_job``/``caused_by_attempt`` name the job attempt that emitted
    it; ``deduplicated`` is true when ``emit`` returned an earlier event for a repeated dedupe key.

    >>> ev = Event(3, "flight.delayed", {"flight": 1545}, from_ms(0))
    >>> ev
    <Event #3 flight.delayed {"flight":1545} at 1970-01-01T00:00:00.000Z>
    >>> ev["payload"], ev.cursor
    ({'flight': 1545}, 'djE6Mw')
    """

    seq: int
    type: str
    payload: Any
    at: dt.datetime
    dedupe_key: str | None = None
    outcome: Any = None
    caused_by_job: Any = None
    caused_by_attempt: int | None = None
    deduplicated: bool = field(default=False, compare=False)

    @property
    def cursor(self) -> str:
        """The cursor that resumes right after this event."""
        return encode_cursor(self.seq)

    def __getitem__(self, name: str) -> Any:
        if name not in _FIELDS:
            raise KeyError(name)
        return getattr(self, name)

    def to_dict(self) -> dict[str, Any]:
        """The event as a plain dict (``at`` stays a datetime; ``cursor`` included)."""
        return {name: getattr(self, name) for name in _FIELDS}

    def __repr__(self) -> str:
        extra = ""
        if self.dedupe_key is not None:
            extra += f" key={self.dedupe_key!r}"
        if self.outcome is not None:
            extra += f" -> {_short(self.outcome, 40)}"
        if self.caused_by_job is not None:
            extra += f" by job {self.caused_by_job!r}#{self.caused_by_attempt}"
        if self.deduplicated:
            extra += " (deduplicated)"
        return f"<Event #{self.seq} {self.type} {_short(self.payload, 80)}{extra} at {_iso(self.at)}>"

    def _repr_html_(self) -> str:
        return events_html([self], title=f"event #{self.seq}")


_FIELDS = (
    "seq",
    "type",
    "payload",
    "at",
    "dedupe_key",
    "outcome",
    "caused_by_job",
    "caused_by_attempt",
    "deduplicated",
    "cursor",
)


def _iso(at: dt.datetime) -> str:
    return at.astimezone(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _short(value: Any, width: int) -> str:
    text = orjson.dumps(value).decode()
    return text if len(text) <= width else text[: width - 1] + "…"


def events_html(events: Iterable[Event], *, title: str = "events", note: str = "") -> str:
    """An HTML table of events (used by ``Event._repr_html_`` and by ``EventStream.show``).

    >>> "flight.delayed" in events_html([Event(1, "flight.delayed", {}, from_ms(0))])
    True
    """
    rows = "".join(
        "<tr>"
        f"<td style='text-align:right'>{ev.seq}</td><td><code>{html.escape(ev.type)}</code></td>"
        f"<td><code>{html.escape(_short(ev.payload, 120))}</code></td>"
        f"<td>{'' if ev.outcome is None else f'<code>{html.escape(_short(ev.outcome, 60))}</code>'}</td>"
        f"<td>{html.escape(ev.dedupe_key or '')}</td>"
        f"<td>{'' if ev.caused_by_job is None else html.escape(f'{ev.caused_by_job} #{ev.caused_by_attempt}')}</td>"
        f"<td>{html.escape(_iso(ev.at))}</td>"
        "</tr>"
        for ev in events
    )
    head = ("seq", "type", "payload", "outcome", "dedupe key", "job", "at")
    small = f" <small>{html.escape(note)}</small>" if note else ""
    return f"<div><b>{html.escape(title)}</b>{small}{table(head, rows)}</div>"
