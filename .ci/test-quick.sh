#!/usr/bin/env bash
# The edit loop's subset of the suite (`make test-quick`): every test but the browser tests (e2e),
# those that start servers or real workers in other processes (integration), the slow simulations
# (slow), those that take seconds each (heavy), those that read the authors' release (release) and
# those that restart PostgreSQL (pg_restart), across the machine's cores. No static checks: run them with `make test`.
#
# With DATABASE_URL set (a running PostgreSQL of yours; REDIS_URL too if you have one) it runs
# against that: the test databases are copies of a template migrated once per set of migrations,
# so a second run starts in seconds. Without it, it starts a throwaway PostgreSQL and Redis as
# `make test` does (.ci/services.sh). Arguments go to pytest (`make test-quick ARGS="tests/console"`).
set -euo pipefail
cd "$(dirname "$0")/.."
source .ci/services.sh

if [ -z "${DATABASE_URL:-}" ]; then
  test_system_packages
  .ci/setup.sh dev
  test_services
fi
test_environment
set +e
test_cpu_mark
.venv/bin/python -m pytest -p no:cacheprovider -n auto --dist loadfile \
  -m "not (e2e or integration or slow or heavy or release or pg_restart)" "$@"
status=$?
test_cpu_report "the quick run"
set -e
if [ $status -eq 5 ]; then echo "pytest collected no tests: failing"; fi
exit $status
