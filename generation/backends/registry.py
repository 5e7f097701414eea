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
}

# Backends that send text off this machine: every call to one passes the data-policy gate
# (generation/backends/gate.py, wrapped in by configured.cached_backend). A backend added here, or
# any new backend that calls out, must be listed.
EXTERNAL_BACKENDS = frozenset({"openai"})

# Backends that run on a local GPU (the Celery `gpu` queue); the others go to the `llm` queue.
GPU_BACKENDS = frozenset({"transformers"})


def backend_names() -> list[str]:
    return sorted(BACKENDS)


def get_backend(name: str, *, model: str, **options: Any) -> ChatBackend:
    """A backend instance, e.g. get_backend("openai", model="gpt-3.5-turbo", base_url=..., timeout=30)."""
    try:
        target = BACKENDS[name]
    except KeyError:
        raise ValueError(f"unknown backend {name!r}; choose one of {', '.join(backend_names())}") from None
    module_name, _, class_name = target.partition(":")
    backend_class = getattr(importlib.import_module(module_name), class_name)
    return backend_class(model=model, **options)
