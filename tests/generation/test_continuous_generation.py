"""Continuous batching in the self-correction loop (generation.pipeline.continuous): every
sentence's next request is submitted the moment its previous answers are back, with results equal
to run_self_correction one sentence at a time. The engine here is a streaming wrapper around the
scripted backend that answers out of submission order; the real engines are in
test_vllm_backend.py (a fake vLLM engine) and below (transformers' continuous batching on a tiny
model)."""

from __future__ import annotations

import pytest

from generation.backends.base import BackendError, GenerationParams
from generation.backends.cache import CachedBackend, InMemoryCallCache
from generation.backends.streaming import Request, complete_all, streams
from generation.pipeline.self_correction import run_self_correction, run_self_correction_batch
from tests.generation.test_batched_generation import SENTENCES, ScriptedBackend


class StreamingScripted:
    """ScriptedBackend's answers through submit/collect: each collect finishes the `per_step`
    most recently submitted requests (last in, first out), so answers come back out of order."""

    name = "scripted"

    def __init__(self, *, per_step: int = 2, fail_on: str = "") -> None:
        self.inner = ScriptedBackend(fail_on=fail_on)
        self.model = self.inner.model
        self.per_step = per_step
        self.queue: list[Request] = []
        self.submitted: list[Request] = []
        self.max_in_flight = 0
        self.rounds_in_flight: list[set[int]] = []

    def submit(self, request: Request) -> None:
        self.queue.append(request)
        self.submitted.append(request)
        self.max_in_flight = max(self.max_in_flight, len(self.queue))

    def collect(self):
        self.rounds_in_flight.append({r.context["round"] for r in self.queue})
        done, self.queue = self.queue[-self.per_step :], self.queue[: -self.per_step]
        return [(r.key, self.inner.answer(r.messages, r.agent, r.context)) for r in done]

    def complete(self, messages, *, agent, params, context=None):
        return complete_all(self, [Request("one", messages, agent, params, context)])[0]


@pytest.mark.parametrize("family", ["plain", "cot"])
@pytest.mark.parametrize("per_step", [1, 3, 100])
def test_continuous_results_are_those_of_one_sentence_at_a_time(family, per_step):
    params = GenerationParams(temperature=0.0, seed=3)
    alone = [
        run_self_correction(s, backend=ScriptedBackend(), family=family, params=params) for s in SENTENCES
    ]
    engine = StreamingScripted(per_step=per_step)
    assert streams(engine) and not streams(ScriptedBackend())
    together = run_self_correction_batch(SENTENCES, backend=engine, family=family, params=params)
    assert together == alone
    assert len(engine.submitted) == sum(r.calls for r in together)
    assert engine.inner.log == []  # no lockstep batch: everything went through submit/collect


def test_no_lockstep_sentences_are_at_different_rounds_at_once():
    engine = StreamingScripted(per_step=1)
    run_self_correction_batch(SENTENCES, backend=engine, family="plain")
    # All four first requests are in flight together, and later the engine holds requests of
    # different rounds at the same time (a lockstep batch never mixes rounds).
    assert engine.max_in_flight >= 4
    assert any(len(rounds) > 1 for rounds in engine.rounds_in_flight)


def test_a_failing_engine_fails_the_call():
    with pytest.raises(BackendError, match="S3"):
        run_self_correction_batch(SENTENCES, backend=StreamingScripted(fail_on="S3"))


def test_the_call_cache_serves_a_continuous_rerun_and_merges_repeated_calls():
    cache = InMemoryCallCache()
    engine = StreamingScripted()
    first = run_self_correction_batch(SENTENCES, backend=CachedBackend(engine, cache), family="cot")
    made = len(engine.submitted)
    assert made == len(cache) == sum(r.calls for r in first)
    again = run_self_correction_batch(SENTENCES, backend=CachedBackend(engine, cache), family="cot")
    assert len(engine.submitted) == made  # every answer from the cache
    assert all(r.cached_calls == r.calls for r in again)
    assert [r.sc_text for r in again] == [r.sc_text for r in first]
    # ...and a one-at-a-time run reads the same entries.
    alone = run_self_correction(SENTENCES[2], backend=CachedBackend(ScriptedBackend(), cache), family="cot")
    assert alone.cached_calls == alone.calls

    # Two sources with the same text: each call is made once, the repetition is a hit.
    engine = StreamingScripted()
    sentences = [SENTENCES[1], SENTENCES[1], SENTENCES[0]]
    together = run_self_correction_batch(sentences, backend=CachedBackend(engine, InMemoryCallCache()))
    reference = [
        run_self_correction(s, backend=CachedBackend(ScriptedBackend(), InMemoryCallCache()))
        for s in sentences
    ]
    assert [r.sc_text for r in together] == [r.sc_text for r in reference]
    assert len(engine.submitted) == together[0].calls + together[2].calls
    assert together[1].cached_calls == together[1].calls


def test_complete_all_returns_answers_in_request_order():
    engine = StreamingScripted(per_step=1)
    params = GenerationParams()
    requests = [
        Request(
            f"k{i}",
            [{"role": "user", "content": s}],
            "radiologist",
            params,
            {"round": 1, "simplification": s},
        )
        for i, s in enumerate(SENTENCES)
    ]
    answers = complete_all(engine, requests)
    assert [a.text for a in answers] == [f"Radiologist round 1 on: {s}" for s in SENTENCES]


# --- transformers' own continuous batching, on a tiny decoder-only model --------------------------


@pytest.mark.heavy
def test_transformers_backend_streams_on_a_causal_model_with_greedy_outputs_of_generate(tiny_llama, tiny_t5):
    from generation.backends.transformers_backend import TransformersBackend
    from ml.inference import generate, load_model

    params = GenerationParams(temperature=0.0, max_tokens=6)
    backend = TransformersBackend(model=str(tiny_llama), device="cpu")
    assert streams(backend)
    assert not streams(TransformersBackend(model=str(tiny_t5), device="cpu"))  # seq2seq: lockstep
    conversations = [[{"role": "user", "content": s}] for s in SENTENCES]
    try:
        answers = complete_all(
            backend, [Request(str(i), c, "generator", params) for i, c in enumerate(conversations)]
        )
    finally:
        backend.close()
    reference = generate(
        load_model(str(tiny_llama), device="cpu"), conversations, max_new_tokens=6, temperature=0
    )
    assert [a.text for a in answers] == [r.text for r in reference]
    assert [a.completion_tokens for a in answers] == [r.completion_tokens for r in reference]
    assert [a.raw["finish_reason"] for a in answers] == [r.finish_reason for r in reference]
    assert {a.raw["engine"] for a in answers} == {"hf-continuous-batching"}


@pytest.mark.heavy
def test_transformers_continuous_self_correction_equals_one_at_a_time(tiny_llama):
    from generation.backends.transformers_backend import TransformersBackend

    params = GenerationParams(temperature=0.0, max_tokens=5)
    backend = TransformersBackend(model=str(tiny_llama), device="cpu")
    try:
        alone = [
            run_self_correction(s, backend=backend, family="plain", params=params, max_rounds=1)
            for s in SENTENCES
        ]
        together = run_self_correction_batch(
            SENTENCES, backend=backend, family="plain", params=params, max_rounds=1
        )
    finally:
        backend.close()
    assert [(r.bs_text, r.sc_text, r.calls, r.completion_tokens) for r in together] == [
        (r.bs_text, r.sc_text, r.calls, r.completion_tokens) for r in alone
    ]
