#!/usr/bin/env bash
# Create .venv and install radlay's Python dependencies from the lock files (exact versions, checked
# against their hashes); skipped when the lock is unchanged. Refresh the locks with `make lock`.
# Usage: .ci/setup.sh [runtime|dev]
set -euo pipefail
cd "$(dirname "$0")/.."
kind="${1:-dev}"
lock="requirements.lock"; [ "$kind" = dev ] && lock="requirements-dev.lock"
python="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "==> creating .venv with $($python --version)"
  "$python" -m venv .venv
fi
stamp=".venv/.radlay-$kind-$(cat "$lock" | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  echo "==> installing Python packages ($lock); the first time takes a few minutes"
  links=(); [ -d /opt/wheels ] && links=(--find-links /opt/wheels)
  .venv/bin/python -m pip install -q --upgrade pip
  # torch first and exactly pinned: the CPU build is on local disk; a loose pin pulls CUDA wheels.
  # It is not in the lock (one lock cannot hold both the local CPU build and PyPI's CUDA build).
  .venv/bin/python -m pip install -q "${links[@]}" "torch==2.13.0"
  .venv/bin/python -m pip install -q "${links[@]}" --require-hashes -r "$lock"
  touch "$stamp"
fi
