"""The house's declared order, and a reader of every import in it (what the layering tests check).

A **room** is a folder: a module inside a package belongs to that package's room
(``jarenlab.query.planner.run`` to ``query.planner``); a module directly under ``jarenlab/`` is a room
of its own (``store``); a package's ``__init__`` is its own room (``jarenlab.query`` is ``query``, the
language's front door). :data:`FLOORS` puts every room on a floor, lowest first. A module may import
its own room and any room on a lower floor; never a room on its own floor or above, unless the arrow
is on :data:`EXCEPTIONS` with its reason.

Every import counts, wherever it is written: at module level, inside a function (the lazy imports that
hide a cycle), and under ``TYPE_CHECKING`` (the names a reader sees). Importing ``a.b.c`` also runs
the ``__init__`` of ``a.b`` when the importer is outside it, so the cycle check follows those arrows too
(a package face that imports the store makes ``import jarenlab.store`` fail halfway through).
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "jarenlab"

#: Every room, lowest floor first. Rooms on one floor are siblings: they do not import each other.
FLOORS: tuple[tuple[str, ...], ...] = (
    ("errors", "arguments", "reprs", "pointer", "causation", "lazy", "moved", "backoff"),  # the foundation
    ("query.lang", "values"),  # the language and its reference engine (the oracle); Python values
    ("patch", "frames", "keys"),  # JSON Patch and merge patch; pandas and Arrow; composite keys
    ("query.build",),  # the builder: it, param, Query, pandas habits, .dt, join chains
    ("query",),  # the language's front door
    ("model",),  # the model's pure declarations: collections, indexes, intervals, relations
    ("backends",),  # the Backend and Dialect protocols, the registry of backends
    ("backends.sqlite", "backends.postgres"),  # each backend: its driver, DDL, dialect, statements
    ("database",),  # connections, THE transaction, named statements
    ("query.planner",),  # one collection's planner: shape, SQL, run, explain, keyed reads, pages
    ("query.joins", "query.loads", "query.columnar"),  # store-level queries; the columnar path
    ("intervals", "typed"),  # the non-overlap check a collection's writes run; Python types of a model
    ("collection",),
    ("store",),
    (
        "live",
        "jobs",
        "events",
        "migrations",
        "owner",
        "idempotency",
        "stats",
        "relations",
        "session",
    ),  # subsystems
    ("widgets",),  # thin ipywidgets views, loaded only when asked for
    ("assembly", "infer", "examples"),  # the composition root; model inference; the demo's data
    ("demo",),  # the main job
    ("__main__", "jarenlab"),  # what a user runs and imports
)

_WIDGET = "a .widget() convenience: loads ipywidgets and the view only when a notebook asks for one"
_PROPERTY = "a property's return type: the store hands out the subsystem object registered with it"
_HANDED = (
    "type only, inside one room: the job queue hands itself to its drain loop and its workers, which"
    " read most of it (a protocol would restate the whole Jobs)"
)
_MIXED = (
    "type only, inside one room: periodic jobs and fan-out are mixed into Jobs and hand it to their"
    " schedules and batches, which use its store, clock, handlers and enqueue"
)
_LIVE = "a .live() convenience: a live query of this source, built by the live room on demand"

#: Arrows against the order, each with its reason: (importer, imported module, reason). An arrow on
#: this list is allowed in both checks (the order and the cycles). Each is one line to remove later.
EXCEPTIONS: tuple[tuple[str, str, str], ...] = (
    (
        "jarenlab.backends",
        "jarenlab.backends.sqlite",
        "the registry of backends loads one when a store opens",
    ),
    (
        "jarenlab.backends",
        "jarenlab.backends.postgres",
        "the registry of backends loads one when a store opens",
    ),
    ("jarenlab.jobs.api", "jarenlab.widgets", _WIDGET),
    ("jarenlab.jobs.api", "jarenlab.widgets.jobs", _WIDGET),
    ("jarenlab.live.live", "jarenlab.widgets", _WIDGET),
    ("jarenlab.live.live", "jarenlab.widgets.live", _WIDGET),
    ("jarenlab.stats", "jarenlab.widgets.stats", _WIDGET),
    ("jarenlab.query.planner.explain", "jarenlab.widgets.explain", _WIDGET),
    ("jarenlab.store", "jarenlab.events", _PROPERTY),
    ("jarenlab.store", "jarenlab.jobs", _PROPERTY),
    ("jarenlab.store", "jarenlab.live.hub", _PROPERTY),
    ("jarenlab.store", "jarenlab.migrations", _PROPERTY),
    ("jarenlab.store", "jarenlab.owner", _PROPERTY),
    ("jarenlab.store", "jarenlab.live.joined", _LIVE),
    (
        "jarenlab.store",
        "jarenlab.session",
        "a .session() convenience: a unit of work over this store, built by the session room on demand",
    ),
    ("jarenlab.collection", "jarenlab.live.live", _LIVE),
    ("jarenlab.collection", "jarenlab.store", "type only: the store a collection belongs to (its .store)"),
    ("jarenlab.jobs.drain", "jarenlab.jobs.api", _HANDED),
    ("jarenlab.jobs.worker", "jarenlab.jobs.api", _HANDED),
    ("jarenlab.jobs.periodic", "jarenlab.jobs.api", _MIXED),
    ("jarenlab.jobs.fanout", "jarenlab.jobs.api", _MIXED),
)

KINDS = ("module", "function", "type")


@dataclass(frozen=True)
class Import:
    """One import of a jarenlab module: who, what, where, which names, and how (module/function/type)."""

    importer: str
    target: str
    line: int
    names: tuple[str, ...]
    kind: str


#: The modules read from an ``__init__.py`` (a package with no module of its own is still a room).
INITS: set[str] = set()


def modules(root: Path = ROOT) -> dict[str, str]:
    """Every module's dotted name and source text."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
            INITS.add(".".join(parts))
        out[".".join(parts)] = path.read_text("utf-8")
    return out


