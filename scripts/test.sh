#!/usr/bin/env bash
# Sets up everything the tests need (venv, requirements, headless Chromium) and runs the suite.
# Extra arguments go to pytest, e.g. `scripts/test.sh -k audit -x`.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

ensure_venv
ensure_chromium
ensure_azurite
ensure_axe
.venv/bin/ruff check .
.venv/bin/ruff format --check .
exec .venv/bin/pytest "$@"
