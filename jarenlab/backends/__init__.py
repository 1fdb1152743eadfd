"""Backends: the database engines a store runs on, and the only place SQL and drivers live.

May import: the foundation and the model's declarations (``jarenlab.model``); a backend's own
folder is loaded only when a store uses it. Nothing above: the planner, the store and the subsystems
reach a database only through the :class:`Backend` and :class:`Dialect` protocols.

- :mod:`jarenlab.backends.base`: the :class:`~jarenlab.backends.base.Backend` protocol (the contract
  every engine implements) and the :class:`~jarenlab.backends.base.Catalogue` of named statements.
- :mod:`jarenlab.backends.sqlite`: the embedded default, one SQLite file in WAL mode; its
  statements, one ``.sql`` file per subsystem, are in ``backends/sqlite/sql/``.
- :mod:`jarenlab.backends.postgres`: a store shared by many machines, one schema of a PostgreSQL
  database; its statements are in ``backends/postgres/sql/`` under the same names.

:data:`REGISTERED` is the registry: one :class:`Registered` entry per backend (its name, its title,
how it recognises a target, the options it takes, what it can do, and a loader of its class that
imports its driver only when a store uses it). Everything outside this room that needs a fact
about a backend reads it from the store's backend object or from its entry, never by comparing a
name. Everything above this room speaks to a store's :class:`~jarenlab.database.Database`, which
runs the backend's named statements; ``docs/architecture.md`` shows how a backend is added.

>>> [entry.name for entry in REGISTERED], entry_for("postgresql://db.lab/lab").title
(['sqlite', 'postgresql'], 'PostgreSQL')
>>> entry_for("lab.db").title, entry_for(None).name == DEFAULT.name
('SQLite', True)
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, unquote, urlsplit

from jarenlab.errors import StoreError

if TYPE_CHECKING:
    from jarenlab.backends.base import Backend


@dataclass(frozen=True)
class Option:
    """A store option that one backend takes (``jl.open(target, model, name=value)``).

    Attributes:
        name: the option's name, also the worker's flag (``--schema``; ``--no-notify`` for an
            option that is on by default).
        default: its value when not given (None: the backend's own default).
        help: what its flag does, for the worker's ``--help``.
        check: the reason a value is refused (JD0006), or None when it is fine; asked whatever
            the target.
        ignored_elsewhere: True when a store on another backend accepts it and does nothing with
            it (``notify=False``: that store's readers look anyway); False when it is refused there
            (JD0006: ``schema`` given for a file).
    """

    name: str
    default: Any
    help: str
    check: Callable[[Any], str | None] | None = None
    ignored_elsewhere: bool = False

    @property
    def flag(self) -> str:
        """The worker's flag: ``--schema``, or ``--no-notify`` for an option that is on by default."""
        return f"--no-{self.name}" if self.default is True else f"--{self.name}"


@dataclass(frozen=True)
class Registered:
    """One registered backend: what the rest of the package may know about it without loading it.

    Attributes:
        name: the backend's name (``backend.name``, ``dialect.name``, ``Explain.database``).
        title: how it is named to a reader (a widget's tab, a report).
        target: how its targets look, for messages (``"a file"``, ``"a postgresql:// URL"``).
        recognises: True for a target of this backend; None for the default backend, which takes
            every target no other entry recognises (and a store opened without one).
        options: the store options it takes beyond the common ones.
        capabilities: what it can do, in the words of :data:`CAPABILITIES` (tests select on them).
        load: its class, imported on first use (the driver with it).
        locate: a target as (the target the backend opens, or None for a fresh store in a
            temporary folder; whether the target itself says read-only).
        scratch: the target of a fresh store in a temporary folder, or None when it has none.
        existing: refuses (a coded error) a target that holds no store yet, for a process that
            joins one (a worker); None when only opening it can tell.
    """

    name: str
    title: str
    target: str
    recognises: Callable[[Any], bool] | None
    options: tuple[Option, ...]
    capabilities: frozenset[str]
    load: Callable[[], Callable[..., Backend]]
    locate: Callable[[str], tuple[str | None, bool]] = lambda target: (target, False)
    scratch: Callable[[str], str] | None = None
    existing: Callable[[str], None] | None = None

    def takes(self, option: str) -> bool:
        """True when ``option`` is one of this backend's options."""
        return any(o.name == option for o in self.options)


#: What a backend can do, as the registry's ``capabilities`` name it: the words tests select on.
CAPABILITIES: Mapping[str, str] = {
    "file": "the store is one local file (with its WAL): other tools can open and read it",
    "single_writer": "one writer at a time: the store's threads queue behind its write gate",
    "concurrent_writers": "writers run side by side; commit-order appends are serialised by locks",
    "notify": "a commit wakes other processes' readers at once (and can be turned off: they poll)",
    "server_clock": "the database's clock is a server's, not this machine's",
    "sessions": "a server can end a connection while the store is open; the store reconnects",
    "schemas": "a store is one schema of a database that may hold other applications' tables",
    "checked_intervals": "interval declarations are kept by a lookup after each write (a partial index)",
    "enforced_intervals": "the database refuses an overlapping interval itself (exclusion constraints)",
    "decimal_numbers": "members compare as the decimal they are written as, not as floats",
    "collations": "the database has a default collation: the planner collates strings in code points",
    "plan_json": "the database's plan comes as JSON nodes (node types such as a sequential scan)",
    "session_settings": "the store sets its sessions up on a server (JIT off, timeouts)",
    "server_cursors": "a streamed result waits on the server in a cursor and is fetched a batch at a time",
}

#: What a PostgreSQL store's target starts with.
SERVER_SCHEMES = ("postgresql://", "postgres://")


def is_server_target(target: Any) -> bool:
    """True for a PostgreSQL URL (``postgresql://...``); anything else names a SQLite file."""
    return isinstance(target, str) and target.startswith(SERVER_SCHEMES)


#: The ``mode`` values a ``file:`` target may carry (SQLite's own spelling).
FILE_MODES = ("ro", "rw", "rwc", "memory")


def local_target(target: str) -> tuple[str | None, bool]:
    """A SQLite target as (the file's path, or None for a fresh store in a temporary folder; read-only).

    ``":memory:"`` and a ``file:`` URI with ``mode=memory`` are fresh stores in a temporary folder,
    removed on close: a store needs a file (WAL, a connection per thread, other processes).
    ``file:`` URIs (``file:lab.db``, ``file:///data/lab.db?mode=ro``) name the file, and ``mode``
    is ``ro`` (read-only), ``rw`` (the file must exist) or ``rwc``; any other parameter is JD0006,
    since the store sets the connection up itself.

    >>> local_target("file:///data/lab%20a.db?mode=ro"), local_target(":memory:"), local_target("lab.db")
    (('/data/lab a.db', True), (None, False), ('lab.db', False))
    """
    if target == ":memory:":
        return None, False
    if not target.startswith("file:"):
        return target, False
    parts = urlsplit(target)
    if parts.netloc not in ("", "localhost") or parts.fragment:
        raise StoreError(
            "JD0006", f"{target!r}: a file: URI names a local file (file:lab.db, file:///data/lab.db)"
        )
    params = dict(parse_qsl(parts.query, keep_blank_values=True))
    extra = sorted(set(params) - {"mode"})
    if extra:
        raise StoreError(
            "JD0006",
            f"{target!r}: the URI parameter {extra[0]!r} is not supported (only mode={'|'.join(FILE_MODES)}); "
            "the store sets its connections up itself (WAL, busy timeout, foreign keys)",
        )
    mode = params.get("mode", "rwc")
    if mode not in FILE_MODES:
        raise StoreError("JD0006", f"{target!r}: mode is one of {', '.join(FILE_MODES)}, not {mode!r}")
    if mode == "memory":
        return None, False
    path = unquote(parts.path)
    if not path:
        raise StoreError("JD0006", f"{target!r} names no file")
    if mode == "rw" and not os.path.exists(path):
        raise StoreError("JD0006", f"{target!r}: mode=rw opens an existing file, and {path} does not exist")
    return path, mode == "ro"


def existing_file(target: str) -> None:
    """Refuse a SQLite target that names no existing store file (JD0006 for a fresh store of its
    own, JD2010 for a missing file): what a worker joining a store checks first."""
    path, _ = local_target(target)
    if path is None:
        raise StoreError("JD0006", f"{target!r} is a fresh store of its own; a worker needs a store file")
    if not os.path.isfile(path):
        raise StoreError("JD2010", f"no store file at {path!r}")


def _check_notify(value: Any) -> str | None:
    return None if type(value) is bool else f"notify is True or False, not {value!r}"


def _sqlite() -> Callable[..., Backend]:
    from jarenlab.backends.sqlite import SQLiteBackend

    return SQLiteBackend


def _postgresql() -> Callable[..., Backend]:
    from jarenlab.backends.postgres import PostgresBackend

    return PostgresBackend


#: Every backend a store can run on, the default first. A new backend is one entry here and its
#: own folder; nothing outside ``jarenlab/backends/`` names it.
REGISTERED: tuple[Registered, ...] = (
    Registered(
        name="sqlite",
        title="SQLite",
        target="a file",
        recognises=None,
        options=(),
        capabilities=frozenset({"file", "single_writer", "checked_intervals"}),
        load=_sqlite,
        locate=local_target,
        scratch=lambda folder: os.path.join(folder, "store.db"),
        existing=existing_file,
    ),
    Registered(
        name="postgresql",
        title="PostgreSQL",
        target="a postgresql:// URL",
        recognises=is_server_target,
        options=(
            Option("schema", None, "the store's schema (default public)"),
            Option(
                "notify",
                True,
                "no NOTIFY wake-ups: other processes' readers poll",
                _check_notify,
                ignored_elsewhere=True,
            ),
        ),
        capabilities=frozenset(
            {
                "concurrent_writers",
                "notify",
                "server_clock",
                "sessions",
                "schemas",
                "enforced_intervals",
                "decimal_numbers",
                "collations",
                "plan_json",
                "session_settings",
                "server_cursors",
            }
        ),
        load=_postgresql,
    ),
)

#: The backend of a target no other entry recognises, and of a store opened without a target.
DEFAULT = next(entry for entry in REGISTERED if entry.recognises is None)

#: Every backend's options, in registry order: the store options beyond the common ones.
OPTIONS: tuple[Option, ...] = tuple(option for entry in REGISTERED for option in entry.options)


def registered(name: str) -> Registered:
    """The entry of the backend called ``name`` (JD2010 for a name no backend has)."""
    for entry in REGISTERED:
        if entry.name == name:
            return entry
    raise StoreError("JD2010", f"no backend {name!r} is registered ({', '.join(e.name for e in REGISTERED)})")


def title(name: str) -> str:
    """How the backend called ``name`` is named to a reader (the name itself for one not registered).

    >>> title("postgresql")
    'PostgreSQL'
    """
    return next((entry.title for entry in REGISTERED if entry.name == name), name)


def entry_for(target: Any) -> Registered:
    """The entry of the backend a target belongs to (None: the default's fresh store)."""
    if target is not None:
        for entry in REGISTERED:
            if entry.recognises is not None and entry.recognises(target):
                return entry
    return DEFAULT


def check_options(entry: Registered, options: Mapping[str, Any]) -> None:
    """Refuse (JD0006) a backend option whose value is bad, or one given for a target whose backend
    does not take it (unless it is ignored elsewhere)."""
    for option in OPTIONS:
        if option.name not in options or (options[option.name] is None and option.default is None):
            continue  # not given
        reason = option.check(options[option.name]) if option.check is not None else None
        if reason is not None:
            raise StoreError("JD0006", reason)
        if not entry.takes(option.name) and not option.ignored_elsewhere:
            owner = next(e for e in REGISTERED if e.takes(option.name))
            raise StoreError(
                "JD0006", f"{option.name} is for a {owner.title} store ({owner.target}), not {entry.target}"
            )


def open_backend(
    target: str, *, read_only: bool = False, busy_timeout: float = 5.0, **options: Any
) -> Backend:
    """The backend for a store's target (:func:`entry_for`), given the options its entry takes (a
    PostgreSQL store's ``schema``, default ``public``, and ``notify``). A backend's driver is
    imported only when a store uses it."""
    entry = entry_for(target)
    given = {o.name: options[o.name] for o in entry.options if options.get(o.name) is not None}
    return entry.load()(target, read_only=read_only, busy_timeout=busy_timeout, **given)
