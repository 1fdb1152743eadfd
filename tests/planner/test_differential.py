"""Differential tests: the engine alone, pushdown on and off on SQLite and on PostgreSQL, and DuckDB
(where it covers the case).

Every case of ``cases/*.json`` (the conformance corpus format, :func:`tests.query.corpus.load_cases`)
runs through the five paths over the same documents; answers (or error codes) must agree exactly,
``int`` told from ``float`` and members in order. PostgreSQL must also push what SQLite pushes: its
run's mode (native, row, set) equals SQLite's, except where its plan states one of the known reasons
it keeps a part in the engine (:data:`KEPT`), and those cases are counted exactly. Each path's count
of checked cases is tallied (:class:`tests.planner.tally.Tally`), printed at the end of the run and
held to a floor by the module's last tests, so coverage cannot shrink silently.
"""

from __future__ import annotations

from typing import Any

import pytest

from jarenlab.errors import JarenlabError
from jarenlab.query import evaluate
from jarenlab.query.planner.run import run_query
from tests.planner import duck
from tests.planner.conftest import CASES, DATASETS, NO_POSTGRESQL
from tests.planner.tally import TALLY, assert_floors
from tests.query.corpus import load_cases, same

ALL = list(load_cases(CASES))
#: How far each mode pushes.
_RANK = {"set": 0, "row": 1, "native": 2}
#: What PostgreSQL leaves to the engine that SQLite pushes (a phrase of the stated reason -> the
#: tally's name): jsonb does not keep ``2.0`` apart from ``2`` (number projections, integer
#: aggregates), numbers of magnitude 2^53 or more compare inexactly as ``numeric`` against a stored
#: float (literals stay residual, externals divert), the server cannot call host functions, and
#: its text cannot hold U+0000 (such literals stay residual, such externals divert).
KEPT = {
    "does not tell 2.0 from 2": "2.0 vs 2",
    "2^53 or more": "2^53",
    "the database cannot call them": "host functions",
    "the database's text cannot hold": "U+0000",
    "this database's SQL sums floats otherwise": "float sums",
    "computes the decimals as written": "float arithmetic",
    "has no exact PostgreSQL form": "I-Regexp",
    "bigint out of range": "2^53",
}


def outcome(fn: Any) -> tuple[str, Any]:
    try:
        return "ok", fn()
    except JarenlabError as err:
        return "error", err.code


def pushed(store: Any, query: Any, ext: dict[str, Any] | None) -> tuple[tuple[str, Any], str, list[str]]:
    """The pushed run through the planner (SQL, the columnar path kept out): its outcome, the mode
    that answered it (``error`` when it raised) and the reasons its plan and run give for what the
    engine ran."""
    try:
        items, trace, prepared = run_query(store["docs"], query, dict(ext or {}), columns=False)
    except JarenlabError as err:
        return ("error", err.code), "error", []
    why = [r.reason for r in prepared.plan.reasons] + [r for r in (trace.diverted, trace.fallback) if r]
    return ("ok", items), trace.mode, why


def columnar(store: Any, query: Any, ext: dict[str, Any] | None) -> tuple[tuple[str, Any], str]:
    """The run with the columnar path forced where it can answer: its outcome, and ``columnar`` when
    the columns answered (``sql`` when the path declined and the planner answered as before)."""
    try:
        items, trace, _ = run_query(store["docs"], query, dict(ext or {}), columns=True)
    except JarenlabError as err:
        return ("error", err.code), "error"
    return ("ok", items), "columnar" if trace.mode == "columnar" else "sql"


def agree(engine: tuple[str, Any], **paths: tuple[str, Any]) -> None:
    for name, got in paths.items():
        assert got[0] == engine[0], f"{name}: {got} vs engine {engine}"
        if got[0] == "ok":
            assert same(got[1], engine[1]), f"{name}: {got[1]!r} vs engine {engine[1]!r}"
        else:
            assert got[1] == engine[1], f"{name}: error {got[1]} vs engine {engine[1]}"


