"""Installing handler modules: the module graph the store records, and materializations rebuilt by
replaying the ledger.

``store.events.install(*modules)`` checks the modules against the store's record (a recorded module
left out is JD2211, modules in another order JD2212, a materialization's version below the recorded
one JD2213), then rebuilds every materialization whose version is new or raised, in one transaction.
``dry_run=True`` returns the :class:`RebuildPlan` without writing anything.

>>> plan = RebuildPlan(("flights",), ("flights",), (Step("flights.delays", "delays", 1, 2, 3),), 3)
>>> plan
<RebuildPlan (dry run) modules flights (new: flights); flights.delays v1 -> v2 replays 3 events (through #3)>
>>> plan.events
3
"""

from __future__ import annotations

import dataclasses
import html
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from jarenlab.causation import current_event
from jarenlab.errors import EventError
from jarenlab.events.event import from_ms, from_row
from jarenlab.events.modules import REPLAYING, Materialization, Module
from jarenlab.reprs import table

if TYPE_CHECKING:
    import pandas as pd

    from jarenlab.database import Database
    from jarenlab.store import Store

__all__ = ["Graph", "Installer", "Ledger", "RebuildPlan", "Step"]

_BATCH = 256
#: Replays of at least this many events show a progress bar unless ``progress=False``.
_LONG = 10_000


@dataclass(frozen=True)
class Step:
    """One materialization to rebuild: from the ``recorded`` version (None: never built) to
    ``version``, replaying ``events`` events into ``collection``."""

    name: str
    collection: str
    recorded: int | None
    version: int
    events: int


@dataclass(frozen=True)
class RebuildPlan:
    """What an install does (or, with ``ran=False``, would do): the module list it records (``added``:
    modules recorded for the first time), the materializations it rebuilds, and the last event the
    replay reads (``through``, a seq). ``seconds`` is how long the rebuild took once run."""

    modules: tuple[str, ...]
    added: tuple[str, ...]
    steps: tuple[Step, ...]
    through: int
    ran: bool = False
    seconds: float | None = None
    retired: tuple[str, ...] = ()

    @property
    def events(self) -> int:
        """Events the replay reads, over every step."""
        return sum(s.events for s in self.steps)

    @property
    def changes(self) -> bool:
        """True when the install records something new (modules, retirements or versions)."""
        return bool(self.added or self.retired or self.steps)

    def frame(self) -> pd.DataFrame:
        """The steps as a DataFrame, one row per materialization to rebuild."""
        import pandas as pd

        rows = [dataclasses.asdict(s) for s in self.steps]
        frame = pd.DataFrame(rows, columns=["name", "collection", "recorded", "version", "events"])
        frame["recorded"] = frame["recorded"].astype("Int64")
        return frame.set_index("name")

    def _summary(self) -> str:
        head = "ran" if self.ran else "dry run"
        if self.ran and self.seconds is not None:
            head += f" in {self.seconds:.2f} s"
        mods = ", ".join(self.modules) or "none"
        if self.added:
            mods += f" (new: {', '.join(self.added)})"
        if self.retired:
            mods += f" (retired: {', '.join(self.retired)})"
        steps = "; ".join(
            f"{s.name} {'new' if s.recorded is None else f'v{s.recorded}'} -> v{s.version} replays "
            f"{s.events} events"
            for s in self.steps
        )
        return f"({head}) modules {mods}; {steps or 'nothing to rebuild'} (through #{self.through})"

    def __repr__(self) -> str:
        return f"<RebuildPlan {self._summary()}>"

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td><code>{html.escape(s.name)}</code></td><td><code>{html.escape(s.collection)}</code></td>"
            f"<td>{'&mdash;' if s.recorded is None else s.recorded}</td><td>{s.version}</td>"
            f"<td>{s.events:,}</td></tr>"
            for s in self.steps
        )
        body = table(
            ["materialization", "collection", "from version", "to version", "events to replay"], rows
        )
        return f"<div><b>rebuild plan</b> {html.escape(self._summary())}{body}</div>"


