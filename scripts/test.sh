#!/usr/bin/env bash
# Sets up everything the tests need (venv, requirements, headless Chromium) and runs the suite.
# Extra arguments go to pytest, e.g. `scripts/test.sh -k audit -x`.
# The suite runs on AUDIT_TEST_WORKERS pytest-xdist workers (default 3: on two cores a third
# worker fills the time the others wait on subprocesses, servers and Spark); `-n 0` or any `-n`
# of your own overrides it. Each worker has its own test database (pytest-django adds the
# worker's name) and picks free loopback ports for the servers it starts.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

ensure_venv
ensure_chromium
ensure_azurite
ensure_axe
.venv/bin/ruff check .
.venv/bin/ruff format --check .
workers=(-n "${AUDIT_TEST_WORKERS:-3}" --dist worksteal)
for arg in "$@"; do
  case "$arg" in -n | -n* | --numprocesses*) workers=() ;; esac
done
exec .venv/bin/pytest "${workers[@]}" "$@"
