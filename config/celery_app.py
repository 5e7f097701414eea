"""The Celery app. Queues: `default` (bookkeeping, analysis snapshots), `llm` (API-backed generation
and judge items), `gpu` (local models), `heavy` (long CPU work a researcher asks for: sample-size
plans, a judge run's agreement), which its own worker consumes so that it never holds up the
snapshots (docker/compose.yml). Settings come from Django's settings under the CELERY_ namespace;
the beat schedule there runs the self-healing checks of every kind of background work
(generation's batches, judging's runs, the console's uploads, evaluation's analysis snapshots and
power plans, ml's training jobs), which every worker also runs when it starts."""

import logging
import os

from celery import Celery
from celery.signals import worker_ready
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

logger = logging.getLogger(__name__)

app = Celery("radlay")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.task_queues = (Queue("default"), Queue("llm"), Queue("gpu"), Queue("heavy"))
app.conf.task_routes = {
    "generation.tasks.generation_job_run_llm": {"queue": "llm"},
    "generation.tasks.generation_job_run_gpu": {"queue": "gpu"},
    "generation.tasks.generation_batches_heal": {"queue": "default"},
    "judging.tasks.judge_runs_heal": {"queue": "default"},
    "console.tasks.source_uploads_heal": {"queue": "default"},
    "evaluation.tasks.analysis_snapshots_heal": {"queue": "default"},
    "evaluation.tasks.power_plans_heal": {"queue": "default"},
    "ml.tasks.training_jobs_heal": {"queue": "default"},
    "judging.tasks.judge_run_agreement": {"queue": "heavy"},
    "ml.tasks.*": {"queue": "gpu"},
    "evaluation.tasks.power_plan_run": {"queue": "heavy"},
    "console.tasks.source_upload_run": {"queue": "heavy"},
}
app.autodiscover_tasks()


@worker_ready.connect
def heal_on_start(sender=None, **kwargs) -> None:
    """A restarted worker re-sends the jobs its predecessor lost, without waiting for beat."""
    for task in (
        "generation.tasks.generation_batches_heal",
        "judging.tasks.judge_runs_heal",
        "console.tasks.source_uploads_heal",
        "evaluation.tasks.analysis_snapshots_heal",
        "evaluation.tasks.power_plans_heal",
        "ml.tasks.training_jobs_heal",
    ):
        try:
            app.send_task(task)
        except Exception:  # noqa: BLE001 - the broker may be down; beat runs the check later
            logger.warning("could not queue the self-healing check %s", task, exc_info=True)
