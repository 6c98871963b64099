"""Django settings, all from the environment (see the configuration table in README.md)."""

import json
import os
import warnings
from pathlib import Path

import dj_database_url

from config.env import ConfigError, env_bool, env_float, env_int, env_list, env_str


def _beat(task: str, every: float, expires: float | None = None) -> dict:
    """A beat schedule entry; a pass still queued after `expires` seconds is dropped (the next
    one supersedes it)."""
    entry: dict = {"task": task, "schedule": every}
    if expires is not None:
        entry["options"] = {"expires": expires}
    return entry


BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("AUDIT_VAR_DIR", str(BASE_DIR / "var")))

DEBUG = env_bool("DJANGO_DEBUG", False)
_DEV_SECRET_KEY = "dev-insecure-secret-key-change-me"
SECRET_KEY = env_str("DJANGO_SECRET_KEY", _DEV_SECRET_KEY)
# AUDIT_ENV=production (docker-compose sets it) refuses unsafe settings at start-up.
PRODUCTION = env_str("AUDIT_ENV", "development").lower() == "production"
if PRODUCTION and DEBUG:
    raise ConfigError("refusing to start: DJANGO_DEBUG must be false when AUDIT_ENV=production")
# "change-me" also catches .env.example's placeholder, a key anyone can read on GitHub.
if PRODUCTION and ("change-me" in SECRET_KEY.lower() or len(SECRET_KEY) < 32):
    raise ConfigError(
        "refusing to start: set DJANGO_SECRET_KEY to a random string of 32+ characters "
        "when AUDIT_ENV=production"
    )
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "audit",
    "audit.alerting",
    "frontend",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Response-only (a header): outside the API fast path so its answers carry it too.
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Cached hot API reads with a valid token are answered here, before sessions, CSRF, routing
    # and DRF (issue 16); everything else passes through (audit/api/fast_path.py).
    "audit.api.fast_path.hot_reads",
    # Serves /static/ in every mode (no separate web server needed for the dashboard's assets).
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Before any view reads the body: oversized requests answer 413, not 500 / bare 400.
    "audit.limits.request_size_limit",
    "django.contrib.messages.middleware.MessageMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "frontend" / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# SQLite is the embedded default; DATABASE_URL (e.g. postgres://...) switches to PostgreSQL.
DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", f"sqlite:///{BASE_DIR / 'db.sqlite3'}"),
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets the web server read while a worker writes.
    DATABASES["default"].setdefault("OPTIONS", {})["init_command"] = (
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
    )
    DATABASES["default"]["OPTIONS"]["timeout"] = 30

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "frontend" / "static"]
STATIC_ROOT = VAR_DIR / "static"
# Serve straight from the app/static folders: works without `collectstatic` (the run script
# and the tests), and `collectstatic` into STATIC_ROOT still works for the Docker image.
WHITENOISE_USE_FINDERS = True
# Without `collectstatic` STATIC_ROOT does not exist; the finders serve everything anyway.
warnings.filterwarnings("ignore", message="No directory at: ", category=UserWarning)

# Security headers; cookies are Secure behind TLS (DJANGO_SECURE_COOKIES=true, or in production).
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
SECURE_COOKIES = env_bool("DJANGO_SECURE_COOKIES", PRODUCTION)
SESSION_COOKIE_SECURE = SECURE_COOKIES
CSRF_COOKIE_SECURE = SECURE_COOKIES
if SECURE_COOKIES:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_HSTS_SECONDS = env_int("DJANGO_HSTS_SECONDS", 31536000)
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

# Sessions in the database, each request's session and user read by SQL compiled once
# (frontend/sessions.py): logout, password changes and deactivation take effect on the next
# request in every process, as with Django's own `db` backend and ModelBackend.
SESSION_ENGINE = "frontend.sessions"
AUTHENTICATION_BACKENDS = ["frontend.sessions.UserBackend"]

LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/login/"

