"""A store in a location nothing can be written to (a read-only mount, a folder without write
permission), and opens that fail: no file is left open and no new file is left behind.

The read-only location is real: as root (where permissions do not bind) the child process runs in a
mount namespace of its own with the folder bound read-only (``unshare --mount``), which changes
nothing for anyone else; otherwise the folder and file lose their write permission. A machine
offering neither skips, saying why.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import jarenlab as jl

MODEL: dict[str, Any] = {
    "$model": "0.1",
    "collections": {"c": {"schema": {"type": "object"}, "key": None, "identity": "integer"}},
}

_CHILD = textwrap.dedent(
    """
    import json, os, sys
    import jarenlab as jl

    path, model = sys.argv[1], json.loads(sys.argv[2])
    out = {}

    from pathlib import Path
    from tests.store.test_read_only_location import _held

    with jl.open(path, model, read_only=True) as store:
        out["read"] = store["c"].to_list()
        out["immutable"] = store.capabilities.get("immutable")
    for target in (path, os.path.join(os.path.dirname(path), "new.db")):
        try:
            jl.open(target, model)
            out[target] = "opened"
        except jl.JarenlabError as err:
            out[target] = [err.code, err.condition, str(err)]
    out["held"] = sorted(_held(Path(path).parent))
    out["files"] = sorted(os.listdir(os.path.dirname(path)))
    print(json.dumps(out))
    """
)


def _in_read_only(target: Path, *args: str, code: str = _CHILD) -> dict[str, Any]:
    """Run the child with ``target`` (a folder, or one file) read-only (see the module docstring)."""
    child = [sys.executable, "-c", code, *args]
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    if os.geteuid() == 0:
        if shutil.which("unshare") is None:
            pytest.skip("running as root without unshare: no read-only location can be made")
        bind = f'mount --bind {target} {target} && mount -o remount,ro,bind {target} {target} && exec "$@"'
        command = ["unshare", "--mount", "sh", "-c", bind, "sh", *child]
    else:
        if target.is_dir():
            for p in target.iterdir():
                p.chmod(stat.S_IRUSR)
            target.chmod(stat.S_IRUSR | stat.S_IXUSR)
        else:
            target.chmod(stat.S_IRUSR)
        command = child
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    finally:
        if os.geteuid() != 0:
            target.chmod(stat.S_IRWXU)
    if done.returncode != 0 and "unshare" in done.stderr:
        pytest.skip(f"no private mount namespace here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_a_store_in_a_read_only_location_opens_read_only(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    path = folder / "lab.db"
    with jl.open(path, MODEL) as store:
        store["c"].insert_many([{"n": 1}, {"n": 2}])
    assert sorted(os.listdir(folder)) == ["lab.db"]  # (closing checkpointed the WAL away)
    out = _in_read_only(folder, str(path), json.dumps(MODEL))
    assert out["read"] == [{"n": 1}, {"n": 2}]
    assert out["immutable"] is True
    code, condition, message = out[str(path)]
    assert (code, condition) == ("JD2005", "read_only") and "read_only=True" in message
    code, condition, message = out[str(folder / "new.db")]
    assert (code, condition) == ("JD2005", "read_only") and "cannot be made" in message
    assert out["held"] == []  # the failed opens closed what they opened
    assert out["files"] == ["lab.db"]


def _held(folder: Path) -> list[str]:
    """The files under ``folder`` this process holds open."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # (the listing's own descriptor, closed by now)
            continue
        if target.startswith(str(folder)):
            found.append(target)
    return found


def test_a_failed_open_leaves_no_new_file_and_nothing_open(tmp_path: Path) -> None:
    """A model refused at the table set-up (names the database would clash on) after the file was
    made: the new file is removed and no connection is left to the garbage collector; an existing
    store whose open fails is left as it was."""
    clash = {
        "$model": "0.1",
        "collections": {
            "a_b": {
                "schema": {"type": "object"},
                "key": None,
                "identity": "integer",
                "indexes": [{"name": "c", "path": "$.c"}],
            },
            "a": {
                "schema": {"type": "object"},
                "key": None,
                "identity": "integer",
                "indexes": [{"name": "b_c", "path": "$.d"}],
            },
        },
    }
    path = tmp_path / "new.db"
    with pytest.raises(jl.JarenlabError) as err:
        jl.open(path, clash)
    assert err.value.code == "JD0005"
    assert sorted(os.listdir(tmp_path)) == []
    assert _held(tmp_path) == []
    jl.open(path, MODEL).close()
    with pytest.raises(jl.JarenlabError) as err:
        jl.open(path, clash)
    assert err.value.code == "JD0002"
    assert path.exists() and _held(tmp_path) == []
    with jl.open(path, MODEL) as store:
        assert store["c"].count() == 0


