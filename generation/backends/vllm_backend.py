"""Chat backend for a local model served by vLLM's engine, in the GPU worker's process. Django-free.

Why in-process (`vllm.LLM(...).llm_engine`) and not a `vllm serve` subprocess: the gpu worker
already keeps one model per process across jobs (`--concurrency 1`), the engine's
`add_request`/`step` pair is exactly the submit/collect interface the self-correction driver needs
(each job puts its next request in the moment its previous answer ends; the engine's continuous
batching and paged attention keep the device full), and there is no port, no health check, no HTTP
and JSON per token, and no orphaned server when a worker dies. A separately run `vllm serve` is
still usable through the `openai` backend (OPENAI_BASE_URL=http://host:8000/v1).

vLLM is an optional dependency (`pip install -r requirements-gpu.txt`): without it the backend is not offered
(generation.backends.registry) and building one says how to install it. Prompts are rendered with
the model's own chat template into token ids (the same rendering as the transformers backend), so
vLLM never re-tokenizes. The throughput is measured on a GPU only (bench/gpu_generation.py); the
CPU test suite checks the request/response handling and the lifecycle against a fake engine with
vLLM's interface (tests/generation/test_vllm_backend.py).
"""

from __future__ import annotations

import importlib
import importlib.util
import itertools
import threading
from pathlib import Path
from typing import Any

from generation.backends.base import BackendError, Completion, GenerationParams
from generation.backends.streaming import Request, complete_all

INSTALL_COMMAND = "pip install -r requirements-gpu.txt"
DEFAULT_MAX_TOKENS = 512


def vllm_available() -> bool:
    return importlib.util.find_spec("vllm") is not None


def vllm_missing_message() -> str:
    return f"vLLM is not installed on this machine; install it with: {INSTALL_COMMAND}"


def _vllm() -> Any:
    try:
        return importlib.import_module("vllm")
    except ImportError as exc:
        raise BackendError(f"{vllm_missing_message()} ({exc})") from exc


def _message_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(part.get("text", "") for part in content if isinstance(part, dict))


