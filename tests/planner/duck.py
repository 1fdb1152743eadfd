"""An independent translator to DuckDB SQL over the documents flattened into Arrow columns.

Never reuses the planner's SQL: each known member becomes four columns (``<p>_t`` JSON type,
``<p>_num`` DOUBLE, ``<p>_str`` VARCHAR, ``<p>_json`` its JSON text) and every condition is
made two-valued with ``coalesce(..., false)``. It covers conditions over literals and
externals, ordering, windows and the ``$it.id`` / ``$it`` returns; anything else returns None
(the case runs through the other three paths only).
"""

from __future__ import annotations

import json
from typing import Any

import duckdb
import pyarrow as pa

from tests.planner.model import PATHS

_OPS = {"eq": "=", "ne": "<>", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_FLIP = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}


def _jtype(v: Any) -> str | None:
    if v is True:
        return "true"
    if v is False:
        return "false"
    if v is None:
        return "null"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "real"
    if isinstance(v, str):
        return "text"
    return "array" if isinstance(v, list) else "object"


def _get(doc: dict[str, Any], path: str) -> tuple[bool, Any]:
    cur: Any = doc
    for part in [path] if path == "odd key" else path.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return False, None
        cur = cur[part]
    return True, cur


def to_arrow(docs: list[dict[str, Any]]) -> pa.Table:
    cols: dict[str, list[Any]] = {"rid": list(range(len(docs))), "doc": [json.dumps(d) for d in docs]}
    for path, c in PATHS.items():
        t, num, s = [], [], []
        for d in docs:
            present, v = _get(d, path)
            jt = _jtype(v) if present else None
            t.append(jt)
            num.append(float(v) if jt in ("integer", "real") else None)
            s.append(v if jt == "text" else None)
        cols[f"{c}_t"], cols[f"{c}_num"], cols[f"{c}_str"] = t, num, s
    types = {k: pa.string() for k in cols if k.endswith(("_t", "_str")) or k == "doc"}
    types.update({k: pa.float64() for k in cols if k.endswith("_num")})
    types["rid"] = pa.int64()
    return pa.table({k: pa.array(v, type=types[k]) for k, v in cols.items()})


class Unsupported(Exception):
    pass


def _field(x: Any, binding: str) -> str | None:
    if isinstance(x, str) and x.startswith(f"${binding}"):
        rest = x[len(binding) + 1 :]
        name = "odd key" if rest == "['odd key']" else rest[1:] if rest.startswith(".") else None
        if name in PATHS:
            return PATHS[name]
        raise Unsupported(x)
    return None


def _lit(v: Any) -> str:
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    return repr(float(v))


def cond(w: Any, b: str, ext: dict[str, Any]) -> str:
    """A two-valued DuckDB condition for a ``$where`` expression."""
    c = _field(w, b)
    if c is not None:
        return (
            f"coalesce(CASE {c}_t WHEN 'true' THEN true WHEN 'integer' THEN {c}_num <> 0 WHEN 'real' THEN {c}_num <> 0 "
            f"WHEN 'text' THEN {c}_str <> '' WHEN 'array' THEN true WHEN 'object' THEN true ELSE false END, false)"
        )
    if not isinstance(w, dict) or len(w) != 1:
        if isinstance(w, bool | int | float | str) and not isinstance(w, str):
            return "true" if w else "false"
        raise Unsupported(w)
    ((op, args),) = w.items()
    op = op[1:]
    if op in ("and", "or"):
        args = args if isinstance(args, list) else [args]
        return "(" + f" {op.upper()} ".join(cond(a, b, ext) for a in args) + ")"
    if op == "not":
        return f"(NOT {cond(args, b, ext)})"
    if op in ("exists", "empty"):
        c = _field(args, b)
        if c is None:
            raise Unsupported(w)
        return f"({c}_t IS {'NOT ' if op == 'exists' else ''}NULL)"
    if op.startswith("is-"):
        c = _field(args, b)
        t = {"string": ["text"], "number": ["integer", "real"], "boolean": ["true", "false"]}.get(
            op[3:], [op[3:]]
        )
        return f"coalesce({c}_t IN ({', '.join(_lit(x) for x in t)}), false)"
    if op in _OPS:
        x, y = args
        if _field(x, b) is None:
            x, y, op = y, x, _FLIP[op]
        c = _field(x, b)
        if c is None:
            raise Unsupported(w)
        if isinstance(y, str) and y.startswith("$") and not y.startswith("$$"):
            name = y[1:]
            if name not in ext or not isinstance(ext[name], int | float | str) or isinstance(ext[name], bool):
                raise Unsupported(w)
            y = ext[name]
        if y is None or isinstance(y, bool):
            jt = "null" if y is None else str(y).lower()
            if op == "eq":
                return f"coalesce({c}_t = '{jt}', false)"
            if op == "ne":
                return f"coalesce({c}_t <> '{jt}', false)"
            return "false"
        if isinstance(y, list | dict):
            raise Unsupported(w)
        if isinstance(y, str):
            same = f"coalesce({c}_t = 'text' AND {c}_str {_OPS['eq' if op == 'ne' else op]} {_lit(y)}, false)"
        else:
            same = f"coalesce({c}_t IN ('integer','real') AND {c}_num {_OPS['eq' if op == 'ne' else op]} {_lit(y)}, false)"
        return f"({c}_t IS NOT NULL AND NOT {same})" if op == "ne" else same
    if op in ("starts-with", "ends-with", "contains") and _field(args[0], b) in ("s", "o_t"):
        c = _field(args[0], b)
        p = args[1]
        if not isinstance(p, str) or p.startswith("$"):
            raise Unsupported(w)
        if p == "":
            return "true"
        fn = {"starts-with": "starts_with", "ends-with": "ends_with", "contains": "contains"}[op]
        return f"coalesce({c}_t = 'text' AND {fn}({c}_str, {_lit(p)}), false)"
    raise Unsupported(w)


