"""Environment variables renamed in this release, read under their old names for one more release.

The job layer's settings (docs/configuration.md, "Background work") were named after generation
(`RADLAY_GENERATION_*`) although they govern every kind of background work, and four kinds had
their own copies of the same timings and limits. Each is now one `RADLAY_JOB_*` setting; a
deployment that still sets an old name gets its value, with a warning naming the new one. A new
name that is set wins over every old one.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import environ

# The new name → its old names, in the order they are looked up.
RENAMED: dict[str, tuple[str, ...]] = {
    "RADLAY_JOB_HEARTBEAT": ("RADLAY_GENERATION_HEARTBEAT", "RADLAY_ANALYSIS_HEARTBEAT"),
    "RADLAY_JOB_STALE_AFTER": ("RADLAY_GENERATION_STALE_AFTER", "RADLAY_ANALYSIS_STALE_AFTER"),
    "RADLAY_JOB_DISPATCH_DEADLINE": (
        "RADLAY_GENERATION_DISPATCH_DEADLINE",
        "RADLAY_ANALYSIS_DISPATCH_DEADLINE",
    ),
    "RADLAY_JOB_HEAL_INTERVAL": ("RADLAY_GENERATION_HEAL_INTERVAL", "RADLAY_ANALYSIS_HEAL_INTERVAL"),
    "RADLAY_JOB_ATTEMPTS": ("RADLAY_GENERATION_JOB_ATTEMPTS", "RADLAY_JUDGE_ITEM_ATTEMPTS"),
    "RADLAY_JOB_RETRY_DELAY": ("RADLAY_GENERATION_RETRY_DELAY", "RADLAY_JUDGE_RETRY_DELAY"),
    "RADLAY_JOB_STALL_AFTER": ("RADLAY_GENERATION_STALL_AFTER",),
    "RADLAY_JOB_MAX_RUNNING_PER_STUDY": (
        "RADLAY_MAX_RUNNING_BATCHES_PER_STUDY",
        "RADLAY_PLAN_MAX_ACTIVE_PER_STUDY",
    ),
    "RADLAY_JOB_MAX_RUNNING_PER_USER": (
        "RADLAY_MAX_RUNNING_BATCHES_PER_USER",
        "RADLAY_PLAN_MAX_ACTIVE_PER_USER",
    ),
}


class RenamedSettingWarning(FutureWarning):
    """An environment variable is set under the name it had before this release."""


def env_renamed(env: environ.Env, cast: str, name: str, default: Any) -> Any:
    """`env.<cast>(name, default=default)`, or the value of the first old name of `name` that is
    set (with a RenamedSettingWarning) when `name` itself is not."""
    if name not in os.environ:
        for old in RENAMED[name]:
            if old in os.environ:
                warnings.warn(
                    f"{old} is deprecated and will be ignored in the next release: set {name} instead.",
                    RenamedSettingWarning,
                    stacklevel=2,
                )
                return getattr(env, cast)(old)
    return getattr(env, cast)(name, default=default)
