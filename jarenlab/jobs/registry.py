"""Handlers by job kind: a registry a module can build without a store, for workers elsewhere.

``store.jobs`` has one; a module meant for ``python -m jarenlab worker`` makes its own and the
worker includes it.

>>> handlers = Handlers()
>>> @handlers.handler("double", concurrency=2)
... def double(payload, ctx):
...     return payload * 2
>>> handlers["double"].concurrency, handlers.kinds
(2, ('double',))
>>> @handlers.handler("fetch", rate="10/s", max_running=3)
... def fetch(payload, ctx): ...
>>> handlers["fetch"].limit
Limit(rate='10/1s', max_running=3)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jarenlab.arguments import is_count
from jarenlab.errors import JobError
from jarenlab.jobs.limits import Limit, limit

if TYPE_CHECKING:
    from jarenlab.jobs.context import Context
    from jarenlab.jobs.dag import Dag

HandlerFn = Callable[[Any, "Context"], Any]


@dataclass(frozen=True, slots=True)
class HandlerSpec:
    """One registered kind: its function and its options (None means the worker's default)."""

    kind: str
    fn: HandlerFn
    concurrency: int | None = None
    max_attempts: int | None = None
    lease: float | None = None
    timeout: float | None = None
    #: Its limits across every worker and process (``rate=``, ``max_running=``), or None.
    limit: Limit | None = None


def _check_options(
    concurrency: int | None, max_attempts: int | None, lease: float | None, timeout: float | None
) -> None:
    for name, value in (("concurrency", concurrency), ("max_attempts", max_attempts)):
        if value is not None and not is_count(value, least=1):
            raise JobError("JD2125", f"{name} must be a positive integer, not {value!r}")
    for name, seconds in (("lease", lease), ("timeout", timeout)):
        if seconds is not None and (
            isinstance(seconds, bool) or not isinstance(seconds, int | float) or not 0 < seconds < 1e9
        ):
            raise JobError("JD2125", f"{name} must be a positive number of seconds, not {seconds!r}")


class Handlers:
    """A registry of job handlers by kind."""

    def __init__(self) -> None:
        self._specs: dict[str, HandlerSpec] = {}

    def handler(
        self,
        kind: str,
        *,
        concurrency: int | None = None,
        max_attempts: int | None = None,
        lease: float | None = None,
        timeout: float | None = None,
        rate: str | None = None,
        max_running: int | None = None,
    ) -> Callable[[HandlerFn], HandlerFn]:
        """Decorator registering ``fn(payload, ctx)`` for ``kind``.

        Args:
            kind: the job kind. concurrency: at most this many of the kind run at once in one
            worker. max_attempts: the default budget for jobs of the kind enqueued here.
            lease: seconds a claim lasts before it must be renewed (renewed while the handler runs).
            timeout: seconds the handler may run (a job's own ``timeout`` wins); past it the attempt
            fails, its thread is abandoned (reported, never killed) and its lease is not renewed.
            rate: at most this many starts of the kind in any window of a period, counted across
            every worker and process: ``"10/s"``, ``"100/min"``, ``"5/h"``, ``"3/5s"``. max_running:
            at most this many of the kind running at once across every worker and process (unlike
            ``concurrency``, which is per worker). A kind at its limit is not claimed; workers
            claim other kinds meanwhile (see :mod:`jarenlab.jobs.limits`).

        Raises:
            JobError: JD2125 for a bad kind or option; JD2171 for a bad ``rate`` or ``max_running``.
        """

        def register(fn: HandlerFn) -> HandlerFn:
            self.register(
                kind, fn, concurrency=concurrency, max_attempts=max_attempts, lease=lease, timeout=timeout,
                rate=rate, max_running=max_running,
            )  # fmt: skip
            return fn

        return register

    def register(
        self,
        kind: str,
        fn: HandlerFn,
        *,
        concurrency: int | None = None,
        max_attempts: int | None = None,
        lease: float | None = None,
        timeout: float | None = None,
        rate: str | None = None,
        max_running: int | None = None,
    ) -> HandlerSpec:
        """Register ``fn`` for ``kind`` (replacing an earlier one); returns the spec."""
        if type(kind) is not str or not kind:
            raise JobError("JD2125", f"a job kind must be a non-empty string, not {kind!r}")
        if not callable(fn):
            raise JobError("JD2125", f"the handler for {kind!r} is not callable")
        _check_options(concurrency, max_attempts, lease, timeout)
        spec = HandlerSpec(kind, fn, concurrency, max_attempts, lease, timeout, limit(rate, max_running))
        self._specs[kind] = spec
        return spec

    def dag(
        self,
        kind: str,
        *,
        concurrency: int | None = None,
        max_attempts: int | None = None,
        lease: float | None = None,
        rate: str | None = None,
        max_running: int | None = None,
    ) -> Dag:
        """A DAG job kind: add tasks with ``@dag.task(after=[...])`` (see :mod:`jarenlab.jobs.dag`)."""
        from jarenlab.jobs.dag import Dag

        graph = Dag(kind)
        self.register(
            kind, graph.run, concurrency=concurrency, max_attempts=max_attempts, lease=lease, rate=rate,
            max_running=max_running,
        )  # fmt: skip
        return graph

    def include(self, other: Handlers) -> None:
        """Register every kind of ``other`` here too."""
        self._specs.update(other._specs)

    @property
    def kinds(self) -> tuple[str, ...]:
        """The registered kinds, in registration order."""
        return tuple(self._specs)

    def __getitem__(self, kind: str) -> HandlerSpec:
        return self._specs[kind]

    def get(self, kind: str) -> HandlerSpec | None:
        """The spec registered for ``kind``, or None."""
        return self._specs.get(kind)

    def limit(self, kind: str) -> Limit | None:
        """The limits declared for ``kind`` (``rate=``, ``max_running=``), or None."""
        spec = self._specs.get(kind)
        return None if spec is None else spec.limit

    def __contains__(self, kind: object) -> bool:
        return kind in self._specs

    def __iter__(self) -> Iterator[HandlerSpec]:
        return iter(list(self._specs.values()))

    def __len__(self) -> int:
        return len(self._specs)

    def __repr__(self) -> str:
        return f"<Handlers {', '.join(self._specs) or '(none)'}>"
