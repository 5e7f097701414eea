"""mypy with a baseline that may only shrink.

Runs mypy with the configuration in pyproject.toml and compares its errors with
.ci/mypy-baseline.txt, one line per error as `path: [code] message` (no line numbers, so that an edit
elsewhere in a file does not move a known error). Fails on an error that is not in the baseline, and
on a baseline entry that no longer occurs (rewrite the file with --update after fixing one, so that
the fix cannot come back unnoticed).

    .venv/bin/python .ci/mypy_baseline.py            # the check (.ci/test.sh, pre-commit)
    .venv/bin/python .ci/mypy_baseline.py --update   # after fixing errors: shrink the baseline
"""

import argparse
import collections
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASELINE = ROOT / ".ci" / "mypy-baseline.txt"
# path:line[:column]: error: message  [code]
ERROR = re.compile(r"^(?P<path>[^:]+):\d+(?::\d+)?: error: (?P<message>.*?)(?:  \[(?P<code>[a-z-]+)\])?$")


def current_errors() -> collections.Counter[str]:
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-pretty", "--no-error-summary", "--hide-error-context"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if run.returncode not in (0, 1):  # 2: mypy itself failed (bad configuration, crash)
        sys.stderr.write(run.stdout + run.stderr)
        raise SystemExit(f"mypy did not run (exit {run.returncode})")
    errors: collections.Counter[str] = collections.Counter()
    for line in run.stdout.splitlines():
        match = ERROR.match(line)
        if match:
            # "defined on line 12" inside a message moves with edits too.
            message = re.sub(r"\bline \d+\b", "line N", match["message"])
            errors[f"{match['path']}: [{match['code'] or 'misc'}] {message}"] += 1
    return errors


def read_baseline() -> collections.Counter[str]:
    if not BASELINE.exists():
        return collections.Counter()
    lines = BASELINE.read_text(encoding="utf-8").splitlines()
    return collections.Counter(line for line in lines if line and not line.startswith("#"))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--update", action="store_true", help="rewrite the baseline with today's errors")
    args = parser.parse_args()
    errors = current_errors()
    if args.update:
        header = "# mypy errors accepted for now (.ci/mypy_baseline.py); this list may only shrink.\n"
        BASELINE.write_text(header + "".join(f"{e}\n" for e in sorted(errors.elements())), encoding="utf-8")
        print(f"mypy baseline: {sum(errors.values())} errors written to {BASELINE.relative_to(ROOT)}")
        return 0
    baseline = read_baseline()
    new, gone = errors - baseline, baseline - errors
    for error in sorted(new.elements()):
        print(f"new mypy error: {error}")
    for error in sorted(gone.elements()):
        print(f"fixed, still in the baseline: {error}")
    if gone and not new:
        print("mypy: errors were fixed; shrink the baseline: .venv/bin/python .ci/mypy_baseline.py --update")
    print(f"mypy: {sum(errors.values())} errors, baseline {sum(baseline.values())}, new {sum(new.values())}")
    return 1 if new or gone else 0


if __name__ == "__main__":
    raise SystemExit(main())
