"""Package faces that import nothing until a name is used (PEP 562).

A package's ``__init__`` names what the room offers; the modules behind the names load on first
use, so importing one small module of a room (``jarenlab.jobs.clock``) does not load the whole room,
the store and pandas with it.

>>> import sys
>>> __getattr__ = exports("jarenlab", {"dumps": "json"})
>>> __getattr__("dumps") is sys.modules["json"].dumps
True
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def exports(package: str, names: dict[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports ``names[name]`` and returns its attribute ``name``."""
    face = importlib.import_module(package)

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(face, name, value)
        return value

    return __getattr__


class Module:
    """A module imported when one of its attributes is first read: a heavy library (pandas,
    pyarrow) a module names at its top but needs only inside some of its functions.

    >>> json = Module("json")
    >>> json.dumps([1])
    '[1]'
    """

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self._name), attr)
