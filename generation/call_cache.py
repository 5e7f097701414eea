"""The database-backed CallCache (generation.backends.cache.CallCache): identical backend calls are
answered from the LLMCallCache table, so a rerun batch, or a job resumed after its worker died, pays
for no call it had already made.

Each entry is written as soon as its call returns, outside any job transaction, so the calls made
before a crash survive it. Two workers storing the same key at once is harmless: the first row wins
and the second insert is ignored.
"""

from __future__ import annotations

from generation.backends.base import Completion
from generation.backends.cache import completion_from_dict, completion_to_dict
from generation.models import LLMCallCache


class DbCallCache:
    def __init__(self, *, backend: str = "", model: str = "") -> None:
        # Only labels for the admin; the key alone decides a hit.
        self.backend = backend
        self.model = model

    def get(self, key: str) -> Completion | None:
        data = LLMCallCache.objects.filter(key=key).values_list("completion", flat=True).first()
        return completion_from_dict(data) if data is not None else None

    def set(self, key: str, completion: Completion) -> None:
        LLMCallCache.objects.bulk_create(
            [
                LLMCallCache(
                    key=key,
                    backend=self.backend,
                    model_name=completion.model or self.model,
                    completion=completion_to_dict(completion),
                )
            ],
            ignore_conflicts=True,
        )

    def __len__(self) -> int:
        return LLMCallCache.objects.count()
