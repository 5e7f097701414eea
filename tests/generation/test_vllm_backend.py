"""The vllm backend's request/response handling and lifecycle against a fake engine with vLLM's
interface (`vllm.LLM(...).llm_engine`: add_request, step, has_unfinished_requests, get_tokenizer;
`vllm.SamplingParams`). vLLM itself is not installed in the CPU suite: its throughput is measured on
a GPU only (bench/gpu_generation.py); here the backend is also checked to be refused, with the
install command, where vLLM is missing."""

from __future__ import annotations

import importlib.machinery
import sys
import types
from dataclasses import dataclass, field

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command

from generation.backends.base import BackendError, GenerationParams
from generation.backends.registry import GPU_BACKENDS, backend_missing, backend_names, get_backend
from generation.backends.streaming import streams
from generation.backends.vllm_backend import INSTALL_COMMAND, VLLMBackend
from generation.pipeline.self_correction import run_self_correction, run_self_correction_batch
from tests.generation.test_batched_generation import SENTENCES


@dataclass
class FakeSamplingParams:
    temperature: float = 1.0
    max_tokens: int = 16
    seed: int | None = None
    top_p: float = 1.0


@dataclass
class FakeSample:
    text: str
    token_ids: list[int]
    finish_reason: str | None


@dataclass
class FakeRequestOutput:
    request_id: str
    prompt_token_ids: list[int]
    outputs: list[FakeSample]
    finished: bool


@dataclass
class FakeEngine:
    """Continuous batching in miniature: each step adds one token to each of at most `max_seqs`
    running requests (oldest first); a request wants 1 + len(prompt) % 4 tokens (its prompt
    reversed), capped by max_tokens, so requests end at different steps and out of order."""

    tokenizer: object
    max_seqs: int = 3
    running: dict = field(default_factory=dict)
    added: list = field(default_factory=list)
    steps: int = 0
    shut_down: bool = False
    fail_step: bool = False
    drop: bool = False

    def get_tokenizer(self):
        return self.tokenizer

    def add_request(self, request_id, prompt, params):
        assert set(prompt) == {"prompt_token_ids"}
        self.added.append((request_id, prompt["prompt_token_ids"], params))
        ids = prompt["prompt_token_ids"]
        self.running[request_id] = {"ids": ids, "out": [], "params": params, "want": 1 + len(ids) % 4}

    def has_unfinished_requests(self):
        return bool(self.running)

    def step(self):
        self.steps += 1
        if self.fail_step:
            raise RuntimeError("CUDA error: an illegal memory access")
        if self.drop:
            self.running.clear()
            return []
        outputs = []
        for request_id in list(self.running)[: self.max_seqs]:
            state = self.running[request_id]
            state["out"].append(state["ids"][-1 - len(state["out"]) % len(state["ids"])])
            reason = None
            if len(state["out"]) >= state["params"].max_tokens:
                reason = "length"
            elif len(state["out"]) >= state["want"]:
                reason = "stop"
            text = self.tokenizer.decode(state["out"], skip_special_tokens=True)
            outputs.append(
                FakeRequestOutput(
                    request_id, state["ids"], [FakeSample(text, list(state["out"]), reason)], bool(reason)
                )
            )
            if reason:
                del self.running[request_id]
        return outputs

    def shutdown(self):
        self.shut_down = True


@pytest.fixture
def fake_vllm(monkeypatch, tiny_llama):
    """A `vllm` module whose LLM builds a FakeEngine over the model directory's tokenizer."""
    from transformers import AutoTokenizer

    module = types.ModuleType("vllm")
    module.__spec__ = importlib.machinery.ModuleSpec("vllm", None)
    module.built = []

    class LLM:
        def __init__(self, **options):
            module.built.append(options)
            self.llm_engine = FakeEngine(AutoTokenizer.from_pretrained(options["tokenizer"]))

    module.LLM = LLM
    module.SamplingParams = FakeSamplingParams
    monkeypatch.setitem(sys.modules, "vllm", module)
    return module


CONVERSATIONS = [[{"role": "user", "content": s}] for s in SENTENCES]


