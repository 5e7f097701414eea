"""Where a benchmark writes: a scratch database next to the configured one, dropped after."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def bench_database(purpose: str, folder: Path) -> Iterator[str]:
    """Point DATABASE_URL at a scratch database for the benchmark and yield where it is: with a
    PostgreSQL DATABASE_URL, a new database `radlay_bench_<purpose>_<pid>` on that server (the
    configured database itself is never touched), dropped at the end; otherwise a throwaway SQLite
    file in `folder`."""
    configured = os.environ.get("DATABASE_URL", "")
    if not configured.startswith(("postgres://", "postgresql://")):
        os.environ["DATABASE_URL"] = f"sqlite:///{folder / 'bench.sqlite3'}"
        yield "a throwaway SQLite file"
        return
    import psycopg

    name = f"radlay_bench_{purpose}_{os.getpid()}"
    base = configured.rsplit("/", 1)[0]
    admin = f"{base}/postgres"
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    os.environ["DATABASE_URL"] = f"{base}/{name}"
    try:
        yield f"a scratch database on {configured.rsplit('@', 1)[-1].rsplit('/', 1)[0]}"
    finally:
        from django.db import connections

        connections.close_all()
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
