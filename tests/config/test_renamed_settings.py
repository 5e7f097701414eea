"""The job layer's settings renamed in this release: the old environment variables are still read
(with a warning naming the new one), a new name that is set wins, and the configuration reference
documents every new name with its old ones."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import environ
import pytest

from config.settings.renamed import RENAMED, RenamedSettingWarning, env_renamed

ROOT = Path(__file__).resolve().parents[2]


def test_an_old_name_is_read_with_a_warning_and_the_new_name_wins(monkeypatch):
    env = environ.Env()
    monkeypatch.delenv("RADLAY_JOB_HEARTBEAT", raising=False)
    monkeypatch.delenv("RADLAY_GENERATION_HEARTBEAT", raising=False)
    monkeypatch.setenv("RADLAY_ANALYSIS_HEARTBEAT", "2.5")
    with pytest.warns(
        RenamedSettingWarning, match="RADLAY_ANALYSIS_HEARTBEAT is deprecated.*RADLAY_JOB_HEARTBEAT"
    ):
        assert env_renamed(env, "float", "RADLAY_JOB_HEARTBEAT", 15.0) == 2.5
    monkeypatch.setenv("RADLAY_JOB_HEARTBEAT", "4")
    assert env_renamed(env, "float", "RADLAY_JOB_HEARTBEAT", 15.0) == 4.0
    monkeypatch.delenv("RADLAY_JOB_HEARTBEAT")
    monkeypatch.delenv("RADLAY_ANALYSIS_HEARTBEAT")
    assert env_renamed(env, "float", "RADLAY_JOB_HEARTBEAT", 15.0) == 15.0


def test_the_settings_module_reads_an_old_name():
    code = (
        "import config.settings.test as s; print(s.RADLAY_JOB_ATTEMPTS, s.RADLAY_JOB_MAX_RUNNING_PER_STUDY)"
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "RADLAY_JUDGE_ITEM_ATTEMPTS": "7",
        "RADLAY_PLAN_MAX_ACTIVE_PER_STUDY": "2",
    }
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["7", "2"]
    assert "RADLAY_JUDGE_ITEM_ATTEMPTS is deprecated" in done.stderr


def test_every_renamed_setting_is_read_once_and_documented_with_its_old_names():
    base = (ROOT / "config" / "settings" / "base.py").read_text(encoding="utf-8")
    read = re.findall(r"env_renamed\(env, \"\w+\", \"(RADLAY_\w+)\"", base)
    assert sorted(read) == sorted(RENAMED)
    reference = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    for new, old in RENAMED.items():
        row = next((line for line in reference.splitlines() if line.endswith(f"| `{new}` |")), "")
        assert all(f"`{name}`" in row for name in old), (new, row)
        assert f"| `{new}` |" in reference
        # Nothing else reads the old names any more.
        assert not any(name in base for name in old)
