"""An independent translator to DuckDB SQL over the documents flattened into Arrow columns.

Never reuses the planner's SQL: each known member becomes four columns (``<p>_t`` JSON type,
``<p>_num`` DOUBLE, ``<p>_str`` VARCHAR, ``<p>_json`` its JSON text) and every condition is
made two-valued with ``coalesce(..., false)``. It covers conditions over literals and
externals, ordering, the ``$it.id`` / ``$it`` returns, ``$window`` over the documents (DuckDB's
own ranks, offsets and framed aggregates, filtered on their members) and a filter over a
group-by's results (as DuckDB's ``HAVING``), ``$rolling`` (DuckDB's ``RANGE`` frames over timestamps)
and ``$resample`` with its gaps dropped (``time_bucket``); anything else returns None (the case runs through the
other paths only).
"""

from __future__ import annotations

import json
import re
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
    if op in _OPS and any(_number_of(a, b) is not None for a in args):
        x, y, op = (*args, op) if _number_of(args[0], b) is not None else (args[1], args[0], _FLIP[op])
        if type(y) not in (int, float) or abs(y) >= 2**53:
            raise Unsupported(w)
        return f"coalesce({_number_of(x, b)} {_OPS[op]} {_lit(y)}, false)"
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


def _number_of(x: Any, b: str) -> str | None:
    """A number computed from members as DuckDB computes it (NULL where the engine's value is empty):
    ``$add``/``$sub``/``$mul`` of number members and literals (DOUBLE arithmetic: the data holds no
    integer a double cannot, see :func:`run`), ``$string-length`` of a string member (code points);
    None for anything else."""
    if not isinstance(x, dict) or len(x) != 1:
        return None
    ((op, args),) = x.items()
    if op == "$string-length" and _field(args, b) in ("s", "o_t"):
        c = _field(args, b)
        return f"(CASE WHEN {c}_t IS NULL THEN 0 WHEN {c}_t = 'text' THEN length({c}_str) END)"
    if op in ("$add", "$sub", "$mul") and isinstance(args, list) and len(args) == 2:
        parts = []
        for a in args:
            if type(a) in (int, float) and abs(a) < 2**53:
                parts.append(_lit(a))
            elif (c := _field(a, b)) is not None:
                parts.append(f"(CASE WHEN {c}_t IN ('integer', 'real') THEN {c}_num END)")
            else:
                raise Unsupported(x)
        return "(" + {"$add": " + ", "$sub": " - ", "$mul": " * "}[op].join(parts) + ")"
    return None


def _key_column(x: Any, binding: str) -> str:
    """A typed key's one DuckDB column (a string or a number path); Unsupported for another."""
    c = _field(x, binding)
    if c not in ("s", "i", "n", "o_t"):
        raise Unsupported(x)
    return f"{c}_str" if c in ("s", "o_t") else f"{c}_num"


def _order_sql(specs: list[Any], binding: str) -> list[str]:
    out = []
    for spec in specs:
        spec = spec if isinstance(spec, dict) else {"$key": spec}
        desc = spec.get("$dir") == "desc"
        greatest = spec.get("$empty") == "greatest"
        first = (not desc and not greatest) or (desc and greatest)
        out.append(
            f"{_key_column(spec['$key'], binding)} {'DESC' if desc else 'ASC'} NULLS {'FIRST' if first else 'LAST'}"
        )
    return out


def _args(raw: Any) -> list[Any]:
    return raw if isinstance(raw, list) else [raw]


#: What each computed window member becomes when DuckDB answers NULL (None: no member).
_EMPTY = {"count": 0, "sum": 0}


