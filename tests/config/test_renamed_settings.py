"""Settings renamed or folded into a structured setting in this release: the old environment
variables are still read (with a warning naming the new variable and key), a key the new variable
sets wins, and a structured setting refuses a key or value it does not know, naming them. The
reference's "Renamed" table is checked against RENAMED in tests/test_settings_reference.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import environ
import pytest
from django.core.exceptions import ImproperlyConfigured

from config.settings.renamed import RENAMED, RenamedSettingWarning, env_renamed, env_spec
from config.settings.specs import FileLimits, JobTiming, LoginLockout, RateLimits, spec_parse, spec_text

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def clean_env(monkeypatch):
    for name in {*RENAMED, *(new for new, _ in RENAMED.values())}:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_an_old_name_is_read_with_a_warning_and_the_new_name_wins(clean_env):
    clean_env.setenv("RADLAY_ANALYSIS_HEARTBEAT", "2.5")
    with pytest.warns(
        RenamedSettingWarning,
        match=r'RADLAY_ANALYSIS_HEARTBEAT is deprecated.*RADLAY_JOB_TIMING="heartbeat=…"',
    ):
        assert env_spec(JobTiming, "RADLAY_JOB_TIMING").heartbeat == 2.5
    clean_env.setenv("RADLAY_JOB_TIMING", "heartbeat=4")
    with pytest.warns(RenamedSettingWarning):
        assert env_spec(JobTiming, "RADLAY_JOB_TIMING").heartbeat == 4.0
    clean_env.delenv("RADLAY_JOB_TIMING")
    clean_env.delenv("RADLAY_ANALYSIS_HEARTBEAT")
    assert env_spec(JobTiming, "RADLAY_JOB_TIMING") == JobTiming()


def test_the_first_old_name_set_wins_and_old_names_fill_the_keys_the_new_one_leaves(clean_env):
    clean_env.setenv("RADLAY_GENERATION_HEARTBEAT", "3")
    clean_env.setenv("RADLAY_JOB_HEARTBEAT", "2")  # the newer old name, first in RENAMED
    clean_env.setenv("RADLAY_GENERATION_STALL_AFTER", "90")
    clean_env.setenv("RADLAY_JOB_TIMING", "stall_after=120,retry_delay=1")
    with pytest.warns(RenamedSettingWarning):
        timing = env_spec(JobTiming, "RADLAY_JOB_TIMING")
    assert (timing.heartbeat, timing.stall_after, timing.retry_delay) == (2.0, 120.0, 1.0)
    assert timing.dispatch_deadline == JobTiming().dispatch_deadline


def test_a_whole_value_rename_is_read_with_a_warning(clean_env):
    env = environ.Env()
    clean_env.setenv("RADLAY_GENERATION_CONCURRENCY", "12")
    with pytest.warns(
        RenamedSettingWarning, match="RADLAY_GENERATION_CONCURRENCY.*set RADLAY_JOB_CONCURRENCY"
    ):
        assert env_renamed(env, "int", "RADLAY_JOB_CONCURRENCY", 8) == 12
    clean_env.setenv("RADLAY_JOB_CONCURRENCY", "4")
    assert env_renamed(env, "int", "RADLAY_JOB_CONCURRENCY", 8) == 4


def test_the_boolean_variables_a_structured_setting_replaces_still_read_on_and_off(clean_env):
    clean_env.setenv("RADLAY_RATE_LIMITS", "false")
    assert env_spec(RateLimits, "RADLAY_RATE_LIMITS") == RateLimits(enabled=False)
    clean_env.setenv("RADLAY_LOGIN_LOCKOUT", "off")
    clean_env.setenv("RADLAY_LOGIN_FAILURE_LIMIT", "5")
    with pytest.warns(RenamedSettingWarning):
        assert env_spec(LoginLockout, "RADLAY_LOGIN_LOCKOUT") == LoginLockout(enabled=False, failures=5)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("upload_mb=ten", "RADLAY_FILE_LIMITS: upload_mb='ten' is not a int"),
        ("upload=10", "RADLAY_FILE_LIMITS: unknown key 'upload'; the keys are upload_mb,"),
        ("upload_mb", "RADLAY_FILE_LIMITS: 'upload_mb' is not key=value"),
        ("off", "RADLAY_FILE_LIMITS: 'off' is not key=value"),  # no `enabled` key
    ],
)
def test_a_structured_setting_refuses_what_it_does_not_know_naming_it(text, message):
    with pytest.raises(ImproperlyConfigured) as refused:
        spec_parse(FileLimits, text, variable="RADLAY_FILE_LIMITS")
    assert str(refused.value).startswith(message)


def test_a_structured_setting_is_written_back_as_it_is_read():
    limits = FileLimits(upload_mb=64, import_systems=9)
    assert spec_parse(FileLimits, spec_text(limits), variable="RADLAY_FILE_LIMITS") == limits
    assert spec_parse(FileLimits, " upload_mb = 64 , import_systems=9,", variable="X") == limits


def test_the_settings_module_reads_old_names():
    code = (
        "import config.settings.test as s; "
        "print(s.RADLAY_JOB_ATTEMPTS, s.RADLAY_JOB_LIMITS.per_study, s.RADLAY_FILE_LIMITS.upload_mb, "
        "s.AXES_FAILURE_LIMIT, s.REST_FRAMEWORK['DEFAULT_THROTTLE_RATES']['user'])"
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "RADLAY_JUDGE_ITEM_ATTEMPTS": "7",
        "RADLAY_PLAN_MAX_ACTIVE_PER_STUDY": "2",
        "RADLAY_UPLOAD_MAX_MB": "64",
        "RADLAY_LOGIN_FAILURE_LIMIT": "4",
        "RADLAY_API_RATE_USER": "9/min",
    }
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["7", "2", "64", "4", "9/min"]
    assert "RADLAY_JUDGE_ITEM_ATTEMPTS is deprecated" in done.stderr
    assert "RADLAY_UPLOAD_MAX_MB is deprecated and will be ignored in the next release: set " in done.stderr
    assert 'set RADLAY_FILE_LIMITS="upload_mb=…" instead' in done.stderr


def test_a_bad_value_stops_the_settings_module_naming_the_variable():
    code = "import config.settings.test"
    env = {"PATH": "/usr/bin:/bin", "RADLAY_ANALYSIS": "fresh_timeout=30"}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode != 0
    assert "RADLAY_ANALYSIS fresh_timeout must be between 0 and 10 seconds" in done.stderr
