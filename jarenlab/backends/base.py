"""The interface a backend implements, and the statement catalogue every backend keeps.

A backend is everything jarenlab knows about one database engine: how to connect (a connection per
thread), the transaction primitives, how to run a statement and bind its values, the one boundary
where driver errors become coded :class:`~jarenlab.errors.JarenlabError` s, what the engine can do
(the capability probe), the DDL of a model and of the internal tables, the physical shape that
verify-never-alter compares, and the hooks a shared engine needs (serialising appends, waking
readers, the clock). Nothing outside ``jarenlab/backends/`` imports a driver or writes SQL text;
subsystems run **named statements** from the backend's :class:`Catalogue` through the store's
:class:`~jarenlab.database.Database`.

The contract of each method is its docstring; ``tests/backends/`` runs one contract suite over
every backend that exists.

>>> cat = Catalogue.parse("demo", '''
... -- name: get
... -- One document by key.
... SELECT doc FROM {table} WHERE key = :key
... -- name: many
... SELECT doc FROM {table} WHERE key IN ({keys})
... ''')
>>> cat.names()
('get', 'many')
>>> cat.text("get", quote=lambda n: f'"{n}"', table="t")
'SELECT doc FROM "t" WHERE key = ?'
>>> cat.text("many", quote=lambda n: f'"{n}"', table="t", keys=3)
'SELECT doc FROM "t" WHERE key IN (?, ?, ?)'
>>> Catalogue.parse("demo", "-- name: pick\\nSELECT k FROM t WHERE k IN ({keys})\\n"
...     "-- name: take\\nDELETE FROM t WHERE k = ({@pick} LIMIT 1)").text("take", quote=str, keys=2)
'DELETE FROM t WHERE k = (SELECT k FROM t WHERE k IN (?, ?) LIMIT 1)'

Parameters are named (``:name``) in every backend's files and a call passes them by name; the
catalogue writes each as the driver's positional marker (``?``, or ``%s`` for psycopg, which
also needs ``%`` written ``%%``) once per statement and fill, and binds a call's values in order:

>>> due = Catalogue.parse("demo", "-- name: due\\nSELECT '50%', :at::float8 FROM t WHERE n = :n OR m = :at",
...     style="format").prepare("due", quote=str)
>>> due.text, due.order
("SELECT '50%%', %s::float8 FROM t WHERE n = %s OR m = %s", ('at', 'n', 'at'))
>>> due.bind("demo.due", {"n": 2, "at": 1.5})
(1.5, 2, 1.5)
"""

from __future__ import annotations

import contextlib
import operator
import re
import string
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any, Literal, Protocol

from jarenlab.errors import ModelError, StoreError

if TYPE_CHECKING:
    from jarenlab.errors import JarenlabError
    from jarenlab.model import CollectionSpec, Model
    from jarenlab.model.intervals import IntervalSpec

#: Row values a statement returns, positional.
Row = tuple[Any, ...]
#: What fills a template field: an identifier (``str``), a count of placeholders (``int``), or a
#: sequence of fragment names from the same catalogue joined with ``AND`` (``tuple``).
Fill = str | int | tuple[str, ...]

_NAME = re.compile(r"^--\s*name:\s*([a-z][a-z0-9_]*)\s*$")
_ADD_COLUMN = re.compile(r"ALTER TABLE ([a-z_][a-z0-9_]*) ADD COLUMN ([a-z_][a-z0-9_]*) ")

#: How a collection's rows lie when a query asks for no order (**storage order**): ``"key"``, in
#: ascending key order; ``"insertion"``, a new key after every stored row, keeping that place
#: through updates (a deleted key that comes back goes last again).
StorageOrder = Literal["key", "insertion"]

#: Identifiers that may reach SQL text (collection, index, column and function names): the one rule.
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def refuse_clashes(
    model: Model,
    indexes: Callable[[CollectionSpec], Sequence[tuple[str, str]]],
    *,
    fold: bool,
    limit: int | None = None,
    columns: bool = False,
) -> None:
    """JD0005 (naming the declaration) when two objects a model's DDL creates in one namespace would
    have one name, before any statement runs: the tables and ``indexes(spec)`` (each collection's
    ``(name, CREATE INDEX)``) share the database's namespace, and with ``columns`` each table's
    generated columns share the table's. ``fold``: the engine compares names without case (SQLite);
    ``limit``: it cuts longer names to that many bytes (PostgreSQL's 63), so none may be longer.

    >>> from jarenlab.model import load_model
    >>> m = load_model({"$model": "0.1", "collections": {"a_b": {"schema": {"type": "object"},
    ...     "key": None, "identity": "integer", "indexes": [{"name": "c", "path": "$.c"}]},
    ...     "a": {"schema": {"type": "object"}, "key": None, "identity": "integer",
    ...     "indexes": [{"name": "b_c", "path": "$.d"}]}}})
    >>> refuse_clashes(m, lambda spec: [(f"{spec.name}_{ix.name}", "") for ix in spec.indexes], fold=True)
    Traceback (most recent call last):
    ...
    jarenlab.errors.ModelError: JD0005 invalid_model: index 'b_c' of collection 'a' would be named 'a_b_c' in the database, as index 'c' of collection 'a_b' is; rename one (at /collections/a/indexes/0/name)
    """
    shared: dict[str, str] = {}

    def claim(seen: dict[str, str], name: str, what: str, at: str) -> None:
        if limit is not None and len(name.encode()) > limit:
            raise ModelError(
                "JD0005",
                f"{what} would be named {name!r} in the database, longer than its {limit} bytes; shorten it",
                doc_path=at,
            )
        folded = name.casefold() if fold else name
        if folded in seen:
            raise ModelError(
                "JD0005",
                f"{what} would be named {name!r} in the database, as {seen[folded]} is; rename one",
                doc_path=at,
            )
        seen[folded] = what

    for spec in model.collections.values():
        claim(shared, spec.name, f"collection {spec.name!r}", f"/collections/{spec.name}")
    for spec in model.collections.values():
        at = f"/collections/{spec.name}"
        declared = {f"{spec.name}_{ix.name}": (i, ix.name) for i, ix in enumerate(spec.indexes)}
        for name, _ in indexes(spec):
            i, ix_name = declared.get(name, (None, None))
            what = (
                f"an index of collection {spec.name!r}"
                if i is None
                else f"index {ix_name!r} of collection {spec.name!r}"
            )
            claim(shared, name, what, at if i is None else f"{at}/indexes/{i}/name")
        if columns:
            own: dict[str, str] = {}
            for column in spec.columns:
                claim(
                    own,
                    column.name,
                    f"the column of path {column.path!r} of collection {spec.name!r}",
                    f"{at}/indexes",
                )


def quote(name: str) -> str:
    """Quote an identifier for SQL text after checking it against :data:`IDENTIFIER` (JD2010 otherwise).

    Both SQLite and PostgreSQL quote with double quotes; nothing else ever reaches SQL text.

    >>> quote("flights")
    '"flights"'
    """
    if type(name) is not str or not IDENTIFIER.match(name):
        raise StoreError("JD2010", f"{name!r} is not a valid identifier")
    return f'"{name}"'


