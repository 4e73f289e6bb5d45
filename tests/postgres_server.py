"""A throwaway PostgreSQL server for tests and benchmarks: initdb into a fresh folder, started on a
free loopback port, stopped (immediately) and removed afterwards.

As root, initdb refuses to run, so the server runs as the ``postgres`` user through ``runuser``.
:func:`unavailable` says why no server can be started here (then tests skip with that reason).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

BIN_FOLDERS = sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)


def _binary(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = [folder / name for folder in BIN_FOLDERS if (folder / name).exists()]
    return str(candidates[0]) if candidates else None


def unavailable() -> str | None:
    """Why no server can be started here (missing binaries or driver), or None."""
    if importlib.util.find_spec("psycopg") is None:
        return 'psycopg is not installed (pip install "rankkit[postgres]")'
    if _binary("initdb") is None or _binary("pg_ctl") is None:
        return "the PostgreSQL server binaries (initdb, pg_ctl) are not installed (apt-get install postgresql)"
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        return "running as root without runuser, and initdb refuses root"
    return None


def _as_server_user(command: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def throwaway_server() -> Iterator[str]:
    """Start a server; yields the URL of its ``postgres`` database (user ``rankkit``, no password).
    Raises RuntimeError with the server's log when it cannot start."""
    folder = Path(tempfile.mkdtemp(prefix="rankkit-pg-"))
    folder.chmod(0o777)  # the server user writes here
    data, log, port = folder / "data", folder / "server.log", _free_port()
    run = {"check": True, "capture_output": True, "text": True, "timeout": 120}
    try:
        subprocess.run(
            _as_server_user(
                [_binary("initdb"), "-D", str(data), "-A", "trust", "-U", "rankkit", "--no-sync", "-E", "UTF8"]
            ),
            **run,
        )
        options = f"-p {port} -h 127.0.0.1 -k {folder} -F -c max_connections=50"
        subprocess.run(
            _as_server_user([_binary("pg_ctl"), "-D", str(data), "-o", options, "-l", str(log), "-w", "start"]), **run
        )
    except (subprocess.SubprocessError, OSError) as err:
        shutil.rmtree(folder, ignore_errors=True)
        detail = getattr(err, "stderr", "") or ""
        raise RuntimeError(f"PostgreSQL did not start: {err} {detail[-500:]}") from None
    try:
        yield f"postgresql://rankkit@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            _as_server_user([_binary("pg_ctl"), "-D", str(data), "-m", "immediate", "stop"]),
            capture_output=True,
            timeout=60,
        )
        shutil.rmtree(folder, ignore_errors=True)


def fresh_database(server_url: str, name: str) -> str:
    """Create the empty database ``name`` on the server; its URL."""
    import psycopg

    with psycopg.connect(server_url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
        admin.execute(f'CREATE DATABASE "{name}"')
    return server_url.rsplit("/", 1)[0] + f"/{name}"
