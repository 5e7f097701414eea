"""Where the data-policy layer (privacy/) plugs into generation: privacy's gate builds on
generation's backends (it refuses a call with a `BackendError`, and knows which backends call out
from `registry.EXTERNAL_BACKENDS`), so generation imports nothing of privacy; `PrivacyConfig.ready()`
registers its `DataPolicy` here. There is no fallback: with none registered, generation refuses to
send or read a study's text rather than pass a policy by.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ImproperlyConfigured


@dataclass(frozen=True)
class DataPolicy:
    # (study=, backend=, purpose=): refuse (a BackendError) and log a call the policy forbids.
    call_check: Callable[..., None]
    # (study=, backend=): why the study's text may not go to `backend` now, "" when it may.
    call_problem: Callable[..., str]
    # (study=, backend=): what a generated text's provenance records of the policy.
    provenance: Callable[..., dict[str, Any]]
    # (sources=, audience=): the text each source is shown as, by source id.
    source_texts: Callable[..., dict[int, str]]


_registered: list[DataPolicy] = []


def data_policy_register(policy: DataPolicy) -> None:
    _registered[:] = [policy]


def data_policy() -> DataPolicy:
    if not _registered:
        raise ImproperlyConfigured("No data policy is registered: is `privacy` in INSTALLED_APPS?")
    return _registered[0]


def model_source_texts(sources: Iterable[Any]) -> dict[int, str]:
    """What a model reads of each source: its de-identified text, by source id."""
    return data_policy().source_texts(sources=sources, audience="model")
