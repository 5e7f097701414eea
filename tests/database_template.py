"""The test database is migrated once into a PostgreSQL template database and every test run (every
pytest-xdist worker) gets a fresh copy of it (`CREATE DATABASE ... TEMPLATE ...`, a file copy that
takes a fraction of a second) instead of replaying the migrations.

The template's name carries a fingerprint of every migration file Django would apply (the project's
and the installed packages', with Django's version): a changed, added or removed migration names a
different template, which is built anew, so a stale copy is never used. A copy is made fresh for each
run (`--reuse-db` does not keep a worker's database across runs: a fresh copy is cheaper than telling
whether an old one is still right); `--create-db` rebuilds the template itself.

Workers starting together build the template once: the build holds a PostgreSQL advisory lock, and
the template appears under its final name only when its migrations have finished (it is built under
another name and renamed), so a build killed half-way leaves nothing that a later run would use.
Templates of older fingerprints are dropped when a new one is built. Other databases (SQLite, where
the test database lives in memory) keep pytest-django's usual set-up."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import django
from django.core.management import call_command
from django.db import DatabaseError
from django.db.backends.base.creation import TEST_DATABASE_PREFIX
from django.db.migrations.loader import MigrationLoader

# Changing how a template is built changes every fingerprint.
BUILD_VERSION = "1"


def migration_files() -> list[tuple[str, str, Path]]:
    """(app label, migration name, file) of every migration Django would apply, in order of name."""
    loader = MigrationLoader(None, ignore_no_migrations=True)
    return [
        (app_label, name, Path(sys.modules[migration.__module__].__file__ or ""))
        for (app_label, name), migration in sorted(loader.disk_migrations.items())
    ]


def migrations_fingerprint(files: list[tuple[str, str, Path]]) -> str:
    """A digest of the migrations (app, name and file contents) and Django's version."""
    digest = hashlib.sha256(f"{BUILD_VERSION} django {django.get_version()}".encode())
    for app_label, name, path in files:
        digest.update(f"\0{app_label}\0{name}\0".encode())
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def template_name(settings_dict: dict, fingerprint: str) -> str:
    """test_<database>_tpl_<fingerprint> (PostgreSQL names stop at 63 bytes)."""
    return f"{TEST_DATABASE_PREFIX}{settings_dict['NAME']}"[:36] + f"_tpl_{fingerprint[:12]}"


def use_template(connection, *, rebuild: bool, run_id: str, files=None) -> str | None:
    """Make sure the template of today's migrations exists for `connection`'s database, and have its
    test database created from it. Returns the template's name, or None where the database is not
    PostgreSQL (or runs without migrations) and the usual set-up applies.

    `rebuild` (`--create-db`) builds the template anew, once per test run: workers of the same run
    (`run_id`, pytest-xdist's run id) reuse what the first of them built. `files`: the migrations
    (migration_files() when None)."""
    test_settings = connection.settings_dict.setdefault("TEST", {})
    if connection.vendor != "postgresql" or test_settings.get("MIGRATE") is False:
        return None
    template = template_name(connection.settings_dict, migrations_fingerprint(files or migration_files()))
    building = f"{template}_building"
    stamp = "radlay test template, run " + run_id.replace("'", "")
    quote = connection.ops.quote_name
    with connection._nodb_cursor() as cursor:
        # Session-level: held until this maintenance connection closes at the end of the block.
        cursor.execute("SELECT pg_advisory_lock(hashtext(%s))", [template])
        cursor.execute(
            "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = %s", [template]
        )
        found = cursor.fetchone()
        if found is not None and rebuild and found[0] != stamp:
            cursor.execute(f"DROP DATABASE {quote(template)}")
            found = None
        if found is None:
            cursor.execute(f"DROP DATABASE IF EXISTS {quote(building)}")
            cursor.execute(f"CREATE DATABASE {quote(building)}")
            _migrate(connection, building)
            # No session may sit in a template: CREATE DATABASE ... TEMPLATE refuses to copy then.
            cursor.execute(f"ALTER DATABASE {quote(building)} WITH ALLOW_CONNECTIONS false")
            # A utility statement takes no parameters; the stamp holds no quote.
            cursor.execute(f"COMMENT ON DATABASE {quote(building)} IS '{stamp}'")
            cursor.execute(f"ALTER DATABASE {quote(building)} RENAME TO {quote(template)}")
            _drop_older_templates(cursor, connection, template)
    test_settings["TEMPLATE"] = template
    return template


def _migrate(connection, database: str) -> None:
    """Apply every migration to `database` through `connection`, then point it back."""
    name = connection.settings_dict["NAME"]
    connection.close()
    connection.settings_dict["NAME"] = database
    try:
        call_command("migrate", verbosity=0, interactive=False, database=connection.alias, run_syncdb=True)
    finally:
        connection.close()
        connection.settings_dict["NAME"] = name


def _drop_older_templates(cursor, connection, template: str) -> None:
    """Drop the templates of the same database with other fingerprints (the maintenance cursor
    runs in autocommit; a template being copied from waits for the copy, one that cannot be dropped
    now is left for the next build)."""
    prefix = template.rsplit("_tpl_", 1)[0] + "_tpl_"
    cursor.execute(
        "SELECT datname FROM pg_database WHERE left(datname, %s) = %s AND datname <> %s",
        [len(prefix), prefix, template],
    )
    for (older,) in cursor.fetchall():
        try:
            cursor.execute(f"DROP DATABASE {connection.ops.quote_name(older)}")
        except DatabaseError:
            continue
