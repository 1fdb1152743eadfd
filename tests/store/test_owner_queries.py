"""Owner views that query: ``store.as_owner(name)["bookings"]`` runs where/execute/explain/live/
to_pandas over that owner's records only. A hostile suite: results, aggregates, groups, errors,
explain output and live patches never show anything of another owner's records."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest

import jarenlab as jl
from jarenlab import it, param
from jarenlab.query import compile_query
from jarenlab.query.planner.run import operator

MODEL: dict[str, Any] = {
    "$model": "0.1",
    "collections": {
        "bookings": {
            "key": "/id",
            "owner": "/owner",
            "schema": {
                "type": "object",
                "required": ["id", "owner"],
                "properties": {
                    "id": {"type": "string"},
                    "owner": {"type": "string"},
                    "room": {"type": "string"},
                    "n": {"type": "integer"},
                    "x": {},
                    "tag": {"type": "string"},
                },
            },
            "indexes": [{"name": "by_owner_room", "path": ["$.owner", "$.room"]}],
        },
        "counters": {
            "key": None,
            "identity": "integer",
            "owner": "/owner",
            "schema": {
                "type": "object",
                "required": ["owner"],
                "properties": {"owner": {"type": "integer"}, "v": {"type": "integer"}},
            },
        },
    },
}
#: What only the other owner's records hold: none of it may ever show through ann's view.
#: (The number is one no timing or plan figure in explain output contains by chance: 999999 did, in a float.)
SECRETS = ("bob-secret", "7391826", "Zsecret")


def _seed(store: Any) -> None:
    rows = []
    for i in range(12):
        rows.append({"id": f"a{i}", "owner": "ann", "room": "AB"[i % 2], "n": i, "x": i, "tag": f"t{i % 3}"})
    for i in range(12):
        # Bob's records are built to break ann's queries if they were ever read: a zero divisor,
        # a string where ann has numbers (incomparable in $orderby), huge and secret values.
        rows.append(
            {
                "id": f"bob-secret-{i}",
                "owner": "bob",
                "room": "AB"[i % 2],
                "n": 7391826 + i if i else -1,  # -1: a zero divisor in `$idiv [.., n + 1]`
                "x": "Zsecret",
                "tag": "t0",
            }
        )
    store["bookings"].insert_many(rows)


@pytest.fixture
def store(open_store: Any) -> Any:
    s = open_store(MODEL)
    _seed(s)
    return s


def _ann_docs(store: Any) -> list[dict[str, Any]]:
    return [d for d in store["bookings"].to_list() if d["owner"] == "ann"]


def _clean(value: Any) -> None:
    text = json.dumps(value, default=str, ensure_ascii=False)
    for secret in SECRETS:
        assert secret not in text, text


DOCUMENTS: list[Any] = [
    {"$for": {"b": "$[*]"}, "$return": "$b"},
    {"$for": {"b": "$[*]"}, "$where": {"$eq": ["$b.room", "A"]}, "$return": "$b.id"},
    {
        "$for": {"b": "$[*]"},
        "$where": {"$or": [{"$eq": ["$b.owner", "bob"]}, {"$ge": ["$b.n", 10]}]},
        "$return": "$b.id",
    },
    {"$count": "$[*]"},
    {"$sum": "$[*].n"},
    {"$max": "$[*].n"},
    {"$avg": "$[*].n"},
    {"$count": {"$for": {"b": "$[*]"}, "$where": {"$eq": ["$b.owner", "bob"]}, "$return": "$b"}},
    {
        "$for": {"b": "$[*]"},
        "$groupby": {"r": "$b.room"},
        "$return": {"room": "$r", "n": {"$count": "$b"}, "s": {"$sum": "$b.n"}},
    },
    {"$for": {"b": "$[*]"}, "$orderby": [{"$key": "$b.x", "$dir": "desc"}], "$return": "$b.id"},
    {"$for": {"b": "$[*]"}, "$return": {"$idiv": [100, {"$add": ["$b.n", 1]}]}},
    {"$subsequence": [{"$for": {"b": "$[*]"}, "$orderby": ["$b.n"], "$return": "$b.n"}, 0, 3]},
    {"$distinct": "$[*].tag"},
    {
        "$for": {"b": "$[*]"},
        "$let": {"t": "$b.tag"},
        "$where": {"$starts-with": ["$t", "t"]},
        "$return": "$b.id",
    },
    {"$for": {"b": "$[*]"}, "$where": {"$eq": ["$b.room", "$room"]}, "$return": "$b.id"},
]


@pytest.mark.parametrize("index", range(len(DOCUMENTS)))
def test_every_path_answers_over_the_owners_records_only(store: Any, index: int) -> None:
    document = DOCUMENTS[index]
    externals = {"room": "B"} if "$room" in json.dumps(document) else {}
    ann = store.as_owner("ann")["bookings"]
    expected = compile_query(document).run(_ann_docs(store), externals)
    for options in ({}, {"pushdown": False}, {"columns": True}):
        got = ann._run_query(document, externals, **options)
        assert got == expected, options
        _clean(got)
    if externals:  # None diverts to the residual: still the owner's records only
        assert ann._run_query(document, {"room": None}) == compile_query(document).run(
            _ann_docs(store), {"room": None}
        )
    shown = ann.explain(document, externals, analyze=True)
    _clean([shown.as_dict(), shown._repr_html_()])
    assert shown.rows_read is not None and shown.rows_read <= 12


def test_the_columns_answer_through_the_view(store: Any) -> None:
    """The columns take the plans they can over ann's rows alone (five of the documents above on
    both backends: aggregates, the group-by, the top three); each runs above through
    ``columns=True`` against the engine over ann's documents."""
    ann = store.as_owner("ann")["bookings"]
    answered = [
        i
        for i, document in enumerate(DOCUMENTS)
        if ann.explain(document, {"room": "B"}, columns=True).mode == "columnar"
    ]
    assert len(answered) >= 5, answered


