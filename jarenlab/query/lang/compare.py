"""Comparisons: the existential tests and the specialised hot-path closures.

``$var.member <op> constant`` is the shape of nearly every filter, so it gets closures
with the member lookup and the type guard inlined; ``item_tests`` runs a conjunction of
such tests on one object item for the engine's ``filter()`` fast path.

>>> TESTS["lt"]("a", "b"), TESTS["le"](None, None), TESTS["ne"](1, "1")
(True, False, True)
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any, NamedTuple

from jarenlab.query.lang.compiled import BoolFn, Env, ItemPredMaker, SeqFn
from jarenlab.query.lang.nodes import Node, PathRef
from jarenlab.query.lang.values import json_eq, json_lt, kind

MISSING: Any = object()
FLIP = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}
NUM_OPS = {"lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge}
TESTS: dict[str, Callable[[Any, Any], bool]] = {
    "eq": json_eq,
    "ne": lambda a, b: not json_eq(a, b),
    "lt": json_lt,
    "gt": lambda a, b: json_lt(b, a),
    "le": lambda a, b: json_lt(a, b) or (json_eq(a, b) and kind(a) in ("number", "string")),
    "ge": lambda a, b: json_lt(b, a) or (json_eq(a, b) and kind(a) in ("number", "string")),
}


def member_of(node: Node, var: str) -> str | None:
    if (
        isinstance(node, PathRef)
        and node.var == var
        and len(node.steps) == 1
        and node.steps[0][0] == "member"
    ):
        return str(node.steps[0][1])
    return None


def item_logic(name: str, subs: list[ItemPredMaker]) -> ItemPredMaker:
    if name == "not":
        (sub,) = subs

        def negated(env: Env) -> Callable[[Any], bool]:
            p = sub(env)
            return lambda d: not p(d)

        return negated
    if len(subs) == 2:
        s0, s1 = subs

        def pair(env: Env) -> Callable[[Any], bool]:
            p0, p1 = s0(env), s1(env)
            return (lambda d: p0(d) and p1(d)) if name == "and" else (lambda d: p0(d) or p1(d))

        return pair

    def many(env: Env) -> Callable[[Any], bool]:
        ps = [s(env) for s in subs]
        if name == "and":
            return lambda d: all(p(d) for p in ps)
        return lambda d: any(p(d) for p in ps)

    return many


class MemberTest(NamedTuple):
    """``$var.member <op> operand`` with a scalar literal or a bare variable as the operand.

    ``other`` names the operand's variable (then ``operand`` is unused); ``slow`` is the
    same comparison on a tuple environment, for an operand that is not one scalar.
    """

    member: str
    op: str
    operand: Any
    other: str | None
    slow: BoolFn


def item_tests(var: str, tests: list[MemberTest]) -> ItemPredMaker:
    """A conjunction of member tests as one ``pred(item)``: one call per item, not one per test.

    Each test becomes ``(member, kinds, op, y, negate)`` and passes when the member is
    present and ``(type(x) in kinds and op(x, y)) is not negate``: the comparison with
    its type guard (``ne`` is a negated ``eq``; an order test against anything but a
    number or a string has no kinds, so it never passes). Items must be objects: any
    other item raises ``AttributeError`` on ``.get`` and the caller takes the general path.

    >>> never = lambda env: False
    >>> p = item_tests("it", [MemberTest("a", "gt", 1, None, never), MemberTest("b", "ne", "x", None, never)])({})
    >>> p({"a": 2, "b": "y"}), p({"a": 2, "b": "x"}), p({"a": True, "b": "y"}), p({"a": 2})
    (True, False, False, False)
    """

    def maker(env: Env) -> Callable[[Any], bool]:
        checks = []
        for t in tests:
            y = t.operand
            if t.other is not None:
                ys = env[t.other]
                if len(ys) != 1 or type(ys[0]) in (list, dict):
                    return lambda d: all(u.slow({**env, var: [d]}) for u in tests)
                y = ys[0]
            ty = type(y)
            num = ty is int or ty is float
            kinds = (int, float) if num else (ty,)
            if t.op in NUM_OPS:
                checks.append((t.member, kinds if num or ty is str else (), NUM_OPS[t.op], y, False))
            else:
                checks.append((t.member, kinds, operator.eq, y, t.op == "ne"))

        def pred(d: Any) -> bool:
            for member, kinds, op, y, negate in checks:
                x = d.get(member, MISSING)
                if (type(x) in kinds and op(x, y)) is negate or x is MISSING:
                    return False
            return True

        return pred

    return maker


def exists_pair(xs: list[Any], ys: list[Any], test: Callable[[Any, Any], bool]) -> bool:
    return any(test(x, y) for x in xs for y in ys)


def member_compare(var: str, member: str, name: str, const: SeqFn, slow: BoolFn) -> BoolFn:
    """``$var.member <op> constant`` with the member lookup and the type guard inlined.

    The hot path of every filter: one closure call per tuple, no intermediate lists.
    Anything unusual (a constant that is not one scalar) takes the generic path.
    """
    if name in NUM_OPS:
        op = NUM_OPS[name]

        def order(env: Env) -> bool:
            ys = const(env)
            if len(ys) != 1:
                return slow(env)
            y = ys[0]
            ty = type(y)
            num = ty is int or ty is float
            if not num and ty is not str:
                return False
            for d in env[var]:
                if type(d) is dict:
                    x = d.get(member, MISSING)
                    tx = type(x)
                    if ((tx is int or tx is float) if num else tx is str) and op(x, y):
                        return True
            return False

        return order
    negate = name == "ne"

    def equal(env: Env) -> bool:
        ys = const(env)
        if len(ys) != 1 or type(ys[0]) in (list, dict):
            return slow(env)
        y = ys[0]
        ty = type(y)
        num = ty is int or ty is float
        for d in env[var]:
            if type(d) is dict:
                x = d.get(member, MISSING)
                if x is MISSING:
                    continue
                tx = type(x)
                same = x == y and (tx is ty or (num and (tx is int or tx is float)))
                if same is not negate:
                    return True
        return False

    return equal


def member_compare_literal(var: str, member: str, name: str, y: Any) -> BoolFn:
    """``$var.member <op> literal``: as :func:`_member_compare` with the literal's kind known now."""
    ty = type(y)
    num = ty is int or ty is float
    if name in NUM_OPS:
        op = NUM_OPS[name]
        if not num and ty is not str:
            return lambda env: False
        kinds = (int, float) if num else (str,)

        def order(env: Env) -> bool:
            for d in env[var]:
                if type(d) is dict:
                    x = d.get(member, MISSING)
                    if type(x) in kinds and op(x, y):
                        return True
            return False

        return order
    kinds = (int, float) if num else (ty,)
    negate = name == "ne"

    def equal(env: Env) -> bool:
        for d in env[var]:
            if type(d) is dict:
                x = d.get(member, MISSING)
                if x is not MISSING and (x == y and type(x) in kinds) is not negate:
                    return True
        return False

    return equal


def compare_literal(fa: SeqFn, name: str, lit: Any) -> BoolFn:
    t = type(lit)
    if name == "eq" and t is not float and t is not int:

        def eq_scalar(env: Env) -> bool:
            for x in fa(env):  # noqa: SIM110 - a plain loop beats any() on the hot path
                if x == lit and type(x) is t:
                    return True
            return False

        return eq_scalar
    if t is int or t is float:
        if name in NUM_OPS:
            op = NUM_OPS[name]

            def order_num(env: Env) -> bool:
                for x in fa(env):
                    tx = type(x)
                    if (tx is int or tx is float) and op(x, lit):
                        return True
                return False

            return order_num
        if name == "eq":

            def eq_num(env: Env) -> bool:
                for x in fa(env):
                    tx = type(x)
                    if (tx is int or tx is float) and x == lit:
                        return True
                return False

            return eq_num
    test = TESTS[name]
    return lambda env: any(test(x, lit) for x in fa(env))
