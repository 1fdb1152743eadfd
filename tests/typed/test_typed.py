"""Typed models both ways: types(model) as a module mypy checks, schema_of(a class), typed reads."""

from __future__ import annotations

import dataclasses
import datetime as dt
import importlib.util
import inspect
import subprocess
import sys
from pathlib import Path
from typing import Any, Literal, NotRequired, TypedDict

import pytest

import jarenlab as jl
from jarenlab import it
from jarenlab.examples import flights_model

MODEL: dict[str, Any] = {
    "$model": "0.1",
    "collections": {
        "flights": {
            "schema": {
                "type": "object",
                "title": "A flight",
                "description": "One departure from a New York airport.",
                "required": ["id", "origin"],
                "properties": {
                    "id": {"type": "integer", "description": "The flight's key."},
                    "origin": {"enum": ["JFK", "LGA", "EWR"]},
                    "delay": {"type": ["integer", "null"], "description": "Minutes late; negative: early."},
                    "route": {
                        "type": "object",
                        "required": ["to"],
                        "properties": {"to": {"type": "string"}, "miles": {"type": "number"}},
                    },
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "extra": {"type": "object", "additionalProperties": {"type": "integer"}},
                },
            },
            "key": "/id",
        },
        "odd": {
            "schema": {
                "type": "object",
                "description": "Members Python cannot spell.",
                "required": ["id"],
                "properties": {
                    "id": {"type": "string"},
                    "odd-name": {"type": "boolean", "description": "Odd."},
                },
            },
            "key": "/id",
        },
    },
}