# === API block (REST framework, OpenAPI) ====================================================
# Swagger UI / Redoc assets are served from the drf-spectacular-sidecar package (no CDN).
INSTALLED_APPS += ["drf_spectacular_sidecar"]
REST_FRAMEWORK = {
    # Token first: an anonymous request then gets 401 with `WWW-Authenticate: Token`.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "audit.api.authentication.CachedTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_RENDERER_CLASSES": ["audit.api.renderers.ORJSONRenderer"],
    "EXCEPTION_HANDLER": "audit.api.exceptions.json_exception_handler",
    # Expensive endpoints name their throttle classes (audit/api/throttles.py); the rate is
    # AUDIT_API_EXPENSIVE_RATE below. Listed here so DRF's schema and docs know the scope.
    "DEFAULT_THROTTLE_RATES": {"expensive": None},
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Delta Audit API",
    "DESCRIPTION": (
        "Isolation audits of Delta Lake tables: commits, findings, settings, advice. "
        "Authenticate with a session or `Authorization: Token <key>` "
        "(`manage.py drf_create_token <user>`). Tables belong to projects: a user reads the "
        "tables of their projects (any other table answers 404); members of a table's project "
        "acknowledge and re-open its findings (viewers get 403); owners of a project register "
        "and remove its tables; administrators (is_staff) do everything. A read-only token "
        "gets 403 on every unsafe method."
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "ENUM_NAME_OVERRIDES": {
        "TableStatusEnum": "audit.models.Table.Status",
        "FindingStatusEnum": "audit.models.Finding.Status",
        "SeverityEnum": "audit.models.Finding.Severity",
    },
}
# Analyses (settings, recommendations, hotspots) are cached per (table, stored version).
AUDIT_API_ANALYSIS_CACHE_SECONDS = env_int("AUDIT_API_ANALYSIS_CACHE_SECONDS", 3600)
# Per user (token) rate of the expensive endpoints: explain, analyses, full-zoom timelines.
# DRF syntax (`N/second|minute|hour|day`); empty disables throttling. 429 + Retry-After over it.
AUDIT_API_EXPENSIVE_RATE = env_str("AUDIT_API_EXPENSIVE_RATE", "60/minute")
# A timeline window at most this many versions wide is cheap (rollups); wider ones are throttled.
AUDIT_API_TIMELINE_CHEAP_SPAN = env_int("AUDIT_API_TIMELINE_CHEAP_SPAN", 20_000)
# Request bodies over this many bytes answer 413 (audit/limits.py), on the API and on forms.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("AUDIT_MAX_BODY_BYTES", 2_621_440)
# The timeline of a window is cached this long (and only until commits are stored or the
# table's findings change: its findings generation).
AUDIT_API_TIMELINE_CACHE_SECONDS = env_int("AUDIT_API_TIMELINE_CACHE_SECONDS", 30)
# A page of a table's commits, of findings, of tables and a commit's detail are cached this
# long, and only until what they show changes (stored version, findings generation, table rows:
# audit/api/list_cache.py).
AUDIT_API_LIST_CACHE_SECONDS = env_int("AUDIT_API_LIST_CACHE_SECONDS", 30)
# The reader-independent part of the findings pages and of a table's page is cached this long,
# and only until what it shows changes (tables' names and findings, the table's row:
# frontend/page_cache.py). 0 renders every page.
AUDIT_PAGE_CACHE_SECONDS = env_int("AUDIT_PAGE_CACHE_SECONDS", 30)
# Cached hot reads with a valid token are answered before sessions, routing and DRF
# (audit/api/fast_path.py); off: DRF answers them from the same cache (the bench compares).
AUDIT_API_FAST_PATH = env_bool("AUDIT_API_FAST_PATH", True)
# A valid API token is remembered this long per process (a revoked one works that much longer).
AUDIT_API_TOKEN_CACHE_SECONDS = env_int("AUDIT_API_TOKEN_CACHE_SECONDS", 10)
# === end of API block =======================================================================

# --- Delta Audit ---------------------------------------------------------------
# Table URIs must live under one of these roots (local paths or remote URI prefixes).
AUDIT_ALLOWED_ROOTS = env_list("AUDIT_ALLOWED_ROOTS", [str(BASE_DIR)])
# How many rows of a data file a witness shows.
AUDIT_WITNESS_SAMPLE_ROWS = env_int("AUDIT_WITNESS_SAMPLE_ROWS", 5)
AUDIT_TAIL_INTERVAL_SECONDS = env_float("AUDIT_TAIL_INTERVAL_SECONDS", 5.0)
AUDIT_BACKFILL_CHUNK = env_int("AUDIT_BACKFILL_CHUNK", 5000)
# A backfill step stores further chunks with the same log listing for up to this long, then
# queues itself again (so other tables get their turn).
AUDIT_BACKFILL_STEP_SECONDS = env_float("AUDIT_BACKFILL_STEP_SECONDS", 10.0)

# --- Celery --------------------------------------------------------------------
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "redis://127.0.0.1:6379/0")
CELERY_RESULT_BACKEND = env_str("CELERY_RESULT_BACKEND", "") or None
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Task modules beyond workers/tasks.py (autodiscovery finds only that one); each block adds its own.
CELERY_IMPORTS: list[str] = []

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"py4j": {"level": "WARNING"}},
}

