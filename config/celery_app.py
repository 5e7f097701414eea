"""The Celery app. Queues: `default` (bookkeeping), `llm` (API-backed generation), `gpu` (local
models). Settings come from Django's settings under the CELERY_ namespace."""

import os

from celery import Celery
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

app = Celery("radlay")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_queues = (Queue("default"), Queue("llm"), Queue("gpu"))
app.conf.task_routes = {
    "generation.tasks.generation_job_run_llm": {"queue": "llm"},
    "generation.tasks.generation_job_run_gpu": {"queue": "gpu"},
    "ml.tasks.*": {"queue": "gpu"},
}
app.autodiscover_tasks()
