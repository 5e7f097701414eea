"""TransformersBackend: the adapter's contract with ml.inference (a recording fake), then the real
ml.inference with a tiny random-init model on the CPU."""

import sys
import types
from dataclasses import dataclass

import pytest

from generation.backends.base import BackendError, ChatBackend, GenerationParams
from generation.backends.transformers_backend import TransformersBackend
from generation.pipeline.self_correction import generate_baselines, run_self_correction

CONVERSATIONS = [
    [{"role": "user", "content": "Simplify the sentence: Liver is normal."}],
    [{"role": "user", "content": "Simplify the sentence: Spleen is enlarged."}],
]


@dataclass(frozen=True)
class FakeOutput:
    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str = "stop"


@pytest.fixture
def fake_inference(monkeypatch):
    """An `ml.inference` stand-in that records how the adapter calls it."""
    module = types.ModuleType("ml.inference")
    module.loads = []
    module.calls = []
    module.error = None

    def load_model(path, device=None, dtype=None):
        module.loads.append((path, device, dtype))
        return {"loaded": path}

    def generate(loaded, prompts, **kwargs):
        module.calls.append((loaded, prompts, kwargs))
        if module.error is not None:
            raise module.error
        return [
            FakeOutput(f"out {i}", 10 + i, 3, "length" if i == 1 else "stop") for i in range(len(prompts))
        ]

    module.load_model = load_model
    module.generate = generate
    monkeypatch.setitem(sys.modules, "ml.inference", module)
    return module


def test_batch_call_passes_the_params_and_maps_the_outputs(fake_inference):
    backend = TransformersBackend(model="/models/flan", device="cuda:0", dtype="bf16", batch_size=4)
    assert isinstance(backend, ChatBackend)
    completions = backend.complete_batch(
        CONVERSATIONS, agent="generator", params=GenerationParams(temperature=0.8, max_tokens=64, seed=5)
    )
    assert fake_inference.loads == [("/models/flan", "cuda:0", "bf16")]
    ((loaded, prompts, kwargs),) = fake_inference.calls
    assert loaded == {"loaded": "/models/flan"} and prompts == CONVERSATIONS
    assert kwargs == {"max_new_tokens": 64, "temperature": 0.8, "seed": 5, "batch_size": 4}
    assert [(c.text, c.prompt_tokens, c.completion_tokens, c.cost_usd) for c in completions] == [
        ("out 0", 10, 3, 0.0),
        ("out 1", 11, 3, 0.0),
    ]
    assert [c.raw["finish_reason"] for c in completions] == ["stop", "length"]
    assert completions[0].model == "/models/flan"


def test_model_is_loaded_once_and_top_p_is_passed_when_set(fake_inference):
    backend = TransformersBackend(model="/models/m")
    backend.complete(CONVERSATIONS[0], agent="generator", params=GenerationParams(top_p=0.9, max_tokens=None))
    backend.complete(CONVERSATIONS[1], agent="generator", params=GenerationParams())
    assert len(fake_inference.loads) == 1
    assert fake_inference.calls[0][2]["top_p"] == 0.9 and fake_inference.calls[0][2]["max_new_tokens"] == 512
    assert "top_p" not in fake_inference.calls[1][2]
    assert backend.complete_batch([], agent="generator", params=GenerationParams()) == []


@pytest.mark.parametrize(
    ("error", "transient"),
    [
        (RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB"), True),
        (ValueError("bad prompt"), False),
    ],
)
def test_generation_errors_become_backend_errors(fake_inference, error, transient):
    fake_inference.error = error
    with pytest.raises(BackendError) as info:
        TransformersBackend(model="/m").complete(CONVERSATIONS[0], agent="patient", params=GenerationParams())
    assert info.value.transient is transient and "patient" in str(info.value)


def test_a_missing_model_is_a_permanent_error(fake_inference):
    def missing(path, device=None, dtype=None):
        raise FileNotFoundError(f"{path} is not a local model directory")

    fake_inference.load_model = missing
    with pytest.raises(BackendError, match="cannot load local model") as info:
        TransformersBackend(model="/nowhere").complete(
            CONVERSATIONS[0], agent="generator", params=GenerationParams()
        )
    assert info.value.transient is False


def test_baselines_use_one_batched_call(fake_inference):
    results = generate_baselines(
        ["Liver is normal.", "Spleen is enlarged."], backend=TransformersBackend(model="/m")
    )
    assert len(fake_inference.calls) == 1
    assert fake_inference.calls[0][1] == CONVERSATIONS
    assert [r.text for r in results] == ["out 0", "out 1"]
    assert results[1].flagged and "cut off" in results[1].flag_reason


@pytest.mark.heavy
def test_real_local_model_batched_baselines_match_direct_inference(tiny_llama):
    from ml import inference

    params = GenerationParams(temperature=0.8, max_tokens=6, seed=13)
    sentences = ["Liver is normal.", "Spleen is enlarged.", "No acute fracture."]
    backend = TransformersBackend(model=str(tiny_llama), device="cpu", batch_size=2)
    results = generate_baselines(sentences, backend=backend, params=params)

    loaded = inference.load_model(str(tiny_llama), device="cpu")
    direct = inference.generate(
        loaded,
        [[{"role": "user", "content": f"Simplify the sentence: {s}"}] for s in sentences],
        max_new_tokens=6,
        temperature=0.8,
        seed=13,
        batch_size=2,
    )
    assert [r.raw_output for r in results] == [d.text for d in direct]
    assert [r.completion_tokens for r in results] == [d.completion_tokens for d in direct]
    assert all(r.prompt_tokens > 0 for r in results)


@pytest.mark.heavy
def test_real_local_model_runs_the_self_correction_loop(tiny_llama):
    backend = TransformersBackend(model=str(tiny_llama), device="cpu")
    result = run_self_correction(
        "Liver is normal.",
        backend=backend,
        family="plain",
        max_rounds=1,
        params=GenerationParams(max_tokens=4, seed=1),
    )
    # A random model never answers "No", so round 1 ends with a refinement and the cap.
    assert [e["agent"] for e in result.transcript if e["role"] == "assistant"] == [
        "generator",
        "radiologist",
        "patient",
        "processor",
        "processor",
        "generator",
    ]
    assert (result.rounds, result.reached_cap, result.stopped_by) == (1, True, "round_cap")
    assert result.cost_usd == 0.0 and result.cost_known
