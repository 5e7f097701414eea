"""The one place that maps a backend name to its class. Django-free.

Classes are imported on demand: naming "openai" never imports torch, and the glossary backend
(which loads the lexicon) only when asked for.
"""

from __future__ import annotations

import importlib
from typing import Any

from generation.backends.base import ChatBackend

BACKENDS: dict[str, str] = {
    "openai": "generation.backends.openai_backend:OpenAIBackend",
    "transformers": "generation.backends.transformers_backend:TransformersBackend",
    "glossary": "generation.backends.glossary_backend:GlossaryBackend",
    "vllm": "generation.backends.vllm_backend:VLLMBackend",
}

# Backends that send text off this machine: every call to one passes the data-policy gate
# (generation/backends/gate.py, wrapped in by configured.cached_backend). A backend added here, or
# any new backend that calls out, must be listed.
EXTERNAL_BACKENDS = frozenset({"openai"})

# Backends that run on a local GPU (the Celery `gpu` queue); the others go to the `llm` queue.
GPU_BACKENDS = frozenset({"transformers", "vllm"})

# Backends whose package is optional, with what tells whether it is installed and how to install it.
OPTIONAL_BACKENDS = {"vllm": "generation.backends.vllm_backend"}


def backend_missing(name: str) -> str:
    """Why the backend `name` cannot run on this machine (its optional package is not installed,
    with the install command), or "" when it can."""
    module_name = OPTIONAL_BACKENDS.get(name)
    if module_name is None:
        return ""
    module = importlib.import_module(module_name)
    return "" if module.vllm_available() else module.vllm_missing_message()


def offered(choices: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """A model's backend choices without those this machine cannot run (launch forms, commands)."""
    return [(value, label) for value, label in choices if not backend_missing(value)]


def backend_help() -> str:
    """What a command's --backend help says about the optional backends missing here."""
    missing = [
        f"{name}: {backend_missing(name)}" for name in sorted(OPTIONAL_BACKENDS) if backend_missing(name)
    ]
    return ("Not offered here: " + "; ".join(missing)) if missing else ""


def backend_names() -> list[str]:
    """The backends this machine can run (an optional one only when its package is installed)."""
    return sorted(name for name in BACKENDS if not backend_missing(name))


def get_backend(name: str, *, model: str, **options: Any) -> ChatBackend:
    """A backend instance, e.g. get_backend("openai", model="gpt-3.5-turbo", base_url=..., timeout=30)."""
    try:
        target = BACKENDS[name]
    except KeyError:
        raise ValueError(f"unknown backend {name!r}; choose one of {', '.join(backend_names())}") from None
    missing = backend_missing(name)
    if missing:
        raise ValueError(f"backend {name!r} is not available: {missing}")
    module_name, _, class_name = target.partition(":")
    backend_class = getattr(importlib.import_module(module_name), class_name)
    return backend_class(model=model, **options)