class VLLMBackend:
    name = "vllm"

    def __init__(
        self,
        *,
        model: str,
        dtype: str | None = None,
        gpu_memory_utilization: float = 0.85,
        max_model_len: int | None = None,
        engine: Any = None,
    ) -> None:
        """`model` is a local model directory (config.json, weights, tokenizer). `engine` is for
        tests: an object with vLLM's LLMEngine interface (add_request, step,
        has_unfinished_requests, get_tokenizer)."""
        self.model = model
        self.dtype = dtype
        self.gpu_memory_utilization = gpu_memory_utilization
        self.max_model_len = max_model_len
        self._engine = engine
        self._lock = threading.Lock()
        self._ids = itertools.count()
        # engine request id -> (caller's key, prompt length)
        self._pending: dict[str, tuple[str, int]] = {}

    # --- lifecycle ---------------------------------------------------------------------------------

    def streams(self) -> bool:
        return True

    def _load(self) -> Any:
        directory = Path(self.model).expanduser()
        if not (directory / "config.json").is_file():
            raise BackendError(f"{self.model!r} is not a local model directory (no config.json)")
        if not any(directory.glob("*.safetensors")) and not any(directory.glob("*.bin")):
            raise BackendError(f"{self.model!r} has no weights (*.safetensors or *.bin)")
        vllm = _vllm()
        options: dict[str, Any] = {
            "model": str(directory),
            "tokenizer": str(directory),
            "gpu_memory_utilization": self.gpu_memory_utilization,
        }
        if self.dtype:
            options["dtype"] = self.dtype
        if self.max_model_len:
            options["max_model_len"] = self.max_model_len
        try:
            return vllm.LLM(**options).llm_engine
        except Exception as exc:  # noqa: BLE001 - a failed engine start is reported as the backend's error
            out_of_memory = "out of memory" in str(exc).lower()
            raise BackendError(f"vLLM cannot start {self.model!r}: {exc}", transient=out_of_memory) from exc

    def engine(self) -> Any:
        with self._lock:
            if self._engine is None:
                self._engine = self._load()
            return self._engine

    def close(self) -> None:
        """Free the engine (and the GPU memory it holds); the next call starts a new one."""
        with self._lock:
            engine, self._engine = self._engine, None
            self._pending.clear()
        # vLLM's V1 LLMEngine shuts its engine core down; older engines have shutdown() themselves.
        for owner in (engine, getattr(engine, "engine_core", None)):
            shutdown = getattr(owner, "shutdown", None)
            if callable(shutdown):
                shutdown()
                break

    # --- requests ----------------------------------------------------------------------------------

    def _prompt_ids(self, messages: list[dict[str, str]]) -> list[int]:
        tokenizer = self.engine().get_tokenizer()
        if not getattr(tokenizer, "chat_template", None):
            raise BackendError(f"{self.model!r} has no chat template; use an instruction-tuned model")
        rendered = [{"role": m["role"], "content": _message_text(m["content"])} for m in messages]
        text = tokenizer.apply_chat_template(rendered, tokenize=False, add_generation_prompt=True)
        return list(tokenizer(text, add_special_tokens=False)["input_ids"])

    def _sampling(self, params: GenerationParams) -> Any:
        options: dict[str, Any] = {
            "temperature": max(0.0, params.temperature),
            "max_tokens": params.max_tokens or DEFAULT_MAX_TOKENS,
            "seed": params.seed,
        }
        if params.top_p is not None:
            options["top_p"] = params.top_p
        return _vllm().SamplingParams(**options)

    def submit(self, request: Request) -> None:
        prompt_ids = self._prompt_ids(request.messages)
        request_id = f"radlay-{next(self._ids)}"
        engine = self.engine()
        with self._lock:
            self._pending[request_id] = (request.key, len(prompt_ids))
        try:
            engine.add_request(request_id, {"prompt_token_ids": prompt_ids}, self._sampling(request.params))
        except BackendError:
            raise
        except Exception as exc:  # noqa: BLE001 - a refused request (too long a prompt) names itself
            with self._lock:
                self._pending.pop(request_id, None)
            raise BackendError(f"vLLM refused the {request.agent} request: {exc}") from exc

    def collect(self) -> list[tuple[str, Completion]]:
        engine = self.engine()
        while True:
            with self._lock:
                if not self._pending:
                    return []
                try:
                    outputs = engine.step()
                except Exception as exc:  # noqa: BLE001 - the engine failed: every pending request with it
                    self._pending.clear()
                    out_of_memory = "out of memory" in str(exc).lower()
                    raise BackendError(f"vLLM engine step failed: {exc}", transient=out_of_memory) from exc
                finished: list[tuple[str, Completion]] = []
                for output in outputs:
                    if output.finished and (item := self._completion(output)) is not None:
                        finished.append(item)
                if finished:
                    return finished
                if not engine.has_unfinished_requests():
                    lost = len(self._pending)
                    self._pending.clear()
                    raise BackendError(f"vLLM dropped {lost} request(s) without an answer")

    def _completion(self, output: Any) -> tuple[str, Completion] | None:
        pending = self._pending.pop(output.request_id, None)
        if pending is None:  # not ours (another caller's engine) - never happens in the gpu worker
            return None
        key, prompt_tokens = pending
        sample = output.outputs[0]
        reason = "length" if sample.finish_reason == "length" else "stop"
        return key, Completion(
            text=sample.text.strip(),
            prompt_tokens=len(output.prompt_token_ids or []) or prompt_tokens,
            completion_tokens=len(sample.token_ids),
            cost_usd=0.0,
            model=self.model,
            raw={"finish_reason": reason, "engine": "vllm"},
        )

    # --- the ChatBackend calls, on top of submit/collect -------------------------------------------

    def complete(
        self,
        messages: list[dict[str, str]],
        *,
        agent: str,
        params: GenerationParams,
        context: dict[str, Any] | None = None,
    ) -> Completion:
        return self.complete_batch([messages], agent=agent, params=params, contexts=[context])[0]

    def complete_batch(
        self,
        conversations: list[list[dict[str, str]]],
        *,
        agent: str,
        params: GenerationParams,
        contexts: list[dict[str, Any] | None] | None = None,
    ) -> list[Completion]:
        contexts = contexts if contexts is not None else [None] * len(conversations)
        requests = [
            Request(f"batch-{i}", messages, agent, params, context)
            for i, (messages, context) in enumerate(zip(conversations, contexts, strict=True))
        ]
        return complete_all(self, requests)
