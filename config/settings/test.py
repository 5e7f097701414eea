"""Test settings: the test command points DATABASE_URL/REDIS_URL at the throwaway PostgreSQL and
Redis it starts; tasks run eagerly unless a test starts a real worker."""

import os
from dataclasses import replace
from urllib.parse import urlsplit, urlunsplit


def worker_redis_url(url: str, worker: str) -> str:
    """REDIS_URL's database number plus the pytest-xdist worker's index (gw0 keeps it, gw1 the next)."""
    parts = urlsplit(url)
    number = int(parts.path.strip("/") or 0) + int(worker.removeprefix("gw"))
    return urlunsplit(parts._replace(path=f"/{number}"))


# Under pytest-xdist each worker has a Redis database of its own, so that one worker's broker
# queues (and a purge of them) never reach another's. The URL is exported, marked as derived, so
# that the processes a test starts (a Celery worker, gunicorn) inherit it unchanged.
_worker = os.environ.get("PYTEST_XDIST_WORKER", "")
if _worker and os.environ.get("REDIS_URL") and os.environ.get("RADLAY_TEST_REDIS_WORKER") != _worker:
    os.environ["REDIS_URL"] = worker_redis_url(os.environ["REDIS_URL"], _worker)
    os.environ["RADLAY_TEST_REDIS_WORKER"] = _worker

from .base import *  # noqa: E402,F401,F403
from .base import env  # noqa: E402

DEBUG = False
SECRET_KEY = "radlay-test-key"
ALLOWED_HOSTS = ["*"]
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# A real worker started by an integration test (tests/generation/test_celery_worker.py) sets
# RADLAY_TEST_REAL_CELERY=1 so that it, and the tasks it sends, go through the broker.
CELERY_TASK_ALWAYS_EAGER = not env.bool("RADLAY_TEST_REAL_CELERY", default=False)
RADLAY_EMBEDDED_TASKS_IN_BACKGROUND = False  # a test reads the finished batch right after launching
CELERY_TASK_EAGER_PROPAGATES = True
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# Tests that need the semantic metrics pass an embedder explicitly; the rest skip loading a model.
# Every read checks freshness, so a test sees the analysis of the data it just wrote (snapshots are
# computed where they are requested: RADLAY_EMBEDDED_TASKS_IN_BACKGROUND above); one process, so an
# in-memory cache.
RADLAY_ANALYSIS = replace(RADLAY_ANALYSIS, embeddings=False, check_seconds=0)  # noqa: F405
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
# Abuse limits are off in the suite (many tests log in and join from 127.0.0.1 within seconds);
# tests/test_abuse_limits.py switches each one on and checks it.
AXES_ENABLED = False
RATELIMIT_ENABLE = False
REST_FRAMEWORK = {**REST_FRAMEWORK, "DEFAULT_THROTTLE_CLASSES": []}  # noqa: F405
