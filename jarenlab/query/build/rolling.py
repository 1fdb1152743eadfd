"""The builder's time series: the ``$rolling`` and ``$resample`` specs that :meth:`Query.rolling`
and :meth:`Query.resample` build (see :mod:`jarenlab.query.lang.series` for what they compute).

>>> from jarenlab.query.build.expr import agg, it
>>> rolling_spec("$[*]", it.t, "P7D", it.o, {"avg7": agg.avg(it.x)})
{'$rolling': {'it': '$[*]', '$time': '$it.t', '$width': 'P7D', '$partition': ['$it.o'], '$compute': {'avg7': {'$avg': ['$it.x']}}}}
>>> resample_spec("$[*]", it.t, "PT1H", it.o, None, 0, {"n": agg.count()})["$resample"]["$by"]
{'o': '$it.o'}
"""

from __future__ import annotations

from typing import Any

from jarenlab.errors import QueryError
from jarenlab.query.build.expr import Expr, lit
from jarenlab.query.lang.path import parse_path
from jarenlab.query.lang.series import DEFAULT_AS, FILLS, SERIES_FUNCTIONS


def _expr(value: Any, what: str) -> Any:
    if not isinstance(value, Expr):
        raise QueryError(
            "JQ0021", f"{what} takes an expression built from it/param (e.g. it.time_hour), not {value!r}"
        )
    return value.document


def member_name(value: Any) -> str | None:
    """The member an ``it.<name>`` expression reads, or None for anything else.

    >>> from jarenlab.query.build.expr import it
    >>> member_name(it.time_hour), member_name(it.a.b), member_name(it.a + 1)
    ('time_hour', None, None)
    """
    doc = value.document if isinstance(value, Expr) else None
    if type(doc) is not str or not doc.startswith("$it"):
        return None
    p = parse_path(doc, "")
    if p.var != "it" or len(p.steps) != 1 or p.steps[0][0] != "member":
        return None
    return str(p.steps[0][1])


def _compute(compute: dict[str, Any], what: str) -> dict[str, Any]:
    if not compute:
        raise QueryError("JQ0021", f"{what}() computes at least one member: {what}(n=agg.count(), ...)")
    out = {}
    for name, fn in compute.items():
        doc = fn.document if isinstance(fn, Expr) else None
        if type(doc) is not dict or len(doc) != 1 or next(iter(doc))[1:] not in SERIES_FUNCTIONS:
            raise QueryError(
                "JQ0021",
                f"{what}({name}=...) takes an aggregate such as agg.avg(it.dep_delay) or agg.count()",
            )
        out[name] = doc
    return out


def rolling_spec(
    source: Any, time: Any, width: Any, partition: Any, compute: dict[str, Any]
) -> dict[str, Any]:
    """The ``$rolling`` phrase of ``query.rolling(time, width, partition=..., name=agg.fn(...))``."""
    spec: dict[str, Any] = {"it": source, "$time": _expr(time, "rolling(time)"), "$width": width}
    if partition is not None:
        parts = partition if isinstance(partition, list | tuple) else [partition]
        spec["$partition"] = [_expr(p, "rolling(partition=)") for p in parts]
    spec["$compute"] = _compute(compute, "rolling")
    return {"$rolling": spec}


def _by(by: Any) -> dict[str, Any]:
    if isinstance(by, dict):
        return {name: _expr(e, "resample(by=)") for name, e in by.items()}
    out = {}
    for e in by if isinstance(by, list | tuple) else [by]:
        name = member_name(e)
        if name is None:
            raise QueryError("JQ0021", f"resample(by=) names a computed key: by={{'name': {lit(e)!r}}}")
        out[name] = _expr(e, "resample(by=)")
    return out


def resample_spec(
    source: Any, time: Any, width: Any, by: Any, origin: Any, fill: Any, compute: dict[str, Any]
) -> dict[str, Any]:
    """The ``$resample`` phrase of ``query.resample(time, width, by=..., origin=..., fill=..., name=agg.fn(...))``.

    The interval's start is named after the time member (``it.time_hour``: ``time_hour``; ``time``
    for a computed time). ``fill`` is ``"drop"``, ``"previous"`` or a constant (a JSON value or an
    expression such as ``param("f")``).
    """
    spec: dict[str, Any] = {"it": source, "$time": _expr(time, "resample(time)"), "$width": width}
    if origin is not None:
        spec["$origin"] = origin
    if by is not None:
        spec["$by"] = _by(by)
    spec["$compute"] = _compute(compute, "resample")
    if isinstance(fill, str) and fill not in FILLS:
        raise QueryError("JQ0023", f'fill is "drop", "previous" or a constant such as 0, not {fill!r}')
    if isinstance(fill, Expr) or fill != "drop":
        spec["$fill"] = fill if isinstance(fill, str) else {"$value": lit(fill)}
    name = member_name(time)
    if name is not None and name != DEFAULT_AS:
        spec["$as"] = name
    return {"$resample": spec}
