#!/usr/bin/env bash
# Refresh requirements.lock and requirements-dev.lock (exact versions with hashes) from the ranges in
# requirements.txt and requirements-dev.txt: `make lock`. Run it after editing either file, and commit
# all four. Versions already in a lock are kept unless a range excludes them; to move everything to
# the newest allowed releases run `UPGRADE=1 make lock`.
#
# torch is resolved (so that its own dependencies are locked) but not written into the locks: the CPU
# build used here and in CI is a local wheel (--find-links /opt/wheels), the Docker image takes the
# CUDA build from PyPI or a CPU build from PyTorch's index. .ci/setup.sh and docker/Dockerfile install
# torch==2.13.0 first, exactly pinned, then the lock.
set -euo pipefail
cd "$(dirname "$0")/.."
uv_version=0.13.9
if [ -x .venv/bin/uv ] && .venv/bin/uv --version | grep -q " $uv_version"; then uv=.venv/bin/uv
else
  tools=$(mktemp -d /tmp/radlay-uv.XXXXXX); trap 'rm -rf "$tools"' EXIT
  python3 -m pip install -q --target "$tools" "uv==$uv_version"
  uv="$tools/bin/uv"
fi
links=(); [ -d /opt/wheels ] && links=(--find-links /opt/wheels)
upgrade=(); [ "${UPGRADE:-0}" = 1 ] && upgrade=(--upgrade)
common=(--quiet --generate-hashes --no-emit-package torch --python-version 3.11
        --python-platform x86_64-manylinux_2_28 --custom-compile-command "make lock" "${links[@]}" "${upgrade[@]}")
"$uv" pip compile "${common[@]}" requirements.txt -o requirements.lock
# The dev lock is the runtime lock plus the dev tools, at the same versions.
"$uv" pip compile "${common[@]}" requirements-dev.txt -c requirements.lock -o requirements-dev.lock
echo "==> requirements.lock and requirements-dev.lock written"