def packages(sources: Mapping[str, str]) -> set[str]:
    """The modules that are packages (read from an ``__init__.py``, or some other module's parent)."""
    return {name.rpartition(".")[0] for name in sources if "." in name} | (INITS & set(sources))


def _kinds(tree: ast.AST) -> dict[int, str]:
    """The kind of every node inside a ``TYPE_CHECKING`` block ("type") or a function ("function")."""
    out: dict[int, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for child in node.body:
                for n in ast.walk(child):
                    out.setdefault(id(n), "function")
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                for n in ast.walk(child):
                    out[id(n)] = "type"
    return out


def read_imports(name: str, sources: Mapping[str, str], *, all_kinds: bool = True) -> list[Import]:
    """Every import in a module, of every kind (or the runtime ones only), absolute or relative.

    ``from a.b import c`` is an import of ``a.b`` and, where ``a.b.c`` is a module, of it too.
    """
    tree = ast.parse(sources[name])
    kinds = _kinds(tree)
    package = name if name in packages(sources) else name.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        kind = kinds.get(id(node), "module")
        if not all_kinds and kind == "type":
            continue
        if isinstance(node, ast.Import):
            out += [Import(name, a.name, node.lineno, (), kind) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([node.module] if node.module else []))
            names = tuple(a.name for a in node.names)
            out.append(Import(name, base, node.lineno, names, kind))
            out += [
                Import(name, f"{base}.{n}", node.lineno, (), kind) for n in names if f"{base}.{n}" in sources
            ]
    return out


def room(name: str, sources: Mapping[str, str]) -> str:
    """The room of a module, without the ``jarenlab.`` prefix (the root package is ``jarenlab``)."""
    if name == "jarenlab":
        return "jarenlab"
    folder = name if name in packages(sources) else name.rpartition(".")[0]
    short = (folder if folder != "jarenlab" else name).removeprefix("jarenlab.")
    return short


def floors() -> dict[str, int]:
    return {r: i for i, floor in enumerate(FLOORS) for r in floor}


def _excepted(importer: str, target: str) -> bool:
    return any(importer == a and target == b for a, b, _ in EXCEPTIONS)


def order_violations(sources: Mapping[str, str]) -> list[str]:
    """Every arrow from a room to a room on its own floor or above that is not an exception."""
    level = floors()
    found = []
    for name in sources:
        mine = room(name, sources)
        for imp in read_imports(name, sources):
            if imp.target not in sources or imp.target == name or name.startswith(imp.target + "."):
                continue
            theirs = room(imp.target, sources)
            if theirs == mine or _excepted(name, imp.target):
                continue
            if theirs not in level or mine not in level or level[theirs] >= level[mine]:
                found.append(
                    f"{name}:{imp.line} imports {imp.target} ({imp.kind}): room {mine} "
                    f"(floor {level.get(mine)}) may not reach room {theirs} (floor {level.get(theirs)})"
                )
    return sorted(set(found))


def graph(sources: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """module -> {imported module: how}, with the package ``__init__`` files an import runs."""
    out: dict[str, dict[str, str]] = {}
    for name in sources:
        own = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 2)}
        arrows: dict[str, str] = {}
        for imp in read_imports(name, sources):
            parts = imp.target.split(".")
            for i in range(1, len(parts) + 1):
                target = ".".join(parts[:i])
                if target not in sources or target in own or _excepted(name, target):
                    continue
                how = f"{imp.kind}, line {imp.line}" if target == imp.target else f"runs {target}.__init__"
                arrows.setdefault(target, how)
        out[name] = arrows
    return out


def cycles(sources: Mapping[str, str]) -> list[str]:
    """Each import cycle found, as the chain that closes it (each arrow says how it imports)."""
    arrows = graph(sources)
    found: list[str] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def chain(path: Iterable[str]) -> str:
        path = list(path)
        return path[0] + "".join(f" -[{arrows[a][b]}]-> {b}" for a, b in itertools.pairwise(path))

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(arrows[node]):
            if state.get(nxt) == 1:
                found.append(chain([*stack[stack.index(nxt) :], nxt]))
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(arrows):
        if node not in state:
            visit(node)
    return found


def render_floors() -> str:
    """The order of rooms as ``docs/architecture.md`` shows it (a test holds the two equal)."""
    lines = ["| floor | rooms |", "|---|---|"]
    lines += [f"| {i} | {', '.join(f'`{r}`' for r in floor)} |" for i, floor in enumerate(FLOORS)]
    return "\n".join(lines)


def render_exceptions() -> str:
    """The exception list as ``docs/architecture.md`` shows it (a test holds the two equal)."""
    short = {a: a.removeprefix("jarenlab.") for a, _, _ in EXCEPTIONS}
    return "\n".join(
        f"- `{short[a]}` -> `{b.removeprefix('jarenlab.')}`: {reason}" for a, b, reason in EXCEPTIONS
    )