def check(
    store: Any, docs: list[dict[str, Any]], query: Any, ext: dict[str, Any] | None, pg: Any = None
) -> str:
    """Run the paths (DuckDB where its translator covers the query, PostgreSQL when ``pg`` is a
    store); return ok or error. Tallies the paths it checked and the modes that answered."""
    engine = outcome(lambda: evaluate(query, docs, ext or {}))
    got, mode, why = pushed(store, query, ext)
    plain = outcome(lambda: store["docs"]._run_query(query, dict(ext or {}), pushdown=False))
    in_columns, answered_by = columnar(store, query, ext)
    agree(engine, pushdown=got, columnar=in_columns, **{"pushdown=False": plain})
    if engine[0] == "ok":
        via_duck = duck.run(docs, query, dict(ext or {}))
        if via_duck is not None:
            assert via_duck == engine[1], f"duckdb: {via_duck!r} vs engine {engine[1]!r}"
            TALLY.add("duckdb")
    TALLY.add(
        "engine", "pushdown", "pushdown=False", f"pushdown:{mode}", "columnar", f"columnar:{answered_by}"
    )
    if pg is not None:
        pg_got, pg_mode, pg_why = pushed(pg, query, ext)
        pg_plain = outcome(lambda: pg["docs"]._run_query(query, dict(ext or {}), pushdown=False))
        pg_columns, pg_answered = columnar(pg, query, ext)
        agree(
            engine,
            postgresql=pg_got,
            **{"postgresql pushdown=False": pg_plain, "postgresql columnar": pg_columns},
        )
        TALLY.add("postgresql columnar", f"postgresql columnar:{pg_answered}")
        if pg_mode != mode:
            lower = _RANK.get(pg_mode, -1) < _RANK.get(mode, -1)
            stated = next((name for phrase, name in KEPT.items() if any(phrase in w for w in pg_why)), None)
            if lower:
                assert stated, f"PostgreSQL ran {pg_mode} where SQLite ran {mode}: {pg_why}"
                TALLY.add(f"postgresql kept: {stated}")
            else:  # SQLite had to hand this data to the engine; PostgreSQL did not
                assert why, f"PostgreSQL ran {pg_mode} where SQLite ran {mode} without a reason"
                TALLY.add(f"postgresql pushed: {why[0]}")
        TALLY.add("postgresql", "postgresql pushdown=False", f"postgresql:{pg_mode}")
    return got[0]


@pytest.mark.parametrize("case", ALL, ids=[c.name for c in ALL])
def test_case(case: Any, stores: dict[str, Any], pg_stores: dict[str, Any] | None) -> None:
    name = next(k for k, v in DATASETS.items() if v == case.data)
    check(stores[name], case.data, case.query, case.externals, pg_stores and pg_stores[name])


def test_corpus_is_large_and_mostly_pushed(stores: dict[str, Any]) -> None:
    """At least 150 cases, and the planner pushes most of them (the suite must exercise SQL)."""
    assert len(ALL) >= 150
    from jarenlab.query.planner.run import prepare

    coll = stores["mix"]["docs"]
    modes = []
    for c in ALL:
        try:
            modes.append(prepare(coll, c.query, pushdown=True, strict=False, profile=None)[0].plan.mode)
        except JarenlabError:
            modes.append("error")
    assert modes.count("native") > len(modes) // 2, {m: modes.count(m) for m in set(modes)}


