"""The reference evaluator: a checked document compiled once into Python closures.

Every node becomes ``f(env) -> list`` (the flat sequence) where ``env`` maps variable
names to sequences (``"$"`` is the root). Boolean positions (``$where``, ``$and``, ...)
compile to ``p(env) -> bool`` so the hot path builds no lists. Closures never mutate a
list they were given, so sequences may be shared freely.

>>> compile_query({"$for": {"n": "$[*]"}, "$where": {"$gt": ["$n", 1]}, "$return": "$n"}).run([1, 2, 3])
[2, 3]
>>> evaluate({"$add": ["$x", 1]}, None, {"x": 41})
[42]
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from jarenlab.arguments import is_count
from jarenlab.errors import JarenlabError, QueryError, StoreError
from jarenlab.query.lang.compare import (
    FLIP,
    MISSING,
    TESTS,
    MemberTest,
    compare_literal,
    exists_pair,
    item_logic,
    item_tests,
    member_compare,
    member_compare_literal,
    member_of,
)
from jarenlab.query.lang.compiled import BoolFn, Env, ItemPredMaker, SeqFn
from jarenlab.query.lang.document import ARITY, DEFAULT_MAX_DEPTH, parse
from jarenlab.query.lang.flwor import compile_flwor
from jarenlab.query.lang.functions import FUNCTIONS, range_bounds
from jarenlab.query.lang.nodes import (
    ArrayCons,
    Asof,
    Call,
    Lit,
    MapCons,
    Node,
    PathRef,
    Quant,
    Resample,
    Rolling,
    Window,
)
from jarenlab.query.lang.path import VAR_NAME
from jarenlab.query.lang.series import compile_resample, compile_rolling
from jarenlab.query.lang.values import check_json, ebv
from jarenlab.query.lang.windows import compile_asof, compile_window

LIMIT_KEYS = ("sequence_items", "result_items", "steps", "depth")


#: The most items one ``$range`` makes without an item limit: a typo such as ``[0, 10**9]`` is
#: refused (JQ2009) before it holds the kernel's memory.
RANGE_ITEMS = 10_000_000


def unbound_external(name: str) -> QueryError:
    """``JQ2006`` for the external ``$name`` a run was given no value for, saying how to give one,
    and that a group key read outside its group_by reads as such an external.

    >>> print(unbound_external("zz"))
    JQ2006 unbound_external: external $zz has no value: give it when running (q.to_list(zz=...)); key('zz') outside the select or order_by of the group_by binding it reads as such a value
    """
    return QueryError(
        "JQ2006",
        f"external ${name} has no value: give it when running (q.to_list({name}=...)); key({name!r}) "
        "outside the select or order_by of the group_by binding it reads as such a value",
        doc_path=None,
    )


class State:
    """Per-run counters for the engine limits."""

    __slots__ = ("steps",)

    def __init__(self) -> None:
        self.steps = 0


class Compiler:
    """Turns a node tree into closures; holds the host operators and limits."""

    def __init__(self, operators: Mapping[str, Callable[..., Any]], limits: Mapping[str, int]) -> None:
        self.operators = operators
        self.max_steps = limits.get("steps")
        self.max_items = limits.get("sequence_items")
        self.limited = self.max_steps is not None or self.max_items is not None

    def too_many(self, n: int, where: str) -> None:
        """Raise ``JQ2009`` when a sequence of ``n`` items breaks the item limit."""
        if self.max_items is not None and n > self.max_items:
            raise QueryError(
                "JQ2009", f"a sequence of {n} items exceeds the limit {self.max_items}", doc_path=where
            )

    def seq(self, node: Node) -> SeqFn:
        """Compile a node to a closure returning its sequence."""
        f = self._seq(node)
        if not self.limited:
            return f
        max_steps = self.max_steps
        where = node.path

        def guarded(env: Env) -> list[Any]:
            st = env["#"]
            st.steps += 1
            if max_steps is not None and st.steps > max_steps:
                raise QueryError("JQ2009", f"the query took more than {max_steps} steps", doc_path=where)
            out = f(env)
            self.too_many(len(out), where)
            return out

        return guarded

    def bool(self, node: Node) -> BoolFn:
        """Compile a node to a closure returning its effective boolean value."""
        if isinstance(node, Call) and not node.host:
            special = self._bool_call(node)
            if special is not None:
                return special
        if isinstance(node, Quant):
            return self.quant(node)
        f = self.seq(node)
        where = node.path
        return lambda env: ebv(f(env), where)

    def _seq(self, node: Node) -> SeqFn:
        if isinstance(node, Lit):
            v = node.value
            if type(v) in (list, dict):
                return lambda env: [copy.deepcopy(v)]
            one = [v]
            return lambda env: one
        if isinstance(node, PathRef):
            return self.path(node)
        if isinstance(node, ArrayCons):
            return self.array(node)
        if isinstance(node, MapCons):
            return self.map(node)
        if isinstance(node, Call):
            return self.call(node)
        if isinstance(node, Quant):
            p = self.quant(node)
            return lambda env: [p(env)]
        if isinstance(node, Window):
            return compile_window(node, self)
        if isinstance(node, Asof):
            return compile_asof(node, self)
        if isinstance(node, Rolling):
            return compile_rolling(node, self)
        if isinstance(node, Resample):
            return compile_resample(node, self)
        return compile_flwor(node, self)

    def quant(self, node: Quant) -> BoolFn:
        """``$some``/``$every``: the condition's EBV with the variable bound to each item in turn."""
        items = self.seq(node.seq)
        cond = self.bool(node.pred)
        var = node.var
        every = node.every

        def test(env: Env) -> bool:
            inner = dict(env)
            for x in items(env):
                inner[var] = [x]
                if cond(inner) is not every:
                    return not every
            return every

        return test

    def path(self, node: PathRef) -> SeqFn:
        """A path: start at the variable's sequence, map each step over the items."""
        var = node.var if node.var is not None else "$"
        steps = node.steps
        if not steps:
            return lambda env: env[var]
        if len(steps) == 1 and steps[0][0] == "member":
            name = steps[0][1]

            def member(env: Env) -> list[Any]:
                out = []
                for x in env[var]:
                    if type(x) is dict:
                        v = x.get(name, MISSING)
                        if v is not MISSING:
                            out.append(v)
                return out

            return member

        def walk(env: Env) -> list[Any]:
            cur = env[var]
            for step, arg in steps:
                nxt: list[Any] = []
                for x in cur:
                    t = type(x)
                    if step == "member":
                        if t is dict and arg in x:
                            nxt.append(x[arg])
                    elif step == "index":
                        if t is list and -len(x) <= arg < len(x):  # type: ignore[operator]
                            nxt.append(x[arg])
                    elif t is list:
                        nxt.extend(x)
                    elif t is dict:
                        nxt.extend(x.values())
                cur = nxt
            return cur

        return walk

    def array(self, node: ArrayCons) -> SeqFn:
        fs = [self.seq(x) for x in node.items]
        return lambda env: [[item for f in fs for item in f(env)]]

    def map(self, node: MapCons) -> SeqFn:
        members = [(k if isinstance(k, str) else self.seq(k), self.seq(v), v.path) for k, v in node.members]
        where = node.path

        def build(env: Env) -> list[Any]:
            out = {}
            for k, f, vpath in members:
                v = f(env)
                if not v:
                    continue
                if len(v) > 1:
                    raise QueryError("JQ2001", f"a map member value has {len(v)} items", doc_path=vpath)
                if not isinstance(k, str):
                    ks = k(env)
                    if len(ks) != 1 or type(ks[0]) is not str:
                        code = "JQ2001" if len(ks) > 1 else "JQ2004"
                        raise QueryError(code, "a $map key must be exactly one string", doc_path=where)
                    out[ks[0]] = v[0]
                else:
                    out[k] = v[0]
            return [out]

        return build

    def call(self, node: Call) -> SeqFn:
        """An operator phrase: special forms first, then the function table or a host operator."""
        where = node.path
        if node.host:
            return self.host(node)
        name = node.name
        p = self._bool_call(node)
        if p is not None:
            return lambda env: [p(env)]
        args = [self.seq(a) for a in node.args]
        if name == "seq":
            return lambda env: [x for f in args for x in f(env)]
        if name == "if":
            cond = self.bool(node.args[0])
            then = args[1]
            other = args[2] if len(args) > 2 else (lambda env: [])
            return lambda env: then(env) if cond(env) else other(env)
        if name == "default":
            first, fallback = args
            return lambda env: first(env) or fallback(env)
        if name == "coalesce":

            def coalesce(env: Env) -> list[Any]:
                for f in args:
                    v = f(env)
                    if v and not (len(v) == 1 and v[0] is None):
                        return v
                return []

            return coalesce
        if name == "range":

            def rng(env: Env) -> list[Any]:
                bounds = range_bounds([f(env) for f in args], where)
                if bounds is None:
                    return []
                self.too_many(bounds[1] - bounds[0], where)
                if bounds[1] - bounds[0] > RANGE_ITEMS:
                    raise QueryError(
                        "JQ2009",
                        f"$range would make {bounds[1] - bounds[0]:,} items, more than {RANGE_ITEMS:,}",
                        doc_path=where,
                    )
                return list(range(*bounds))

            return rng
        fn = FUNCTIONS[name]
        if len(args) == 1:
            f0 = args[0]
            return lambda env: fn([f0(env)], where)
        return lambda env: fn([f(env) for f in args], where)

    def _bool_call(self, node: Call) -> BoolFn | None:
        name = node.name
        if name in ("and", "or"):
            ps = [self.bool(a) for a in node.args]
            if len(ps) == 2 and name == "and":
                p0, p1 = ps
                return lambda env: p0(env) and p1(env)
            if name == "and":
                return lambda env: all(p(env) for p in ps)
            return lambda env: any(p(env) for p in ps)
        if name == "not":
            p = self.bool(node.args[0])
            return lambda env: not p(env)
        if name in ("exists", "empty"):
            f = self.seq(node.args[0])
            return (lambda env: len(f(env)) > 0) if name == "exists" else (lambda env: not f(env))
        if name in TESTS:
            return self.compare(node)
        return None

    def compare(self, node: Call) -> BoolFn:
        """An existential comparison, specialised when one side is a scalar literal."""
        name = node.name
        a, b = node.args
        if isinstance(a, Lit) and not isinstance(b, Lit):
            a, b, name = b, a, FLIP[name]
        fa = self.seq(a)
        fb = self.seq(b)
        test = TESTS[name]

        def slow(env: Env) -> bool:
            return exists_pair(fa(env), fb(env), test)

        constant = isinstance(b, Lit) or (isinstance(b, PathRef) and not b.steps)
        if self.limited or not constant:
            return slow
        if isinstance(a, PathRef) and len(a.steps) == 1 and a.steps[0][0] == "member":
            var = a.var if a.var is not None else "$"
            member = str(a.steps[0][1])
            if isinstance(b, Lit):
                if type(b.value) in (list, dict):
                    return slow
                return member_compare_literal(var, member, name, b.value)
            return member_compare(var, member, name, fb, slow)
        if isinstance(b, Lit) and type(b.value) not in (list, dict):
            return compare_literal(fa, name, b.value)
        return slow

    def item_pred(self, node: Node, var: str) -> ItemPredMaker | None:
        """An item-level predicate for ``$where`` over the ``$for`` variable ``var``, if the shape allows.

        Covers ``$and/$or/$not``, ``$exists/$empty`` and comparisons of ``$var.member``
        against a literal or a bare variable (a ``$and`` of comparisons is fused into one
        test, see :func:`item_tests`). The maker runs once per outer tuple and returns
        ``pred(item)``; items must be objects (others raise ``AttributeError`` and the
        caller falls back to the general path).
        """
        if self.limited or not isinstance(node, Call) or node.host:
            return None
        tests = self.member_tests(node, var)
        if tests is not None:
            return item_tests(var, tests)
        name = node.name
        if name in ("and", "or", "not"):
            subs = [self.item_pred(a, var) for a in node.args]
            if any(s is None for s in subs):
                return None
            return item_logic(name, subs)  # type: ignore[arg-type]
        member = member_of(node.args[0], var) if node.args else None
        if name in ("exists", "empty") and member is not None:
            present = name == "exists"
            return lambda env: lambda d: (d.get(member, MISSING) is not MISSING) is present
        return None

    def member_tests(self, node: Node, var: str) -> list[MemberTest] | None:
        """``$var.member <op> scalar`` comparisons, alone or under ``$and``, or None."""
        if not isinstance(node, Call) or node.host:
            return None
        if node.name == "and":
            parts = [self.member_tests(a, var) for a in node.args]
            return None if any(p is None for p in parts) else [t for p in parts for t in p]  # type: ignore[union-attr]
        if node.name not in TESTS:
            return None
        a, b = node.args
        name = node.name
        if isinstance(a, Lit | PathRef) and member_of(a, var) is None:
            a, b, name = b, a, FLIP[name]
        member = member_of(a, var)
        if member is None:
            return None
        if isinstance(b, Lit) and type(b.value) not in (list, dict):
            return [MemberTest(member, name, b.value, None, self.compare(node))]
        if isinstance(b, PathRef) and not b.steps and b.var not in (None, var):
            return [MemberTest(member, name, None, b.var, self.compare(node))]
        return None

    def host(self, node: Call) -> SeqFn:
        """A registered host operator: each argument passed as its item (one) or list (else)."""
        fn = self.operators[node.name]
        fs = [self.seq(a) for a in node.args]
        where = node.path

        def run(env: Env) -> list[Any]:
            args = [v[0] if len(v) == 1 else v for v in (f(env) for f in fs)]
            try:
                value = fn(*args)
            except JarenlabError:
                raise
            except Exception as exc:
                raise QueryError(
                    "JQ2008", f"host operator ${node.name} raised {exc!r}", doc_path=where
                ) from exc
            if type(value) is not float and check_json(value):
                raise QueryError(
                    "JQ2008", f"host operator ${node.name} returned a non-JSON value", doc_path=where
                )
            return [value]

        return run


