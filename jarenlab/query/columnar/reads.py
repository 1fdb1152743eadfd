"""What a plan reads, and whether the columnar path can take it (no Arrow here: the planner asks
this of every native plan).
"""

from __future__ import annotations

from jarenlab.query.planner.plan import Plan
from jarenlab.query.planner.preds import (
    AggOut,
    ArrOut,
    DateKey,
    DocOut,
    Field,
    FieldOut,
    MapOut,
    Out,
    Ranged,
    Ranking,
    Reason,
    fields_of,
)

#: The families a column holds exactly (a typed member is its family's value or missing).
FAMILIES = ("string", "integer", "number")


def needs(plan: Plan) -> tuple[Field, ...] | Reason:
    """The fields a native plan reads (each schema-typed), or why the columnar path cannot take it."""
    if plan.mode != "native":
        return Reason("plan", f"the planner runs it in the {plan.mode} mode")
    if plan.udfs:
        return Reason("host function", "a condition over a host function runs in the database")
    if isinstance(plan.output, Ranking):
        if any(isinstance(got, Ranged) for _, _, got in plan.output.compute):
            return Reason("$rolling", "a rolling returned whole: whole documents are not held in columns")
        return Reason("$window", "a window returned whole: whole documents are not held in columns")
    found: dict[Field, None] = {}
    computed: set[str | int] = set()
    if plan.rolling is not None:
        for f in plan.rolling.partition:
            found.setdefault(f)
        for name, _, got in plan.rolling.compute:
            assert isinstance(got, Ranged)
            found.setdefault(got.time)
            if got.field is not None:
                found.setdefault(got.field)
            computed.add(name)
    if plan.window is not None:
        for f in (*plan.window.partition, *(k.field for k in plan.window.order if k.field is not None)):
            found.setdefault(f)
        for name, _, got in plan.window.compute:
            read = got[0] if isinstance(got, tuple) else getattr(got, "field", None)
            if read is not None:
                found.setdefault(read)
            computed.add(name)
    for f in fields_of(plan.where):
        found.setdefault(f)
    if plan.group is not None:
        for key in plan.group:
            if isinstance(key, Field) and key.family not in ("string", "integer"):
                return Reason(
                    pointer(key), "a group key is a string or an integer member, or a date function"
                )
            found.setdefault(key.field if isinstance(key, DateKey) else key)
    if plan.aggregate is not None and plan.aggregate[1] is not None:
        found.setdefault(plan.aggregate[1])
    for k in plan.order:
        if k.field is not None:
            found.setdefault(k.field)
        if k.agg is not None and k.agg.field is not None:
            found.setdefault(k.agg.field)
    for a in plan.order_aggregates:
        if a.field is not None:
            found.setdefault(a.field)
    for what, _, _ in plan.having:
        if isinstance(what, AggOut) and what.field is not None:
            found.setdefault(what.field)
    outputs: dict[Field, None] = {}
    why = out_fields(plan.output, outputs)
    if why is not None:
        return why
    for f in outputs:  # a computed member of a rolling or a window is computed, not read
        if not (len(f.steps) == 1 and f.steps[0] in computed):
            found.setdefault(f)
    for f in found:
        if f.family not in FAMILIES:
            return Reason(
                pointer(f),
                "not schema-typed as one string, integer or number (a column holds typed members)",
            )
    if not found:
        return Reason("plan", "reads no member: SQL answers it from the rows alone")
    return tuple(found)


def out_fields(out: Out | None, found: dict[Field, None]) -> Reason | None:
    if isinstance(out, DocOut):
        return Reason("$return", "whole documents are not held in columns")
    field = out.field if isinstance(out, FieldOut | AggOut) else None
    if field is not None:
        found.setdefault(field)
    elif isinstance(out, MapOut):
        for _, m in out.members:
            why = out_fields(m, found)
            if why is not None:
                return why
    elif isinstance(out, ArrOut):
        for m in out.items:
            why = out_fields(m, found)
            if why is not None:
                return why
    return None


def pointer(f: Field) -> str:
    return "/" + "/".join(str(s) for s in f.steps)


def member(f: Field) -> Field:
    """The field a column is held under: its steps and family."""
    return f if f.column is None else Field(f.steps, f.family, None)
