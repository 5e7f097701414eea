"""Direct preference optimisation of a decoder-only simplifier on human preference pairs, with
TRL's DPOTrainer (optionally LoRA through peft, merged back into the weights). Django-free.

The pairs are `export --format preferences` records (evaluation/exports/preferences.py): each
one's `prompt` is the original in radlay's generation prompt, so the model is trained on the very
message the generation pipeline sends it (one user turn, rendered with the model's chat template),
and its answer is the chosen or the rejected simplification. The result is a complete model
directory (weights, tokenizer with its chat template, radlay_training.json) that ml.inference, the
transformers backend and the vllm backend load like any other.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ml.inference import TRAINING_METADATA_FILE, model_directory


@dataclass
class DPOSettings:
    epochs: int = 1
    learning_rate: float = 5e-6
    batch_size: int = 4
    beta: float = 0.1  # DPO's KL strength: how far the policy may move from the reference model
    max_steps: int | None = None
    max_length: int = 512  # prompt + answer tokens
    seed: int = 42
    lora: bool = False  # train LoRA adapters (peft) and merge them into the saved model
    lora_r: int = 16
    lora_alpha: int = 32
    precision: str = "auto"  # auto (bf16 on a GPU that has it) | fp32 | bf16

    def __post_init__(self) -> None:
        if self.epochs < 1 or self.batch_size < 1:
            raise ValueError("epochs and batch_size must be at least 1")
        if self.beta <= 0 or self.learning_rate <= 0:
            raise ValueError("beta and learning_rate must be positive")
        if self.max_steps is not None and self.max_steps < 1:
            raise ValueError("max_steps must be at least 1")
        if self.precision not in ("auto", "fp32", "bf16"):
            raise ValueError("precision must be auto, fp32 or bf16")

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> DPOSettings:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(values) - known
        if unknown:
            raise ValueError(f"unknown DPO hyper-parameter(s): {', '.join(sorted(unknown))}")
        return cls(**values)

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class DPOResult:
    output_dir: Path
    pairs: int
    steps: int
    loss_history: list[float] = field(default_factory=list)

    @property
    def metrics(self) -> dict[str, float | None]:
        losses = self.loss_history
        return {
            "dpo_first_loss": losses[0] if losses else None,
            "dpo_final_loss": losses[-1] if losses else None,
            "steps": float(self.steps),
        }


def has_weights(path: str | Path) -> bool:
    directory = Path(path)
    return any(directory.glob("*.safetensors")) or any(directory.glob("*.bin"))


def check_base_model(path: str | Path) -> Path:
    """The base model directory, or ValueError saying why DPO cannot start from it."""
    directory = model_directory(path)  # ModelNotFoundError (a ValueError's cousin) without config.json
    if not has_weights(directory):
        raise ValueError(f"{path} has no weights (*.safetensors or *.bin): it is not a trainable model")
    config = json.loads((directory / "config.json").read_text(encoding="utf-8"))
    if config.get("is_encoder_decoder"):
        raise ValueError(f"{path} is an encoder-decoder model; DPO here trains decoder-only (chat) models")
    return directory


def _rows(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "prompt": [{"role": "user", "content": record["prompt"]}],
            "chosen": [{"role": "assistant", "content": record["chosen"]}],
            "rejected": [{"role": "assistant", "content": record["rejected"]}],
        }
        for record in records
    ]


def train_dpo(
    records: Sequence[dict[str, Any]],
    *,
    base_model: str | Path,
    output_dir: str | Path,
    settings: DPOSettings,
    device: str | None = None,
    progress: Callable[[int, int, float | None], None] | None = None,
) -> DPOResult:
    """Train and save; `progress(step, total_steps, loss)` after each logged step."""
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import DPOConfig, DPOTrainer

    directory = check_base_model(base_model)
    output = Path(output_dir)
    use_cpu = (device or ("cuda" if torch.cuda.is_available() else "cpu")).startswith("cpu")
    bf16 = not use_cpu and settings.precision != "fp32" and torch.cuda.is_bf16_supported()
    tokenizer = AutoTokenizer.from_pretrained(directory, local_files_only=True)
    if not getattr(tokenizer, "chat_template", None):
        raise ValueError(f"{base_model} has no chat template; DPO here trains chat models")
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(directory, local_files_only=True)
    per_epoch = math.ceil(len(records) / settings.batch_size)
    total = settings.max_steps or per_epoch * settings.epochs
    losses: list[float] = []

    class Progress(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):  # noqa: ANN001 - HF's signature
            if logs and "loss" in logs:
                losses.append(float(logs["loss"]))
                if progress is not None:
                    progress(state.global_step, total, losses[-1])

    peft_config = None
    if settings.lora:
        from peft import LoraConfig

        peft_config = LoraConfig(
            r=settings.lora_r,
            lora_alpha=settings.lora_alpha,
            task_type="CAUSAL_LM",
            target_modules="all-linear",
        )
    args = DPOConfig(
        output_dir=str(output / "trainer"),
        per_device_train_batch_size=settings.batch_size,
        num_train_epochs=settings.epochs,
        max_steps=settings.max_steps or -1,
        learning_rate=settings.learning_rate,
        beta=settings.beta,
        max_length=settings.max_length,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        seed=settings.seed,
        use_cpu=use_cpu,
        bf16=bf16,
        disable_tqdm=True,
    )
    trainer = DPOTrainer(
        model=model,
        args=args,
        train_dataset=Dataset.from_list(_rows(records)),
        processing_class=tokenizer,
        peft_config=peft_config,
        callbacks=[Progress()],
    )
    trainer.train()
    trained: Any = trainer.model
    if settings.lora:
        trained = trained.merge_and_unload()
    output.mkdir(parents=True, exist_ok=True)
    trained.save_pretrained(output)
    tokenizer.save_pretrained(output)
    (output / TRAINING_METADATA_FILE).write_text(
        json.dumps(
            {"method": "dpo", "base_model": str(directory), "pairs": len(records), **settings.as_dict()},
            indent=2,
        ),
        encoding="utf-8",
    )
    return DPOResult(
        output_dir=output, pairs=len(records), steps=trainer.state.global_step, loss_history=losses
    )