@cache
def placeholders(mark: str, count: int) -> str:
    """``count`` of a driver's placeholder ``mark``, separated by commas.

    >>> placeholders("%s", 3)
    '%s, %s, %s'
    """
    return ", ".join([mark] * count)


@cache
def load_catalogue(package: str, subsystem: str, style: ParamStyle = "qmark") -> Catalogue:
    """The named statements of ``subsystem`` in a backend's package (``<package>/sql/<subsystem>.sql``),
    read once, for a driver binding ``style``."""
    return Catalogue.load(package, subsystem, style=style)


class ErrorBoundary:
    """A backend's one error boundary: ``with boundary(**fields):`` turns a driver error raised
    inside into the coded error ``translate`` makes of it (fields such as ``collection`` and ``key``
    set on it), the driver's error as ``__cause__``.

    >>> import sqlite3
    >>> boundary = ErrorBoundary(sqlite3.Error, lambda exc, **f: StoreError("JD2005", str(exc), **f))
    >>> try:
    ...     with boundary(collection="notes"):
    ...         raise sqlite3.OperationalError("disk I/O error")
    ... except StoreError as err:
    ...     print(err, type(err.__cause__).__name__)
    JD2005 database_error: disk I/O error (collection 'notes') OperationalError
    """

    def __init__(self, driver_error: type[Exception], translate: Callable[..., JarenlabError | None]) -> None:
        self.driver_error = driver_error
        self.translate = translate

    def translated(self, exc: Exception, **fields: Any) -> JarenlabError:
        """The coded error for ``exc``, an instance of the driver's error."""
        err = self.translate(exc, **fields)
        assert err is not None, "a backend translates every error of its driver"
        return err

    @contextlib.contextmanager
    def __call__(self, **fields: Any) -> Iterator[None]:
        try:
            yield
        except self.driver_error as exc:
            err = self.translated(exc, **fields)
            # The translation's cause where it sets one (what a backend passes on), else the error.
            raise err from (exc if err.__cause__ is None else err.__cause__)


#: The positional marker a driver binds (its DB-API ``paramstyle``): ``"qmark"`` is ``?`` (sqlite3),
#: ``"format"`` is ``%s`` (psycopg, which then reads ``%%`` as one percent sign).
ParamStyle = Literal["qmark", "format"]

#: One token of a statement's text that parameter translation must see: a string literal, a quoted
#: identifier, a comment and a dollar-quoted body are kept whole; ``::`` is a cast; ``:name`` a
#: parameter (group 1); ``%`` a percent sign; ``?`` (group 2) a positional marker.
_TOKEN = re.compile(
    r"'(?:[^']|'')*'|\"[^\"]*\"|--[^\n]*|\$\$.*?\$\$|::|:([a-z_][a-z0-9_]*)|%|(\?)", re.DOTALL
)
_MARKS: dict[str, str] = {"qmark": "?", "format": "%s"}


def positional(text: str, style: ParamStyle) -> tuple[str, tuple[str, ...]]:
    """A statement's text with each ``:name`` written as the driver's positional marker, and the
    names in marker order (a name used twice is bound twice). A ``?`` of the text itself is
    refused (JD0003): every statement names its parameters.

    >>> positional("SELECT :a::int, '100%', :b FROM t WHERE x = :a AND y % 2 = 0", "format")
    ("SELECT %s::int, '100%%', %s FROM t WHERE x = %s AND y %% 2 = 0", ('a', 'b', 'a'))
    """
    mark = _MARKS[style]
    order: list[str] = []

    def token(match: re.Match[str]) -> str:
        if match[1]:
            order.append(match[1])
            return mark
        if match[2]:
            raise StoreError("JD0003", f"a positional parameter in {text[:60]!r}: name it (:name)")
        # psycopg reads every % of a statement it binds, inside literals too
        return match[0].replace("%", "%%") if style == "format" else match[0]

    return _TOKEN.sub(token, text), tuple(order)


@dataclass(frozen=True, slots=True)
class Statement:
    """One named statement: where it comes from, its comment, its template text, and the names of
    the parameters it binds itself (fragments and includes bring their own)."""

    catalogue: str
    name: str
    doc: str
    template: str
    params: tuple[str, ...]

    @property
    def fields(self) -> tuple[str, ...]:
        """The template's fields (identifiers, placeholder lists, fragments), in order."""
        return tuple(f for _, f, _, _ in string.Formatter().parse(self.template) if f)


def _one(name: str) -> Callable[[Mapping[str, Any]], tuple[Any, ...]]:
    return lambda params: (params[name],)


def _none(params: Mapping[str, Any]) -> tuple[Any, ...]:
    return ()


class Prepared:
    """A statement with its fields filled, in the driver's positional style, ready to run: its
    ``text``, the names a call passes (``names``), which of them are lists (``lists``: ``(name,
    length)`` of each ``{name}`` filled with a count, bound as ``name_0``, ``name_1``, ...), and the
    name of each marker in order (``order``)."""

    __slots__ = ("_pick", "lists", "names", "order", "text")

    def __init__(
        self, text: str, names: frozenset[str], lists: tuple[tuple[str, int], ...], order: tuple[str, ...]
    ) -> None:
        self.text = text
        self.names = names
        self.lists = lists
        self.order = order
        # itemgetter of one name gives the value, not a tuple of it
        self._pick: Callable[[Mapping[str, Any]], tuple[Any, ...]] = (
            operator.itemgetter(*order) if len(order) > 1 else _one(order[0]) if order else _none
        )

    def bind(self, statement: str, params: Mapping[str, Any]) -> tuple[Any, ...]:
        """The values to hand the driver, in marker order: ``params`` checked against :attr:`names`
        (JD0003 names what is missing or unexpected), each list spread over its markers."""
        # As many names as it takes and none missing is exactly its names: no set is compared.
        try:
            if len(params) == len(self.names):
                if self.lists:
                    params = self._spread(statement, dict(params))
                return self._pick(params)
        except (KeyError, TypeError, ValueError):
            pass
        raise self._refused(statement, params)

    def _spread(self, statement: str, params: dict[str, Any]) -> dict[str, Any]:
        for name, length in self.lists:
            values = params.pop(name)
            if len(values) != length:
                raise StoreError("JD0003", f"{statement}: {name} has {len(values)} values, not {length}")
            params.update(zip([f"{name}_{i}" for i in range(length)], values, strict=True))
        return params

    def _refused(self, statement: str, params: Any) -> StoreError:
        if not isinstance(params, Mapping):
            return StoreError("JD0003", f"{statement} takes its parameters by name, not {params!r}")
        missing, extra = sorted(self.names - params.keys()), sorted(params.keys() - self.names)
        return StoreError(
            "JD0003", f"{statement} takes {sorted(self.names)}: missing {missing}, unexpected {extra}"
        )


