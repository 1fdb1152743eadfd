"""Handler modules: named groups of event handlers, job queues and versioned materializations.

A module owns the names under its own: its events are the model's event types ``<module>.<name>``,
its queues the job kinds ``<module>.<name>``, its materializations are recorded as
``<module>.<name>``. A module is a plain declaration (no store); ``store.events.install(...)``
checks the modules against what the store records and puts their handlers in place.

>>> flights = Module("flights")
>>> flights.event("delayed"), flights.kind("rebook")
('flights.delayed', 'flights.rebook')
>>> delays = flights.materialization("delays", version=2)
>>> @delays.on("delayed")
... def project(event, store):
...     store["delays"].insert(event.payload)
>>> delays
<Materialization flights.delays v2 -> collection 'delays', handles flights.delayed>
>>> Module("no spaces")
Traceback (most recent call last):
...
jarenlab.errors.EventError: JD2210 module_invalid: a module name is a letter or _ then letters, digits or _, not 'no spaces'
"""

from __future__ import annotations

import contextvars
import functools
import html
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from jarenlab.errors import EventError
from jarenlab.reprs import table

__all__ = ["Materialization", "Module", "REPLAYING"]

_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_LOCAL = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*\Z")
_COLLECTION = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

#: The materialization whose replay runs in this context (None: none). An emit from a handler
#: while it is set is refused (JD2215): a replay rebuilds a collection, it records no new facts.
REPLAYING: contextvars.ContextVar[str | None] = contextvars.ContextVar("jarenlab_replaying", default=None)

#: ``handler(event, store)``, as :meth:`jarenlab.events.Events.on` takes it.
EventHandler = Callable[..., Any]


def _local(name: object, what: str) -> str:
    if not isinstance(name, str) or not _LOCAL.match(name):
        raise EventError(
            "JD2210", f"a {what} name is a letter or _ then letters, digits, _, . or -, not {name!r}"
        )
    return name


def _owner(of: Module | str | None, default: str) -> str:
    if of is None:
        return default
    name = of.name if isinstance(of, Module) else of
    if not isinstance(name, str) or not _MODULE.match(name):
        raise EventError("JD2210", f"of= names a module (a Module or its name), not {of!r}")
    return name


@dataclass
class Materialization:
    """A collection its handlers maintain from events, declared with a version.

    Raising ``version`` makes the next ``store.events.install`` rebuild the collection: it empties
    it and replays every event of the handled types, oldest first, in one transaction. Its
    handlers should write only its collection (they run again on every rebuild); what they
    return is ignored.
    """

    module: str
    name: str
    version: int
    collection: str
    handlers: dict[str, list[EventHandler]] = field(default_factory=dict)

    @property
    def full_name(self) -> str:
        """The name the store records: ``<module>.<name>``."""
        return f"{self.module}.{self.name}"

    @property
    def types(self) -> tuple[str, ...]:
        """The event types it handles, in the order first registered."""
        return tuple(self.handlers)

    def on(self, type: str, *, of: Module | str | None = None) -> Callable[[EventHandler], EventHandler]:
        """Register ``handler(event, store)`` for this module's event ``type`` (``of=``: another
        module's); handlers of one type run in registration order."""
        full = f"{_owner(of, self.module)}.{_local(type, 'event')}"

        def register(fn: EventHandler) -> EventHandler:
            if not callable(fn):
                raise EventError("JD2210", f"a handler is a function(event, store), not {fn!r}")
            _replace_or_add(self.handlers.setdefault(full, []), _quiet(fn))
            return fn

        return register

    def __repr__(self) -> str:
        types = ", ".join(self.handlers) or "nothing"
        return (
            f"<Materialization {self.full_name} v{self.version} -> collection {self.collection!r}, "
            f"handles {types}>"
        )


@dataclass
class _Queue:
    kind: str
    fn: Callable[..., Any]
    options: dict[str, Any]