def _window_sql(q: Any, ext: dict[str, Any]) -> tuple[str, list[tuple[str, str]]] | None:
    """``{$for: {r: {$window: {w: <the collection's documents>, ...}}}, $where: ranks, $return: $r}``
    in DuckDB's own window functions: (SQL giving doc and one column per computed member, the
    members' (name, function))."""
    if not isinstance(q, dict) or set(q) - {"$for", "$where", "$return"} or len(q["$for"]) != 1:
        return None
    ((var, src),) = q["$for"].items()
    if not isinstance(src, dict) or set(src) != {"$window"} or q["$return"] != f"${var}":
        return None
    spec = src["$window"]
    (w,) = [k for k in spec if not k.startswith("$")]
    inner = spec[w]
    if (
        not isinstance(inner, dict)
        or set(inner) - {"$for", "$where", "$return"}
        or inner["$for"] != {"it": "$[*]"}
    ):
        return None
    if inner["$return"] != "$it":
        return None
    where = cond(inner["$where"], "it", ext) if "$where" in inner else "true"
    parts = [_key_column(p, w) for p in _args(spec.get("$partition", []))]
    order = _order_sql(spec.get("$orderby", []), w)
    by = f"PARTITION BY {', '.join(parts)} " if parts else ""
    cols, members = [], []
    for name, fn_spec in spec["$compute"].items():
        ((fn, raw),) = [(k[1:], v) for k, v in fn_spec.items() if k != "$frame"]
        args = _args(raw)
        if fn in ("row-number", "rank", "dense-rank"):
            ties = [] if fn != "row-number" else ["rid"]
            cols.append(f"{fn.replace('-', '_')}() OVER ({by}ORDER BY {', '.join(order + ties)})")
        elif fn in ("lag", "lead"):
            if _field(args[0], w) != "i" or not all(type(a) is int for a in args[1:]):
                raise Unsupported(fn_spec)
            value = _value(args[0], w)
            cols.append(
                f"{fn}({', '.join([value, *map(str, args[1:])])}) OVER ({by}ORDER BY {', '.join([*order, 'rid'])})"
            )
        else:
            lo, hi = fn_spec.get("$frame", [None, 0] if order else [None, None])

            def bound(n: int | None, unbounded: str) -> str:
                if n is None:
                    return f"UNBOUNDED {unbounded}"
                return "CURRENT ROW" if n == 0 else f"{abs(n)} {'PRECEDING' if n < 0 else 'FOLLOWING'}"

            frame = f"ROWS BETWEEN {bound(lo, 'PRECEDING')} AND {bound(hi, 'FOLLOWING')}"
            over = f"OVER ({by}ORDER BY {', '.join([*order, 'rid'])} {frame})"
            value = "*" if args[0] == f"${w}" else _value(args[0], w)
            if fn == "avg":
                cols.append(f"sum({value}) {over} / nullif(count({value}) {over}, 0)")
            else:
                cols.append(f"{fn}({value}) {over}")
        members.append((name, fn))
    keep = "true"
    if "$where" in q:
        keep = _member_cond(q["$where"], var, {n: (f"c{i}", False) for i, (n, _) in enumerate(members)}, ext)
    select = ", ".join(f"{c} AS c{i}" for i, c in enumerate(cols))
    sql = f"SELECT doc, {', '.join(f'c{i}' for i in range(len(cols)))} FROM (SELECT rid, doc, {select} FROM docs WHERE {where}) WHERE {keep} ORDER BY rid"
    return sql, members


def _value(x: Any, binding: str) -> str:
    """A typed member's value for an aggregate: the string of a string path, the number of an
    integer path (Unsupported otherwise: the planner keeps those in the engine too)."""
    c = _field(x, binding)
    if c in ("s", "o_t"):
        return f"{c}_str"
    if c in ("i", "n"):
        return f"{c}_num"
    raise Unsupported(x)


