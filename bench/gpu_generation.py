"""Self-correction on a local model, four ways, each against the memory-bandwidth bound.

    .venv/bin/python bench/gpu_generation.py --smoke              # tiny random Llama, CPU, seconds
    python bench/gpu_generation.py --device cuda --random-shape tinyllama-1.1b \
        --batch-sizes 16,64,256 --max-rounds 1 --max-new-tokens 32          # a lent GPU
    python bench/gpu_generation.py --model /models/qwen2.5-1.5b-instruct --device cuda

Ways (the same sentences, greedy decoding, no call cache):

* one-at-a-time: run_self_correction on one sentence after another, each call a batch of one (HF
  `generate`), on `--alone-sentences` sentences (its tokens/s does not depend on the batch size);
* lockstep: run_self_correction_batch over B sentences, each protocol step one HF `generate` batch
  (what the gpu queue did before continuous batching, and still does for seq2seq models);
* hf-continuous: the same B sentences through transformers' ContinuousBatchingManager, every
  sentence's next request submitted the moment its answers are back (the transformers backend);
* vllm: the same through vLLM's engine (the vllm backend); skipped when vLLM is not installed.

For each, tokens/s (generated tokens / wall time) and the ratio to the memory-bandwidth bound
B · bandwidth / (P + B · L · k) of bench/bandwidth.py (B: the sentences in flight, 1 for
one-at-a-time; L: the mean context per generated token measured in the run; the device's bandwidth
from the table, or --bandwidth-gbs). See docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bandwidth import ModelShape, device_bandwidth, shape_from_config, tokens_per_second_bound  # noqa: E402
from bench.inference import SENTENCES, add_model_arguments, model_path  # noqa: E402
from generation.backends.base import GenerationParams  # noqa: E402
from generation.backends.transformers_backend import TransformersBackend  # noqa: E402
from generation.pipeline.self_correction import run_self_correction, run_self_correction_batch  # noqa: E402

SMOKE_BANDWIDTH_GBS = 20.0  # a nominal CPU figure for --smoke; pass --bandwidth-gbs for a real one


def sentences(n: int) -> list[str]:
    # Numbered so that no two sentences (and so no two prompts) are the same.
    return [f"{SENTENCES[i % len(SENTENCES)]} (finding {i + 1})" for i in range(n)]


class Lockstep:
    """A backend without submit/collect, so run_self_correction_batch runs in lockstep."""

    def __init__(self, backend: TransformersBackend) -> None:
        self.inner, self.name, self.model = backend, backend.name, backend.model

    def complete(self, messages, *, agent, params, context=None):
        return self.inner.complete(messages, agent=agent, params=params, context=context)

    def complete_batch(self, conversations, *, agent, params, contexts=None):
        return self.inner.complete_batch(conversations, agent=agent, params=params, contexts=contexts)


def batch_runner(backend: Any, options: dict[str, Any]):
    return lambda texts: run_self_correction_batch(texts, backend=backend, **options)


def alone_runner(backend: Any, options: dict[str, Any]):
    return lambda texts: [run_self_correction(text, backend=backend, **options) for text in texts]


def synchronize() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def model_shape(directory: str, bytes_per_value: int) -> ModelShape:
    """Parameter count from the config (a model built on the meta device: no memory, no weights)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(directory, local_files_only=True)
    with torch.device("meta"):
        parameters = sum(p.numel() for p in AutoModelForCausalLM.from_config(config).parameters())
    return shape_from_config(config.to_dict(), parameters=parameters, bytes_per_value=bytes_per_value)