class Module:
    """A named group of event handlers, job queues and materializations.

    Names given to a module are local to it: ``on("delayed")`` handles the model's event type
    ``<module>.delayed`` (``of=other`` handles another module's), ``queue("rebook")`` runs the job
    kind ``<module>.rebook``, ``materialization("delays", version=1)`` is recorded as
    ``<module>.delays`` and maintains the collection ``delays`` (``collection=`` to name another).
    """

    def __init__(self, name: str) -> None:
        if not isinstance(name, str) or not _MODULE.match(name):
            raise EventError(
                "JD2210", f"a module name is a letter or _ then letters, digits or _, not {name!r}"
            )
        self.name = name
        self.handlers: dict[str, list[EventHandler]] = {}
        self.queues: dict[str, _Queue] = {}
        self.materializations: dict[str, Materialization] = {}

    def event(self, name: str) -> str:
        """The model's event type for this module's event ``name``: ``<module>.<name>``."""
        return f"{self.name}.{_local(name, 'event')}"

    def kind(self, name: str) -> str:
        """The job kind of this module's queue ``name``: ``<module>.<name>``."""
        return f"{self.name}.{_local(name, 'queue')}"

    def on(self, type: str, *, of: Module | str | None = None) -> Callable[[EventHandler], EventHandler]:
        """Register ``handler(event, store)`` for this module's event ``type`` (``of=``: another
        module's, which must be installed before this one). It runs in the emit's transaction, after
        the handlers of modules installed earlier, and may return the event's outcome."""
        full = f"{_owner(of, self.name)}.{_local(type, 'event')}"

        def register(fn: EventHandler) -> EventHandler:
            if not callable(fn):
                raise EventError("JD2210", f"a handler is a function(event, store), not {fn!r}")
            _replace_or_add(self.handlers.setdefault(full, []), fn)
            return fn

        return register

    def queue(self, name: str, **options: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Register ``fn(payload, ctx)`` for the job kind ``<module>.<name>``; ``options`` are those
        of ``store.jobs.handler`` (``concurrency``, ``max_attempts``, ``lease``, ``timeout``)."""
        kind = self.kind(name)

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            if not callable(fn):
                raise EventError("JD2210", f"a queue handler is a function(payload, ctx), not {fn!r}")
            self.queues[kind] = _Queue(kind, fn, dict(options))
            return fn

        return register

    def materialization(self, name: str, *, version: int, collection: str | None = None) -> Materialization:
        """Declare a materialization (re-declaring one replaces it: a notebook cell run again)."""
        _local(name, "materialization")
        if type(version) is not int or version < 1:
            raise EventError("JD2210", f"a materialization's version is an integer >= 1, not {version!r}")
        target = name if collection is None else collection
        if not isinstance(target, str) or not _COLLECTION.match(target):
            raise EventError(
                "JD2210", f"materialization {self.name}.{name} needs a collection name (collection=...), "
                f"not {target!r}",
            )  # fmt: skip
        mat = Materialization(self.name, name, version, target)
        self.materializations[name] = mat
        return mat

    def types(self) -> set[str]:
        """Every event type this module handles (its own and other modules')."""
        found = set(self.handlers)
        for mat in self.materializations.values():
            found.update(mat.handlers)
        return found

    def __repr__(self) -> str:
        return (
            f"<Module {self.name}: {sum(map(len, self.handlers.values()))} handlers, "
            f"{len(self.queues)} queues, {len(self.materializations)} materializations>"
        )

    def _repr_html_(self) -> str:
        rows = [(f"on {t}", ", ".join(_name(h) for h in hs)) for t, hs in self.handlers.items()]
        rows += [(f"queue {q.kind}", _name(q.fn)) for q in self.queues.values()]
        rows += [
            (
                f"materialization {m.full_name} v{m.version}",
                f"collection {m.collection}: {', '.join(m.types)}",
            )
            for m in self.materializations.values()
        ]
        body = "".join(
            f"<tr><td><code>{html.escape(a)}</code></td><td>{html.escape(b)}</td></tr>" for a, b in rows
        )
        return f"<div><b>module {html.escape(self.name)}</b>{table(['declares', 'what'], body)}</div>"


def _quiet(fn: EventHandler) -> EventHandler:
    """``fn`` returning nothing: a materialization's handler never gives an event its outcome."""

    @functools.wraps(fn)
    def handler(event: Any, store: Any) -> None:
        fn(event, store)

    return handler


def _replace_or_add(handlers: list[EventHandler], fn: EventHandler) -> None:
    """Add ``fn``, or replace a top-level function of the same name (a notebook cell run again)."""
    name = (getattr(fn, "__module__", None), getattr(fn, "__qualname__", None))
    if name[1] and "<" not in name[1]:
        for i, old in enumerate(handlers):
            if (getattr(old, "__module__", None), getattr(old, "__qualname__", None)) == name:
                handlers[i] = fn
                return
    handlers.append(fn)


def _name(fn: object) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"
