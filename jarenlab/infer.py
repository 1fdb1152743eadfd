"""A model from data: :func:`infer_model` proposes a collection declaration to print, edit and open.

The proposal reads the values a load would store (a DataFrame goes through the same conversion as
``insert_many``), so loading the same data into the proposed model succeeds:

- types: ``integer``, ``number`` (integers and reals mixed), ``string``, ``boolean``, ``object``
  (its members inferred the same way), ``array`` (its items' common schema), with ``null`` added
  where a dict holds ``None``; a member holding several kinds gets a list of types;
- formats: ``date`` for ``date`` values, midnight timestamps without a zone (what pandas reads from
  a date column) and ``YYYY-MM-DD`` text; ``date-time`` for zone-aware timestamps and RFC 3339 text
  with a zone; timestamps without a zone that are not midnight stay plain strings (they name no
  instant: localize them, ``tz_localize("UTC")``, to make them ``date-time``);
- ``required``: the members present in every row;
- the key: ``key="symbol"`` makes ``/symbol`` the key (it must be present in every row as a string
  or an integer; a DataFrame's index named like it counts), ``key=["origin", "time_hour"]`` a
  composite key of those members (index levels named like them count); without one, keys are an ``integer``
  identity;
- candidate indexes: text and date members that repeat (fewer distinct values than rows), at most
  three, named ``by_<member>``.

>>> import pandas as pd
>>> frame = pd.DataFrame({"symbol": ["A", "A", "B"], "close": [1.5, 2.0, 3], "day": pd.to_datetime(["2020-01-02"] * 3)})
>>> decl = infer_model(frame, name="prices")["collections"]["prices"]
>>> decl["schema"]["properties"]["day"], decl["schema"]["required"], decl["identity"]
({'type': 'string', 'format': 'date'}, ['symbol', 'close', 'day'], 'integer')
>>> [ix["name"] for ix in decl["indexes"]]
['by_symbol']
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from jarenlab.errors import StoreError
from jarenlab.query.planner.diagnose import json_kind
from jarenlab.values import to_json

_DAY = re.compile(r"\d{4}-\d\d-\d\d\Z")
_INSTANT = re.compile(r"\d{4}-\d\d-\d\d[Tt ]\d\d:\d\d:\d\d(\.\d+)?([Zz]|[+-]\d\d:\d\d)\Z")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
#: Most candidate indexes proposed.
MAX_INDEXES = 3


def infer_model(data: Any, *, key: str | list[str] | None = None, name: str = "rows") -> dict[str, Any]:
    """Propose a model document with one collection ``name`` for ``data`` (a DataFrame, an Arrow
    table or dicts); ``key`` names the member that is the key, or a list of members for a
    composite key (else an integer identity).

    The result is a plain dict: print it, edit it, pass it to :func:`jarenlab.open`.

    >>> import pandas as pd
    >>> frame = pd.DataFrame({"origin": ["JFK", "JFK"], "hour": [1, 2], "temp": [3.5, 4.0]})
    >>> infer_model(frame.set_index(["origin", "hour"]), key=["origin", "hour"])["collections"]["rows"]["key"]
    ['/origin', '/hour']
    """
    from jarenlab import frames

    if type(name) is not str or not _NAME.match(name):
        raise StoreError("JD2010", f"name is a collection name (letters, digits, _), not {name!r}")
    if isinstance(key, (list, tuple)) and (len(key) < 2 or not all(isinstance(k, str) for k in key)):
        raise StoreError("JD2010", f"a composite key names two or more members, not {key!r}", collection=name)
    index_as = key if isinstance(key, str) and frames.is_frame(data) and data.index.name == key else None
    records = frames.records_from(data, index_as=index_as)
    for i, row in enumerate(records):
        if type(row) is not dict:
            raise StoreError("JD2010", f"row {i} is a {type(row).__name__}, not a dict", position=i)
    schema = _object(records)
    decl: dict[str, Any] = {"schema": schema}
    if key is None:
        decl["key"] = None
        decl["identity"] = "integer"
    else:
        members = [key] if isinstance(key, str) else list(key)
        for member in members:
            sub = schema.get("properties", {}).get(member)
            if (
                member not in schema.get("required", ())
                or sub is None
                or sub.get("type") not in ("string", "integer")
            ):
                raise StoreError(
                    "JD2002",
                    f"key {member!r} must be a member every row holds as a string or an integer",
                    collection=name,
                )
        pointers = ["/" + m.replace("~", "~0").replace("/", "~1") for m in members]
        decl["key"] = pointers[0] if isinstance(key, str) else pointers
    # (a composite key's members are no index: its one column serves whole keys only)
    decl["indexes"] = _candidates(records, schema, key if isinstance(key, str) else None)
    return {"$model": "0.1", "collections": {name: decl}}


def _kind(value: Any) -> str:
    """The kind of one Python value as a load would store it (formats as their own kinds)."""
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None and value.utcoffset() is not None:
            return "date-time"
        return "date" if value.time() == dt.time() else "naive"
    if isinstance(value, dt.date):
        return "date"
    v = to_json(value, absent=True)
    kind = json_kind(v)
    if kind == "string":
        return "date" if _DAY.match(v) else "date-time" if _INSTANT.match(v) else "string"
    return kind


def _schema(values: list[Any]) -> dict[str, Any]:
    kinds = {_kind(v) for v in values}
    nullable = "null" in kinds
    kinds.discard("null")
    text = {"string", "date", "date-time", "naive"}
    out: dict[str, Any]
    if not kinds:
        out = {"type": "null"}
    elif kinds <= {"integer"}:
        out = {"type": "integer"}
    elif kinds <= {"integer", "number"}:
        out = {"type": "number"}
    elif kinds == {"boolean"}:
        out = {"type": "boolean"}
    elif kinds == {"date"} or kinds == {"date-time"}:
        out = {"type": "string", "format": next(iter(kinds))}
    elif kinds <= text:
        out = {"type": "string"}
        if "naive" in kinds:
            out["description"] = "timestamps without a zone: tz_localize them to store date-times"
    elif kinds == {"object"}:
        out = _object([to_json(v, absent=True) for v in values if v is not None])
    elif kinds == {"array"}:
        items = [x for v in values if v is not None for x in to_json(v, absent=True)]
        out = {"type": "array", "items": _schema(items)} if items else {"type": "array"}
    else:
        names = sorted(
            {
                "string" if k in text else "number" if k == "integer" and "number" in kinds else k
                for k in kinds
            }
        )
        return {"type": names + (["null"] if nullable else [])}
    if nullable and out["type"] != "null":
        out["type"] = [out["type"], "null"]
    return out


def _object(rows: list[dict[str, Any]]) -> dict[str, Any]:
    members: dict[str, list[Any]] = {}
    for row in rows:
        for k, v in row.items():
            members.setdefault(k, []).append(v)
    required = [k for k, vs in members.items() if len(vs) == len(rows)]
    out: dict[str, Any] = {"type": "object", "properties": {k: _schema(vs) for k, vs in members.items()}}
    if required:
        out["required"] = required
    return out


def _candidates(rows: list[dict[str, Any]], schema: dict[str, Any], key: str | None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for member, sub in schema.get("properties", {}).items():
        if member == key or sub.get("type") != "string" or not _NAME.match(member):
            continue
        values = [r[member] for r in rows if member in r]
        distinct = len({str(v) for v in values})
        if 1 < distinct < len(values):
            out.append({"name": f"by_{member}", "path": f"$.{member}"})
        if len(out) == MAX_INDEXES:
            break
    return out
