"""The test database is a copy of a template migrated once per set of migrations
(tests/database_template.py): the fingerprint follows every migration file, a changed set names a
new template and retires the old one, and the database these tests run in is a fully migrated copy
of today's template."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from django.db import connection, connections
from django.db.migrations.recorder import MigrationRecorder

from tests import database_template
from tests.database_template import migration_files, migrations_fingerprint, template_name, use_template

REPO = Path(__file__).resolve().parents[1]
needs_postgresql = pytest.mark.skipif(connection.vendor != "postgresql", reason="templates are PostgreSQL's")


def test_the_fingerprint_follows_each_migrations_name_contents_and_presence(tmp_path):
    first, second = tmp_path / "0001_initial.py", tmp_path / "0002_more.py"
    first.write_text("operations = []\n")
    second.write_text("operations = ['a']\n")
    files = [("app", "0001_initial", first), ("app", "0002_more", second)]
    before = migrations_fingerprint(files)

    assert migrations_fingerprint(list(files)) == before
    assert migrations_fingerprint(files[:1]) != before  # one removed
    assert migrations_fingerprint([*files, ("other", "0001_initial", first)]) != before  # one added
    assert migrations_fingerprint([("app", "0001_renamed", first), files[1]]) != before
    second.write_text("operations = ['b']\n")
    assert migrations_fingerprint(files) != before  # one edited in place


def test_every_migration_file_of_the_repository_is_fingerprinted():
    covered = {path.resolve() for _, _, path in migration_files()}
    in_repository = {
        path.resolve() for path in REPO.glob("*/migrations/[0-9]*.py") if ".venv" not in path.parts
    }
    assert in_repository and in_repository <= covered
    # Installed packages' migrations too (a Django upgrade may bring new ones).
    assert any(app == "auth" for app, _, _ in migration_files())


@needs_postgresql
def test_this_database_is_a_migrated_copy_of_todays_template(db):
    template = template_name(
        {"NAME": connection.settings_dict["NAME"].removeprefix("test_").rsplit("_gw", 1)[0]},
        migrations_fingerprint(migration_files()),
    )
    assert connection.settings_dict["TEST"]["TEMPLATE"] == template
    with connection.cursor() as cursor:
        cursor.execute("SELECT datallowconn FROM pg_database WHERE datname = %s", [template])
        assert cursor.fetchone() == (False,)  # nobody sits in it, so copies never fail
    applied = {(m.app, m.name) for m in MigrationRecorder.Migration.objects.all()}
    assert applied == {(app, name) for app, name, _ in migration_files()}


@pytest.fixture
def scratch_connection(db):
    """A connection to a database name of its own, so templates can be built and dropped here
    without touching the suite's."""
    name = f"tplcheck_{uuid.uuid4().hex[:8]}"
    wrapper = type(connections["default"])
    scratch = wrapper({**connection.settings_dict, "NAME": name, "TEST": {}}, alias="tplcheck")
    yield scratch
    with scratch._nodb_cursor() as cursor:
        cursor.execute("SELECT datname FROM pg_database WHERE datname LIKE %s", [f"test_{name}%"])
        for (leftover,) in cursor.fetchall():
            cursor.execute(f'DROP DATABASE "{leftover}"')
    scratch.close()


def databases_like(scratch, pattern: str) -> list[tuple[str, str | None]]:
    with scratch._nodb_cursor() as cursor:
        cursor.execute(
            "SELECT datname, shobj_description(oid, 'pg_database') FROM pg_database WHERE datname LIKE %s "
            "ORDER BY datname",
            [pattern],
        )
        return cursor.fetchall()


@needs_postgresql
def test_a_template_is_built_once_per_migrations_and_run_and_older_ones_retired(
    scratch_connection, monkeypatch, tmp_path
):
    built: list[str] = []
    monkeypatch.setattr(database_template, "_migrate", lambda conn, database: built.append(database))
    migration = tmp_path / "0001_initial.py"
    migration.write_text("operations = []\n")
    files = [("app", "0001_initial", migration)]
    pattern = f"test_{scratch_connection.settings_dict['NAME']}%"

    first = use_template(scratch_connection, rebuild=False, run_id="run-1", files=files)
    assert built == [f"{first}_building"]
    assert databases_like(scratch_connection, pattern) == [(first, "radlay test template, run run-1")]
    assert scratch_connection.settings_dict["TEST"]["TEMPLATE"] == first

    # Same migrations: reused, whether by the next run or by another worker of a --create-db run.
    assert use_template(scratch_connection, rebuild=False, run_id="run-2", files=files) == first
    assert use_template(scratch_connection, rebuild=True, run_id="run-1", files=files) == first
    assert len(built) == 1
    # --create-db in a new run builds it anew.
    assert use_template(scratch_connection, rebuild=True, run_id="run-3", files=files) == first
    assert len(built) == 2
    assert databases_like(scratch_connection, pattern) == [(first, "radlay test template, run run-3")]

    # A migration edited in place: a new template, the old one dropped.
    migration.write_text("operations = ['changed']\n")
    second = use_template(scratch_connection, rebuild=False, run_id="run-4", files=files)
    assert second != first and built[-1] == f"{second}_building"
    assert databases_like(scratch_connection, pattern) == [(second, "radlay test template, run run-4")]