#: Cases each path checked when the floor was set (``error``: all paths agreed on an error code).
FLOORS = {
    "engine": 2673,
    "pushdown": 2673,
    "pushdown=False": 2673,
    "duckdb": 578,  # (2 of them arithmetic and lengths, tests/planner/duck.py)
    # a projection of a number of magnitude 2^63 or more (1e300 as well as an integer beyond 64
    # bits: one column cannot tell them apart) falls back from native to the engine (2 cases);
    # averages of an integer path holding 2.0 stay native (no float flag: 2 of the older cases, and
    # the two-level cases of two_level.json over times_reals); the two-level cases over date-times
    # not in canonical form, or with a sum, minimum or maximum over 2.0, fall back (set); window ranks
    # partitioned or ordered by an integer path holding 2.0 stay in SQL on SQLite (5 cases: the keys
    # need no flag there, as the INTEGER column holds 2.0 as 2, which the engine's order and ties equal);
    # a whole document inside a map or array ({"doc": $it}, [$it]) is native (4 cases, projections.json);
    # a count of distinct typed members is count(DISTINCT ...) in SQL (1 case that was set);
    # medians and standard deviations (spread.json, 82 cases) are not computed by SQL: set, or an error
    # of the engine (7: of strings, of untyped members, of an array, a deviation beyond the largest float);
    # conditions over values computed from members (computed.json, 120 cases) stay in the engine
    # (set), or raise there (15: date parts of date-times the engine cannot read, arithmetic and
    # lengths of members of another kind); errors in parts the engine never evaluates
    # (unevaluated.json, 55 cases) stay with the engine: row, set, or its error on every path;
    # group_keys.json adds 15 cases of integer group keys returned or not (7 native, 5 set, 3 errors);
    # series_columns.json adds 136 rolling and resample shapes (22 native, 50 row: a projection after
    # a rolling, 33 set: float rolling sums among them, 31 errors of the engine: times that are not
    # date-times, too many intervals), and 64 rollings of calendar widths (P1M, P2M, P1Y, P1M1DT1H:
    # 52 set, SQL's frames being fixed, 12 errors of the engine);
    # conditions over computed values run in SQL where it is exact (computed.json: 63 native, the
    # others compared with an external or a number of 2^53 or more, or falling back on an integer
    # beyond 64 bits or a date-time not written canonically), and everyday.json adds 111 cases (I-Regexp
    # through the engine's matcher, date parts beside conditions that decide first, arithmetic that
    # narrows a set residual: 91 native, 14 set, 6 errors); quantifiers.json adds 129 cases of
    # $some/$every over array members (typed and untyped items, an object's member values, scalars,
    # nested arrays, null items, externals: 114 native, 12 set where the condition reads the document,
    # computes a value or ranges over a literal sequence, 3 errors), and paths.json 6 of index steps
    # over scalars (a string, a number: no item); windows_columns.json adds 168 windows followed by a
    # projection (64 row: SQL ranks, the engine projects; 104 set: float sums, string and number
    # offsets, number ordering keys, which SQL leaves to the engine); group_distinct.json adds 79
    # counts of distinct values per group (count(DISTINCT ...) of a typed string or integer member:
    # 37 native, also ordered and filtered by it; 42 set: of number or untyped members, and the
    # builder's whole-query form, which the engine answered; now a group-by without keys: 4 of them
    # native, in SQL and in the columns); whole_aggregates.json adds 379 whole-query aggregate maps
    # (every aggregate kind and literals, over filters keeping all, some and no rows, externals, maps
    # written by hand under other names, and near misses the engine answers): 163 native (counts,
    # integer sums and averages, float sums by the registered sum, string and integer extremes,
    # counts of distinct typed members), 199 set (medians and deviations, extremes of numbers,
    # untyped members, 2.0 in an integer member and integers of 2^53 or more falling back, near
    # misses), 17 errors of the engine (sums of strings and arrays, deviations beyond the largest
    # float, a map member of several items, a variable never bound)
    # distinct.json adds 16 cases of integers at 2^53, 2^63 and 2^64 - 1 (typed_wide, typed_big): distinct
    # values, counts of them (whole, per group), integer group keys: all fall back to the engine (set) on
    # both backends; 2 cases of group_distinct.json grouped by an integer path over typed_big fall back too
    # (native -> set), and on PostgreSQL group-key-i-not-returned-edges (keys of 2^53 and more)
    "pushdown:native": 1567,
    "pushdown:row": 125,
    "pushdown:set": 817,
    "pushdown:error": 164,
    # the sixth path: the columnar path forced wherever it can answer (``columnar:sql`` where it
    # declines: a plan not native, a member not typed as one string, integer or number, a date
    # function as a group key, window ranks, a float in an integer member, an integer beyond 64 bits);
    # a count of distinct typed members is answered by the columns too (1 case); medians and standard
    # deviations of typed integer and number members, per group and whole-query, are answered by the
    # columns (58 of spread.json's 82 cases: the others hold 2.0 in an integer member or an integer
    # a double cannot hold beside floats, a ddof other than 0 or 1, strings or untyped members);
    # conditions comparing arithmetic between members, a string's length or a date part with a
    # number are answered by the columns (40 of computed.json's 120: the others read an integer
    # member holding 2.0, a date-time not in canonical form, integers whose sum or product passes
    # 64 bits, or members of another kind, or compute what the planner has no form for: $div);
    # resamples (the group-by, then the engine's gap filling) and rollings followed by a projection
    # of members are answered by the columns (42 of series_columns.json's 136, 8 of its 64 calendar
    # widths, and 15 resamples of series.json: the others hold 2.0 in an integer member, a date-time
    # not in canonical form, a rolling returned whole, or a row with no rolling value); windows followed by
    # a projection of members are answered by the columns (72 of windows_columns.json's 168: the
    # others hold 2.0 in an integer member, an integer a double cannot hold beside floats, sums that
    # may pass 64 bits, or leave a row without a computed member: a lag without a default, an
    # average or an extreme over a frame without a value); counts of distinct values per group are
    # answered by the columns (31 of group_distinct.json's 79: the others hold 2.0 in an integer
    # member, or count number or untyped members); whole-query aggregate maps are answered by the
    # columns (157 of whole_aggregates.json's 379: medians and deviations among them; the others
    # hold 2.0 in an integer member, integers beyond 64 bits, untyped members, or are near misses);
    # minima and maxima of number members, per group and whole-query, are answered by the columns
    # (20 more cases, which ran in SQL or the engine before)
    "columnar": 2673,
    "columnar:columnar": 1020,
}


