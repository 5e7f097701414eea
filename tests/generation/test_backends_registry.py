import importlib.util
import sys
import types

import pytest

from generation.backends.base import ChatBackend
from generation.backends.openai_backend import OpenAIBackend
from generation.backends.registry import GPU_BACKENDS, backend_names, get_backend
from generation.backends.transformers_backend import TransformersBackend


def test_names(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)  # vLLM (optional) not installed: not offered
    assert backend_names() == ["glossary", "openai", "transformers"]
    assert {"transformers", "vllm"} == GPU_BACKENDS


def test_openai_and_transformers_get_their_options(scripted_llm):
    backend = get_backend(
        "openai", model="gpt-4o-mini", base_url=scripted_llm.base_url, api_key="k", timeout=7.0
    )
    assert isinstance(backend, OpenAIBackend) and isinstance(backend, ChatBackend)
    assert (backend.name, backend.model, backend.timeout) == ("openai", "gpt-4o-mini", 7.0)
    local = get_backend("transformers", model="/models/t5", device="cpu", batch_size=3)
    assert isinstance(local, TransformersBackend)
    assert (local.model, local.device, local.batch_size) == ("/models/t5", "cpu", 3)


def test_glossary_is_imported_lazily_from_its_module(monkeypatch):
    module = types.ModuleType("generation.backends.glossary_backend")

    class GlossaryBackend:
        name = "glossary"

        def __init__(self, *, model):
            self.model = model

    module.GlossaryBackend = GlossaryBackend
    monkeypatch.setitem(sys.modules, "generation.backends.glossary_backend", module)
    backend = get_backend("glossary", model="radlay-glossary-v1")
    assert isinstance(backend, GlossaryBackend) and backend.model == "radlay-glossary-v1"


@pytest.mark.skipif(
    importlib.util.find_spec("generation.backends.glossary_backend") is None,
    reason="the glossary backend is not written yet",
)
def test_the_real_glossary_backend_is_a_chat_backend():
    backend = get_backend("glossary", model="radlay-glossary-v1")
    assert backend.name == "glossary" and isinstance(backend, ChatBackend)


def test_unknown_backend():
    with pytest.raises(ValueError, match="unknown backend 'anthropic'; choose one of glossary, openai"):
        get_backend("anthropic", model="x")