class Graph:
    """The modules given to one install, checked on their own (JD2210) before any database work."""

    def __init__(self, modules: Sequence[Module], retire: Sequence[str]) -> None:
        names: list[str] = []
        for module in modules:
            if not isinstance(module, Module):
                raise EventError("JD2210", f"install takes jarenlab.events.Module objects, not {module!r}")
            if module.name in names:
                raise EventError("JD2210", f"module {module.name!r} is given twice")
            names.append(module.name)
        for retired in retire:
            if retired in names:
                raise EventError("JD2210", f"module {retired!r} is both installed and retired")
        owners: dict[str, str] = {}
        for i, module in enumerate(modules):
            for type in module.types():
                owner = type.split(".", 1)[0]
                if owner not in names[: i + 1]:
                    raise EventError(
                        "JD2210", f"module {module.name!r} handles {type!r} of module {owner!r}, which is "
                        "not installed before it",
                    )  # fmt: skip
            for mat in module.materializations.values():
                if mat.collection in owners:
                    raise EventError(
                        "JD2210", f"collection {mat.collection!r} is maintained by both "
                        f"{owners[mat.collection]} and {mat.full_name}",
                    )  # fmt: skip
                owners[mat.collection] = mat.full_name
        self.modules = tuple(modules)
        self.names = tuple(names)
        self.retire = tuple(retire)

    @property
    def materializations(self) -> list[Materialization]:
        """Every materialization, in module order."""
        return [m for module in self.modules for m in module.materializations.values()]

    def plan(self, db: Database, head: int) -> tuple[RebuildPlan, int]:
        """Check the modules against the store's record (JD2211, JD2212, JD2213) and plan the rebuild;
        returns the plan and the recorded stamp (0: nothing recorded). Reads on ``db``'s current
        connection: a snapshot for a dry run, the install's transaction otherwise."""
        row = db.one("events.graph")
        recorded: list[str] = [] if row is None else orjson.loads(row[0])
        stamp = 0 if row is None else int(row[1])
        unknown = [r for r in self.retire if r not in recorded]
        if unknown:
            raise EventError("JD2210", f"cannot retire {unknown[0]!r}: the store records no such module")
        kept = [r for r in recorded if r not in self.retire]
        for name in kept:
            if name not in self.names:
                raise EventError(
                    "JD2211", f"module {name!r} is recorded in the store but not installed (recorded: "
                    f"{', '.join(recorded)}); install it, or retire it with retire=[{name!r}]",
                )  # fmt: skip
        for position, (want, given) in enumerate(zip(kept, self.names, strict=False)):
            if want != given:
                raise EventError(
                    "JD2212", f"module {given!r} is installed at position {position + 1}, where the store "
                    f"records {want!r} (recorded order: {', '.join(kept)}; new modules go after them)",
                )  # fmt: skip
        versions = {r[0]: int(r[2]) for r in db.all("events.materializations")}
        steps = []
        for mat in self.materializations:
            before = versions.get(mat.full_name)
            if before is not None and mat.version < before:
                raise EventError(
                    "JD2213", f"materialization {mat.full_name} is declared at version {mat.version}, below "
                    f"version {before} the store records (a newer program rebuilt it)",
                )  # fmt: skip
            if before == mat.version:
                continue
            count = 0
            if mat.types:
                count = int(db.value(
                    "events.count_of_types", {"through": head, "types": mat.types}, types=len(mat.types)
                ))  # fmt: skip
            steps.append(Step(mat.full_name, mat.collection, before, mat.version, count))
        added = tuple(n for n in self.names if n not in kept)
        retired = tuple(r for r in recorded if r in self.retire)
        return RebuildPlan(self.names, added, tuple(steps), head, retired=retired), stamp

    def apply(self, store: Store, plan: RebuildPlan, stamp: int, *, at_ms: int, progress: bool | None) -> int:
        """Inside the install's transaction: rebuild what ``plan`` lists and record the graph;
        returns the stamp the store now records (moved on when anything changed)."""
        if not plan.changes:
            return stamp
        db = store.db
        show = plan.events >= _LONG if progress is None else progress
        bar = _bar(plan.events) if show else None
        try:
            by_name = {m.full_name: m for m in self.materializations}
            for step in plan.steps:
                _replay(store, by_name[step.name], plan.through, bar)
                db.run("events.set_materialization", {
                    "name": step.name, "collection": step.collection, "version": step.version,
                    "rebuilt_at_ms": at_ms, "replayed": step.events,
                })  # fmt: skip
        finally:
            if bar is not None:
                bar.close()
        db.run("events.set_graph", {"modules": orjson.dumps(list(self.names)).decode(), "stamp": stamp + 1})
        return stamp + 1


def _replay(store: Store, mat: Materialization, through: int, bar: Any) -> None:
    """Empty ``mat``'s collection and run its handlers on every event of its types up to ``through``."""
    db = store.db
    collection = store[mat.collection]
    collection.rewrite([], collection.keys())
    types = mat.types
    after = 0
    token = REPLAYING.set(mat.full_name)
    try:
        while types:
            rows = db.all(
                "events.after_of_types", {"after": after, "types": types, "limit": _BATCH}, types=len(types)
            )
            events = [e for e in map(from_row, rows) if e.seq <= through]
            for event in events:
                seq_token = current_event.set(event.seq)
                try:
                    for handler in mat.handlers[event.type]:
                        try:
                            handler(event, store)
                        except BaseException as exc:
                            exc.add_note(
                                f"while replaying event #{event.seq} {event.type!r} into {mat.full_name}"
                            )
                            raise
                finally:
                    current_event.reset(seq_token)
            if bar is not None:
                bar.update(len(events))
            if len(rows) < _BATCH or len(events) < len(rows):
                break
            after = rows[-1][0]
    finally:
        REPLAYING.reset(token)


