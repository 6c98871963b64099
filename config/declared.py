"""Every setting the project reads from the environment, declared once.

config/settings.py takes its values from here, config/gunicorn.conf.py reads its own, and the
configuration table in README.md is generated from this list (`python -m config.declared
--write`; tests/app/test_declared_settings.py fails when the table is out of date or when code
reads a setting that is not declared). Adding a setting means adding one `Setting` line.

Django-free and import-light on purpose: gunicorn reads its configuration before Django starts.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from config.env import PARSERS

# Where a value is read. Most become Django settings; a few are read by the program that needs
# them before (or without) Django.
SETTINGS = "settings"
GUNICORN = "config/gunicorn.conf.py"
RUN_SH = "scripts/run.sh"
EACH_PROCESS = "where each read happens"  # Spark executors too: not a Django setting
SPARK_UNITS = "workers/spark/units.py"


@dataclass(frozen=True)
class Derived:
    """A default that depends on where the app runs: `compute` gets the values read so far
    (keyed by variable name, plus BASE_DIR); `shown` is how the docs table states it."""

    shown: str
    compute: Callable[[Mapping[str, Any]], Any]


@dataclass(frozen=True)
class Setting:
    name: str  # the environment variable
    default: Any  # a value of `type`, or a Derived
    type: type  # str, bool, int, float, list (comma-separated) or dict (a JSON object)
    meaning: str  # one line for the docs table
    setting: str | None = None  # the Django setting it fills: None = `name`, "" = composed
    read_by: str = SETTINGS

    @property
    def django_name(self) -> str | None:
        """The Django setting this value becomes as is, or None when settings.py composes it."""
        if self.read_by != SETTINGS or self.setting == "":
            return None
        return self.setting or self.name


def _var_dir(values: Mapping[str, Any]) -> str:
    return str(values["BASE_DIR"] / "var")


def _cpu_workers(values: Mapping[str, Any]) -> int:
    # The cores this process may run on (a container's CPU set), at least 2: one process per
    # core measured best (config/gunicorn.conf.py), threads hide the I/O waits.
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(2, cores or 1)


_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; "
    "frame-ancestors 'none'; form-action 'self'"
)
_S = Setting

DECLARED: tuple[Setting, ...] = (
    # --- the process, the database, Django's own security settings ---
    _S("AUDIT_VAR_DIR", Derived("`./var`", _var_dir), str, "runtime files (logs, embedded broker, beat schedule, test database)", ""),
    _S("AUDIT_ENV", "development", str, "`production` refuses DEBUG and weak secret keys at start-up; turns secure cookies on"),
    _S("DJANGO_SECRET_KEY", "dev-insecure-secret-key-change-me", str, "32+ random characters in production", "SECRET_KEY"),
    _S("DJANGO_DEBUG", False, bool, "Django's debug mode (never in production)", "DEBUG"),
    _S("DJANGO_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"], list, "host names the web server answers to", "ALLOWED_HOSTS"),
    _S("DJANGO_CSRF_TRUSTED_ORIGINS", [], list, "e.g. `https://audit.example.org` behind a proxy", "CSRF_TRUSTED_ORIGINS"),
    _S("DJANGO_SECURE_COOKIES", Derived("`true` in production", lambda v: v["AUDIT_ENV"].lower() == "production"), bool, "Secure cookies, HSTS, `X-Forwarded-Proto` behind TLS", "SECURE_COOKIES"),
    _S("DJANGO_HSTS_SECONDS", 31536000, int, "HSTS max-age when secure cookies are on", ""),
    _S("DATABASE_URL", Derived("`sqlite:///db.sqlite3`", lambda v: f"sqlite:///{v['BASE_DIR'] / 'db.sqlite3'}"), str, "`postgres://user@host:5432/db` for PostgreSQL", ""),
    _S("DATABASE_CONN_MAX_AGE", 60, int, "seconds a database connection is kept open between requests", ""),
    _S("AUDIT_TEST_SQLITE", Derived("`<var dir>/test-db.sqlite3`", lambda v: str(Path(v["AUDIT_VAR_DIR"]) / "test-db.sqlite3")), str, "the SQLite test database (a file, so worker subprocesses in tests share it)", ""),
    _S("LOG_LEVEL", "INFO", str, "the root logger's level", ""),
    # --- tables, tailing, ingest ---
    _S("AUDIT_ALLOWED_ROOTS", Derived("`./demo-tables`", lambda v: [str(v["BASE_DIR"] / "demo-tables")]), list, "local folders and remote prefixes (`s3://bucket/prefix`) tables must live under; none may hold the database, the var dir or the storage config"),
    _S("AUDIT_STORAGE_CONFIG", "", str, "TOML file of `[[storage]]` roots: per-prefix object-store options, read by each process that reads a table; without it the standard `AWS_*`/`AZURE_STORAGE_*`/`GOOGLE_*` variables apply ([docs/storage.md](docs/storage.md))", read_by=EACH_PROCESS),
    _S("AUDIT_DISCOVERY_PROJECTS", [], list, "`<root-uri>=<project>,...`: the project each discovery root registers its tables into (others: `default`)"),
    _S("AUDIT_DISCOVERY_ROOTS", [], list, "roots beat walks with `discover --register` (new tables registered, vanished ones marked gone)"),
    _S("AUDIT_DISCOVERY_INTERVAL_SECONDS", 300.0, float, "how often beat walks the discovery roots"),
    _S("AUDIT_DISCOVERY_MAX_DEPTH", 6, int, "folder depth a discovery walk descends"),
    _S("AUDIT_TAIL_INTERVAL_SECONDS", 5.0, float, "how often beat tails every table"),
    _S("AUDIT_BACKFILL_CHUNK", 5000, int, "commits stored per backfill chunk (one transaction)"),
    _S("AUDIT_BACKFILL_STEP_SECONDS", 10.0, float, "a backfill task stores further chunks with one log listing for this long, then requeues"),
    _S("AUDIT_BULK_INSERT", True, bool, "COPY (PostgreSQL) / multi-row INSERT (SQLite) of commit rows; `false` = one INSERT per row"),
    _S("AUDIT_CHECK_DATA", True, bool, "read data files to confirm never-existed snapshots"),
    _S("AUDIT_WITNESS_SAMPLE_ROWS", 5, int, "matching rows a witness keeps (pages, API, alerts); `0` = the row count and file names only"),
    _S("AUDIT_DV_MAX_VECTOR_BYTES", 16 << 20, int, "bytes of one deletion vector an audit decodes (its `sizeInBytes`); larger ones are reported, not read"),
    _S("AUDIT_DV_MAX_POSITIONS", 1 << 31, int, "row positions one deletion vector may hold, and the largest `numRecords` believed"),
    _S("AUDIT_DV_MAX_PASS_BYTES", 128 << 20, int, "memory the decoded deletion vectors of one audit pass may take in all; later ones are reported, not decoded"),
    _S("AUDIT_LOCK_SECONDS", 120.0, float, "per-table ingest lock lifetime per chunk (a crashed worker's lock expires)"),
    _S("AUDIT_FULL_CHECK_SECONDS", 30.0, float, "a worker tick on each table at least this often, even without news"),
    _S("AUDIT_FULL_LISTING_SECONDS", 3600.0, float, "a complete listing of each log (notices log cleanup) at least this often"),
    _S("AUDIT_LOG_CACHE_MB", 128.0, float, "per worker process: MB of immutable log files kept between ticks"),
    _S("AUDIT_LOG_CACHE_TABLES", 2000, int, "per worker process: tables whose log listing is kept between ticks"),
    _S("AUDIT_STATE_CACHE_FILES", 400_000, int, "per worker process: live files of replayed table states kept between ticks (0: none)"),
    _S("AUDIT_IDLE_AFTER_SECONDS", 3600.0, float, "a table without commits this long is idle (`0` = no idle backoff)"),
    _S("AUDIT_IDLE_INTERVAL_SECONDS", 60.0, float, "how often an idle table is probed"),
    _S("AUDIT_IDLE_FULL_CHECK_SECONDS", 600.0, float, "how often an idle table gets a worker tick"),
    _S("AUDIT_NOTIFY_QUEUES", [], list, "`<root-uri>=<sqs-queue-url>,...`: tail those roots on S3 event notifications instead of polling"),
    _S("AUDIT_PROBE_THREADS", 16, int, "threads probing tables for their next commit in one tail pass"),
    _S("AUDIT_TABLE_FINDINGS_SECONDS", 60.0, float, "how often whole-table findings (hotspots, settings) are recomputed per table"),
    _S("AUDIT_INCIDENT_QUIET_VERSIONS", 100, int, "a recurring incident is quiet after this many versions without an occurrence (and AUDIT_INCIDENT_QUIET_SECONDS)"),
    _S("AUDIT_INCIDENT_QUIET_SECONDS", 3600, int, "... and this long since its last occurrence"),
    _S("AUDIT_INCIDENT_RESOLVE_SECONDS", 604800, int, "a quiet incident is resolved after this long without an occurrence"),
    # --- API and pages ---
    _S("AUDIT_MAX_BODY_BYTES", 2621440, int, "larger request bodies answer 413 (JSON on `/api/`, a page on forms)", "DATA_UPLOAD_MAX_MEMORY_SIZE"),
    _S("AUDIT_API_EXPENSIVE_RATE", "60/minute", str, "per user/token rate of explain, the analyses and full-zoom timelines (429 over it; empty = off)"),
    _S("AUDIT_API_TIMELINE_CHEAP_SPAN", 20000, int, "timeline windows at most this many versions wide are not throttled"),
    _S("AUDIT_API_ANALYSIS_CACHE_SECONDS", 3600, int, "cache of the analyses (settings, recommendations, hotspots) per stored version"),
    _S("AUDIT_API_TIMELINE_CACHE_SECONDS", 30, int, "cache of a timeline window (keyed by what it shows: never stale; `0` = off)"),
    _S("AUDIT_API_LIST_CACHE_SECONDS", 30, int, "cache of API list pages and a commit's detail (never stale; `0` = off)"),
    _S("AUDIT_API_FAST_PATH", True, bool, "cached hot reads with a valid token are answered before sessions, routing and DRF"),
    _S("AUDIT_API_TOKEN_CACHE_SECONDS", 10, int, "a valid API token is remembered this long per web process (`0` = check every request)"),
    _S("AUDIT_PAGE_CACHE_SECONDS", 30, int, "the dashboard's cached page content (never stale; `0` = off)"),
    _S("FRONTEND_CSP", _CSP, str, "the Content-Security-Policy of every page outside the exempt prefixes"),
    _S("FRONTEND_CSP_EXEMPT_PREFIXES", ["/api/", "/admin/"], list, "paths without that policy (they ship inline scripts)"),
    _S("FRONTEND_REFRESH_SECONDS", 10, int, "live refresh of the table page while the tab is visible"),
    _S("AUDIT_RUN_ID", "", str, "set by `scripts/run.sh` for its web server: `/healthz` says it back, so the script knows the server answering on its port is its own"),
    _S("AUDIT_REMOTE_USER_HEADER", "", str, "the `request.META` key of a header naming the user, set by a trusted proxy, e.g. `HTTP_X_REMOTE_USER` (empty = off; see [docs/api.md](docs/api.md))"),
    _S("AUDIT_TRUSTED_PROXIES", ["127.0.0.1", "::1"], list, "addresses or CIDRs (`10.0.0.0/8`) of the proxies whose `AUDIT_REMOTE_USER_HEADER` is honoured; from any other peer address the header is ignored"),
    _S("AUDIT_REMOTE_USER_CREATE", False, bool, "`true` creates a user the proxy's header names for the first time (with no project); `false` refuses unknown names"),
    # --- Celery ---
    _S("CELERY_BROKER_URL", "redis://127.0.0.1:6379/0", str, "broker; `sqla+sqlite:///var/celery-broker.sqlite` is the embedded one"),
    _S("CELERY_RESULT_BACKEND", "", str, "task results (empty = none kept)", ""),
    _S("CELERY_TASK_ALWAYS_EAGER", False, bool, "run tasks in the caller (tests)"),
    _S("CELERY_TASK_DEFAULT_QUEUE", "celery", str, "the queue tasks go to"),
    _S("CELERY_VISIBILITY_TIMEOUT", 600, int, "Redis: an unacked task of a killed worker is redelivered after this long", ""),
    _S("AUDIT_LOG_SHARE_URL", "", str, "Redis URL where worker processes share each table's log listing, so a process new to a table lists only what is new (empty = off: each process lists it in full once)"),
    # --- alerting ---
    _S("METRICS_TOKEN", "", str, "bearer token for `/metrics` (empty = logged-in users only)"),
    _S("AUDIT_ALLOW_PRIVATE_WEBHOOKS", False, bool, "`true` lets webhook and Slack URLs point at loopback, private, link-local or reserved addresses"),
    _S("ALERT_SITE_URL", "http://localhost:8000", str, "the site's address in alert links"),
    _S("ALERT_FINDING_PATH", "/findings/{finding_id}/", str, "a finding's path in alert links (`{finding_id}`, `{table_id}`)"),
    _S("ALERT_INTERVAL_SECONDS", 5.0, float, "how often beat scans findings and sends due deliveries"),
    _S("ALERT_HTTP_TIMEOUT_SECONDS", 5.0, float, "timeout of one webhook or Slack request"),
    _S("ALERT_RETRY_BASE_SECONDS", 30, int, "first retry delay, doubled per attempt"),
    _S("ALERT_RETRY_MAX_SECONDS", 3600, int, "longest retry delay"),
    _S("ALERT_MAX_ATTEMPTS", 12, int, "a delivery fails after this many attempts"),
    _S("ALERT_CLAIM_SECONDS", 120.0, float, "a claimed delivery whose worker died returns to pending after this"),
    _S("ALERT_SCAN_MARGIN_SECONDS", 600.0, float, "the escalation scan re-reads findings touched this long before its previous pass"),
    _S("ALERT_RISK_REFRESH_SECONDS", 300.0, float, "how often beat recomputes every table's risk", ""),
    _S("DEFAULT_FROM_EMAIL", "delta-audit@localhost", str, "sender of alert emails"),
    _S("EMAIL_BACKEND", "django.core.mail.backends.smtp.EmailBackend", str, "Django's email backend"),
    _S("EMAIL_HOST", "localhost", str, "SMTP host"),
    _S("EMAIL_PORT", 25, int, "SMTP port"),
    _S("EMAIL_HOST_USER", "", str, "SMTP user"),
    _S("EMAIL_HOST_PASSWORD", "", str, "SMTP password"),
    _S("EMAIL_USE_TLS", False, bool, "SMTP with STARTTLS"),
    _S("EMAIL_TIMEOUT", 10, int, "seconds an SMTP connection may take"),
    # --- orphan data files ---
    _S("AUDIT_ORPHAN_SCAN_SECONDS", 3600.0, float, "how often each table's data folders are listed for orphan files"),
    _S("AUDIT_ORPHAN_PASS_SECONDS", 60.0, float, "how often beat's orphan pass queues its share of the tables due a scan (at most AUDIT_ORPHAN_SCAN_SECONDS)"),
    _S("AUDIT_ORPHAN_MIN_AGE_SECONDS", 3600.0, float, "younger files (or than twice the longest in-flight commit seen) are not orphans yet"),
    _S("AUDIT_ORPHAN_FINDING_BYTES", 1 << 30, int, "orphan bytes from which a table gets an `orphan_files` finding"),
    _S("AUDIT_TIMESTAMP_MIN_INTERVAL_MS", 1000, int, "`timestamps_out_of_order` only when a time resolves to another version over at least this long (shorter gaps are a health fact)"),
    _S("AUDIT_ORPHAN_MAX_FILES", 200_000, int, "files one orphan listing reads at most"),
    _S("AUDIT_ORPHAN_MAX_DIRS", 20_000, int, "folders one orphan listing reads at most"),
    _S("AUDIT_ORPHAN_MAX_DEPTH", 8, int, "folder depth of an orphan listing"),
    _S("AUDIT_ORPHAN_SCANS_KEPT", 500, int, "orphan scans kept per table"),
    # --- Spark ---
    _S("AUDIT_SPARK_MASTER", "local[*]", str, "Spark master (`spark://...`, `yarn`, `k8s://...`) or `sc://` Spark Connect URL"),
    _S("AUDIT_SPARK_BACKFILL_THRESHOLD", 0, int, "a table more commits behind than this is backfilled through Spark (`0` = never)"),
    _S("AUDIT_SPARK_CHUNK_COMMITS", 100_000, int, "consecutive commits one Spark task reads (longer tables are split)"),
    _S("AUDIT_SPARK_LOCK_SECONDS", 21600.0, float, "tables are locked this long for a Spark job"),
    _S("AUDIT_SPARK_LOG_LEVEL", "WARN", str, "Spark's log level"),
    _S("AUDIT_SPARK_LOG_FILE", "", str, "the driver JVM's stderr (empty = a file in the temp directory)"),
    _S("AUDIT_SPARK_QUEUE", "", str, "a dedicated Celery queue for Spark tasks (empty = the default queue)"),
    _S("AUDIT_SPARK_CONF", {}, dict, "extra Spark settings (a JSON object, e.g. the executors' Python: docs/spark.md); no secrets"),
    _S("AUDIT_SPARK_TABLE_LEVEL_UNIT", "", str, "`1`: the Spark job computes a split table's whole-history findings with one more unit that reads it all", read_by=SPARK_UNITS),
    # --- the web server (gunicorn) and scripts/run.sh ---
    _S("WEB_BIND", "0.0.0.0:8000", str, "gunicorn: the listening address (run.sh: `127.0.0.1:$AUDIT_PORT`)", read_by=GUNICORN),
    _S("WEB_CONCURRENCY", Derived("cores (at least 2)", _cpu_workers), int, "gunicorn: worker processes", read_by=GUNICORN),
    _S("WEB_THREADS", 4, int, "gunicorn: threads per worker", read_by=GUNICORN),
    _S("WEB_WORKER_CONNECTIONS", Derived("3 × WEB_THREADS", lambda v: 3 * v["WEB_THREADS"]), int, "gunicorn: connections a worker holds at once (at most this minus WEB_THREADS of them idle in keep-alive): spreads keep-alive clients over the workers", read_by=GUNICORN),
    _S("WEB_KEEPALIVE", 5, int, "gunicorn: seconds an idle keep-alive connection is kept", read_by=GUNICORN),
    _S("WEB_TIMEOUT", 60, int, "gunicorn: seconds a request may take before its worker is restarted", read_by=GUNICORN),
    _S("WEB_GRACEFUL_TIMEOUT", 30, int, "gunicorn: seconds workers get to finish on SIGTERM", read_by=GUNICORN),
    _S("WEB_ACCESS_LOG", "", str, "gunicorn: access log file (`-` = stdout, empty = none; run.sh: a file under the var dir)", read_by=GUNICORN),
    _S("WEB_ERROR_LOG", "-", str, "gunicorn: error log file (`-` = stderr)", read_by=GUNICORN),
    _S("AUDIT_PORT", 8000, int, "`scripts/run.sh`: the web port", read_by=RUN_SH),
    _S("AUDIT_DEMO_DIR", "./demo-tables", str, "`scripts/run.sh`: where the demo tables are written", read_by=RUN_SH),
    _S("AUDIT_STOP_GRACE_SECONDS", 5, int, "`scripts/run.sh`: seconds of warm shutdown before a cold one", read_by=RUN_SH),
    _S("AUDIT_RUN_SKIP_INSTALL", False, bool, "`scripts/run.sh`: skip installing the requirements (tests whose venv is ready)", read_by=RUN_SH),
)  # fmt: skip

BY_NAME: dict[str, Setting] = {s.name: s for s in DECLARED}
DJANGO_NAMES: frozenset[str] = frozenset(n for s in DECLARED if (n := s.django_name))


def read(
    setting: Setting, environ: Mapping[str, str], context: Mapping[str, Any] | None = None
) -> Any:
    """The typed value of `setting` in `environ`; its default when unset (or blank, for numbers)."""
    default = setting.default
    if isinstance(default, Derived):
        default = default.compute(context or {})
    return PARSERS[setting.type](setting.name, environ.get(setting.name), default)


def read_all(
    base_dir: Path, read_by: str = SETTINGS, environ: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """Every setting read by `read_by`, by variable name, in declaration order (a derived
    default may use the values declared before it)."""
    env = os.environ if environ is None else environ
    values: dict[str, Any] = {"BASE_DIR": base_dir}
    for setting in DECLARED:
        if setting.read_by == read_by:
            values[setting.name] = read(setting, env, values)
    del values["BASE_DIR"]
    return values


def django_settings(values: Mapping[str, Any]) -> dict[str, Any]:
    """The values that become Django settings as they are, under their setting names."""
    return {s.django_name: values[s.name] for s in DECLARED if s.django_name}


def _shown(setting: Setting) -> str:
    value = setting.default
    if isinstance(value, Derived):
        return value.shown
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, float) and value.is_integer():
        text = str(int(value))
    elif isinstance(value, list):
        text = ",".join(value)
    elif isinstance(value, dict):
        text = "{}" if not value else str(value)
    else:
        text = str(value)
    return f"`{text}`" if text else "empty"


def table() -> str:
    """The Markdown configuration table (README.md, between the markers)."""
    lines = ["| variable | default | meaning |", "|---|---|---|"]
    for s in DECLARED:
        default = _shown(s).replace("|", "\\|")
        lines.append(f"| `{s.name}` | {default} | {s.meaning} |")
    return "\n".join(lines) + "\n"


README = Path(__file__).resolve().parent.parent / "README.md"
BEGIN = "<!-- settings table: generated by `python -m config.declared --write` -->\n"
END = "<!-- end of the settings table -->\n"


def with_table(readme: str) -> str:
    """`readme` with the text between the markers replaced by the current table."""
    head, sep, rest = readme.partition(BEGIN)
    _, sep2, tail = rest.partition(END)
    if not (sep and sep2):
        raise SystemExit(f"README.md lacks the settings table markers {BEGIN.strip()!r}")
    return head + BEGIN + table() + END + tail


def main(argv: list[str]) -> int:
    if argv[1:] == ["--write"]:
        README.write_text(with_table(README.read_text(encoding="utf-8")), encoding="utf-8")
    else:
        sys.stdout.write(table())
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
