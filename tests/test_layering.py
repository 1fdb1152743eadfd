"""The layering of the house, checked on the source and on real imports.

- Every room (a folder; a top-level module) is on one floor of :data:`layers.FLOORS`, and imports only
  its own room and lower floors, counting every import: module-level, inside functions, and under
  ``TYPE_CHECKING``; the arrows against the order are named in :data:`layers.EXCEPTIONS`, each with
  its reason, and each is still there.
- No import cycle between jarenlab's modules, of any kind, counting the package ``__init__`` an
  import runs.
- Planted violations of each kind are caught (the checks can fail).
- Only ``jarenlab/backends/`` imports a database driver, writes SQL text or issues transaction control
  (the planner's emitter, ``query/planner/sql.py``, spells every construct through the backend's dialect).
- Only ``jarenlab/backends/`` names a backend in code (a registered backend's name, or a target's
  scheme, as a string of its own): the rest reads what it needs from the backend or its registry
  entry, so adding a backend touches nothing outside ``backends/``.
- ``import jarenlab`` loads no ipywidgets; the reference engine loads no driver and no store; a small
  module of a subsystem loads neither the store nor pandas.
- No module imports another module's private names.
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.layers import (
    EXCEPTIONS,
    FLOORS,
    ROOT,
    cycles,
    floors,
    modules,
    order_violations,
    read_imports,
    render_exceptions,
    render_floors,
    room,
)

SOURCES = modules()
MODULES = {name: ROOT.parent / (name.replace(".", "/") + ".py") for name in SOURCES}
MODULES = {
    name: path if path.exists() else path.with_suffix("") / "__init__.py" for name, path in MODULES.items()
}
DRIVERS = ("sqlite3", "psycopg", "psycopg_pool")
SQL = re.compile(
    r"^\s*(SELECT\s.+\sFROM\s|INSERT\s+INTO\s|UPDATE\s+\S+\s+SET\s|DELETE\s+FROM\s|CREATE\s+(UNIQUE\s+)?"
    r"(TABLE|INDEX)\s|BEGIN(\s+IMMEDIATE)?\s*$|COMMIT\s*$|ROLLBACK|SAVEPOINT\s|RELEASE\s|PRAGMA\s)",
    re.S,  # keywords in capitals, as every statement here is written (a progress label is not SQL)
)


def in_backends(name: str) -> bool:
    return name == "jarenlab.backends" or name.startswith("jarenlab.backends.")


def imports(name: str) -> list[tuple[str, int, list[str]]]:
    """(imported module, line, imported names) for every import in a module, of every kind."""
    return [(i.target, i.line, list(i.names)) for i in read_imports(name, SOURCES)]


def test_every_room_is_on_exactly_one_floor() -> None:
    placed = [r for floor in FLOORS for r in floor]
    rooms = {room(name, SOURCES) for name in SOURCES}
    assert sorted(r for r in set(placed) if placed.count(r) > 1) == []
    assert sorted(rooms - set(placed)) == [], "a new folder needs its floor in tests/layers.py"
    assert sorted(set(placed) - rooms) == [], "a floor names a room that is gone"


def test_no_import_goes_against_the_order_of_floors() -> None:
    assert order_violations(SOURCES) == []


def test_no_import_cycles_of_any_kind() -> None:
    assert cycles(SOURCES) == []


def test_every_exception_is_an_arrow_that_exists() -> None:
    arrows = {(name, i.target) for name in SOURCES for i in read_imports(name, SOURCES)}
    stale = [f"{a} -> {b}" for a, b, _ in EXCEPTIONS if (a, b) not in arrows]
    assert stale == [], "an exception no import needs any more: remove it from tests/layers.py"
    assert all(reason for _, _, reason in EXCEPTIONS)


def test_the_architecture_page_shows_the_order_and_the_exceptions() -> None:
    page = (ROOT.parent / "docs" / "architecture.md").read_text("utf-8")
    assert render_floors() in page, "docs/architecture.md: paste tests/layers.py's render_floors()"
    assert render_exceptions() in page, "docs/architecture.md: paste tests/layers.py's render_exceptions()"


#: Violations planted into a copy of the sources: (module, text appended or the new module's text,
#: which check must catch it). Each kind of import, each kind of arrow.
PLANTS = [
    ("jarenlab.query.lang.path", "from jarenlab.query.planner import run\n", "order"),
    ("jarenlab.query.lang.path", "def f():\n    from jarenlab.store import Store\n", "order"),
    ("jarenlab.query.planner.plan", "if TYPE_CHECKING:\n    from jarenlab.store import Store\n", "order"),
    ("jarenlab.query.lang.values", "import jarenlab.jobs.api\n", "order"),
    ("jarenlab.query.lang.values", "from ..planner.run import run_query\n", "order"),
    ("jarenlab.query.lang.path", "from jarenlab import store\n", "order"),
    ("jarenlab.jobs.queue", "from jarenlab.events.ledger import Events\n", "order"),  # siblings
    ("jarenlab.query", "from jarenlab.query.planner.run import run_query\n", "order"),  # a package face
    ("jarenlab.store", "from jarenlab.jobs.api import Jobs\n", "cycle"),  # store -> jobs.api -> store
    ("jarenlab.query.lang.planted_a", "from jarenlab.query.lang.planted_b import x\n", "cycle"),
    ("jarenlab.query.lang.planted_b", "def f():\n    from jarenlab.query.lang import planted_a\n", "cycle"),
    (
        "jarenlab.query.lang.compiled",
        "if TYPE_CHECKING:\n    from jarenlab.query.lang.engine import Compiler\n",
        "cycle",
    ),
    ("jarenlab.planted.things", "from jarenlab.errors import QueryError\n", "room"),
]


def _planted(module: str, text: str) -> dict[str, str]:
    sources = dict(SOURCES)
    sources[module] = sources.get(module, '"""planted"""\n') + "\n" + text
    other = {  # the other half of a planted pair
        "jarenlab.query.lang.planted_a": (
            "jarenlab.query.lang.planted_b",
            "def f():\n    from . import planted_a\n",
        ),
        "jarenlab.query.lang.planted_b": ("jarenlab.query.lang.planted_a", "from .planted_b import f\n"),
    }.get(module)
    if other:
        sources[other[0]] = other[1]
    return sources


@pytest.mark.parametrize(("module", "text", "check"), PLANTS)
def test_a_planted_violation_is_caught(module: str, text: str, check: str) -> None:
    sources = _planted(module, text)
    if check == "room":
        assert room(module, sources) not in floors()
        return
    found = order_violations(sources) if check == "order" else cycles(sources)
    assert found, f"planted {text.strip()!r} in {module}: not caught"
    assert any(module in line for line in found), found
    print("\n".join(found))  # the offending chain, as a failing run shows it


def test_the_reader_sees_a_cycle_planted_in_files(tmp_path: Path) -> None:
    """A temporary module on disk: two modules of the language importing each other are a cycle."""
    copy = tmp_path / "jarenlab"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "query" / "lang" / "planted.py").write_text("from jarenlab.query.lang.engine import evaluate\n")
    engine = copy / "query" / "lang" / "engine.py"
    engine.write_text(engine.read_text("utf-8") + "\nfrom jarenlab.query.lang import planted  # noqa\n")
    found = cycles(modules(copy))
    assert any(
        "jarenlab.query.lang.planted" in line and "jarenlab.query.lang.engine" in line for line in found
    )
    assert cycles(modules(ROOT)) == []


def test_only_the_backends_import_a_driver() -> None:
    found = [
        f"{name}:{line} imports {target}"
        for name in MODULES
        if not in_backends(name)
        for target, line, _ in imports(name)
        if target.split(".")[0] in DRIVERS
    ]
    assert found == []


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def test_only_the_backends_write_sql() -> None:
    found = []
    for name, path in MODULES.items():
        if in_backends(name):
            continue
        tree = ast.parse(path.read_text("utf-8"))
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.JoinedStr):
                text = "".join(
                    v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str)
                )
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
                text = node.value
            else:
                continue
            if SQL.match(text):
                found.append(f"{name}:{node.lineno}: {text[:60]!r}")
    assert found == []


def _backend_names() -> set[str]:
    """Every registered backend's name, and the schemes of the targets they recognise."""
    from jarenlab.backends import REGISTERED, SERVER_SCHEMES

    return {entry.name for entry in REGISTERED} | {"postgres", *SERVER_SCHEMES}