def _member_cond(w: Any, var: str, members: dict[str, tuple[str, bool]], ext: dict[str, Any]) -> str:
    """A ``$and`` of comparisons of computed members (``$g.n``: its SQL and whether it is a string)
    with literals of its kind as DuckDB conditions (a member without a value compares false, as an
    empty sequence does)."""
    if not isinstance(w, dict) or len(w) != 1:
        raise Unsupported(w)
    ((op, args),) = w.items()
    op = op[1:]
    if op == "and":
        return "(" + " AND ".join(_member_cond(a, var, members, ext) for a in args) + ")"
    if op not in _OPS:
        raise Unsupported(w)
    x, y = args
    if not (isinstance(x, str) and x.startswith(f"${var}.")):
        x, y, op = y, x, _FLIP[op]
    if not (isinstance(x, str) and x.startswith(f"${var}.")) or x[len(var) + 2 :] not in members:
        raise Unsupported(w)
    if isinstance(y, str) and y.startswith("$") and not y.startswith("$$"):
        y = ext.get(y[1:])
    sql, text = members[x[len(var) + 2 :]]
    if y is None or isinstance(y, bool | list | dict) or isinstance(y, str) != text:
        raise Unsupported(w)
    return f"coalesce({sql} {_OPS[op]} {_lit(y)}, false)"


def _having_sql(q: Any, ext: dict[str, Any]) -> tuple[str, list[tuple[str, str]]] | None:
    """``{$for: {g: [<a group-by over the collection>]}, $where: W, $return: $g}``: the group-by
    with W as its HAVING, in DuckDB (SQL giving one column per result member, the members'
    (name, aggregate or ``key``))."""
    if not isinstance(q, dict) or set(q) - {"$for", "$where", "$return"} or len(q["$for"]) != 1:
        return None
    ((var, src),) = q["$for"].items()
    if (
        not (isinstance(src, list) and len(src) == 1 and isinstance(src[0], dict))
        or q["$return"] != f"${var}"
    ):
        return None
    g = src[0]
    if set(g) - {"$for", "$where", "$groupby", "$orderby", "$return"} or g.get("$for") != {"it": "$[*]"}:
        return None
    if "$groupby" not in g or not isinstance(g["$return"], dict):
        return None
    where = cond(g["$where"], "it", ext) if "$where" in g else "true"
    keys = {name: _key_column(e, "it") for name, e in g["$groupby"].items()}
    cols, members, named = [], [], {}
    for name, e in g["$return"].items():
        if isinstance(e, str) and e[1:] in keys:
            cols.append(keys[e[1:]])
            members.append((name, "key"))
            named[name] = (cols[-1], cols[-1].endswith("_str"))
            continue
        ((fn, raw),) = e.items()
        fn, arg = fn[1:], _args(raw)[0]
        if fn not in ("count", "sum", "avg", "min", "max"):  # (DuckDB's median and stddev round otherwise)
            raise Unsupported(e)
        value = "*" if arg == "$it" else _value(arg, "it")
        sums = {"avg": f"sum({value}) / nullif(count({value}), 0)", "sum": f"coalesce(sum({value}), 0)"}
        cols.append(sums.get(fn, f"{fn}({value})"))
        members.append((name, fn))
        named[name] = (f"({cols[-1]})", value.endswith("_str"))
    having = _member_cond(q["$where"], var, named, ext) if "$where" in q else "true"
    order = []
    for spec in g.get("$orderby", []):
        if spec.get("$key") != {"$count": ["$it"]}:
            raise Unsupported(spec)
        order.append(f"count(*) {'DESC' if spec.get('$dir') == 'desc' else 'ASC'}")
    sql = (
        f"SELECT {', '.join(cols)} FROM docs WHERE {where} GROUP BY {', '.join(keys.values())} "
        f"HAVING {having} ORDER BY {', '.join([*order, 'min(rid)'])}"
    )
    return sql, members


#: A whole-second UTC date-time as the series cases write their times (DuckDB parses only those).
_CANONICAL = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z")
_TIME = "strptime(s_str, '%Y-%m-%dT%H:%M:%SZ')"
#: Fixed ISO 8601 widths of the series cases in milliseconds.
_WIDTHS = {
    "PT0.5S": 500,
    "PT1S": 1000,
    "PT1H": 3_600_000,
    "PT2H": 7_200_000,
    "PT3H": 10_800_000,
    "PT30M": 1_800_000,
    "PT6H": 21_600_000,
    "P1D": 86_400_000,
    "P1W": 604_800_000,
    "P400D": 400 * 86_400_000,
    "P3650D": 3650 * 86_400_000,
}


