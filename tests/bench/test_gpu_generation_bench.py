"""bench/bandwidth.py against a real model (its parameter count and the bytes its KV cache holds
after a forward pass), and bench/gpu_generation.py's smoke mode end to end on the CPU. The GPU
figures themselves come from bench/gpu_session.sh on a lent GPU, never from a test."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from bench.bandwidth import device_bandwidth, shape_from_config, tokens_per_second_bound

REPO = Path(__file__).resolve().parents[2]


def test_parameter_and_kv_bytes_are_those_of_the_model(tmp_path):
    from transformers import AutoModelForCausalLM

    from tests.ml.tiny_models import build_tiny_causal_lm  # torch: imported where it runs

    directory = build_tiny_causal_lm(tmp_path / "m")
    model = AutoModelForCausalLM.from_pretrained(directory, dtype=torch.bfloat16)
    shape = shape_from_config(model.config.to_dict(), parameters=model.num_parameters(), bytes_per_value=2)
    assert shape.parameter_bytes == sum(p.numel() * p.element_size() for p in model.parameters())
    tokens = 37
    with torch.inference_mode():
        cache = model(torch.arange(4, 4 + tokens)[None], use_cache=True).past_key_values
    held = 0
    for layer in cache.layers:
        held += (
            layer.keys.numel() * layer.keys.element_size()
            + layer.values.numel() * layer.values.element_size()
        )
    assert held == tokens * shape.kv_bytes_per_token


def test_the_bound_and_the_table():
    # TinyLlama-1.1B in bf16 on an H100 SXM: 22 layers, 4 KV heads of 64.
    shape = shape_from_config(
        {"hidden_size": 2048, "num_hidden_layers": 22, "num_attention_heads": 32, "num_key_value_heads": 4},
        parameters=1_100_048_384,
        bytes_per_value=2,
    )
    assert shape.kv_bytes_per_token == 2 * 22 * 4 * 64 * 2
    bandwidth = device_bandwidth("NVIDIA H100 80GB HBM3")
    assert bandwidth == 3.35e12 and device_bandwidth("NVIDIA H100 PCIe") == 2.0e12
    assert device_bandwidth("NVIDIA H200") == 4.8e12 and device_bandwidth("a toaster") is None
    one = tokens_per_second_bound(shape, batch=1, context=0, bandwidth=bandwidth)
    assert one == pytest.approx(bandwidth / shape.parameter_bytes)  # weights only: ~1,520 steps/s
    b64 = tokens_per_second_bound(shape, batch=64, context=512, bandwidth=bandwidth)
    step_bytes = shape.parameter_bytes + 64 * 512 * shape.kv_bytes_per_token
    assert b64 == pytest.approx(64 / (step_bytes / bandwidth))
    with pytest.raises(ValueError):
        tokens_per_second_bound(shape, batch=0, context=1, bandwidth=1)


@pytest.mark.heavy
def test_the_bench_smoke_mode_prints_ratios(tmp_path):
    out = tmp_path / "figures.json"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "bench/gpu_generation.py", "--smoke", "--batch-sizes", "2", "--json", str(out)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "vllm: skipped" in done.stdout or "vllm " in done.stdout
    figures = json.loads(out.read_text())
    ways = {row["way"] for row in figures["rows"]}
    assert {"one-at-a-time", "lockstep", "hf-continuous"} <= ways
    for row in figures["rows"]:
        assert row["tokens"] > 0 and 0 < row["ratio"] < 1  # a bound is never beaten
    assert "same SC texts as lockstep 2/2" in done.stdout
