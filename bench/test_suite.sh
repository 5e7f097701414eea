#!/usr/bin/env bash
# How long test paths take serially and across pytest-xdist workers, on a throwaway PostgreSQL and
# Redis (.ci/services.sh, as `make test`): the collection, the test database's set-up (the template
# migrated once, then a copy), then the paths once serially (the reference) and once with -n N
# (the way `make test` runs them), and the ratio of the two.
#
# Each run is reported as wall time and as CPU seconds: pytest's with every process it started
# (workers, Celery workers, browsers) plus PostgreSQL's (its server processes). On a machine that
# others load too, wall times stretch with the load and the CPU seconds hardly do: on an idle
# machine a CPU-bound run takes about its CPU seconds serially, and about its CPU seconds divided
# by the cores with N >= cores workers.
#
# Usage: bench/test_suite.sh [-n N] PATH...   (default -n auto; pytest options may follow the paths)
#   bench/test_suite.sh -n 2 tests/evaluation tests/annotation
set -euo pipefail
cd "$(dirname "$0")/.."
source .ci/services.sh

workers=auto
if [ "${1:-}" = -n ]; then workers=$2; shift 2; fi
[ $# -gt 0 ] || { echo "usage: bench/test_suite.sh [-n N] PATH..." >&2; exit 2; }

test_workdir
test_services
test_environment
pytest=(.venv/bin/python -m pytest -p no:cacheprovider -q --pg-restart=exclude)

# CPU seconds of the PostgreSQL server: the postmaster, the server processes it has reaped, and
# those still running.
postgres_cpu() {
  .venv/bin/python - "$(head -n1 "$work/pg/postmaster.pid")" <<'PY'
import os, sys

tick = os.sysconf("SC_CLK_TCK")
postmaster = sys.argv[1]

def fields(pid):
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()

total = sum(int(v) for v in fields(postmaster)[11:15])  # utime, stime, cutime, cstime
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            f = fields(pid)
        except OSError:
            continue
        if f[1] == postmaster:  # ppid
            total += int(f[11]) + int(f[12])
print(f"{total / tick:.1f}")
PY
}

# Runs pytest with the given arguments; prints "<label>: wall W s, cpu C s (pytest P + postgresql Q)"
# and the summary line; sets $wall and $cpu.
measure() {
  local label=$1; shift
  local log="$work/$label.log" pg_before pg_after
  pg_before=$(postgres_cpu)
  set +e
  /usr/bin/time -f "%e %U %S" -o "$work/time" "${pytest[@]}" "$@" >"$log" 2>&1
  local status=$?
  set -e
  pg_after=$(postgres_cpu)
  read -r wall user sys <"$work/time"
  local own pg
  own=$(echo "$user + $sys" | bc); pg=$(echo "$pg_after - $pg_before" | bc)
  cpu=$(echo "$own + $pg" | bc)
  printf '%-22s wall %7.1f s   cpu %7.1f s (pytest and its processes %.1f, postgresql %.1f)\n' \
    "$label" "$wall" "$cpu" "$own" "$pg"
  echo "    $(grep -E ' in [0-9.]+s' "$log" | tail -n1) [exit $status]"
}

echo "==> load average before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
measure collection --collect-only "$@"
# The database set-up: the first run migrates the template (what every run did before), the
# second only copies it.
probe=tests/test_database_template.py::test_this_database_is_a_migrated_copy_of_todays_template
measure "db set-up (migrate)" "$probe"
measure "db set-up (copy)" "$probe"
measure serial "$@"
serial_wall=$wall serial_cpu=$cpu
measure "parallel -n $workers" -n "$workers" --dist loadfile "$@"
echo "==> parallel/serial: wall $(echo "scale=2; $wall / $serial_wall" | bc), cpu $(echo "scale=2; $cpu / $serial_cpu" | bc)"
echo "==> load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