def check_operators(operators: Mapping[Any, Any]) -> None:
    """Refuse host operators (``JD0006``) a query could never call: a name that is not a name
    (``"$f"``, ``"a b"``), one of the language's own operators, or a value that is not callable.
    ``jl.open(..., operators=...)`` asks it as the store opens, the compiler again for a direct call.

    >>> check_operators({"twice": lambda x: 2 * x})
    >>> check_operators({"add": abs})
    Traceback (most recent call last):
    ...
    jarenlab.errors.StoreError: JD0006 invalid_option: host operator 'add' is one of the language's own operators ($add); give it another name
    """
    for name, fn in operators.items():
        if type(name) is not str or not VAR_NAME.match(name.replace("-", "_")):
            hint = f" (without the $: {name[1:]!r})" if type(name) is str and name.startswith("$") else ""
            raise StoreError(
                "JD0006",
                f"host operator name {name!r} is not a name{hint}: letters, digits, _ and -, called as {{'$name': [...]}}",
            )
        if name in ARITY:
            raise StoreError(
                "JD0006",
                f"host operator {name!r} is one of the language's own operators (${name}); give it another name",
            )
        if not callable(fn):
            raise StoreError("JD0006", f"host operator {name!r} is not callable ({type(fn).__name__})")


class CompiledQuery:
    """A checked, compiled document; run it over any root as often as needed.

    >>> cq = compile_query({"$count": "$[*]"})
    >>> cq.run([{"a": 1}, {"a": 2}]), cq.externals
    ([2], frozenset())
    """

    def __init__(
        self,
        document: Any,
        *,
        operators: Mapping[str, Callable[..., Any]] | None = None,
        limits: Mapping[str, int] | None = None,
        allowed_externals: frozenset[str] | None = None,
    ) -> None:
        ops = dict(operators or {})
        check_operators(ops)
        lim = dict(limits or {})
        for k, v in lim.items():
            if k not in LIMIT_KEYS or not is_count(v):
                raise StoreError("JD0006", f"limit {k}={v!r} is not one of {LIMIT_KEYS} with an integer >= 0")
        self.document = document
        parsed = parse(
            document,
            operators=frozenset(ops),
            max_depth=lim.get("depth", DEFAULT_MAX_DEPTH),
            allowed_externals=allowed_externals,
        )
        self.externals: frozenset[str] = parsed.externals
        self._result_items = lim.get("result_items")
        self._limited = "steps" in lim or "sequence_items" in lim
        self._fn = Compiler(ops, lim).seq(parsed.node)

    def run(self, root: Any, externals: Mapping[str, Any] | None = None) -> list[Any]:
        """Evaluate over ``root`` (the context item ``$``); returns the flat result sequence."""
        env: Env = {"$": [root]}
        given = externals or {}
        for name in self.externals:
            if name not in given:
                raise unbound_external(name)
            value = given[name]
            why = check_json(value)
            if why:
                raise QueryError("JQ2011", f"external ${name} is not a JSON value: {why}")
            env[name] = [value]
        if self._limited:
            env["#"] = State()
        out = self._fn(env)
        if self._result_items is not None and len(out) > self._result_items:
            raise QueryError(
                "JQ2009", f"{len(out)} result items exceed the limit {self._result_items}", doc_path=""
            )
        return out