class Catalogue:
    """The named statements of one subsystem on one backend (a ``.sql`` file with ``-- name:`` blocks).

    A block is ``-- name: <name>``, optional ``--`` comment lines (its documentation), then the
    statement. ``{field}`` marks what is filled in at run time, and only that: an identifier
    (validated and quoted by the backend), a number of placeholders, or fragments of the same
    file. ``{@name}`` includes the statement ``name`` of the same file, filled with the same
    fields (a claim's pick and the "what would a claim take" query are one text). Values are never
    filled in; they are always bound parameters, by name (``:name``), written as the driver's
    positional markers (``style``) once per statement and fill.
    """

    def __init__(self, name: str, statements: Mapping[str, Statement], style: ParamStyle = "qmark") -> None:
        self.name = name
        self.style = style
        self._statements = dict(statements)
        self._prepared: dict[tuple[str, tuple[tuple[str, Fill], ...]], Prepared] = {}

    @classmethod
    def parse(cls, name: str, text: str, *, style: ParamStyle = "qmark") -> Catalogue:
        """Read a catalogue from its file text; a malformed file is an internal error (JD0003)."""
        statements: dict[str, Statement] = {}
        current: str | None = None
        doc: list[str] = []
        body: list[str] = []

        def flush() -> None:
            if current is None:
                return
            sql = "\n".join(body).strip().rstrip(";").strip()
            if not sql:
                raise StoreError("JD0003", f"statement {name}.{current} is empty")
            order = positional(sql, "qmark")[1]  # refuses a ? of the text
            statements[current] = Statement(name, current, " ".join(doc), sql, tuple(dict.fromkeys(order)))

        for line in text.splitlines():
            match = _NAME.match(line.strip())
            if match:
                flush()
                current, doc, body = match.group(1), [], []
                if current in statements:
                    raise StoreError("JD0003", f"statement {name}.{current} is defined twice")
            elif current is None:
                if line.strip() and not line.strip().startswith("--"):
                    raise StoreError("JD0003", f"text before the first statement of {name}")
            elif line.strip().startswith("--") and not body:
                doc.append(line.strip()[2:].strip())
            else:
                body.append(line)
        flush()
        return cls(name, statements, style)

    @classmethod
    def load(cls, package: str, name: str, *, style: ParamStyle = "qmark") -> Catalogue:
        """The catalogue ``<package>/sql/<name>.sql``, its parameters in ``style``."""
        text = resources.files(package).joinpath("sql", f"{name}.sql").read_text("utf-8")
        return cls.parse(name, text, style=style)

    def names(self) -> tuple[str, ...]:
        """Every statement's name, in file order."""
        return tuple(self._statements)

    def __contains__(self, name: object) -> bool:
        return name in self._statements

    def statement(self, name: str) -> Statement:
        """The statement called ``name``; JD0003 (an internal error) when there is none."""
        try:
            return self._statements[name]
        except KeyError:
            raise StoreError("JD0003", f"no statement {self.name}.{name}") from None

    def text(self, name: str, *, quote: Callable[[str], str], **fill: Fill) -> str:
        """The SQL text of ``name`` with its fields filled (see :meth:`prepare`)."""
        return self.prepare(name, quote=quote, **fill).text

    def prepare(self, name: str, *, quote: Callable[[str], str], **fill: Fill) -> Prepared:
        """``name`` with its fields filled and its ``:name`` parameters written as the driver's
        positional markers, with what a call passes (made once per name and fill, then cached)."""
        cache_key = (name, tuple(sorted(fill.items())))
        prepared = self._prepared.get(cache_key)
        if prepared is None:
            names: set[str] = set()
            lists: dict[tuple[str, int], None] = {}
            text, order = positional(self._filled(name, quote, fill, names, lists), self.style)
            prepared = Prepared(text, frozenset(names), tuple(lists), order)
            if len(self._prepared) < 4096:
                self._prepared[cache_key] = prepared
        return prepared

    def _filled(
        self,
        name: str,
        quote: Callable[[str], str],
        fill: Mapping[str, Fill],
        names: set[str],
        lists: dict[tuple[str, int], None],
    ) -> str:
        """The text of ``name`` with its fields filled, parameters still ``:name``; adds the
        parameters it takes to ``names`` and its list parameters to ``lists``."""
        stmt = self.statement(name)
        names.update(stmt.params)
        values: dict[str, str] = {}
        for field in stmt.fields:
            if field.startswith("@"):  # another statement of this file, filled with the same fields
                values[field] = self._filled(field[1:], quote, fill, names, lists)
                continue
            if field not in fill:
                raise StoreError("JD0003", f"statement {self.name}.{name} needs {{{field}}}")
            value = fill[field]
            if isinstance(value, bool):
                raise StoreError("JD0003", f"{{{field}}} of {self.name}.{name} is a bool")
            if isinstance(value, int):
                values[field] = ", ".join(f":{field}_{i}" for i in range(value))
                names.add(field)
                lists[(field, value)] = None
            elif isinstance(value, str):
                values[field] = quote(value)
            else:
                parts = [self._filled(part, quote, {}, names, lists) for part in value]
                values[field] = " AND ".join(f"({part})" for part in parts) or "1 = 1"
        return stmt.template.format_map(values)

    def schema(self) -> list[str]:
        """The statements that create this subsystem's tables: those named ``create_*``, in file order."""
        return [s.template for n, s in self._statements.items() if n.startswith("create_")]

    def columns_added(self) -> list[tuple[str, str, str]]:
        """``(table, column, statement)`` of each ``upgrade_column_*`` statement, in file order: an
        ``ALTER TABLE <table> ADD COLUMN <column> ...`` that brings a table made by an earlier
        version up to its ``create_*`` shape (JD0003 for one of another form)."""
        added = []
        for name, stmt in self._statements.items():
            if name.startswith("upgrade_column_"):
                match = _ADD_COLUMN.match(stmt.template)
                if match is None:
                    raise StoreError(
                        "JD0003", f"{self.name}.{name} is not ALTER TABLE <t> ADD COLUMN <c> ..."
                    )
                added.append((match[1], match[2], stmt.template))
        return added

    def earlier_data(self) -> list[str]:
        """The ``upgrade_earlier_*`` statements, in file order: they run once, when an upgrade finds
        a store made by an earlier version, on data that version wrote (see :func:`upgrades`)."""
        return [s.template for n, s in self._statements.items() if n.startswith("upgrade_earlier_")]


def upgrades(catalogues: Sequence[Catalogue], columns: Callable[[str], set[str]]) -> list[str]:
    """The statements that upgrade the internal tables of a store made by an earlier version, in
    order: every ``upgrade_column_*`` whose table exists without its column (``columns(table)``:
    the table's columns, empty when there is no table: a fresh table is made whole), then, when
    there was any, every ``upgrade_earlier_*``. Nothing for a store of this version.
    """
    added = []
    for catalogue in catalogues:
        for table, column, sql in catalogue.columns_added():
            have = columns(table)
            if have and column not in have:
                added.append(sql)
    return [*added, *(sql for c in catalogues for sql in c.earlier_data())] if added else []


@dataclass(frozen=True, slots=True)
class IntervalStatements:
    """The statements that enforce one interval declaration on one collection.

    A backend builds them from the declaration (:meth:`Backend.interval_statements`); callers keep
    them (a write check builds them once) and run them with
    :meth:`~jarenlab.database.Database.one_built`.

    Attributes:
        conflict: params ``(group values..., new end, own key, new start)``, the group values being
            the owner (scope ``"owner"``) then each ``within`` value; one row ``(key,)`` of the
            stored record the new interval overlaps, or no row.
        invalid: no params; one row ``(key, doc)`` of a stored record that the declaration covers
            and whose bounds do not read as ``start < end``, or no row.
        overlap: no params; one row ``(key, earlier key)`` of two covered stored records of one
            group that overlap, or no row.
        enforced: True when the database refuses an overlapping write itself (an error with
            condition ``"exclusion"``, after which the write is undone): ``conflict`` then only
            names the other record. False: the write check runs ``conflict`` after every write.
    """

    conflict: str
    invalid: str
    overlap: str
    enforced: bool = False


