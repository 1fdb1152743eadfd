"""A live query's seed from the columns: the first rows at once, its maintainer built after.

Where the planner would answer a live query's document from the columns
(:func:`jarenlab.query.planner.run.columnar_seed`: a native plan, no index serving it, the columns
warm or the collection large enough, the ``columns=`` switch honoured), its first result is that
answer, taken as of one change-log record (the columns' ``seq``, brought current inside one
snapshot, the answer's table frozen there: later commits replace a table's arrays, never change
them). The query then follows the log from exactly that record.

Its maintainer (:mod:`.strategies`) needs every matching row, not only the answer. It is built
from the frozen table on a thread of its own (:class:`Build`), so the rows show in milliseconds
while it is built: the rows the plan's filter keeps (:func:`matching_rows`, one vectorized mask),
in bulk from the table's arrays where the plan allows it (:func:`how_built`; :mod:`.bulk`, and
:mod:`.stored` for a ``rows`` query and an accumulator), else each as a **partial document**
holding only the members the plan reads (:func:`partial_pairs`: a native plan reads the row
through those typed members alone, so the maintainer's per-row evaluation gives on them what it
gives on the whole document), and, in insertion order, every key's storage position as the table
holds it (the database's own). The first commit that touches
the collection waits for the build, then applies as after any seed. Nothing on that thread reads
the database.

>>> import numpy as np, pyarrow as pa
>>> from jarenlab.query.columnar.columns import Column, Table
>>> from jarenlab.query.planner.preds import Field
>>> n, s = Field(("n",), "integer", None), Field(("a", "s"), "string", None)
>>> t = Table("t", 3, np.array([1, 2]), None, {n: Column(n, pa.array([5, None])), s: Column(s, pa.array(["x", "y"]))})
>>> partial_pairs(t, np.array([0, 1]))
[(1, {'n': 5, 'a': {'s': 'x'}}), (2, {'a': {'s': 'y'}})]
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from jarenlab.live.strategies import Accumulator, Groups, Sorted

if TYPE_CHECKING:
    import numpy as np

    from jarenlab.query.columnar.columns import Table
    from jarenlab.query.planner.run import ColumnSeed

Maintainer = Sorted | Accumulator | Groups


def matching_rows(seed: ColumnSeed) -> np.ndarray:
    """Places in the seed's table of the rows the plan's filter keeps (the rows a maintainer keeps)."""
    import numpy as np

    from jarenlab.query.columnar.answer import kept

    table = seed.answered.table
    _, keep = kept(seed.plan, table, seed.externals, tuple(table.columns))
    return np.flatnonzero(keep)


def unkeyed(table: Table) -> str | None:
    """Why a maintainer cannot be built from ``table``'s rows (None: it can): keys other than
    integers or strings, or members inside arrays."""
    import pyarrow as pa

    kind = table.key_array().type
    if not (pa.types.is_integer(kind) or pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        return f"keys: the collection's keys are {kind}, not integers or strings"
    if any(type(step) is not str for f in table.columns for step in f.steps):
        return "members: a member inside an array"
    return None


def partial_pairs(table: Table, rows: np.ndarray) -> list[Any]:
    """``(key, document)`` of the table's ``rows`` in storage order, each document holding the
    table's members that are present (a missing member is left out, as it is missing)."""
    from jarenlab.live.bulk import Rows

    got = Rows(table, rows)
    return [(key, got.doc(i)) for i, key in enumerate(got.keys)]


def how_built(m: Maintainer, seed: ColumnSeed) -> dict[str, Any]:
    """How ``m`` will be built from the seed's table: ``{'build': 'columnar'}`` (in bulk,
    :mod:`.bulk`), or ``{'build': 'rows', 'build_reason': ...}`` (row by row, and why)."""
    from jarenlab.live import bulk, stored

    table = seed.answered.table
    if isinstance(m, Accumulator) or (isinstance(m, Sorted) and not m.plan.orderby):
        why = stored.why_not(m, table)  # (in storage order)
    else:
        why = bulk.why_not(m, table)
    return {"build": "columnar"} if why is None else {"build": "rows", "build_reason": why}


def seeded(
    m: Maintainer, seed: ColumnSeed, rows: np.ndarray, cancelled: threading.Event, how: dict[str, Any]
) -> Maintainer:
    """``m`` seeded with the seed's matching ``rows``, in bulk where ``how`` says so (:func:`how_built`;
    a bulk build that finds it cannot after all says why in ``how``), else as partial documents one
    by one; and, where storage order is insertion order, every key's storage position as the table
    holds it."""
    table = seed.answered.table
    positions = m.positions
    if positions is not None and not positions.by_key:
        positions.adopt(dict(zip(table.key_array().to_pylist(), table.pos.tolist())))
    if cancelled.is_set():
        return m
    if how["build"] == "columnar":
        from jarenlab.live import bulk, stored

        if isinstance(m, Accumulator) or (isinstance(m, Sorted) and not m.plan.orderby):
            why = stored.build(m, table, rows, seed.items)
        else:
            why = bulk.build(m, table, rows)
        if why is None:
            return m
        how.update(build="rows", build_reason=why)
    pairs = partial_pairs(table, rows)
    if not cancelled.is_set():
        m.seed(pairs)
    return m


class Build:
    """A maintainer made by ``make(cancelled)`` on a thread of its own; :meth:`result` waits for it.

    >>> b = Build(lambda cancelled: "made"); b.result(), b.ready
    ('made', True)
    """

    def __init__(self, make: Callable[[threading.Event], Any], report: dict[str, Any] | None = None) -> None:
        self.cancelled = threading.Event()
        #: What the build says of itself (:func:`how_built`), for ``live.seeded``.
        self.report = report if report is not None else {}
        self._done = threading.Event()
        self._value: Any = None
        self._error: BaseException | None = None
        #: Seconds the build took (None while it runs).
        self.seconds: float | None = None
        self._thread = threading.Thread(
            target=self._run, args=(make,), name="jarenlab-live-seed", daemon=True
        )
        self._thread.start()

    def _run(self, make: Callable[[threading.Event], Any]) -> None:
        t0 = time.perf_counter()
        try:
            self._value = make(self.cancelled)
        except BaseException as exc:  # handed to whoever waits for the result
            self._error = exc
        finally:
            self.seconds = time.perf_counter() - t0
            self._done.set()

    @property
    def ready(self) -> bool:
        """Whether the maintainer is built (or its build failed)."""
        return self._done.is_set()

    def wait(self) -> None:
        """Wait until the build is over (built, failed or cancelled)."""
        self._thread.join()

    def result(self) -> Any:
        """The maintainer, once built; raises what its build raised."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value

    def cancel(self) -> None:
        """Stop the build where it can stop (between members, before seeding) and wait for it."""
        self.cancelled.set()
        self._thread.join()


__all__ = ["Build", "Maintainer", "how_built", "matching_rows", "partial_pairs", "seeded", "unkeyed"]
