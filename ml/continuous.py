"""Continuous batching for a local decoder-only model, through Hugging Face transformers'
ContinuousBatchingManager (paged KV cache; a request joins the running batch as soon as it is
added and leaves it when it ends). Django-free.

`ContinuousGenerator` takes requests one by one (`submit`) and hands back the finished ones
(`results`), so a caller can put a job's next request in while other jobs' requests still run: the
transformers backend builds its submit/collect on it. Prompts are encoded exactly as
ml.inference.generate encodes them (chat template, source prefix); seq2seq models have no
continuous batching in transformers and are refused here (ml.inference.generate serves them).
"""

from __future__ import annotations

import threading
from typing import Any

from ml.inference import GenerationOutput, LoadedModel, Prompt, _encode_prompt, _eos_ids, _generation_config

# On the CPU (tests, smoke runs) a small fixed paged cache: sized from the free memory, as on a
# GPU, it would take many seconds to allocate for nothing.
CPU_CACHE = {"page_size": 16, "num_blocks": 256, "max_batch_tokens": 512, "use_cuda_graph": False}
POLL_SECONDS = 0.05


def supports_continuous_batching(loaded: LoadedModel) -> bool:
    return loaded.architecture == "causal" and hasattr(loaded.model, "init_continuous_batching")


class ContinuousGenerator:
    """One manager per sampling configuration (temperature, top_p, seed), started on first use."""

    def __init__(self, loaded: LoadedModel) -> None:
        if not supports_continuous_batching(loaded):
            raise ValueError(
                f"{loaded.path or 'this model'} is not a decoder-only model with continuous batching"
            )
        self.loaded = loaded
        self._managers: dict[tuple[float, float | None, int | None, int], Any] = {}
        self._pending: dict[str, tuple[Any, int, int]] = {}  # request id -> (manager, prompt length, max)
        self._lock = threading.Lock()

    def _manager(
        self, *, max_new_tokens: int, temperature: float, top_p: float | None, seed: int | None
    ) -> Any:
        from transformers.generation.configuration_utils import ContinuousBatchingConfig

        key = (temperature, top_p, seed, max_new_tokens)
        manager = self._managers.get(key)
        if manager is None:
            config = _generation_config(
                self.loaded, max_new_tokens=max_new_tokens, temperature=temperature, top_p=top_p
            )
            options: dict[str, Any] = dict(CPU_CACHE) if self.loaded.device.type == "cpu" else {}
            if seed is not None:
                options["seed"] = seed
            manager = self.loaded.model.init_continuous_batching(
                generation_config=config, continuous_batching_config=ContinuousBatchingConfig(**options)
            )
            manager.start()
            self._managers[key] = manager
        return manager

    def submit(
        self,
        request_id: str,
        prompt: Prompt,
        *,
        max_new_tokens: int,
        temperature: float,
        top_p: float | None = None,
        seed: int | None = None,
    ) -> None:
        input_ids = _encode_prompt(self.loaded, prompt)
        with self._lock:
            manager = self._manager(
                max_new_tokens=max_new_tokens, temperature=temperature, top_p=top_p, seed=seed
            )
            self._pending[request_id] = (manager, len(input_ids), max_new_tokens)
        manager.add_request(input_ids, request_id=request_id, max_new_tokens=max_new_tokens)

    def pending(self) -> int:
        return len(self._pending)

    def results(self) -> list[tuple[str, GenerationOutput]]:
        """Block until at least one submitted request finished; every finished one, in any order.
        A request the manager failed raises RuntimeError with its error."""
        finished: list[tuple[str, GenerationOutput]] = []
        while self._pending and not finished:
            for manager in {id(m): m for m, _, _ in self._pending.values()}.values():
                # Wait a little for the first result, then take only what is already there: the
                # caller submits the next requests of these answers' jobs while the rest run on.
                timeout = POLL_SECONDS
                while (result := manager.get_result(timeout=timeout)) is not None:
                    timeout = 0.0
                    if result.request_id in self._pending:
                        finished.append((result.request_id, self._output(result)))
                pending_here = any(m is manager for m, _, _ in self._pending.values())
                if pending_here and not manager.is_running():
                    raise RuntimeError("the continuous batching manager stopped with requests pending")
        return finished

    def _output(self, result: Any) -> GenerationOutput:
        _, prompt_tokens, max_new_tokens = self._pending.pop(result.request_id)
        if getattr(result, "error", None):
            raise RuntimeError(f"request {result.request_id} failed: {result.error}")
        tokens = list(result.generated_tokens)
        eos_ids = _eos_ids(self.loaded)
        end = next((k for k, t in enumerate(tokens) if t in eos_ids), None)
        if end is None:
            kept, reason = tokens, "length" if len(tokens) >= max_new_tokens else "stop"
        else:
            kept, reason = tokens[: end + 1], "stop"
        return GenerationOutput(
            text=self.loaded.tokenizer.decode(kept, skip_special_tokens=True).strip(),
            prompt_tokens=prompt_tokens,
            completion_tokens=len(kept),
            finish_reason=reason,  # type: ignore[arg-type]
        )

    def close(self) -> None:
        with self._lock:
            managers, self._managers = list(self._managers.values()), {}
            self._pending.clear()
        for manager in managers:
            manager.stop(block=True)
