"""What the planner is handed: a source of documents (a collection) on a host (its store).

The planner never imports the store or a collection: it plans for whatever it is handed, and names
what it reads of it by these protocols. A :class:`jarenlab.collection.Collection` is a
:class:`Readable` and a :class:`jarenlab.store.Store` a :class:`Host` (type checking holds them to it);
an owner's view of a collection is a source too. :class:`PlannerState` is the planner's own per-store
state, which the host keeps.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from jarenlab.query.planner.cache import StatementCache

if TYPE_CHECKING:
    from jarenlab.backends.base import Backend
    from jarenlab.database import Database
    from jarenlab.model import CollectionSpec, Model
    from jarenlab.query.planner.plan import Plan
    from jarenlab.query.planner.preds import Pred
    from jarenlab.query.planner.profile import Profile


class PlannerState:
    """Per-store planner state: the statement cache, the UDF hatch switch and counters."""

    def __init__(self, capacity: int = 128) -> None:
        self.cache = StatementCache(capacity)
        #: Run conditions over pure host operators inside the database (False: they stay residual).
        self.udf_hatch = True
        #: What schema-aware findings do (:mod:`jarenlab.query.planner.diagnose`): "default", "strict", "off".
        self.checks = "default"
        self.lock = threading.Lock()
        self.counters: dict[str, int] = dict.fromkeys(
            (
                "native",
                "row",
                "set",
                "asof",
                "diverted",
                "fallbacks",
                "rows_read",
                "rows_returned",
                "refused",
                "columnar",
            ),
            0,
        )

    def count(self, **inc: int) -> None:
        with self.lock:
            for k, v in inc.items():
                self.counters[k] += v


class Host(Protocol):
    """What the planner reads of a store: its database, backend, model, state, operators, profile."""

    db: Database
    backend: Backend
    model: Model
    planner: PlannerState
    operators: dict[str, Callable[..., Any]]
    profile: Profile | None

    def __getitem__(self, name: str) -> Readable:
        """A collection by name."""
        ...

    def subsystem(self, name: str) -> Any:
        """A subsystem's object (the keyset pages' keys)."""
        ...

    def execute(
        self,
        document: Any,
        externals: dict[str, Any] | None = None,
        *,
        pushdown: bool = True,
        strict: bool = False,
    ) -> Any:
        """Run a store-level document (what a join falls back to)."""
        ...


class ColumnPath(Protocol):
    """What the planner asks of the store's columnar path (``store.subsystem("columns")``,
    :class:`jarenlab.query.columnar.path.Columns`): a native plan's items from its columns, or the
    :class:`~jarenlab.query.planner.preds.Reason` SQL answers it instead."""

    def answer(
        self,
        coll: Readable,
        plan: Plan,
        externals: dict[str, Any],
        *,
        force: bool,
        indexed: bool,
        scope: Pred | None = None,
        arrow: bool = False,
        freeze: bool = False,
    ) -> Any:
        """An answer (``items``, ``columns``, ``warm``, ``rows``, ``seq``, ``phases``, ``table``) or a
        Reason; ``scope``: an owner's view's test, ANDed before the plan's filter; ``arrow``: the
        items as one Arrow table; ``freeze``: ``table`` is the table answered from, as of ``seq``."""
        ...

    def preview(
        self, coll: Readable, plan: Plan, *, force: bool, indexed: bool, scope: Pred | None = None
    ) -> dict[str, Any]:
        """What :meth:`answer` would do, reading nothing."""
        ...


class Readable(Protocol):
    """What the planner reads of a collection: its name, its declaration, its host, its rows."""

    name: str
    spec: CollectionSpec

    @property
    def store(self) -> Host:
        """The host the collection belongs to."""
        ...

    def count(self) -> int:
        """How many documents it holds."""
        ...

    def texts(self) -> tuple[list[Any], list[str]]:
        """Every key and stored JSON text, in storage order."""
        ...

    def patch(self, key: Any, ops: list[dict[str, Any]] | dict[str, Any]) -> dict[str, Any]:
        """Patch one document in the open transaction (keyed updates)."""
        ...

    def delete(self, key: Any) -> bool:
        """Delete one document in the open transaction (keyed deletes)."""
        ...
