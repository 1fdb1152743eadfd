"""Python values to JSON values: the documented conversions, and coded refusals.

The rules (also in ``docs/store.md``, "Values JSON cannot hold"):

- ``dict`` (string keys), ``list``/``tuple``, ``str``, ``bool``, ``int``, finite ``float``, ``None``: as is.
- a pandas ``Series``, ``Index`` or extension array (what ``.unique()`` gives): the list of its
  values (a missing one refused as in any list).
- numpy scalars and arrays: their Python value (``.item()`` / ``.tolist()``); a ``datetime64`` (any
  unit, pandas' nanoseconds too) the naive ``datetime`` it holds, so the instant it is.
- ``datetime`` with a time zone: converted to UTC, ISO 8601 with ``Z``; a naive ``datetime``: ISO 8601
  without an offset (no zone is invented); ``date``: ``YYYY-MM-DD``; ``time``: ISO 8601.
- ``uuid.UUID``: its string; ``Decimal``: refused (it would lose its exactness silently).
- NaN, pandas ``NA`` and ``NaT`` as an object's member of a document written to a collection
  (``absent=True``): the member is absent (what they mean in pandas, and what a null cell of a
  DataFrame or Arrow table means: see ``frames.py``); anywhere else (an array item, a job payload)
  they are refused with ``JD2008``.
- infinity, ``bytes``, sets and other objects: refused with ``JD2008`` naming the path.

>>> import datetime as dt
>>> to_json({"t": dt.datetime(2013, 1, 1, 5, tzinfo=dt.timezone.utc), "n": 1})
{'t': '2013-01-01T05:00:00Z', 'n': 1}
"""

from __future__ import annotations

import datetime as dt
import math
import uuid
from typing import Any

from jarenlab import pointer
from jarenlab.errors import QueryError, ValidationError

_PLAIN = (str, int, bool, type(None))

#: What to write instead of a pandas ``Period`` or ``Interval`` (a value or a DataFrame column).
NO_SPAN = (
    "store its text (.astype(str), str(value)) or a Period's start (.dt.to_timestamp(), value.to_timestamp())"
)


def to_json(value: Any, path: str = "", *, absent: bool = False) -> Any:
    """Return ``value`` as JSON-safe Python data (the same object when nothing needs converting).

    ``absent=True`` (a document written to a collection) drops an object's members that hold NaN,
    ``pd.NA`` or ``pd.NaT``: missing, as in a DataFrame; otherwise they are refused like infinity.
    """
    kind = type(value)
    if kind is dict:
        out = value
        for k, v in value.items():
            if type(k) is not str:
                raise _refuse(f"object keys must be strings (got {type(k).__name__})", path)
            if type(v) in _PLAIN:
                continue
            if absent and is_missing(v):  # NaN, NA, NaT: the member is absent, as in a DataFrame
                if out is value:
                    out = dict(value)
                del out[k]
                continue
            c = to_json(v, pointer.join(path, k), absent=absent)
            if c is not v:
                if out is value:
                    out = dict(value)
                out[k] = c
        return out
    if kind in _PLAIN:
        return value
    if kind is float:
        if math.isfinite(value):
            return value
        raise _refuse(f"{value!r} is not a JSON number", path)
    if kind is list or kind is tuple:
        items = [to_json(v, f"{path}/{i}", absent=absent) for i, v in enumerate(value)]
        if kind is list and all(a is b for a, b in zip(items, value)):
            return value
        return items
    return _convert(value, path, absent)


