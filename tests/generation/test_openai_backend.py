"""OpenAIBackend against the scripted server: request shape, usage, cost, retries, timeouts, errors."""

import random
import socket

import pytest

from generation.backends.base import BackendError, ChatBackend, GenerationParams
from generation.backends.openai_backend import DEFAULT_PRICES, ModelPrice, OpenAIBackend, RetryPolicy
from tests.generation.scripted_llm_server import count_tokens

MESSAGES = [{"role": "user", "content": "Simplify the sentence: Liver is normal."}]


def complete(backend, params=None, agent="generator"):
    return backend.complete(MESSAGES, agent=agent, params=params or GenerationParams())


def test_request_usage_and_cost(scripted_llm, openai_backend):
    assert isinstance(openai_backend, ChatBackend)
    scripted_llm.script("generator", ["The liver looks healthy."])
    completion = complete(
        openai_backend, GenerationParams(temperature=0.8, max_tokens=100, seed=3, top_p=0.9)
    )

    (request,) = scripted_llm.chat_requests()
    assert request.messages == MESSAGES
    assert request.params == {
        "model": "gpt-3.5-turbo",
        "temperature": 0.8,
        "max_tokens": 100,
        "seed": 3,
        "top_p": 0.9,
    }
    assert request.headers["authorization"] == "Bearer test-key"
    prompt_tokens, completion_tokens = count_tokens(MESSAGES[0]["content"]), 4
    assert completion.text == "The liver looks healthy."
    assert (completion.prompt_tokens, completion.completion_tokens) == (prompt_tokens, completion_tokens)
    assert completion.cost_usd == pytest.approx((prompt_tokens * 0.50 + completion_tokens * 1.50) / 1_000_000)
    assert completion.cost_known and not completion.cached
    assert completion.raw["attempts"] == 1 and completion.raw["finish_reason"] == "stop"


def test_optional_params_are_left_out_and_max_completion_tokens_can_be_chosen(scripted_llm):
    backend = OpenAIBackend(
        model="gpt-4o-mini",
        base_url=scripted_llm.base_url,
        api_key="k",
        max_tokens_field="max_completion_tokens",
    )
    complete(backend, GenerationParams(temperature=0.8, max_tokens=64))
    complete(backend, GenerationParams(temperature=0.2, max_tokens=None))
    first, second = (r.params for r in scripted_llm.chat_requests())
    assert first == {"model": "gpt-4o-mini", "temperature": 0.8, "max_completion_tokens": 64}
    assert second == {"model": "gpt-4o-mini", "temperature": 0.2}


def test_price_table_is_configurable_and_unknown_models_are_marked(scripted_llm):
    backend = OpenAIBackend(
        model="my-vllm-model",
        base_url=scripted_llm.base_url,
        api_key="k",
        prices={"my-vllm-model": ModelPrice(2.0, 4.0)},
    )
    scripted_llm.script("generator", ["one two three"])
    completion = complete(backend)
    assert completion.cost_usd == pytest.approx((completion.prompt_tokens * 2.0 + 3 * 4.0) / 1e6)
    unknown = complete(OpenAIBackend(model="mystery", base_url=scripted_llm.base_url, api_key="k"))
    assert (unknown.cost_usd, unknown.cost_known) == (0.0, False)
    assert "gpt-3.5-turbo" in DEFAULT_PRICES


def test_a_500_is_retried_then_succeeds(scripted_llm, openai_backend, sleeps):
    scripted_llm.fail_next(500)
    scripted_llm.script("generator", ["Recovered."])
    completion = complete(openai_backend)
    assert completion.text == "Recovered."
    assert completion.raw["attempts"] == 2
    assert [r.status for r in scripted_llm.chat_requests(status=None)] == [500, 200]
    assert len(sleeps) == 1 and 0.0 <= sleeps[0] <= 0.5  # first backoff ceiling = initial_delay


def test_429_honours_retry_after(scripted_llm, openai_backend, sleeps):
    scripted_llm.fail_next(429, headers={"Retry-After": "3"})
    assert complete(openai_backend).raw["attempts"] == 2
    assert sleeps == [3.0]