def _series_spec(q: Any, op: str) -> tuple[str, dict[str, Any], str] | None:
    """The builder's ``{$for: {v: {op: spec}}, $return: $v}`` over the collection's documents (a
    ``$where`` allowed) with a ``$r.s`` time and a width of :data:`_WIDTHS`: (variable, spec,
    DuckDB condition of the inner where)."""
    if not isinstance(q, dict) or set(q) != {"$for", "$return"} or len(q["$for"]) != 1:
        return None
    ((var, src),) = q["$for"].items()
    if not isinstance(src, dict) or set(src) != {op} or q["$return"] != f"${var}":
        return None
    spec = src[op]
    (r,) = [k for k in spec if not k.startswith("$")]
    inner = spec[r]
    if (
        set(inner) - {"$for", "$where", "$return"}
        or inner["$for"] != {"it": "$[*]"}
        or inner["$return"] != "$it"
    ):
        return None
    if spec["$time"] != f"${r}.s" or spec["$width"] not in _WIDTHS:
        return None
    return r, spec, cond(inner["$where"], "it", {}) if "$where" in inner else "true"


def _series_aggregates(spec: dict[str, Any], r: str) -> tuple[list[str], list[tuple[str, str]]]:
    """Each computed member as a DuckDB aggregate of its typed column (an average: sum over count)."""
    cols, members = [], []
    for name, fn_spec in spec["$compute"].items():
        ((fn, raw),) = [(k[1:], v) for k, v in fn_spec.items()]
        arg = _args(raw)[0]
        value = "*" if arg == f"${r}" else _value(arg, r)
        if fn == "count" and arg != f"${r}":
            value = _field(arg, r) + ("_str" if _field(arg, r) in ("s", "o_t") else "_num")
        cols.append(
            "{0}({1}) {{over}} / nullif(count({1}) {{over}}, 0)".format("sum", value)
            if fn == "avg"
            else f"{fn}({value}) {{over}}"
        )
        members.append((name, fn))
    return cols, members


def _rolling_sql(q: Any) -> tuple[str, list[tuple[str, str]]] | None:
    """A ``$rolling`` as DuckDB windows over the rows that have a time, ``RANGE`` of the width less
    1 µs back (DuckDB's frame holds its left edge; the language's window does not), joined back to
    every row by position (a row without a time gets no member)."""
    found = _series_spec(q, "$rolling")
    if found is None:
        return None
    r, spec, where = found
    parts = [_key_column(p, r) for p in _args(spec.get("$partition", []))]
    by = f"PARTITION BY {', '.join(parts)} " if parts else ""
    frame = f"RANGE BETWEEN INTERVAL '{_WIDTHS[spec['$width']]} milliseconds' - INTERVAL '1 microsecond' PRECEDING AND CURRENT ROW"
    over = f"OVER ({by}ORDER BY {_TIME} {frame})"
    cols, members = _series_aggregates(spec, r)
    # Inside the join a sum or count of nothing is 0; outside it (no time) every member is NULL: none.
    cols = [f"coalesce({c}, 0)" if fn in _EMPTY else c for c, (_, fn) in zip(cols, members)]
    members = [(name, "value") for name, _ in members]
    select = ", ".join(f"{c.format(over=over)} AS c{i}" for i, c in enumerate(cols))
    names = ", ".join(f"w.c{i}" for i in range(len(cols)))
    sql = (
        f"SELECT d.doc, {names} FROM docs d LEFT JOIN (SELECT rid, {select} FROM docs WHERE ({where}) "
        f"AND s_t = 'text') w ON w.rid = d.rid WHERE {where} ORDER BY d.rid"
    )
    return sql, members


