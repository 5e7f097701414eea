"""Tiny Hugging Face models built offline, saved with `save_pretrained` so they load exactly like
a real local model directory (the code under test cannot tell the difference).

Weights are random; the tokenizer is a byte-level BPE trained with `tokenizers` on a few radiology
sentences, so text round-trips through encode/decode. Everything is a few hundred KB and builds in
well under a second on a CPU.
"""

from __future__ import annotations

from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import (
    GPT2Config,
    GPT2LMHeadModel,
    LlamaConfig,
    LlamaForCausalLM,
    PreTrainedTokenizerFast,
    T5Config,
    T5ForConditionalGeneration,
)

SENTENCES = [
    "There is a small pleural effusion on the left.",
    "There is a small amount of fluid around the left lung.",
    "No acute cardiopulmonary abnormality.",
    "The heart and lungs look normal.",
    "Mild degenerative changes of the thoracic spine.",
    "Some wear and tear of the bones in the middle of the back.",
    "Cardiomegaly with pulmonary vascular congestion.",
    "The heart is enlarged and there is fluid build-up in the lung vessels.",
    "Patchy opacity in the right lower lobe may represent pneumonia.",
    "A cloudy area at the bottom of the right lung could be an infection.",
    "The endotracheal tube terminates 4 cm above the carina.",
    "The breathing tube ends 4 cm above where the windpipe splits.",
    "Simplify this radiology sentence for a patient.",
]

PAD, EOS, UNK, BOS = "<pad>", "</s>", "<unk>", "<s>"
CHAT_ROLES = ("<|system|>", "<|user|>", "<|assistant|>")
# A minimal chat template in the style of Zephyr/TinyLlama: every turn ends with EOS and the
# generation prompt opens an assistant turn.
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}<|{{ message['role'] }}|>{{ message['content'] }}"
    "{{ eos_token }}{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def _train_bpe(extra_specials: tuple[str, ...] = (), vocab_size: int = 320) -> Tokenizer:
    tokenizer = Tokenizer(models.BPE(unk_token=UNK))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[PAD, EOS, UNK, BOS, *extra_specials],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(SENTENCES, trainer=trainer)
    return tokenizer


# Model shapes by name: "tiny" for tests; the others have the layer sizes of real checkpoints
# (random weights, the tiny BPE vocabulary), so a GPU benchmark measures a realistic amount of
# matrix work when no model hub is reachable.
T5_SHAPES = {
    "tiny": {"d_model": 32, "d_kv": 16, "d_ff": 64, "num_layers": 2, "num_decoder_layers": 2, "num_heads": 2},
    # t5-small's shape (60 M parameters with its own vocabulary).
    "t5-small": {
        "d_model": 512,
        "d_kv": 64,
        "d_ff": 2048,
        "num_layers": 6,
        "num_decoder_layers": 6,
        "num_heads": 8,
    },
}
LLAMA_SHAPES = {
    "tiny": {
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 256,
    },
    # TinyLlama-1.1B's shape.
    "tinyllama-1.1b": {
        "hidden_size": 2048,
        "intermediate_size": 5632,
        "num_hidden_layers": 22,
        "num_attention_heads": 32,
        "num_key_value_heads": 4,
        "max_position_embeddings": 2048,
    },
}


def build_tiny_t5(directory: Path, *, seed: int = 0, shape: str = "tiny") -> Path:
    """A random-init T5 (by default 2 layers, d_model 32) whose tokenizer appends </s> like T5's does."""
    directory = Path(directory)
    backend = _train_bpe()
    backend.post_processor = processors.TemplateProcessing(
        single=f"$A {EOS}", pair=f"$A {EOS} $B {EOS}", special_tokens=[(EOS, backend.token_to_id(EOS))]
    )
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, pad_token=PAD, eos_token=EOS, unk_token=UNK)
    config = T5Config(
        vocab_size=len(tokenizer),
        **T5_SHAPES[shape],
        relative_attention_num_buckets=8,
        dropout_rate=0.1,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        decoder_start_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    model = T5ForConditionalGeneration(config)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def build_tiny_causal_lm(directory: Path, *, arch: str = "llama", seed: int = 0, shape: str = "tiny") -> Path:
    """A random-init decoder-only LM (Llama-style with rotary positions, or GPT-2) with a chat
    template. Its tokenizer pads on the right, as many real checkpoints do, so the code under test
    has to switch to left padding itself."""
    directory = Path(directory)
    backend = _train_bpe(extra_specials=CHAT_ROLES)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        pad_token=PAD,
        eos_token=EOS,
        unk_token=UNK,
        bos_token=BOS,
        padding_side="right",
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    common = {
        "vocab_size": len(tokenizer),
        "pad_token_id": tokenizer.pad_token_id,
        "eos_token_id": tokenizer.eos_token_id,
        "bos_token_id": tokenizer.bos_token_id,
    }
    if arch == "llama":
        config = LlamaConfig(**LLAMA_SHAPES[shape], **common)
        model_class = LlamaForCausalLM
    elif arch == "gpt2":
        config = GPT2Config(n_embd=32, n_layer=2, n_head=2, n_positions=256, **common)
        model_class = GPT2LMHeadModel
    else:
        raise ValueError(f"unknown tiny architecture {arch!r}")
    torch.manual_seed(seed)
    model = model_class(config)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory
