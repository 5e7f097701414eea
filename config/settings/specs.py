"""The structured RADLAY_* settings: several numbers of one subsystem that are one knob, each a
frozen dataclass whose field defaults are the only defaults, read from one environment variable
written as `key=value,key=value` (keys left out keep their default).

    RADLAY_JOB_TIMING="heartbeat=5,stall_after=600"

A key that is not a field, or a value that is not of the field's type, refuses to start with a
message naming the variable and the key. A class with an `enabled` field also takes a bare
`on`/`off` (`true`/`false`, `1`/`0`) as the whole value, as the boolean variables it replaces did.
The code reads them as `settings.RADLAY_JOB_TIMING.heartbeat`; a test changes one key with
`settings.RADLAY_JOB_TIMING = dataclasses.replace(settings.RADLAY_JOB_TIMING, heartbeat=0.1)`.
docs/configuration.md documents every key with its default (tests/test_settings_reference.py).
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass
from typing import Any, TypeVar

from django.core.exceptions import ImproperlyConfigured

TRUE = {"on", "true", "1", "yes"}
FALSE = {"off", "false", "0", "no"}


@dataclass(frozen=True)
class LoginLockout:
    """django-axes: after `failures` wrong passwords for one username from one address, that pair
    is locked out for `hours`, right password or not."""

    enabled: bool = True
    failures: int = 10
    hours: float = 1.0


@dataclass(frozen=True)
class RateLimits:
    """django-ratelimit's "N/s|m|h|d" per client address or study ("" = no limit). `enabled` turns
    off the join, consent and resume limits (the API throttles stay)."""

    enabled: bool = True
    join_ip: str = "20/h"  # POSTs to a recruitment link /join/<study>/ per client address
    join_study: str = "600/h"  # ... per study
    consent_ip: str = "60/h"  # POSTs to participants' consent pages per client address
    resume_refusals_ip: str = "10/h"  # refused resumptions of a known participant per address
    api_anon: str = "30/min"  # DRF throttle of the API per address
    api_user: str = "600/min"  # ... per signed-in user


@dataclass(frozen=True)
class ClientIp:
    """The client address every limit is keyed on: REMOTE_ADDR when `header` is empty, else that
    request.META key (e.g. HTTP_X_FORWARDED_FOR), read `proxies` entries from the right."""

    header: str = ""
    proxies: int = 1


@dataclass(frozen=True)
class FileLimits:
    """What a file a researcher gives radlay may ask of the server."""

    upload_mb: int = 512  # a sources file or study archive the console's upload page takes
    archive_member_mb: int = 1024  # one member of a study archive, inflated
    archive_total_mb: int = 4096  # all members of a study archive, inflated
    archive_row_mb: int = 16  # one row of an archive's table
    import_columns: int = 256  # columns of a sources file's header
    import_systems: int = 200  # systems of a sources file, and of its study once imported
    instrument_bytes: int = 1_000_000  # an instrument document (YAML/JSON), before it is parsed


@dataclass(frozen=True)
class JobTiming:
    """The job layer's clock (work/), the same for every kind of background work, in seconds."""

    heartbeat: float = 15.0  # a running job stamps a heartbeat this often
    stale_after: float = 0.0  # a job silent this long lost its worker (0: four heartbeats)
    dispatch_deadline: float = 600.0  # a job sent this long ago that never started is sent again
    heal_interval: float = 30.0  # Celery beat runs the healing check of every kind this often
    retry_delay: float = 10.0  # the first retry's back-off ceiling (doubles, up to 5 minutes)
    stall_after: float = 300.0  # a batch with no finished job this long says "no progress"
    worker_silent_after: float = 180.0  # no healing check this long: "no worker is running"


@dataclass(frozen=True)
class JobLimits:
    """Launch limits of background work, counted per kind (work.limits)."""

    per_study: int = 3  # queued or running at once per study
    per_user: int = 5  # ... per user (superusers and command-line launches are exempt)
    batch_size: int = 20_000  # jobs (generation) or model calls (judging) per batch launch
    batch_concurrency: int = 256  # the largest concurrency a batch may ask for
    # A sample-size plan's size: simulations × points² × participants × sources, and the same
    # with the mixed-model simulations (far dearer per answer).
    plan_work: int = 10_000_000_000
    plan_mixed_work: int = 2_000_000_000


