"""One error root for everything jarenlab raises, and the table of codes.

Every error carries a ``code`` (``JD....`` for the store, ``JQ....`` for the query
language), a bare ``reason``, and where known a ``doc_path`` (a JSON Pointer into the
model or query document), the ``collection`` and the ``key``. A driver error is kept
as ``__cause__``. ``docs/errors.md`` is generated from :data:`CODES` and a test keeps
the two in sync.

>>> err = QueryError("JQ2002", "integer division by zero", doc_path="/$idiv")
>>> err.code, err.name, str(err)
('JQ2002', 'division_by_zero', 'JQ2002 division_by_zero: integer division by zero (at /$idiv)')
"""

from __future__ import annotations

import html
from typing import Any

#: code -> (name, meaning). The one table; ``docs/errors.md`` mirrors it.
CODES: dict[str, tuple[str, str]] = {
    # -- opening and the model ------------------------------------------------
    "JD0001": (
        "sqlite_too_old",
        "The SQLite library lacks a required feature (JSON1, STRICT tables, generated columns).",
    ),
    "JD0002": (
        "model_mismatch",
        "The model disagrees with the existing database; the first difference is named.",
    ),
    "JD0003": (
        "internal_error",
        "jarenlab broke its own contract (a missing or malformed named statement, or a call that passes a "
        "parameter the statement does not name or leaves one out); please report it.",
    ),
    "JD0004": (
        "index_unmappable",
        "An index path is not a singular JSONPath, or cannot be mapped to a column.",
    ),
    "JD0005": ("invalid_model", "The model document is invalid; `doc_path` points at the offending member."),
    "JD0006": ("invalid_option", "An option passed to `open()` or a call is outside its allowed set."),
    "JD0010": (
        "strict_residual",
        "`strict=True` refused a query that needs a residual; the construct is named.",
    ),
    "JD0011": (
        "profile_refused",
        "The safe profile refused the query document (allow-list, full scan, limit).",
    ),
    "JD0012": ("transaction_timeout", "Waiting for the store's write gate timed out."),
    # -- migrations -----------------------------------------------------------
    "JD0020": (
        "migration_from_mismatch",
        "The stored model is not the one this store opened with (another process migrated it); plan again.",
    ),
    "JD0021": (
        "migration_needs_transform",
        "Stored documents violate the new model and no transform fixes them; `violations` lists them.",
    ),
    "JD0022": (
        "migration_history_mismatch",
        "The model's version is older than the stored one (a downgrade), or the history disagrees with the store.",
    ),
    "JD0023": (
        "migration_step_failed",
        "A migration step failed (a transform raised, its output is invalid, an index or interval check "
        "refused); everything was rolled back.",
    ),
    "JD0024": (
        "migration_document",
        "A transform returned something that is not a storable document, or changed a document's key.",
    ),
    "JD0060": (
        "migration_not_in_place",
        "The change cannot be carried out in place (a collection's key, identity or key type); nothing was altered.",
    ),
    "JD0061": (
        "migration_drop_refused",
        "A collection missing from the new model holds documents; name it in `drop=[...]` to remove it.",
    ),
    "JD0062": (
        "migration_bad_argument",
        "`transforms`, `renames` or `drop` name a collection the migration cannot apply them to.",
    ),
    "JD0052": ("too_many_live_queries", "The store already has `max_queries` live queries."),
    # -- across collections: relations, graph loads, pages ----------------
    "JD0030": (
        "invalid_relation",
        "A relation declaration is malformed (an unknown member, a bad pointer or action).",
    ),
    "JD0031": (
        "contradictory_relations",
        "Two declarations of one relation (a to-one and its inverse to-many) disagree.",
    ),
    "JD0032": (
        "invalid_include",
        "A graph load or page spec is invalid: an unknown relation, a cycle, too deep, an untranslatable clause.",
    ),
    "JD0033": ("no_collection_bound", "A store-level query document binds no collection (`$.name[*]`)."),
    "JD0035": (
        "foreign_continuation",
        "A page continuation belongs to another query or ordering, or was altered.",
    ),
    "JD0040": (
        "cascade_cycle",
        "Cascading deletes declared in a cycle of relations; declare one of them restrict or set_null.",
    ),
    "JD0070": ("relation_unknown_collection", "A relation names a collection the model does not declare."),
    "JD0071": (
        "relation_key_mismatch",
        "A relation's member and the key it references have different schema types.",
    ),
    # -- runtime: store -------------------------------------------------------
    "JD2001": ("duplicate_key", "An insert used a key that is already stored."),
    "JD2002": ("no_key", "The document has no usable key (missing, wrong type, or not allowed)."),
    "JD2003": (
        "schema_invalid",
        "The document failed schema validation; `errors` lists the validator's messages.",
    ),
    "JD2004": ("unknown_collection", "The collection is not declared in the model."),
    "JD2005": (
        "database_error",
        "The database reported a failure. Retryable (`retryable`): SQLite busy or locked; PostgreSQL "
        "lock timeouts, deadlocks and serialization failures (`busy`), and a server that cannot be "
        "reached or ended the session (`connection`: the next call opens a new connection; a "
        "transaction it broke rolled back).",
    ),
    "JD2006": (
        "not_found",
        "No document is stored under the key (patch), or a session replaces or removes a key it does not track.",
    ),
    "JD2007": ("row_bound", "The safe profile's row bound was exceeded; the result is refused whole."),
    "JD2008": (
        "unrepresentable_value",
        "A value JSON or the database cannot hold (NaN, infinity, bytes, a string with a lone surrogate, an "
        "integer in a document below -2^63 or above 2^64 - 1, an integer key beyond the database's -2^63 to "
        "2^63 - 1, a document nested too deeply) was written or passed as a key or parameter.",
    ),
    "JD2009": (
        "invalid_patch",
        "A JSON Patch (RFC 6902) or merge patch (RFC 7386) is malformed or cannot apply.",
    ),
    "JD2010": ("invalid_argument", "An argument to a store call has the wrong type or value."),
    "JD2040": (
        "version_conflict",
        "A session's save found a versioned document changed or deleted since it was read (its version "
        "moved); the collection and key are named, the whole save rolled back and the session can retry.",
    ),
    "JD2041": (
        "save_cycle",
        "A session's save inserts or deletes documents of collections whose declared relations form a "
        "cycle, so no parent-first order exists; the cycle is named. Save the two sides separately.",
    ),
    "JD2042": (
        "snapshot_frozen",
        "A document read through a session is an immutable snapshot; build a replacement "
        "(`{**doc, ...}`) and `put` it.",
    ),
    "JD2115": (
        "delete_restricted",
        "A delete was refused: documents of another collection still reference the key (on_delete restrict).",
    ),
    "JD2190": (
        "link_missing_document",
        "A many-to-many link names a document that does not exist; nothing was written.",
    ),
    "JD2191": (
        "delete_linked",
        "A delete was refused: join documents of a many-to-many relation still link the key "
        "(on_delete restrict).",
    ),
    "JD2192": (
        "link_conflict",
        "The pair is already linked with other join members, or the members name the link's own keys.",
    ),
    "JD2193": ("not_many_to_many", "The collection declares no many-to-many relation of that name."),
    "JD2060": ("live_bound", "A live query exceeded its maintained-rows bound and was closed."),
    "JD2062": (
        "closed_with_handlers_in_flight",
        "The store closed while job handlers were still running after the grace period.",
    ),
    "JD2063": ("store_closed", "The store is closed; open it again to use it."),
    "JD2065": (
        "job_not_leased",
        "The job is not leased (already settled or cancelled); nothing was changed.",
    ),
    "JD2066": (
        "lease_superseded",
        "The lease's fencing token is not the job's current one; nothing was changed.",
    ),
    "JD2067": ("lease_lost", "The job's lease expired; nothing was changed."),
    "JD2069": ("dag_changed", "A DAG job was resumed under a changed graph; the change is named."),
    "JD2080": (
        "event_invalid",
        "An event type is undeclared, its payload is invalid, or a dedupe key is reused across types.",
    ),
    "JD2081": (
        "cursor_expired",
        "The event cursor lies before the expired-history boundary, is ahead of the ledger, or is malformed.",
    ),
    "JD2082": (
        "outcome_invalid",
        "An event handler returned an outcome that is not JSON, or two handlers of one event returned outcomes.",
    ),
    "JD2090": (
        "interval_conflict",
        "The write would overlap another record's interval; nothing was written.",
    ),
    "JD2091": (
        "invalid_interval",
        "An interval's bounds are missing, of mixed kinds, not UTC `Z` times, or not start < end.",
    ),
    "JD2092": ("idempotency_key_reused", "The idempotency key was used before with a different fingerprint."),
    "JD2093": (
        "idempotent_result_invalid",
        "A retry-safe transaction's result is not exact JSON or is over 16 KiB.",
    ),
    "JD2094": ("owner_forbidden", "The owner view cannot read or write this record."),
    "JD2110": (
        "model_changed",
        "Another process migrated the store; this write was rolled back and the store now uses the new "
        "model: run it again.",
    ),
    "JD2111": (
        "live_migrated",
        "A migration renamed or dropped the live query's collection, or its query fails against the new model.",
    ),
    "JD2112": (
        "migration_refused_here",
        "A migration runs as its own transaction on a writable store: not inside `store.transaction()`.",
    ),
    "JD2120": (
        "checkpoint_busy",
        "Closing could not fold the WAL into the database file (another connection kept it busy); "
        "nothing is lost, a later checkpoint finishes it.",
    ),
    "JD2121": (
        "worker_failed",
        "A job worker's loop failed to claim or settle (a storage failure); the original error is the cause.",
    ),
    "JD2122": (
        "outcome_rejected",
        "An event's outcome does not match its declaration: missing or refused by the declared outcome "
        "schema (carries `errors`), or returned for an event that declares none.",
    ),
    "JD2210": (
        "module_invalid",
        "A handler module, its installation or a materialization is malformed: a bad name or version, a "
        "module given twice, a collection the model does not declare or that two materializations "
        "maintain, another module's event handled before that module is installed, an install inside "
        "`store.transaction()`.",
    ),
    "JD2211": (
        "module_missing",
        "The store records a handler module that this install leaves out (the module is named); "
        "retire it on purpose with `retire=[name]`.",
    ),
    "JD2212": (
        "module_reordered",
        "Handler modules are installed in another order than the store records (the module out of place "
        "is named); new modules go after the recorded ones.",
    ),
    "JD2213": (
        "materialization_version_lowered",
        "A materialization is declared at a lower version than the store records (a newer program "
        "rebuilt it).",
    ),
    "JD2214": (
        "modules_not_installed",
        "An emit through a store object that has not installed the handler modules the store records "
        "(or installed them before another process changed them): call `store.events.install(...)`.",
    ),
    "JD2215": (
        "replay_emit",
        "A materialization's handler emitted an event while its events were replayed; a rebuild "
        "records no new facts.",
    ),
    "JD2216": (
        "signal_outside_job",
        "A signal was sent outside a running queue handler; only `ctx.signal` (or `store.events.signal` "
        "called from a job handler) sends one.",
    ),
    "JD2217": (
        "signal_invalid",
        "A signal handler is not a function, or signal work was enqueued with an option it does not "
        "take (`id` is minted, work is never coalesced).",
    ),
    "JD2125": (
        "job_invalid",
        "A job could not be enqueued (unknown kind, bad id, coalescing payload mismatch, ...).",
    ),
    "JD2126": ("unknown_job", "No job is stored under the id."),
    "JD2127": ("live_closed", "The live query is closed."),
    "JD2128": (
        "reset_required",
        "The change log no longer holds what the cursor asks for (pruned by retention, or kept only in "
        "compact form: a bulk write, a migration, or records of an earlier version); re-seed from a snapshot and "
        "follow on from the high watermark.",
    ),
    "JD2129": (
        "change_cursor_invalid",
        "A change-feed cursor is malformed, of another store, or ahead of the log.",
    ),
    "JD2135": (
        "mixed_column",
        "A DataFrame or Arrow column mixes kinds of values that cannot be stored faithfully; the column is named.",
    ),
    "JD2160": (
        "columns_budget",
        "The columns a query needs do not fit the store's `columns=` budget (the message says what they need), or the columnar path is off.",
    ),
    "JD2161": (
        "untyped_column",
        "A member asked for as a column is not schema-typed as one string, integer or number.",
    ),
    "JD2162": (
        "columns_folder",
        "Columns cannot be saved or read there: a store without a database file saves them in a folder given to `store.columns.save(folder)`, or the folder cannot be written.",
    ),
    "JD2170": (
        "job_priority_invalid",
        "A job priority is not an integer in [-2147483648, 2147483647] (higher runs first; default 0).",
    ),
    "JD2171": (
        "job_limit_invalid",
        'A job kind\'s limit is malformed: `rate` is `"N/s"`, `"N/min"`, `"N/h"` (or `"N/5s"`, a count per a '
        "number of seconds, minutes or hours) with N a positive integer, and `max_running` a positive integer.",
    ),
    "JD2180": (
        "cron_invalid",
        "A cron expression is malformed (five fields: minute hour day-of-month month day-of-week), out of range, "
        "never matches, or names an unknown time zone.",
    ),
    "JD2181": (
        "schedule_invalid",
        "A periodic job's declaration is refused: a bad name, kind, payload, `missed` policy or `grace`, or the name "
        "declared again differently in this process.",
    ),
    "JD2182": ("unknown_schedule", "No periodic job is declared or stored under the name."),
    "JD2183": (
        "batch_invalid",
        "A fan-out is refused: payloads not a list of JSON values, a bad combiner kind or batch id, or a batch id "
        "already taken by another batch.",
    ),
    "JD2184": ("unknown_batch", "No fan-out batch is stored under the id."),
    "JD2130": (
        "widgets_missing",
        "Live tables and the jobs dashboard need `anywidget`: `pip install 'jarenlab[widgets]'`.",
    ),
    "JD2200": (
        "key_shape",
        "A composite key was passed in another shape: a tuple of its members in order, or a dict naming each member.",
    ),
    "JD2201": (
        "key_member",
        "A composite key's member is missing, of the wrong type, or cannot be stored (U+0000, beyond 64 bits).",
    ),
    "JD2202": (
        "through_shared_member",
        "A many-to-many relation's `through.from` and `through.to` name one member of the join collection: "
        "each member of each end's key needs a member of its own.",
    ),
    "JD2203": (
        "bad_composite_key",
        "A composite key declaration is not a list of two or more distinct key pointers.",
    ),
    "JD2204": (
        "composite_via",
        "A relation's `via` does not match its target's key: a list of one pointer per member of a composite "
        "key, in the key's order, or one pointer for a single key.",
    ),
    # -- query language: compile time ----------------------------------------
    "JQ0001": (
        "malformed_phrase",
        "An object mixes `$` operator keys with plain keys, or a phrase is malformed.",
    ),
    "JQ0002": (
        "unknown_operator",
        "The `$` operator is not in the vocabulary and not a registered host operator.",
    ),
    "JQ0003": ("bad_arity", "An operator got the wrong number or shape of operands."),
    "JQ0004": ("bad_path", "A path or variable reference cannot be parsed."),
    "JQ0005": ("undeclared_external", "A free variable is not among the allowed externals."),
    "JQ0006": ("bad_flwor", "A FLWOR clause is malformed (missing `$return`, bad binding, ...)."),
    "JQ0007": ("bad_orderby", "An `$orderby` spec is malformed."),
    "JQ0008": ("unsupported", "The construct is known but not supported here."),
    "JQ0009": ("bad_regex", "A regular expression is outside the supported I-Regexp subset."),
    "JQ0010": ("bad_literal", "A literal is not a JSON value (NaN, infinity, bytes, ...)."),
    "JQ0011": ("too_deep", "The document exceeds the depth limit."),
    "JQ0020": (
        "bad_unit",
        "A literal date unit, date part or window function is not one the operator takes.",
    ),
    "JQ0021": ("bad_window", "A `$window`, `$rolling`, `$resample` or `$asof` spec is malformed."),
    "JQ0022": (
        "bad_width",
        "A `$rolling` or `$resample` width is not a positive ISO 8601 duration literal (`$resample`: no years or months).",
    ),
    "JQ0023": (
        "unknown_fill",
        'A `$resample` `$fill` is not `"drop"`, `"previous"` or a constant `{"$value": ...}`.',
    ),
    "JQ0030": (
        "impossible_path",
        "The query reads a member the collection's schema cannot hold (closed properties, or under a scalar).",
    ),
    "JQ0031": (
        "never_true",
        'A comparison can never be true against the member\'s declared type (`close > "100"`, `x == None`).',
    ),
    "JQ0033": (
        "not_a_query",
        "`execute()` got a bare string or number (a literal that reads no data), SQL text for instance.",
    ),
    "JQ0034": (
        "builder_habit",
        "A pandas or builder method name used where the builder has no such method; the reason says what to write.",
    ),
    "JQ0036": (
        "undeclared_member",
        "Warning: the query reads a member the schema does not declare (did you mean ...?).",
    ),
    "JQ0037": (
        "likely_mistake",
        "Warning: a regular expression anchor (`^`, `$` are ordinary characters) or an always-true `!=`.",
    ),
    "JQ0038": (
        "zone_unknown",
        "A date-time without a zone compared with a `format: date-time` member (which holds zoned date-times), or one external compared with both a date and a date-time member.",
    ),
    # -- query language: run time --------------------------------------------
    "JQ2001": ("cardinality", "An expression produced more items than its position allows."),
    "JQ2002": ("division_by_zero", "Integer division or modulo by zero."),
    "JQ2003": ("ebv", "The effective boolean value of two or more items is undefined."),
    "JQ2004": ("type_error", "An operand has a type the operator cannot take."),
    "JQ2005": ("incomparable", "Ordering keys are not both numbers or both strings."),
    "JQ2006": ("unbound_external", "An external variable has no value at run time."),
    "JQ2007": ("bad_cast", "A value cannot be cast to the requested type."),
    "JQ2008": ("host_failed", "A host operator raised; the original error is the cause."),
    "JQ2009": ("limit_exceeded", "An engine limit (items, steps, result size) was exceeded."),
    "JQ2010": ("bad_argument", "An argument value is out of range for the function."),
    "JQ2011": ("bad_external", "An external value is not a JSON value."),
    "JQ2020": (
        "bad_date",
        "A string is not an RFC 3339 date-time or a `YYYY-MM-DD` date (or names no calendar instant).",
    ),
    "JQ2021": ("bad_duration", "A string is not an ISO 8601 duration the operator takes."),
    "JQ2022": ("bad_unit_value", "A date unit or part computed at run time is not one the operator takes."),
    "JQ2023": (
        "stream_fallback",
        "A streamed result met a value only the engine reads exactly after batches were handed on.",
    ),
    "JQ2024": (
        "too_many_intervals",
        "A filled `$resample` would produce more than 1,000,000 intervals; nothing is built.",
    ),
}


