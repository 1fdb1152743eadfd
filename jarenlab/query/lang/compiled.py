"""What compiled query parts are: functions of an environment, and the compiler that makes them.

The engine compiles each node of a document once into a closure over the environment (the bound
variables). The modules that compile their own nodes (FLWOR, windows, series) name the compiler by
this protocol, so they need not import the engine that calls them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

Env = dict[str, Any]
SeqFn = Callable[[Env], list[Any]]
BoolFn = Callable[[Env], bool]
ItemPredMaker = Callable[[Env], Callable[[Any], bool]]


class Compiling(Protocol):
    """The compiler as the node modules use it (:class:`jarenlab.query.lang.engine.Compiler`)."""

    #: Whether step or sequence-size limits are set (the fast paths that skip counting are off).
    limited: bool

    def seq(self, node: Any) -> SeqFn:
        """A node as a function of the environment giving its sequence."""
        ...

    def bool(self, node: Any) -> BoolFn:
        """A node as a function of the environment giving its effective boolean value."""
        ...

    def item_pred(self, node: Any, var: str) -> ItemPredMaker | None:
        """A ``$where`` over one variable as a per-item test, when its shape allows one."""
        ...

    def too_many(self, n: int, where: str) -> None:
        """Refuse a sequence of ``n`` items beyond the sequence limit."""
        ...
