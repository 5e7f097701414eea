"""Local Hugging Face models: load once per worker process, generate in batches. Django-free.

A model is always a local directory (``config.json``, weights, tokenizer files, as written by
``save_pretrained``); radlay never contacts the Hugging Face Hub (every load passes
``local_files_only=True``). To use a published model, download it on a machine that has internet
access and copy the directory over::

    pip install -U huggingface_hub
    hf download google/flan-t5-base --local-dir /models/flan-t5-base        # seq2seq
    hf download Qwen/Qwen2.5-1.5B-Instruct --local-dir /models/qwen2.5-1.5b   # causal LM, chat template
    # (older huggingface_hub: `huggingface-cli download ... --local-dir ...`; or
    #  `git lfs install && git clone https://huggingface.co/google/flan-t5-base`; gated models need
    #  `hf auth login` first, on the downloading machine only)
    rsync -a /models/flan-t5-base radlay-gpu-host:/srv/radlay/var/models/

then point radlay at the directory: the `transformers` generation backend takes it as its model,
``train_simplifier --base-model /srv/radlay/var/models/flan-t5-base`` fine-tunes it, and a
fine-tuned `ModelArtifact.path` is such a directory too. ``RADLAY_MODEL_DIR`` (default
``var/models``) is the conventional place to keep them.

Decoder-only models are prompted through their tokenizer's chat template and padded on the left,
so every prompt of a batch ends where generation starts; encoder-decoder models (T5, BART) get the
text of the last user message. Under greedy decoding (``temperature=0``) a batched call returns
the same texts as one call per prompt.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import torch

Architecture = Literal["seq2seq", "causal"]
Prompt = str | list[dict[str, Any]]

# Written next to a fine-tuned model by ml.training: what inference must reproduce from training.
TRAINING_METADATA_FILE = "radlay_training.json"

_DTYPES = {
    "float32": torch.float32,
    "fp32": torch.float32,
    "float": torch.float32,
    "bfloat16": torch.bfloat16,
    "bf16": torch.bfloat16,
    "float16": torch.float16,
    "fp16": torch.float16,
    "half": torch.float16,
    "float64": torch.float64,
    "fp64": torch.float64,
}


class ModelNotFoundError(FileNotFoundError):
    """The model path is not a local model directory."""


@dataclass
class LoadedModel:
    """A model, its tokenizer and how to prompt it. Build one with `load_model` (cached)."""

    model: Any
    tokenizer: Any
    architecture: Architecture
    path: str
    device: torch.device
    dtype: torch.dtype
    # Text the model was fine-tuned with in front of every source (ml.training); "" for others.
    source_prefix: str = ""

    @property
    def model_id(self) -> str:
        return Path(self.path).name or self.path


@dataclass(frozen=True)
class GenerationOutput:
    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: Literal["stop", "length"] = "stop"


_cache: dict[tuple[str, str, str], LoadedModel] = {}
_cache_lock = threading.Lock()


def resolve_device(device: str | torch.device | None = None) -> torch.device:
    """`None` means the GPU when there is one, else the CPU."""
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def resolve_dtype(dtype: str | torch.dtype | None, device: torch.device) -> torch.dtype:
    """`None`/"auto": bf16 on a GPU that supports it, else fp16 on a GPU; fp32 on the CPU (CPU
    half precision is slow and loses accuracy for no memory win worth having here)."""
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype is None or dtype == "auto":
        if device.type == "cuda":
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.float32
    try:
        return _DTYPES[str(dtype).lower()]
    except KeyError:
        raise ValueError(f"unknown dtype {dtype!r}; use one of {sorted(_DTYPES)} or 'auto'") from None


def model_directory(path: str | Path) -> Path:
    """The resolved model directory, or ModelNotFoundError explaining how to get one."""
    directory = Path(path).expanduser()
    if not (directory / "config.json").is_file():
        raise ModelNotFoundError(
            f"{path!s} is not a local model directory (no config.json). radlay never downloads from the "
            "Hugging Face Hub: download the model elsewhere (`hf download ORG/NAME --local-dir DIR`), copy "
            "DIR to this machine and pass its path (see ml/inference.py)."
        )
    return directory.resolve()


def read_training_metadata(path: str | Path) -> dict[str, Any]:
    """What ml.training recorded next to a fine-tuned model ({} for any other model)."""
    file = Path(path) / TRAINING_METADATA_FILE
    if not file.is_file():
        return {}
    return json.loads(file.read_text(encoding="utf-8"))


def load_model(
    path: str | Path, device: str | torch.device | None = None, dtype: str | torch.dtype | None = None
) -> LoadedModel:
    """Load a local model directory once per process (cache key: resolved path, device, dtype).

    Thread-safe; a second call with the same key returns the same object. Call
    `clear_model_cache()` to free it (e.g. after a fine-tuned model at the same path changed).
    """
    directory = model_directory(path)
    resolved_device = resolve_device(device)
    resolved_dtype = resolve_dtype(dtype, resolved_device)
    key = (str(directory), str(resolved_device), str(resolved_dtype))
    with _cache_lock:
        loaded = _cache.get(key)
        if loaded is None:
            loaded = _load_uncached(directory, resolved_device, resolved_dtype)
            _cache[key] = loaded
        return loaded


def clear_model_cache() -> None:
    with _cache_lock:
        _cache.clear()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def _load_uncached(directory: Path, device: torch.device, dtype: torch.dtype) -> LoadedModel:
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

    config = AutoConfig.from_pretrained(directory, local_files_only=True)
    architecture: Architecture = "seq2seq" if getattr(config, "is_encoder_decoder", False) else "causal"
    model_class = AutoModelForSeq2SeqLM if architecture == "seq2seq" else AutoModelForCausalLM
    model = model_class.from_pretrained(directory, local_files_only=True, dtype=dtype)
    model.to(device)
    model.eval()
    tokenizer = AutoTokenizer.from_pretrained(directory, local_files_only=True)
    metadata = read_training_metadata(directory)
    return wrap_model(
        model, tokenizer, path=str(directory), source_prefix=str(metadata.get("source_prefix", ""))
    )


def wrap_model(model: Any, tokenizer: Any, *, path: str = "", source_prefix: str = "") -> LoadedModel:
    """A LoadedModel around an in-memory model (ml.training validates with it), tokenizer set up
    for batched generation: left padding for decoder-only models, a pad token when there is none."""
    architecture: Architecture = "seq2seq" if model.config.is_encoder_decoder else "causal"
    if architecture == "causal":
        # Right padding would put pad tokens between a prompt and its continuation.
        tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    parameter = next(model.parameters())
    return LoadedModel(
        model=model,
        tokenizer=tokenizer,
        architecture=architecture,
        path=path,
        device=parameter.device,
        dtype=parameter.dtype,
        source_prefix=source_prefix,
    )


def _message_text(content: Any) -> str:
    # OpenAI-style content may be a list of parts: [{"type": "text", "text": ...}, ...].
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
    raise ValueError(f"unsupported message content {type(content).__name__}")


def _encode_prompt(loaded: LoadedModel, prompt: Prompt) -> list[int]:
    tokenizer = loaded.tokenizer
    if loaded.architecture == "seq2seq":
        if isinstance(prompt, str):
            text = prompt
        else:
            user_messages = [m for m in prompt if m.get("role") == "user"]
            if not user_messages:
                raise ValueError("a seq2seq model needs a user message to take its source text from")
            text = _message_text(user_messages[-1]["content"])
        return tokenizer(loaded.source_prefix + text)["input_ids"]
    if isinstance(prompt, str):
        # A raw prompt: the tokenizer adds BOS itself when the model expects one.
        return tokenizer(prompt)["input_ids"]
    if not getattr(tokenizer, "chat_template", None):
        raise ValueError(
            f"{loaded.path or 'this model'} has no chat template; pass plain-string prompts or use an "
            "instruction-tuned model whose tokenizer_config.json / chat_template.jinja defines one"
        )
    messages = [{"role": m["role"], "content": _message_text(m["content"])} for m in prompt]
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    # The template already wrote BOS and any other special tokens.
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def _eos_ids(loaded: LoadedModel) -> set[int]:
    eos = loaded.model.generation_config.eos_token_id
    if eos is None:
        eos = loaded.tokenizer.eos_token_id
    if eos is None:
        return set()
    return set(eos) if isinstance(eos, (list, tuple)) else {int(eos)}


def _generation_config(loaded: LoadedModel, *, max_new_tokens: int, temperature: float, top_p: float | None):
    config = loaded.model.generation_config.__class__.from_dict(loaded.model.generation_config.to_dict())
    sample = temperature > 0
    # num_beams=1 always: the API promises plain greedy decoding or sampling, whatever the
    # checkpoint's generation_config.json prefers.
    config.update(
        max_new_tokens=max_new_tokens,
        max_length=None,
        min_length=0,
        min_new_tokens=None,
        num_beams=1,
        num_return_sequences=1,
        do_sample=sample,
        temperature=temperature if sample else None,
        top_p=(top_p if top_p is not None else 1.0) if sample else None,
        top_k=None if not sample else config.top_k,
        pad_token_id=loaded.tokenizer.pad_token_id,
    )
    if config.eos_token_id is None:
        config.eos_token_id = loaded.tokenizer.eos_token_id
    return config


def generate(
    loaded: LoadedModel,
    prompts: Sequence[Prompt],
    *,
    max_new_tokens: int = 256,
    temperature: float = 0.8,
    seed: int | None = None,
    batch_size: int = 8,
    top_p: float | None = None,
) -> list[GenerationOutput]:
    """Generate one completion per prompt, in the prompts' order.

    A prompt is a list of chat messages ({"role", "content"}) or a plain string. Causal LMs render
    messages with their chat template; seq2seq models read the last user message. Prompts are
    sorted by length before batching (less padding), which does not change greedy outputs.
    `temperature <= 0` means greedy decoding. With a `seed`, sampling is reproducible for the same
    prompts and batch size; the caller's global RNG state is left untouched.

    Token counts: `prompt_tokens` is the prompt's length without padding; `completion_tokens`
    counts generated tokens up to and including the end-of-sequence token.
    """
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    if not prompts:
        return []
    encoded = [_encode_prompt(loaded, p) for p in prompts]
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]), reverse=True)
    config = _generation_config(loaded, max_new_tokens=max_new_tokens, temperature=temperature, top_p=top_p)
    eos_ids = _eos_ids(loaded)
    results: list[GenerationOutput | None] = [None] * len(encoded)
    devices = [loaded.device.index or 0] if loaded.device.type == "cuda" else []

    for batch_number, start in enumerate(range(0, len(order), batch_size)):
        indices = order[start : start + batch_size]
        batch = loaded.tokenizer.pad(
            {"input_ids": [encoded[i] for i in indices]}, padding=True, return_tensors="pt"
        ).to(loaded.device)
        with torch.random.fork_rng(devices=devices, enabled=seed is not None), torch.inference_mode():
            if seed is not None:
                torch.manual_seed(seed + batch_number)
            output = loaded.model.generate(
                input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], generation_config=config
            )
        if loaded.architecture == "causal":
            new_tokens = output[:, batch["input_ids"].shape[1] :]
        else:
            new_tokens = output[:, 1:]  # drop the decoder start token
        for row, index in enumerate(indices):
            reason: Literal["stop", "length"]
            tokens = new_tokens[row].tolist()
            end = next((k for k, t in enumerate(tokens) if t in eos_ids), None)
            if end is None:
                # Unfinished rows are never padded, so every token here was generated.
                kept, reason = tokens, "length"
            else:
                kept, reason = tokens[: end + 1], "stop"
            results[index] = GenerationOutput(
                text=loaded.tokenizer.decode(kept, skip_special_tokens=True).strip(),
                prompt_tokens=len(encoded[index]),
                completion_tokens=len(kept),
                finish_reason=reason,
            )
    return [r for r in results if r is not None]