class JarenlabError(Exception):
    """The root of every error jarenlab raises.

    Attributes: ``code`` (see :data:`CODES`), ``name`` (its short slug), ``reason``,
    ``doc_path``, ``collection``, ``key``, ``errors`` (validator messages, where any),
    ``retryable`` (true for busy/locked database errors), ``position`` (the index of the
    offending document in a batch), ``condition`` (for a database error, what the database
    reported as one word: ``busy``, ``read_only``, ``duplicate``, ``overflow``,
    ``function_failed``, ``other``; code branches on it, never on message text).
    """

    def __init__(
        self,
        code: str,
        reason: str,
        *,
        doc_path: str | None = None,
        collection: str | None = None,
        key: Any = None,
        errors: list[str] | None = None,
        retryable: bool = False,
        position: int | None = None,
        condition: str | None = None,
    ) -> None:
        if code not in CODES:
            raise ValueError(f"unknown error code {code!r}")
        self.code = code
        self.name = CODES[code][0]
        self.reason = reason
        self.doc_path = doc_path
        self.collection = collection
        self.key = key
        self.errors = list(errors or [])
        self.retryable = retryable
        self.position = position
        self.condition = condition
        super().__init__(self.message)

    @property
    def message(self) -> str:
        """The composed text: code, name, reason, then the collection, key and doc_path where known."""
        where = []
        if self.collection is not None:
            where.append(f"collection {self.collection!r}")
        if self.key is not None:
            where.append(f"key {self.key!r}")
        if self.doc_path is not None:
            where.append(f"at {self.doc_path}")
        tail = f" ({', '.join(where)})" if where else ""
        return f"{self.code} {self.name}: {self.reason}{tail}"

    def __reduce__(self) -> tuple[Any, ...]:
        # Errors cross process boundaries (workers); keep every field.
        return (_rebuild, (type(self), self.code, self.reason, self.__dict__.copy()))

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><th style='text-align:left'>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>"
            for k, v in (
                ("code", self.code),
                ("reason", self.reason),
                ("doc_path", self.doc_path),
                ("collection", self.collection),
                ("key", self.key),
            )
            if v is not None
        )
        errs = "".join(f"<li>{html.escape(e)}</li>" for e in self.errors)
        return (
            f"<div style='border-left:4px solid #c0392b;padding:4px 8px'>"
            f"<b>{html.escape(type(self).__name__)}</b> <code>{html.escape(self.name)}</code>"
            f"<table>{rows}</table>{f'<ul>{errs}</ul>' if errs else ''}</div>"
        )


