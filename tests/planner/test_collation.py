"""The ordering and string cases on a PostgreSQL database whose default collation is not C.

On a C-collated database a comparison missing its ``COLLATE "C"`` goes unnoticed. Here the store lives
in a database whose default collation is ICU's English (where ``a < B``, unlike code-point order), and
every case of ``ordering.json``, ``strings.json`` and ``edges.json`` must still give the engine's
answer, pushed down. The test first shows that the data notices: ordering the strings by the
database's default collation disagrees with the engine.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import jarenlab as jl
from jarenlab.query import evaluate
from tests.planner.conftest import CASES, DATASETS, load
from tests.planner.model import MODEL
from tests.planner.test_differential import outcome, pushed
from tests.query.corpus import load_cases, same

FILES = ("ordering", "strings", "edges")
COLLATED = [c for c in load_cases(CASES) if c.group in FILES]
DATABASE = "jl_icu_en"
#: The mode each case's pushed run took.
MODES: list[str] = []

pytestmark = pytest.mark.needs("collations", "the default collation of a PostgreSQL database")


@pytest.fixture(scope="module")
def icu(pg_server: Any) -> Iterator[dict[str, Any]]:
    """Stores of the ``mix`` and ``edges`` datasets in a database collated by ICU's ``en``."""
    import psycopg

    with psycopg.connect(pg_server.url(), autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {DATABASE}")
        admin.execute(f"CREATE DATABASE {DATABASE} LOCALE_PROVIDER icu ICU_LOCALE 'en' TEMPLATE template0")
    stores = {
        name: load(jl.open(pg_server.url(DATABASE), MODEL, schema=f"c_{name}", checks="off"), name)
        for name in ("mix", "edges")
    }
    yield stores
    for store in stores.values():
        store.close()
    with psycopg.connect(pg_server.url(), autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")


def test_the_default_collation_is_not_code_point_order(icu: dict[str, Any], backend: str) -> None:
    """The database's own order of the strings is not the engine's (so a missing COLLATE would show)."""
    conn = icu["mix"].db.connection()
    provider, lower_first = conn.execute(
        "SELECT datlocprovider, 'a' < 'B' FROM pg_database WHERE datname = current_database()"
    ).fetchone()
    assert (provider, lower_first) == ("i", True)
    by_default = [
        r[0] for r in conn.execute("SELECT doc->>'id' FROM docs WHERE body ? 's' ORDER BY body->>'s', pos")
    ]
    engine = evaluate(
        {"$for": {"it": "$[*]"}, "$where": {"$exists": "$it.s"}, "$orderby": ["$it.s"], "$return": "$it.id"},
        DATASETS["mix"],
    )
    assert by_default != engine


@pytest.mark.parametrize("case", COLLATED, ids=[c.name for c in COLLATED])
def test_case(case: Any, icu: dict[str, Any], backend: str) -> None:
    name = next(k for k, v in DATASETS.items() if v == case.data)
    engine = outcome(lambda: evaluate(case.query, case.data, case.externals or {}))
    got, mode, _ = pushed(icu[name], case.query, case.externals)
    assert got[0] == engine[0] and (same(got[1], engine[1]) if got[0] == "ok" else got[1] == engine[1])
    MODES.append(mode)


def test_most_cases_ran_in_sql() -> None:
    """Runs last: most of those answers came from SQL, not from the engine."""
    if len(MODES) < len(COLLATED):
        pytest.skip("not every case ran")
    assert MODES.count("native") > len(MODES) * 3 // 4, {m: MODES.count(m) for m in set(MODES)}