def test_errors_come_only_from_the_owners_records(store: Any) -> None:
    ann = store.as_owner("ann")["bookings"]
    # Bob's x is a string: ordering by it would be JQ2005 if his rows were read; ann's are numbers.
    assert ann.order_by(it.x).select(it.n).to_list() == list(range(12))
    # Now make ann's own data raise: the error says nothing of bob.
    store["bookings"].put({"id": "a0", "owner": "ann", "n": -1})
    with pytest.raises(jl.JarenlabError) as err:
        ann.execute({"$for": {"b": "$[*]"}, "$return": {"$idiv": [1, {"$add": ["$b.n", 1]}]}})
    assert err.value.code == "JQ2002"
    _clean([str(err.value), err.value._repr_html_(), repr(err.value.__cause__), repr(err.value.__context__)])
    with pytest.raises(jl.JarenlabError) as err:  # strict refuses a residual, naming the construct only
        ann.execute({"$for": {"b": "$[*]"}, "$let": {"t": "$b.x"}, "$return": "$t"}, strict=True)
    assert err.value.code == "JD0010"
    _clean(str(err.value))


def test_the_builder_and_frames(store: Any) -> None:
    ann = store.as_owner("ann")["bookings"]
    frame = (
        ann.where(it.room == param("r"))
        .order_by(it.n.desc())
        .select({"id": it.id, "n": it.n})
        .to_pandas(r="A")
    )
    assert list(frame["id"]) == [f"a{i}" for i in (10, 8, 6, 4, 2, 0)]
    assert ann.count() == 12 and ann.where(it.owner == "bob").count() == 0
    assert ann.sum(it.n) == sum(range(12)) and ann.max(it.n) == 11 and ann.first()["owner"] == "ann"
    assert list(ann.to_pandas().index) == [f"a{i}" for i in range(12)]
    _clean(frame.to_dict())
    unowned = store.as_owner("ann")["bookings"].collection
    assert unowned.where(it.owner == "bob").count() == 12  # the collection itself is not scoped


def test_explain_shows_the_owner_test_pushed_into_the_sql(store: Any) -> None:
    ann = store.as_owner("ann")["bookings"]
    shown = ann.where(it.room == "A").explain()
    assert shown.mode == "native" and {"literal": "ann"} in shown.params
    assert "bookings_by_owner_room" in " ".join(map(str, shown.engine_plan)) or shown.indexes
    assert ann.where(it.room == "A").explain(analyze=True).rows_read == 6


def test_host_functions_never_see_another_owners_records(open_store: Any) -> None:
    seen: list[Any] = []

    def double(v: Any) -> Any:
        seen.append(v)
        return v * 2 if isinstance(v, int) else 0

    store = open_store(MODEL, operators={"double": operator(double, pure=True)})
    _seed(store)
    ann = store.as_owner("ann")["bookings"]
    got = ann.execute(
        {"$for": {"b": "$[*]"}, "$where": {"$gt": [{"$double": "$b.n"}, 10]}, "$return": "$b.n"}
    )
    assert got == list(range(6, 12)) and seen and all(v < 12 for v in seen)


