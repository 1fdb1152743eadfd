"""Enqueue refuses what would silently go wrong: another payload under a taken id, a misspelled kind."""

from __future__ import annotations

from typing import Any

import pytest

import jarenlab as jl

MODEL: dict[str, Any] = {
    "$model": "0.1",
    "collections": {"n": {"schema": {"type": "object"}, "key": None, "identity": "integer"}},
}


def code_of(call: Any) -> str:
    with pytest.raises(jl.JarenlabError) as info:
        call()
    return info.value.code


def test_an_existing_id_with_another_payload_is_refused_unless_kept(open_store: Any) -> None:
    jobs = open_store(MODEL).jobs
    jobs.declare("fetch")
    assert jobs.enqueue("fetch", {"day": 1}, id="w1") == "w1"
    assert jobs.enqueue("fetch", {"day": 1}, id="w1") == "w1"  # the same job: idempotent
    with pytest.raises(jl.JobError) as info:
        jobs.enqueue("fetch", {"day": 2}, id="w1")
    assert info.value.code == "JD2125" and "if_exists='keep'" in info.value.reason
    assert jobs.enqueue("fetch", {"day": 2}, id="w1", if_exists="keep") == "w1"
    assert jobs.get("w1")["payload"] == {"day": 1}
    assert code_of(lambda: jobs.enqueue("fetch", {"day": 1}, id="w1", if_exists="replace")) == "JD2125"
    jobs.declare("other")
    assert code_of(lambda: jobs.enqueue("other", {"day": 1}, id="w1")) == "JD2125"


def test_a_misspelled_kind_is_refused_at_enqueue(open_store: Any) -> None:
    jobs = open_store(MODEL).jobs

    @jobs.handler("fetch-weather")
    def fetch(payload: Any, ctx: Any) -> None:
        return None

    with pytest.raises(jl.JobError) as info:
        jobs.enqueue("fetch-wether", {})
    assert info.value.code == "JD2125" and "did you mean 'fetch-weather'?" in info.value.reason
    assert code_of(lambda: jobs.enqueue_many([{"kind": "fetch-wether"}])) == "JD2125"
    assert jobs.counts().get("pending", 0) == 0
    jobs.enqueue("fetch-wether", {}, allow_unknown=True)  # said so explicitly
    jobs.enqueue_many([{"kind": "fetch-wether", "allow_unknown": True, "delay": 1}])
    jobs.enqueue("render", {})  # far from every known kind: a worker elsewhere may run it
    jobs.strict_kinds = True
    assert code_of(lambda: jobs.enqueue("render-2", {})) == "JD2125"
    jobs.declare("render-2")
    jobs.enqueue("render-2", {})
    assert jobs.counts()["pending"] == 4
