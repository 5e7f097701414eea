"""Throughput of batched vs one-at-a-time local generation (ml.inference).

    .venv/bin/python bench/inference.py                              # tiny random Llama, built in a tmp dir
    .venv/bin/python bench/inference.py --model /models/qwen2.5-1.5b --device cuda \
        --prompts 64 --batch-size 16

Prints generated tokens per second for both ways and their ratio (batched / one-at-a-time),
both measured in this run on the same prompts with greedy decoding. The reference is the
one-at-a-time run; a ratio above 1 is the speed-up batching buys.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ml.inference import generate, load_model  # noqa: E402

SENTENCES = [
    "There is a small left pleural effusion with adjacent atelectasis.",
    "No acute cardiopulmonary abnormality.",
    "Mild degenerative changes of the thoracic spine.",
    "Cardiomegaly with pulmonary vascular congestion, suggestive of mild interstitial edema.",
    "Patchy opacity in the right lower lobe may represent aspiration or pneumonia.",
    "The endotracheal tube terminates 4 cm above the carina.",
    "Interval increase in size of the right upper lobe nodule, now measuring 9 mm.",
    "Postsurgical changes of median sternotomy and coronary artery bypass grafting.",
]


def prompts(n: int) -> list[list[dict[str, str]]]:
    return [
        [
            {"role": "system", "content": "You explain radiology reports to patients in plain words."},
            {"role": "user", "content": f"Simplify: {SENTENCES[i % len(SENTENCES)]}"},
        ]
        for i in range(n)
    ]


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", help="local model directory (default: a tiny random Llama built offline)")
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    parser.add_argument("--dtype", default=None, help="float32, bfloat16, float16 (default: auto)")
    parser.add_argument(
        "--random-shape",
        default="tiny",
        help="without --model: the random Llama's shape, tiny or tinyllama-1.1b "
        "(real layer sizes, random weights)",
    )


def model_path(model: str | None, tmp: str, shape: str = "tiny") -> str:
    """The --model directory, or a random Llama of `shape` built in `tmp`."""
    if model is not None:
        return model
    from tests.ml.tiny_models import build_tiny_causal_lm

    return str(build_tiny_causal_lm(Path(tmp) / f"random-llama-{shape}", shape=shape))


def timed(loaded, batch, *, batch_size: int, max_new_tokens: int) -> tuple[float, int]:
    started = time.perf_counter()
    outputs = generate(loaded, batch, temperature=0, max_new_tokens=max_new_tokens, batch_size=batch_size)
    if loaded.device.type == "cuda":
        import torch

        torch.cuda.synchronize()
    return time.perf_counter() - started, sum(o.completion_tokens for o in outputs)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_model_arguments(parser)
    parser.add_argument("--prompts", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=32)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        loaded = load_model(
            model_path(args.model, tmp, args.random_shape), device=args.device, dtype=args.dtype
        )
        batch = prompts(args.prompts)
        timed(loaded, batch[: args.batch_size], batch_size=args.batch_size, max_new_tokens=4)  # warm-up
        single_s, single_tokens = timed(loaded, batch, batch_size=1, max_new_tokens=args.max_new_tokens)
        batched_s, batched_tokens = timed(
            loaded, batch, batch_size=args.batch_size, max_new_tokens=args.max_new_tokens
        )

    single_rate = single_tokens / single_s
    batched_rate = batched_tokens / batched_s
    print(f"model: {loaded.model_id} ({loaded.architecture}) on {loaded.device}, {loaded.dtype}")
    print(f"prompts: {args.prompts}, max_new_tokens: {args.max_new_tokens}")
    rows = [("one at a time", single_tokens, single_s, single_rate)]
    rows.append((f"batched (size {args.batch_size})", batched_tokens, batched_s, batched_rate))
    for label, tokens, seconds, rate in rows:
        print(f"{label:<20} {tokens:6d} tokens in {seconds:7.2f} s = {rate:9.1f} tokens/s")
    print(f"ratio batched / one-at-a-time: {batched_rate / single_rate:.2f}x")


if __name__ == "__main__":
    main()
