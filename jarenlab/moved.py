"""Module paths that moved when the query room was arranged by role, and where they went.

``import jarenlab.query.run`` (the path ``docs/planner.md`` once gave for ``operator``) still works:
it gives the module at its new path, with a ``FutureWarning`` naming that path. The old paths go
in a later version; new code imports from the new ones.

>>> import warnings
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     import jarenlab.query.run as old
>>> import jarenlab.query.planner.run as new
>>> old is new, caught[0].category.__name__
(True, 'FutureWarning')
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
import types
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from importlib.abc import Loader

#: The old dotted path of each moved module, and its new one.
MOVED: dict[str, str] = {
    "jarenlab.pages": "jarenlab.query.planner.pages",
    "jarenlab.relations.declare": "jarenlab.model.relations",
    "jarenlab.relations.load": "jarenlab.query.loads.plan",
    "jarenlab.relations.load_sql": "jarenlab.query.loads.sql",
    "jarenlab.relations.loading": "jarenlab.query.loads.run",
    **{
        f"jarenlab.query.{old}": f"jarenlab.query.{new}"
        for old, new in {
            "builder": "build.builder",
            "dt": "build.date_accessor",
            "expr": "build.expr",
            "habits": "build.habits",
            "join_builder": "build.joins",
            "series_builder": "build.rolling",
            "join_asof": "joins.asof",
            "join_explain": "joins.explain",
            "join_plan": "joins.plan",
            "join_run": "joins.run",
            "join_sql": "joins.sql",
            "cache": "planner.cache",
            "decode": "planner.decode",
            "diagnose": "planner.diagnose",
            "explain": "planner.explain",
            "keyed": "planner.keyed",
            "plan": "planner.plan",
            "plan_tree": "planner.tree",
            "preds": "planner.preds",
            "profile": "planner.profile",
            "residual": "planner.residual",
            "run": "planner.run",
            "sql": "planner.sql",
            "translate": "planner.translate",
            **{m: f"lang.{m}" for m in ("compare", "dates", "document", "engine", "flwor", "functions")},
            **{m: f"lang.{m}" for m in ("iregexp", "path", "series", "values", "windows")},
        }.items()
    },
}


class MovedFinder:
    """Finds a moved module's old path and gives the module at its new one (with a warning).

    A finder and loader by the import system's protocol (``find_spec``, ``create_module``,
    ``exec_module``); it does not derive from ``importlib.abc``, whose import costs 18 ms.
    """

    def __init__(self) -> None:
        #: The new module's own spec, kept while the import system puts the old path's on it.
        self.specs: dict[str, importlib.machinery.ModuleSpec | None] = {}

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        return importlib.machinery.ModuleSpec(fullname, cast("Loader", self)) if fullname in MOVED else None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        new = MOVED[spec.name]
        warnings.warn(
            f"{spec.name} moved to {new}: import it from there (the old path goes in a later version)",
            FutureWarning,
            stacklevel=2,
        )
        module = importlib.import_module(new)
        self.specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        """The module at the new path is loaded already: give it back its own spec and loader (the
        import system set this finder's on it)."""
        real = self.specs.pop(module.__spec__.name if module.__spec__ else "", None)
        if real is not None:
            module.__spec__, module.__loader__ = real, real.loader


def install() -> None:
    """Let the old paths import (once per interpreter)."""
    if not any(isinstance(f, MovedFinder) for f in sys.meta_path):
        sys.meta_path.append(MovedFinder())
