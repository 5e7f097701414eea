"""Settings: production refuses unsafe configuration; the embedded mode is chosen by configuration."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load(module: str, **env: str) -> subprocess.CompletedProcess:
    clean = {
        k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "REDIS_URL", "DATABASE_URL"))
    }
    code = (
        f"import importlib, json; s = importlib.import_module('{module}'); "
        "print(json.dumps({'eager': s.CELERY_TASK_ALWAYS_EAGER, 'broker': s.CELERY_BROKER_URL, "
        "'debug': s.DEBUG, 'engine': s.DATABASES['default']['ENGINE'], "
        "'options': s.DATABASES['default'].get('OPTIONS', {})}))"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_production_needs_a_secret_key():
    result = load("config.settings.production", DJANGO_ALLOWED_HOSTS="example.org")
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY" in result.stderr


def test_production_refuses_debug():
    result = load(
        "config.settings.production",
        DJANGO_SECRET_KEY="x" * 50,
        DJANGO_ALLOWED_HOSTS="example.org",
        DJANGO_DEBUG="true",
    )
    assert result.returncode != 0
    assert "DJANGO_DEBUG must not be set in production" in result.stderr


def test_production_with_a_key_loads_and_uses_the_configured_broker():
    result = load(
        "config.settings.production",
        DJANGO_SECRET_KEY="x" * 50,
        DJANGO_ALLOWED_HOSTS="example.org",
        REDIS_URL="redis://127.0.0.1:1/0",
        DATABASE_URL="postgres://u:p@127.0.0.1:1/db",
    )
    assert result.returncode == 0, result.stderr
    assert '"eager": false' in result.stdout
    assert '"broker": "redis://127.0.0.1:1/0"' in result.stdout
    assert "postgresql" in result.stdout


def test_postgresql_runs_with_prepared_statements_unless_turned_off():
    env = {
        "DJANGO_SECRET_KEY": "x" * 50,
        "DJANGO_ALLOWED_HOSTS": "example.org",
        "DATABASE_URL": "postgres://u:p@127.0.0.1:1/db",
    }
    on = json.loads(load("config.settings.production", **env).stdout)["options"]
    assert on == {"server_side_binding": True, "prepare_threshold": 5}
    off = load("config.settings.production", **env, DJANGO_DB_PREPARED_STATEMENTS="0")
    assert json.loads(off.stdout)["options"] == {}


def test_embedded_mode_runs_tasks_in_process_on_sqlite():
    result = load("config.settings.local")
    assert result.returncode == 0, result.stderr
    assert '"eager": true' in result.stdout
    assert "sqlite3" in result.stdout
