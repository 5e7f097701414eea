"""Chat backends built from the settings (API endpoint, timeout and retries; the local device), one
instance per configuration and process, their calls cached in the database. Generation's batches
and judging's runs both build theirs here."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

from django.conf import settings

from generation.backends.base import ChatBackend
from generation.backends.cache import CachedBackend
from generation.backends.registry import get_backend
from generation.call_cache import DbCallCache


def backend_options(name: str) -> dict[str, Any]:
    """The settings the backend `name` is built with."""
    from generation.backends.openai_backend import RetryPolicy

    options: dict[str, Any] = {}
    if name == "openai":
        options = {
            "base_url": settings.OPENAI_BASE_URL or None,
            "api_key": settings.OPENAI_API_KEY or None,
            "timeout": float(settings.RADLAY_LLM_TIMEOUT),
            "retry": RetryPolicy(
                max_attempts=int(settings.RADLAY_LLM_MAX_RETRIES) + 1,
                initial_delay=float(getattr(settings, "RADLAY_LLM_RETRY_DELAY", 1.0)),
            ),
        }
    elif name == "transformers":
        device = getattr(settings, "RADLAY_TRANSFORMERS_DEVICE", None)
        if device:
            options["device"] = device
    return options


@lru_cache(maxsize=16)
def _instance(
    build: Callable[..., ChatBackend], name: str, model: str, options: tuple[tuple[str, Any], ...]
) -> ChatBackend:
    # One instance per configuration and process: an OpenAI client keeps its connection pool and a
    # transformers backend its loaded model across jobs (both are safe to share between threads).
    return build(name, model=model, **dict(options))


def cached_backend(
    name: str, model: str, *, build: Callable[..., ChatBackend] = get_backend, **extra: Any
) -> CachedBackend:
    """The backend `name` for `model` (made by `build(name, model=..., **options)`), its calls
    cached in the database; `extra` options are added to those from the settings."""
    options = {**backend_options(name), **extra}
    backend = _instance(build, name, model, tuple(sorted(options.items())))
    return CachedBackend(backend, DbCallCache(backend=name, model=model))
