"""I-Regexp (RFC 9485) checked and translated to Python ``re``.

Only the RFC's subset is accepted: literal characters, ``.``, classes ``[...]`` (with the RFC's
grammar: ``]`` and ``[`` only escaped, ``-`` only escaped or first or last),
``\\p{..}``/``\\P{..}`` categories, groups ``(...)``, alternation and the quantifiers
``* + ? {n} {n,} {n,m}``. Backreferences, lookaround, anchors (``^``/``$`` are plain
characters in I-Regexp) and flags are refused with ``JQ0009``. As a guard against
catastrophic backtracking an unbounded quantifier may not apply to a group that itself
holds an unbounded quantifier (``(a+)+``), and counted repeats are at most 1000.

>>> compile_iregexp("[a-c]+x?").fullmatch("abba") is not None
True
>>> compile_iregexp("^a$").fullmatch("^a$") is not None
True
"""

from __future__ import annotations

import re
import sys
import unicodedata
from functools import lru_cache

from jarenlab.errors import QueryError

MAX_PATTERN = 1000
MAX_REPEAT = 1000
_SINGLE_ESC = set("()*+-.?[\\]^{|}") | {"n", "r", "t"}
_ESC_VALUE = {"n": "\n", "r": "\r", "t": "\t"}
_NOT_NORMAL = set("()*+.?[\\]{|}")
_CATEGORIES = {
    "L": "lmotu",
    "M": "cen",
    "N": "dlo",
    "P": "cdefios",
    "Z": "lps",
    "S": "ckmo",
    "C": "cfno",
}


class _Bad(Exception):
    pass


class _NoForm(_Bad):
    """A valid I-Regexp with no exact form in the target (PostgreSQL's ARE)."""


#: PostgreSQL's largest count in a bound (``RE_DUP_MAX``).
ARE_MAX_REPEAT = 255


@lru_cache(maxsize=1)
def _category_ranges() -> dict[str, list[tuple[int, int]]]:
    table: dict[str, list[tuple[int, int]]] = {}
    prev = None
    start = 0
    for cp in range(sys.maxunicode + 2):
        cat = unicodedata.category(chr(cp)) if cp <= sys.maxunicode else None
        if cat != prev:
            if prev is not None:
                table.setdefault(prev, []).append((start, cp - 1))
            prev, start = cat, cp
    return table


def _ranges_for(prop: str, negate: bool) -> list[tuple[int, int]]:
    table = _category_ranges()
    cats = [prop] if len(prop) == 2 else [prop + c for c in _CATEGORIES[prop]]
    ranges = sorted(r for c in cats for r in table.get(c, []))
    if not negate:
        return ranges
    out, nxt = [], 0
    for lo, hi in ranges:
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = max(nxt, hi + 1)
    if nxt <= sys.maxunicode:
        out.append((nxt, sys.maxunicode))
    return out


def _cls(ranges: list[tuple[int, int]]) -> str:
    return "".join(f"\\U{lo:08x}" if lo == hi else f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in ranges)


