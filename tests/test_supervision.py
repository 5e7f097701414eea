"""Supervision as shipped (docs/deployment/supervision.md): every long-running process of the compose
deployment restarts by itself, exactly one beat runs, and the systemd units restart theirs and run
what compose runs."""

from __future__ import annotations

import configparser
from pathlib import Path

import yaml

from config.celery_app import app, heal_on_start

ROOT = Path(__file__).resolve().parents[1]
UNITS = ROOT / "deploy" / "systemd"


def compose_services() -> dict:
    return yaml.safe_load((ROOT / "docker" / "compose.yml").read_text())["services"]


def unit(name: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.read(UNITS / name)
    return parser


def test_every_compose_process_restarts_by_itself():
    services = compose_services()
    for name in ("web", "worker", "beat", "gpu-worker", "postgres", "redis"):
        assert services[name].get("restart") in ("unless-stopped", "always"), name
    beats = [name for name, service in services.items() if " beat" in str(service.get("command", ""))]
    assert beats == ["beat"]


def test_the_systemd_units_restart_and_run_the_worker_and_beat():
    for name, runs in (
        ("radlay-web.service", "gunicorn config.wsgi:application"),
        ("radlay-worker.service", "celery -A config worker -Q llm,default"),
        ("radlay-beat.service", "celery -A config beat"),
    ):
        service = unit(name)["Service"]
        assert service["Restart"] == "always" and float(service["RestartSec"]) <= 10, name
        assert runs in service["ExecStart"], name


def test_the_snapshot_healing_check_is_on_beat_and_runs_on_a_worker_start(monkeypatch):
    from django.conf import settings

    schedule = {entry["task"]: entry for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    heal = schedule["evaluation.tasks.analysis_snapshots_heal"]
    assert heal["schedule"] <= 60
    assert app.conf.task_routes["evaluation.tasks.analysis_snapshots_heal"] == {"queue": "default"}
    from evaluation import tasks

    assert tasks.analysis_snapshots_heal_task.name == heal["task"]
    sent: list[str] = []
    monkeypatch.setattr(app, "send_task", lambda name, *a, **k: sent.append(name))
    heal_on_start()
    assert heal["task"] in sent