def test_every_path_checked_its_floor_of_cases(request: pytest.FixtureRequest) -> None:
    """Runs after the cases (last in the module): no path checked fewer cases than its floor."""
    assert_floors(request, "test_case", len(ALL), FLOORS)


#: The PostgreSQL paths' floors, and the exact count of cases it answers in another mode than
#: SQLite, by the reason its plan states.
PG_FLOORS = {
    "postgresql": 2673,
    "postgresql pushdown=False": 2673,
    "postgresql:native": 1334,
    "postgresql:row": 145,
    "postgresql:set": 1030,
    "postgresql:error": 164,
    "postgresql columnar": 2673,
    # the columns plan with their own capabilities: float sums and number projections, which
    # PostgreSQL's SQL keeps in the engine, are answered by the columns there as on SQLite
    # (medians and standard deviations, conditions over computed values, minima and maxima of
    # number members: as on SQLite)
    "postgresql columnar:columnar": 1017,
}
PG_KEPT = {
    # number projections (row, or set for a window over one number); integer sums, averages, minima,
    # maxima and group keys run in SQL with a flag for a stored float (jsonb keeps a decimal's scale)
    # (two of them, projections of 1e300, SQLite now runs in the engine too: see FLOORS); 27 of
    # computed.json's conditions over computed values return numbers (row here, native on SQLite)
    "postgresql kept: 2.0 vs 2": 46,
    # comparisons with literals of magnitude 2^53 to 2^63 (residual), such externals (diverted), and
    # comparisons between two number paths (22, paths.json: numeric reads a stored float as its decimal),
    # and window ranks partitioned or ordered by an integer path holding a float (5: SQLite's INTEGER
    # column holds the engine's number; PostgreSQL's numeric of a float from 2^53 up may not, so its
    # flag stays); group_keys.json adds 2: integer keys over the edges data (members of 2^53 or more);
    # quantifiers.json adds 3: items compared with 2^53; everyday.json adds 2: arithmetic over members of 2^62, which SQLite computes exactly in 64 bits and
    # PostgreSQL's check sends to the engine (bigint out of range: a float's decimal may not be the float);
    # windows_columns.json adds 27 windows partitioned or ordered by an integer path (the flag, as above);
    # group_distinct.json adds 8: integer keys or counted members over the big datasets (2^53 and more),
    # whole_aggregates.json 2 more: whole-query counts of distinct integers over the big dataset (2^62)
    # (-2: the two group_distinct.json cases SQLite now runs in the engine too; +1: group-key-i-not-returned-edges)
    "postgresql kept: 2^53": 118,
    # comparisons with string literals holding U+0000 (residual), and such externals (diverted)
    "postgresql kept: U+0000": 5,
    # sums and averages of number-typed members (whole-query, grouped, filtered by HAVING, resampled): SQLite
    # runs the engine's correctly rounded sum as a registered aggregate; PostgreSQL's numeric adds the
    # written decimals (series_columns.json adds 12 resamples of floats; whole_aggregates.json adds 26
    # whole-query maps of float sums and averages)
    "postgresql kept: float sums": 52,
    # arithmetic over number-typed members or float literals: numeric computes the written decimals
    "postgresql kept: float arithmetic": 29,
    # $match and $search: SQLite calls the engine's own matcher, PostgreSQL runs the pattern's exact ARE;
    # a category \p{..} has none (12 cases of everyday.json: \p{Lu}, \p{L})
    "postgresql kept: I-Regexp": 12,
    # projections of numbers of magnitude 2^63 or more (integers beyond 64 bits, which SQLite reads
    # as rounded reals, and floats such as 1e300, which one column cannot tell from them): SQLite
    # falls back to the engine; PostgreSQL runs the projection in the engine from the start (one of
    # them after a condition on a string's length, computed.json)
    "postgresql pushed: an integer beyond the database's integer range": 5,
    # the ISO week number: SQLite 3.40 has no %V and keeps it in the engine, PostgreSQL computes it (as a
    # group key, and in 3 conditions of computed.json)
    "postgresql pushed: the database does not compute the part 'week'": 4,
}


def test_postgresql_checked_its_floor_of_cases(
    request: pytest.FixtureRequest, pg_stores: dict[str, Any] | None
) -> None:
    """Runs last: the PostgreSQL paths checked their floors, and PostgreSQL kept in the engine exactly
    the cases counted in :data:`PG_KEPT` (a backend silently running everything in Python fails)."""
    if pg_stores is None:
        pytest.skip(NO_POSTGRESQL)
    assert_floors(request, "test_case", len(ALL), PG_FLOORS, PG_KEPT)