@dataclass(frozen=True)
class Training:
    """Fine-tuning (ml/)."""

    time_limit: int = 24 * 60 * 60  # seconds of one training task (it checkpoints; a retry resumes)
    dpo_min_pairs: int = 20  # `train_simplifier --method dpo` refuses fewer preference pairs


@dataclass(frozen=True)
class Analysis:
    """The dashboard's analysis (evaluation/)."""

    embeddings: bool = True  # the semantic metrics embed texts with the local MiniLM
    check_seconds: int = 10  # readers compare the answers with the snapshot at most this often
    refresh_seconds: float = 60.0  # Celery beat asks for snapshots of changed open studies this often
    fresh_timeout: float = 5.0  # ?fresh=1 waits this long for a new snapshot (0 to 10) before 202

    def __post_init__(self) -> None:
        if not 0 <= self.fresh_timeout <= 10:
            raise ImproperlyConfigured("RADLAY_ANALYSIS fresh_timeout must be between 0 and 10 seconds")


@dataclass(frozen=True)
class LlmCalls:
    """Calls to the OpenAI-compatible backend."""

    timeout: float = 60.0  # seconds per call
    retries: int = 4  # retries of a call on 429, 5xx and timeouts
    retry_delay: float = 1.0  # the first retry's delay in seconds


@dataclass(frozen=True)
class LocalModels:
    """Local models (the transformers and vllm backends)."""

    device: str = ""  # cuda, cuda:1 or cpu; empty: automatic
    batch_size: int = 16  # jobs of a local-model batch one gpu task runs at once
    vllm_gpu_memory: float = 0.85  # share of the GPU's memory vllm's engine may take


@dataclass(frozen=True)
class Judging:
    """LLM judges (judging/)."""

    parse_attempts: int = 3  # model calls per sample before a malformed answer fails the item
    bootstrap_resamples: int = 500  # resamples of the judge–human agreement intervals


Spec = TypeVar("Spec")

SPECS = (
    LoginLockout,
    RateLimits,
    ClientIp,
    FileLimits,
    JobTiming,
    JobLimits,
    Training,
    Analysis,
    LlmCalls,
    LocalModels,
    Judging,
)


def _cast(kind: Any, text: str) -> Any:
    if kind is bool:
        word = text.strip().lower()
        if word not in TRUE | FALSE:
            raise ValueError(f"{text!r} is not on or off")
        return word in TRUE
    return kind(text.strip())


def spec_items(text: str) -> dict[str, str]:
    """`key=value,key=value` as a dict (an empty text: none)."""
    items: dict[str, str] = {}
    for part in filter(None, (part.strip() for part in text.split(","))):
        key, equals, value = part.partition("=")
        if not equals:
            raise ValueError(f"{part!r} is not key=value")
        items[key.strip()] = value.strip()
    return items


def spec_parse(cls: type[Spec], text: str, *, variable: str, inherited: dict[str, str] | None = None) -> Spec:
    """`cls` with the keys `inherited` (the deprecated variables', config/settings/renamed.py) and
    then `text` set (ImproperlyConfigured naming `variable` and the key)."""
    kinds = typing.get_type_hints(cls)
    word = text.strip().lower()
    items = dict(inherited or {})
    try:
        items.update({"enabled": word} if "enabled" in kinds and word in TRUE | FALSE else spec_items(text))
    except ValueError as error:
        raise ImproperlyConfigured(f"{variable}: {error}; write key=value,key=value") from None
    values = {}
    for key, value in items.items():
        if key not in kinds:
            raise ImproperlyConfigured(f"{variable}: unknown key {key!r}; the keys are {', '.join(kinds)}")
        try:
            values[key] = _cast(kinds[key], value)
        except ValueError:
            raise ImproperlyConfigured(
                f"{variable}: {key}={value!r} is not a {kinds[key].__name__}"
            ) from None
    return cls(**values)


def spec_text(spec: Any) -> str:
    """`spec` written back as `key=value,...`, every key (the reference's default column)."""
    return ",".join(
        f"{field.name}={value_text(getattr(spec, field.name))}" for field in dataclasses.fields(spec)
    )


def value_text(value: Any) -> str:
    """A setting's value as the environment variable would be written (the reference's form)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return spec_text(value)
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, dict):
        return ",".join(f"{key}={value_text(item)}" for key, item in value.items())
    return str(value)
