"""Real processes: a migration SIGKILLed midway leaves the old store; a writer meanwhile loses nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import jsonschema_rs
import pytest

from tests.migrations.child import WITH_MARK
from tests.migrations.conftest import BASE

pytestmark = pytest.mark.slow
CHILD = Path(__file__).with_name("child.py")
ROOT = Path(__file__).resolve().parents[2]


def start(
    mode: str, target: dict[str, Any], ready: Path, *extra: str, script: Path = CHILD
) -> subprocess.Popen[str]:
    """``script`` (this folder's child by default) as a process: ``mode`` (if any), the store's
    target as JSON, the ready file and ``extra`` as its arguments."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    args = json.dumps({k: str(v) for k, v in target.items()})
    return subprocess.Popen(
        [sys.executable, str(script), *([mode] if mode else []), args, str(ready), *extra],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for(path: Path, proc: subprocess.Popen[str], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None:
            raise AssertionError(f"the child ended early: {proc.communicate()}")
        assert time.monotonic() < deadline, "the child never got ready"
        time.sleep(0.02)


def filled(open_store: Any, count: int) -> Any:
    store = open_store(BASE, "procs")
    store["notes"].insert_many([{"id": f"d{i:05d}", "n": i} for i in range(count)])
    return store


def test_a_migration_killed_midway_leaves_the_old_model_and_data(open_store: Any, tmp_path: Path) -> None:
    store = filled(open_store, 2_000)
    before = store["notes"].to_list()
    ready = tmp_path / "ready"
    child = start("migrate", open_store.target("procs"), ready)
    wait_for(ready, child)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    store.close()
    again = open_store.reopen(store)  # openable, verified against the stored (old) model
    assert again.model.hash == again.stored_hash() and again.model.document == BASE
    assert again["notes"].to_list() == before and again.migrations().empty
    assert [ix.name for ix in again["notes"].spec.indexes] == ["by_tag"]
    done = again.migrate(WITH_MARK, transforms={"notes": lambda d: {**d, "mark": True}}, progress=False)
    assert done.documents == 2_000 and len(again.migrations()) == 1


def test_a_writer_in_another_process_loses_nothing(open_store: Any, tmp_path: Path) -> None:
    store = filled(open_store, 3_000)
    ready = tmp_path / "ready"
    writer = start("write", open_store.target("procs"), ready, "300")
    wait_for(ready, writer)

    def mark(doc: dict[str, Any]) -> dict[str, Any]:
        time.sleep(0.0003)  # a migration long enough for the writer to run into it
        return {**doc, "mark": True}

    done = store.migrate(WITH_MARK, transforms={"notes": mark}, progress=False)
    out, err = writer.communicate(timeout=120)
    assert writer.returncode == 0, err
    docs = {d["id"]: d for d in store["notes"].to_list()}
    assert len(docs) == 3_300 and all(f"w{i}" in docs for i in range(300)), "every write is there"
    assert all(docs[f"d{i:05d}"]["mark"] is True for i in range(3_000))
    # writes committed before the migration were transformed with the rest; later ones came after
    before = sum(1 for i in range(300) if docs[f"w{i}"].get("mark"))
    assert 0 < before < 300 and done.documents == 3_000 + before
    validator = jsonschema_rs.validator_for(WITH_MARK["collections"]["notes"]["schema"])
    assert all(validator.is_valid(d) for d in docs.values())
    # the writer's first write after the migration was rolled back (JD2110) and made again
    assert json.loads(out)["retries"] >= 1
