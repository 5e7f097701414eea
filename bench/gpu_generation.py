"""Self-correction on a local model: many sentences in lockstep vs one job at a time.

    .venv/bin/python bench/gpu_generation.py                       # tiny random Llama on the CPU
    .venv/bin/python bench/gpu_generation.py --model /models/qwen2.5-1.5b-instruct --device cuda \
        --sentences 64 --batch-size 16 --max-rounds 3 --max-new-tokens 128

The reference is the way a gpu worker ran jobs before chunks: run_self_correction on one sentence
after another, every model call a batch of one. The other way is what a gpu task now does with a
chunk: run_self_correction_batch over `--batch-size` sentences at a time, each protocol step one
batched call. Both use the same TransformersBackend (greedy decoding, no call cache) on the same
sentences in this run; the script prints each wall time, the calls made, and the speed-up
(one-at-a-time time / lockstep time). Under greedy decoding both ways answer alike, so they make the
same calls; the script reports how many SC texts agree (bf16 padding may flip a token on a GPU).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.inference import SENTENCES, add_model_arguments, model_path  # noqa: E402
from generation.backends.base import GenerationParams  # noqa: E402
from generation.backends.transformers_backend import TransformersBackend  # noqa: E402
from generation.pipeline.self_correction import (  # noqa: E402
    run_self_correction,
    run_self_correction_batch,
)


def sentences(n: int) -> list[str]:
    # Numbered so that no two sentences (and so no two prompts) are the same.
    return [f"{SENTENCES[i % len(SENTENCES)]} (finding {i + 1})" for i in range(n)]


def synchronize(backend: TransformersBackend) -> None:
    loaded = backend._model()
    if loaded.device.type == "cuda":
        import torch

        torch.cuda.synchronize()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_model_arguments(parser)
    parser.add_argument("--sentences", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=16, help="sentences per lockstep chunk")
    parser.add_argument("--max-rounds", type=int, default=2)
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--family", default="plain", choices=["plain", "cot"])
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        backend = TransformersBackend(
            model=model_path(args.model, tmp, args.random_shape),
            device=args.device,
            dtype=args.dtype,
            batch_size=args.batch_size,
        )
        params = GenerationParams(temperature=0.0, max_tokens=args.max_new_tokens)
        options = {"backend": backend, "family": args.family, "params": params}
        texts = sentences(args.sentences)
        run_self_correction_batch(texts[:2], max_rounds=1, **options)  # warm-up: load, first kernels
        synchronize(backend)

        started = time.perf_counter()
        alone = [run_self_correction(text, max_rounds=args.max_rounds, **options) for text in texts]
        synchronize(backend)
        alone_s = time.perf_counter() - started

        started = time.perf_counter()
        together = []
        for start in range(0, len(texts), args.batch_size):
            chunk = texts[start : start + args.batch_size]
            together += run_self_correction_batch(chunk, max_rounds=args.max_rounds, **options)
        synchronize(backend)
        together_s = time.perf_counter() - started
        loaded = backend._model()

    print(f"model: {loaded.model_id} ({loaded.architecture}) on {loaded.device}, {loaded.dtype}")
    print(
        f"sentences: {args.sentences}, max_rounds: {args.max_rounds}, "
        f"max_new_tokens: {args.max_new_tokens}, prompt: {args.family}"
    )
    for label, results, seconds in (
        ("one job at a time", alone, alone_s),
        (f"lockstep (chunks of {args.batch_size})", together, together_s),
    ):
        calls = sum(r.calls for r in results)
        tokens = sum(r.completion_tokens for r in results)
        rounds = sum(r.rounds for r in results)
        print(
            f"{label:<26} {seconds:8.2f} s  {calls:5d} calls  {rounds:4d} rounds  "
            f"{tokens:7d} tokens  {tokens / seconds:9.1f} tokens/s"
        )
    same = sum(a.sc_text == b.sc_text and a.rounds == b.rounds for a, b in zip(alone, together, strict=True))
    print(f"same SC text and rounds: {same}/{len(texts)}")
    print(f"speed-up lockstep vs one at a time: {alone_s / together_s:.2f}x")


if __name__ == "__main__":
    main()
