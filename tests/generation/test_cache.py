"""Caching identical calls: a rerun makes no new calls; a new sample index or seed does."""

import itertools

import pytest

from generation.backends.base import Completion, GenerationParams
from generation.backends.cache import (
    CachedBackend,
    CallCache,
    InMemoryCallCache,
    call_cache_key,
    completion_from_dict,
    completion_to_dict,
)
from generation.pipeline.self_correction import generate_baselines, run_self_correction

SENTENCE = "Few stable less than 5 mm hypodensities, too small to characterize, probably simple cysts."


@pytest.fixture
def varying_answers(scripted_llm):
    """Every call gets a different answer, as sampling at temperature 0.8 would give."""
    counter = itertools.count(1)
    scripted_llm.set_fallback("generator", lambda request: f"Simplification number {next(counter)}.")
    answers = iter(["Yes, explain 'hypodensities'.", "No", "No", "No"])
    scripted_llm.set_fallback("processor", lambda request: next(answers, "No"))
    return scripted_llm


def test_rerunning_a_job_makes_zero_calls_and_reproduces_it(varying_answers, openai_backend):
    cache = InMemoryCallCache()
    backend = CachedBackend(openai_backend, cache)
    first = run_self_correction(SENTENCE, backend=backend, family="plain")
    calls_after_first = len(varying_answers.chat_requests(status=None))
    assert calls_after_first == first.calls == 10 and first.cached_calls == 0
    assert first.sc_text == "Simplification number 2."

    second = run_self_correction(SENTENCE, backend=backend, family="plain")
    assert len(varying_answers.chat_requests(status=None)) == calls_after_first  # not one new request
    assert (second.bs_text, second.sc_text) == (first.bs_text, first.sc_text)
    assert [e["content"] for e in second.transcript] == [e["content"] for e in first.transcript]
    assert second.cached_calls == second.calls == 10
    assert all(e["cached"] for e in second.transcript if e["role"] == "assistant")
    # Tokens describe the transcript; the rerun spent nothing.
    assert (second.prompt_tokens, second.completion_tokens) == (first.prompt_tokens, first.completion_tokens)
    assert first.cost_usd > 0 and second.cost_usd == 0.0


def test_identical_prompts_in_later_rounds_are_fresh_samples(scripted_llm, openai_backend):
    # The Generator repeats itself, so round 2's Radiologist/Patient/Processor prompts equal round 1's;
    # the cache must not replay round 1's "Yes" (which would loop to the cap).
    scripted_llm.set_fallback("generator", "Same text.")
    scripted_llm.script("processor", ["Yes, explain more.", "No", "No", "No"])
    result = run_self_correction(SENTENCE, backend=CachedBackend(openai_backend, InMemoryCallCache()))
    assert (result.rounds, result.stopped_by, result.cached_calls) == (2, "processor_no", 0)
    radiologist = scripted_llm.chat_requests("radiologist")
    assert len(radiologist) == 2 and radiologist[0].messages == radiologist[1].messages


def test_a_new_sample_index_or_seed_asks_for_fresh_samples(varying_answers, openai_backend):
    backend = CachedBackend(openai_backend, InMemoryCallCache())
    sample0 = generate_baselines([SENTENCE], backend=backend)[0]
    again = generate_baselines([SENTENCE], backend=backend)[0]
    sample1 = generate_baselines([SENTENCE], backend=backend, params=GenerationParams(sample_index=1))[0]
    seeded = generate_baselines([SENTENCE], backend=backend, params=GenerationParams(seed=11))[0]
    assert again.text == sample0.text and again.cached_calls == 1
    assert len({sample0.text, sample1.text, seeded.text}) == 3
    assert len(varying_answers.chat_requests()) == 3
    # sample_index is a cache-key matter only: the server never sees it.
    assert all("sample_index" not in r.params for r in varying_answers.chat_requests())


def test_the_key_covers_every_part_of_a_call():
    base = {
        "backend": "openai",
        "model": "m",
        "agent": "generator",
        "messages": [{"role": "user", "content": "Simplify the sentence: X."}],
        "params": GenerationParams(),
    }
    key = call_cache_key(**base)
    assert len(key) == 64 and key == call_cache_key(**base)
    variants = [
        {"backend": "transformers"},
        {"model": "m2"},
        {"agent": "radiologist"},
        {"messages": [{"role": "user", "content": "Simplify the sentence: Y."}]},
        {"messages": [{"role": "system", "content": "Simplify the sentence: X."}]},
        {"params": GenerationParams(temperature=0.7)},
        {"params": GenerationParams(seed=1)},
        {"params": GenerationParams(sample_index=1)},
        {"params": GenerationParams(max_tokens=100)},
        {"params": GenerationParams(top_p=0.5)},
        {"position": {"round": 2}},
        {"position": {"round": 1, "feedback_of": "patient"}},
    ]
    keys = {call_cache_key(**{**base, **variant}) for variant in variants}
    assert key not in keys and len(keys) == len(variants)


class CountingBackend:
    name = "counting"
    model = "m"

    def __init__(self):
        self.batches = []

    def complete(self, messages, *, agent, params, context=None):
        return self.complete_batch([messages], agent=agent, params=params)[0]

    def complete_batch(self, conversations, *, agent, params, contexts=None):
        self.batches.append([m[-1]["content"] for m in conversations])
        return [
            Completion(text="lay " + m[-1]["content"], prompt_tokens=2, completion_tokens=3, cost_usd=0.01)
            for m in conversations
        ]


def test_batches_send_only_the_misses():
    inner = CountingBackend()
    backend = CachedBackend(inner, InMemoryCallCache())
    generate_baselines(["A.", "B."], backend=backend)
    results = generate_baselines(["B.", "C.", "A."], backend=backend)
    assert inner.batches == [
        ["Simplify the sentence: A.", "Simplify the sentence: B."],
        ["Simplify the sentence: C."],
    ]
    assert [r.text for r in results] == [
        "lay Simplify the sentence: B.",
        "lay Simplify the sentence: C.",
        "lay Simplify the sentence: A.",
    ]
    assert [r.cached_calls for r in results] == [1, 0, 1]
    assert [r.cost_usd for r in results] == [0.0, 0.01, 0.0]


def test_in_memory_cache_round_trips_through_plain_data():
    cache = InMemoryCallCache()
    assert isinstance(cache, CallCache)
    completion = Completion(
        text="x",
        prompt_tokens=1,
        completion_tokens=2,
        cost_usd=0.5,
        model="m",
        raw={"finish_reason": "stop"},
        cost_known=False,
    )
    assert completion_from_dict(completion_to_dict(completion)) == completion
    cache.set("k", completion)
    completion.raw["finish_reason"] = "mutated later"  # the stored copy is independent
    assert cache.get("k").raw == {"finish_reason": "stop"}
    assert cache.get("missing") is None and len(cache) == 1
