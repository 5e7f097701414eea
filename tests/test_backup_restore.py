"""The documented backup (docs/deployment/backup-and-restore.md): `pg_dump -Fc` of a database holding a
study with answers, `pg_restore` into a new database, and the analysis (`manage.py analyze --json`)
and the answer exports (`manage.py export`) of the restored database are byte-identical to the
original's. Needs the PostgreSQL client programs (/usr/lib/postgresql/<version>/bin, as .ci/test.sh
finds initdb); skips where they or PostgreSQL are absent."""

from __future__ import annotations

import glob
import io
import os
import subprocess
import sys
import uuid
import zipfile
from pathlib import Path

import pytest
from django.db import connection

from tests.evaluation.analysis.test_study_frames import build_answered_study
from tests.generation.test_celery_worker import worker_database_url

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[1]


def pg_program(name: str) -> str | None:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), key=lambda p: int(p.split("/")[4]))
    return found[-1] if found else None


def outputs(database_url: str, tmp_path: Path, tag: str) -> dict[str, bytes]:
    """The analysis document and the answer exports of the study, from a process on `database_url`."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "DATABASE_URL": database_url,
        "RADLAY_ANALYSIS": "embeddings=false",
    }
    manage = [sys.executable, str(REPO / "manage.py")]
    files = {"analysis": tmp_path / f"{tag}-analysis.json"}
    run = [[*manage, "analyze", "--study", "backed-up", "--json", str(files["analysis"])]]
    for file_format in ("csv", "json", "xlsx"):
        files[file_format] = tmp_path / f"{tag}.{file_format}"
        run.append(
            [
                *manage,
                "export",
                "--study",
                "backed-up",
                "--format",
                file_format,
                "--out",
                str(files[file_format]),
            ]
        )
    for command in run:
        done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, (command, done.stderr[-3000:])
    return {name: path.read_bytes() for name, path in files.items()}


def test_pg_dump_and_pg_restore_reproduce_the_analysis_and_the_exports(transactional_db, tmp_path):
    pg_dump, pg_restore = pg_program("pg_dump"), pg_program("pg_restore")
    if pg_dump is None or pg_restore is None:
        pytest.skip("pg_dump/pg_restore are not installed")
    database_url = worker_database_url()
    if database_url is None or connection.vendor != "postgresql":
        pytest.skip("needs the PostgreSQL test database")
    build_answered_study(slug="backed-up")
    before = outputs(database_url, tmp_path, "before")

    dump = tmp_path / "radlay.dump"
    subprocess.run(
        [pg_dump, "-Fc", "--no-owner", "-f", str(dump), "--dbname", database_url], check=True, timeout=300
    )
    restored = f"{connection.settings_dict['NAME']}_restored_{uuid.uuid4().hex[:6]}"
    with connection.cursor() as cursor:
        cursor.execute(f'CREATE DATABASE "{restored}"')
    restored_url = database_url.rsplit("/", 1)[0] + f"/{restored}"
    try:
        subprocess.run(
            [pg_restore, "--no-owner", "--exit-on-error", "--dbname", restored_url, str(dump)],
            check=True,
            timeout=300,
        )
        after = outputs(restored_url, tmp_path, "after")
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f'DROP DATABASE IF EXISTS "{restored}" WITH (FORCE)')
    assert b'"lay"' in before["analysis"] and before["csv"].count(b"\n") > 10
    for name in ("analysis", "csv", "json"):
        assert after[name] == before[name], name
    # An xlsx is a zip whose entries carry the time it was written: its sheets are compared.
    assert xlsx_sheets(after["xlsx"]) == xlsx_sheets(before["xlsx"])


def xlsx_sheets(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as book:
        sheets = {name: book.read(name) for name in book.namelist() if name.startswith("xl/")}
    assert any(name.startswith("xl/worksheets/") for name in sheets)
    return sheets
