"""Fine-tuning speed of ml.training.train_simplifier: the chosen device against the CPU, same run.

    .venv/bin/python bench/finetune.py                                  # tiny random T5, CPU vs CPU
    .venv/bin/python bench/finetune.py --device cuda --shape t5-small --steps 200 --batch-size 32

Builds a random T5 of `--shape` (tiny, or t5-small's layer sizes with random weights: no model hub
is reachable here) and synthetic (source, simplification) pairs from the bench sentences, then
trains it with the real training loop (checkpoints, validation with BLEU/FKGL/SARI at the end) for
`--steps` steps on `--device`, and for `--reference-steps` steps on the CPU as the reference. Prints
each run's optimizer steps per second, pairs per second, first and last loss, the validation
metrics, and the ratio device / CPU (steps per second). A loss that does not fall on a real device
is printed as such: the run is then not a result.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.inference import SENTENCES  # noqa: E402
from ml.training import TrainingConfig, train_simplifier  # noqa: E402
from tests.ml.tiny_models import build_tiny_t5  # noqa: E402

PLAIN = ["fluid near the left lung", "no serious problem in the heart or lungs", "wear in the spine"]


def pairs(n: int) -> list[tuple[str, str]]:
    # Numbered so that sources differ (the validation split is by source).
    return [
        (f"{SENTENCES[i % len(SENTENCES)]} Finding {i + 1}.", f"{PLAIN[i % len(PLAIN)]}, finding {i + 1}.")
        for i in range(n)
    ]


def run(base: Path, out: Path, data, *, device: str, steps: int, batch_size: int, precision: str):
    config = TrainingConfig(
        epochs=1000,
        batch_size=batch_size,
        max_steps=steps,
        checkpoint_every=max(steps, 1),
        log_every=1,
        precision=precision,
        validation_fraction=0.05,
        eval_max_new_tokens=24,
        eval_batch_size=64,
        learning_rate=1e-3,
    )
    # The time of each training step as the loop reports it (the loss is read back each step, so
    # the device has finished the step): steady-state speed excludes loading, the first steps
    # (kernel selection, allocator warm-up), checkpoints and validation.
    stamps: list[tuple[int, float]] = []

    def progress(report) -> None:
        if report.phase == "training":
            stamps.append((report.step, time.perf_counter()))

    started = time.perf_counter()
    result = train_simplifier(
        data, base_model=base, output_dir=out, config=config, device=device, resume=False, progress=progress
    )
    whole = time.perf_counter() - started
    skip = min(3, len(stamps) - 2)
    (first_step, first_t), (last_step, last_t) = stamps[skip], stamps[-1]
    return result, whole, (last_step - first_step) / (last_t - first_t)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--shape", default="tiny", help="tiny or t5-small (real layer sizes, random weights)")
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument(
        "--reference-steps", type=int, default=10, help="steps of the CPU reference run (≥ 6)"
    )
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--precision", default="auto", help="auto, fp32 or bf16 (the device run)")
    args = parser.parse_args()

    data = pairs(args.pairs)
    with tempfile.TemporaryDirectory() as tmp:
        base = build_tiny_t5(Path(tmp) / "base", shape=args.shape)
        rows = []
        for label, device, steps, precision in (
            ("cpu reference", "cpu", args.reference_steps, "fp32"),
            (f"{args.device} ({args.precision})", args.device, args.steps, args.precision),
        ):
            result, seconds, steady = run(
                base,
                Path(tmp) / label.split()[0],
                data,
                device=device,
                steps=steps,
                batch_size=args.batch_size,
                precision=precision,
            )
            rows.append((label, result, seconds, steady))

    print(f"model: random T5, shape {args.shape}; pairs: {args.pairs}; batch size {args.batch_size}")
    for label, result, seconds, steady in rows:
        print(
            f"{label:<22} {result.global_step:5d} steps, {seconds:7.2f} s in all; "
            f"steady {steady:7.2f} steps/s ({steady * args.batch_size:8.1f} pairs/s); "
            f"loss {result.loss_history[0]:.3f} -> {result.final_loss:.3f}"
        )
        print(f"{'':<22} validation: {result.validation_metrics}")
    (_, _, _, cpu_rate), (_, dev, _, dev_rate) = rows
    print(f"ratio {args.device} / cpu (steady training steps per second): {dev_rate / cpu_rate:.2f}x")
    if dev.final_loss >= dev.loss_history[0]:
        print("WARNING: the device run's loss did not fall")


if __name__ == "__main__":
    main()
