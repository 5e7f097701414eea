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
