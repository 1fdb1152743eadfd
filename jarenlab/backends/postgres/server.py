"""A throwaway local PostgreSQL server, for tests and tutorials: ``with LocalServer() as server: ...``.

It runs ``initdb`` and ``pg_ctl`` from the machine's server binaries (``$JARENLAB_PG_BIN``,
``pg_config --bindir``, the newest ``/usr/lib/postgresql/*/bin``, then ``$PATH``) in a fresh
temporary folder, on a free port and a unix socket in that folder, with trust authentication for
the local user ``postgres``. PostgreSQL refuses to run as root: as root, the server runs as an
unprivileged user (``$JARENLAB_PG_USER``, default ``postgres``) through ``runuser``.

Durability settings are off (``fsync=off``): this server is for throwaway data. Nothing here is
used by a store; a store connects to whatever URL it is given.

>>> find_bindir() is None or os.path.exists(os.path.join(find_bindir(), "pg_ctl"))
True
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from typing import Any

from jarenlab.errors import StoreError

#: Settings for a fast, disposable server (durability off; notebooks' idle transactions time out).
FAST = {
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "max_connections": "200",
    "idle_in_transaction_session_timeout": "120s",
}


def find_bindir() -> str | None:
    """The folder holding ``initdb`` and ``pg_ctl``, or None when this machine has no server binaries."""
    candidates = [os.environ.get("JARENLAB_PG_BIN", "")]
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, timeout=10)
        candidates.append(out.stdout.strip())
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_version, reverse=True)
    which = shutil.which("pg_ctl")
    if which:
        candidates.append(os.path.dirname(os.path.realpath(which)))
    for folder in candidates:
        if folder and all(os.access(os.path.join(folder, b), os.X_OK) for b in ("initdb", "pg_ctl")):
            return folder
    return None


def _version(path: str) -> tuple[int, ...]:
    digits = os.path.basename(os.path.dirname(path))
    return tuple(int(p) for p in digits.split(".") if p.isdigit())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalServer:
    """A PostgreSQL server in a temporary folder, started by :meth:`start` and removed by :meth:`stop`.

    Args:
        settings: server settings (``-c name=value``) on top of :data:`FAST`.
        user: the unprivileged account to run as when this process is root.
        locale: the cluster's default locale (``C.UTF-8``; another one shows that every
            comparison jarenlab writes is collated ``"C"`` whatever the database's default).
    """

    def __init__(
        self, *, settings: dict[str, str] | None = None, user: str | None = None, locale: str = "C.UTF-8"
    ) -> None:
        self.settings = {**FAST, **(settings or {})}
        self.user = user or os.environ.get("JARENLAB_PG_USER", "postgres")
        self.locale = locale
        self.base: str | None = None
        self.port: int | None = None
        self._bindir: str | None = None
        self._run_as: list[str] = []
        self._options = ""

    # -- lifecycle ------------------------------------------------------------------------------------
    def start(self) -> LocalServer:
        """Create the cluster and start the server (about a second). JD2005 naming what failed."""
        bindir = find_bindir()
        if bindir is None:
            raise StoreError(
                "JD2005",
                "PostgreSQL server binaries not found (looked in $JARENLAB_PG_BIN, pg_config --bindir, "
                "/usr/lib/postgresql/*/bin and PATH); install the server package (postgresql)",
            )
        self._bindir = bindir
        self.base = tempfile.mkdtemp(prefix="jarenlab-pg-")
        if os.geteuid() == 0:
            try:
                account = pwd.getpwnam(self.user)
            except KeyError:
                raise StoreError(
                    "JD2005",
                    f"PostgreSQL refuses to run as root and there is no user {self.user!r} to run as",
                ) from None
            os.chown(self.base, account.pw_uid, account.pw_gid)
            self._run_as = ["runuser", "-u", self.user, "--"]
        data = os.path.join(self.base, "data")
        self._run(
            "initdb",
            "-D",
            data,
            "-U",
            "postgres",
            "--auth=trust",
            "-E",
            "UTF8",
            f"--locale={self.locale}",
            "-N",
        )
        self.port = _free_port()
        options = " ".join(
            [f"-p {self.port}", f"-k {self.base}", "-c listen_addresses=127.0.0.1"]
            + [f"-c {k}={v}" for k, v in self.settings.items()]
        )
        self._options = options
        self.resume()
        return self

    def halt(self, mode: str = "immediate") -> None:
        """Stop the server but keep its data (``resume`` starts it again on the same address).
        ``immediate`` ends every session at once without a checkpoint, as a crash would; ``fast``
        ends them politely. For fault tests: what clients see while a server goes away."""
        self._ctl("-m", mode, "stop")

    def resume(self) -> None:
        """Start the (halted) server again on the same port and socket; returns once it accepts."""
        self._ctl("-w", "-t", "60", "-l", self._log(), "-o", self._options, "start")

    def restart(self, mode: str = "immediate") -> None:
        """:meth:`halt` then :meth:`resume` (``pg_ctl restart``): every session ends, the data stays."""
        self._ctl("-m", mode, "-w", "-t", "60", "-l", self._log(), "-o", self._options, "restart")

    def _log(self) -> str:
        return os.path.join(os.path.dirname(self._data()), "server.log")

    def _data(self) -> str:
        if self.base is None:
            raise StoreError("JD2063", "the server is not running")
        return os.path.join(self.base, "data")

    def _ctl(self, *args: str) -> None:
        self._run("pg_ctl", "-D", self._data(), *args)

    def stop(self) -> None:
        """Stop the server at once and remove its folder; never raises."""
        if self.base is None:
            return
        if self._bindir is not None:
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                self._run(
                    "pg_ctl", "-D", os.path.join(self.base, "data"), "-m", "immediate", "stop", check=False
                )
        shutil.rmtree(self.base, ignore_errors=True)
        self.base = None

    def _run(self, binary: str, *args: str, check: bool = True) -> None:
        assert self._bindir is not None
        done = subprocess.run(
            [*self._run_as, os.path.join(self._bindir, binary), *args],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if check and done.returncode != 0:
            raise StoreError("JD2005", f"{binary} failed: {(done.stderr or done.stdout).strip()[-800:]}")

    # -- addresses ------------------------------------------------------------------------------------
    def url(self, dbname: str = "postgres") -> str:
        """A connection URL for ``dbname`` over the server's unix socket."""
        if self.base is None:
            raise StoreError("JD2063", "the server is not running")
        return f"postgresql://postgres@/{dbname}?host={self.base}&port={self.port}"

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"port {self.port}, {self.base}" if self.base else "stopped"
        return f"<jarenlab LocalServer ({state})>"
