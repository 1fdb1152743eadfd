"""Where pandas users reach in the builder: ``order_by(..., ascending=False)`` (``sort_values``),
``.head(n)`` and ``len(q)``, checked against pandas on SQLite and on PostgreSQL."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from jarenlab import JarenlabError, it

ROWS = [{"id": f"n{i:02d}", "score": i * 7 % 5, "tag": "abc"[i % 3]} for i in range(25)]


@pytest.fixture
def notes(store: Any) -> Any:
    store["notes"].insert_many(ROWS)
    return store["notes"]


def test_ascending_head_and_len_answer_as_pandas(notes: Any) -> None:
    frame = pd.DataFrame(ROWS)
    for ascending in (False, [False, True], [True, False]):
        want = frame.sort_values(["score", "id"], ascending=ascending).head(7)["id"].tolist()
        got = notes.order_by(it.score, it.id, ascending=ascending).head(7).select(it.id).to_list()
        assert got == want, ascending
        assert notes.order_by(it.score, it.id, ascending=ascending).head(7).explain().mode == "native"
    assert notes.head().select(it.id).to_list() == frame.head()["id"].tolist()
    assert len(notes.where(it.score >= 3)) == int((frame.score >= 3).sum())
    assert len(notes.order_by(it.id).head(4)) == 4
    for bad in ([False], "no"):
        with pytest.raises(JarenlabError) as err:
            notes.order_by(it.score, it.id, ascending=bad)
        assert err.value.code == "JQ0007"
    with pytest.raises(JarenlabError) as err:
        notes.order_by(it.score.desc(), ascending=False)
    assert err.value.code == "JQ0007" and "give it once" in err.value.reason
