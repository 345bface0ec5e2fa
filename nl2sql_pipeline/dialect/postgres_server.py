"""A throwaway PostgreSQL server: its own cluster on a free loopback port, removed when stopped.

    server = PostgresServer().start()     # raises PostgresUnavailable without the server binaries
    try:
        connect(server.dsn)
    finally:
        server.stop()

Used by ``gold import --verify-with postgres`` (``postgres_verify``) and by the integration tests.

The PostgreSQL binaries come from PATH or ``/usr/lib/postgresql/<version>/bin`` (Debian's ``postgresql-15``
package; ``.ci/run`` installs it). ``initdb`` and ``postgres`` refuse to run as root, so under root the
cluster belongs to an unprivileged user (``postgres``, which the Debian package creates, else ``nobody``)
and every server command runs as that user; the data folder lives under /tmp (not under pytest's
root-only temp folder) so that user can reach it. Authentication is by password (scram-sha-256) on
127.0.0.1 only (a random password per cluster), and the unix socket sits in the cluster's own folder.
"""

from __future__ import annotations

import logging
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from nl2sql_pipeline.errors import Nl2SqlError

logger = logging.getLogger(__name__)


class PostgresUnavailable(Nl2SqlError):
    """No PostgreSQL server binaries on this machine (or no user that may run them)."""


class PostgresServerError(Nl2SqlError):
    """The throwaway cluster could not be created or started (the message holds the command's output)."""


def find_bin_dir() -> Path:
    """The folder of ``initdb``/``pg_ctl``/``postgres``: from PATH, else the newest Debian install."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(os.path.realpath(found)).parent
    candidates = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
    )
    if not candidates:
        raise PostgresUnavailable(
            "no PostgreSQL server binaries (initdb) on PATH or in /usr/lib/postgresql/*/bin; "
            "install them with `apt-get install postgresql-15` (.ci/run does when it runs as root)"
        )
    return candidates[-1].parent


def _run_as() -> pwd.struct_passwd | None:
    """The unprivileged user the cluster runs as when we are root (None: run as ourselves)."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    raise PostgresUnavailable("running as root and neither a 'postgres' nor a 'nobody' user exists to run PostgreSQL")


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class PostgresServer:
    """One started cluster; ``stop()`` shuts it down and removes its files."""

    user: str = "nl2sql"
    password: str = field(default_factory=lambda: secrets.token_urlsafe(18))
    host: str = "127.0.0.1"
    port: int = field(default_factory=free_port)
    base: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="nl2sql-pg-")))

    @property
    def dsn(self) -> str:
        """The libpq URL of database ``nl2sql`` (the password is URL-safe)."""
        return f"postgresql://{self.user}:{self.password}@{self.host}:{self.port}/nl2sql"

    @property
    def env(self) -> dict[str, str]:
        """The credentials as deploy/dagster.yaml reads them (DAGSTER_PG_*), for database ``nl2sql``."""
        return {
            "DAGSTER_PG_HOST": self.host,
            "DAGSTER_PG_PORT": str(self.port),
            "DAGSTER_PG_DB": "nl2sql",
            "DAGSTER_PG_USERNAME": self.user,
            "DAGSTER_PG_PASSWORD": self.password,
        }

    def _cmd(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        owner = _run_as()
        env = {**os.environ, "LC_ALL": "C", "LANG": "C", "HOME": str(self.base)}
        if owner is None:
            done = subprocess.run(args, capture_output=True, text=True, env=env, cwd=self.base)
        else:
            done = subprocess.run(
                args,
                capture_output=True,
                text=True,
                env=env,
                cwd=self.base,
                user=owner.pw_uid,
                group=owner.pw_gid,
                extra_groups=[],
            )
        if check and done.returncode != 0:
            last = next((line for line in reversed(done.stderr.splitlines()) if line.strip()), "no message")
            raise PostgresServerError(
                f"{Path(args[0]).name} exited {done.returncode}: {last.strip()}\n{' '.join(args)}\n"
                f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
            )
        return done

    def start(self) -> PostgresServer:
        """initdb, pg_ctl start, CREATE DATABASE nl2sql; raises ``PostgresUnavailable``/``PostgresServerError``
        (after removing what it made)."""
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        logger.info("PostgreSQL cluster started on %s:%s (%s)", self.host, self.port, self.base)
        return self

    def _start(self) -> None:
        bin_dir = find_bin_dir()
        owner = _run_as()
        data, pwfile = self.base / "data", self.base / "pwfile"
        pwfile.write_text(self.password + "\n", encoding="utf-8")
        if owner is not None:
            for path in (self.base, pwfile):
                os.chown(path, owner.pw_uid, owner.pw_gid)
        self.base.chmod(0o700)
        self._cmd(
            str(bin_dir / "initdb"),
            "-D",
            str(data),
            "-U",
            self.user,
            f"--pwfile={pwfile}",
            "--auth=scram-sha-256",
            "--encoding=UTF8",
            "--locale=C",
        )
        options = f"-c listen_addresses={self.host} -p {self.port} -c unix_socket_directories={self.base} -c fsync=off"
        self._cmd(
            str(bin_dir / "pg_ctl"),
            "-D",
            str(data),
            "-l",
            str(self.base / "server.log"),
            "-o",
            options,
            "-w",
            "-t",
            "60",
            "start",
        )
        self._create_database()

    def _create_database(self) -> None:
        import psycopg2  # installed with dagster-postgres

        try:
            connection = psycopg2.connect(
                host=self.host, port=self.port, user=self.user, password=self.password, dbname="postgres"
            )
        except psycopg2.Error as exc:
            raise PostgresServerError(f"cannot connect to the new cluster: {exc}\n{self.log()}") from exc
        try:
            connection.autocommit = True
            with connection.cursor() as cursor:
                cursor.execute("CREATE DATABASE nl2sql")
        finally:
            connection.close()

    def query(self, sql: str) -> list[tuple]:
        """Rows of ``sql`` on the ``nl2sql`` database."""
        import psycopg2

        connection = psycopg2.connect(
            host=self.host, port=self.port, user=self.user, password=self.password, dbname="nl2sql"
        )
        try:
            with connection.cursor() as cursor:
                cursor.execute(sql)
                return cursor.fetchall()
        finally:
            connection.close()

    def log(self) -> str:
        """The end of the server's log (for failure messages)."""
        path = self.base / "server.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""

    def stop(self) -> None:
        """Stop the server (fast shutdown) and remove its folder."""
        try:
            if (self.base / "data" / "postmaster.pid").exists():
                self._cmd(
                    str(find_bin_dir() / "pg_ctl"),
                    "-D",
                    str(self.base / "data"),
                    "-m",
                    "fast",
                    "-w",
                    "stop",
                    check=False,
                )
        finally:
            shutil.rmtree(self.base, ignore_errors=True)
