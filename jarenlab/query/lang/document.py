"""Parse and check a query document, and give it one canonical text.

Every compile-time error (``JQ0001``-``JQ0011``) is raised here, before any data is
touched, with ``doc_path`` a JSON Pointer into the document. The parse result is a
small tree of nodes; :func:`canonical` prints that tree back so that documents with
the same meaning but different key order give the same text (the statement-cache key).

>>> canonical({"$return": "$x", "$for": {"x": "$[*]"}})
'{"$for":{"x":"$[*]"},"$return":"$x"}'
>>> canonical({"$not": "$['a']"})
'{"$not":["$.a"]}'
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from jarenlab import pointer
from jarenlab.errors import QueryError
from jarenlab.query.lang.dates import DATE_ARITY, NAMED_ARGUMENT
from jarenlab.query.lang.nodes import (
    ArrayCons,
    Asof,
    Call,
    Flwor,
    Lit,
    MapCons,
    Node,
    OrderSpec,
    PathRef,
    Quant,
    Resample,
    Rolling,
    Window,
    WindowFn,
)
from jarenlab.query.lang.path import VAR_NAME, parse_path, path_text
from jarenlab.query.lang.series import parse_resample, parse_rolling, series_kids, unparse_series
from jarenlab.query.lang.values import check_json

#: operator name -> (fewest, most) arguments; ``None`` means any number.
ARITY: dict[str, tuple[int, int | None]] = {
    **{n: (2, 2) for n in ("eq", "ne", "lt", "le", "gt", "ge")},
    "and": (1, None),
    "or": (1, None),
    "not": (1, 1),
    "seq": (0, None),
    "exists": (1, 1),
    "empty": (1, 1),
    "if": (2, 3),
    "coalesce": (1, None),
    "default": (2, 2),
    "add": (2, None),
    "mul": (2, None),
    **{n: (2, 2) for n in ("sub", "div", "idiv", "mod")},
    "neg": (1, 1),
    "round": (1, 2),
    "concat": (1, None),
    "string-join": (1, 2),
    "substring": (2, 3),
    **{n: (2, 2) for n in ("contains", "starts-with", "ends-with", "match", "search")},
    "replace": (3, 3),
    **{n: (1, 1) for n in ("upper", "lower", "string-length", "normalize-space")},
    **{n: (1, 1) for n in ("count", "sum", "avg", "min", "max", "median")},
    "stddev": (1, 2),
    **{n: (1, 1) for n in ("distinct", "reverse", "sort", "head", "tail", "entries", "from-entries")},
    "subsequence": (2, 3),
    "range": (2, 2),
    "get": (2, 2),
    "index-of": (2, 2),
    **{f"is-{t}": (1, 1) for t in ("string", "number", "boolean", "null", "array", "object")},
    **{n: (1, 1) for n in ("string", "number", "boolean")},
    "call": (1, None),
    **DATE_ARITY,
}

#: names the language knows but this engine does not run (``JQ0008``).
UNSUPPORTED = frozenset({"fold", "as", "valid", "assert", "overlaps", "similarity"})
#: window function -> (fewest, most) arguments.
WINDOW_FUNCTIONS = {
    "row-number": (0, 0),
    "rank": (0, 0),
    "dense-rank": (0, 0),
    "lag": (1, 3),
    "lead": (1, 3),
    **{n: (1, 1) for n in ("count", "sum", "avg", "min", "max")},
}
FLWOR_KEYS = ("$for", "$let", "$where", "$groupby", "$orderby", "$count", "$return")
DEFAULT_MAX_DEPTH = 128


@dataclass(frozen=True, slots=True)
class Parsed:
    """A checked document: its tree and its free variables (the externals)."""

    node: Node
    externals: frozenset[str]


class _Parser:
    def __init__(self, operators: frozenset[str] | None, max_depth: int) -> None:
        self.operators = operators
        self.max_depth = max_depth
        self.free: set[str] = set()

    def expr(self, doc: Any, at: str, scope: frozenset[str], depth: int) -> Node:
        if depth > self.max_depth:
            raise QueryError(
                "JQ0011", f"the document is nested deeper than {self.max_depth} levels", doc_path=at
            )
        t = type(doc)
        if t is str:
            if doc.startswith("$$"):
                return Lit(doc[1:], at)
            if doc.startswith("$"):
                p = parse_path(doc, at)
                if p.var is not None and p.var not in scope:
                    self.free.add(p.var)
                return PathRef(p.var, p.steps, at)
            return Lit(doc, at)
        if t is list:
            return ArrayCons(
                tuple(self.expr(v, pointer.join(at, i), scope, depth + 1) for i, v in enumerate(doc)), at
            )
        if t is dict:
            return self.obj(doc, at, scope, depth)
        why = check_json(doc)
        if why:
            raise QueryError("JQ0010", f"literal is not a JSON value: {why}", doc_path=at)
        return Lit(doc, at)

    def obj(self, doc: dict[Any, Any], at: str, scope: frozenset[str], depth: int) -> Node:
        for k in doc:
            if type(k) is not str:
                raise QueryError("JQ0010", f"object key {k!r} is not a string", doc_path=at)
        ops = [k for k in doc if k.startswith("$") and not k.startswith("$$")]
        if not ops:
            members = tuple(
                (k[1:] if k.startswith("$$") else k, self.expr(v, pointer.join(at, k), scope, depth + 1))
                for k, v in doc.items()
            )
            return MapCons(members, False, at)
        if len(ops) != len(doc):
            plain = next(k for k in doc if k not in ops)
            raise QueryError(
                "JQ0001",
                f"an object mixes operator key {ops[0]!r} with plain key {plain!r}",
                doc_path=at,
            )
        if any(k in doc for k in ("$for", "$let", "$return")):
            return self.flwor(doc, at, scope, depth)
        if len(ops) > 1:
            raise QueryError(
                "JQ0001",
                f"an operator phrase has several operator keys: {', '.join(ops)}",
                doc_path=at,
            )
        key = ops[0]
        name = key[1:]
        here = pointer.join(at, key)
        value = doc[key]
        if name == "const":
            why = check_json(value)
            if why:
                raise QueryError("JQ0010", f"$const value is not JSON: {why}", doc_path=here)
            return Lit(value, at)
        if name == "map":
            return self.computed_map(value, at, scope, depth)
        if name in ("where", "groupby", "orderby"):
            raise QueryError(
                "JQ0006", f"{key} is a FLWOR clause and needs $for or $let and $return", doc_path=here
            )
        if name in ("some", "every"):
            return self.quant(name, value, at, here, scope, depth)
        if name == "window":
            return self.window(value, at, here, scope, depth)
        if name == "asof":
            return self.asof(value, at, here, scope, depth)
        if name == "rolling":
            return parse_rolling(self, value, at, here, scope, depth)
        if name == "resample":
            return parse_resample(self, value, at, here, scope, depth)
        return self.call(name, value, at, here, scope, depth)

    def quant(self, name: str, value: Any, at: str, here: str, scope: frozenset[str], depth: int) -> Node:
        names = [k for k in value if k != "$satisfies"] if type(value) is dict else []
        if len(names) != 1 or "$satisfies" not in value or not VAR_NAME.match(names[0]):
            raise QueryError(
                "JQ0003",
                f'${name} takes {{"<variable>": <sequence>, "$satisfies": <condition>}}',
                doc_path=here,
            )
        var = names[0]
        seq = self.expr(value[var], pointer.join(here, var), scope, depth + 2)
        pred = self.expr(value["$satisfies"], pointer.join(here, "$satisfies"), scope | {var}, depth + 2)
        return Quant(name == "every", var, seq, pred, at)

    def window(self, value: Any, at: str, here: str, scope: frozenset[str], depth: int) -> Node:
        options = ("$partition", "$orderby", "$compute")
        names = [k for k in value if k not in options] if type(value) is dict else []
        if len(names) != 1 or not VAR_NAME.match(names[0]) or "$compute" not in value:
            raise QueryError(
                "JQ0021",
                '$window takes {"<variable>": <items>, "$partition"?: [...], "$orderby"?: [...], "$compute": {...}}',
                doc_path=here,
            )
        var = names[0]
        d = depth + 2
        seq = self.expr(value[var], pointer.join(here, var), scope, d)
        inner = scope | {var}
        partition = self.partition(value, here, inner, d)
        orderby = (
            self.orderby(value["$orderby"], pointer.join(here, "$orderby"), inner, d)
            if "$orderby" in value
            else ()
        )
        compute = value["$compute"]
        c_at = pointer.join(here, "$compute")
        if type(compute) is not dict or not compute:
            raise QueryError(
                "JQ0021", "$compute names the members to add: {name: {$fn: [...]}}", doc_path=c_at
            )
        fns = tuple(
            self.window_fn(n, spec, pointer.join(c_at, n), inner, d, bool(orderby))
            for n, spec in compute.items()
        )
        return Window(var, seq, partition, orderby, fns, at)

    def partition(
        self, value: dict[str, Any], here: str, scope: frozenset[str], depth: int
    ) -> tuple[Node, ...]:
        """The ``$partition`` keys of a ``$window`` or ``$rolling`` spec (one expression or a list)."""
        part = value.get("$partition", [])
        at = pointer.join(here, "$partition")
        if type(part) is not list:
            return (self.expr(part, at, scope, depth),)
        return tuple(self.expr(p, pointer.join(at, i), scope, depth) for i, p in enumerate(part))

    def asof(self, value: Any, at: str, here: str, scope: frozenset[str], depth: int) -> Node:
        shape = '$asof takes {"<left>": items, "<right>": items, "$on": [left key, right key], "$by"?: [[l, r]], "$as": name}'
        names = [k for k in value if not k.startswith("$")] if type(value) is dict else []
        extra = [k for k in value if k.startswith("$") and k not in ("$on", "$by", "$as")] if names else []
        ok = len(names) == 2 and all(VAR_NAME.match(n) for n in names) and not extra
        if not ok or type(value.get("$on")) is not list or len(value["$on"]) != 2:
            raise QueryError("JQ0021", shape, doc_path=here)
        if type(value.get("$as")) is not str or not value["$as"]:
            raise QueryError(
                "JQ0021", "$as names the member that holds the match", doc_path=pointer.join(here, "$as")
            )
        lv, rv = names
        d = depth + 2
        left = self.expr(value[lv], pointer.join(here, lv), scope, d)
        right = self.expr(value[rv], pointer.join(here, rv), scope, d)
        on_at = pointer.join(here, "$on")
        on = (
            self.expr(value["$on"][0], pointer.join(on_at, 0), scope | {lv}, d),
            self.expr(value["$on"][1], pointer.join(on_at, 1), scope | {rv}, d),
        )
        by_raw = value.get("$by", [])
        by_at = pointer.join(here, "$by")
        if type(by_raw) is not list or any(type(p) is not list or len(p) != 2 for p in by_raw):
            raise QueryError("JQ0021", "$by is a list of [left key, right key] pairs", doc_path=by_at)
        by = tuple(
            (
                self.expr(p[0], pointer.join(pointer.join(by_at, i), 0), scope | {lv}, d),
                self.expr(p[1], pointer.join(pointer.join(by_at, i), 1), scope | {rv}, d),
            )
            for i, p in enumerate(by_raw)
        )
        return Asof(lv, left, rv, right, on, by, value["$as"], at)

    def window_fn(
        self, name: str, spec: Any, at: str, scope: frozenset[str], depth: int, ordered: bool
    ) -> WindowFn:
        fns = [k for k in spec if k != "$frame"] if type(spec) is dict else []
        if len(fns) != 1 or not fns[0].startswith("$"):
            raise QueryError("JQ0021", f"{name!r} is one window function, e.g. {{'$rank': []}}", doc_path=at)
        fn = fns[0][1:]
        if fn not in WINDOW_FUNCTIONS:
            raise QueryError(
                "JQ0020", f"${fn} is not a window function ({', '.join(WINDOW_FUNCTIONS)})", doc_path=at
            )
        raw = spec[fns[0]]
        raw = raw if type(raw) is list else [raw]
        lo, hi = WINDOW_FUNCTIONS[fn]
        here = pointer.join(at, fns[0])
        if not lo <= len(raw) <= hi:
            raise QueryError("JQ0003", f"${fn} takes {lo} to {hi} arguments, got {len(raw)}", doc_path=here)
        args = tuple(self.expr(a, pointer.join(here, i), scope, depth + 1) for i, a in enumerate(raw))
        frame = None
        if fn in ("count", "sum", "avg", "min", "max"):
            frame = (None, 0) if ordered else (None, None)
            if "$frame" in spec:
                f = spec["$frame"]
                ok = type(f) is list and len(f) == 2 and all(x is None or type(x) is int for x in f)
                if not ok or (f[0] is not None and f[1] is not None and f[0] > f[1]):
                    raise QueryError(
                        "JQ0021",
                        "$frame is [start, end]: row offsets (integers, start <= end) or null",
                        doc_path=pointer.join(at, "$frame"),
                    )
                frame = (f[0], f[1])
        elif "$frame" in spec:
            raise QueryError("JQ0021", f"${fn} takes no $frame", doc_path=pointer.join(at, "$frame"))
        if fn in ("row-number", "rank", "dense-rank", "lag", "lead") and not ordered:
            raise QueryError("JQ0021", f"${fn} needs the window's $orderby", doc_path=here)
        return WindowFn(name, fn, args, frame, at)

    def call(self, name: str, value: Any, at: str, here: str, scope: frozenset[str], depth: int) -> Node:
        host = False
        if name not in ARITY:
            if self.operators is None or name in self.operators:
                host = True
            elif name in UNSUPPORTED or name in ("query", "expr"):
                raise QueryError(
                    "JQ0008", f"${name} is part of the language but not supported here", doc_path=here
                )
            else:
                raise QueryError("JQ0002", f"unknown operator ${name}", doc_path=here)
        if type(value) is list:
            args = tuple(self.expr(v, pointer.join(here, i), scope, depth + 1) for i, v in enumerate(value))
        else:
            args = (self.expr(value, here, scope, depth + 1),)
        if not host:
            lo, hi = ARITY[name]
            if len(args) < lo or (hi is not None and len(args) > hi):
                want = f"{lo}" if lo == hi else f"{lo} or more" if hi is None else f"{lo} to {hi}"
                raise QueryError("JQ0003", f"${name} takes {want} arguments, got {len(args)}", doc_path=here)
        if name == "call":
            target = args[0]
            if not isinstance(target, Lit) or type(target.value) is not str:
                raise QueryError("JQ0003", "$call needs a literal operator name first", doc_path=target.path)
            if self.operators is not None and target.value not in self.operators:
                raise QueryError(
                    "JQ0002",
                    f"$call names an unregistered host operator {target.value!r}",
                    doc_path=target.path,
                )
            return Call(target.value, args[1:], True, at)
        if name in NAMED_ARGUMENT:
            i, names = NAMED_ARGUMENT[name]
            unit = args[i]
            if isinstance(unit, Lit) and type(unit.value) is str and unit.value not in names:
                raise QueryError(
                    "JQ0020",
                    f"${name} takes one of {', '.join(names)}, not {unit.value!r}",
                    doc_path=unit.path,
                )
        if name in ("match", "search", "replace"):
            pattern = args[1]
            if isinstance(pattern, Lit) and type(pattern.value) is str:
                from jarenlab.query.lang.iregexp import check_pattern

                check_pattern(pattern.value, pattern.path)
        return Call(name, args, host, at)

    def computed_map(self, value: Any, at: str, scope: frozenset[str], depth: int) -> Node:
        here = pointer.join(at, "$map")
        if type(value) is not list:
            raise QueryError("JQ0003", "$map takes a list of [key, value] pairs", doc_path=here)
        pairs = []
        for i, pair in enumerate(value):
            p = pointer.join(here, i)
            if type(pair) is not list or len(pair) != 2:
                raise QueryError("JQ0003", "each $map member is a [key, value] pair", doc_path=p)
            pairs.append(
                (
                    self.expr(pair[0], pointer.join(p, 0), scope, depth + 2),
                    self.expr(pair[1], pointer.join(p, 1), scope, depth + 2),
                )
            )
        return MapCons(tuple(pairs), True, at)

    def bindings(self, doc: dict[str, Any], key: str, at: str) -> dict[str, Any]:
        value = doc[key]
        if type(value) is not dict or not value:
            raise QueryError(
                "JQ0006",
                f"{key} takes a non-empty object of variable bindings",
                doc_path=pointer.join(at, key),
            )
        for name in value:
            if not VAR_NAME.match(name):
                raise QueryError(
                    "JQ0006",
                    f"{name!r} is not a variable name",
                    doc_path=pointer.join(pointer.join(at, key), name),
                )
        return value

    def flwor(self, doc: dict[str, Any], at: str, scope: frozenset[str], depth: int) -> Node:
        for k in doc:
            if k in ("$fold", "$as", "$window"):
                raise QueryError("JQ0008", f"the {k} clause is not supported", doc_path=pointer.join(at, k))
            if k not in FLWOR_KEYS:
                raise QueryError("JQ0006", f"{k} is not a FLWOR clause", doc_path=pointer.join(at, k))
        if "$for" not in doc and "$let" not in doc:
            raise QueryError("JQ0006", "a FLWOR needs $for or $let", doc_path=at)
        if "$return" not in doc:
            raise QueryError("JQ0006", "a FLWOR needs $return", doc_path=at)
        d = depth + 2
        bound: list[str] = []
        fors = []
        if "$for" in doc:
            base = pointer.join(at, "$for")
            for name, spec in self.bindings(doc, "$for", at).items():
                here = pointer.join(base, name)
                pos = None
                if type(spec) is dict and "$in" in spec:
                    for k in spec:
                        if k in ("$allowing-empty", "$window", "$size", "$step"):
                            raise QueryError(
                                "JQ0008", f"{k} bindings are not supported", doc_path=pointer.join(here, k)
                            )
                        if k not in ("$in", "$at"):
                            raise QueryError(
                                "JQ0006", f"{k} is not a $for binding option", doc_path=pointer.join(here, k)
                            )
                    if "$at" in spec:
                        pos = spec["$at"]
                        if type(pos) is not str or not VAR_NAME.match(pos) or pos == name:
                            raise QueryError(
                                "JQ0006", "$at names a position variable", doc_path=pointer.join(here, "$at")
                            )
                    expr = self.expr(spec["$in"], pointer.join(here, "$in"), scope | set(bound), d)
                else:
                    expr = self.expr(spec, here, scope | set(bound), d)
                fors.append((name, expr, pos))
                bound += [name] if pos is None else [name, pos]
        lets = []
        if "$let" in doc:
            base = pointer.join(at, "$let")
            for name, value in self.bindings(doc, "$let", at).items():
                lets.append((name, self.expr(value, pointer.join(base, name), scope | set(bound), d)))
                bound.append(name)
        inner = scope | set(bound)
        where = self.expr(doc["$where"], pointer.join(at, "$where"), inner, d) if "$where" in doc else None
        groupby = []
        if "$groupby" in doc:
            base = pointer.join(at, "$groupby")
            for name, value in sorted(self.bindings(doc, "$groupby", at).items()):
                groupby.append((name, self.expr(value, pointer.join(base, name), inner, d)))
            inner = inner | {name for name, _ in groupby}
        orderby = (
            self.orderby(doc["$orderby"], pointer.join(at, "$orderby"), inner, d) if "$orderby" in doc else ()
        )
        count = doc.get("$count")
        if "$count" in doc:
            if type(count) is not str or not VAR_NAME.match(count):
                raise QueryError(
                    "JQ0006", "$count names a tuple-number variable", doc_path=pointer.join(at, "$count")
                )
            inner = inner | {count}
        ret = self.expr(doc["$return"], pointer.join(at, "$return"), inner, d)
        return Flwor(tuple(fors), tuple(lets), where, tuple(groupby), orderby, count, ret, at)

    def orderby(self, value: Any, at: str, scope: frozenset[str], depth: int) -> tuple[OrderSpec, ...]:
        specs = value if type(value) is list else [value]
        if not specs:
            raise QueryError("JQ0007", "$orderby needs at least one key", doc_path=at)
        out = []
        for i, spec in enumerate(specs):
            here = pointer.join(at, i) if type(value) is list else at
            if type(spec) is dict and any(k in spec for k in ("$key", "$dir", "$empty", "$collation")):
                for k in spec:
                    if k == "$collation":
                        raise QueryError(
                            "JQ0008", "collations are not supported", doc_path=pointer.join(here, k)
                        )
                    if k not in ("$key", "$dir", "$empty"):
                        raise QueryError(
                            "JQ0007", f"{k} is not an $orderby option", doc_path=pointer.join(here, k)
                        )
                if "$key" not in spec:
                    raise QueryError("JQ0007", "an $orderby spec object needs $key", doc_path=here)
                direction = spec.get("$dir", "asc")
                empty = spec.get("$empty", "least")
                if direction not in ("asc", "desc"):
                    raise QueryError("JQ0007", "$dir is 'asc' or 'desc'", doc_path=pointer.join(here, "$dir"))
                if empty not in ("least", "greatest"):
                    raise QueryError(
                        "JQ0007", "$empty is 'least' or 'greatest'", doc_path=pointer.join(here, "$empty")
                    )
                key = self.expr(spec["$key"], pointer.join(here, "$key"), scope, depth + 1)
                out.append(OrderSpec(key, direction == "desc", empty == "greatest"))
            else:
                out.append(OrderSpec(self.expr(spec, here, scope, depth + 1), False, False))
        return tuple(out)


def parse(
    document: Any,
    *,
    operators: frozenset[str] | None = frozenset(),
    max_depth: int = DEFAULT_MAX_DEPTH,
    allowed_externals: frozenset[str] | None = None,
) -> Parsed:
    """Check a document and return its tree and free variables.

    ``operators`` names the registered host operators; ``None`` accepts any unknown
    ``$name`` as one (used by :func:`canonical`, which needs no vocabulary).

    >>> sorted(parse({"$eq": ["$it.a", "$x"]}).externals)
    ['it', 'x']
    """
    if type(document) is dict and "$query" in document:
        if set(document) != {"$query", "$expr"}:
            raise QueryError("JQ0001", "the envelope is exactly {'$query': '0.1', '$expr': ...}", doc_path="")
        if document["$query"] != "0.1":
            raise QueryError(
                "JQ0008", f"query format {document['$query']!r} is not supported", doc_path="/$query"
            )
        document = document["$expr"]
        root = "/$expr"
    else:
        root = ""
    p = _Parser(operators, max_depth)
    node = p.expr(document, root, frozenset(), 0)
    free = frozenset(p.free)
    if allowed_externals is not None:
        extra = sorted(free - allowed_externals)
        if extra:
            raise QueryError("JQ0005", f"undeclared external ${extra[0]}", doc_path=_find_var(node, extra[0]))
    return Parsed(node, free)


def _find_var(node: Node, name: str) -> str:
    for n in walk(node):
        if isinstance(n, PathRef) and n.var == name:
            return n.path
    return ""


def walk(node: Node) -> list[Node]:
    """Every node of a tree, parents before children.

    >>> [type(n).__name__ for n in walk(parse([1, "$x"]).node)]
    ['ArrayCons', 'Lit', 'PathRef']
    """
    out: list[Node] = [node]
    if isinstance(node, ArrayCons | Call):
        kids: list[Node] = list(node.items if isinstance(node, ArrayCons) else node.args)
    elif isinstance(node, MapCons):
        kids = [x for pair in node.members for x in pair if not isinstance(x, str)]
    elif isinstance(node, Flwor):
        kids = [e for _, e, _ in node.fors] + [e for _, e in node.lets]
        kids += [node.where] if node.where is not None else []
        kids += [e for _, e in node.groupby] + [s.key for s in node.orderby] + [node.ret]
    elif isinstance(node, Quant):
        kids = [node.seq, node.pred]
    elif isinstance(node, Asof):
        kids = [node.left, node.right, *node.on, *(x for pair in node.by for x in pair)]
    elif isinstance(node, Window):
        kids = [node.seq, *node.partition, *(s.key for s in node.orderby)]
        kids += [a for f in node.compute for a in f.args]
    elif isinstance(node, Rolling | Resample):
        kids = series_kids(node)
    else:
        kids = []
    for k in kids:
        out.extend(walk(k))
    return out


def unparse(node: Node) -> Any:
    """The canonical document for a tree (defaults dropped, clauses in fixed order).

    >>> unparse(parse({"$orderby": {"$key": "$x", "$dir": "asc"}, "$let": {"x": 1}, "$return": "$x"}).node)
    {'$let': {'x': 1}, '$orderby': [{'$key': '$x'}], '$return': '$x'}
    """
    if isinstance(node, Lit):
        v = node.value
        if type(v) is str:
            return "$" + v if v.startswith("$") else v
        if type(v) in (list, dict):
            return {"$const": v}
        return v
    if isinstance(node, PathRef):
        return path_text(node.var, node.steps)
    if isinstance(node, ArrayCons):
        return [unparse(x) for x in node.items]
    if isinstance(node, MapCons):
        if node.computed:
            return {"$map": [[unparse(k), unparse(v)] for k, v in node.members if not isinstance(k, str)]}
        return {
            ("$" + k if k.startswith("$") else k): unparse(v) for k, v in node.members if isinstance(k, str)
        }
    if isinstance(node, Call):
        return {f"${node.name}": [unparse(a) for a in node.args]}
    if isinstance(node, Quant):
        return {
            "$every" if node.every else "$some": {
                node.var: unparse(node.seq),
                "$satisfies": unparse(node.pred),
            }
        }
    if isinstance(node, Asof):
        doc: dict[str, Any] = {node.left_var: unparse(node.left), node.right_var: unparse(node.right)}
        doc["$on"] = [unparse(x) for x in node.on]
        if node.by:
            doc["$by"] = [[unparse(a), unparse(b)] for a, b in node.by]
        doc["$as"] = node.name
        return {"$asof": doc}
    if isinstance(node, Rolling | Resample):
        return unparse_series(node, unparse)
    if isinstance(node, Window):
        spec: dict[str, Any] = {node.var: unparse(node.seq)}
        if node.partition:
            spec["$partition"] = [unparse(p) for p in node.partition]
        if node.orderby:
            spec["$orderby"] = _order_specs(node.orderby)
        compute: dict[str, Any] = {}
        for f in node.compute:
            one: dict[str, Any] = {f"${f.fn}": [unparse(a) for a in f.args]}
            if f.frame is not None and f.frame != ((None, 0) if node.orderby else (None, None)):
                one["$frame"] = list(f.frame)
            compute[f.name] = one
        spec["$compute"] = compute
        return {"$window": spec}
    out: dict[str, Any] = {}
    if node.fors:
        out["$for"] = {
            n: unparse(e) if at is None else {"$in": unparse(e), "$at": at} for n, e, at in node.fors
        }
    if node.lets:
        out["$let"] = {n: unparse(e) for n, e in node.lets}
    if node.where is not None:
        out["$where"] = unparse(node.where)
    if node.groupby:
        out["$groupby"] = {n: unparse(e) for n, e in node.groupby}
    if node.orderby:
        out["$orderby"] = _order_specs(node.orderby)
    if node.count is not None:
        out["$count"] = node.count
    out["$return"] = unparse(node.ret)
    return out


def _order_specs(orderby: tuple[OrderSpec, ...]) -> list[dict[str, Any]]:
    specs = []
    for s in orderby:
        spec = {"$key": unparse(s.key)}
        if s.desc:
            spec["$dir"] = "desc"
        if s.empty_greatest:
            spec["$empty"] = "greatest"
        specs.append(spec)
    return specs


def canonical(document: Any) -> str:
    """The canonical JSON text of a document: the statement-cache key.

    Clause and option keys are put in one order, defaults are dropped, paths are
    reprinted and shorthand arguments become lists. Map-constructor members and
    ``$for``/``$let`` bindings keep their order (it is output column order and
    binding scope); ``$groupby`` keys are sorted.

    >>> canonical({"$orderby": [{"$dir": "desc", "$key": "$n.a"}], "$return": "$n", "$for": {"n": "$[*]"}})
    '{"$for":{"n":"$[*]"},"$orderby":[{"$key":"$n.a","$dir":"desc"}],"$return":"$n"}'
    """
    tree = parse(document, operators=None).node
    return json.dumps(unparse(tree), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
