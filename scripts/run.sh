#!/usr/bin/env bash
# Start the whole product: web server, a Celery worker + beat, and demo tables that keep
# receiving commits from real concurrent deltalake writers.
#
#   scripts/run.sh            run until Ctrl-C
#   scripts/run.sh --check    start everything, wait until every demo table is ingested with
#                             findings, print a summary and exit 0 (1 on timeout): a smoke test
#
# Broker: Redis at CELERY_BROKER_URL when reachable; otherwise an embedded broker (kombu's
# SQLAlchemy transport on var/celery-broker.sqlite), so a fresh machine needs no Redis.
#
# Its web port must be free: with another program listening there the script stops at once
# (exit 1), and it announces the URL only once /healthz answers with the id it gave its server.
#
# Environment: AUDIT_PORT (8000) or WEB_BIND (127.0.0.1:$AUDIT_PORT); AUDIT_VAR_DIR (./var: logs,
# embedded broker, beat schedule); AUDIT_DEMO_DIR (./demo-tables); AUDIT_STOP_GRACE_SECONDS (5).
#
# Stopping: Ctrl-C or SIGTERM (to this script or its process group) stops web, worker, beat and
# the demo writer within AUDIT_STOP_GRACE_SECONDS + 3 s (5 + 3 by default). Each runs in its own process group;
# their leaders get SIGTERM (gunicorn and Celery shut down warm), then whatever still runs after
# the grace period gets SIGQUIT (Celery's cold shutdown) and SIGTERM, and two seconds later
# SIGKILL. Nothing is lost: a tail step cut short is one database transaction, rolled back; its
# pool process releases the table's lock as it exits (workers/shutdown.py), so the next tick
# redoes the step from the last stored version.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT="$(pwd)"
CHECK=0
[[ "${1:-}" == "--check" ]] && CHECK=1

PY="$ROOT/.venv/bin/python"
source scripts/lib.sh
if [[ "${AUDIT_RUN_SKIP_INSTALL:-0}" != 1 ]]; then  # set by tests whose .venv is ready
    echo "==> checking .venv and requirements"
    ensure_venv
fi

VAR="${AUDIT_VAR_DIR:-$ROOT/var}"
DEMO="${AUDIT_DEMO_DIR:-$ROOT/demo-tables}"
GRACE="${AUDIT_STOP_GRACE_SECONDS:-5}"
mkdir -p "$VAR"
export DJANGO_SETTINGS_MODULE=config.settings
# The demo tables only: never the checkout (its database, var/ and storage config).
export AUDIT_ALLOWED_ROOTS="${AUDIT_ALLOWED_ROOTS:-$DEMO}"
export AUDIT_TAIL_INTERVAL_SECONDS="${AUDIT_TAIL_INTERVAL_SECONDS:-2}"
export AUDIT_TABLE_FINDINGS_SECONDS="${AUDIT_TABLE_FINDINGS_SECONDS:-10}"
export DJANGO_DEBUG="${DJANGO_DEBUG:-false}"
WEB_BIND="${WEB_BIND:-127.0.0.1:${AUDIT_PORT:-8000}}"

# --- the web port: ours, or a clear refusal -----------------------------------------------
# Another program listening there would answer the checks below in our place: refuse at once.
if ! "$PY" - "$WEB_BIND" <<'EOF'
import socket, sys
host, _, port = sys.argv[1].rpartition(":")
host = host.strip("[]") or "0.0.0.0"
family = socket.AF_INET6 if ":" in host else socket.AF_INET
with socket.socket(family, socket.SOCK_STREAM) as s:
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gunicorn: TIME_WAIT is no owner
    try:
        s.bind((host, int(port)))
    except OSError:
        sys.exit(1)
EOF
then
    echo "error: $WEB_BIND is already in use by another program; stop it or choose another port (AUDIT_PORT=8001 scripts/run.sh)" >&2
    exit 1
fi
# Our server says this id back on /healthz: the URL is announced only when it does.
RUN_ID="$("$PY" -c 'import secrets; print(secrets.token_hex(16))')"

