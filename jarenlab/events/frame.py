"""Events as a pandas DataFrame (``Events.frame``): one row per event, indexed by ``seq``.

>>> from jarenlab.events.event import Event, from_ms
>>> frame = events_frame([Event(1, "ping", {"n": 1}, from_ms(0))], flatten=True)
>>> list(frame.columns)
['type', 'at', 'outcome', 'dedupe_key', 'caused_by_job', 'caused_by_attempt', 'cursor', 'payload.n']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from jarenlab.events.event import Event

if TYPE_CHECKING:
    import pandas as pd


def events_frame(events: Sequence[Event], *, flatten: bool = False) -> pd.DataFrame:
    """Columns ``type, at, payload, outcome, dedupe_key, caused_by_job, caused_by_attempt, cursor``.

    ``at`` is a tz-aware UTC column, ``caused_by_attempt`` a nullable ``Int64``, the others keep
    their Python values (``None`` stays ``None``). ``flatten=True`` replaces ``payload`` with one
    ``payload.<member>`` column per member (``pandas.json_normalize``).
    """
    import pandas as pd

    frame = pd.DataFrame(
        {
            "type": _objects([e.type for e in events]),
            "at": pd.to_datetime([e.at for e in events], utc=True),
            "payload": _objects([e.payload for e in events]),
            "outcome": _objects([e.outcome for e in events]),
            "dedupe_key": _objects([e.dedupe_key for e in events]),
            "caused_by_job": _objects([e.caused_by_job for e in events]),
            "caused_by_attempt": pd.array([e.caused_by_attempt for e in events], dtype="Int64"),
            "cursor": _objects([e.cursor for e in events]),
        },
        index=pd.Index([e.seq for e in events], name="seq", dtype="int64"),
    )
    if flatten and events:
        spread = pd.json_normalize([e.payload if isinstance(e.payload, dict) else {} for e in events])
        spread.columns = [f"payload.{c}" for c in spread.columns]
        spread.index = frame.index
        frame = pd.concat([frame.drop(columns="payload"), spread], axis=1)
    return frame


def _objects(values: list[Any]) -> Any:
    """An object array (keeps ``None`` as ``None``, and does not align on an index as a Series would)."""
    import numpy as np

    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out