def compile_query(
    document: Any,
    *,
    operators: Mapping[str, Callable[..., Any]] | None = None,
    limits: Mapping[str, int] | None = None,
    allowed_externals: frozenset[str] | None = None,
) -> CompiledQuery:
    """Check and compile a query document (``QueryError`` JQ00xx on a bad one).

    ``operators`` registers host operators ``{"$name": [...]}``; ``limits`` takes
    ``sequence_items``, ``result_items``, ``steps`` and ``depth``; ``allowed_externals``
    turns on closed-world compilation (an undeclared free variable is ``JQ0005``).

    >>> compile_query({"$eq": ["$a", "$b"]}).externals == {"a", "b"}
    True
    """
    return CompiledQuery(document, operators=operators, limits=limits, allowed_externals=allowed_externals)


def evaluate(
    document: Any,
    root: Any,
    externals: Mapping[str, Any] | None = None,
    *,
    operators: Mapping[str, Callable[..., Any]] | None = None,
    limits: Mapping[str, int] | None = None,
) -> list[Any]:
    """Compile and run in one call: ``compile_query(document, ...).run(root, externals)``.

    >>> evaluate(["$[*].a"], [{"a": 1}, {"b": 2}, {"a": 3}])
    [[1, 3]]
    """
    return compile_query(document, operators=operators, limits=limits).run(root, externals)


def shape(seq: list[Any]) -> Any:
    """The store's result shape: nothing is None, one item is the item, more is the list.

    >>> shape([]), shape([5]), shape([1, 2])
    (None, 5, [1, 2])
    """
    if not seq:
        return None
    return seq[0] if len(seq) == 1 else seq