def test_profiles_and_strict_keep_the_scope(store: Any) -> None:
    from jarenlab.query.planner.profile import Profile

    ann = store.as_owner("ann")["bookings"]
    profile = Profile(max_rows=12, externals=frozenset({"r"}))
    assert ann.execute({"$count": "$[*]"}, profile=profile) == 12
    assert (
        len(ann.execute({"$for": {"b": "$[*]"}, "$return": "$b"}, profile=profile)) == 12
    )  # 24 would refuse
    strict = {"$for": {"b": "$[*]"}, "$where": {"$eq": ["$b.room", "A"]}, "$return": "$b.id"}
    assert ann.execute(strict, strict=True) == [f"a{i}" for i in (0, 2, 4, 6, 8, 10)]


def test_live_queries_see_nothing_of_another_owners_writes(store: Any) -> None:
    ann = store.as_owner("ann")["bookings"]
    bookings = store["bookings"]
    queries = {
        "window": ann.where(it.n >= 0).order_by(it.n.desc()).take(5).select({"id": it.id, "n": it.n}),
        "rows": ann.where(it.room == "A"),
        "count": None,
    }
    lives = {name: q.live() for name, q in queries.items() if q is not None}
    lives["count"] = ann.live({"$count": "$[*]"})
    patches: list[Any] = []
    for live in lives.values():
        live.subscribe(lambda patch, seq: patches.append(patch))

    def check() -> None:
        for name, live in lives.items():
            document = live.document
            fresh = compile_query(document).run(sorted(_ann_docs(store), key=lambda d: d["id"]), {})
            if name == "rows":
                fresh = compile_query(document).run(_ann_docs(store), {})
            assert live.rows == fresh, name

    bookings.insert({"id": "bob-secret-new", "owner": "bob", "room": "A", "n": 7391826})
    bookings.patch("bob-secret-1", {"n": 1000000, "room": "A"})
    bookings.delete("bob-secret-2")
    check()
    bookings.put({"id": "a3", "owner": "bob", "room": "A", "n": 7391826, "x": "Zsecret"})  # handed to bob
    check()
    bookings.put({"id": "bob-secret-3", "owner": "ann", "room": "A", "n": 50})  # handed to ann: hers now
    check()
    assert lives["count"].rows == [12]
    with store.transaction():
        bookings.insert({"id": "bob-secret-tx", "owner": "bob", "room": "A", "n": 7391826})
        bookings.patch("a5", {"n": 40})
    check()
    leaked = [
        p for p in patches if any(s in orjson.dumps(p).decode() and s != "bob-secret-3" for s in SECRETS)
    ]
    assert all("bob-secret-3" in orjson.dumps(p).decode() for p in leaked)  # only the record ann now owns
    assert not any(
        "7391826" in orjson.dumps(p).decode() or "Zsecret" in orjson.dumps(p).decode() for p in patches
    )


def test_integer_owners_are_exact_in_queries_too(store: Any) -> None:
    counters = store["counters"]
    counters.insert_many([{"owner": 1, "v": 1}, {"owner": 2, "v": 10}, {"owner": 1, "v": 3}])
    with pytest.raises(jl.JarenlabError) as err:
        counters.insert({"owner": 1.0, "v": 100})  # JSON Schema takes 1.0 as an integer; owners do not
    assert err.value.code == "JD2003" and "owner" in err.value.reason
    one = store.as_owner(1)["counters"]
    assert one.sum(it.v) == 4 and one.count() == 2 and one.where(it.v > 2).to_list() == [{"owner": 1, "v": 3}]
    assert (
        store.as_owner("1")["counters"].count() == 0
        and store.as_owner("1")["counters"].execute({"$count": "$[*]"}) == 0
    )


@pytest.mark.parametrize("size", [1, 5, 30])
def test_pages_walk_only_the_owners_records(store: Any, size: int) -> None:
    ann = store.as_owner("ann")["bookings"]
    walked, after = [], None
    while True:
        page = ann.where(it.n >= -1).order_by(it.room, it.n.desc()).page(size, after=after)
        walked += page.items
        _clean(page.items)
        if not page.has_more:
            break
        after = page.continuation
    expected = sorted(_ann_docs(store), key=lambda d: (d["room"], -d["n"]))
    assert walked == expected
    everything = ann.order_by(it.id).page(100)  # no condition of its own: the scope alone narrows
    assert [d["id"] for d in everything.items] == sorted(d["id"] for d in _ann_docs(store))
    assert not everything.has_more
