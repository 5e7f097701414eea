"""`GET /api/studies/<slug>/analysis/?fresh=1` against a real gunicorn with 3 sync workers (as
docker/compose.yml runs it), a broker and no Celery worker, so that no snapshot ever lands: each
such request answers 202 within a few seconds, and three of them at once never hold every worker,
so a participant's page is answered within a second throughout (before, they held all three
workers for 120 s and a participant waited 121.8 s)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests
from django.contrib.auth import get_user_model
from django.db import connection
from rest_framework.authtoken.models import Token

from annotation.models import Participant
from tests.evaluation.analysis.test_study_frames import build_answered_study
from tests.generation.test_celery_worker import worker_database_url
from tests.generation.test_fault_injection import Services, free_port

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
PARTICIPANT_WITHIN = 1.0  # seconds


def start_gunicorn(tmp_path: Path, env: dict[str, str], port: int) -> subprocess.Popen:
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "config.wsgi:application", "--workers", "3"]
        + ["--bind", f"127.0.0.1:{port}", "--timeout", "120", "--log-level", "warning"],
        cwd=REPO,
        env=env,
        stdout=open(tmp_path / "gunicorn.log", "wb"),  # noqa: SIM115 - written until it stops
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            # Every worker has loaded the app once a few requests were answered.
            with ThreadPoolExecutor(6) as pool:
                if all(
                    r.status_code < 500
                    for r in pool.map(lambda _: requests.get(base + "/", timeout=30), range(6))
                ):
                    return process
        except requests.ConnectionError:
            time.sleep(0.3)
    process.kill()
    pytest.fail("gunicorn did not start:\n" + (tmp_path / "gunicorn.log").read_text(errors="replace"))


def test_three_fresh_requests_never_delay_a_participant(transactional_db, tmp_path, settings):
    database_url = worker_database_url()
    if database_url is None or connection.vendor != "postgresql":
        pytest.skip("needs the PostgreSQL test database that `make test` starts")
    settings.RADLAY_ANALYSIS_OPTIONS = {"embeddings": False}
    study = build_answered_study(slug="fresh-load")
    user = get_user_model().objects.create_user("ada", password="pw")
    study.researchers.add(user)
    token = Token.objects.create(user=user)
    radiologist = Participant.objects.filter(study=study, role=Participant.Role.RADIOLOGIST).first()

    services = Services(tmp_path, {})
    redis_port, web_port = free_port(), free_port()
    services.start_redis(redis_port)  # a broker nobody consumes: no snapshot ever lands
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "RADLAY_TEST_REAL_CELERY": "1",
        "DATABASE_URL": database_url,
        "REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
        "PYTHONPATH": str(REPO),
    }
    server = start_gunicorn(tmp_path, env, web_port)
    base = f"http://127.0.0.1:{web_port}"
    try:
        fresh_url = f"{base}/api/studies/{study.slug}/analysis/?fresh=1"
        headers = {"Authorization": f"Token {token.key}"}
        participant_url = f"{base}/s/{radiologist.token}/"
        # Every worker has served both kinds of page once (templates, URL resolvers, connections).
        with ThreadPoolExecutor(6) as pool:
            list(pool.map(lambda _: requests.get(participant_url, timeout=60), range(6)))
            list(
                pool.map(
                    lambda _: requests.get(fresh_url[: -len("?fresh=1")], headers=headers, timeout=60),
                    range(6),
                )
            )
        done = threading.Event()
        waits: list[float] = []

        def participant() -> None:
            while not done.is_set():
                started = time.monotonic()
                response = requests.get(participant_url, timeout=60)
                waits.append(time.monotonic() - started)
                assert response.status_code == 200
                time.sleep(0.1)

        def fresh(_) -> tuple[int, float, dict]:
            started = time.monotonic()
            response = requests.get(fresh_url, headers=headers, timeout=150)
            return response.status_code, time.monotonic() - started, dict(response.headers)

        watcher = threading.Thread(target=participant)
        watcher.start()
        try:
            with ThreadPoolExecutor(3) as pool:
                answers = list(pool.map(fresh, range(3)))
        finally:
            done.set()
            watcher.join(timeout=60)
        for code, took, response_headers in answers:
            assert code == 202 and took < 10, (code, took)
            assert response_headers["Retry-After"] and response_headers["Location"].endswith(
                f"/api/studies/{study.slug}/analysis/"
            )
        assert waits and max(waits) < PARTICIPANT_WITHIN, sorted(waits)[-5:]
    finally:
        server.terminate()
        server.wait(timeout=30)
        services.close()
