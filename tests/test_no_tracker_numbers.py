"""No tracker numbers in the repository's text: a comment, docstring, template or page that says
"issue 33", "#43", "wave 3" or "done-when (b)" points at a tracker the reader of the repository
does not have. Say what the change or the test is about instead (the feature, the fault, the rule).
Commit messages may name what they like; this test reads only the files."""

from __future__ import annotations

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUFFIXES = {".py", ".md", ".html", ".js", ".yml", ".yaml", ".toml", ".sh", ".txt", ".cfg", ".ini", ".po"}
NAMES = {"Makefile", "Dockerfile", "run"}
# Never read: third-party code shipped as is, and what git ignores at the top.
SKIPPED_DIRECTORIES = {Path("static/vendor"), Path("locale")}
TRACKER = re.compile(
    r"\b(?:issues?|tickets?|trackers?|waves?|drifts?|milestones?|tasks?|PRs?|pull requests?)"
    r"\s*(?:#\s*)?\d+"
    r"|\(issue\b|\bissue:|\bdone[- ]when\b"
    # "#43", but not a colour ("color: #345;", stroke="#999")
    r"|(?:^|(?<=[\s(\[,]))(?<!:\s)#\d{1,5}\b(?![;\"'])",
    re.IGNORECASE,
)
# Names that look like tracker numbers and are not: a shared task of a workshop.
ALLOWED = re.compile(r"SemEval-\d{4} Task \d+", re.IGNORECASE)


def ignored_at_the_top() -> set[str]:
    names = {".git"}
    for line in (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "*" not in line and "/" not in line.strip("/"):
            names.add(line.strip("/"))
    return names


def text_files():
    top_skipped = ignored_at_the_top()
    for directory, subdirectories, files in os.walk(ROOT):
        here = Path(directory).relative_to(ROOT)
        subdirectories[:] = sorted(
            name
            for name in subdirectories
            if name != "__pycache__"
            and here / name not in SKIPPED_DIRECTORIES
            and not (here == Path(".") and name in top_skipped)
        )
        for name in sorted(files):
            if Path(name).suffix in SUFFIXES or name in NAMES:
                yield here / name


def tracker_references(text: str) -> list[tuple[int, str]]:
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        line_without_allowed = ALLOWED.sub("", line)
        found += [(number, match.group().strip()) for match in TRACKER.finditer(line_without_allowed)]
    return found


def test_the_pattern_finds_tracker_numbers_and_nothing_else():
    found = [
        "(issue 33)",
        "Issue 34 items 2 and 8",
        "issue 35.3: healed",
        "fixes #43",
        "(#12)",
        "wave 3: instruments",
        "task 12",
        "drift 1: retry",
        "Adjudication's done-when: two",
        "(issue: survey requests)",
    ]
    not_found = [
        "SemEval-2013 Task 9's partial match",
        'stroke="#999"',
        "color: #345;",
        "a real issue with the lock",
        "item 0 of the page",
        "seed 002's caption pairs",
        "http://example.org/page#12",
    ]
    assert [text for text in found if not tracker_references(text)] == []
    assert [text for text in not_found if tracker_references(text)] == []


def test_no_file_cites_a_tracker_number():
    files = list(text_files())
    assert Path("CHANGELOG.md") in files and Path("tests/test_no_tracker_numbers.py") in files
    offending = [
        f"{path}:{number}: {match!r}"
        for path in files
        if path != Path("tests/test_no_tracker_numbers.py")
        for number, match in tracker_references((ROOT / path).read_text(encoding="utf-8", errors="replace"))
    ]
    assert not offending, "say what it means instead of a tracker number:\n" + "\n".join(offending)
