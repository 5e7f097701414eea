"""Chat backends built from the settings (API endpoint, timeout and retries; the local device), one
instance per configuration and process, their calls cached in the database. Generation's batches
and judging's runs both build theirs here."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache, partial
from typing import Any

from django.conf import settings

from generation.backends.base import ChatBackend
from generation.backends.cache import CachedBackend
from generation.backends.gate import GatedBackend
from generation.backends.registry import EXTERNAL_BACKENDS, get_backend
from generation.call_cache import DbCallCache


def backend_options(name: str) -> dict[str, Any]:
    """The settings the backend `name` is built with."""
    from generation.backends.openai_backend import RetryPolicy

    options: dict[str, Any] = {}
    if name == "openai":
        options = {
            "base_url": settings.OPENAI_BASE_URL or None,
            "api_key": settings.OPENAI_API_KEY or None,
            "timeout": float(settings.RADLAY_LLM_CALLS.timeout),
            "retry": RetryPolicy(
                max_attempts=int(settings.RADLAY_LLM_CALLS.retries) + 1,
                initial_delay=float(settings.RADLAY_LLM_CALLS.retry_delay),
            ),
        }
    elif name == "transformers":
        device = settings.RADLAY_LOCAL_MODELS.device
        if device:
            options["device"] = device
    elif name == "vllm":
        options["gpu_memory_utilization"] = float(settings.RADLAY_LOCAL_MODELS.vllm_gpu_memory)
    return options


@lru_cache(maxsize=16)
def _instance(
    build: Callable[..., ChatBackend], name: str, model: str, options: tuple[tuple[str, Any], ...]
) -> ChatBackend:
    # One instance per configuration and process: an OpenAI client keeps its connection pool and a
    # transformers backend its loaded model across jobs (both are safe to share between threads).
    return build(name, model=model, **dict(options))


def cached_backend(
    name: str,
    model: str,
    *,
    study: Any,
    purpose: str,
    build: Callable[..., ChatBackend] = get_backend,
    **extra: Any,
) -> CachedBackend:
    """The backend `name` for `model` (made by `build(name, model=..., **options)`), its calls
    cached in the database; `extra` options are added to those from the settings. A backend that
    calls out (registry.EXTERNAL_BACKENDS) asks the data-policy gate of `study` (an
    annotation Study) before every call: this is the one place such a backend is built."""
    from generation.data_policy_hooks import data_policy

    options = {**backend_options(name), **extra}
    backend: ChatBackend = _instance(build, name, model, tuple(sorted(options.items())))
    if name in EXTERNAL_BACKENDS:
        backend = GatedBackend(
            backend, permit=partial(data_policy().call_check, study=study, backend=name, purpose=purpose)
        )
    return CachedBackend(backend, DbCallCache(backend=name, model=model))


# --- Which backend can run here, and whether the configured server answers -------------------------

# One cheap call before a launch: long enough for a server across the internet, short enough for a
# form submission.
SERVER_CHECK_TIMEOUT = 5.0


def openai_configured() -> bool:
    """Whether settings name an OpenAI-compatible server (OPENAI_BASE_URL) or OpenAI's own API
    (OPENAI_API_KEY)."""
    return bool(settings.OPENAI_BASE_URL or settings.OPENAI_API_KEY)


def default_backend() -> str:
    """The backend a launch form offers first: the OpenAI-compatible one when a server is
    configured, else the offline glossary backend (which always runs)."""
    return "openai" if openai_configured() else "glossary"


def openai_server_problem(*, timeout: float = SERVER_CHECK_TIMEOUT) -> str:
    """Why the configured OpenAI-compatible server cannot take a launch now, or "" when it can:
    one `models.list` call. Unreachable (refused, timed out), a refused key (401/403) and a server
    error (5xx) are problems; any other answer (a server without /models answers 404) is not."""
    import openai

    base_url = settings.OPENAI_BASE_URL or None
    where = base_url or "api.openai.com"
    if not openai_configured():
        return (
            "No OpenAI-compatible server is configured: set OPENAI_BASE_URL (and OPENAI_API_KEY) "
            "in the server's settings, or choose the glossary backend."
        )
    api_key = settings.OPENAI_API_KEY or "EMPTY"
    client = openai.OpenAI(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0)
    try:
        client.models.list()
    except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
        return f"The server at {where} refused the API key (HTTP {exc.status_code}): check OPENAI_API_KEY."
    except openai.APITimeoutError:
        return f"The server at {where} did not answer within {timeout:g} s: is it running?"
    except openai.APIConnectionError as exc:
        return (
            f"No server answers at {where} ({exc.__cause__ or exc}): is it running, and is "
            "OPENAI_BASE_URL right?"
        )
    except openai.APIStatusError as exc:
        if exc.status_code >= 500:
            return f"The server at {where} answered HTTP {exc.status_code}: try again when it is back."
    finally:
        client.close()
    return ""
