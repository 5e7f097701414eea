"""A scratch PostgreSQL database for a benchmark, next to the configured one and dropped after."""

from __future__ import annotations

import os
from collections.abc import Callable


def scratch_database(url: str, purpose: str) -> tuple[str, Callable[[], None]]:
    """A new database `radlay_bench_<purpose>_<pid>` on the server of `url`, and a function that
    drops it (the configured database itself is never touched)."""
    import psycopg

    name = f"radlay_bench_{purpose}_{os.getpid()}"
    base = url.rsplit("/", 1)[0]
    admin = f"{base}/postgres"
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')

    def drop() -> None:
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    return f"{base}/{name}", drop