def measure(run, texts: list[str]) -> dict[str, Any]:
    synchronize()
    started = time.perf_counter()
    results = run(texts)
    synchronize()
    seconds = time.perf_counter() - started
    turns = [t for r in results for t in r.transcript if t["role"] == "assistant"]
    tokens = sum(t["completion_tokens"] for t in turns)
    # Mean context of a generated token: a call with prompt p and c new tokens decodes at p+1 .. p+c.
    context_sum = sum(
        t["completion_tokens"] * t["prompt_tokens"]
        + t["completion_tokens"] * (t["completion_tokens"] + 1) / 2
        for t in turns
    )
    return {
        "seconds": seconds,
        "calls": len(turns),
        "tokens": tokens,
        "tokens_per_s": tokens / seconds if seconds else 0.0,
        "context": context_sum / tokens if tokens else 0.0,
        "sc_texts": [r.sc_text for r in results],
    }


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_model_arguments(parser)
    parser.add_argument("--batch-sizes", default="16,64,256", help="sentences in flight, comma-separated")
    parser.add_argument("--alone-sentences", type=int, default=4, help="sentences run one at a time")
    parser.add_argument("--max-rounds", type=int, default=1)
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--family", default="plain", choices=["plain", "cot"])
    parser.add_argument("--ways", default="one-at-a-time,lockstep,hf-continuous,vllm")
    parser.add_argument("--bandwidth-gbs", type=float, help="device memory bandwidth, GB/s (default: table)")
    parser.add_argument("--vllm-memory", type=float, default=0.8, help="vllm: share of GPU memory")
    parser.add_argument("--smoke", action="store_true", help="tiny model on the CPU, small sizes (a test)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    if args.smoke:
        args.device, args.random_shape = args.device or "cpu", "tiny"
        args.batch_sizes, args.alone_sentences, args.max_new_tokens = "2,4", 2, 4
        args.bandwidth_gbs = args.bandwidth_gbs or SMOKE_BANDWIDTH_GBS
    return args


def _vllm_rows(
    directory: Path,
    dtype: Any,
    device: Any,
    sizes: list[int],
    options: dict[str, Any],
    args: argparse.Namespace,
) -> list[dict[str, Any]]:
    """The vllm engine's figures at each batch size; none where vllm cannot run (said why)."""
    from generation.backends.vllm_backend import VLLMBackend, vllm_available, vllm_missing_message

    if not vllm_available():
        print(f"vllm: skipped ({vllm_missing_message()})")
        return []
    if device.type != "cuda":
        print("vllm: skipped (needs a GPU)")
        return []
    engine = VLLMBackend(
        model=directory,
        dtype=str(dtype).removeprefix("torch."),
        gpu_memory_utilization=args.vllm_memory,
    )
    run_self_correction_batch(sentences(2), backend=engine, **{**options, "max_rounds": 1})
    rows = [
        {"way": "vllm", "batch": size, **measure(batch_runner(engine, options), sentences(size))}
        for size in sizes
    ]
    engine.close()
    return rows


def _table_print(rows: list[dict[str, Any]], shape: ModelShape, bandwidth: float | None) -> None:
    """Each way's figures beside the bandwidth bound, and whether the faster ways wrote the same
    self-corrected texts as lockstep."""
    print(
        f"{'way':<14} {'B':>4} {'seconds':>8} {'calls':>6} {'tokens':>7} {'tokens/s':>10} {'L':>6} "
        f"{'bound tok/s':>12} {'ratio':>7}"
    )
    for row in rows:
        bound = (
            tokens_per_second_bound(shape, batch=row["batch"], context=row["context"], bandwidth=bandwidth)
            if bandwidth
            else None
        )
        row["bound_tokens_per_s"] = bound
        row["ratio"] = row["tokens_per_s"] / bound if bound else None
        print(
            f"{row['way']:<14} {row['batch']:>4} {row['seconds']:>8.2f} {row['calls']:>6} {row['tokens']:>7} "
            f"{row['tokens_per_s']:>10.1f} {row['context']:>6.0f} "
            + (f"{bound:>12.0f} {row['ratio']:>7.4f}" if bound else f"{'n/a':>12} {'n/a':>7}")
        )
    reference = {r["batch"]: r["sc_texts"] for r in rows if r["way"] == "lockstep"}
    for row in rows:
        if row["way"] in ("hf-continuous", "vllm") and row["batch"] in reference:
            same = sum(a == b for a, b in zip(reference[row["batch"]], row["sc_texts"], strict=True))
            print(f"{row['way']} B={row['batch']}: same SC texts as lockstep {same}/{row['batch']}")


def main() -> None:
    args = _arguments()
    import torch

    from ml.inference import clear_model_cache, resolve_device, resolve_dtype

    if args.smoke:
        torch.set_num_threads(1)
    ways = [w.strip() for w in args.ways.split(",") if w.strip()]
    sizes = [int(b) for b in args.batch_sizes.split(",") if b.strip()]
    device = resolve_device(args.device)
    dtype = resolve_dtype(args.dtype, device)
    params = GenerationParams(temperature=0.0, max_tokens=args.max_new_tokens)
    options = {"family": args.family, "params": params, "max_rounds": args.max_rounds}
    rows: list[dict[str, Any]] = []
    bandwidth = args.bandwidth_gbs * 1e9 if args.bandwidth_gbs else None
    device_name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    if bandwidth is None and device.type == "cuda":
        bandwidth = device_bandwidth(device_name)

    with tempfile.TemporaryDirectory() as tmp:
        directory = model_path(args.model, tmp, args.random_shape)
        shape = model_shape(directory, torch.tensor([], dtype=dtype).element_size())
        print(f"model: {directory} ({shape.parameters / 1e6:,.1f} M parameters, {dtype}) on {device_name}")
        print(
            f"P = {shape.parameter_bytes / 1e9:.4f} GB, k = {shape.kv_bytes_per_token} B/token "
            f"({shape.layers} layers x {shape.kv_heads} KV heads x {shape.head_dim} x 2 x "
            f"{shape.bytes_per_value} B), "
            f"bandwidth = {f'{bandwidth / 1e9:.0f} GB/s' if bandwidth else 'unknown (pass --bandwidth-gbs)'}"
            + (" (nominal, --smoke)" if args.smoke and args.bandwidth_gbs == SMOKE_BANDWIDTH_GBS else "")
        )
        print(
            f"max_rounds {args.max_rounds}, max_new_tokens {args.max_new_tokens}, "
            f"prompt {args.family}, greedy decoding"
        )
        hf = TransformersBackend(model=directory, device=str(device), dtype=str(dtype).removeprefix("torch."))
        if "one-at-a-time" in ways or "lockstep" in ways or "hf-continuous" in ways:
            run_self_correction_batch(
                sentences(2), backend=Lockstep(hf), **{**options, "max_rounds": 1}
            )  # warm-up
        if "one-at-a-time" in ways:
            row = measure(
                alone_runner(hf, options),
                sentences(args.alone_sentences),
            )
            rows.append({"way": "one-at-a-time", "batch": 1, **row})
        for size in sizes:
            texts = sentences(size)
            if "lockstep" in ways:
                hf.batch_size = size
                rows.append(
                    {
                        "way": "lockstep",
                        "batch": size,
                        **measure(batch_runner(Lockstep(hf), options), texts),
                    }
                )
            if "hf-continuous" in ways:
                if not hf.streams():
                    print("hf-continuous: skipped (not a decoder-only model with continuous batching)")
                else:
                    run_self_correction_batch(sentences(2), backend=hf, **{**options, "max_rounds": 1})
                    rows.append(
                        {
                            "way": "hf-continuous",
                            "batch": size,
                            **measure(batch_runner(hf, options), texts),
                        }
                    )
                    hf.close()  # its paged cache leaves the GPU to the next lockstep run
                    gc.collect()
                    if device.type == "cuda":
                        torch.cuda.empty_cache()
        hf.close()
        del hf
        clear_model_cache()
        gc.collect()
        if "vllm" in ways:
            rows += _vllm_rows(directory, dtype, device, sizes, options, args)

    _table_print(rows, shape, bandwidth)
    if args.json:
        for row in rows:
            row.pop("sc_texts", None)
        args.json.write_text(
            json.dumps({"device": device_name, "bandwidth": bandwidth, "rows": rows}, indent=2)
        )


if __name__ == "__main__":
    main()
