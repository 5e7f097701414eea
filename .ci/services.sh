# Sourced by .ci/test.sh and .ci/test-quick.sh (not run on its own): what the test suite needs
# around it. The caller has `set -euo pipefail` and is in the repository root.
#
#   test_system_packages  apt-get install what is missing (PostgreSQL, Redis, Chromium, gettext)
#   test_workdir          a scratch folder in $work, removed on exit (with the services below)
#   test_services         a throwaway PostgreSQL and Redis on free local ports, stopped on exit;
#                         exports DATABASE_URL, REDIS_URL and RADLAY_TEST_PG_* for the suite
#   test_environment      the settings module and the offline switches every test run uses
#   test_cpu_mark / test_cpu_report NAME
#                         how busy the machine's cores were between the two (from /proc/stat:
#                         every process, the test databases and browsers included), printed with
#                         the wall time, so that a run's time can be read as CPU or as waiting

test_system_packages() {
  local need=()
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
}

test_workdir() {
  work=$(mktemp -d /tmp/radlay-test.XXXXXX)
  trap test_cleanup EXIT
}

test_cleanup() {
  if [ -n "${pg_bin:-}" ]; then
    runuser -u postgres -- "$pg_bin/pg_ctl" -D "$work/pg" -m immediate stop >/dev/null 2>&1 || true
  fi
  if [ -f "$work/redis.pid" ]; then kill "$(cat "$work/redis.pid")" 2>/dev/null || true; fi
  rm -rf "$work"
}

test_cpu_mark() {
  cpu_mark=$(awk '/^cpu /{print $2+$3+$4+$6+$7+$8, $5}' /proc/stat)
  cpu_mark_at=$(date +%s.%N)
}

test_cpu_report() {
  local now at
  now=$(awk '/^cpu /{print $2+$3+$4+$6+$7+$8, $5}' /proc/stat)
  at=$(date +%s.%N)
  awk -v a="$cpu_mark" -v b="$now" -v t0="$cpu_mark_at" -v t1="$at" -v n="$(nproc)" -v name="$1" 'BEGIN {
    split(a, x, " "); split(b, y, " "); busy = y[1] - x[1]; idle = y[2] - x[2];
    printf "==> %s: %.0f s wall, the %d cores %.0f %% busy (%.0f core-seconds of work)\n",
      name, t1 - t0, n, 100 * busy / (busy + idle), busy / 100 }'
}

test_free_port() {
  .venv/bin/python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

test_services() {
  [ -n "${work:-}" ] || test_workdir
  pg_bin=$(dirname "$(ls -d /usr/lib/postgresql/*/bin/initdb | sort -V | tail -n1)")
  chown postgres "$work"
  local pg_port redis_port
  pg_port=$(test_free_port); redis_port=$(test_free_port)
  echo "==> PostgreSQL on 127.0.0.1:$pg_port, Redis on 127.0.0.1:$redis_port"
  runuser -u postgres -- "$pg_bin/initdb" -D "$work/pg" -U postgres -A trust -E UTF8 >/dev/null
  runuser -u postgres -- "$pg_bin/pg_ctl" -D "$work/pg" -l "$work/pg.log" -w \
    -o "-p $pg_port -k $work -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" start >/dev/null
  # A database per pytest-xdist worker (config/settings/test.py): room for one per core and more.
  redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no --daemonize yes \
    --databases $(( $(nproc) + 64 )) --pidfile "$work/redis.pid" --logfile "$work/redis.log" --dir "$work"
  for _ in $(seq 50); do redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break; sleep 0.1; done

  export DATABASE_URL="postgres://postgres@127.0.0.1:$pg_port/radlay"
  export REDIS_URL="redis://127.0.0.1:$redis_port/0"
  # For the tests marked pg_restart, which restart this PostgreSQL mid-batch.
  export RADLAY_TEST_PG_CTL="$pg_bin/pg_ctl" RADLAY_TEST_PGDATA="$work/pg" RADLAY_TEST_PG_LOG="$work/pg.log"
}

test_environment() {
  export DJANGO_SETTINGS_MODULE=config.settings.test
  export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
}
