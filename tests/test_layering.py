"""The layering of the house, checked on the source and on real imports.

- Only ``jarenlab/backends/`` imports a database driver, writes SQL text or issues transaction control
  (the planner's emitter, ``query/planner/sql.py``, spells every construct through the backend's dialect).
- No import cycle between jarenlab's modules, counting the imports inside functions too (the lazy
  ones that used to hide cycles); imports under ``TYPE_CHECKING`` are for types only and are skipped.
- ``import jarenlab`` loads no ipywidgets; ``import jarenlab.query.lang.engine`` loads no driver and no store.
- No module imports another module's private names.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "jarenlab"
DRIVERS = ("sqlite3", "psycopg", "psycopg_pool")
SQL = re.compile(
    r"^\s*(SELECT\s.+\sFROM\s|INSERT\s+INTO\s|UPDATE\s+\S+\s+SET\s|DELETE\s+FROM\s|CREATE\s+(UNIQUE\s+)?"
    r"(TABLE|INDEX)\s|BEGIN(\s+IMMEDIATE)?\s*$|COMMIT\s*$|ROLLBACK|SAVEPOINT\s|RELEASE\s|PRAGMA\s)",
    re.S,  # keywords in capitals, as every statement here is written (a progress label is not SQL)
)


def modules() -> dict[str, Path]:
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = modules()


def in_backends(name: str) -> bool:
    return name == "jarenlab.backends" or name.startswith("jarenlab.backends.")


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                skipped.update(id(n) for n in ast.walk(child))
    return skipped


def imports(name: str) -> list[tuple[str, int, list[str]]]:
    """(imported module, line, imported names) for every runtime import in a module."""
    tree = ast.parse(MODULES[name].read_text("utf-8"))
    skipped = _type_checking_nodes(tree)
    package = name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([node.module] if node.module else []))
            names = [a.name for a in node.names]
            out.append((base, node.lineno, names))
            out += [(f"{base}.{n}", node.lineno, []) for n in names if f"{base}.{n}" in MODULES]
    return out


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


def test_no_import_cycles() -> None:
    graph = {
        name: sorted(
            {t for t, _, _ in imports(name) if t in MODULES and t != name and not name.startswith(t + ".")}
        )
        for name in MODULES
    }
    cycles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in graph[node]:
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in graph:
        if node not in state:
            visit(node)
    assert [" -> ".join(c) for c in cycles] == []


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


def test_every_package_says_what_its_room_holds() -> None:
    missing = [
        name
        for name, path in MODULES.items()
        if path.name == "__init__.py" and not ast.get_docstring(ast.parse(path.read_text("utf-8")))
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
