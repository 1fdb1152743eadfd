"""SQLite's JSON path syntax: the one builder of the path text ``json_extract`` and ``json_type`` read.

Members are always double-quoted (``$."a"``), so a member name never has to be a plain identifier;
array indexes are written ``[n]``.
"""

from __future__ import annotations


def json_path(segments: tuple[str | int, ...]) -> str:
    """The SQLite JSON path of a member, from its parsed segments.

    >>> json_path(("a", 0, "odd key"))
    '$."a"[0]."odd key"'
    """
    out = "$"
    for seg in segments:
        out += f"[{seg}]" if isinstance(seg, int) else f'."{seg}"'
    return out