def _resample_sql(q: Any) -> tuple[str, list[tuple[str, str]]] | None:
    """A ``$resample`` whose gaps are dropped as DuckDB's ``time_bucket`` group-by: the ``$by`` keys,
    the interval's start, the aggregates; groups by their first row, intervals by start."""
    found = _series_spec(q, "$resample")
    if found is None or spec_fill(found[1]) != "drop":
        return None
    r, spec, where = found
    keys = [(n, _key_column(e, r)) for n, e in spec.get("$by", {}).items()]
    origin = spec.get("$origin", "2000-01-03T00:00:00Z")
    bucket = (
        f"strftime(time_bucket(INTERVAL '{_WIDTHS[spec['$width']]} milliseconds', {_TIME}, "
        f"strptime('{origin}', '%Y-%m-%dT%H:%M:%SZ')), '%Y-%m-%dT%H:%M:%SZ')"
    )
    cols, members = _series_aggregates(spec, r)
    members = [(n, "key") for n, _ in keys] + [(spec.get("$as", "time"), "key"), *members]
    key_cols = [c for _, c in keys]
    first = f"min(min(rid)) OVER ({'PARTITION BY ' + ', '.join(key_cols) if key_cols else ''})"
    select = ", ".join([*key_cols, bucket, *(c.format(over="") for c in cols)])
    group = ", ".join(str(i + 1) for i in range(len(key_cols) + 1))
    sql = f"SELECT {select} FROM docs WHERE ({where}) AND s_t = 'text' GROUP BY {group} ORDER BY {first}, {len(key_cols) + 1}"
    return sql, members


def spec_fill(spec: dict[str, Any]) -> str:
    """A resample's fill by name (``value`` for a constant)."""
    fill = spec.get("$fill", "drop")
    return fill if isinstance(fill, str) else "value"


def _members(values: Any, members: list[tuple[str, str]], into: dict[str, Any]) -> dict[str, Any]:
    """Computed members added as the engine adds them (no member for a NULL, 0 for an empty sum)."""
    for (name, fn), v in zip(members, values):
        v = _EMPTY.get(fn) if v is None else v
        if v is not None:
            into[name] = v
    return into


def _computed(
    query: Any, ext: dict[str, Any]
) -> tuple[str, list[tuple[str, str]], bool, list[int] | None] | None:
    """A window or a filter over groups, possibly under a ``$subsequence``, in one array constructor:
    (SQL, members, whether rows start with a document, the window's bounds)."""
    if not (isinstance(query, list) and len(query) == 1):
        return None
    q, bounds = query[0], None
    if isinstance(q, dict) and "$subsequence" in q:
        q, *bounds = q["$subsequence"]
        if not all(type(v) is int for v in bounds):
            return None
    try:
        got = _window_sql(q, ext) or _rolling_sql(q)
        if got is not None:
            return got[0] + _limit(bounds), got[1], True, bounds
        got = _having_sql(q, ext) or _resample_sql(q)
    except (Unsupported, KeyError, TypeError, ValueError, AttributeError):
        return None
    return None if got is None else (got[0] + _limit(bounds), got[1], False, bounds)


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
        sql = (
            f"SELECT {c}_str FROM docs WHERE ({where}) AND {c}_t = 'text' GROUP BY {c}_str ORDER BY min(rid)"
        )
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
    series = "$rolling" in json.dumps(query) or "$resample" in json.dumps(query)
    if series and any("s" in d and not (type(d["s"]) is str and _CANONICAL.fullmatch(d["s"])) for d in docs):
        return None  # (DuckDB reads only the canonical form; the engine reads every RFC 3339 one)
    computed = _computed(query, ext)
    if computed is not None:
        sql, members, with_doc, _ = computed
        con = duckdb.connect()
        con.register("docs", to_arrow(docs))
        rows = con.execute(sql).fetchall()
        if with_doc:
            return [[_members(r[1:], members, json.loads(r[0])) for r in rows]]
        return [[_members(r, members, {}) for r in rows]]
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
