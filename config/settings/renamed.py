"""Environment variables renamed or folded into a structured setting, still read under their old
names for one more release.

radlay had 62 RADLAY_* names; several numbers of one subsystem were one knob (the job layer's
timings, a file's limits, the abuse limits) and are now one structured setting each
(config/settings/specs.py), and the job layer's settings were named after generation although
they govern every kind of background work. A deployment that still sets an old name gets its
value, with a warning naming the new variable (and key); a key the new variable sets itself wins
over every old name. docs/configuration.md, "Renamed", lists them all (a test keeps it so).
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import environ

from config.settings.specs import Spec, spec_parse

# The old name → (the new name, the key of the new name's structured setting it sets; None: the
# whole value). Where several old names set one key, the first one set wins.
RENAMED: dict[str, tuple[str, str | None]] = {
    # The job layer's attempts and default concurrency: one setting for every kind.
    "RADLAY_GENERATION_JOB_ATTEMPTS": ("RADLAY_JOB_ATTEMPTS", None),
    "RADLAY_JUDGE_ITEM_ATTEMPTS": ("RADLAY_JOB_ATTEMPTS", None),
    "RADLAY_GENERATION_CONCURRENCY": ("RADLAY_JOB_CONCURRENCY", None),
    # The job layer's clock.
    "RADLAY_JOB_HEARTBEAT": ("RADLAY_JOB_TIMING", "heartbeat"),
    "RADLAY_GENERATION_HEARTBEAT": ("RADLAY_JOB_TIMING", "heartbeat"),
    "RADLAY_ANALYSIS_HEARTBEAT": ("RADLAY_JOB_TIMING", "heartbeat"),
    "RADLAY_JOB_STALE_AFTER": ("RADLAY_JOB_TIMING", "stale_after"),
    "RADLAY_GENERATION_STALE_AFTER": ("RADLAY_JOB_TIMING", "stale_after"),
    "RADLAY_ANALYSIS_STALE_AFTER": ("RADLAY_JOB_TIMING", "stale_after"),
    "RADLAY_JOB_DISPATCH_DEADLINE": ("RADLAY_JOB_TIMING", "dispatch_deadline"),
    "RADLAY_GENERATION_DISPATCH_DEADLINE": ("RADLAY_JOB_TIMING", "dispatch_deadline"),
    "RADLAY_ANALYSIS_DISPATCH_DEADLINE": ("RADLAY_JOB_TIMING", "dispatch_deadline"),
    "RADLAY_JOB_HEAL_INTERVAL": ("RADLAY_JOB_TIMING", "heal_interval"),
    "RADLAY_GENERATION_HEAL_INTERVAL": ("RADLAY_JOB_TIMING", "heal_interval"),
    "RADLAY_ANALYSIS_HEAL_INTERVAL": ("RADLAY_JOB_TIMING", "heal_interval"),
    "RADLAY_JOB_RETRY_DELAY": ("RADLAY_JOB_TIMING", "retry_delay"),
    "RADLAY_GENERATION_RETRY_DELAY": ("RADLAY_JOB_TIMING", "retry_delay"),
    "RADLAY_JUDGE_RETRY_DELAY": ("RADLAY_JOB_TIMING", "retry_delay"),
    "RADLAY_JOB_STALL_AFTER": ("RADLAY_JOB_TIMING", "stall_after"),
    "RADLAY_GENERATION_STALL_AFTER": ("RADLAY_JOB_TIMING", "stall_after"),
    "RADLAY_WORKER_SILENT_AFTER": ("RADLAY_JOB_TIMING", "worker_silent_after"),
    # The job layer's launch limits.
    "RADLAY_JOB_MAX_RUNNING_PER_STUDY": ("RADLAY_JOB_LIMITS", "per_study"),
    "RADLAY_MAX_RUNNING_BATCHES_PER_STUDY": ("RADLAY_JOB_LIMITS", "per_study"),
    "RADLAY_PLAN_MAX_ACTIVE_PER_STUDY": ("RADLAY_JOB_LIMITS", "per_study"),
    "RADLAY_JOB_MAX_RUNNING_PER_USER": ("RADLAY_JOB_LIMITS", "per_user"),
    "RADLAY_MAX_RUNNING_BATCHES_PER_USER": ("RADLAY_JOB_LIMITS", "per_user"),
    "RADLAY_PLAN_MAX_ACTIVE_PER_USER": ("RADLAY_JOB_LIMITS", "per_user"),
    "RADLAY_MAX_BATCH_SIZE": ("RADLAY_JOB_LIMITS", "batch_size"),
    "RADLAY_MAX_BATCH_CONCURRENCY": ("RADLAY_JOB_LIMITS", "batch_concurrency"),
    "RADLAY_PLAN_MAX_WORK": ("RADLAY_JOB_LIMITS", "plan_work"),
    "RADLAY_PLAN_MAX_MIXED_WORK": ("RADLAY_JOB_LIMITS", "plan_mixed_work"),
    # Abuse limits.
    "RADLAY_LOGIN_FAILURE_LIMIT": ("RADLAY_LOGIN_LOCKOUT", "failures"),
    "RADLAY_LOGIN_LOCKOUT_HOURS": ("RADLAY_LOGIN_LOCKOUT", "hours"),
    "RADLAY_JOIN_RATE_PER_IP": ("RADLAY_RATE_LIMITS", "join_ip"),
    "RADLAY_JOIN_RATE_PER_STUDY": ("RADLAY_RATE_LIMITS", "join_study"),
    "RADLAY_CONSENT_RATE_PER_IP": ("RADLAY_RATE_LIMITS", "consent_ip"),
    "RADLAY_RESUME_REFUSALS_PER_IP": ("RADLAY_RATE_LIMITS", "resume_refusals_ip"),
    "RADLAY_API_RATE_ANON": ("RADLAY_RATE_LIMITS", "api_anon"),
    "RADLAY_API_RATE_USER": ("RADLAY_RATE_LIMITS", "api_user"),
    "RADLAY_CLIENT_IP_HEADER": ("RADLAY_CLIENT_IP", "header"),
    "RADLAY_NUM_PROXIES": ("RADLAY_CLIENT_IP", "proxies"),
    # What a file may ask of the server.
    "RADLAY_UPLOAD_MAX_MB": ("RADLAY_FILE_LIMITS", "upload_mb"),
    "RADLAY_ARCHIVE_MAX_MEMBER_MB": ("RADLAY_FILE_LIMITS", "archive_member_mb"),
    "RADLAY_ARCHIVE_MAX_TOTAL_MB": ("RADLAY_FILE_LIMITS", "archive_total_mb"),
    "RADLAY_ARCHIVE_MAX_ROW_MB": ("RADLAY_FILE_LIMITS", "archive_row_mb"),
    "RADLAY_IMPORT_MAX_COLUMNS": ("RADLAY_FILE_LIMITS", "import_columns"),
    "RADLAY_IMPORT_MAX_SYSTEMS": ("RADLAY_FILE_LIMITS", "import_systems"),
    "RADLAY_INSTRUMENT_MAX_BYTES": ("RADLAY_FILE_LIMITS", "instrument_bytes"),
    # Models, judges, training, analysis.
    "RADLAY_LLM_TIMEOUT": ("RADLAY_LLM_CALLS", "timeout"),
    "RADLAY_LLM_MAX_RETRIES": ("RADLAY_LLM_CALLS", "retries"),
    "RADLAY_LLM_RETRY_DELAY": ("RADLAY_LLM_CALLS", "retry_delay"),
    "RADLAY_TRANSFORMERS_DEVICE": ("RADLAY_LOCAL_MODELS", "device"),
    "RADLAY_GPU_BATCH_SIZE": ("RADLAY_LOCAL_MODELS", "batch_size"),
    "RADLAY_VLLM_GPU_MEMORY_UTILIZATION": ("RADLAY_LOCAL_MODELS", "vllm_gpu_memory"),
    "RADLAY_JUDGE_PARSE_ATTEMPTS": ("RADLAY_JUDGING", "parse_attempts"),
    "RADLAY_JUDGE_BOOTSTRAP_RESAMPLES": ("RADLAY_JUDGING", "bootstrap_resamples"),
    "RADLAY_TRAINING_TIME_LIMIT": ("RADLAY_TRAINING", "time_limit"),
    "RADLAY_DPO_MIN_PAIRS": ("RADLAY_TRAINING", "dpo_min_pairs"),
    "RADLAY_ANALYSIS_EMBEDDINGS": ("RADLAY_ANALYSIS", "embeddings"),
    "RADLAY_ANALYSIS_CHECK_SECONDS": ("RADLAY_ANALYSIS", "check_seconds"),
    "RADLAY_ANALYSIS_REFRESH_SECONDS": ("RADLAY_ANALYSIS", "refresh_seconds"),
    "RADLAY_ANALYSIS_FRESH_TIMEOUT": ("RADLAY_ANALYSIS", "fresh_timeout"),
}


class RenamedSettingWarning(FutureWarning):
    """An environment variable is set under the name it had before this release."""


def _warn(old: str, new: str, key: str | None) -> None:
    instead = f'{new}="{key}=…"' if key else new
    warnings.warn(
        f"{old} is deprecated and will be ignored in the next release: set {instead} instead.",
        RenamedSettingWarning,
        stacklevel=3,
    )


def env_renamed(env: environ.Env, cast: str, name: str, default: Any) -> Any:
    """`env.<cast>(name, default=default)`, or the value of the first old name of `name` that is
    set (with a RenamedSettingWarning) when `name` itself is not."""
    if name not in os.environ:
        for old, (new, key) in RENAMED.items():
            if new == name and key is None and old in os.environ:
                _warn(old, new, None)
                return getattr(env, cast)(old)
    return getattr(env, cast)(name, default=default)


def env_spec(cls: type[Spec], name: str) -> Spec:
    """The structured setting `name` (a specs.py class) from its environment variable, each key
    that it leaves out taken from the first of its old names that is set (with a warning)."""
    inherited: dict[str, str] = {}
    for old, (new, key) in RENAMED.items():
        if new == name and key is not None and old in os.environ:
            _warn(old, new, key)
            inherited.setdefault(key, os.environ[old])
    return spec_parse(cls, os.environ.get(name, ""), variable=name, inherited=inherited)
