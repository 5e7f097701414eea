"""Chat backend for any OpenAI-compatible server (OpenAI, vLLM, Ollama, llama.cpp server). Django-free.

Retries are this module's own loop, not the client's (`max_retries=0` on the client): the delay
function and the sleep are injectable, so tests drive real failures through a real server without
waiting, and every Completion records how many attempts it took. Transient failures (timeouts,
connection errors, 408/409/429/5xx) are retried with exponential backoff and full jitter, honouring a
server's Retry-After; anything else raises BackendError(transient=False) at once.

An answer the client cannot use — a body that is not JSON (an HTML page from a proxy), truncated
JSON, no choices, an empty message — is a transient failure too ("the server at … answered with
…"): a proxy or an overloaded server produces them, and the next attempt usually succeeds. The
last failure's Retry-After travels on the BackendError, so that a job-level retry honours it too.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import openai

from generation.backends.base import BackendError, Completion, GenerationParams

TRANSIENT_STATUS = frozenset({408, 409, 429})  # and every 5xx


@dataclass(frozen=True)
class ModelPrice:
    """USD per one million tokens."""

    input_per_million: float
    output_per_million: float

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (
            prompt_tokens * self.input_per_million + completion_tokens * self.output_per_million
        ) / 1_000_000


# OpenAI's published list prices (USD per 1M input/output tokens) as of 2024; pass `prices=` to
# price other models or current rates. A model missing here is priced 0 with cost_known=False.
DEFAULT_PRICES: dict[str, ModelPrice] = {
    "gpt-3.5-turbo": ModelPrice(0.50, 1.50),  # gpt-3.5-turbo-0125, the paper's "ChatGPT-3.5"
    "gpt-3.5-turbo-0125": ModelPrice(0.50, 1.50),
    "gpt-4o-mini": ModelPrice(0.15, 0.60),
    "gpt-4o": ModelPrice(2.50, 10.00),
}


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 4  # the first call and three retries
    initial_delay: float = 1.0
    multiplier: float = 2.0
    max_delay: float = 30.0

    def delay(self, attempt: int, rng: random.Random, retry_after: float | None = None) -> float:
        """Seconds to wait after failed attempt number `attempt` (1-based).

        Full jitter: uniform in [0, min(max_delay, initial * multiplier**(attempt-1))], so that many
        workers hitting one rate limit do not retry in lockstep. A server's Retry-After is a floor.
        """
        ceiling = min(self.max_delay, self.initial_delay * self.multiplier ** (attempt - 1))
        wait = rng.uniform(0.0, ceiling)
        if retry_after is not None:
            wait = max(wait, min(retry_after, self.max_delay))
        return wait


def _retry_after(error: Exception) -> float | None:
    response = getattr(error, "response", None)
    if response is None:
        return None
    value = response.headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None  # an HTTP date: rare from LLM servers; fall back to our own backoff


def classify_error(error: Exception) -> tuple[bool, str]:
    """(transient, description) for an exception raised by the openai client."""
    if isinstance(error, openai.APITimeoutError):
        return True, "timeout"
    if isinstance(error, openai.APIConnectionError):
        return True, f"connection error: {error}"
    if isinstance(error, openai.APIStatusError):
        status = error.status_code
        return (status in TRANSIENT_STATUS or status >= 500), f"HTTP {status}: {error.message}"
    return False, f"{type(error).__name__}: {error}"


class GarbledAnswer(Exception):  # noqa: N818 - named for the outcome callers catch; importers use the name
    """The server answered, but not with a chat completion the backend can use."""


def _describe_body(raw: Any) -> str:
    """A short, readable description of a raw HTTP response for an error message."""
    response = raw.http_response
    content_type = response.headers.get("content-type", "no content type")
    text = " ".join(response.text.split())
    shown = text[:120] + ("…" if len(text) > 120 else "")
    return f"HTTP {response.status_code} {content_type} body ({len(response.content)} bytes): {shown!r}"


class OpenAIBackend:
    name = "openai"

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
        prices: Mapping[str, ModelPrice] | None = None,
        max_tokens_field: str = "max_tokens",
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
        client: openai.OpenAI | None = None,
    ) -> None:
        """`base_url`/`api_key` default to OPENAI_BASE_URL/OPENAI_API_KEY.

        `max_tokens_field`: "max_tokens" (what vLLM, Ollama and llama.cpp read) or
        "max_completion_tokens" (what OpenAI's newer models require).
        """
        self.model = model
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self.prices = dict(DEFAULT_PRICES if prices is None else prices)
        if max_tokens_field not in ("max_tokens", "max_completion_tokens"):
            raise ValueError(
                f"max_tokens_field must be max_tokens or max_completion_tokens, not {max_tokens_field!r}"
            )
        self.max_tokens_field = max_tokens_field
        self._sleep = sleep
        self._rng = rng or random.Random()
        if client is None:
            base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
            api_key = api_key or os.environ.get("OPENAI_API_KEY")
            if not api_key and base_url:
                api_key = "EMPTY"  # local servers (vLLM, Ollama) accept any key; the client insists on one
            try:
                client = openai.OpenAI(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0)
            except openai.OpenAIError as exc:
                raise BackendError(f"openai backend misconfigured: {exc}", transient=False) from exc
        self.client = client

    def price(self, model: str) -> ModelPrice | None:
        return self.prices.get(model)

    def _request(self, messages: list[dict[str, str]], params: GenerationParams) -> dict[str, Any]:
        request: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": params.temperature,
        }
        if params.max_tokens is not None:
            request[self.max_tokens_field] = params.max_tokens
        if params.seed is not None:
            request["seed"] = params.seed
        if params.top_p is not None:
            request["top_p"] = params.top_p
        return request

    def complete(
        self,
        messages: list[dict[str, str]],
        *,
        agent: str,
        params: GenerationParams,
        context: dict[str, Any] | None = None,
    ) -> Completion:
        request = self._request(messages, params)
        attempt = 0
        while True:
            attempt += 1
            retry_after = None
            try:
                raw = self.client.chat.completions.with_raw_response.create(**request, timeout=self.timeout)
                return self._completion(raw, attempt)
            except openai.OpenAIError as exc:
                transient, description = classify_error(exc)
                retry_after = _retry_after(exc)
                if not transient:
                    raise BackendError(f"{agent} call failed: {description}", transient=False) from exc
            except GarbledAnswer as exc:
                description = f"the server at {self.client.base_url} answered with {exc}"
            if attempt >= self.retry.max_attempts:
                raise BackendError(
                    f"{agent} call failed after {attempt} attempts: {description}",
                    transient=True,
                    retry_after=retry_after,
                )
            self._sleep(self.retry.delay(attempt, self._rng, retry_after))

    def _completion(self, raw: Any, attempts: int) -> Completion:
        try:
            response = raw.parse()
        except (json.JSONDecodeError, ValueError) as exc:
            raise GarbledAnswer(f"a body that is not valid JSON: {_describe_body(raw)}") from exc
        if not hasattr(response, "choices"):
            # The client hands back the text of a body that is not JSON (an HTML page from a proxy).
            raise GarbledAnswer(f"something other than a chat completion: {_describe_body(raw)}")
        if not response.choices:
            raise GarbledAnswer(f"no choices: {_describe_body(raw)}")
        choice = response.choices[0]
        if not (choice.message.content or "").strip():
            raise GarbledAnswer(
                f"an empty message (finish_reason {choice.finish_reason!r}): {_describe_body(raw)}"
            )
        usage = response.usage
        prompt_tokens = usage.prompt_tokens if usage else 0
        completion_tokens = usage.completion_tokens if usage else 0
        price = self.price(self.model)
        return Completion(
            text=choice.message.content,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cost_usd=price.cost(prompt_tokens, completion_tokens) if price else 0.0,
            cost_known=price is not None,
            model=response.model or self.model,
            raw={
                "id": response.id,
                "finish_reason": choice.finish_reason,
                "system_fingerprint": getattr(response, "system_fingerprint", None),
                "attempts": attempts,
                "usage_reported": usage is not None,
            },
        )
