"""A job whose handler is a graph of tasks: finished tasks are checkpointed, a reclaimed job resumes.

Each task runs once its dependencies have, with their values; its value is saved in its own
transaction fenced by the job's lease (``ctx.checkpoint``). A reclaimed job (the worker died, the
lease expired) skips the tasks already saved. Completing records the result (the values of the
tasks nothing depends on), marks the job done and prunes its checkpoints in one transaction.
The graph's shape (tasks, dependencies, versions) is saved with the first checkpoint; resuming
under a different shape is refused with JD2069 naming the change, and the job is dead-lettered
(retrying cannot help; requeue it after deciding).

>>> dag = Dag("report")
>>> @dag.task
... def fetch(payload, inputs):
...     return [1, 2, 3]
>>> @dag.task(after=["fetch"], version=2)
... def total(payload, inputs):
...     return sum(inputs["fetch"])
>>> dag.order()
['fetch', 'total']
>>> describe_change(dag.shape(), {"fetch": {"after": [], "version": 1}, "total": {"after": ["fetch"], "version": 1}})
"task 'total' version moved from 2 to 1"
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jarenlab.errors import JobError

if TYPE_CHECKING:
    from jarenlab.jobs.context import Context

TaskFn = Callable[[Any, dict[str, Any]], Any]
_SHAPE = "$graph"
_PREFIX = "task:"


@dataclass(frozen=True, slots=True)
class Task:
    """One node: its function ``fn(payload, inputs)``, the tasks it waits for, and a version."""

    name: str
    fn: TaskFn
    after: tuple[str, ...]
    version: int


class Cancelled(Exception):
    """The DAG job stopped between tasks because ``ctx.cancelled`` was set."""


def describe_change(old: dict[str, Any] | None, new: dict[str, Any]) -> str:
    """The first difference between two graph shapes, in words."""
    if old is None:
        return "the job has checkpoints but no recorded graph"
    for name in new:
        if name not in old:
            return f"task {name!r} was added"
    for name in old:
        if name not in new:
            return f"task {name!r} was removed"
    for name, spec in new.items():
        before = old[name]
        if before["version"] != spec["version"]:
            return f"task {name!r} version moved from {before['version']} to {spec['version']}"
        if before["after"] != spec["after"]:
            return f"task {name!r} dependencies changed from {before['after']} to {spec['after']}"
    return "the graph changed"


class Dag:
    """The tasks of one DAG job kind. Get one with ``jobs.dag(kind)``; add tasks with :meth:`task`."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._tasks: dict[str, Task] = {}

    def task(
        self,
        fn: TaskFn | None = None,
        *,
        name: str | None = None,
        after: Iterable[str] = (),
        version: int = 1,
    ) -> Any:
        """Decorator adding a task: ``@dag.task`` or ``@dag.task(after=["fetch"], version=2)``.

        The task is called as ``fn(payload, inputs)``, ``inputs`` mapping each dependency to its value;
        it returns a JSON value. Bump ``version`` when its meaning changes: resuming a job started
        under the old version is then refused.
        """

        def add(f: TaskFn) -> TaskFn:
            self.add(name or f.__name__, f, after=after, version=version)
            return f

        return add(fn) if fn is not None else add

    def add(self, name: str, fn: TaskFn, *, after: Iterable[str] = (), version: int = 1) -> None:
        """Add (or replace) a task."""
        if type(name) is not str or not name:
            raise JobError("JD2125", f"a task name must be a non-empty string, not {name!r}")
        if type(version) is not int:
            raise JobError("JD2125", f"task {name!r}: version must be an integer")
        self._tasks[name] = Task(name, fn, tuple(after), version)

    def order(self) -> list[str]:
        """The tasks in an order where each comes after its dependencies (ties: insertion order).

        Raises:
            JobError: JD2125 for an unknown dependency or a cycle.
        """
        for task in self._tasks.values():
            for dep in task.after:
                if dep not in self._tasks:
                    raise JobError("JD2125", f"task {task.name!r} depends on unknown task {dep!r}")
        done: list[str] = []
        placed: set[str] = set()
        while len(done) < len(self._tasks):
            ready = [
                t.name for t in self._tasks.values() if t.name not in placed and placed.issuperset(t.after)
            ]
            if not ready:
                stuck = sorted(set(self._tasks) - placed)
                raise JobError("JD2125", f"the graph of {self.kind!r} has a cycle among {stuck}")
            done.extend(ready)
            placed.update(ready)
        return done

    def shape(self) -> dict[str, Any]:
        """The graph's identity: per task its dependencies and version."""
        return {t.name: {"after": sorted(t.after), "version": t.version} for t in self._tasks.values()}

    def run(self, payload: Any, ctx: Context) -> dict[str, Any]:
        """The job handler: run (or resume) the graph; returns the values of the final tasks."""
        order = self.order()
        shape = self.shape()
        saved = ctx.checkpoints
        if saved:
            if saved.get(_SHAPE) != shape:
                raise JobError(
                    "JD2069", f"job {ctx.job['id']!r}: {describe_change(saved.get(_SHAPE), shape)}"
                )
        else:
            ctx.checkpoint(_SHAPE, shape)
        values: dict[str, Any] = {}
        for name in order:
            key = _PREFIX + name
            if key in saved:
                values[name] = saved[key]
                continue
            if ctx.cancelled.is_set():
                raise Cancelled(f"cancelled before task {name!r}")
            task = self._tasks[name]
            values[name] = task.fn(payload, {dep: values[dep] for dep in task.after})
            ctx.checkpoint(key, values[name])
        needed = {dep for t in self._tasks.values() for dep in t.after}
        return {name: values[name] for name in order if name not in needed}

    def __repr__(self) -> str:
        return f"<Dag {self.kind!r}: {', '.join(self._tasks) or 'no tasks'}>"
