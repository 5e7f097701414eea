"""Caching of identical backend calls. Django-free.

Generation samples at temperature 0.8, so two identical calls could answer differently; still,
rerunning a batch makes no new calls (a worker that died halfway resumes for free, and a rerun
reproduces the stored transcript). The key therefore holds everything that makes a call
what it is — backend, model, agent, the full messages and the parameters, seed and `sample_index`
included — and a user who wants fresh samples asks for them by raising `sample_index` (and, for a
backend that honours seeds, changing the seed).

The key also holds the call's position in its job (`round` and `feedback_of` from the context the
agent loop passes): when the Generator repeats a simplification, the Radiologist's prompt in round 2
is word for word the one of round 1, yet it is a new sample in the paper's loop. Without the position
the cache would replay round 1's feedback and freeze the loop until the round cap.

`CallCache` is the storage protocol: `InMemoryCallCache` here; generation.call_cache.DbCallCache
is the database one, storing `completion_to_dict` and reading `completion_from_dict`.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import asdict, replace
from typing import Any, Protocol, runtime_checkable

from generation.backends.base import ChatBackend, Completion, GenerationParams
from generation.backends.streaming import Request, streams

KEY_VERSION = "radlay-call-v1"  # bump when the key's recipe changes, so old entries stop matching


POSITION_KEYS = ("round", "feedback_of")


def call_position(context: dict[str, Any] | None) -> dict[str, Any]:
    """Where a call sits in its job, from the agent loop's context (empty outside a job)."""
    return {name: context[name] for name in POSITION_KEYS if context and name in context}


def call_cache_key(
    *,
    backend: str,
    model: str,
    agent: str,
    messages: list[dict[str, str]],
    params: GenerationParams,
    position: dict[str, Any] | None = None,
) -> str:
    payload = {
        "v": KEY_VERSION,
        "backend": backend,
        "model": model,
        "agent": agent,
        "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
        "params": params.as_dict(),
        "position": position or {},
    }
    encoded = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(encoded.encode("utf-8")).hexdigest()


def completion_to_dict(completion: Completion) -> dict[str, Any]:
    return asdict(completion)


def completion_from_dict(data: dict[str, Any]) -> Completion:
    return Completion(**data)


@runtime_checkable
class CallCache(Protocol):
    def get(self, key: str) -> Completion | None: ...

    def set(self, key: str, completion: Completion) -> None: ...


class InMemoryCallCache:
    """A process-local cache (thread-safe); entries are stored as copies."""

    def __init__(self) -> None:
        self._entries: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> Completion | None:
        with self._lock:
            data = self._entries.get(key)
        return completion_from_dict(json.loads(json.dumps(data))) if data is not None else None

    def set(self, key: str, completion: Completion) -> None:
        data = json.loads(json.dumps(completion_to_dict(completion)))  # must survive a JSON column too
        with self._lock:
            self._entries[key] = data

    def __len__(self) -> int:
        return len(self._entries)


