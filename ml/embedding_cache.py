"""The database behind ml.embeddings' cache (EmbeddingCacheEntry): vectors by cache key, stored as
little-endian float32 bytes. Only the embedder reads and writes it (ml.services.embedder_get imports
this module where it builds one), so the admin and the pages, which import ml.selectors and
ml.services, load no numpy."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ml.models import EmbeddingCacheEntry


def embedding_cache_get_many(*, keys: Sequence[str]) -> dict[str, np.ndarray]:
    found: dict[str, np.ndarray] = {}
    # Chunked: SQLite caps the number of query parameters.
    for start in range(0, len(keys), 500):
        for key, vector in EmbeddingCacheEntry.objects.filter(key__in=keys[start : start + 500]).values_list(
            "key", "vector"
        ):
            found[key] = np.frombuffer(bytes(vector), dtype="<f4").copy()
    return found


def embedding_cache_put_many(*, vectors: Mapping[str, np.ndarray], model_id: str) -> int:
    """Store vectors by cache key; keys already stored are left alone (another worker may have
    written the same text's vector first: it is the same vector)."""
    rows = [
        EmbeddingCacheEntry(
            key=key,
            model_id=model_id,
            dimension=int(np.asarray(v).size),
            vector=np.asarray(v, dtype="<f4").tobytes(),
        )
        for key, v in vectors.items()
    ]
    created = EmbeddingCacheEntry.objects.bulk_create(rows, ignore_conflicts=True, batch_size=500)
    return len(created)


class EmbeddingCacheStore:
    """The store of ml.embeddings' cache: ``Embedder(store=EmbeddingCacheStore())``."""

    def get_many(self, keys):
        return embedding_cache_get_many(keys=list(keys))

    def put_many(self, vectors, *, model_id: str) -> None:
        embedding_cache_put_many(vectors=vectors, model_id=model_id)


# One per process: ml.embeddings keeps one Embedder (and its in-process LRU) per store.
database_store = EmbeddingCacheStore()