# === Workers, tail schedule and locks (issue 5; owned by the workers engineer) ===========
# Tail passes: beat runs `tail_all` every AUDIT_TAIL_INTERVAL_SECONDS; it probes each table
# for its next commit file and dispatches `tail_table` only for those with news, or those not
# fully checked for AUDIT_FULL_CHECK_SECONDS (a full listing notices shrunk/vanished logs).
AUDIT_FULL_CHECK_SECONDS = env_float("AUDIT_FULL_CHECK_SECONDS", 30.0)
# The worker keeps each table's log between ticks (audit/tailing.py): a tick lists only what
# follows the last known version, and immutable log files are cached up to this many MB per
# worker process. A full listing (which notices log cleanup) still runs this often per table.
AUDIT_LOG_CACHE_MB = env_float("AUDIT_LOG_CACHE_MB", 128.0)
AUDIT_LOG_CACHE_TABLES = env_int("AUDIT_LOG_CACHE_TABLES", 2000)
AUDIT_FULL_LISTING_SECONDS = env_float("AUDIT_FULL_LISTING_SECONDS", 3600.0)
# Idle backoff: a table without a new commit for AUDIT_IDLE_AFTER_SECONDS is probed (and fully
# checked) only every AUDIT_IDLE_INTERVAL_SECONDS; its first new commit brings it back to the
# base interval. 0 disables the backoff.
AUDIT_IDLE_AFTER_SECONDS = env_float("AUDIT_IDLE_AFTER_SECONDS", 3600.0)
AUDIT_IDLE_INTERVAL_SECONDS = env_float("AUDIT_IDLE_INTERVAL_SECONDS", 60.0)
# Idle tables get the full check (a worker tick: one listing request) this often instead.
AUDIT_IDLE_FULL_CHECK_SECONDS = env_float("AUDIT_IDLE_FULL_CHECK_SECONDS", 600.0)
# Tail on S3 event notifications instead of polling: "<root-uri>=<sqs-queue-url>,..."
# (audit/notifications.py). Tables under such a root are not probed between notifications.
AUDIT_NOTIFY_QUEUES = env_list("AUDIT_NOTIFY_QUEUES", [])
# Next-commit probes of one tail pass run on this many threads (each is a network round trip).
AUDIT_PROBE_THREADS = env_int("AUDIT_PROBE_THREADS", 16)
# A worker holds a table's lock this long per chunk; a crashed worker's lock expires after it.
AUDIT_LOCK_SECONDS = env_float("AUDIT_LOCK_SECONDS", 120.0)
AUDIT_CHECK_DATA = env_bool("AUDIT_CHECK_DATA", True)
# Commit rows go in by COPY (PostgreSQL) or multi-row INSERT; false = one INSERT per row.
AUDIT_BULK_INSERT = env_bool("AUDIT_BULK_INSERT", True)
# Table-level findings (hotspots, ignored isolation settings, ...) are recomputed over the whole
# stored history at most this often per table, after new commits arrive.
AUDIT_TABLE_FINDINGS_SECONDS = env_float("AUDIT_TABLE_FINDINGS_SECONDS", 60.0)

CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_TASK_DEFAULT_QUEUE", "celery")
CELERY_TASK_IGNORE_RESULT = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Redis: an unacked task of a killed worker is redelivered after this long (the beat re-dispatches
# sooner anyway); keep it above the longest chunk.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 600)}
if CELERY_BROKER_URL.startswith("sqla+"):
    # The embedded SQLAlchemy broker hands its transport options to create_engine(): none here.
    CELERY_BROKER_TRANSPORT_OPTIONS = {}
# A tail pass older than one interval is superseded by the next one: drop it.
CELERY_BEAT_SCHEDULE = {
    "tail-all-tables": _beat(
        "workers.tasks.tail_all", AUDIT_TAIL_INTERVAL_SECONDS, max(AUDIT_TAIL_INTERVAL_SECONDS, 1.0)
    ),
}
if AUDIT_NOTIFY_QUEUES:
    CELERY_BEAT_SCHEDULE["drain-notifications"] = _beat(
        "workers.tasks.drain_notifications",
        AUDIT_TAIL_INTERVAL_SECONDS,
        max(AUDIT_TAIL_INTERVAL_SECONDS, 1.0),
    )
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Take the write lock when a transaction starts: a deferred transaction that reads then
    # writes fails at once with "database is locked" when another process writes meanwhile.
    DATABASES["default"]["OPTIONS"]["transaction_mode"] = "IMMEDIATE"
    # A file, not :memory:, so a worker subprocess in the tests shares the test database.
    DATABASES["default"]["TEST"] = {
        "NAME": env_str("AUDIT_TEST_SQLITE", str(VAR_DIR / "test-db.sqlite3"))
    }
# === end of workers block ==================================================================

# === frontend block (issue 8: dashboard security headers) =================================
# A Content-Security-Policy on every page except the API docs and the admin (they ship inline
# scripts or CDN assets): scripts and styles only from our own origin, never inline, so a log
# string that slipped through escaping still could not run.
FRONTEND_CSP = env_str(
    "FRONTEND_CSP",
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; "
    "frame-ancestors 'none'; form-action 'self'",
)
FRONTEND_CSP_EXEMPT_PREFIXES = env_list("FRONTEND_CSP_EXEMPT_PREFIXES", ["/api/", "/admin/"])
MIDDLEWARE = [*MIDDLEWARE, "frontend.middleware.content_security_policy"]
# Referrer policy, nosniff, X-Frame-Options and HttpOnly session cookies: set at the top.
# How often the table page refreshes its timeline while the tab is visible (seconds).
FRONTEND_REFRESH_SECONDS = env_int("FRONTEND_REFRESH_SECONDS", 10)
# === end ===

# === Alerting block (issue 9; owned by the alerting engineer) ===============================
# /metrics accepts `Authorization: Bearer $METRICS_TOKEN` (empty = logged-in users only).
METRICS_TOKEN = env_str("METRICS_TOKEN", "")
# Links in alerts: ALERT_SITE_URL + ALERT_FINDING_PATH.format(finding_id=..., table_id=...).
ALERT_SITE_URL = env_str("ALERT_SITE_URL", "http://localhost:8000")
ALERT_FINDING_PATH = env_str("ALERT_FINDING_PATH", "/findings/{finding_id}/")
# Beat runs workers.alert_tasks.process_alerts this often: scan findings, send due deliveries.
ALERT_INTERVAL_SECONDS = env_float("ALERT_INTERVAL_SECONDS", 5.0)
ALERT_HTTP_TIMEOUT_SECONDS = env_float("ALERT_HTTP_TIMEOUT_SECONDS", 5.0)
# Retries: base * 2^(attempt-1) seconds, capped, then the delivery fails after MAX_ATTEMPTS.
ALERT_RETRY_BASE_SECONDS = env_int("ALERT_RETRY_BASE_SECONDS", 30)
ALERT_RETRY_MAX_SECONDS = env_int("ALERT_RETRY_MAX_SECONDS", 3600)
ALERT_MAX_ATTEMPTS = env_int("ALERT_MAX_ATTEMPTS", 12)
# A claimed delivery whose worker died returns to pending after this (>> the HTTP timeout).
ALERT_CLAIM_SECONDS = env_float("ALERT_CLAIM_SECONDS", 120.0)
# The escalation scan re-reads findings touched this long before its previous pass.
ALERT_SCAN_MARGIN_SECONDS = env_float("ALERT_SCAN_MARGIN_SECONDS", 600.0)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "delta-audit@localhost")
EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.smtp.EmailBackend")
EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 10)
# The worker imports the alert tasks (autodiscovery only finds workers/tasks.py).
CELERY_IMPORTS = [*CELERY_IMPORTS, "workers.alert_tasks"]
# Pool processes unwind on SIGTERM (release the table lock, roll back): workers/shutdown.py.
CELERY_IMPORTS = [*CELERY_IMPORTS, "workers.shutdown"]
CELERY_BEAT_SCHEDULE["process-alerts"] = _beat(
    "workers.alert_tasks.process_alerts",
    ALERT_INTERVAL_SECONDS,
    max(ALERT_INTERVAL_SECONDS * 2, 2.0),
)
# The scan refreshes the risk of tables whose findings changed; this recomputes every table.
CELERY_BEAT_SCHEDULE["refresh-risks"] = _beat(
    "workers.alert_tasks.refresh_all_risks", env_float("ALERT_RISK_REFRESH_SECONDS", 300.0)
)
# === end of alerting block ==================================================================

