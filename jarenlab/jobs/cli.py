"""``python -m jarenlab worker STORE --handlers module:attr``: run jobs in another process.

``STORE`` is what :func:`jarenlab.open` takes: a store file, or a ``postgresql://`` URL with
``--schema`` naming the store's schema (``--no-notify`` turns the NOTIFY wake-ups off: the worker
polls; each registered backend's options are flags, given only with a target of that backend).
``attr`` names a :class:`~jarenlab.jobs.registry.Handlers` registry, a function taking the store's
queue (``store.jobs``, the one queue object of the store, set up with the options given
here) and registering handlers on it, or a plain mapping ``{kind: function}``. Handlers
defined in a notebook cannot be imported here: put them in a module the worker can import.

Example::

    python -m jarenlab worker lab.db --handlers mylab.tasks:handlers --concurrency 4
    python -m jarenlab worker lab.db --handlers mylab.tasks:handlers --until-idle
    python -m jarenlab worker postgresql://db.lab/lab --schema flights --handlers mylab.tasks:handlers
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import jarenlab.backends as backends
from jarenlab.errors import JarenlabError, JobError, StoreError

if TYPE_CHECKING:
    from jarenlab.jobs.registry import Handlers


def load(spec: str) -> Any:
    """The object named by ``module:attr`` (``attr`` may be dotted).

    Raises:
        JobError: JD2125 when the module or attribute cannot be found.
    """
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise JobError("JD2125", f"--handlers takes module:attr, not {spec!r}")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise JobError("JD2125", f"cannot load handlers {spec!r}: {exc}") from exc
    return obj


def register_mapping(handlers: Handlers, mapping: Mapping[Any, Any], spec: str) -> None:
    """Register each ``{kind: function}`` of a plain mapping; JD2125 naming the first bad entry
    (nothing is registered then)."""
    for kind, fn in mapping.items():
        if not isinstance(kind, str) or not kind:
            raise JobError("JD2125", f"{spec}: a job kind is a non-empty string, not {kind!r}")
        if not callable(fn):
            raise JobError(
                "JD2125", f"{spec}: the handler for {kind!r} is not callable ({type(fn).__name__})"
            )
    for kind, fn in mapping.items():
        handlers.register(kind, fn)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m jarenlab worker", description="Run jarenlab jobs from a store."
    )
    p.add_argument("db", help=f"the store: {' or '.join(entry.target for entry in backends.REGISTERED)}")
    for entry in backends.REGISTERED:
        for option in entry.options:
            say = f"{entry.title} ({entry.target}): {option.help}"
            if option.default is True:  # on by default: the flag turns it off
                p.add_argument(option.flag, action="store_false", dest=option.name, help=say)
            else:
                p.add_argument(option.flag, dest=option.name, help=say)
    p.add_argument(
        "--handlers",
        action="append",
        required=True,
        help="module:attr of a Handlers registry, a registering function or a {kind: function} mapping",
    )
    p.add_argument("--concurrency", type=int, default=4, help="handler threads (default 4)")
    p.add_argument("--lease", type=float, default=30.0, help="default lease seconds (default 30)")
    p.add_argument("--poll", type=float, default=0.5, help="idle poll seconds (default 0.5)")
    p.add_argument(
        "--grace", type=float, default=5.0, help="seconds running handlers get on stop (default 5)"
    )
    p.add_argument("--until-idle", action="store_true", help="exit once nothing is left to do")
    return p


def main(argv: list[str] | None = None) -> int:
    """Run a worker until SIGINT/SIGTERM (or, with ``--until-idle``, until idle); returns the exit code.

    A coded error (no store at the path, a server that cannot be reached, handlers that cannot be
    loaded, ...) is printed as one line without a traceback and exits with 1; bad arguments exit
    with 2 (argparse's usage error).
    """
    p = parser()
    args = p.parse_args(argv)
    if args.concurrency < 1:
        p.error(f"--concurrency must be at least 1, not {args.concurrency}")
    for name in ("lease", "poll", "grace"):
        value = getattr(args, name)
        if not 0 <= value < float("inf") or (name != "grace" and value == 0):
            p.error(f"--{name} must be a positive number of seconds, not {value}")
    try:
        return _run(args)
    except JarenlabError as err:
        print(f"{p.prog}: error: {err}", file=sys.stderr)
        return 1


def _run(args: argparse.Namespace) -> int:
    import jarenlab as jl
    from jarenlab.jobs.api import Jobs
    from jarenlab.jobs.registry import Handlers

    entry = backends.entry_for(args.db)
    given = [o for o in backends.OPTIONS if getattr(args, o.name) != o.default]
    foreign = [o for o in given if not entry.takes(o.name)]
    if foreign:
        owner = next(e for e in backends.REGISTERED if e.takes(foreign[0].name))
        flags = " and ".join(o.flag for o in owner.options)
        raise StoreError("JD0006", f"{flags} are for {owner.target}, not {entry.target}")
    if entry.existing is not None:
        entry.existing(args.db)
    options = {o.name: getattr(args, o.name) for o in entry.options}
    store = jl.open(args.db, **options)
    try:
        jobs = store.jobs.configure(lease=args.lease, poll=args.poll, close_grace=args.grace)
        for spec in args.handlers:
            found = load(spec)
            if isinstance(found, Handlers):
                jobs.include(found)
            elif isinstance(found, Jobs):
                jobs.include(found.handlers)
            elif isinstance(found, Mapping):
                register_mapping(jobs.handlers, found, spec)
            elif callable(found) and not isinstance(found, type):
                try:
                    found(jobs)
                except Exception as exc:
                    raise JobError("JD2125", f"{spec}(jobs) raised {type(exc).__name__}: {exc}") from exc
            else:
                raise JobError(
                    "JD2125",
                    f"{spec} is a {type(found).__name__}: --handlers names a Handlers registry, a function "
                    "that registers handlers, or a mapping {kind: function}",
                )
        if not jobs.handlers.kinds:
            raise JobError("JD2125", "no handlers were registered")
        if args.until_idle:
            summary = jobs.run_until_idle(progress=False, concurrency=args.concurrency)
            print(f"jarenlab worker: {summary}", file=sys.stderr)
            return 0
        stop = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        worker = jobs.start(args.concurrency)
        print(f"jarenlab worker {jobs.owner}: running {', '.join(jobs.handlers.kinds)}", file=sys.stderr)
        # A signal may be delivered to any thread; Python runs its handler only once the main thread
        # is back in the interpreter, which an untimed wait never is. So wait in short steps.
        while not stop.wait(0.2):
            pass
        stopped = worker.stop(grace=args.grace)
        print(f"jarenlab worker: stopped ({len(stopped.drained)} drained, {len(stopped.in_flight)} in flight)",
              file=sys.stderr)  # fmt: skip
        return 0
    finally:
        store.close()
