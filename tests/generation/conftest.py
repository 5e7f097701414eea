import pytest

from generation.backends.openai_backend import OpenAIBackend, RetryPolicy
from tests.generation.scripted_llm_server import ScriptedLLMServer


@pytest.fixture
def scripted_llm():
    """A running ScriptedLLMServer on 127.0.0.1 (a fresh one per test)."""
    with ScriptedLLMServer() as server:
        yield server


@pytest.fixture
def sleeps():
    """The backoff delays an OpenAIBackend asked for (recorded instead of slept)."""
    return []


@pytest.fixture
def openai_backend(scripted_llm, sleeps):
    """An OpenAIBackend talking to the scripted server over HTTP; backoff is recorded, not slept."""
    return OpenAIBackend(
        model="gpt-3.5-turbo",
        base_url=scripted_llm.base_url,
        api_key="test-key",
        timeout=5.0,
        retry=RetryPolicy(max_attempts=3, initial_delay=0.5, max_delay=4.0),
        sleep=sleeps.append,
    )


@pytest.fixture
def sent(monkeypatch):
    """What the generation services queue (job ids, backend, countdown), recorded instead of run."""
    from generation import tasks

    calls: list[tuple[list[int], str, float | None]] = []
    monkeypatch.setattr(
        tasks,
        "generation_jobs_send",
        lambda job_ids, *, backend, countdown=None: calls.append((list(job_ids), backend, countdown)),
    )
    return calls


@pytest.fixture
def studies_approve_scripted_llm(scripted_llm, settings):
    """For tests with a real worker (another process, which no monkeypatch reaches): every study
    created during the test gets a data policy that approves the scripted server's endpoint, so the
    data-policy gate (privacy/gate.py) lets its calls through as an owner's approval would; this
    process (the launch's own check) is configured for that endpoint as the worker is."""
    settings.OPENAI_BASE_URL = scripted_llm.base_url
    from django.db.models.signals import post_save

    from annotation.models import Study
    from privacy.models import DataPolicy

    def approve(sender, instance, created, **kwargs):
        if created:
            DataPolicy.objects.get_or_create(
                study=instance,
                defaults={"policy": "external-approved", "endpoint": scripted_llm.base_url.rstrip("/")},
            )

    post_save.connect(approve, sender=Study, dispatch_uid="tests-approve-scripted-llm")
    yield
    post_save.disconnect(sender=Study, dispatch_uid="tests-approve-scripted-llm")