def named_backends(tree: ast.AST, names: set[str]) -> list[tuple[int, str]]:
    """(line, text) of each string in code (docstrings aside) that is a backend's name: the text of
    a comparison, a default, a key or a branch on which engine runs."""
    docs = _docstrings(tree)
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docs
        and node.value.strip().lower() in names
    ]


def test_only_the_backends_name_a_backend_in_code() -> None:
    names = _backend_names()
    found = [
        f"{name}:{line}: {text!r}"
        for name, path in MODULES.items()
        if not in_backends(name)
        for line, text in named_backends(ast.parse(path.read_text("utf-8")), names)
    ]
    assert found == [], "read the fact from the backend or its registry entry (jarenlab/backends/__init__.py)"


@pytest.mark.parametrize(
    "code",
    [
        'def f(store):\n    return store.backend.name == "sqlite"\n',
        'TITLES = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}\n',
        'def f(database: str = "postgresql") -> str:\n    return database\n',
        'def f(url):\n    return url.startswith("postgresql://")\n',
    ],
)
def test_a_planted_backend_name_is_caught(code: str) -> None:
    assert named_backends(ast.parse(code), _backend_names())


def test_prose_naming_a_backend_is_not_a_branch() -> None:
    code = '"""On SQLite a file; on PostgreSQL a schema."""\nSAY = "a postgresql:// URL"\n'
    assert named_backends(ast.parse(code), _backend_names()) == []


