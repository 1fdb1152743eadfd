"""Path and variable strings: ``$``, ``$.a['b'][0]``, ``$x``, ``$x[*].y``.

A path starts at the root ``$`` or at a variable ``$name`` and applies RFC 9535 segments, with
RFC 9535's grammar for each: ``.name`` (member-name shorthand), ``['name']`` / ``["name"]``
(string literals with their escapes), ``[index]`` (an integer within ±(2^53-1), negative counts
from the end, no ``-0`` or leading zeros) and ``[*]`` / ``.*``; blank space (space, tab, line
feed, carriage return) may separate segments and surround a bracketed selector. Filters,
descendants, slices and unions (valid RFC 9535, not supported) are refused with ``JQ0008``;
anything RFC 9535 itself refuses (control characters or unpaired surrogates in a name, an escape
of the other quote, a bad escape, ``-0``, an out-of-range index) is ``JQ0004``.

>>> p = parse_path("$x['odd key'][0]", "/")
>>> p.var, p.steps
('x', (('member', 'odd key'), ('index', 0)))
>>> path_text(p.var, p.steps)
"$x['odd key'][0]"
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from jarenlab.errors import QueryError

Step = tuple[str, object]

VAR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_VAR_PREFIX = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SHORTHAND = re.compile(r"[A-Za-z_\u0080-\ud7ff\ue000-\U0010ffff][A-Za-z0-9_\u0080-\ud7ff\ue000-\U0010ffff]*")
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")
_INDEX = re.compile(r"0|-?[1-9][0-9]*")
#: RFC 9535 indexes are I-JSON integers: at most 2^53 - 1 in magnitude.
MAX_INDEX = 2**53 - 1
_BLANK = " \t\n\r"
#: escapes valid in both kinds of string literal; each quote escapes only itself.
_ESCAPES = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "/": "/", "\\": "\\"}


@dataclass(frozen=True, slots=True)
class ParsedPath:
    """A parsed path: ``var`` is ``None`` for the root ``$``."""

    var: str | None
    steps: tuple[Step, ...]


def parse_path(text: str, doc_path: str) -> ParsedPath:
    """Parse a ``$``-string into a variable (or root) and its steps.

    >>> parse_path("$.a.*", "/").steps
    (('member', 'a'), ('wild', None))
    """
    assert text.startswith("$")
    i = 1
    var = None
    m = _VAR_PREFIX.match(text, i)
    if m:
        var = m.group()
        i = m.end()
    elif i < len(text) and text[i] not in ".[" + _BLANK:
        raise QueryError(
            "JQ0004", f"cannot parse path {text!r}: expected a variable name, '.' or '['", doc_path=doc_path
        )
    steps: list[Step] = []
    n = len(text)
    while i < n:
        j = i
        while j < n and text[j] in _BLANK:
            j += 1
        if j > i:
            if j == n:
                raise QueryError(
                    "JQ0004", f"cannot parse path {text!r}: blank space at the end", doc_path=doc_path
                )
            i = j
        c = text[i]
        if text.startswith("..", i):
            raise _unsupported(text, "descendant segments '..'", doc_path)
        if c == ".":
            i += 1
            if i < n and text[i] == "*":
                steps.append(("wild", None))
                i += 1
                continue
            m = _SHORTHAND.match(text, i)
            if not m:
                raise QueryError(
                    "JQ0004",
                    f"cannot parse path {text!r} at offset {i}: expected a member name",
                    doc_path=doc_path,
                )
            steps.append(("member", m.group()))
            i = m.end()
        elif c == "[":
            i = _bracket(text, i + 1, steps, doc_path)
        else:
            raise QueryError(
                "JQ0004", f"cannot parse path {text!r} at offset {i}: unexpected {c!r}", doc_path=doc_path
            )
    return ParsedPath(var, tuple(steps))


def _bracket(text: str, i: int, steps: list[Step], doc_path: str) -> int:
    n = len(text)
    while i < n and text[i] in _BLANK:
        i += 1
    if i >= n:
        raise QueryError("JQ0004", f"unterminated '[' in path {text!r}", doc_path=doc_path)
    c = text[i]
    if c == "?":
        raise _unsupported(text, "filter selectors '[?...]' (use $where)", doc_path)
    if c == "*":
        steps.append(("wild", None))
        i += 1
    elif c in "'\"":
        name, i = _quoted(text, i, doc_path)
        steps.append(("member", name))
    else:
        m = _INDEX.match(text, i)
        if m:
            digits = m.group()
            if len(digits.lstrip("-")) > len(str(MAX_INDEX)) or abs(int(digits)) > MAX_INDEX:
                raise QueryError(
                    "JQ0004", f"index {digits} in path {text!r} is beyond ±(2^53-1)", doc_path=doc_path
                )
            steps.append(("index", int(digits)))
            i = m.end()
        elif text.startswith("-0", i):
            raise QueryError("JQ0004", f"-0 is not an index (path {text!r})", doc_path=doc_path)
        elif c != ":":
            raise QueryError(
                "JQ0004", f"cannot parse path {text!r} at offset {i}: bad selector", doc_path=doc_path
            )
    while i < n and text[i] in _BLANK:
        i += 1
    if i < n and text[i] == ":":
        raise _unsupported(text, "slice selectors (use $subsequence)", doc_path)
    if i < n and text[i] == ",":
        raise _unsupported(text, "union selectors (use $seq)", doc_path)
    if i >= n or text[i] != "]":
        raise QueryError(
            "JQ0004", f"cannot parse path {text!r}: expected ']' at offset {i}", doc_path=doc_path
        )
    return i + 1


def _quoted(text: str, i: int, doc_path: str) -> tuple[str, int]:
    """An RFC 9535 string literal starting at ``text[i]`` (its quote); returns (name, end)."""
    quote = text[i]
    i += 1
    out: list[str] = []
    n = len(text)

    def bad(what: str) -> QueryError:
        return QueryError("JQ0004", f"{what} in a quoted name in path {text!r}", doc_path=doc_path)

    while i < n:
        c = text[i]
        if c == quote:
            return "".join(out), i + 1
        if c == "\\":
            if i + 1 >= n:
                break
            e = text[i + 1]
            if e == "u":
                cp = _hex4(text, i + 2)
                if cp < 0:
                    raise bad("a \\u escape without four hex digits")
                i += 6
                if 0xD800 <= cp < 0xDC00:
                    low = _hex4(text, i + 2) if text.startswith("\\u", i) else -1
                    if not 0xDC00 <= low < 0xE000:
                        raise bad(f"an unpaired surrogate \\u{cp:04X}")
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00)
                    i += 6
                elif 0xDC00 <= cp < 0xE000:
                    raise bad(f"an unpaired surrogate \\u{cp:04X}")
                out.append(chr(cp))
                continue
            if e == quote:
                out.append(e)
            elif e in _ESCAPES:
                out.append(_ESCAPES[e])
            else:
                raise bad(
                    f"the escape \\{e}" + (" (only the enclosing quote is escaped)" if e in "'\"" else "")
                )
            i += 2
            continue
        if c < " ":
            raise bad(f"the control character U+{ord(c):04X} (write it as an escape)")
        if "\ud800" <= c <= "\udfff":
            raise bad(f"the unpaired surrogate U+{ord(c):04X}")
        out.append(c)
        i += 1
    raise QueryError("JQ0004", f"unterminated quoted name in path {text!r}", doc_path=doc_path)


def _hex4(text: str, i: int) -> int:
    """The value of four hex digits at ``text[i:]``, or -1 when there are not four."""
    code = text[i : i + 4]
    return int(code, 16) if _HEX4.fullmatch(code) else -1


def _unsupported(text: str, what: str, doc_path: str) -> QueryError:
    return QueryError(
        "JQ0008", f"path {text!r} uses {what}, which the query language does not support", doc_path=doc_path
    )


def sql_addressable(name: str) -> bool:
    """Whether a member name may be spelled in a SQL JSON path: the one rule for index paths,
    interval pointers and the planner (which leaves any other member to the engine, so the answer
    stays the engine's).

    Refused: the empty name; ``"``, ``'`` and ``\\`` (they would end or escape the quoted path, or
    the SQL string a generated column holds it in); and every character that is not printable:
    control characters (stored JSON text escapes them, so a raw one in a path never matches),
    unpaired surrogates (they have no UTF-8 form), format and other invisible characters.

    >>> sql_addressable("odd key"), sql_addressable("é"), sql_addressable("a\\nb"), sql_addressable("it's")
    (True, True, False, False)
    """
    return bool(name) and name.isprintable() and not any(c in name for c in "\"'\\")


def path_text(var: str | None, steps: tuple[Step, ...]) -> str:
    """The canonical text of a path: shorthand members where possible.

    >>> path_text(None, (("member", "a b"), ("wild", None)))
    "$['a b'][*]"
    """
    parts = ["$", var or ""]
    for kind, arg in steps:
        if kind == "member":
            name = str(arg)
            if _SHORTHAND.fullmatch(name):
                parts.append("." + name)
            else:
                parts.append("['" + _escape(name) + "']")
        elif kind == "index":
            parts.append(f"[{arg}]")
        else:
            parts.append("[*]")
    return "".join(parts)


def _escape(name: str) -> str:
    out = []
    for c in name:
        if c in "\\'":
            out.append("\\" + c)
        elif ord(c) < 0x20:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(c)
    return "".join(out)
