"""JSON Pointer (RFC 6901) tokens: the one place ``~`` and ``/`` are escaped and unescaped.

Model errors, query errors, patches and the change log all name places with pointers; they share
these helpers so a member named ``a/b`` is written and read back the same way everywhere.

>>> join("/collections", "a/b~c")
'/collections/a~1b~0c'
>>> unescape("a~1b~0c")
'a/b~c'
"""

from __future__ import annotations

from typing import Any


def escape(token: Any) -> str:
    """One reference token: ``~`` becomes ``~0`` and ``/`` becomes ``~1``.

    >>> escape("a/b")
    'a~1b'
    """
    return str(token).replace("~", "~0").replace("/", "~1")


def unescape(token: str) -> str:
    """Undo :func:`escape` (``~1`` first, so ``~01`` reads back as ``~1``).

    >>> unescape("~01")
    '~1'
    """
    return token.replace("~1", "/").replace("~0", "~")


def join(base: str, token: Any) -> str:
    """``base`` extended by one escaped token.

    >>> join("/$for", 0)
    '/$for/0'
    """
    return f"{base}/{escape(token)}"
