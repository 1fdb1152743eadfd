"""EventStream: an iterator over committed events that can follow new ones as they commit.

Made by :meth:`Events.tail` and :meth:`Events.resume`. It reads in batches of up to 256 events
from a private read connection, so it only ever sees committed events, even when iterated inside
a transaction or an event handler. While following, it waits for the next commit: commits made
through the same ``Store`` wake it at once; commits from other processes wake it through the
backend's watch (PostgreSQL: the emit's ``NOTIFY``, at once; SQLite: the file's data version), and
it reads again every ``poll`` seconds anyway.

It ends when it has caught up and does not follow, when ``timeout`` seconds have passed since it
was made, after yielding an event for which ``until(event)`` is true, when ``stop()`` is called
(from any thread), or when the store closes. ``stream.cursor`` resumes right after the last
event it yielded.

>>> import jarenlab as jl
>>> model = {"$model": "0.1", "collections": {"notes": {"schema": {"type": "object"}, "key": None, "identity": "integer"}},
...     "events": {"ping": {"type": "object"}}}
>>> with jl.open(model=model) as store:
...     _ = store.events.emit("ping", {"n": 1})
...     stream = store.events.tail(last=5, timeout=0.05)
...     [ev.payload for ev in stream], stream.cursor
([{'n': 1}], 'djE6MQ')
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from jarenlab.events.event import Event, encode_cursor, events_html


class Ledger(Protocol):
    """What a stream reads of the ledger that made it (:class:`jarenlab.events.ledger.Events`)."""

    @property
    def version(self) -> int:
        """How many times the ledger has been woken."""
        ...

    @property
    def closed(self) -> bool:
        """True once the store closed the ledger."""
        ...

    def read_after(self, seq: int, *, types: tuple[str, ...], strict: bool) -> tuple[list[Event], int]:
        """One batch of committed events after ``seq``, and how far it scanned."""
        ...

    def wake(self) -> None:
        """Wake every stream waiting for events."""
        ...

    def wait_for_commit(self, seen: int, seconds: float, poll: float) -> None:
        """Wait up to ``seconds`` for a commit after version ``seen``."""
        ...


class EventStream(Iterator[Event]):
    """An iterator of committed events; see the module documentation."""

    def __init__(
        self,
        ledger: Ledger,
        *,
        after: int,
        backlog: list[Event],
        follow: bool,
        poll: float,
        timeout: float | None,
        until: Callable[[Event], bool] | None,
        types: tuple[str, ...],
        strict: bool,
    ) -> None:
        self._ledger = ledger
        self._scanned = after  # every matching event with seq <= this is in the buffer or yielded
        self._last: int | None = None
        self._buffer: collections.deque[Event] = collections.deque(backlog)
        self.follow = follow
        self.poll = poll
        self.deadline = None if timeout is None else time.monotonic() + timeout
        self._until = until
        self._types = types
        self._strict = strict
        self._stopped = threading.Event()
        self.yielded = 0

    @property
    def cursor(self) -> str:
        """Resumes after the last event yielded (or after what was scanned, when nothing is pending)."""
        if self._buffer:
            return encode_cursor(self._buffer[0].seq - 1 if self._last is None else self._last)
        return encode_cursor(self._scanned)

    def stop(self) -> None:
        """End the stream (safe from another thread); a waiting ``next()`` returns promptly."""
        self._stopped.set()
        self._ledger.wake()

    @property
    def stopped(self) -> bool:
        """True once the stream has ended (timeout, ``until``, ``stop()`` or the store closing)."""
        return self._stopped.is_set()

    def __iter__(self) -> EventStream:
        return self

    def __next__(self) -> Event:
        while not self._stopped.is_set() and not self._ledger.closed:
            if self._buffer:
                event = self._buffer.popleft()
                self._last = event.seq
                self.yielded += 1
                if self._until is not None and self._until(event):
                    self._stopped.set()
                return event
            seen = self._ledger.version
            batch, scanned = self._ledger.read_after(self._scanned, types=self._types, strict=self._strict)
            self._scanned = max(self._scanned, scanned)
            if batch:
                self._buffer.extend(batch)
                continue
            if not self.follow:
                break
            wait = self.poll
            if self.deadline is not None:
                wait = min(wait, self.deadline - time.monotonic())
                if wait <= 0:
                    break
            self._ledger.wait_for_commit(seen, wait, self.poll)
        self._stopped.set()
        raise StopIteration

    def show(self, *, rows: int = 20) -> int:
        """Consume the stream, showing events as they arrive; return how many were shown.

        In a notebook this is one table (the last ``rows`` events) that updates in place; elsewhere
        each event is printed. Interrupting the cell (the stop button) ends it quietly.
        """
        display = _display_handle()
        recent: collections.deque[Event] = collections.deque(maxlen=rows)
        try:
            for event in self:
                if display is None:
                    print(repr(event), flush=True)
                    continue
                recent.append(event)
                if not self._buffer:  # about to wait or end: redraw once per batch
                    display.update(_HTML(events_html(recent, title="events", note=self._note())))
        except KeyboardInterrupt:
            self.stop()
        if display is not None:
            display.update(_HTML(events_html(recent, title="events", note=self._note())))
        return self.yielded

    def _note(self) -> str:
        state = "ended" if self.stopped else "following" if self.follow else "catching up"
        return f"{self.yielded} shown, {state}, cursor {self.cursor}"

    def __repr__(self) -> str:
        state = "stopped" if self.stopped else "following" if self.follow else "catching up"
        return f"<EventStream after {self.cursor} ({state}); iterate it or call .show()>"


class _HTML:
    """The smallest rich-display object: IPython calls ``_repr_html_``."""

    def __init__(self, text: str) -> None:
        self.text = text

    def _repr_html_(self) -> str:
        return self.text


def _display_handle() -> Any:
    """An updatable IPython display when running in a kernel, else None (print instead)."""
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        return None
    shell = get_ipython()
    if shell is None or not hasattr(shell, "kernel"):
        return None
    return display(_HTML("<i>waiting for events…</i>"), display_id=True)
