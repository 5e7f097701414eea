#!/usr/bin/env bash
# The whole test suite on a throwaway PostgreSQL and Redis that this script installs and starts
# on free local ports, and stops again. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || need+=(postgresql)
command -v redis-server >/dev/null || need+=(redis-server)
[ -x /usr/bin/chromium ] || need+=(chromium)
# msgfmt: tests/annotation/test_translations.py checks the committed .mo against the .po.
command -v msgfmt >/dev/null || need+=(gettext)
if [ ${#need[@]} -gt 0 ]; then
  echo "==> apt-get install ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need[@]}" >/dev/null
fi
.ci/setup.sh dev

free_port() { .venv/bin/python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
pg_bin=$(dirname "$(ls -d /usr/lib/postgresql/*/bin/initdb | sort -V | tail -n1)")
work=$(mktemp -d /tmp/radlay-test.XXXXXX)
chown postgres "$work"
pg_port=$(free_port); redis_port=$(free_port)

cleanup() {
  runuser -u postgres -- "$pg_bin/pg_ctl" -D "$work/pg" -m immediate stop >/dev/null 2>&1 || true
  [ -f "$work/redis.pid" ] && kill "$(cat "$work/redis.pid")" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# Static checks first: each fails the run before any test starts.
echo "==> ruff check, ruff format --check"
.venv/bin/ruff check --no-cache .
.venv/bin/ruff format --check --no-cache .
echo "==> mypy (.ci/mypy-baseline.txt may only shrink)"
.venv/bin/python .ci/mypy_baseline.py
echo "==> mkdocs build --strict (the documentation site, warnings are errors)"
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --quiet --site-dir "$work/site"

echo "==> PostgreSQL on 127.0.0.1:$pg_port, Redis on 127.0.0.1:$redis_port"
runuser -u postgres -- "$pg_bin/initdb" -D "$work/pg" -U postgres -A trust -E UTF8 >/dev/null
runuser -u postgres -- "$pg_bin/pg_ctl" -D "$work/pg" -l "$work/pg.log" -w \
  -o "-p $pg_port -k $work -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" start >/dev/null
redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no --daemonize yes \
  --pidfile "$work/redis.pid" --logfile "$work/redis.log" --dir "$work"
for _ in $(seq 50); do redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break; sleep 0.1; done

export DATABASE_URL="postgres://postgres@127.0.0.1:$pg_port/radlay"
export REDIS_URL="redis://127.0.0.1:$redis_port/0"
# For tests/generation/test_fault_injection.py, which restarts this PostgreSQL mid-batch.
export RADLAY_TEST_PG_CTL="$pg_bin/pg_ctl" RADLAY_TEST_PGDATA="$work/pg" RADLAY_TEST_PG_LOG="$work/pg.log"
export DJANGO_SETTINGS_MODULE=config.settings.test
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
set +e
.venv/bin/python -m pytest -p no:cacheprovider "$@"
status=$?
set -e
if [ $status -eq 5 ]; then echo "pytest collected no tests: failing"; fi
exit $status