# === Storage roots and discovery (issue 14 part 1; owned by lake1) ==========================
# AUDIT_STORAGE_CONFIG (read from the environment where each read happens, see
# audit/core/storage_config.py) names a TOML file of per-root storage options.
# Roots walked by `workers.discovery_tasks.discover_roots` (beat): new tables are registered,
# tables whose log vanished are marked gone. Comma-separated; each must be under an allowed root.
AUDIT_DISCOVERY_ROOTS = env_list("AUDIT_DISCOVERY_ROOTS", [])
AUDIT_DISCOVERY_INTERVAL_SECONDS = env_float("AUDIT_DISCOVERY_INTERVAL_SECONDS", 300.0)
AUDIT_DISCOVERY_MAX_DEPTH = env_int("AUDIT_DISCOVERY_MAX_DEPTH", 6)
CELERY_IMPORTS = [*CELERY_IMPORTS, "workers.discovery_tasks"]
# Always scheduled: with no roots configured a pass does nothing.
CELERY_BEAT_SCHEDULE["discover-roots"] = _beat(
    "workers.discovery_tasks.discover_roots",
    AUDIT_DISCOVERY_INTERVAL_SECONDS,
    max(AUDIT_DISCOVERY_INTERVAL_SECONDS, 5.0),
)
# === end of storage block ==================================================================

# === Spark fleet pipeline (issue 6; owned by the Spark engineer) ===========================
# `manage.py spark_audit` and the `spark_audit_tables` task run the audit of many tables as one
# Spark job (workers/spark_job.py). The master: local[*], spark://..., yarn, k8s://..., or a
# Spark Connect URL sc://host:15002.
AUDIT_SPARK_MASTER = env_str("AUDIT_SPARK_MASTER", "local[*]")
# A table with more pending commits than this is backfilled through Spark instead of the tail
# (workers.spark_tasks.should_use_spark). 0 = never. On one 2-core machine Spark is not faster
# than the Python path (bench/bench_spark.py); set it when a cluster is available.
AUDIT_SPARK_BACKFILL_THRESHOLD = env_int("AUDIT_SPARK_BACKFILL_THRESHOLD", 0)
# Consecutive commits one Spark task reads and summarises.
AUDIT_SPARK_CHUNK_COMMITS = env_int("AUDIT_SPARK_CHUNK_COMMITS", 100_000)
# Tables are locked for the whole job (the tail skips them meanwhile).
AUDIT_SPARK_LOCK_SECONDS = env_float("AUDIT_SPARK_LOCK_SECONDS", 6 * 3600.0)
AUDIT_SPARK_LOG_LEVEL = env_str("AUDIT_SPARK_LOG_LEVEL", "WARN")
# The driver JVM's stderr (Spark's own log lines); empty = a file in the temp directory.
AUDIT_SPARK_LOG_FILE = env_str("AUDIT_SPARK_LOG_FILE", "")
# Spark tasks hold a JVM: route them to a dedicated worker (`celery -A workers worker -Q spark
# -c 1`) by setting a queue name; empty keeps them on the default queue.
AUDIT_SPARK_QUEUE = env_str("AUDIT_SPARK_QUEUE", "")
# Extra Spark settings for the session, a JSON object, e.g. how executors get their Python:
# {"spark.archives": "hdfs:///envs/audit.tar.gz#environment",
#  "spark.pyspark.python": "./environment/bin/python"} (docs/spark.md). Never put secrets here:
# Spark shows its settings in its UI and logs (object-store secrets stay in
# AUDIT_STORAGE_CONFIG, resolved where each task runs).
AUDIT_SPARK_CONF = json.loads(os.environ.get("AUDIT_SPARK_CONF") or "{}")
CELERY_IMPORTS = [*CELERY_IMPORTS, "workers.spark_tasks"]
if AUDIT_SPARK_QUEUE:
    CELERY_TASK_ROUTES = {"workers.spark_tasks.*": {"queue": AUDIT_SPARK_QUEUE}}