def _bar(total: int) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="replaying events", unit="event")


class Ledger(Protocol):
    """What an :class:`Installer` uses of the event ledger it serves."""

    store: Store
    clock: Callable[[], float]

    def on(self, type: str) -> Callable[[Any], Any]: ...
    def off(self, type: str, handler: Any = None) -> int: ...
    def outcome_schema(self, type: str) -> dict[str, Any] | None: ...


class Installer:
    """The modules one ledger object installed (``store.events.graph``) and the store's record of them."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self.stamp: int | None = None  # the recorded graph's stamp as this object installed it
        self.installed: list[tuple[str, Any]] = []

    def check(self) -> None:
        """Inside an emit: JD2214 unless this object installed the module graph the store records."""
        stamp = self.ledger.store.db.value("events.graph_stamp")
        if stamp is not None and int(stamp) != self.stamp:
            raise EventError(
                "JD2214", "the store records handler modules this store object has not installed as "
                "recorded: call store.events.install(...) first (another process may have installed newer "
                "versions since)",
            )  # fmt: skip

    def install(
        self, modules: Sequence[Module], *, dry_run: bool, progress: bool | None, retire: Sequence[str]
    ) -> RebuildPlan:
        """See :meth:`jarenlab.events.Events.install`."""
        graph = Graph(modules, retire)
        store = self.ledger.store
        for module in graph.modules:
            for type in sorted(module.types()):
                self.ledger.outcome_schema(type)  # JD2080 for a type the model does not declare
        for mat in graph.materializations:
            if mat.collection not in store.model.collections:
                raise EventError(
                    "JD2210", f"materialization {mat.full_name} maintains {mat.collection!r}, which the "
                    "model does not declare",
                )  # fmt: skip
        db = store.db
        if not dry_run and db.in_transaction:
            raise EventError(
                "JD2210", "install runs in a transaction of its own, not inside store.transaction() (an "
                "enclosing rollback would leave the handlers registered for a graph the store does not record)",
            )  # fmt: skip
        if dry_run:
            with db.snapshot(own_writes=False):
                return graph.plan(db, int(db.value("events.head")))[0]
        started = time.perf_counter()
        with db.transaction():
            db.serialize("events")
            plan, stamp = graph.plan(db, int(db.value("events.head")))
            at_ms = int(self.ledger.clock() * 1000)
            stamp = graph.apply(store, plan, stamp, at_ms=at_ms, progress=progress)
        self._register(graph)
        self.stamp = stamp
        return dataclasses.replace(plan, ran=True, seconds=time.perf_counter() - started)

    def _register(self, graph: Graph) -> None:
        """Put the modules' handlers in place of those an earlier install registered."""
        for type, handler in self.installed:
            self.ledger.off(type, handler)
        installed: list[tuple[str, Any]] = []
        for module in graph.modules:
            for type, handlers in module.handlers.items():
                installed += [(type, h) for h in handlers]
            for mat in module.materializations.values():
                for type, handlers in mat.handlers.items():
                    installed += [(type, h) for h in handlers]
            for queue in module.queues.values():
                self.ledger.store.jobs.handler(queue.kind, **queue.options)(queue.fn)
        for type, handler in installed:
            self.ledger.on(type)(handler)
        self.installed = installed

    def recorded(self) -> tuple[str, ...]:
        """The module names the store records, in order."""
        db = self.ledger.store.db
        with db.snapshot(own_writes=False):
            row = db.one("events.graph")
        return () if row is None else tuple(orjson.loads(row[0]))

    def frame(self) -> pd.DataFrame:
        """The store's materializations as recorded (see :meth:`jarenlab.events.Events.materializations`)."""
        import pandas as pd

        db = self.ledger.store.db
        with db.snapshot(own_writes=False):
            rows = db.all("events.materializations")
        frame = pd.DataFrame(
            [(r[0], r[1], int(r[2]), from_ms(int(r[3])), int(r[4])) for r in rows],
            columns=["name", "collection", "version", "rebuilt_at", "replayed"],
        )
        frame["rebuilt_at"] = pd.to_datetime(frame["rebuilt_at"], utc=True)
        return frame.set_index("name")
