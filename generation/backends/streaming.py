"""Backends that take requests as they come and answer them as they finish. Django-free.

A local engine with continuous batching (vLLM, Hugging Face's ContinuousBatchingManager) keeps the
device full when every job puts its next request in as soon as its previous answer is back, instead
of waiting for the slowest job of a lockstep batch. Such a backend has, besides `complete`:

* `submit(request)`: queue one call; returns at once;
* `collect()`: block until at least one submitted call has finished and return the finished ones
  as (request key, Completion) pairs, in any order; raise BackendError when the engine failed.

The self-correction driver (generation.pipeline.continuous) uses them; `complete` and
`complete_batch` of these backends are built on the same two calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from generation.backends.base import BackendError, Completion, GenerationParams


@dataclass(frozen=True)
class Request:
    key: str
    messages: list[dict[str, str]]
    agent: str
    params: GenerationParams
    context: dict[str, Any] | None = None


@runtime_checkable
class StreamingBackend(Protocol):
    name: str
    model: str

    def submit(self, request: Request) -> None: ...

    def collect(self) -> list[tuple[str, Completion]]: ...


def streams(backend: object) -> bool:
    """Whether `backend` takes requests one by one (submit/collect)."""
    check = getattr(backend, "streams", None)
    if callable(check):
        return bool(check())
    return callable(getattr(backend, "submit", None)) and callable(getattr(backend, "collect", None))


def complete_all(backend: StreamingBackend, requests: list[Request]) -> list[Completion]:
    """Submit every request, collect until all are answered; the answers in the requests' order."""
    for request in requests:
        backend.submit(request)
    answers: dict[str, Completion] = {}
    while len(answers) < len(requests):
        finished = backend.collect()
        if not finished:
            raise BackendError(f"{backend.name} finished nothing with {len(requests) - len(answers)} pending")
        answers.update(finished)
    return [answers[request.key] for request in requests]