def _rebuild(cls: type[JarenlabError], code: str, reason: str, state: dict[str, Any]) -> JarenlabError:
    err = cls.__new__(cls)
    Exception.__init__(err, f"{code}: {reason}")
    err.__dict__.update(state)
    return err


class QueryWarning(UserWarning):
    """A finding about a query that does not stop it (``JQ0036``, ``JQ0037``); the store's
    ``checks="strict"`` raises it as a :class:`QueryError` instead.

    Attributes: ``code``, ``name``, ``reason``, ``doc_path``.
    """

    def __init__(self, code: str, reason: str, *, doc_path: str | None = None) -> None:
        self.code = code
        self.name = CODES[code][0]
        self.reason = reason
        self.doc_path = doc_path
        super().__init__(f"{code} {self.name}: {reason}" + (f" (at {doc_path})" if doc_path else ""))


class ModelError(JarenlabError):
    """The model document is invalid, or disagrees with the database."""


class StoreError(JarenlabError):
    """A store operation failed (keys, closed store, database failures)."""


class ValidationError(StoreError):
    """A document failed schema validation or holds a value JSON cannot represent."""


class MigrationError(StoreError):
    """A migration was refused or failed; nothing was altered. ``violations`` (a DataFrame, where
    documents were refused) lists collection, key, pointer and message."""

    violations: Any = None