def load(path: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # as an import does: inspect reads a class's source through it
    spec.loader.exec_module(module)
    return module


# -- from a model to types -----------------------------------------------------------------------
def test_types_writes_typeddicts_with_the_schema_docs(tmp_path: Path) -> None:
    text = jl.types(MODEL, tmp_path / "lab_types.py", names={"flights": "Flight"})
    assert text == (tmp_path / "lab_types.py").read_text()
    module = load(tmp_path / "lab_types.py", "lab_types")
    flight = module.Flight
    assert inspect.getdoc(flight) == "A flight\n\nOne departure from a New York airport."
    assert flight.__required_keys__ == {"id", "origin"}
    assert set(flight.__optional_keys__) == {"delay", "route", "tags", "extra"}
    assert module.FlightRoute.__required_keys__ == {"to"}
    assert '    id: int\n    """The flight\'s key."""' in text
    assert "origin: Literal['JFK', 'LGA', 'EWR']" in text and "delay: NotRequired[int | None]" in text
    assert "extra: NotRequired[dict[str, int]]" in text and "'odd-name': NotRequired[bool]" in text
    assert (
        module.Odd.__required_keys__ == {"id"}
        and module.Odd.__doc__ == "Members Python cannot spell.\n\nodd-name: Odd."
    )


def test_types_of_the_flights_model_and_of_a_store(open_store: Any) -> None:
    store = open_store(flights_model())
    text = jl.types(store)
    assert text == jl.types(flights_model())
    namespace: dict[str, Any] = {}
    exec(compile(text, "flights_types", "exec"), namespace)
    assert {"Airlines", "Airports", "Flights", "Planes"} <= set(namespace)
    assert "carrier" in namespace["Flights"].__required_keys__
    with pytest.raises(jl.JarenlabError) as info:
        jl.types(flights_model(), names={"nowhere": "X"})
    assert info.value.code == "JD2004"
    with pytest.raises(jl.JarenlabError) as info:
        jl.types(42)
    assert info.value.code == "JD2010"


GOOD = """
import jarenlab as jl
from lab_types import Flight

def late(store: jl.Store) -> int:
    flights = store["flights"].typed(Flight)
    f = flights.get(1)
    new: Flight = {"id": 2, "origin": "JFK", "delay": 5}
    flights.insert(new)
    return 0 if f is None else (f["delay"] or 0) + len(f.get("tags", []))
"""
TYPO = """
import jarenlab as jl
from lab_types import Flight

def late(store: jl.Store) -> int:
    f = store["flights"].typed(Flight).get(1)
    new: Flight = {"id": 2, "origin": "JFK", "dealy": 5}
    bad: Flight = {"id": 3, "origin": "ORD"}
    return 0 if f is None else f["delya"] or 0
"""


def test_mypy_catches_a_misspelt_member(tmp_path: Path) -> None:
    jl.types(MODEL, tmp_path / "lab_types.py", names={"flights": "Flight"})
    (tmp_path / "good.py").write_text(GOOD)
    (tmp_path / "typo.py").write_text(TYPO)
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-error-summary", "--follow-imports=silent",
         "--cache-dir", str(tmp_path / ".mypy"), "good.py", "typo.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    found = [line for line in run.stdout.splitlines() if ": error:" in line]
    assert run.returncode == 1, run.stdout + run.stderr
    assert all(line.startswith("typo.py:") for line in found), found
    text = "\n".join(found)
    assert 'Extra key "dealy" for TypedDict "Flight"' in text
    assert 'TypedDict "Flight" has no key "delya"' in text
    assert "typo.py:8: error: Incompatible types" in text  # "ORD" is outside the enum
    assert len(found) == 3


# -- from types to a schema ----------------------------------------------------------------------
@dataclasses.dataclass
class Route:
    """Where a flight goes."""

    to: str
    miles: float | None = None


@dataclasses.dataclass
class Flight:
    """One departure."""

    id: int
    """The flight's key."""
    origin: Literal["JFK", "LGA", "EWR"]
    route: Route
    tags: list[str] = dataclasses.field(default_factory=list)
    delay: int | None = None
    at: dt.datetime | None = None


class Note(TypedDict):
    """A note."""

    id: str
    """Its key."""
    body: NotRequired[str]
    counts: dict[str, int]


def test_schema_of_a_dataclass_and_a_typeddict() -> None:
    assert jl.schema_of(Flight) == {
        "type": "object",
        "properties": {
            "id": {"type": "integer", "description": "The flight's key."},
            "origin": {"enum": ["JFK", "LGA", "EWR"]},
            "route": {
                "type": "object",
                "properties": {"to": {"type": "string"}, "miles": {"type": ["number", "null"]}},
                "required": ["to"],
                "description": "Where a flight goes.",
            },
            "tags": {"type": "array", "items": {"type": "string"}},
            "delay": {"type": ["integer", "null"]},
            "at": {"anyOf": [{"type": "string", "format": "date-time"}, {"type": "null"}]},
        },
        "required": ["id", "origin", "route"],
        "description": "One departure.",
    }
    assert jl.schema_of(Note) == {
        "type": "object",
        "properties": {
            "id": {"type": "string", "description": "Its key."},
            "body": {"type": "string"},
            "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
        },
        "required": ["id", "counts"],
        "description": "A note.",
    }


def test_a_schema_survives_types_and_back(tmp_path: Path) -> None:
    schema = jl.schema_of(Note)
    jl.types(
        {"$model": "0.1", "collections": {"notes": {"schema": schema, "key": "/id"}}}, tmp_path / "notes_t.py"
    )
    assert jl.schema_of(load(tmp_path / "notes_t.py", "notes_t").Notes) == schema


@pytest.mark.parametrize("bad", [42, int, tuple[int, str], dict[int, str], set[int], "Missing"])
def test_schema_of_refuses_what_json_cannot_hold(bad: Any) -> None:
    if not isinstance(bad, int) and bad is not int:
        bad = dataclasses.make_dataclass("Holder", [("x", bad)])
    with pytest.raises(jl.JarenlabError) as info:
        jl.schema_of(bad)
    assert info.value.code == "JD2010"


# -- typed reads ---------------------------------------------------------------------------------
def test_typed_reads_of_a_dataclass(open_store: Any) -> None:
    store = open_store(
        {"$model": "0.1", "collections": {"flights": {"schema": jl.schema_of(Flight), "key": "/id"}}}
    )
    flights = store["flights"].typed(Flight)
    flights.insert(Flight(1, "JFK", Route("LAX", 2475.0), ["red-eye"], 12))
    flights.insert_many([Flight(2, "LGA", Route("BOS")), Flight(3, "EWR", Route("SFO"), delay=-3)])
    assert store["flights"].get(2) == {"id": 2, "origin": "LGA", "route": {"to": "BOS"}, "tags": []}
    one = flights.get(1)
    assert one == Flight(1, "JFK", Route("LAX", 2475.0), ["red-eye"], 12) and isinstance(one.route, Route)
    assert flights.get(9) is None
    assert [f.id for f in flights.to_list()] == [1, 2, 3]
    assert flights.where(it.delay < 0).first() == Flight(3, "EWR", Route("SFO"), delay=-3)
    assert [f.id for f in flights.where(it.origin != "LGA").order_by(it.id.desc()).take(5).to_list()] == [
        3,
        1,
    ]
    flights.put(Flight(2, "LGA", Route("BOS"), delay=7))
    assert flights.get(2).delay == 7  # type: ignore[union-attr]
    store["flights"].put({"id": 4, "origin": "JFK", "route": {"to": "MIA"}, "note": "x"})
    with pytest.raises(jl.JarenlabError) as info:
        flights.get(4)
    assert info.value.code == "JD2003" and "/note" in info.value.reason
    assert repr(flights) == "<jarenlab.Typed 'flights' as Flight>"


def test_typed_reads_of_a_typeddict(open_store: Any) -> None:
    store = open_store(
        {"$model": "0.1", "collections": {"notes": {"schema": jl.schema_of(Note), "key": "/id"}}}
    )
    notes = store["notes"].typed(Note)
    notes.insert({"id": "a", "counts": {"x": 1}})
    got = notes.get("a")
    assert got == {"id": "a", "counts": {"x": 1}} and type(got) is dict
    with pytest.raises(jl.JarenlabError) as info:
        store["notes"].typed(int)
    assert info.value.code == "JD2010"