class _Translator:
    """The parser, writing Python ``re`` text, or PostgreSQL ARE text (``are``). The two agree
    except where spelled apart here: an ARE writes a literal that is not an ASCII letter or digit
    as its code point (``\\U0000002e``), has no category and counts at most 255; ``.`` is
    ``[^\\n\\r]``, a group ``(?:...)`` and a class's characters ``\\U`` escapes in both."""

    def __init__(self, pattern: str, *, are: bool = False) -> None:
        self.s = pattern
        self.i = 0
        self.are = are

    def literal(self, c: str) -> str:
        if not self.are:
            return re.escape(c)
        return c if c.isascii() and c.isalnum() else f"\\U{ord(c):08x}"

    def peek(self) -> str:
        return self.s[self.i] if self.i < len(self.s) else ""

    def regexp(self) -> tuple[str, bool]:
        parts = [self.branch()]
        while self.peek() == "|":
            self.i += 1
            parts.append(self.branch())
        return "|".join(p for p, _ in parts), any(u for _, u in parts)

    def branch(self) -> tuple[str, bool]:
        out, unbounded = [], False
        while self.peek() not in ("", "|", ")"):
            text, u = self.piece()
            out.append(text)
            unbounded = unbounded or u
        return "".join(out), unbounded

    def piece(self) -> tuple[str, bool]:
        atom, inner = self.atom()
        c = self.peek()
        if c in ("*", "+", "?"):
            self.i += 1
            quant, unbounded = c, c != "?"
        elif c == "{":
            quant, unbounded = self.counted()
        else:
            return atom, inner
        if unbounded and inner:
            raise _Bad("nested unbounded quantifiers can take exponential time")
        return atom + quant, unbounded or inner

    def counted(self) -> tuple[str, bool]:
        m = re.compile(r"\{([0-9]+)(,([0-9]*))?\}").match(self.s, self.i)
        if not m:
            raise _Bad(f"bad counted quantifier at offset {self.i}")
        self.i = m.end()
        lo = int(m.group(1))
        hi = m.group(3)
        if lo > MAX_REPEAT or (hi and int(hi) > MAX_REPEAT):
            raise _Bad(f"counted quantifiers are limited to {MAX_REPEAT}")
        if hi and int(hi) < lo:
            raise _Bad("a counted quantifier's maximum is below its minimum")
        if self.are and max(lo, int(hi or 0)) > ARE_MAX_REPEAT:
            raise _NoForm(f"a count above {ARE_MAX_REPEAT} (the most a PostgreSQL bound takes)")
        return m.group(0), m.group(2) is not None and not hi

    def atom(self) -> tuple[str, bool]:
        c = self.peek()
        self.i += 1
        if c == "(":
            if self.peek() == "?":
                raise _Bad("group extensions such as lookaround '(?' are not I-Regexp")
            body, unbounded = self.regexp()
            if self.peek() != ")":
                raise _Bad("unbalanced '('")
            self.i += 1
            return f"(?:{body})", unbounded
        if c == ".":
            return "[^\\n\\r]", False
        if c == "[":
            return self.char_class(), False
        if c == "\\":
            return self.escape(in_class=False), False
        if c in _NOT_NORMAL or "\ud800" <= c <= "\udfff":
            raise _Bad(f"unexpected {c!r} at offset {self.i - 1}")
        return self.literal(c), False

    def escape(self, *, in_class: bool) -> str:
        c = self.peek()
        self.i += 1
        if c in ("p", "P"):
            m = re.compile(r"\{([LMNPZSC])([a-z]?)\}").match(self.s, self.i)
            if not m or (m.group(2) and m.group(2) not in _CATEGORIES[m.group(1)]):
                raise _Bad(f"bad category escape at offset {self.i - 2}")
            self.i = m.end()
            if self.are:
                raise _NoForm("a character category \\p{..} (an ARE has no Unicode categories)")
            body = _cls(_ranges_for(m.group(1) + m.group(2), c == "P"))
            return body if in_class else f"[{body}]"
        if c not in _SINGLE_ESC:
            raise _Bad(f"escape \\{c} is not I-Regexp (no backreferences, \\d, \\w, \\b ...)")
        ch = _ESC_VALUE.get(c, c)
        return f"\\U{ord(ch):08x}" if in_class else self.literal(ch)

    def class_char(self) -> int | str:
        c = self.peek()
        if c == "":
            raise _Bad("unterminated '['")
        self.i += 1
        if c == "\\":
            if self.peek() in ("p", "P"):
                return self.escape(in_class=True)
            esc = self.peek()
            if esc not in _SINGLE_ESC:
                raise _Bad(f"escape \\{esc} is not I-Regexp")
            self.i += 1
            return ord(_ESC_VALUE.get(esc, esc))
        if c in "[]-":
            raise _Bad(f"{c!r} inside a class must be escaped (a '-' may come first or last)")
        if "\ud800" <= c <= "\udfff":
            raise _Bad(f"unexpected surrogate {c!r} in a class")
        return ord(c)

    def char_class(self) -> str:
        """A class, with RFC 9485's grammar (``[]a]`` and ``[a-b-c]`` are refused, not read as Python would).

        ``[`` ``^``? (``-`` or an item) items ``-``? ``]``, where an item is a character, a range
        ``a-z`` or a category escape: ``]`` is literal only escaped, ``-`` only escaped or first or last.
        """
        negate = self.peek() == "^"
        if negate:
            self.i += 1
        parts = []
        if self.peek() == "-":
            self.i += 1
            parts.append(_cls([(0x2D, 0x2D)]))
        while self.peek() != "]":
            if self.peek() == "-" and self.s[self.i + 1 : self.i + 2] == "]":
                self.i += 1
                parts.append(_cls([(0x2D, 0x2D)]))
                break
            lo = self.class_char()
            if isinstance(lo, str):
                parts.append(lo)
                continue
            if self.peek() == "-" and self.s[self.i + 1 : self.i + 2] not in ("]", ""):
                self.i += 1
                hi = self.class_char()
                if isinstance(hi, str) or hi < lo:
                    raise _Bad("bad character range")
                parts.append(_cls([(lo, hi)]))
            else:
                parts.append(_cls([(lo, lo)]))
        if not parts:
            raise _Bad("an empty class (a ']' inside a class must be escaped)")
        self.i += 1
        return "[" + ("^" if negate else "") + "".join(parts) + "]"