_FILE_CHILD = textwrap.dedent(
    """
    import json, sys
    import jarenlab as jl

    path, model = sys.argv[1], json.loads(sys.argv[2])
    out = {}
    with jl.open(path, model, read_only=True) as store:
        out["read"] = store["c"].to_list()
        try:
            store["c"].insert({"n": 3})
        except jl.JarenlabError as err:
            out["write"] = [err.code, err.condition]
    try:
        jl.open(path, model)
        out["writable"] = "opened"
    except jl.JarenlabError as err:
        out["writable"] = [err.code, err.condition, str(err)]
    print(json.dumps(out))
    """
)


def test_a_read_only_file_in_a_writable_folder_opens_read_only(tmp_path: Path) -> None:
    """The file alone is read-only (its folder is not): ``read_only=True`` reads it through a
    ``mode=ro`` connection, a write is JD2005 ``read_only``, a writable open says to open it read-only."""
    path = tmp_path / "lab.db"
    with jl.open(path, MODEL) as store:
        store["c"].insert_many([{"n": 1}, {"n": 2}])
    before = path.read_bytes()
    out = _in_read_only(path, str(path), json.dumps(MODEL), code=_FILE_CHILD)
    assert out["read"] == [{"n": 1}, {"n": 2}]
    assert out["write"] == ["JD2005", "read_only"]
    code, condition, message = out["writable"]
    assert (code, condition) == ("JD2005", "read_only") and "read_only=True" in message
    assert path.read_bytes() == before


def _other_program(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (x)")
    conn.execute("INSERT INTO t VALUES (1)")
    conn.commit()
    conn.close()


def _newer_store(path: Path) -> None:
    jl.open(path, MODEL).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE _jl_meta SET value = replace(value, '\"0.1\"', '\"9.9\"') WHERE name = 'model'")
    conn.commit()
    conn.close()


_OTHER_MODEL = {"$model": "0.1", "collections": {"d": MODEL["collections"]["c"]}}


@pytest.mark.parametrize(
    ("make", "model", "read_only", "code", "says"),
    [
        (None, {"$model": "0.1", "collections": {"x": {"schema": 5}}}, False, "JD0005", "schema"),
        (None, None, False, "JD0005", "pass a model"),
        (None, MODEL, True, "JD2005", "read_only=True opens an existing store"),
        (lambda p: p.write_bytes(b"not a database" * 100), MODEL, False, "JD2005", "not a SQLite database"),
        (lambda p: p.write_bytes(b"not a database" * 100), MODEL, True, "JD2005", "not a SQLite database"),
        (lambda p: p.write_text("hello"), MODEL, False, "JD2005", "not a SQLite database"),
        (_other_program, MODEL, False, "JD0002", "something else"),
        (_other_program, MODEL, True, "JD0002", "something else"),
        (lambda p: jl.open(p, MODEL).close(), _OTHER_MODEL, False, "JD0002", "differs"),
        (_newer_store, MODEL, False, "JD0002", "format '9.9'"),
        (_newer_store, None, True, "JD0002", "format '9.9'"),
    ],
    ids=[
        "bad-model",
        "no-model",
        "read-only-missing",
        "garbage",
        "garbage-read-only",
        "text",
        "other-program",
        "other-program-read-only",
        "other-model",
        "newer-format",
        "newer-format-read-only",
    ],
)
def test_a_failed_open_closes_at_once_and_alters_nothing(
    tmp_path: Path, make: Any, model: Any, read_only: bool, code: str, says: str
) -> None:
    """Whatever makes an open fail, its connections are closed before it raises (not at garbage
    collection), a file that did not exist is not left behind, and one that did is byte for byte
    as it was (another program's database keeps its journal mode: it is not switched to WAL)."""
    path = tmp_path / "lab.db"
    if make is not None:
        make(path)
    before = path.read_bytes() if path.exists() else None
    with pytest.raises(jl.JarenlabError) as err:
        jl.open(path, model, read_only=read_only)
    assert err.value.code == code and says in str(err.value)
    assert _held(tmp_path) == []
    if before is None:
        assert sorted(os.listdir(tmp_path)) == []
    else:
        assert path.read_bytes() == before
