#!/usr/bin/env bash
# Create .venv and install radlay's Python dependencies (skipped when requirements are unchanged).
# Usage: .ci/setup.sh [runtime|dev]
set -euo pipefail
cd "$(dirname "$0")/.."
kind="${1:-dev}"
req="requirements.txt"; [ "$kind" = dev ] && req="requirements-dev.txt"
python="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "==> creating .venv with $($python --version)"
  "$python" -m venv .venv
fi
stamp=".venv/.radlay-$kind-$(cat requirements.txt "$req" | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  echo "==> installing Python packages ($req); the first time takes a few minutes"
  links=(); [ -d /opt/wheels ] && links=(--find-links /opt/wheels)
  .venv/bin/python -m pip install -q --upgrade pip
  # torch first and exactly pinned: the CPU build is on local disk; a loose pin pulls CUDA wheels.
  .venv/bin/python -m pip install -q "${links[@]}" "torch==2.13.0"
  .venv/bin/python -m pip install -q "${links[@]}" -r "$req"
  touch "$stamp"
fi
