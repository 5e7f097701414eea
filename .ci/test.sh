#!/usr/bin/env bash
# The whole test suite on a throwaway PostgreSQL and Redis that this script installs and starts
# on free local ports, and stops again (.ci/services.sh). Exits non-zero on any failure.
#
# The static checks come first (RADLAY_STATIC_CHECKS=0 leaves them out, for a trial run on a few
# tests). The tests then run in two pytest invocations, each printing its own summary line:
#   1. everything but the tests marked pg_restart, across the machine's cores (pytest-xdist,
#      -n auto, whole files per worker; each worker has its own copy of the test database and its
#      own Redis database; the 40 slowest tests are listed, to keep an eye on);
#   2. the tests marked pg_restart alone (they restart this PostgreSQL, which would break every
#      other worker's connections).
# Arguments go to both (`make test ARGS="tests/evaluation -x"`; a later -n overrides -n auto in the
# first). The exit status is the first failure's, or "no tests collected" when neither ran a test.
set -euo pipefail
cd "$(dirname "$0")/.."
source .ci/services.sh

test_system_packages
.ci/setup.sh dev
test_workdir

if [ "${RADLAY_STATIC_CHECKS:-1}" != 0 ]; then
  # Static checks first: each fails the run before any test starts.
  echo "==> ruff check, ruff format --check"
  .venv/bin/ruff check --no-cache .
  .venv/bin/ruff format --check --no-cache .
  echo "==> mypy (.ci/mypy-baseline.txt may only shrink)"
  .venv/bin/python .ci/mypy_baseline.py
  echo "==> mkdocs build --strict (the documentation site, warnings are errors)"
  NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --quiet --site-dir "$work/site"
fi

test_services
test_environment
set +e
echo "==> pytest, in parallel: every test but those that restart PostgreSQL"
test_cpu_mark
.venv/bin/python -m pytest -p no:cacheprovider -n auto --dist loadfile --durations=40 --pg-restart=exclude "$@"
parallel=$?
test_cpu_report "the parallel run"
echo "==> pytest, alone: the tests that restart PostgreSQL"
test_cpu_mark
.venv/bin/python -m pytest -p no:cacheprovider --pg-restart=only "$@" -n 0
alone=$?
test_cpu_report "the run alone"
set -e
echo "==> pytest exit status: $parallel in parallel, $alone alone (5: no tests collected)"
if [ $parallel -eq 5 ] && [ $alone -eq 5 ]; then echo "pytest collected no tests: failing"; exit 5; fi
for status in $parallel $alone; do
  if [ "$status" -ne 0 ] && [ "$status" -ne 5 ]; then exit "$status"; fi
done
exit 0
