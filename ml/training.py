"""Fine-tune a seq2seq simplifier (T5/BART family) on (source, simplification) pairs. Django-free.

A plain PyTorch loop rather than `Seq2SeqTrainer`: resuming then only depends on what this module
writes, the progress callback sees every step, and there is no `accelerate` dependency.

Layout of `output_dir` (every directory below is a loadable model directory)::

    output_dir/                     the final model, tokenizer, radlay_training.json (config, metrics)
    output_dir/checkpoints/step-00000100/   model + tokenizer + training_state.pt

Resuming (`resume=True`, the default) starts from the newest complete checkpoint: weights,
optimizer, LR scheduler, step, loss history and the RNG states (Python, torch CPU and CUDA).
The batch order of epoch *e* is a permutation drawn from ``seed`` and *e* alone, so a resumed run
sees exactly the batches the uninterrupted run would have seen. On a CPU a resumed run therefore
reproduces the uninterrupted run's losses exactly; on a GPU, non-deterministic kernels (atomics
in backward passes) can make them differ in the last digits.

The split into training and validation is by source (seeded), so one source's several reference
simplifications never straddle it. Validation reports teacher-forced loss, BLEU (sacrebleu, all
references of a source), mean FKGL (textstat) of the predictions and of the references, and corpus
SARI as EASSE computes it (`measures.metrics.reference.corpus_sari`; key "corpus_sari").
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
import random
import re
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import torch

from ml.corpora import CorpusRecord, SimplificationPair, pairs_to_records
from ml.inference import TRAINING_METADATA_FILE, generate, model_directory, resolve_device, wrap_model

logger = logging.getLogger(__name__)

CHECKPOINTS_DIR = "checkpoints"
STATE_FILE = "training_state.pt"
_CHECKPOINT_NAME = re.compile(r"^step-(\d+)$")
# Changing one of these between an interrupted run and its resumption would silently train a
# different model; the rest (checkpoint_every, log_every, eval settings) may change.
_RESUME_KEYS = (
    "epochs",
    "learning_rate",
    "batch_size",
    "weight_decay",
    "warmup_ratio",
    "max_grad_norm",
    "max_source_tokens",
    "max_target_tokens",
    "validation_fraction",
    "seed",
    "max_steps",
    "source_prefix",
    "precision",
)


@dataclass
class TrainingConfig:
    epochs: int = 3
    learning_rate: float = 3e-4
    batch_size: int = 8
    weight_decay: float = 0.01
    warmup_ratio: float = 0.0  # linear warmup over this fraction of all steps, then linear decay to 0
    max_grad_norm: float = 1.0
    max_source_tokens: int = 256
    max_target_tokens: int = 256
    validation_fraction: float = 0.1
    seed: int = 42
    checkpoint_every: int = 200  # steps; a checkpoint is also written at the last step
    keep_checkpoints: int = 2
    log_every: int = 1  # progress callback every N steps
    max_steps: int | None = None  # stop early (counts across epochs)
    source_prefix: str = ""  # e.g. "simplify: " for T5; inference adds it too (radlay_training.json)
    precision: str = "auto"  # auto (bf16 autocast on a GPU that has it, else fp32) | fp32 | bf16
    eval_max_new_tokens: int = 128
    eval_batch_size: int = 16

    def __post_init__(self) -> None:
        if self.epochs < 1 or self.batch_size < 1:
            raise ValueError("epochs and batch_size must be at least 1")
        if not 0 <= self.validation_fraction < 1:
            raise ValueError("validation_fraction must be in [0, 1)")
        if self.checkpoint_every < 1:
            raise ValueError("checkpoint_every must be at least 1")
        if self.precision not in ("auto", "fp32", "bf16"):
            raise ValueError("precision must be auto, fp32 or bf16")

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> TrainingConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(values) - known
        if unknown:
            raise ValueError(f"unknown training hyper-parameter(s): {', '.join(sorted(unknown))}")
        return cls(**values)

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class TrainingProgress:
    step: int
    total_steps: int
    epoch: float  # epochs completed, fractional
    loss: float | None  # mean training loss over the steps since the previous report
    eta_s: float | None
    phase: str = "training"  # training | validating | saving

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


ProgressCallback = Callable[[TrainingProgress], None]


@dataclass
class TrainingResult:
    output_dir: Path
    global_step: int
    total_steps: int
    train_size: int
    validation_size: int
    loss_history: list[float]
    epoch_losses: list[float]
    validation_metrics: dict[str, float | None] = field(default_factory=dict)
    resumed_from_step: int | None = None

    @property
    def final_loss(self) -> float:
        return self.loss_history[-1]


class TrainingCancelled(Exception):  # noqa: N818 - named for the outcome callers catch; importers use the name
    """`should_stop` asked to stop; a checkpoint at `step` was written, so the run can resume."""

    def __init__(self, step: int):
        super().__init__(f"training cancelled at step {step}")
        self.step = step


class ResumeMismatchError(ValueError):
    """The checkpoint was written by a run with other data or hyper-parameters."""


def split_records(
    records: Sequence[CorpusRecord], *, validation_fraction: float, seed: int
) -> tuple[list[CorpusRecord], list[CorpusRecord]]:
    """Seeded split by source. With at least two sources and a positive fraction, validation gets
    at least one source and training keeps at least one."""
    shuffled = list(records)
    random.Random(seed).shuffle(shuffled)
    n_val = round(len(shuffled) * validation_fraction)
    n_val = min(max(n_val, 1), len(shuffled) - 1) if validation_fraction > 0 and len(shuffled) >= 2 else 0
    return shuffled[n_val:], shuffled[:n_val]


def latest_checkpoint(output_dir: str | Path) -> Path | None:
    """The newest complete checkpoint (its training_state.pt is written last), or None."""
    root = Path(output_dir) / CHECKPOINTS_DIR
    if not root.is_dir():
        return None
    found = [
        (int(m.group(1)), p)
        for p in root.iterdir()
        if (m := _CHECKPOINT_NAME.match(p.name)) and (p / STATE_FILE).is_file()
    ]
    return max(found)[1] if found else None


def _fingerprint(pairs: Sequence[SimplificationPair]) -> str:
    digest = hashlib.sha256()
    for pair in pairs:
        digest.update(pair.source.encode("utf-8") + b"\x00" + pair.target.encode("utf-8") + b"\x01")
    return digest.hexdigest()


def _rng_state() -> dict[str, Any]:
    return {
        "python": random.getstate(),
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
    }


def _set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    torch.set_rng_state(state["torch"])
    if state.get("cuda") and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def _use_bf16(precision: str, device: torch.device) -> bool:
    if precision == "bf16":
        return True
    return precision == "auto" and device.type == "cuda" and torch.cuda.is_bf16_supported()


class _Batcher:
    def __init__(self, tokenizer: Any, config: TrainingConfig, device: torch.device):
        self.tokenizer, self.config, self.device = tokenizer, config, device

    def __call__(self, pairs: Sequence[SimplificationPair]) -> dict[str, torch.Tensor]:
        sources = [self.config.source_prefix + p.source for p in pairs]
        encoded = self.tokenizer(
            sources,
            padding=True,
            truncation=True,
            max_length=self.config.max_source_tokens,
            return_tensors="pt",
        )
        # text_target: tokenizers that treat targets differently (language codes, Marian) do so here.
        targets = self.tokenizer(
            text_target=[p.target for p in pairs],
            padding=True,
            truncation=True,
            max_length=self.config.max_target_tokens,
            return_tensors="pt",
        )
        labels = targets["input_ids"]
        # Padding does not count in the loss (by mask, not by id: some tokenizers pad with EOS).
        labels[targets["attention_mask"] == 0] = -100
        return {
            "input_ids": encoded["input_ids"].to(self.device),
            "attention_mask": encoded["attention_mask"].to(self.device),
            "labels": labels.to(self.device),
        }


def _epoch_order(n: int, *, seed: int, epoch: int) -> list[int]:
    # Depends on (seed, epoch) only, never on RNG state, so resuming mid-epoch replays the same order.
    generator = torch.Generator().manual_seed(seed * 1_000_003 + epoch)
    return torch.randperm(n, generator=generator).tolist()


def _write_checkpoint(
    output_dir: Path, *, model: Any, tokenizer: Any, step: int, state: dict[str, Any], keep: int
) -> Path:
    root = output_dir / CHECKPOINTS_DIR
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"step-{step:08d}"
    partial = root / f".step-{step:08d}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    model.save_pretrained(partial)
    tokenizer.save_pretrained(partial)
    torch.save(state, partial / STATE_FILE)
    shutil.rmtree(final, ignore_errors=True)
    partial.rename(final)  # a checkpoint directory either is complete or does not exist
    checkpoints = sorted(
        (int(m.group(1)), p) for p in root.iterdir() if (m := _CHECKPOINT_NAME.match(p.name))
    )
    for _, old in checkpoints[: max(len(checkpoints) - keep, 0)]:
        shutil.rmtree(old, ignore_errors=True)
    return final


@torch.no_grad()
def _validation_loss(
    model: Any, batcher: _Batcher, pairs: Sequence[SimplificationPair], batch_size: int, bf16: bool
) -> float:
    total, tokens = 0.0, 0
    for start in range(0, len(pairs), batch_size):
        batch = batcher(pairs[start : start + batch_size])
        with torch.autocast(device_type=batcher.device.type, dtype=torch.bfloat16, enabled=bf16):
            logits = model(**batch).logits
        loss = torch.nn.functional.cross_entropy(
            logits.float().view(-1, logits.size(-1)),
            batch["labels"].view(-1),
            ignore_index=-100,
            reduction="sum",
        )
        total += loss.item()
        tokens += int((batch["labels"] != -100).sum())
    return total / max(tokens, 1)


def evaluate_simplifier(
    model: Any,
    tokenizer: Any,
    records: Sequence[CorpusRecord],
    *,
    config: TrainingConfig,
    device: torch.device,
) -> dict[str, float | None]:
    """Validation metrics of `model` on `records` (greedy decoding, all references per source)."""
    import sacrebleu
    import textstat

    from measures.metrics.reference import corpus_sari  # Django-free, like this module

    if not records:
        return {}
    model.eval()
    pairs = [SimplificationPair(r.source, t) for r in records for t in r.targets]
    batcher = _Batcher(tokenizer, config, device)
    loss = _validation_loss(
        model, batcher, pairs, config.eval_batch_size, _use_bf16(config.precision, device)
    )
    loaded = wrap_model(model, tokenizer, source_prefix=config.source_prefix)
    sources = [r.source for r in records]
    predictions = [
        o.text
        for o in generate(
            loaded,
            sources,
            max_new_tokens=config.eval_max_new_tokens,
            temperature=0,
            batch_size=config.eval_batch_size,
        )
    ]
    references = [list(r.targets) for r in records]
    most = max(len(r) for r in references)
    # sacrebleu takes one stream per reference position; None marks a source with fewer references.
    streams = [[refs[k] if k < len(refs) else None for refs in references] for k in range(most)]
    # sacrebleu types the streams as str only, but takes None for a missing reference.
    bleu = sacrebleu.corpus_bleu(predictions, streams).score  # type: ignore[arg-type]
    metrics: dict[str, float | None] = {
        "loss": loss,
        "bleu": bleu,
        # FKGL per text, averaged: the protocol reports readability per simplification.
        "fkgl": sum(textstat.flesch_kincaid_grade(p) for p in predictions) / len(predictions),
        "fkgl_reference": sum(textstat.flesch_kincaid_grade(r[0]) for r in references) / len(references),
        "corpus_sari": corpus_sari(sources, predictions, references),
        "n_sources": float(len(records)),
    }
    model.train()
    return metrics


def train_simplifier(
    pairs: Sequence[SimplificationPair | tuple[str, str]],
    *,
    base_model: str | Path,
    output_dir: str | Path,
    config: TrainingConfig | None = None,
    progress: ProgressCallback | None = None,
    should_stop: Callable[[], bool] | None = None,
    resume: bool = True,
    device: str | torch.device | None = None,
) -> TrainingResult:
    """Fine-tune the seq2seq model at `base_model` on `pairs`; write it to `output_dir`.

    `progress` is called every `config.log_every` steps and around validation and saving; an
    exception it raises interrupts training (the last checkpoint stays). `should_stop` is polled
    every step: when it returns True a checkpoint is written and TrainingCancelled is raised.
    With `resume=False` existing checkpoints under `output_dir` are discarded.
    """
    from transformers import AutoConfig, AutoModelForSeq2SeqLM, AutoTokenizer, get_linear_schedule_with_warmup

    config = config or TrainingConfig()
    output_dir = Path(output_dir)
    base_dir = model_directory(base_model)
    if not getattr(AutoConfig.from_pretrained(base_dir, local_files_only=True), "is_encoder_decoder", False):
        raise ValueError(
            f"{base_model} is a decoder-only model; radlay fine-tunes encoder-decoder (T5/BART-family) "
            "simplifiers only"
        )
    torch_device = resolve_device(device)
    bf16 = _use_bf16(config.precision, torch_device)

    records = pairs_to_records(pairs)
    train_records, validation_records = split_records(
        records, validation_fraction=config.validation_fraction, seed=config.seed
    )
    train_pairs = [SimplificationPair(r.source, t) for r in train_records for t in r.targets]
    if not train_pairs:
        raise ValueError("no training pairs")
    steps_per_epoch = math.ceil(len(train_pairs) / config.batch_size)
    total_steps = config.epochs * steps_per_epoch
    if config.max_steps is not None:
        total_steps = min(total_steps, config.max_steps)
    fingerprint = _fingerprint(train_pairs)

    checkpoint, state = _resume_point(output_dir, resume=resume, config=config, fingerprint=fingerprint)

    torch.manual_seed(config.seed)
    random.seed(config.seed)
    weights_dir = checkpoint if checkpoint is not None else base_dir
    # Master weights stay fp32 whatever the checkpoint's dtype; bf16 is only used under autocast.
    model = AutoModelForSeq2SeqLM.from_pretrained(weights_dir, local_files_only=True, dtype=torch.float32)
    model.to(torch_device)
    model.train()
    tokenizer = AutoTokenizer.from_pretrained(base_dir, local_files_only=True)

    optimizer = torch.optim.AdamW(_parameter_groups(model, config.weight_decay), lr=config.learning_rate)
    scheduler = get_linear_schedule_with_warmup(
        optimizer, num_warmup_steps=round(config.warmup_ratio * total_steps), num_training_steps=total_steps
    )

    step = 0
    loss_history: list[float] = []
    resumed_from: int | None = None
    if state is not None:
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        step = int(state["step"])
        loss_history = [float(x) for x in state["loss_history"]]
        _set_rng_state(state["rng"])
        resumed_from = step
        logger.info("resuming training from %s (step %d of %d)", checkpoint, step, total_steps)

    validation_size = sum(len(r.targets) for r in validation_records)
    metadata: dict[str, Any] = {
        "base_model": str(base_dir),
        "architecture": "seq2seq",
        "config": config.as_dict(),
        "train_size": len(train_pairs),
        "validation_size": validation_size,
        "data_fingerprint": fingerprint,
        "source_prefix": config.source_prefix,
    }

    def checkpoint_state() -> dict[str, Any]:
        return {
            "step": step,
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "loss_history": list(loss_history),
            "rng": _rng_state(),
            "config": config.as_dict(),
            "data_fingerprint": fingerprint,
            "total_steps": total_steps,
        }

    def report(loss: float | None, eta: float | None, phase: str = "training") -> None:
        if progress is not None:
            progress(
                TrainingProgress(
                    step=step,
                    total_steps=total_steps,
                    epoch=step / steps_per_epoch,
                    loss=loss,
                    eta_s=eta,
                    phase=phase,
                )
            )

    batcher = _Batcher(tokenizer, config, torch_device)
    started, start_step = time.monotonic(), step
    window: list[float] = []
    while step < total_steps:
        epoch, offset = divmod(step, steps_per_epoch)
        order = _epoch_order(len(train_pairs), seed=config.seed, epoch=epoch)
        batch_index = offset
        while batch_index < steps_per_epoch and step < total_steps:
            chosen = order[batch_index * config.batch_size : (batch_index + 1) * config.batch_size]
            batch = batcher([train_pairs[i] for i in chosen])
            with torch.autocast(device_type=torch_device.type, dtype=torch.bfloat16, enabled=bf16):
                loss = model(**batch).loss
            loss.backward()
            if config.max_grad_norm > 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), config.max_grad_norm)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            batch_index += 1
            loss_value = float(loss.detach())
            loss_history.append(loss_value)
            window.append(loss_value)

            cancelled = should_stop is not None and should_stop()
            if step % config.checkpoint_every == 0 or step == total_steps or cancelled:
                _write_checkpoint(
                    output_dir,
                    model=model,
                    tokenizer=tokenizer,
                    step=step,
                    state=checkpoint_state(),
                    keep=config.keep_checkpoints,
                )
            if cancelled:
                raise TrainingCancelled(step)
            if step % config.log_every == 0 or step == total_steps:
                elapsed = time.monotonic() - started
                done = step - start_step
                eta = elapsed / done * (total_steps - step) if done else None
                report(sum(window) / len(window), eta)
                window = []

    report(loss_history[-1] if loss_history else None, None, phase="validating")
    with torch.random.fork_rng(
        devices=[torch_device.index or 0] if torch_device.type == "cuda" else [], enabled=True
    ):
        metrics = evaluate_simplifier(
            model, tokenizer, validation_records, config=config, device=torch_device
        )

    report(loss_history[-1] if loss_history else None, 0.0, phase="saving")
    epoch_losses = [
        sum(chunk) / len(chunk)
        for chunk in (
            loss_history[i : i + steps_per_epoch] for i in range(0, len(loss_history), steps_per_epoch)
        )
    ]
    output_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(output_dir)
    tokenizer.save_pretrained(output_dir)
    metadata.update(
        global_step=step,
        total_steps=total_steps,
        validation_metrics=metrics,
        epoch_losses=epoch_losses,
        finished_at=datetime.now(UTC).isoformat(),
    )
    (output_dir / TRAINING_METADATA_FILE).write_text(json.dumps(metadata, indent=2), encoding="utf-8")
    return TrainingResult(
        output_dir=output_dir,
        global_step=step,
        total_steps=total_steps,
        train_size=len(train_pairs),
        validation_size=validation_size,
        loss_history=loss_history,
        epoch_losses=epoch_losses,
        validation_metrics=metrics,
        resumed_from_step=resumed_from,
    )


def _resume_point(
    output_dir: Path, *, resume: bool, config: TrainingConfig, fingerprint: str
) -> tuple[Path | None, dict[str, Any] | None]:
    """The latest checkpoint under `output_dir` and its saved state, checked to continue this run;
    (None, None) to start afresh (with `resume=False` the checkpoints are discarded)."""
    checkpoint = latest_checkpoint(output_dir) if resume else None
    if not resume:
        shutil.rmtree(output_dir / CHECKPOINTS_DIR, ignore_errors=True)
    state: dict[str, Any] | None = None
    if checkpoint is not None:
        state = torch.load(checkpoint / STATE_FILE, map_location="cpu", weights_only=True)
        _check_resumable(state, config=config, fingerprint=fingerprint, checkpoint=checkpoint)
    return checkpoint, state


def _parameter_groups(model: Any, weight_decay: float) -> list[dict[str, Any]]:
    """AdamW's parameter groups: weight decay on the weights, none on biases and layer norms."""
    no_decay = ("bias", "layer_norm", "layernorm", "LayerNorm")
    return [
        {
            "params": [p for n, p in model.named_parameters() if not any(k in n for k in no_decay)],
            "weight_decay": weight_decay,
        },
        {
            "params": [p for n, p in model.named_parameters() if any(k in n for k in no_decay)],
            "weight_decay": 0.0,
        },
    ]


def _check_resumable(
    state: dict[str, Any], *, config: TrainingConfig, fingerprint: str, checkpoint: Path
) -> None:
    if state.get("data_fingerprint") != fingerprint:
        raise ResumeMismatchError(
            f"{checkpoint} was trained on different pairs; pass resume=False (or another output directory) "
            "to start over"
        )
    saved = state.get("config", {})
    changed = [k for k in _RESUME_KEYS if saved.get(k) != getattr(config, k)]
    if changed:
        raise ResumeMismatchError(
            f"{checkpoint} was written with other hyper-parameters ({', '.join(changed)}); pass resume=False "
            "to start over"
        )
