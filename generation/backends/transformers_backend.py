"""Chat backend for a local Hugging Face model, through `ml.inference`. Django-free.

A thin adapter: `ml.inference` owns loading (cached per process), chat templates, batching and the
GPU; this class turns its outputs into Completions. `ml.inference` is imported on first use, so
choosing another backend never imports torch.
"""

from __future__ import annotations

import importlib
from typing import Any

from generation.backends.base import BackendError, Completion, GenerationParams
from generation.backends.streaming import Request

DEFAULT_MAX_NEW_TOKENS = 512


def _inference_module() -> Any:
    return importlib.import_module("ml.inference")


def _is_out_of_memory(error: BaseException) -> bool:
    # torch.cuda.OutOfMemoryError, or a RuntimeError saying so on older torch; worth a retry later
    # (with a smaller batch, or once another job freed the GPU).
    return type(error).__name__ == "OutOfMemoryError" or "out of memory" in str(error).lower()


class TransformersBackend:
    name = "transformers"

    def __init__(
        self,
        *,
        model: str,
        device: str | None = None,
        dtype: str | None = None,
        batch_size: int = 8,
    ) -> None:
        """`model` is the local path of the model (or fine-tuned checkpoint) directory."""
        self.model = model
        self.device = device
        self.dtype = dtype
        self.batch_size = batch_size
        self._loaded: Any = None
        self._continuous: Any = None  # ml.continuous.ContinuousGenerator, for submit/collect
        self._keys: dict[str, str] = {}  # engine request id -> the caller's request key
        self._serial = 0

    def _model(self) -> Any:
        if self._loaded is None:
            try:
                self._loaded = _inference_module().load_model(
                    self.model, device=self.device, dtype=self.dtype
                )
            except Exception as exc:  # noqa: BLE001 - a missing directory will not heal; a full GPU may
                raise BackendError(
                    f"cannot load local model {self.model!r}: {exc}", transient=_is_out_of_memory(exc)
                ) from exc
        return self._loaded

    # --- submit/collect: HF continuous batching on a decoder-only model -----------------------------

    def streams(self) -> bool:
        """True for a decoder-only model (transformers' continuous batching); a seq2seq model keeps
        the lockstep batches of complete_batch."""
        loaded = self._model()
        return getattr(loaded, "architecture", None) == "causal" and hasattr(
            getattr(loaded, "model", None), "init_continuous_batching"
        )

    def _generator(self) -> Any:
        if self._continuous is None:
            self._continuous = importlib.import_module("ml.continuous").ContinuousGenerator(self._model())
        return self._continuous

    def submit(self, request: Request) -> None:
        params = request.params
        self._serial += 1
        request_id = f"radlay-{self._serial}"
        self._keys[request_id] = request.key
        try:
            self._generator().submit(
                request_id,
                list(request.messages),
                max_new_tokens=params.max_tokens or DEFAULT_MAX_NEW_TOKENS,
                temperature=params.temperature,
                top_p=params.top_p,
                seed=params.seed,
            )
        except Exception as exc:  # noqa: BLE001 - a refused prompt becomes the backend's error
            self._keys.pop(request_id, None)
            raise BackendError(f"{request.agent} request refused by {self.model!r}: {exc}") from exc

    def collect(self) -> list[tuple[str, Completion]]:
        if not self._keys:
            return []
        try:
            finished = self._generator().results()
        except Exception as exc:  # noqa: BLE001 - any failure inside the engine fails what is pending
            self._keys.clear()
            self.close()
            raise BackendError(
                f"continuous generation failed on {self.model!r}: {exc}", transient=_is_out_of_memory(exc)
            ) from exc
        return [
            (
                self._keys.pop(request_id),
                Completion(
                    text=output.text,
                    prompt_tokens=output.prompt_tokens,
                    completion_tokens=output.completion_tokens,
                    cost_usd=0.0,
                    model=self.model,
                    raw={"finish_reason": output.finish_reason, "engine": "hf-continuous-batching"},
                ),
            )
            for request_id, output in finished
        ]

    def close(self) -> None:
        """Stop the continuous-batching managers (the loaded model stays in ml.inference's cache)."""
        if self._continuous is not None:
            self._continuous.close()
            self._continuous = None

    def complete(
        self,
        messages: list[dict[str, str]],
        *,
        agent: str,
        params: GenerationParams,
        context: dict[str, Any] | None = None,
    ) -> Completion:
        return self.complete_batch([messages], agent=agent, params=params)[0]

    def complete_batch(
        self,
        conversations: list[list[dict[str, str]]],
        *,
        agent: str,
        params: GenerationParams,
        contexts: list[dict[str, Any] | None] | None = None,
    ) -> list[Completion]:
        """One generation per conversation, `batch_size` at a time on the device."""
        if not conversations:
            return []
        loaded = self._model()
        options: dict[str, Any] = {}
        if params.top_p is not None:
            options["top_p"] = params.top_p
        try:
            outputs = _inference_module().generate(
                loaded,
                [list(messages) for messages in conversations],
                max_new_tokens=params.max_tokens or DEFAULT_MAX_NEW_TOKENS,
                temperature=params.temperature,
                seed=params.seed,
                batch_size=self.batch_size,
                **options,
            )
        except BackendError:
            raise
        except Exception as exc:  # noqa: BLE001 - any failure inside the model becomes a BackendError
            raise BackendError(
                f"{agent} generation failed on {self.model!r}: {exc}", transient=_is_out_of_memory(exc)
            ) from exc
        if len(outputs) != len(conversations):
            raise BackendError(
                f"ml.inference returned {len(outputs)} outputs for {len(conversations)} prompts"
            )
        return [
            Completion(
                text=output.text,
                prompt_tokens=output.prompt_tokens,
                completion_tokens=output.completion_tokens,
                cost_usd=0.0,  # local compute is not priced per token
                model=self.model,
                # finish_reason "length" (cut off at max_new_tokens) makes the agent loop flag the answer.
                raw={
                    "finish_reason": getattr(output, "finish_reason", "stop"),
                    "batch_size": self.batch_size,
                },
            )
            for output in outputs
        ]
