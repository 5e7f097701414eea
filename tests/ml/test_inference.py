import json
import shutil

import pytest
import torch

from ml.inference import (
    TRAINING_METADATA_FILE,
    GenerationOutput,
    ModelNotFoundError,
    generate,
    load_model,
    resolve_dtype,
)

CHAT_PROMPTS = [
    [{"role": "user", "content": "There is a small pleural effusion on the left."}],
    [
        {"role": "system", "content": "Simplify."},
        {"role": "user", "content": "No acute cardiopulmonary abnormality."},
    ],
    [
        {
            "role": "user",
            "content": "Cardiomegaly with pulmonary vascular congestion and patchy opacity in the lobe.",
        }
    ],
    [{"role": "user", "content": [{"type": "text", "text": "Mild degenerative changes."}]}],
    "The heart",
]


@pytest.fixture(params=["tiny_llama", "tiny_gpt2", "tiny_t5"])
def any_model(request):
    return request.getfixturevalue(request.param)


def test_batched_greedy_generation_equals_one_at_a_time(any_model, fresh_model_cache):
    loaded = load_model(any_model)
    batched = generate(loaded, CHAT_PROMPTS, temperature=0, max_new_tokens=10, batch_size=3)
    single = [generate(loaded, [p], temperature=0, max_new_tokens=10, batch_size=1)[0] for p in CHAT_PROMPTS]
    assert batched == single
    assert all(isinstance(o, GenerationOutput) and o.completion_tokens > 0 for o in batched)


def test_decoder_only_prompts_are_left_padded_for_generate(tiny_llama, fresh_model_cache, monkeypatch):
    loaded = load_model(tiny_llama)
    # The tiny tokenizer was saved with right padding, like many real checkpoints.
    assert json.loads((tiny_llama / "tokenizer_config.json").read_text())["padding_side"] == "right"
    seen = []
    original = loaded.model.generate

    def spy(**kwargs):
        seen.append((kwargs["input_ids"].clone(), kwargs["attention_mask"].clone()))
        return original(**kwargs)

    monkeypatch.setattr(loaded.model, "generate", spy)
    generate(loaded, CHAT_PROMPTS[:3], temperature=0, max_new_tokens=2, batch_size=3)
    input_ids, mask = seen[0]
    pad = loaded.tokenizer.pad_token_id
    assert (mask == 0).any(), "prompts of different lengths must need padding"
    # Every row ends with a real token, and padding only ever precedes real tokens.
    assert mask[:, -1].all()
    assert torch.equal(mask, mask.cummax(dim=1).values)
    assert (input_ids[mask == 0] == pad).all()


def test_token_counts_and_stop_on_eos(tiny_llama, fresh_model_cache):
    loaded = load_model(tiny_llama)
    prompt = CHAT_PROMPTS[0]
    expected_prompt_tokens = len(
        loaded.tokenizer.apply_chat_template(prompt, add_generation_prompt=True)["input_ids"]
    )
    out = generate(loaded, [prompt], temperature=0, max_new_tokens=7)[0]
    assert out.prompt_tokens == expected_prompt_tokens
    assert (out.finish_reason, out.completion_tokens) == ("length", 7)

    # Declare the model's first greedy token to be EOS: generation must stop right after it and
    # count exactly that one token.
    ids = loaded.tokenizer(
        loaded.tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True),
        add_special_tokens=False,
        return_tensors="pt",
    )
    with torch.no_grad():
        first = int(loaded.model(**ids).logits[0, -1].argmax())
    loaded.model.generation_config.eos_token_id = first
    stopped = generate(loaded, [prompt], temperature=0, max_new_tokens=7)[0]
    assert (stopped.finish_reason, stopped.completion_tokens) == ("stop", 1)
    assert stopped.text == loaded.tokenizer.decode([first], skip_special_tokens=True).strip()


def test_sampling_is_reproducible_with_a_seed_and_leaves_global_rng_alone(tiny_llama):
    loaded = load_model(tiny_llama)
    torch.manual_seed(123)
    before = torch.get_rng_state()
    first = generate(loaded, CHAT_PROMPTS, temperature=1.0, seed=7, max_new_tokens=12, batch_size=2)
    assert torch.equal(torch.get_rng_state(), before)
    again = generate(loaded, CHAT_PROMPTS, temperature=1.0, seed=7, max_new_tokens=12, batch_size=2)
    other = generate(loaded, CHAT_PROMPTS, temperature=1.0, seed=8, max_new_tokens=12, batch_size=2)
    assert first == again
    assert [o.text for o in first] != [o.text for o in other]


def test_seq2seq_reads_the_last_user_message(tiny_t5):
    loaded = load_model(tiny_t5)
    conversation = [
        {"role": "system", "content": "You simplify radiology reports."},
        {"role": "user", "content": "There is a small pleural effusion on the left."},
        {"role": "assistant", "content": "Some fluid."},
        {"role": "user", "content": "Cardiomegaly with pulmonary vascular congestion."},
    ]
    from_chat = generate(loaded, [conversation], temperature=0, max_new_tokens=8)[0]
    from_text = generate(
        loaded, ["Cardiomegaly with pulmonary vascular congestion."], temperature=0, max_new_tokens=8
    )[0]
    assert from_chat == from_text
    expected = loaded.tokenizer("Cardiomegaly with pulmonary vascular congestion.")["input_ids"]
    assert from_chat.prompt_tokens == len(expected)


def test_fine_tuned_source_prefix_is_applied(tiny_t5, tmp_path):
    prefixed = shutil.copytree(tiny_t5, tmp_path / "prefixed")
    (prefixed / TRAINING_METADATA_FILE).write_text(json.dumps({"source_prefix": "simplify: "}))
    with_prefix = generate(load_model(prefixed), ["No acute abnormality."], temperature=0, max_new_tokens=8)[
        0
    ]
    by_hand = generate(
        load_model(tiny_t5), ["simplify: No acute abnormality."], temperature=0, max_new_tokens=8
    )[0]
    assert with_prefix == by_hand


def test_models_are_cached_per_path_device_and_dtype(tiny_t5, fresh_model_cache):
    first = load_model(tiny_t5)
    assert load_model(str(tiny_t5), device="cpu", dtype="float32") is first
    as_double = load_model(tiny_t5, dtype=torch.float64)
    assert as_double is not first
    assert next(as_double.model.parameters()).dtype == torch.float64
    assert first.architecture == "seq2seq" and first.dtype == torch.float32


def test_cpu_defaults_to_float32_and_gpu_to_half_precision():
    assert resolve_dtype(None, torch.device("cpu")) == torch.float32
    assert resolve_dtype("bf16", torch.device("cpu")) == torch.bfloat16
    with pytest.raises(ValueError):
        resolve_dtype("int3", torch.device("cpu"))


def test_missing_model_explains_how_to_get_one(tmp_path):
    with pytest.raises(ModelNotFoundError, match="hf download"):
        load_model(tmp_path / "nowhere")
    with pytest.raises(ModelNotFoundError):
        load_model("google/flan-t5-base")  # a hub id is not a local path


def test_chat_prompt_needs_a_chat_template(tiny_gpt2, tmp_path, fresh_model_cache):
    plain = shutil.copytree(tiny_gpt2, tmp_path / "no-template")
    (plain / "chat_template.jinja").unlink()
    loaded = load_model(plain)
    with pytest.raises(ValueError, match="chat template"):
        generate(loaded, [CHAT_PROMPTS[0]], temperature=0, max_new_tokens=2)
    assert generate(loaded, ["The heart"], temperature=0, max_new_tokens=2)[0].completion_tokens == 2
