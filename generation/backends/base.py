"""The one small interface every generation backend implements. Django-free.

A backend answers chat conversations. The agent loop tells it which agent is speaking
(`agent`: "generator", "radiologist", "patient", "processor") and hands it the structured
`context` the prompt was rendered from (original sentence, current simplification, feedback…):
LLM backends ignore both and read the messages; the offline glossary backend plays each agent
deterministically from the context.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

AGENTS = ("generator", "radiologist", "patient", "processor")


@dataclass(frozen=True)
class GenerationParams:
    temperature: float = 0.8  # seed 003: 0.8 for every generation
    max_tokens: int | None = 512
    seed: int | None = None
    top_p: float | None = None
    # Not sent to any model: it only enters the call-cache key, so that asking for sample 1, 2, …
    # of the same job makes fresh calls while a rerun of sample 0 is served from the cache.
    sample_index: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
            "top_p": self.top_p,
            "sample_index": self.sample_index,
        }


@dataclass
class Completion:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    model: str = ""
    cached: bool = False
    raw: dict[str, Any] = field(default_factory=dict)
    # False when the backend could not price the call (a model missing from its price table).
    cost_known: bool = True


class BackendError(Exception):
    """A call failed. `transient` errors (429, 5xx, timeouts, garbled answers) may be retried by the
    caller, not before `retry_after` seconds when the server said so."""

    def __init__(self, message: str, *, transient: bool = False, retry_after: float | None = None):
        super().__init__(message)
        self.transient = transient
        self.retry_after = retry_after


@runtime_checkable
class ChatBackend(Protocol):
    name: str
    model: str

    def complete(
        self,
        messages: list[dict[str, str]],
        *,
        agent: str,
        params: GenerationParams,
        context: dict[str, Any] | None = None,
    ) -> Completion: ...
