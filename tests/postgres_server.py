"""A real PostgreSQL server for the history's tests: a throwaway cluster (initdb, pg_ctl) in a
temporary folder, on a free port of 127.0.0.1, with password authentication, started once per
test process and stopped at its end; each test gets a database of its own.

JUDGEKIT_TEST_POSTGRES_URL (a server URL whose user may CREATE DATABASE) is used instead when set.
Without either, the tests skip, saying to install Debian's `postgresql` (`.ci/run` does, and
makes that skip a failure).
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import require

USER, PASSWORD = "judgekit", "pg-Secret-7fq2"  # the tests look for the password in every output
_numbers = itertools.count()


def server_binaries() -> Path | None:
    """The folder of initdb and pg_ctl: on PATH, or Debian's /usr/lib/postgresql/<version>/bin."""
    found = shutil.which("pg_ctl")
    if found and shutil.which("initdb"):
        return Path(found).resolve().parent
    for folder in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if (Path(folder) / "initdb").is_file():
            return Path(folder)
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def throwaway_cluster(binaries: Path) -> Iterator[str]:
    """Start a new cluster; yield its server URL (with the password, database `postgres`)."""
    folder = Path(tempfile.mkdtemp(prefix="judgekit-pg-"))
    as_user: list[str] = []
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root: run it as Debian's postgres user
        shutil.chown(folder, "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    (folder / "pw").write_text(PASSWORD)
    if as_user:
        shutil.chown(folder / "pw", "postgres")
    data, port = folder / "data", _free_port()
    subprocess.run(
        [
            *as_user,
            str(binaries / "initdb"),
            "-D",
            str(data),
            "-U",
            USER,
            "--pwfile",
            str(folder / "pw"),
            "--auth",
            "scram-sha-256",
            "-E",
            "UTF8",
            "--no-sync",
        ],
        check=True,
        capture_output=True,
    )
    options = (
        f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100"
    )
    subprocess.run(
        [
            *as_user,
            str(binaries / "pg_ctl"),
            "-D",
            str(data),
            "-o",
            options,
            "-l",
            str(folder / "log"),
            "-w",
            "-t",
            "60",
            "start",
        ],
        check=True,
        capture_output=True,
    )
    try:
        yield f"postgresql://{USER}:{PASSWORD}@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            [*as_user, str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
            capture_output=True,
        )
        shutil.rmtree(folder, ignore_errors=True)


def new_database(server: str) -> str:
    """A new empty database on the server; its URL."""
    import psycopg

    name = f"history_{os.getpid()}_{next(_numbers)}_{int(time.time() * 1000) % 10**8}"
    with psycopg.connect(server, autocommit=True) as db:
        db.execute(f"CREATE DATABASE {name}")
    return server.rsplit("/", 1)[0] + "/" + name


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    given = os.environ.get("JUDGEKIT_TEST_POSTGRES_URL")
    if given:
        yield given
        return
    binaries = server_binaries()
    require(
        binaries is not None,
        "no PostgreSQL server here (initdb, pg_ctl); install Debian's postgresql "
        "package (.ci/run does) or set JUDGEKIT_TEST_POSTGRES_URL",
    )
    try:
        import psycopg  # noqa: F401
    except ImportError:
        require(False, "psycopg is not installed; pip install -e '.[test]'")
    with throwaway_cluster(binaries) as url:  # type: ignore[arg-type]
        yield url


@pytest.fixture
def postgres_url(postgres_server: str) -> str:
    """A new, empty PostgreSQL database for one test (its URL carries the password)."""
    return new_database(postgres_server)