class QueryError(JarenlabError):
    """A query document failed to compile or to run."""


class PlanError(JarenlabError):
    """The planner or the safe profile refused a query."""


class LiveError(JarenlabError):
    """A live query failed or exceeded its bounds."""


class JobError(JarenlabError):
    """A job queue operation was refused (fencing, unknown job, bad enqueue)."""


class EventError(JarenlabError):
    """An event could not be emitted or a cursor could not be resumed."""


class IntervalConflict(StoreError):
    """A write would make two constrained intervals overlap.

    ``conflict`` (``{"key": other, "declaration": n}``) and ``conflict_owner`` name the record it
    overlaps; both exist on every such error, None where the record is not known (it changed before
    it could be named) or must not be revealed (another owner's, through an owner view).
    """

    conflict: dict[str, Any] | None = None
    conflict_owner: Any = None


class IdempotencyError(StoreError):
    """A retry-safe transaction's key or result was refused."""


def unreachable(err: BaseException) -> bool:
    """True for the error of a database that cannot be reached right now: JD2005 with
    ``retryable`` and ``condition="connection"`` (a PostgreSQL server restarting or gone, a session
    it ended, a dropped network). Nothing is wrong with the request: wait, then call again (the
    store opens a new connection).

    >>> unreachable(StoreError("JD2005", "server closed the connection", retryable=True, condition="connection"))
    True
    """
    return isinstance(err, JarenlabError) and err.retryable and err.condition == "connection"