def days(doc: dict[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    """``doc`` with each named member that holds a naive midnight ``datetime`` (or ``pd.Timestamp``) as
    its ``date``: what a schema's ``"format": "date"`` member takes (pandas reads dates as midnight
    timestamps). Anything else is left for :func:`to_json` and the validator.

    >>> days({"d": dt.datetime(2020, 1, 2), "t": dt.datetime(2020, 1, 2, 5)}, ("d", "t"))
    {'d': datetime.date(2020, 1, 2), 't': datetime.datetime(2020, 1, 2, 5, 0)}
    """
    out = doc
    for name in names:
        v = doc.get(name)
        if type(v).__name__ == "datetime64" and type(v).__module__ == "numpy" and not is_missing(v):
            v = _instants(v, name)
        if isinstance(v, dt.datetime) and v.tzinfo is None and v.time() == dt.time() and not is_missing(v):
            if out is doc:
                out = dict(doc)
            out[name] = v.date()
    return out


def is_missing(value: Any) -> bool:
    """True for the values pandas uses for "missing": NaN (Python or numpy), ``pd.NA``, ``pd.NaT``
    (and numpy's ``NaT``).

    >>> is_missing(float("nan")), is_missing(None), is_missing(0.0)
    (True, False, False)
    """
    if isinstance(value, float):
        return value != value
    kind = type(value)
    if kind.__name__ == "datetime64" and kind.__module__ == "numpy":
        return bool(value != value)  # numpy's NaT
    return kind.__name__ in ("NAType", "NaTType") and kind.__module__.startswith("pandas")


def query_value(value: Any, code: str, what: str) -> Any:
    """A Python value as a query literal (``JQ0010``) or external (``JQ2011``): converted exactly as a
    write converts it (:func:`to_json`), so a ``datetime`` finds the text a write stored.

    >>> import datetime as dt, numpy as np
    >>> query_value(dt.date(2020, 1, 2), "JQ0010", "x"), query_value(np.int64(3), "JQ0010", "x")
    ('2020-01-02', 3)
    """
    try:
        return to_json(value)
    except (ValidationError, RecursionError) as err:
        why = err.reason if isinstance(err, ValidationError) else "nested too deeply"
        raise QueryError(code, f"{what}: {why}") from None


def _convert(value: Any, path: str, absent: bool = False) -> Any:
    if isinstance(value, dict):
        return to_json(dict(value), path, absent=absent)
    if isinstance(value, list):  # a subclass (a session's frozen snapshot): as the plain list
        return to_json(list(value), path, absent=absent)
    if isinstance(value, bool | int | str):
        return _base(value)
    if isinstance(value, float):
        return to_json(float(value), path)
    module = type(value).__module__
    if (module == "numpy" or module.startswith("numpy.")) and hasattr(value, "tolist"):
        if getattr(getattr(value, "dtype", None), "kind", "") == "M":
            return to_json(_instants(value, path), path, absent=absent)
        return to_json(value.tolist(), path, absent=absent)
    if module.startswith("pandas"):
        if type(value).__name__ == "Timestamp" and value is not _nat():
            return _convert(value.to_pydatetime(), path)
        if getattr(value, "ndim", None) == 1 and hasattr(value, "tolist"):
            # a Series, an Index, an extension array (pandas 3's .unique() of strings): a list
            return to_json(value.tolist(), path)
        span = f": {NO_SPAN}" if type(value).__name__ in ("Period", "Interval") else ""
        raise _refuse(f"pandas {type(value).__name__} ({value!r}) has no JSON form{span}", path)
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None and value.utcoffset() is not None:
            utc = value.astimezone(dt.UTC).replace(tzinfo=None)
            return utc.isoformat() + "Z"
        return value.isoformat()
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    raise _refuse(f"a {type(value).__name__} has no JSON form", path)


def _instants(value: Any, path: str) -> Any:
    """A numpy ``datetime64`` (scalar or array, any unit: pandas' is nanoseconds) as the naive
    ``datetime`` values it holds, to the microsecond (as ``pd.Timestamp.to_pydatetime``); its own
    ``tolist()`` gives nanoseconds as integers. NaT (here: not a member's value) is refused."""
    out = value.astype("datetime64[us]").tolist()
    if out is None or (type(out) is list and None in _flat(out)):
        raise _refuse("numpy NaT has no JSON form", path)
    return out


def _flat(items: list[Any]) -> list[Any]:
    return [x for v in items for x in (_flat(v) if type(v) is list else [v])]


def _base(value: Any) -> Any:
    for base in (bool, int, str):
        if isinstance(value, base):
            return base(value)
    return value


def _nat() -> Any:
    import pandas as pd

    return pd.NaT


def _refuse(reason: str, path: str) -> ValidationError:
    return ValidationError("JD2008", reason + (f" at {path}" if path else ""))