@dataclass(frozen=True, slots=True)
class Alteration:
    """The statements that turn one collection's table from its old declaration into its new one
    (a migration). A backend builds them (:meth:`Backend.alter`); the migration runs them in its
    one transaction, in two phases around the pass over the documents.

    Attributes:
        before: run before documents are transformed or checked: take the table from other
            writers, drop what goes away or changes, rename, create a new collection's table.
        after: run once the documents are final: new typed columns and indexes, interval
            indexes or constraints (so a unique index or an interval sees the transformed data).
        rebuild: True when the table is copied into a new one because it cannot be altered in
            place (the plan shows it as such).
    """

    before: tuple[str, ...] = ()
    after: tuple[str, ...] = ()
    rebuild: bool = False


class Cursor(Protocol):
    """What running a statement gives back (a DB-API cursor)."""

    @property
    def rowcount(self) -> int: ...

    @property
    def description(self) -> Any: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def fetchmany(self, size: int) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Watch(Protocol):
    """Wakes a reader when another connection (thread or process) may have committed."""

    def wait(self, timeout: float) -> bool:
        """Block up to ``timeout`` seconds; True when something may have changed since the last call.

        The first call returns True at once: a commit that landed between the reader's last look
        and the watch's start (before a listener was listening) is the reader's to find."""
        ...

    def close(self) -> None:
        """Release what the watch holds (its connection, its listener)."""
        ...


