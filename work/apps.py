from django.apps import AppConfig


class WorkConfig(AppConfig):
    """Background work run by Celery workers, every kind of it: batches of jobs (generation
    batches, judge runs: the scheduler, the abstract models, the launch form and options) and
    single jobs (analysis snapshots, power plans, training jobs, uploads: work.single_jobs), with
    one lease, healing check, attempts limit, progress, embedded-mode runner and task retry policy,
    each written once. Apps that launch background work are its users; it imports none of them."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "work"
    verbose_name = "Background work"