def test_requests_are_answered_in_order_with_their_params_and_counts(fake_vllm, tiny_llama):
    backend = get_backend("vllm", model=str(tiny_llama), dtype="bfloat16", gpu_memory_utilization=0.5)
    assert isinstance(backend, VLLMBackend) and streams(backend) and "vllm" in backend_names()
    params = GenerationParams(temperature=0.7, max_tokens=3, seed=11, top_p=0.9)
    answers = backend.complete_batch(CONVERSATIONS, agent="generator", params=params)
    engine = backend.engine()
    (built,) = fake_vllm.built
    assert built["model"] == str(tiny_llama.resolve()) and built["dtype"] == "bfloat16"
    assert built["gpu_memory_utilization"] == 0.5
    assert {(p.temperature, p.max_tokens, p.seed, p.top_p) for _, _, p in engine.added} == {(0.7, 3, 11, 0.9)}
    tokenizer = engine.tokenizer
    for answer, conversation, (_, ids, _) in zip(answers, CONVERSATIONS, engine.added, strict=True):
        rendered = tokenizer.apply_chat_template(conversation, tokenize=False, add_generation_prompt=True)
        assert ids == tokenizer(rendered, add_special_tokens=False)["input_ids"]  # the chat template, once
        want = min(1 + len(ids) % 4, 3)
        assert answer.prompt_tokens == len(ids) and answer.completion_tokens == want
        assert answer.raw["finish_reason"] == ("length" if want == 3 and 1 + len(ids) % 4 >= 3 else "stop")
        assert answer.model == str(tiny_llama) and answer.cost_usd == 0.0
    assert engine.steps > 1  # several engine steps, answers gathered as they finished
    # One call at a time works the same way.
    single = backend.complete(CONVERSATIONS[0], agent="patient", params=params)
    assert single.text == answers[0].text
    assert len(fake_vllm.built) == 1  # the engine is built once


def test_the_loop_submits_continuously_and_equals_one_at_a_time(fake_vllm, tiny_llama):
    params = GenerationParams(temperature=0.0, max_tokens=4)
    alone_backend = VLLMBackend(model=str(tiny_llama))
    alone = [
        run_self_correction(s, backend=alone_backend, family="plain", params=params, max_rounds=2)
        for s in SENTENCES
    ]
    backend = VLLMBackend(model=str(tiny_llama))
    together = run_self_correction_batch(
        SENTENCES, backend=backend, family="plain", params=params, max_rounds=2
    )
    assert together == alone
    assert len(backend.engine().added) == sum(r.calls for r in together)


def test_lifecycle_close_and_restart(fake_vllm, tiny_llama):
    backend = VLLMBackend(model=str(tiny_llama))
    backend.complete(CONVERSATIONS[0], agent="generator", params=GenerationParams())
    first = backend.engine()
    backend.close()
    assert first.shut_down
    backend.complete(CONVERSATIONS[0], agent="generator", params=GenerationParams())
    assert backend.engine() is not first and len(fake_vllm.built) == 2


def test_engine_failures_become_backend_errors(fake_vllm, tiny_llama):
    backend = VLLMBackend(model=str(tiny_llama))
    backend.engine().fail_step = True
    with pytest.raises(BackendError, match="illegal memory access"):
        backend.complete(CONVERSATIONS[0], agent="generator", params=GenerationParams())
    assert backend.collect() == []  # nothing left pending
    backend.engine().fail_step, backend.engine().drop = False, True
    with pytest.raises(BackendError, match="dropped 2 request"):
        backend.complete_batch(CONVERSATIONS[:2], agent="generator", params=GenerationParams())


def test_a_model_directory_without_weights_is_refused(fake_vllm, tmp_path, tiny_llama):
    with pytest.raises(BackendError, match="no config.json"):
        VLLMBackend(model=str(tmp_path)).engine()
    (tmp_path / "config.json").write_text((tiny_llama / "config.json").read_text())
    with pytest.raises(BackendError, match="no weights"):
        VLLMBackend(model=str(tmp_path)).engine()
    assert fake_vllm.built == []


def test_installed_the_backend_is_offered_by_generate(fake_vllm, capsys):
    with pytest.raises(SystemExit):
        call_command("generate", "--help")
    out = capsys.readouterr().out
    assert "{openai,transformers,vllm,glossary}" in out and "Not offered here" not in out


# --- where vLLM is not installed -----------------------------------------------------------------


@pytest.fixture
def no_vllm(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)  # import and find_spec both fail


def test_not_installed_the_backend_is_not_offered_and_says_how_to_install(no_vllm, capsys):
    assert "vllm" in GPU_BACKENDS
    assert "vllm" not in backend_names()
    assert INSTALL_COMMAND in backend_missing("vllm")
    with pytest.raises(ValueError, match="requirements-gpu.txt"):
        get_backend("vllm", model="/models/x")
    with pytest.raises(SystemExit):
        call_command("generate", "--help")
    out = capsys.readouterr().out
    assert "{openai,transformers,glossary}" in out
    assert INSTALL_COMMAND.replace(" ", "") in "".join(out.split())  # however argparse wraps it


@pytest.mark.django_db
def test_not_installed_a_launch_is_refused_with_the_install_command(no_vllm):
    from annotation.models import Study
    from generation.services import batches

    study = Study.objects.create(slug="v", title="v")
    with pytest.raises(ValidationError) as error:
        batches.generation_batch_create(study=study, systems=["plain_bs"], backend="vllm", model_name="/m")
    assert INSTALL_COMMAND in str(error.value.message_dict["backend"])