def test_persistent_5xx_gives_a_transient_error_after_max_attempts(scripted_llm, openai_backend, sleeps):
    scripted_llm.fail_next(503, times=5)
    with pytest.raises(BackendError, match="after 3 attempts: HTTP 503") as info:
        complete(openai_backend)
    assert info.value.transient is True
    assert len(scripted_llm.chat_requests(status=None)) == 3
    assert len(sleeps) == 2


def test_a_timeout_is_retried_then_raises(scripted_llm, sleeps):
    backend = OpenAIBackend(
        model="gpt-3.5-turbo",
        base_url=scripted_llm.base_url,
        api_key="k",
        timeout=0.2,
        retry=RetryPolicy(max_attempts=2, initial_delay=0.01),
        sleep=sleeps.append,
    )
    scripted_llm.delay_next(2.0, times=2)  # longer than the client's timeout, twice
    with pytest.raises(BackendError, match="after 2 attempts: timeout") as info:
        complete(backend, agent="radiologist")
    assert info.value.transient is True
    assert len(scripted_llm.chat_requests(status=None)) == 2
    assert len(sleeps) == 1


def test_a_slow_first_answer_then_a_quick_one_succeeds(scripted_llm, sleeps):
    backend = OpenAIBackend(
        model="gpt-3.5-turbo",
        base_url=scripted_llm.base_url,
        api_key="k",
        timeout=0.2,
        retry=RetryPolicy(max_attempts=3, initial_delay=0.01),
        sleep=sleeps.append,
    )
    scripted_llm.delay_next(2.0)
    # The delayed request picks its answer only after its delay, long after the client gave up on it.
    scripted_llm.script("generator", ["on time"])
    completion = complete(backend)
    assert (completion.text, completion.raw["attempts"]) == ("on time", 2)


@pytest.mark.parametrize("status", [400, 401, 404, 422])
def test_client_errors_are_not_retried(scripted_llm, openai_backend, sleeps, status):
    scripted_llm.fail_next(status)
    with pytest.raises(BackendError, match=f"HTTP {status}") as info:
        complete(openai_backend)
    assert info.value.transient is False
    assert len(scripted_llm.chat_requests(status=None)) == 1
    assert sleeps == []


def test_connection_refused_is_transient(sleeps):
    with socket.socket() as probe:  # a port nobody listens on once the probe is closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    backend = OpenAIBackend(
        model="m",
        base_url=f"http://127.0.0.1:{port}/v1",
        api_key="k",
        timeout=1.0,
        retry=RetryPolicy(max_attempts=2, initial_delay=0.01),
        sleep=sleeps.append,
    )
    with pytest.raises(BackendError, match="connection error") as info:
        complete(backend)
    assert info.value.transient is True and len(sleeps) == 1


def test_models_endpoint_is_served(scripted_llm, openai_backend):
    assert [m.id for m in openai_backend.client.models.list()] == ["scripted-model"]


def test_backoff_is_exponential_with_full_jitter():
    policy = RetryPolicy(initial_delay=1.0, multiplier=2.0, max_delay=5.0)
    rng, reference = random.Random(42), random.Random(42)
    delays = [policy.delay(attempt, rng) for attempt in range(1, 6)]
    ceilings = [1.0, 2.0, 4.0, 5.0, 5.0]
    assert delays == [reference.uniform(0.0, ceiling) for ceiling in ceilings]
    assert all(0.0 <= d <= c for d, c in zip(delays, ceilings, strict=True))
    # Retry-After is a floor, capped at max_delay.
    assert policy.delay(1, random.Random(0), retry_after=3.0) == 3.0
    assert policy.delay(1, random.Random(0), retry_after=60.0) == 5.0


def test_base_url_and_key_come_from_the_environment(scripted_llm, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", scripted_llm.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "env-key")
    complete(OpenAIBackend(model="gpt-3.5-turbo"))
    assert scripted_llm.chat_requests()[0].headers["authorization"] == "Bearer env-key"