# --- broker ------------------------------------------------------------------------------
BROKER="${CELERY_BROKER_URL:-redis://127.0.0.1:6379/0}"
if [[ "$BROKER" == redis://* ]] && ! "$PY" - "$BROKER" <<'EOF'
import sys, redis
try:
    redis.Redis.from_url(sys.argv[1], socket_connect_timeout=1).ping()
except Exception:
    sys.exit(1)
EOF
then
    echo "==> Redis not reachable at $BROKER: using the embedded SQLAlchemy broker ($VAR/celery-broker.sqlite)"
    BROKER="sqla+sqlite:///$VAR/celery-broker.sqlite"
fi
export CELERY_BROKER_URL="$BROKER"
echo "==> broker: $CELERY_BROKER_URL"

# --- database and admin user -------------------------------------------------------------
"$PY" manage.py migrate --noinput -v 0
"$PY" - <<'EOF'
import secrets
import django
django.setup()
from django.contrib.auth import get_user_model
User = get_user_model()
if not User.objects.filter(is_superuser=True).exists():
    password = secrets.token_urlsafe(12)
    User.objects.create_superuser("admin", "admin@example.org", password)
    print(f"==> created admin user: admin / {password}")
else:
    print("==> an admin user already exists (reset its password: .venv/bin/python manage.py changepassword admin)")
EOF

# --- demo tables -------------------------------------------------------------------------
echo "==> creating demo tables under $DEMO"
"$PY" -m audit.demo create "$DEMO" | while read -r table; do
    "$PY" manage.py add_table "$table"
done

if [[ "$CELERY_BROKER_URL" == sqla+* ]]; then
    # kombu's SQLAlchemy transport races when worker and beat create the queue at once.
    "$PY" -c "import workers, django; django.setup(); import workers.tasks as t; t.declare_default_queue()"
fi

PIDS=()
alive() {
    local pid
    for pid in "${PIDS[@]}"; do
        # A group is alive while any of its processes is (pool children, gunicorn workers).
        kill -0 -- "-$pid" 2>/dev/null && return 0
    done
    return 1
}
signal_leaders() {
    local pid
    for pid in "${PIDS[@]}"; do kill "-$1" "$pid" 2>/dev/null || true; done
}
signal_groups() {
    local pid
    for pid in "${PIDS[@]}"; do kill "-$1" -- "-$pid" 2>/dev/null || true; done
}
cleanup() {
    trap - INT TERM EXIT
    echo "==> stopping"
    # Leaders first: gunicorn's master and Celery's main process stop their own children
    # (warm shutdown: running tail steps finish).
    signal_leaders TERM
    local deadline=$((SECONDS + GRACE))
    while alive && ((SECONDS < deadline)); do sleep 0.2; done
    if alive; then
        # Cold shutdown; pool processes unwind (workers/shutdown.py: locks released, rolled back).
        echo "==> still running after ${GRACE}s: cold shutdown"
        signal_leaders QUIT
        signal_groups TERM
        deadline=$((SECONDS + 2))
        while alive && ((SECONDS < deadline)); do sleep 0.2; done
        signal_groups KILL
    fi
    wait 2>/dev/null || true
    echo "==> stopped"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# setsid: each component is the leader of its own process group, so the signals above reach
# its children too, and a Ctrl-C in the terminal reaches this script only.
setsid "$PY" -m audit.demo write "$DEMO" --interval 2 >"$VAR/demo-writer.log" 2>&1 &
PIDS+=($!)
setsid "$PY" -m celery -A workers worker --beat --schedule "$VAR/celerybeat-schedule" \
    --loglevel INFO --concurrency 2 --without-gossip --without-mingle >"$VAR/worker.log" 2>&1 &
PIDS+=($!)
echo "==> worker + beat started (log: $VAR/worker.log); demo writer running ($VAR/demo-writer.log)"
# The server's whole configuration is config/gunicorn.conf.py (what bench/bench_api.py measures);
# only where it listens and logs, and the shutdown grace, come from here.
AUDIT_RUN_ID="$RUN_ID" WEB_GRACEFUL_TIMEOUT="$GRACE" WEB_ACCESS_LOG="$VAR/web-access.log" WEB_ERROR_LOG="$VAR/web.log" \
    setsid "$PY" -m gunicorn config.wsgi:application -c config/gunicorn.conf.py --bind "$WEB_BIND" &
WEB_PID=$!
PIDS+=($WEB_PID)
# Ours when /healthz says our run id; a server that died (the port taken meanwhile) or another
# program's answer is an error, not a dashboard.
ours() { curl -fsS --max-time 2 "http://$WEB_BIND/healthz" 2>/dev/null | grep -q "\"run\": *\"$RUN_ID\""; }
started=0
for _ in $(seq 1 60); do
    if ours; then started=1; break; fi
    if ! kill -0 "$WEB_PID" 2>/dev/null; then break; fi
    sleep 0.5
done
if [[ $started != 1 ]]; then
    echo "error: our web server did not start on $WEB_BIND (the end of $VAR/web.log:)" >&2
    tail -n 5 "$VAR/web.log" >&2 2>/dev/null || true
    exit 1
fi

if [[ $CHECK == 1 ]]; then
    status=0
    "$PY" - <<'EOF' || status=$?
import sys, time
import django
django.setup()
from audit.models import Commit, Finding, Table

from audit.demo import EXPECTED_KINDS


def missing_kinds(table):
    found = set(table.findings.filter(status="open").values_list("kind", flat=True))
    return EXPECTED_KINDS.get(table.name, set()) - found


deadline = time.monotonic() + 180
while time.monotonic() < deadline:
    tables = list(Table.objects.all())
    ready = [
        t for t in tables
        if t.status == "ok" and t.last_seen_version is not None and not missing_kinds(t)
    ]
    if tables and len(ready) == len(tables):
        break
    time.sleep(2)
else:
    for t in Table.objects.all():
        print(f"NOT READY {t.name}: status={t.status} v={t.last_seen_version} "
              f"missing findings {sorted(map(str, missing_kinds(t)))} {t.last_error}")
    sys.exit(1)
for t in Table.objects.all():
    kinds = sorted(set(t.findings.filter(status="open").values_list("kind", flat=True)))
    print(f"{t.name}: {t.commits.count()} commits up to v{t.last_seen_version}, "
          f"{t.findings.filter(status='open').count()} open findings {kinds}")
print(f"OK: {Table.objects.count()} tables, {Commit.objects.count()} commits, "
      f"{Finding.objects.count()} findings")
EOF
    if ! ours; then
        echo "our web server is not answering on http://$WEB_BIND/healthz"
        status=1
    fi
    exit $status
fi

echo "==> dashboard on http://$WEB_BIND/ (API at /api/, admin at /admin/); Ctrl-C stops everything"
# `wait` returns when a signal arrives, so the traps above run at once.
while alive; do wait -n 2>/dev/null || sleep 1; done