class Dialect(Protocol):
    """How the planner spells SQL on this backend (see :mod:`jarenlab.query.planner.sql`).

    The planner decides what to compute from neutral values: JSON *kinds* (``null true false int
    float string array object``: ``2`` is ``int``, ``2.0`` is ``float``), operators (``eq lt le gt
    ge``), families (``string``/``number``). Every piece of SQL text it writes comes from one
    method here. Operands are SQL text already; a bound value is a marker that the emitter turns
    into :meth:`placeholder` s in text order, so a method may place or repeat its operands freely.
    The capabilities say what the planner may rely on; where one is missing it keeps that part
    in the engine. SQLite's spelling is :class:`jarenlab.backends.sqlite.dialect.SQLiteDialect`.
    """

    #: ``"sqlite"``, ``"postgresql"``.
    name: str
    #: True when a stored number's JSON kind says whether it was written ``2`` or ``2.0``. Without
    #: it, number projections and integer aggregates (which must tell them apart) run in the engine.
    keeps_integers_apart: bool
    #: Numbers compared with members must be below this in magnitude (the database reads larger
    #: JSON integers inexactly); a larger literal stays in the engine, a larger external diverts.
    integer_limit: int
    #: False when the JSON functions cut strings at U+0000 (a pattern holding it stays in the engine).
    strings_hold_nul: bool
    #: False when a bound string cannot hold U+0000 (PostgreSQL's text): a literal holding it stays
    #: in the engine and an external holding it diverts.
    binds_nul: bool
    #: False when SQL cannot test a bound value's kind (:meth:`bound_kind_in`): an external compared
    #: as a string or as a number is then bound only where it is one, and as NULL elsewhere (a
    #: comparison with NULL reads as false), decided when the values are bound.
    tests_bound_kinds: bool
    #: False when the database cannot call this process's functions (a server): conditions over pure
    #: host operators (the UDF hatch) stay in the engine, and ``strict=True`` refuses them.
    host_functions: bool
    #: How a float is bound, or None to bind it as the driver does. PostgreSQL compares members as
    #: ``numeric`` and binds ``Decimal(repr(x))``: a float8 cast to numeric keeps 15 digits only.
    exact_float: Callable[[float], Any] | None
    #: The ``$date-part`` parts its SQL computes from a canonical UTC date-time.
    date_parts: frozenset[str]
    #: Whether :meth:`float_sum` sums numbers as the engine's ``$sum`` does (correctly rounded).
    sums_floats_exactly: bool
    #: Whether ``$min``/``$max`` of a number-typed member is the engine's: the least or greatest by
    #: value, the first in storage order of equal ones (``2`` or ``2.0``, ``0`` or ``-0.0``, kind
    #: and sign kept). False for SQL (its ``min`` neither keeps a number's kind nor picks the first
    #: of equal values): they run in the engine there (the columnar path computes them).
    number_extremes: bool
    #: True when an integer-typed member's typed value is the engine's number exactly whenever it is
    #: an integer (a member written ``2.0`` reads as the integer 2) and a float otherwise, so a SQL
    #: ``sum`` of them that comes back an integer is the exact sum of the engine's values: an average
    #: of them needs no per-row check (SQLite). False when the value is the decimal as written, which
    #: from 2^53 up may not be the float the engine reads (PostgreSQL's ``numeric`` of ``1e23``): an
    #: average then checks its members' magnitude.
    typed_integers_exact: bool
    #: True when an index over typed members answers a statement that reads only them without
    #: reading the table (SQLite); ``explain()`` then suggests an index covering a group-by.
    indexes_cover: bool
    #: True when the rows of an ordered, limited subquery reach the statement around it in that
    #: order without ordering them again (SQLite hands a subquery's rows on as they come, and would
    #: sort them again); False when the statement around it orders them again to be sure of it
    #: (PostgreSQL, whose planner sees they are in order and adds no sort).
    keeps_window_order: bool
    #: The aggregates beyond ``count sum avg min max`` it computes as the engine does, of a typed
    #: number member: ``median`` (``$median``), ``stddev`` (``$stddev``, ``ddof`` 1) and
    #: ``stddev-pop`` (``ddof`` 0). A database's SQL computes none of them so: they run in the
    #: engine there (the columnar path computes them, :func:`~jarenlab.query.planner.plan.column_traits`).
    holistic: frozenset[str]
    #: True when a condition may compare a number computed from members with a literal or an
    #: external (:class:`~jarenlab.query.planner.preds.CompareValue`: arithmetic between number
    #: members, a string's length, a date part of a date-time): True for both databases (where
    #: :func:`~jarenlab.query.planner.translate.value_reason` finds the answer exact) and the columns.
    computes_values: bool
    #: True when its arithmetic over floats is the engine's IEEE double arithmetic (SQLite's REAL, the
    #: columns); False when numbers are decimals as written (PostgreSQL's ``numeric``): there a
    #: computed condition adds, subtracts and multiplies integer members and integer literals only.
    computes_floats: bool
    #: Numbers compared with a computed value in SQL must be literals below it in magnitude (2^53:
    #: a result rounded past 64 bits, or past 2^53 from floats, then compares as the engine's
    #: exact one); None where no SQL computes them (the columns).
    computed_limit: int | None
    #: True when its SQL reads an array member's items (:meth:`some_item`): ``$some``/``$every``
    #: over them are ``EXISTS``/``NOT EXISTS``; False for the columns, which hold no arrays.
    quantifies: bool
    #: How ``$match``/``$search`` run in its SQL: ``engine`` (the engine's matcher registered on the
    #: connection), ``are`` (PostgreSQL's regular expressions, given the I-Regexp's exact ARE), or
    #: None (not at all).
    regexes: str | None

    # -- names and values ---------------------------------------------------------------------------
    def table(self, name: str) -> str:
        """A collection's table, checked and quoted: ``flights`` -> ``"flights"``."""
        ...

    def column(self, name: str) -> str:
        """A typed generated column, checked: ``gx_a`` -> ``gx_a`` (a dialect without such columns
        reads every member through :meth:`member_value` and never receives one)."""
        ...

    def document(self) -> str:
        """The column holding a row's document: ``doc``."""
        ...

    def key(self) -> str:
        """The column holding a row's key: ``key``."""
        ...

    def encoded_key(self, parts: Sequence[tuple[str, bool]]) -> str:
        """The stored text of a composite key (:mod:`jarenlab.keys`) from its members' values, each
        ``(expression, is_integer)`` in the key's order: what a reference's members are compared
        to a composite key's column with."""
        ...

    def storage_order(self) -> str:
        """What orders rows in storage order, the engine's order of ``$[*]`` (SQLite: ``rowid``)."""
        ...

    def first_in_storage_order(self) -> str:
        """A group's position in storage order, its first row (SQLite: ``min(rowid)``)."""
        ...

    def placeholder(self, position: int) -> str:
        """The ``position``-th bound value, from 1 (SQLite: ``?``; PostgreSQL through psycopg: ``%s``)."""
        ...

    def json_path(self, steps: Sequence[str | int]) -> Any:
        """The bound value naming a member: ``("a", 0)`` -> SQLite ``$."a"[0]``."""
        ...

    def member(self, steps: Sequence[str | int], bind: Callable[[Any], str]) -> str:
        """The member at a path as statement text, binding with ``bind`` what is bound:
        ``("a", 0)`` -> SQLite ``?`` (its :meth:`json_path` bound); PostgreSQL ``body->'a'->0``
        (written out, so an expression index on it matches)."""
        ...

    def truth(self, value: bool) -> str:
        """A constant condition: ``True`` -> ``1``."""
        ...

    # -- members ------------------------------------------------------------------------------------
    def json_type(self, path: str) -> str:
        """The member's JSON type, NULL when missing: ``?`` -> ``json_type(doc, ?)``."""
        ...

    def written_float(self, member: str) -> str:
        """The member holds a number written as a float (``2.0``, ``2.5``, ``1e16``), so an integer
        sum or key over it is not the engine's: SQLite ``json_type(doc, ?) = 'real'``; PostgreSQL
        reads it from ``jsonb``'s decimal (a scale, or a magnitude of 2^53 or more)."""
        ...

    def json_value(self, path: str) -> str:
        """The member's SQL value, NULL when missing: ``?`` -> ``json_extract(doc, ?)``."""
        ...

    def written_number(self, member: str, steps: Sequence[str | int]) -> str:
        """A number member (from :meth:`member`, at ``steps``) as the document writes it, NULL when
        missing, for the columns to read as the engine reads the document: its integers and floats
        kept apart (SQLite's :meth:`json_value`; PostgreSQL's ``jsonb`` text, or ``doc``'s where
        ``jsonb`` writes a float as the digits of the integer it equals)."""
        ...

    def member_value(
        self, member: str, steps: Sequence[str | int], family: str, typed: bool, column: str | None
    ) -> str:
        """The value of ``member`` (from :meth:`member`, at ``steps``) compared in ``family``
        (``string`` or ``number``): NULL when it is missing; a present member of another kind reads
        as NULL or as something the planner's kind guard rules out. ``typed``: the schema says a
        present member is of that family. ``column``: a typed column holding exactly this value.
        ``?`` -> SQLite ``json_extract(doc, ?)`` (or the column ``gx_a``); ``("s",)``, string ->
        PostgreSQL ``((body->>'s') COLLATE "C")``."""
        ...

    def kind_in(self, type_expr: str, kinds: Sequence[str]) -> str:
        """A :meth:`json_type` is one of ``kinds``: ``("int", "float")`` -> ``t IN ('integer', 'real')``."""
        ...

    def bound_kind_in(self, value: str, kinds: Sequence[str]) -> str:
        """A bound value's type is one of ``kinds`` (``string``, or ``int`` and ``float``):
        ``?``, ``("string",)`` -> ``typeof(?) IN ('text')``."""
        ...

    def type_kinds(self) -> Mapping[Any, str]:
        """What a :meth:`json_type` cell read back means as a kind: ``"real"`` -> ``"float"``."""
        ...

    def is_present(self, expr: str) -> str:
        """``expr`` is not NULL: ``x`` -> ``x IS NOT NULL``."""
        ...

    # -- conditions ---------------------------------------------------------------------------------
    def is_missing(self, expr: str) -> str:
        """``expr`` is NULL, as an index seeks it: ``gx_a`` -> ``gx_a IS NULL``."""
        ...

    def compare(self, left: str, op: str, right: str) -> str:
        """``eq ne lt le gt ge`` (NULL when either side is): ``a``, ``gt``, ``?`` -> ``a > ?``."""
        ...

    def all_of(self, parts: Sequence[str]) -> str:
        """``[a, b]`` -> ``(a AND b)``; one part is parenthesised too."""
        ...

    def any_of(self, parts: Sequence[str]) -> str:
        """``[a, b]`` -> ``(a OR b)``."""
        ...

    def negate(self, cond: str) -> str:
        """Two-valued NOT, NULL reading as false: ``x`` -> ``(NOT coalesce(x, 0))``."""
        ...

    def nonzero(self, value: str) -> str:
        """A number's effective boolean value: ``v`` -> ``v <> 0``."""
        ...

    def nonempty(self, value: str) -> str:
        """A string's effective boolean value: ``v`` -> ``v <> ''``."""
        ...

    def truthiness(self, type_expr: str, number: str, string: str) -> str:
        """A member's effective boolean value from its type and value:
        ``t, n, s`` -> ``(CASE t WHEN 'true' THEN 1 WHEN 'integer' THEN n <> 0 ... ELSE 0 END)``."""
        ...

    def ends_with(self, value: str, suffix: str) -> str:
        """``v``, ``?`` -> ``substr(v, -length(?)) = ?``."""
        ...

    def contains(self, value: str, infix: str) -> str:
        """``v``, ``?`` -> ``instr(v, ?) > 0``."""
        ...

    def in_list(self, value: str, items: str, family: str) -> str:
        """``value`` equals one of the ``family`` (``string``, ``number``, or ``integer`` for a list
        of the store's own integer keys) items of the JSON list bound at ``items``: ``v``, ``?`` ->
        ``v IN (SELECT value FROM json_each(?) WHERE ...)``."""
        ...

    def call(self, function: str, argument: str) -> str:
        """A registered function of one argument, checked: ``f``, ``doc`` -> ``f(doc)``."""
        ...

    # -- computed values (conditions over numbers computed from members) ---------------------------
    def arith(self, fn: str, left: str, right: str) -> str:
        """``add``/``sub``/``mul`` of two numbers (NULL when either is): ``sub``, ``a``, ``b`` -> ``(a - b)``."""
        ...

    def operand(self, member: str, steps: Sequence[str | int], column: str | None) -> str:
        """A number-typed member as an arithmetic operand, its value as the engine reads it (NULL when
        missing): SQLite's ``json_extract`` (a ``2.0`` stays a REAL), PostgreSQL's ``numeric``."""
        ...

    def inexact_operand(self, member: str, value: str) -> str:
        """The :meth:`operand` ``value`` of ``member`` may not be the engine's number: an integer beyond
        64 bits SQLite read as a rounded real; on PostgreSQL a magnitude of 2^53 or more (a float
        written in an integer member, which ``numeric`` reads as its decimal)."""
        ...

    def text_length(self, value: str) -> str:
        """A string's length in code points, 0 when NULL (missing): ``v`` -> ``coalesce(length(v), 0)``."""
        ...

    def unless(self, doubt: str, cond: str) -> str:
        """``cond``, checked on every row: where ``doubt`` holds, the statement fails with the
        database's integer overflow (the ``overflow`` condition), and the run falls back to the engine."""
        ...

    def matches(self, value: str, pattern: str, full: bool) -> str:
        """A string matches a bound pattern, a missing member (NULL) read as the empty string: the
        engine's I-Regexp matcher registered on the connection (:func:`~jarenlab.query.planner.run.register_functions`,
        :attr:`regexes` ``engine``): ``v``, ``?``, True -> ``jl_match(v, ?)``; or the database's own
        regular expression, bound as the I-Regexp's exact form (``are``): ``coalesce(v, '') ~ %s``."""
        ...

    def some_item(self, member: str, alias: str, cond: str, containers: bool) -> str:
        """Some item of the member at ``member`` (an array's elements, an object's member values,
        none for anything else or a missing member; ``containers``: the schema says only arrays are
        stored there) makes ``cond`` true, ``cond`` reading the item through :meth:`item`'s
        spelling of ``alias``: ``EXISTS (SELECT 1 FROM json_each(doc, ?) AS jl_i0 WHERE ...)``."""
        ...

    def item(self, alias: str) -> Dialect:
        """This dialect reading one item of :meth:`some_item` (named ``alias``) where it reads the
        document: its members, its JSON type and value (the item itself is the path ``()``)."""
        ...

    # -- statements ---------------------------------------------------------------------------------
    def select(self, columns: Sequence[str], table: str) -> str:
        """``["key", "doc"]``, ``t`` -> ``SELECT key, doc FROM "t"``."""
        ...

    def where(self, cond: str) -> str:
        """``x`` -> `` WHERE x``."""
        ...

    def group_by_leading(self, n: int) -> str:
        """Group by the first ``n`` selected columns: ``2`` -> `` GROUP BY 1, 2``."""
        ...

    def column_at(self, position: int) -> str:
        """A selected column by position (from 1), for ``ORDER BY``: ``1``."""
        ...

    def float_sum(self, type_expr: str, value: str) -> str:
        """The engine's ``$sum`` of a number member over a group (a registered aggregate fed the
        member's JSON type and value): ``jl_fsum(json_type(...), json_extract(...))``."""
        ...

    def or_zero(self, expr: str) -> str:
        """``expr``, or 0 where it is NULL (an empty sum): ``coalesce(expr, 0)``."""
        ...

    def ratio(self, a: str, b: str) -> str:
        """``a / b`` as a float division (correctly rounded from exact operands; NULL when ``b`` is 0
        or ``a`` NULL): ``s``, ``c`` -> ``CAST(s AS REAL) / c``."""
        ...

    # -- date-times (canonical UTC strings ``YYYY-MM-DDTHH:MM:SSZ``) -------------------------------
    def date_valid(self, value: str) -> str:
        """The string ``value`` is a real instant written ``YYYY-MM-DDTHH:MM:SSZ`` (never raises)."""
        ...

    def date_part(self, value: str, part: str) -> str:
        """One field (``jarenlab.query.lang.dates.PARTS``) of a valid canonical date-time, an integer."""
        ...

    def date_trunc(self, value: str, unit: str) -> str:
        """The canonical date-time of the start of ``unit`` (weeks start on Monday)."""
        ...

    def time_bucket(self, value: str, width: str, origin: str) -> str:
        """The canonical start of the fixed bucket (bound ``width`` and ``origin`` in whole seconds)."""
        ...

    def epoch_ms(self, value: str) -> str:
        """Milliseconds since 1970-01-01T00:00:00Z of a valid canonical date-time."""
        ...

    def order_term(self, expr: str, desc: bool, empty_first: bool) -> str:
        """One ordering key, NULLs first or last: ``v``, desc, first -> ``v DESC NULLS FIRST``."""
        ...

    def row(self, parts: Sequence[str]) -> str:
        """A row value, compared member by member: ``[a, key]`` -> ``(a, key)``."""
        ...

    def order_by(self, terms: Sequence[str]) -> str:
        """``[a, rowid]`` -> `` ORDER BY a, rowid``."""
        ...

    def beside(self, first: str, rows: str) -> str:
        """One statement reading the one row of ``first`` beside each row of ``rows`` (ordered by
        its first column; one row of NULLs beside it when it has none), in one snapshot."""
        ...

    def window(self, limit: int | None, offset: int, literal: Callable[[Any], str]) -> str:
        """Skip ``offset`` rows, keep ``limit`` (None: all), binding values with ``literal``:
        ``50, 0`` -> `` LIMIT ?``; ``None, 5`` -> `` LIMIT ? OFFSET ?`` (SQLite binds -1)."""
        ...

    def count_rows(self) -> str:
        """``count(*)``."""
        ...

    def aggregate(self, fn: str, expr: str) -> str:
        """``count sum min max`` over non-NULL values: ``sum``, ``v`` -> ``sum(v)``."""
        ...

    def count_distinct(self, expr: str) -> str:
        """The number of distinct non-NULL values: ``gx_a`` -> ``count(DISTINCT gx_a)``."""
        ...

    def any_row(self, cond: str) -> str:
        """Whether a condition holds for some row: ``c`` -> ``max(c)``."""
        ...

    def regroup(self, fn: str, partial: str) -> str:
        """``fn`` (``count sum min max``) over a column of per-group results of ``fn`` (the outer
        level of a two-level group-by): ``count``, ``g.c`` -> ``sum(g.c)``, an integer."""
        ...

    # -- several collections in one statement (joins, graph loads) ---------------------------------
    def aliased(self, expr: str, name: str) -> str:
        """A selected value under a checked name: ``gx_a``, ``j0`` -> ``gx_a AS j0``."""
        ...

    def derived(self, select: str, alias: str) -> str:
        """A statement read as a table: ``SELECT ...``, ``t0`` -> ``(SELECT ...) AS t0``."""
        ...

    def qualified(self, alias: str, name: str) -> str:
        """A column of an aliased table: ``t0``, ``d`` -> ``t0.d``."""
        ...

    def select_from(self, columns: Sequence[str], sources: Sequence[str]) -> str:
        """``SELECT`` columns of several sources: ``SELECT t0.d, t1.d FROM (...) AS t0, (...) AS t1``."""
        ...

    def scalar(self, select: str) -> str:
        """A statement giving one value, used as a value: ``(SELECT ...)``."""
        ...

    def json_text(self, value: str) -> str:
        """A stored document or a subquery's JSON as text: SQLite itself; PostgreSQL ``t.d::text``
        (``json`` keeps the text exactly as written)."""
        ...

    def json_document(self, value: str) -> str:
        """A stored document or a subquery's JSON (NULL when it found no row) as JSON text inside JSON
        built in SQL, its text kept exactly: ``coalesce(t.d, 'null')``."""
        ...

    def json_members(self, document: str, members: Sequence[tuple[str, str]]) -> str:
        """A stored document's JSON object text with members ((name, JSON text) pairs) appended after
        its own (a repeated name reads as the appended value in its first place)."""
        ...

    def json_array(self, rows: str) -> str:
        """The JSON array text (``[]`` for none) of the JSON texts a statement's one column ``x``
        gives, in the order its rows arrive: SQLite ``group_concat`` over it, PostgreSQL
        ``array_to_string(ARRAY(rows), ',')`` (no aggregate, so no sort of its own)."""
        ...

    def ranking(self, fn: str, partition: Sequence[str], order: Sequence[str]) -> str:
        """A row's ``row-number``/``rank``/``dense-rank`` within its partition in an ordering:
        ``rank() OVER (PARTITION BY c ORDER BY a DESC, k)``."""
        ...

    def offset_value(
        self, fn: str, args: Sequence[str], partition: Sequence[str], order: Sequence[str]
    ) -> str:
        """``lag``/``lead`` of ``args`` (value, offset rows, default or NULL beyond the ends) in the
        partition's order: ``lag(v, ?, ?) OVER (PARTITION BY c ORDER BY a, k)``."""
        ...

    def framed(
        self,
        aggregate: str,
        partition: Sequence[str],
        order: Sequence[str],
        start: int | None,
        end: int | None,
        literal: Callable[[Any], str],
    ) -> str:
        """An aggregate over the rows ``start`` to ``end`` from the current one in the partition's
        order (None: unbounded), bounds bound with ``literal``:
        ``sum(v) OVER (PARTITION BY c ORDER BY a, k ROWS BETWEEN ? PRECEDING AND CURRENT ROW)``."""
        ...

    def ranged(self, aggregate: str, window: str) -> str:
        """An aggregate over a named window (see :meth:`range_window`): ``sum(v) OVER w``."""
        ...

    def range_window(
        self, name: str, partition: Sequence[str], order: str, span: int, literal: Callable[[Any], str]
    ) -> str:
        """A named window clause of the rows whose integer ``order`` value is at most ``span`` below
        the current row's and not above it, the span bound with ``literal``: `` WINDOW w AS
        (PARTITION BY c ORDER BY t RANGE BETWEEN CAST(? AS BIGINT) PRECEDING AND CURRENT ROW)``."""
        ...

    def only_where(self, cond: str, expr: str) -> str:
        """``expr`` where ``cond`` holds, else NULL: ``CASE WHEN cond THEN expr END``."""
        ...

    def having(self, cond: str) -> str:
        """A filter over a group-by's groups: `` HAVING cond``."""
        ...

    def over_all(self, aggregate: str) -> str:
        """An aggregate over every row of the statement, on each row: ``max(c) OVER ()``."""
        ...

    # -- the database's own plan --------------------------------------------------------------------
    def plan_tree(self, rows: Sequence[Sequence[Any]]) -> list[dict[str, Any]]:
        """:meth:`Backend.explain` rows as ``[{id, parent, depth, detail}]`` (SQLite's ``EXPLAIN
        QUERY PLAN`` rows; PostgreSQL's ``EXPLAIN (FORMAT JSON)`` nodes)."""
        ...

    def full_scans(self, rows: Sequence[Sequence[Any]], table: str) -> list[str]:
        """The :meth:`Backend.explain` rows that read ``table`` whole (SQLite: ``SCAN t``;
        PostgreSQL: a ``Seq Scan`` on ``t``)."""
        ...


