"""JSON Pointer (RFC 6901): the one place pointers are checked, split, escaped and unescaped.

Model errors, query errors, patches and the change log all name places with pointers; they share
these helpers so a member named ``a/b`` is written and read back the same way everywhere.

>>> join("/collections", "a/b~c")
'/collections/a~1b~0c'
>>> unescape("a~1b~0c")
'a/b~c'
>>> problem("/a~2"), split("/a~1b/0")
("'/a~2' has a '~' not followed by '0' or '1'", ['a/b', '0'])
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

_BAD_TILDE = re.compile(r"~(?![01])")
_ARRAY_INDEX = re.compile(r"(?:0|[1-9][0-9]*)\Z")


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


def of(tokens: Iterable[Any]) -> str:
    """The pointer of a list of tokens, each escaped.

    >>> of(["a/b", 0]), of([])
    ('/a~1b/0', '')
    """
    return "".join(join("", t) for t in tokens)


def problem(text: Any) -> str | None:
    """Why ``text`` is not a JSON Pointer, or None when it is: the empty string or ``/`` tokens,
    where a ``~`` is always followed by ``0`` or ``1`` (RFC 6901 section 3).

    >>> problem(""), problem("/"), problem("/m~0n"), problem("a")
    (None, None, None, "'a' does not start with '/'")
    """
    if not isinstance(text, str):
        return f"{text!r} is not a string"
    if text and not text.startswith("/"):
        return f"{text!r} does not start with '/'"
    if _BAD_TILDE.search(text):
        return f"{text!r} has a '~' not followed by '0' or '1'"
    return None


def split(text: str) -> list[str]:
    """The unescaped reference tokens of a pointer (check it with :func:`problem` first).

    >>> split(""), split("/"), split("/a~1b/~01")
    ([], [''], ['a/b', '~1'])
    """
    return [unescape(t) for t in text.split("/")[1:]]


def is_array_index(token: str) -> bool:
    """Whether a token names an array element (RFC 6901 section 4): ASCII digits without leading
    zeros. ``-`` (past the end) is for the caller to allow.

    >>> is_array_index("0"), is_array_index("10"), is_array_index("01"), is_array_index("٣")
    (True, True, False, False)
    """
    return _ARRAY_INDEX.match(token) is not None
