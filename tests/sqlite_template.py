"""A SQLite file with every migration applied, for the tests that run the embedded default (local
settings on a SQLite file) in a subprocess: migrating a fresh file costs about 12 CPU-seconds, a
copy of a migrated one a few milliseconds.

The migrated file is built once per set of migrations (the fingerprint of
tests/database_template.py: a migration added, removed or edited names another file) and per
checkout, under the system's temporary folder, and kept between runs; workers that need it at the
same time build it once (a lock file), and it appears under its name only when complete."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.database_template import migration_files, migrations_fingerprint

ROOT = Path(__file__).resolve().parents[1]


def embedded_environment(database: Path) -> dict[str, str]:
    """The environment of a subprocess on the embedded default with `database` as its SQLite file."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_URL", "REDIS_URL"))}
    return env | {
        "DJANGO_SETTINGS_MODULE": "config.settings.local",
        "DATABASE_URL": f"sqlite:///{database}",
        "DJANGO_DEBUG": "0",
        "PYTHONPATH": str(ROOT),
    }


def migrated_sqlite(target: Path) -> Path:
    """Copy a migrated SQLite database to `target` (built first if this set of migrations has none)."""
    checkout = hashlib.sha256(str(ROOT).encode()).hexdigest()[:8]
    folder = Path(tempfile.gettempdir()) / f"radlay-test-sqlite-{os.getuid()}"
    folder.mkdir(exist_ok=True)
    built = folder / f"{checkout}-{migrations_fingerprint(migration_files())[:16]}.sqlite3"
    if not built.exists():
        with (folder / f"{built.name}.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not built.exists():
                building = built.with_suffix(f".{os.getpid()}.building")
                building.unlink(missing_ok=True)
                subprocess.run(
                    [sys.executable, str(ROOT / "manage.py"), "migrate", "-v0"],
                    cwd=ROOT,
                    env=embedded_environment(building),
                    check=True,
                    capture_output=True,
                    timeout=600,
                )
                os.replace(building, built)
    shutil.copyfile(built, target)
    return target
