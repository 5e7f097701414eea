"""Run a script on the embedded default (local settings, a SQLite file) in a subprocess: the test
suite itself runs on PostgreSQL. The file is a copy of one migrated once per set of migrations
(tests/sqlite_template.py), so the script's own `migrate` has nothing left to do. The script
prints one JSON object as its last line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.sqlite_template import ROOT, embedded_environment, migrated_sqlite


def run_on_sqlite(script: str, folder: Path) -> dict:
    database = migrated_sqlite(folder / "radlay.sqlite3")
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=embedded_environment(database),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])
