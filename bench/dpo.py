"""DPO fine-tuning speed (ml.dpo, TRL's DPOTrainer) on synthetic preference pairs.

    .venv/bin/python bench/dpo.py                                   # tiny random Llama, CPU
    python bench/dpo.py --device cuda --random-shape tinyllama-1.1b --lora --steps 20

Prints optimiser steps/s and pairs/s, and the DPO loss at the first and last step. With random
weights the figures say what the device buys, not what DPO teaches.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.inference import SENTENCES, add_model_arguments, model_path  # noqa: E402


def pairs(n: int) -> list[dict[str, str]]:
    return [
        {
            "prompt": f"Simplify for a patient: {SENTENCES[i % len(SENTENCES)]}",
            "chosen": "There is a little fluid near the lung; it is usually not serious.",
            "rejected": SENTENCES[i % len(SENTENCES)],
        }
        for i in range(n)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_model_arguments(parser)
    parser.add_argument("--pairs", type=int, default=64)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--lora", action="store_true")
    args = parser.parse_args()
    try:
        import trl  # noqa: F401
    except ImportError:
        print("dpo: skipped (trl is not installed: pip install -r requirements.txt)")
        return
    from ml.dpo import DPOSettings, train_dpo

    with tempfile.TemporaryDirectory() as tmp:
        directory = model_path(args.model, tmp, args.random_shape)
        settings = DPOSettings(
            max_steps=args.steps,
            batch_size=args.batch_size,
            learning_rate=args.lr,
            lora=args.lora,
            max_length=256,
        )
        started = time.perf_counter()
        result = train_dpo(
            pairs(args.pairs),
            base_model=directory,
            output_dir=Path(tmp) / "out",
            settings=settings,
            device=args.device,
        )
        seconds = time.perf_counter() - started
    losses = result.loss_history
    kind = "LoRA " if args.lora else ""
    print(f"DPO {kind}on {directory}: {result.steps} steps in {seconds:.1f} s (load and save included)")
    print(f"{result.steps / seconds:.2f} steps/s, {result.steps * args.batch_size / seconds:.1f} pairs/s")
    print(f"loss {losses[0]:.4f} -> {losses[-1]:.4f}")


if __name__ == "__main__":
    main()
