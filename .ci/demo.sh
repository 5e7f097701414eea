#!/usr/bin/env bash
# The embedded default: SQLite, tasks in-process, the demo study, logins and links printed, then serve.
set -euo pipefail
cd "$(dirname "$0")/.."
.ci/setup.sh runtime
export DJANGO_SETTINGS_MODULE=config.settings.local
unset DATABASE_URL REDIS_URL
host="${HOST:-127.0.0.1}"; port="${PORT:-8000}"
.venv/bin/python manage.py migrate --noinput -v0
.venv/bin/python manage.py demo --base-url "http://$host:$port"
exec .venv/bin/python manage.py runserver "$host:$port"