__all__ = [
    "CODES",
    "EventError",
    "IdempotencyError",
    "IntervalConflict",
    "JarenlabError",
    "JobError",
    "LiveError",
    "MigrationError",
    "ModelError",
    "PlanError",
    "QueryError",
    "QueryWarning",
    "StoreError",
    "ValidationError",
    "unreachable",
]


def errors_markdown() -> str:
    """The codes table as Markdown: ``docs/errors.md`` holds exactly this (a test checks)."""
    lines = [
        "# Errors",
        "",
        "Every error jarenlab raises is a `jarenlab.JarenlabError` with `code`, `name`, `reason`, and where",
        "known `doc_path` (a JSON Pointer into the model or query document), `collection`, `key`, `errors`",
        "(validator messages), `position` (in a batch), `retryable` and, for a database error, `condition`",
        "(`duplicate`, `busy`, `connection`, `exclusion`, `read_only`, `overflow`, `function_failed`, `other`).",
        "The driver's own error is `__cause__`. Database errors are translated in one place per backend, its",
        "error boundary (`jarenlab/backends/sqlite/backend.py`, `jarenlab/backends/postgres/backend.py`);",
        "busy/locked and a lost connection are retryable (`jarenlab.errors.unreachable(err)` tells the latter).",
        "",
        "Where jarenlab raises a condition the `@jarenjs/db` code table names, it uses that code (a lease",
        "that expired is `JD2067`, a job no longer leased `JD2065`, one live query too many `JD0052`).",
        "Conditions that table does not name have codes of jarenlab's own.",
        "",
        "This page is generated from `jarenlab.errors.CODES`: regenerate it with",
        "`python -c \"import jarenlab.errors as e; print(e.errors_markdown(), end='')\" > docs/errors.md`.",
        "",
        "| code | name | meaning |",
        "|---|---|---|",
    ]
    lines += [f"| {code} | `{name}` | {meaning} |" for code, (name, meaning) in CODES.items()]
    return "\n".join(lines) + "\n"