def translate(pattern: str) -> str:
    """The Python ``re`` text for an I-Regexp pattern (raises ``ValueError`` outside the subset).

    >>> translate("a.b")
    'a[^\\\\n\\\\r]b'
    """
    if len(pattern) > MAX_PATTERN:
        raise ValueError(f"patterns are limited to {MAX_PATTERN} characters")
    t = _Translator(pattern)
    try:
        text, _ = t.regexp()
        if t.i != len(pattern):
            raise _Bad(f"unbalanced ')' at offset {t.i}")
    except _Bad as exc:
        raise ValueError(str(exc)) from None
    return text


def are(pattern: str, full: bool) -> str:
    """PostgreSQL's ARE (advanced regular expression) that matches exactly the strings the
    I-Regexp does, whole (``full``: ``$match``, anchored) or in part (``$search``), for a pattern
    the engine accepts; ``ValueError`` where there is none (a category ``\\p{..}``, a count above
    255). Code points compare as in Python where the database's encoding is UTF-8 (PostgreSQL
    reads ``\\U`` escapes as code points), and an ARE without embedded options is
    case-sensitive, with ``.`` and negated classes crossing line ends, ``^``/``$`` anchoring the
    whole string only.

    >>> are("a.b", True), are("[^a-c]+", False)
    ('^(?:a[^\\\\n\\\\r]b)$', '[^\\\\U00000061-\\\\U00000063]+')
    >>> are("\\\\p{Lu}", True)
    Traceback (most recent call last):
    ...
    ValueError: a character category \\p{..} (an ARE has no Unicode categories)
    """
    t = _Translator(pattern, are=True)
    try:
        text, _ = t.regexp()
    except _Bad as exc:
        raise ValueError(str(exc)) from None
    return f"^(?:{text})$" if full else text


@lru_cache(maxsize=256)
def compile_iregexp(pattern: str) -> re.Pattern[str]:
    """Compile an I-Regexp pattern, cached (``ValueError`` outside the subset).

    >>> compile_iregexp("\\\\p{Lu}+").fullmatch("ÀB") is not None
    True
    """
    return re.compile(translate(pattern))


def check_pattern(pattern: str, doc_path: str) -> re.Pattern[str]:
    """Compile a pattern or raise ``JQ0009`` at ``doc_path``.

    >>> check_pattern("(a+)+", "/p")
    Traceback (most recent call last):
    ...
    jarenlab.errors.QueryError: JQ0009 bad_regex: nested unbounded quantifiers can take exponential time (at /p)
    """
    try:
        return compile_iregexp(pattern)
    except ValueError as exc:
        raise QueryError("JQ0009", str(exc), doc_path=doc_path) from None