def sql_for(query: Any, ext: dict[str, Any]) -> tuple[str, str] | None:
    """(DuckDB SQL, return kind) for a supported query, or None."""
    window = None
    q = query
    if isinstance(q, list) and len(q) == 1 and isinstance(q[0], dict) and "$subsequence" in q[0]:
        q, *bounds = q[0]["$subsequence"]
        if not all(type(v) is int for v in bounds):
            return None
        window = bounds
    elif isinstance(q, list) and len(q) == 1 and isinstance(q[0], dict) and set(q[0]) == {"$distinct"}:
        q = q[0]
    distinct = isinstance(q, dict) and set(q) == {"$distinct"}
    if distinct:
        q = q["$distinct"]
    if not isinstance(q, dict) or set(q) - {"$for", "$where", "$orderby", "$return"}:
        return None
    binding, src = next(iter(q["$for"].items()))
    if src != "$[*]" or len(q["$for"]) != 1:
        return None
    if distinct:
        # The first occurrence of each string value (its first row), strings only, in storage order.
        try:
            c = _field(q["$return"], binding)
            where = cond(q["$where"], binding, ext) if "$where" in q else "true"
        except Unsupported:
            return None
        if c not in ("s", "o_t") or "$orderby" in q:
            return None
        sql = f"SELECT {c}_str FROM docs WHERE ({where}) AND {c}_t = 'text' GROUP BY {c}_str ORDER BY min(rid)"
        return sql + _limit(window), "value"
    if q["$return"] not in (f"${binding}.id", f"${binding}"):
        return None
    try:
        where = cond(q["$where"], binding, ext) if "$where" in q else "true"
        order = []
        for spec in q.get("$orderby", []):
            spec = spec if isinstance(spec, dict) else {"$key": spec}
            c = _field(spec["$key"], binding)
            if c not in ("s", "i", "n", "o_t"):
                return None
            col = f"{c}_str" if c in ("s", "o_t") else f"{c}_num"
            desc = spec.get("$dir") == "desc"
            greatest = spec.get("$empty") == "greatest"
            first = (not desc and not greatest) or (desc and greatest)
            order.append(f"{col} {'DESC' if desc else 'ASC'} NULLS {'FIRST' if first else 'LAST'}")
    except Unsupported:
        return None
    sql = f"SELECT id_str, doc FROM docs WHERE {where} ORDER BY {', '.join([*order, 'rid'])}"
    return sql + _limit(window), ("id" if q["$return"].endswith(".id") else "doc")


def _limit(window: list[int] | None) -> str:
    """``$subsequence``'s start and length as LIMIT/OFFSET (nothing without a window)."""
    if not window:
        return ""
    start = max(window[0], 0)
    stop = None if len(window) == 1 else max(window[0] + window[1], 0)
    return f" LIMIT {max(stop - start, 0) if stop is not None else 1 << 62} OFFSET {start}"


def run(docs: list[dict[str, Any]], query: Any, ext: dict[str, Any]) -> list[Any] | None:
    """The DuckDB answer as the engine's flat sequence, or None when the query is not covered.

    Numbers live in DOUBLE columns, so data with integers beyond 2^53 (which a double cannot tell
    apart) is not covered.
    """
    if any(_beyond_double(v) for d in docs for v in d.values()):
        return None
    got = sql_for(query, ext)
    if got is None:
        return None
    sql, kind = got
    con = duckdb.connect()
    con.register("docs", to_arrow(docs))
    rows = con.execute(sql).fetchall()
    items = [r[0] for r in rows] if kind in ("id", "value") else [json.loads(r[1]) for r in rows]
    return [items] if isinstance(query, list) else items


def _beyond_double(v: Any) -> bool:
    if isinstance(v, dict):
        return any(_beyond_double(x) for x in v.values())
    if isinstance(v, list):
        return any(_beyond_double(x) for x in v)
    return type(v) is int and abs(v) > 2**53
