"""The data-policy gate is the one door to external backends: every backend marked external is
wrapped in it wherever radlay builds backends, and nothing else builds one."""

import ast
from pathlib import Path

import pytest

from generation.backends.base import GenerationParams
from generation.backends.cache import CachedBackend
from generation.backends.configured import cached_backend
from generation.backends.gate import GatedBackend
from generation.backends.registry import BACKENDS, EXTERNAL_BACKENDS
from privacy.gate import ExternalCallRefused, external_call_problem
from privacy.services import data_policy_change
from tests.generation.factories import study_with_sources

ROOT = Path(__file__).resolve().parents[2]
APPS = (
    "annotation",
    "console",
    "evaluation",
    "generation",
    "judging",
    "measures",
    "ml",
    "privacy",
    "work",
    "config",
)


def _python_files():
    for app in APPS:
        yield from (ROOT / app).rglob("*.py")


def test_every_external_backend_is_wrapped_in_the_gate(db, settings):
    settings.OPENAI_BASE_URL = "http://127.0.0.1:9/v1"
    study = study_with_sources("gated", ["No pleural effusion."])
    assert set(BACKENDS) >= EXTERNAL_BACKENDS
    for name in EXTERNAL_BACKENDS:
        backend = cached_backend(name, "some-model", study=study, purpose="test")
        assert isinstance(backend, CachedBackend) and isinstance(backend.backend, GatedBackend)
        with pytest.raises(ExternalCallRefused):
            backend.complete([{"role": "user", "content": "x"}], agent="generator", params=GenerationParams())
    local = cached_backend("glossary", "radlay-glossary-v1", study=study, purpose="test")
    assert not isinstance(local.backend, GatedBackend)


@pytest.mark.heavy
def test_only_the_configured_module_builds_backends_for_the_apps():
    """A backend instance made elsewhere (get_backend, a backend class called directly) would skip
    the gate. The judges' heuristic builds the offline glossary backend only."""
    allowed = {
        "generation/backends/configured.py",
        "generation/backends/registry.py",
        "judging/services.py",  # its `_build` is handed to cached_backend as `build`
        "judging/heuristic.py",  # get_backend("glossary", ...): offline
    }
    offenders = []
    names = {"get_backend", "OpenAIBackend", "TransformersBackend"}
    for path in _python_files():
        relative = path.relative_to(ROOT).as_posix()
        if relative in allowed:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                func = node.func
                called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
                if called in names:
                    offenders.append(f"{relative}:{node.lineno} {called}")
    assert offenders == []


def test_the_judges_build_their_backend_through_the_gate(db, settings):
    from judging.services import run_backend

    settings.OPENAI_BASE_URL = "http://127.0.0.1:9/v1"
    study = study_with_sources("judged", ["No pleural effusion."])

    class Run:
        backend = "openai"
        model_name = "judge-model"

    run = Run()
    run.study = study
    backend = run_backend(run)
    assert isinstance(backend.backend, GatedBackend)


@pytest.mark.parametrize(
    ("policy", "endpoint", "configured", "refused"),
    [
        ("local-only", "", "http://127.0.0.1:9/v1", "local-only"),
        ("deidentified", "", "http://127.0.0.1:9/v1", "not approved"),
        (
            "external-approved",
            "https://hospital.example.org/openai",
            "http://127.0.0.1:9/v1",
            "approves the endpoint",
        ),
        ("external-approved", "http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1/", ""),
    ],
)
def test_the_policy_decides_and_names_itself(db, settings, policy, endpoint, configured, refused):
    settings.OPENAI_BASE_URL = configured
    study = study_with_sources(f"p-{policy}", ["Mild atelectasis."])
    data_policy_change(study=study, policy=policy, endpoint=endpoint, reason="agreement", actor="test")
    problem = external_call_problem(study=study, backend="openai")
    assert (refused in problem) if refused else problem == ""
    assert external_call_problem(study=study, backend="glossary") == ""
