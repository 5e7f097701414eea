"""The gate every call to an external backend passes. Django-free.

`configured.cached_backend` wraps each backend of `registry.EXTERNAL_BACKENDS` in a `GatedBackend`
whose `permit` (privacy.gate: the study's data policy) runs before every call and raises
`BackendError` to refuse it; a refused call never reaches the backend. Answers served from the
call cache pass no gate: they send nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from generation.backends.base import ChatBackend, Completion, GenerationParams


class GatedBackend:
    def __init__(self, backend: ChatBackend, *, permit: Callable[[], None]) -> None:
        self.backend = backend
        self.permit = permit
        self.name = backend.name
        self.model = backend.model

    def complete(
        self,
        messages: list[dict[str, str]],
        *,
        agent: str,
        params: GenerationParams,
        context: dict[str, Any] | None = None,
    ) -> Completion:
        self.permit()
        return self.backend.complete(messages, agent=agent, params=params, context=context)
