"""Edges: in-memory and ``file:`` targets, integer identities that never reuse a key, the worker CLI's
handler forms."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import jarenlab as jl

AUTO: dict[str, Any] = {
    "$model": "0.1",
    "collections": {"auto": {"schema": {"type": "object"}, "key": None, "identity": "integer"}},
}


def test_memory_is_a_fresh_temporary_store() -> None:
    store = jl.open(":memory:", AUTO)
    path = store.path
    assert os.path.exists(path) and not store.read_only
    assert store["auto"].insert({"n": 1}) == 1 and store["auto"].get(1) == {"n": 1}
    other = jl.open(":memory:", AUTO)
    assert other.path != path and len(other["auto"]) == 0  # each one is its own store
    other.close()
    store.close()
    assert not os.path.exists(path)
    with pytest.raises(jl.JarenlabError) as err:
        jl.open(":memory:")
    assert err.value.code == "JD0005" and ":memory:" in err.value.reason


def test_file_uris_name_the_file(tmp_path: Path) -> None:
    target = tmp_path / "lab a.db"
    uri = "file://" + str(target).replace(" ", "%20")
    with jl.open(uri, AUTO) as store:
        assert store.path == str(target) and store["auto"].insert({}) == 1
    with jl.open(uri + "?mode=ro") as store:
        assert store.read_only and store["auto"].get(1) == {}
        with pytest.raises(jl.JarenlabError) as err:
            store["auto"].insert({})
        assert err.value.code == "JD2005" and err.value.condition == "read_only"
    with jl.open(uri + "?mode=rw") as store:
        assert store["auto"].insert({}) == 2
    with jl.open(uri + "?mode=memory", AUTO) as store:
        assert store.path != str(target) and len(store["auto"]) == 0


@pytest.mark.parametrize(
    ("uri", "says"),
    [
        ("file:{p}?cache=shared", "'cache' is not supported"),
        ("file:{p}?mode=rw&vfs=unix", "'vfs' is not supported"),
        ("file:{p}?mode=wal", "mode is one of"),
        ("file:{missing}?mode=rw", "opens an existing file"),
        ("file://elsewhere/{p}", "local file"),
    ],
)
def test_file_uri_parts_the_store_cannot_honour_are_coded(tmp_path: Path, uri: str, says: str) -> None:
    target = uri.format(p=tmp_path / "x.db", missing=tmp_path / "missing.db")
    with pytest.raises(jl.JarenlabError) as err:
        jl.open(target, AUTO)
    assert err.value.code == "JD0006" and says in err.value.reason and "WAL" not in err.value.reason[:40]
    assert not (tmp_path / "missing.db").exists() and not (tmp_path / "x.db").exists()


def test_a_deleted_integer_key_is_never_handed_out_again(open_store: Any) -> None:
    store = open_store(AUTO)
    auto = store["auto"]
    assert [auto.insert({"i": i}) for i in range(3)] == [1, 2, 3]
    assert auto.delete(3) and auto.insert({}) == 4  # the highest key, deleted: not reused
    assert auto.delete(4) and auto.delete(2)
    assert auto.insert_many([{}, {}]) == 2 and auto.keys()[-2:] == [5, 6]
    auto.put({"at": 100}, 100)
    assert auto.delete(100) and auto.insert({}) == 101  # a key written by put counts too
    with store.transaction():
        auto.delete(101)
        assert auto.insert({}) == 102
    try:
        with store.transaction():
            auto.delete(102)
            raise RuntimeError("undo")
    except RuntimeError:
        pass
    assert auto.get(102) == {} and auto.insert({}) == 103  # a rolled-back delete remembers nothing
    again = open_store.reopen(store, AUTO)
    assert again["auto"].delete(103) and auto.insert({}) == 104  # across connections and processes


@pytest.fixture
def worker_store(tmp_path: Path) -> Path:
    path = tmp_path / "lab.db"
    with jl.open(path, AUTO) as store:
        for kind in ("double", "triple"):
            store.jobs.enqueue(kind, {"n": 2})
    (tmp_path / "handlers_mod.py").write_text(
        textwrap.dedent(
            """
            import jarenlab as jl

            def double(payload, ctx):
                return payload["n"] * 2

            def triple(payload, ctx):
                return payload["n"] * 3

            MAPPING = {"double": double, "triple": triple}
            BAD_KIND = {"": double}
            BAD_FN = {"double": 3}
            NUMBER = 7

            def register(jobs):
                # The worker runs the store's own queue (one queue object), with the CLI's options.
                assert jobs is jobs.store.jobs, "the worker made a second queue beside store.jobs"
                assert (jobs.lease, jobs.poll) == (12.0, 0.2), (jobs.lease, jobs.poll)
                jobs.handlers.register("double", double)
                jobs.handlers.register("triple", triple)

            REGISTRY = jl.jobs.Handlers()
            REGISTRY.register("double", double)
            REGISTRY.register("triple", triple)
            """
        )
    )
    return path


#: Worker options the registering function checks it was set up with.
OPTIONS = ("--lease", "12", "--poll", "0.2")


def _worker(path: Path, spec: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(path.parent), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-m", "jarenlab", "worker", str(path), "--handlers", spec, "--until-idle", *OPTIONS],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


@pytest.mark.parametrize("attr", ["MAPPING", "register", "REGISTRY"])
def test_the_worker_cli_takes_a_mapping_a_registering_function_or_a_registry(
    worker_store: Path, attr: str
) -> None:
    done = _worker(worker_store, f"handlers_mod:{attr}")
    assert done.returncode == 0, done.stderr
    with jl.open(worker_store) as store:
        results = sorted(job["result"] for job in store.jobs.list())
    assert results == [4, 6]


@pytest.mark.parametrize(
    ("attr", "says"),
    [
        ("BAD_KIND", "a job kind is a non-empty string"),
        ("BAD_FN", "is not callable"),
        ("NUMBER", "is a int: --handlers names a Handlers registry"),
    ],
)
def test_the_worker_cli_names_what_is_wrong_with_handlers(worker_store: Path, attr: str, says: str) -> None:
    done = _worker(worker_store, f"handlers_mod:{attr}")
    assert done.returncode == 1 and "JD2125" in done.stderr and says in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_the_worker_cli_refuses_a_memory_store(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "jarenlab", "worker", ":memory:", "--handlers", "json:dumps", "--until-idle"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1 and "JD0006" in done.stderr and "needs a store file" in done.stderr
