# Shared setup steps for scripts/*.sh (sourced, not run).

PYTHON="${PYTHON:-python3}"

ensure_venv() {
  if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "Python 3.11+ is required (set PYTHON=/path/to/python3.11)" >&2
    exit 1
  fi
  if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
  fi
  # Reinstall only when requirements.txt changed since the last successful install.
  local stamp=.venv/.requirements.sha
  local sum
  sum=$(sha256sum requirements.txt | cut -d' ' -f1)
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$sum" ]; then
    .venv/bin/pip install -q --disable-pip-version-check --upgrade pip
    .venv/bin/pip install -q --disable-pip-version-check -r requirements.txt
    echo "$sum" > "$stamp"
  fi
}

# Debian's Chromium for the browser tests (never a browser download).
ensure_chromium() {
  if command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ]; then
    return 0
  fi
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "note: chromium not installed; browser tests will be skipped (apt-get install chromium)" >&2
  fi
}

redis_up() {
  .venv/bin/python - <<'PY' 2>/dev/null
import os, sys
import redis
url = os.environ.get("CELERY_BROKER_URL", "redis://127.0.0.1:6379/0")
try:
    redis.Redis.from_url(url, socket_connect_timeout=1).ping()
except Exception:
    sys.exit(1)
PY
}

# Azurite (Azure Blob protocol server) for the object-store tests, from the npm registry into
# .cache/azurite; idempotent. Without node/npm the Azure tests skip with a reason.
AZURITE_VERSION="3.37.0"  # keep in step with tests/e2e/objstore.py
ensure_azurite() {
  local dir=.cache/azurite
  if [ -x "$dir/node_modules/.bin/azurite-blob" ] \
    && grep -q "\"version\": \"$AZURITE_VERSION\"" "$dir/node_modules/azurite/package.json" 2>/dev/null; then
    return 0
  fi
  if ! command -v npm >/dev/null 2>&1; then
    echo "note: npm not installed; Azure (Azurite) tests will be skipped" >&2
    return 0
  fi
  mkdir -p "$dir"
  npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "azurite@$AZURITE_VERSION" >/dev/null \
    || echo "note: npm install azurite@$AZURITE_VERSION failed; Azure tests will be skipped" >&2
}

# axe-core (accessibility rules) for the browser checks of every page (tests/e2e/pagecheck.py),
# from the npm registry into .cache/axe; idempotent. Without npm those tests skip with a reason.
AXE_VERSION="4.14.1"  # keep in step with tests/e2e/pagecheck.py
ensure_axe() {
  local dir=.cache/axe
  if grep -q "\"version\": \"$AXE_VERSION\"" "$dir/node_modules/axe-core/package.json" 2>/dev/null; then
    return 0
  fi
  if ! command -v npm >/dev/null 2>&1; then
    echo "note: npm not installed; the page checks (axe-core) will be skipped" >&2
    return 0
  fi
  mkdir -p "$dir"
  npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "axe-core@$AXE_VERSION" >/dev/null \
    || echo "note: npm install axe-core@$AXE_VERSION failed; the page checks will be skipped" >&2
}