# === end of Spark block ====================================================================

# === Orphan data files (issue 19; owned by the integrity engineer) =========================
# Beat runs `workers.orphan_tasks.scan_all_orphans` every AUDIT_ORPHAN_SCAN_SECONDS; each table
# is listed at most once per interval, within the bounds below (never deleting anything).
AUDIT_ORPHAN_SCAN_SECONDS = env_float("AUDIT_ORPHAN_SCAN_SECONDS", 3600.0)
# Unreferenced files younger than this (or than twice the longest commit seen in flight, if
# longer) may belong to a commit still running: they are not orphans yet.
AUDIT_ORPHAN_MIN_AGE_SECONDS = env_float("AUDIT_ORPHAN_MIN_AGE_SECONDS", 3600.0)
# An `orphan_files` finding from this many orphan bytes (default 1 GiB).
AUDIT_ORPHAN_FINDING_BYTES = env_int("AUDIT_ORPHAN_FINDING_BYTES", 1 << 30)
AUDIT_ORPHAN_MAX_FILES = env_int("AUDIT_ORPHAN_MAX_FILES", 200_000)
AUDIT_ORPHAN_MAX_DIRS = env_int("AUDIT_ORPHAN_MAX_DIRS", 20_000)
AUDIT_ORPHAN_MAX_DEPTH = env_int("AUDIT_ORPHAN_MAX_DEPTH", 8)
AUDIT_ORPHAN_SCANS_KEPT = env_int("AUDIT_ORPHAN_SCANS_KEPT", 500)  # per table
CELERY_IMPORTS = [*CELERY_IMPORTS, "workers.orphan_tasks"]
CELERY_BEAT_SCHEDULE["scan-orphans"] = _beat(
    "workers.orphan_tasks.scan_all_orphans",
    min(AUDIT_ORPHAN_SCAN_SECONDS, 600.0),  # dispatches only the tables due
    600.0,
)
# === end of orphan block =====================================================================

# Teams settings ===============================================================================
# The project each discovery root registers its tables into: "ROOT=PROJECT" entries (comma
# separated; the text after the last "=" is the project). Roots not named here register into
# the project named "default".
AUDIT_DISCOVERY_PROJECTS = dict(
    entry.rsplit("=", 1) for entry in env_list("AUDIT_DISCOVERY_PROJECTS", []) if "=" in entry
)
# Log in through a reverse proxy that names the user in a header (the `request.META` key, e.g.
# "HTTP_X_REMOTE_USER"; empty: off). Only behind a proxy that strips it from clients' requests.
AUDIT_REMOTE_USER_HEADER = env_str("AUDIT_REMOTE_USER_HEADER", "")
if AUDIT_REMOTE_USER_HEADER:
    _AFTER_AUTH = MIDDLEWARE.index("django.contrib.auth.middleware.AuthenticationMiddleware") + 1
    MIDDLEWARE = [
        *MIDDLEWARE[:_AFTER_AUTH],
        "audit.remote_user.HeaderRemoteUser",
        *MIDDLEWARE[_AFTER_AUTH:],
    ]
    AUTHENTICATION_BACKENDS = [*AUTHENTICATION_BACKENDS, "audit.remote_user.ProxyUserBackend"]
