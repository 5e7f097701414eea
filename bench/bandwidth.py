"""The memory-bandwidth bound of decoding, for bench/gpu_generation.py. No Django, no torch.

A decode step of a batch of B sequences reads every weight once and, for each sequence, the keys
and values of its context (L tokens on average):

    bytes per step  = P + B · L · k
    P               = parameter count × bytes per parameter
    k (KV bytes per token) = 2 (keys and values) × layers × KV heads × head size × bytes per value
    step time      >= bytes per step / bandwidth
    tokens/s bound  = B · bandwidth / (P + B · L · k)

Compute, kernel launches and the prompt's prefill are left out, so no engine reaches the bound; the
ratio measured / bound says how much of the memory system a way of generating uses.
"""

from __future__ import annotations

from dataclasses import dataclass

# Peak memory bandwidth, bytes/s, from the vendors' data sheets. Matched on the device name
# (torch.cuda.get_device_name), longest key first.
BANDWIDTH: dict[str, float] = {
    "H200": 4.8e12,
    "H100 NVL": 3.9e12,
    "H100 PCIe": 2.0e12,
    "H100": 3.35e12,  # SXM5 80GB HBM3
    "GH200": 4.0e12,
    "A100-SXM4-80GB": 2.039e12,
    "A100 80GB PCIe": 1.935e12,
    "A100": 1.555e12,  # 40GB
    "L40S": 0.864e12,
    "L4": 0.3e12,
    "A10G": 0.6e12,
    "A10": 0.6e12,
    "RTX 4090": 1.008e12,
    "V100": 0.9e12,
    "T4": 0.32e12,
}


def device_bandwidth(name: str) -> float | None:
    """The table's bandwidth for a device name, or None when it is not in the table."""
    for key in sorted(BANDWIDTH, key=len, reverse=True):
        if key.lower() in name.lower():
            return BANDWIDTH[key]
    return None


@dataclass(frozen=True)
class ModelShape:
    parameters: int
    layers: int
    kv_heads: int
    head_dim: int
    bytes_per_value: int  # 2 for bf16/fp16, 4 for fp32

    @property
    def parameter_bytes(self) -> int:
        return self.parameters * self.bytes_per_value

    @property
    def kv_bytes_per_token(self) -> int:
        return 2 * self.layers * self.kv_heads * self.head_dim * self.bytes_per_value


def shape_from_config(config: dict, *, parameters: int, bytes_per_value: int) -> ModelShape:
    """A Llama-style config.json (hidden_size, num_hidden_layers, num_attention_heads,
    num_key_value_heads, head_dim when given)."""
    heads = int(config["num_attention_heads"])
    head_dim = int(config.get("head_dim") or int(config["hidden_size"]) // heads)
    return ModelShape(
        parameters=parameters,
        layers=int(config["num_hidden_layers"]),
        kv_heads=int(config.get("num_key_value_heads") or heads),
        head_dim=head_dim,
        bytes_per_value=bytes_per_value,
    )


def tokens_per_second_bound(shape: ModelShape, *, batch: int, context: float, bandwidth: float) -> float:
    """B · bandwidth / (P + B · L · k): decoded tokens per second at the memory-bandwidth limit."""
    if batch < 1 or context < 0 or bandwidth <= 0:
        raise ValueError("batch >= 1, context >= 0 and bandwidth > 0")
    return batch * bandwidth / (shape.parameter_bytes + batch * context * shape.kv_bytes_per_token)