class CachedBackend:
    """Wraps a backend: a call seen before is answered from `cache` without calling the backend.

    A hit returns the stored completion with cached=True and cost_usd=0.0 (nothing was spent this
    time; the original cost stays in raw["original_cost_usd"]). Tokens keep their original counts:
    they describe the transcript, not the bill.
    """

    def __init__(self, backend: ChatBackend, cache: CallCache) -> None:
        self.backend = backend
        self.cache = cache
        self.name = backend.name
        self.model = backend.model
        # submit/collect (a streaming inner backend): answers ready without the backend, and per
        # cache key in flight the keys of the requests waiting for it (the first one made it).
        self._ready: list[tuple[str, Completion]] = []
        self._in_flight: dict[str, list[str]] = {}
        self._cache_key_of: dict[str, str] = {}

    def key(
        self,
        messages: list[dict[str, str]],
        *,
        agent: str,
        params: GenerationParams,
        context: dict[str, Any] | None = None,
    ) -> str:
        return call_cache_key(
            backend=self.name,
            model=self.model,
            agent=agent,
            messages=messages,
            params=params,
            position=call_position(context),
        )

    def _hit(self, stored: Completion, key: str) -> Completion:
        raw = dict(stored.raw, cache_key=key, original_cost_usd=stored.cost_usd)
        return replace(stored, cached=True, cost_usd=0.0, raw=raw)

    def complete(
        self,
        messages: list[dict[str, str]],
        *,
        agent: str,
        params: GenerationParams,
        context: dict[str, Any] | None = None,
    ) -> Completion:
        key = self.key(messages, agent=agent, params=params, context=context)
        stored = self.cache.get(key)
        if stored is not None:
            return self._hit(stored, key)
        completion = self.backend.complete(messages, agent=agent, params=params, context=context)
        self.cache.set(key, replace(completion, cached=False))
        return completion

    def complete_batch(
        self,
        conversations: list[list[dict[str, str]]],
        *,
        agent: str,
        params: GenerationParams,
        contexts: list[dict[str, Any] | None] | None = None,
    ) -> list[Completion]:
        """Batched calls: hits come from the cache, only the misses go to the backend (in one batch
        when it has `complete_batch`). A call repeated within the batch is made once and its
        repetitions are hits, as they would be if the calls were made one after another."""
        contexts = contexts if contexts is not None else [None] * len(conversations)
        keys = [
            self.key(messages, agent=agent, params=params, context=context)
            for messages, context in zip(conversations, contexts, strict=True)
        ]
        results: list[Completion | None] = []
        for key in keys:
            stored = self.cache.get(key)
            results.append(self._hit(stored, key) if stored is not None else None)
        first_of_key: dict[str, int] = {}
        repeated: list[int] = []
        for i, result in enumerate(results):
            if result is None:
                if keys[i] in first_of_key:
                    repeated.append(i)
                else:
                    first_of_key[keys[i]] = i
        missing = list(first_of_key.values())
        if missing:
            batch = getattr(self.backend, "complete_batch", None)
            if batch is not None:
                fresh = batch(
                    [conversations[i] for i in missing],
                    agent=agent,
                    params=params,
                    contexts=[contexts[i] for i in missing],
                )
            else:
                fresh = [
                    self.backend.complete(conversations[i], agent=agent, params=params, context=contexts[i])
                    for i in missing
                ]
            for i, completion in zip(missing, fresh, strict=True):
                self.cache.set(keys[i], replace(completion, cached=False))
                results[i] = completion
        for i in repeated:
            stored = self.cache.get(keys[i]) or replace(results[first_of_key[keys[i]]], cached=False)
            results[i] = self._hit(stored, keys[i])
        return [result for result in results if result is not None]

    # --- submit/collect, when the wrapped backend streams -------------------------------------------

    def streams(self) -> bool:
        return streams(self.backend)

    def submit(self, request: Request) -> None:
        """A hit is answered at the next collect; a call already in flight is made once and its
        repetitions are hits, as in complete_batch."""
        key = self.key(request.messages, agent=request.agent, params=request.params, context=request.context)
        stored = self.cache.get(key)
        if stored is not None:
            self._ready.append((request.key, self._hit(stored, key)))
        elif key in self._in_flight:
            self._in_flight[key].append(request.key)
        else:
            self._in_flight[key] = [request.key]
            self._cache_key_of[request.key] = key
            self.backend.submit(request)  # type: ignore[attr-defined]

    def collect(self) -> list[tuple[str, Completion]]:
        if self._ready:
            ready, self._ready = self._ready, []
            return ready
        if not self._in_flight:
            return []
        finished: list[tuple[str, Completion]] = []
        for request_key, completion in self.backend.collect():  # type: ignore[attr-defined]
            key = self._cache_key_of.pop(request_key)
            self.cache.set(key, replace(completion, cached=False))
            first, *repeated = self._in_flight.pop(key)
            finished.append((first, completion))
            stored = self.cache.get(key) or replace(completion, cached=False)
            finished.extend((other, self._hit(stored, key)) for other in repeated)
        return finished