def test_no_module_imports_another_modules_private_names() -> None:
    found = [
        f"{name}:{line} imports {target}.{n}"
        for name in MODULES
        for target, line, names in imports(name)
        if target.startswith("jarenlab")
        for n in names
        if n.startswith("_") and not n.startswith("__")
    ]
    assert found == []


def _loaded_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return set(out.split())


def test_import_jarenlab_loads_no_widgets() -> None:
    loaded = _loaded_after("import jarenlab")
    assert not {m for m in loaded if m.split(".")[0] in ("ipywidgets", "IPython", "tqdm")}


@pytest.mark.parametrize(
    "module", ["jarenlab.query.lang.engine", "jarenlab.query.lang.document", "jarenlab.query.build.builder"]
)
def test_the_reference_engine_loads_no_driver_and_no_store(module: str) -> None:
    loaded = _loaded_after(f"import {module}")
    assert not {
        m for m in loaded if m.split(".")[0] in DRIVERS or m in ("jarenlab.store", "jarenlab.backends")
    }


@pytest.mark.parametrize("module", ["jarenlab.jobs.clock", "jarenlab.events.event", "jarenlab.live.diff"])
def test_a_small_module_of_a_subsystem_loads_no_store_and_no_pandas(module: str) -> None:
    loaded = _loaded_after(f"import {module}")
    assert not {
        m for m in loaded if m in ("jarenlab.store", "pandas", "pyarrow") or m.split(".")[0] in DRIVERS
    }


def test_every_package_says_what_its_room_holds_and_may_import() -> None:
    missing = [
        name
        for name, path in MODULES.items()
        if path.name == "__init__.py"
        and "May import" not in (ast.get_docstring(ast.parse(path.read_text("utf-8"))) or "")
    ]
    assert missing == []


def _own_private_names(tree: ast.AST) -> set[str]:
    """Private names a module defines itself: functions, classes, attributes it assigns, parameters."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {n for n in names if n.startswith("_")}


def test_no_module_reaches_into_another_modules_private_attributes() -> None:
    """``other._name`` is only read where this module defines ``_name`` itself (its own objects)."""
    found = []
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text("utf-8"))
        own = _own_private_names(tree)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
                and node.attr not in own
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
            ):
                found.append(f"{name}:{node.lineno} reads .{node.attr}")
    assert found == []


def test_only_the_collection_room_reads_a_collections_table() -> None:
    """A named statement filled with a collection's table (``table=``), or one of the collection
    catalogue's, runs only in ``jarenlab/collection.py``: owner views, interval checks and every
    other room read documents through a collection's methods or the planner."""
    found = []
    for name, path in MODULES.items():
        if name == "jarenlab.collection":
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("one", "all", "value", "run", "many", "write")
            ):
                continue
            first = node.args[0] if node.args else None
            named = first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else ""
            if any(k.arg == "table" for k in node.keywords) or named.startswith("collection."):
                found.append(f"{name}:{node.lineno} runs {named or 'a statement'} on a collection's table")
    assert found == []