class Backend(Protocol):
    """One database engine behind a store. ``jarenlab.backends.open_backend`` picks one for a target.

    Connections are the backend's driver connections, opaque to everything but the backend and
    :class:`~jarenlab.database.Database`. Every method that touches the database raises coded
    :class:`~jarenlab.errors.JarenlabError` s (never a driver error) through :meth:`translating`.
    """

    #: The name of its entry in the registry (:data:`jarenlab.backends.REGISTERED`): ``"sqlite"``,
    #: ``"postgresql"``.
    name: str
    #: Where the store lives, as shown to users (a file path, a URL without its password).
    target: str
    #: True when the engine allows one writer at a time: the store then queues its own threads'
    #: transactions behind a gate (JD0012 after ``queue_timeout``) instead of failing them.
    needs_write_gate: bool
    #: ``True`` when the store is read-only.
    read_only: bool
    #: True when a failed statement undoes only itself and the transaction goes on (SQLite); False
    #: when it aborts the whole transaction (PostgreSQL: writes that may fail run in a savepoint).
    statement_atomic: bool
    #: True when one statement can write a document's changed members alone (the collection
    #: catalogue's ``merge``: SQLite applies an RFC 7386 merge patch to the stored text); False when
    #: a changed document is written whole (PostgreSQL keeps the exact text the store wrote, which a
    #: jsonb patch would reorder).
    merges_members: bool
    #: True when a connection can be lost while the store is open (a server restarted, a session
    #: ended, a network dropped): the store then asks :meth:`lost` before using an idle connection
    #: and replaces a lost one (SQLite's file connections are never lost: False).
    reconnects: bool

    @property
    def driver_error(self) -> type[Exception]:
        """The driver's base error class: what :meth:`translate` turns into coded errors."""
        ...

    @property
    def dialect(self) -> Dialect:
        """The planner's SQL spelling on this engine."""
        ...

    def catalogue(self, subsystem: str) -> Catalogue:
        """The named statements of ``subsystem`` (``"collection"``, ``"jobs"``, ...)."""
        ...

    def quote(self, name: str) -> str:
        """An identifier for SQL text, after checking it (JD2010 for anything but a plain name)."""
        ...

    def marks(self, count: int) -> str:
        """``count`` placeholders separated by commas, in the driver's style."""
        ...

    # -- connections and transactions ---------------------------------------------------------------
    def connect(self, *, reader: bool = False) -> Any:
        """A new connection with the store's settings, in autocommit mode (transactions are explicit).

        ``reader=True``: a connection only ever used for read snapshots.
        """
        ...

    def disconnect(self, conn: Any) -> None:
        """Close a connection; never raises."""
        ...

    def lost(self, conn: Any) -> bool:
        """True when ``conn`` can no longer be used (closed by a failure, or the server ended its
        session while it sat idle); cheap enough to ask before every statement, and it sends
        nothing to the server. Only asked when :attr:`reconnects`."""
        ...

    def begin(self, conn: Any) -> None:
        """Start a write transaction (SQLite takes the write lock at once: ``BEGIN IMMEDIATE``)."""
        ...

    def commit(self, conn: Any) -> None:
        """Commit the open transaction."""
        ...

    def rollback(self, conn: Any) -> None:
        """Roll back the open transaction, if one is open; never raises."""
        ...

    def savepoint(self, conn: Any, name: str) -> None:
        """Open a savepoint inside the transaction."""
        ...

    def release(self, conn: Any, name: str) -> None:
        """Release (keep) a savepoint."""
        ...

    def rollback_to(self, conn: Any, name: str) -> None:
        """Undo everything since the savepoint and release it."""
        ...

    def in_transaction(self, conn: Any) -> bool:
        """True while the connection has a transaction open."""
        ...

    def snapshot(self, conn: Any) -> AbstractContextManager[None]:
        """A read transaction: every statement inside sees one committed state."""
        ...

    # -- statements ---------------------------------------------------------------------------------
    def execute(self, conn: Any, sql: str, params: Sequence[Any] = ()) -> Cursor:
        """Run one statement with bound parameters (placeholders from :meth:`marks`)."""
        ...

    def executemany(self, conn: Any, sql: str, rows: Sequence[Sequence[Any]]) -> Cursor:
        """Run one statement once per row of parameters (a bulk insert)."""
        ...

    def stream(self, conn: Any, sql: str, params: Sequence[Any], size: int) -> Iterator[list[Row]]:
        """The rows of one statement, ``size`` at a time, the rest not yet read into this process
        (SQLite steps the statement as rows are asked for; a server keeps them in a cursor of its own)."""
        ...

    def translating(self, **fields: Any) -> AbstractContextManager[None]:
        """The one error boundary: driver errors raised inside become coded errors, the driver error
        as ``__cause__``; ``fields`` (``collection``, ``key``) are set on the error."""
        ...

    def translate(self, exc: BaseException, **fields: Any) -> JarenlabError | None:
        """The coded error for a driver error (None when ``exc`` is not the driver's)."""
        ...

    # -- the model and the shape --------------------------------------------------------------------
    def probe(self, conn: Any) -> dict[str, Any]:
        """What the engine offers (version, JSON support, ...); JD0001 when it lacks what the store needs."""
        ...

    def settings(self, conn: Any) -> dict[str, Any]:
        """How this store is set up now (journal mode, timeouts), merged into ``store.capabilities``."""
        ...

    def describe(self, capabilities: Mapping[str, Any]) -> str:
        """One line naming the engine and what it offers, for the store's HTML repr."""
        ...

    def model_ddl(self, model: Model) -> list[str]:
        """Every statement that creates a fresh store's model tables and indexes."""
        ...

    def internal_ddl(self, subsystems: Sequence[str]) -> list[str]:
        """The statements (``CREATE ... IF NOT EXISTS``) that create the named subsystems' tables."""
        ...

    def internal_upgrades(self, conn: Any, subsystems: Sequence[str]) -> list[str]:
        """The statements that bring the named subsystems' tables, made by an earlier version, up
        to what :meth:`internal_ddl` makes (:func:`upgrades`); empty for a store of this version."""
        ...

    def shape(self, conn: Any) -> dict[str, str]:
        """The database's physical shape: ``{table or index name: its definition}``."""
        ...

    def create(self, conn: Any, model: Model) -> None:
        """Inside the creating transaction: make the store's own table (the ``store`` catalogue's
        ``create_*``) and the model's tables and indexes, and record what :meth:`verify` needs."""
        ...

    def verify(self, conn: Any, model: Model) -> str | None:
        """The first way the database's tables and indexes differ from what :meth:`create` made for
        ``model`` (missing, changed or undeclared, named); None when they agree."""
        ...

    def alter(self, old: CollectionSpec | None, new: CollectionSpec | None) -> Alteration:
        """The :class:`Alteration` that turns collection ``old`` into ``new`` (None: created or
        dropped); ``old.name != new.name`` renames it. Indexes, typed columns and interval
        declarations that are the same on both sides are kept as they are."""
        ...

    def prepare(self, conn: Any, model: Model) -> None:
        """Inside a migration's transaction, before its statements: make what ``model`` needs
        beyond its tables (PostgreSQL: the ``btree_gist`` extension of interval constraints)."""
        ...

    def record_shape(self, conn: Any, model: Model) -> str | None:
        """Inside a migration's transaction, after its statements: record what :meth:`verify`
        compares from now on (PostgreSQL: the catalogue's rendering; SQLite keeps its SQL text),
        and return the first way the database's shape differs from ``model`` where that can be
        checked independently (SQLite: its SQL text against the model's DDL), else None."""
        ...

    def storage_order(self, key_type: type) -> StorageOrder:
        """The :data:`StorageOrder` of a collection whose keys are ``key_type`` (``int`` or ``str``):
        the order a scan returns and a query without ``$orderby`` follows."""
        ...

    def holds_tables(self, conn: Any) -> list[str]:
        """The names of the tables the database holds (to tell a store from something else)."""
        ...

    # -- statements built from declarations ----------------------------------------------------------
    def json_path(self, segments: tuple[str | int, ...]) -> Any:
        """The bound parameter that addresses a member in statements taking a path (owner views,
        interval owners): SQLite's JSON path text ``$."a"[0]`` for ``("a", 0)``."""
        ...

    def interval_statements(self, table: str, decl: IntervalSpec) -> IntervalStatements:
        """The :class:`IntervalStatements` of one interval declaration of collection ``table``.

        The declaration's partial index is part of :meth:`model_ddl` and of the verified shape.
        """
        ...

    # -- hooks of a shared engine -------------------------------------------------------------------
    def serialize(self, conn: Any, name: str) -> None:
        """Inside a transaction: wait until no other transaction appends to ``name`` (commit-order
        appends). A single-writer engine is serial already."""
        ...

    def notify(self, conn: Any, name: str) -> None:
        """Inside a transaction: wake other processes' watches of ``name`` when it commits (SQLite's
        watches see every commit anyway)."""
        ...

    def watch(self, interval: float, name: str = "live") -> Watch:
        """A :class:`Watch` that wakes when another connection may have committed (to ``name``)."""
        ...

    def clock(self) -> float:
        """The time in epoch seconds, as the database sees it."""
        ...

    def close(self, conn: Any | None) -> str | None:
        """Before the last connections close: leave the database tidy (SQLite checkpoints its WAL).
        ``conn`` is a connection of the store's, or None when none could be opened. Returns what
        could not be done (a sentence), or None."""
        ...

    def discard_if_empty(self) -> None:
        """Remove what opening created when it holds nothing (a mistyped path leaves no stray file)."""
        ...

    def explain(self, conn: Any, sql: str, params: Sequence[Any]) -> list[Row]:
        """The engine's plan of a statement, as rows (SQLite: ``EXPLAIN QUERY PLAN``)."""
        ...

    def register_function(self, conn: Any, name: str, arity: int, fn: Callable[..., Any]) -> None:
        """Make a deterministic host function callable from SQL on ``conn`` (the planner's UDF hatch)."""
        ...

    def register_aggregate(self, conn: Any, name: str, arity: int, factory: Callable[[], Any]) -> None:
        """Make an aggregate (``factory()`` gives an object with ``step(*args)`` and ``finalize()``)
        callable from SQL on ``conn`` (the planner's exact float sum on SQLite)."""
        ...
