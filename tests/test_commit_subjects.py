""".ci/check_commit_subjects.sh: commit subjects of at most 72 characters, checked only after the
base commit it is given (the history before the rule has longer ones), and one message at a time
for the commit-msg hook."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / ".ci" / "check_commit_subjects.sh"
pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(SCRIPT), *args], cwd=cwd, capture_output=True, text=True, check=False)


def git(*args: str, cwd: Path) -> str:
    environment = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.org",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.org",
        "HOME": str(cwd),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    }
    done = subprocess.run(["git", *args], cwd=cwd, env=environment, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.fixture
def repository(tmp_path):
    git("init", "-q", cwd=tmp_path)
    old_subject = "An old subject, long before the rule: " + "x" * 60
    git("commit", "-q", "--allow-empty", "-m", old_subject, cwd=tmp_path)
    return tmp_path


def test_only_the_commits_after_the_base_are_checked(repository):
    base = git("rev-parse", "HEAD", cwd=repository)
    assert run(base, cwd=repository).returncode == 0
    assert run(cwd=repository).returncode == 0  # no base: nothing checked
    # 72 characters, one of them "→" (counted as one character, not three bytes)
    git("commit", "-q", "--allow-empty", "-m", "A → " + "y" * 68 + "\n\nThe detail.", cwd=repository)
    assert run(base, cwd=repository).returncode == 0
    git("commit", "-q", "--allow-empty", "-m", "z" * 73, cwd=repository)
    result = run(base, cwd=repository)
    assert result.returncode == 1
    assert "subject is 73 characters" in result.stdout and "y" * 68 not in result.stdout
    assert "long before the rule" not in result.stdout
    assert run("HEAD", cwd=repository).returncode == 0


def test_a_base_that_is_not_a_commit_is_refused(repository):
    result = run("no-such-commit", cwd=repository)
    assert result.returncode == 2 and "not a commit" in result.stderr


def test_one_message_for_the_commit_msg_hook(tmp_path):
    message = tmp_path / "COMMIT_EDITMSG"
    message.write_text("# a comment git strips\n\nShort subject\n\n" + "a long body line " * 10 + "\n")
    assert run("--message", str(message), cwd=tmp_path).returncode == 0
    message.write_text("s" * 73 + "\n")
    result = run("--message", str(message), cwd=tmp_path)
    assert result.returncode == 1 and "73 characters" in result.stdout
