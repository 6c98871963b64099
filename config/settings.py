"""Django settings. Every value from the environment is declared once in config/declared.py
(its meaning, default and type; README.md's configuration table is generated from it); this
module composes them with the fixed settings."""

import ipaddress
import warnings
from pathlib import Path

import dj_database_url

from config.checks import exposed_roots
from config.declared import django_settings, read_all
from config.env import ConfigError


def _beat(task: str, every: float, expires: float | None = None) -> dict:
    """A beat schedule entry; a pass still queued after `expires` seconds is dropped (the next
    one supersedes it)."""
    entry: dict = {"task": task, "schedule": every}
    if expires is not None:
        entry["options"] = {"expires": expires}
    return entry


BASE_DIR = Path(__file__).resolve().parent.parent
# Every value read from the environment, typed and defaulted by its one declaration in
# config/declared.py (`env` is lower case: not a Django setting itself). Those that are Django
# settings as they are become this module's globals; the rest are composed below.
env = read_all(BASE_DIR)
globals().update(django_settings(env))
# A negative sample count means none (rows are never shown by accident).
AUDIT_WITNESS_SAMPLE_ROWS = max(AUDIT_WITNESS_SAMPLE_ROWS, 0)  # noqa: F821
VAR_DIR = Path(env["AUDIT_VAR_DIR"])

# AUDIT_ENV=production (docker-compose sets it) refuses unsafe settings at start-up.
PRODUCTION = env["AUDIT_ENV"].lower() == "production"
if PRODUCTION and env["DJANGO_DEBUG"]:
    raise ConfigError("refusing to start: DJANGO_DEBUG must be false when AUDIT_ENV=production")
# "change-me" also catches .env.example's placeholder, a key anyone can read on GitHub.
if PRODUCTION and (
    "change-me" in env["DJANGO_SECRET_KEY"].lower() or len(env["DJANGO_SECRET_KEY"]) < 32
):
    raise ConfigError(
        "refusing to start: set DJANGO_SECRET_KEY to a random string of 32+ characters "
        "when AUDIT_ENV=production"
    )

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
    # Swagger UI / Redoc assets are served from the drf-spectacular-sidecar package (no CDN).
    "drf_spectacular_sidecar",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Response-only (a header): outside the API fast path so its answers carry it too.
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Cached hot API reads with a valid token are answered here, before sessions, CSRF, routing
    # and DRF; everything else passes through (audit/api/fast_path.py).
    "audit.api.fast_path.hot_reads",
    # Serves /static/ in every mode (no separate web server needed for the dashboard's assets).
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Before any view reads the body: oversized requests answer 413, not 500 / bare 400.
    "audit.trust.limits.request_size_limit",
    "django.contrib.messages.middleware.MessageMiddleware",
    # A Content-Security-Policy on every page outside FRONTEND_CSP_EXEMPT_PREFIXES (the API docs
    # and the admin ship inline scripts): scripts and styles only from our own origin, never
    # inline, so a log string that slipped through escaping still could not run.
    "frontend.middleware.content_security_policy",
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
    "default": dj_database_url.parse(env["DATABASE_URL"], conn_max_age=env["DATABASE_CONN_MAX_AGE"])
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets the web server read while a worker writes. The file is read through a memory
    # map (up to the 2 GB this SQLite allows; the rest is read as before): with the default
    # 2 MB page cache a connection re-read each page of a big index with a system call, and a
    # read of a few hundred rows spread over a million (health history) cost 2.5x its CPU.
    # The map is the kernel's page cache, shared by every process and thread.
    DATABASES["default"].setdefault("OPTIONS", {})["init_command"] = (
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA mmap_size=2147418112;"
    )
    DATABASES["default"]["OPTIONS"]["timeout"] = 30
    # Take the write lock when a transaction starts: a deferred transaction that reads then
    # writes fails at once with "database is locked" when another process writes meanwhile.
    DATABASES["default"]["OPTIONS"]["transaction_mode"] = "IMMEDIATE"
    # A file, not :memory:, so a worker subprocess in the tests shares the test database.
    DATABASES["default"]["TEST"] = {"NAME": env["AUDIT_TEST_SQLITE"]}

# A log steers reads inside the allowed roots: none may hold the database, the var dir or the
# storage configuration (config/checks.py).
_exposed = exposed_roots(env["AUDIT_ALLOWED_ROOTS"], DATABASES, str(VAR_DIR))
if _exposed:
    raise ConfigError(f"refusing to start: {_exposed[0]}, which logs must never reach")

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
SESSION_COOKIE_SECURE = env["DJANGO_SECURE_COOKIES"]
CSRF_COOKIE_SECURE = env["DJANGO_SECURE_COOKIES"]
if env["DJANGO_SECURE_COOKIES"]:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_HSTS_SECONDS = env["DJANGO_HSTS_SECONDS"]

# Sessions in the database, each request's session and user read by SQL compiled once
# (frontend/sessions.py): logout, password changes and deactivation take effect on the next
# request in every process, as with Django's own `db` backend and ModelBackend.
SESSION_ENGINE = "frontend.sessions"
AUTHENTICATION_BACKENDS = ["frontend.sessions.UserBackend"]

# A form sent without its CSRF token: the dashboard's 403 page saying what to do.
CSRF_FAILURE_VIEW = "frontend.errors.csrf_failure"
LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/login/"

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
    # AUDIT_API_EXPENSIVE_RATE. Listed here so DRF's schema and docs know the scope.
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

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env["LOG_LEVEL"]},
    # A client's 403 or 404: one line, no traceback (frontend/quietlog.py).
    "filters": {"quiet_client_errors": {"()": "frontend.quietlog.QuietClientErrors"}},
    "loggers": {
        "py4j": {"level": "WARNING"},
        "django.request": {"filters": ["quiet_client_errors"]},
    },
}

# --- Celery ------------------------------------------------------------------------------
CELERY_RESULT_BACKEND = env["CELERY_RESULT_BACKEND"] or None
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Redis: an unacked task of a killed worker is redelivered after this long (the beat re-dispatches
# sooner anyway); keep it above the longest chunk. The embedded SQLAlchemy broker hands its
# transport options to create_engine(): none there.
CELERY_BROKER_TRANSPORT_OPTIONS = (
    {}
    if env["CELERY_BROKER_URL"].startswith("sqla+")
    else {"visibility_timeout": env["CELERY_VISIBILITY_TIMEOUT"]}
)
# Task modules beyond workers/tasks.py (autodiscovery finds only that one). workers.shutdown
# makes pool processes unwind on SIGTERM (release the table lock, roll back).
CELERY_IMPORTS = [
    "workers.alert_tasks",
    "workers.shutdown",
    "workers.discovery_tasks",
    "workers.spark.tasks",
    "workers.orphan_tasks",
]
# Spark tasks hold a JVM: AUDIT_SPARK_QUEUE routes them to a dedicated worker
# (`celery -A workers worker -Q spark -c 1`).
if env["AUDIT_SPARK_QUEUE"]:
    # By task name: workers/spark/tasks.py keeps the name `workers.spark_tasks.spark_audit_tables`.
    CELERY_TASK_ROUTES = {"workers.spark_tasks.*": {"queue": env["AUDIT_SPARK_QUEUE"]}}

# What beat runs: (entry, task, every N seconds, a pass still queued after this many seconds is
# dropped because the next one supersedes it (None: kept), whether it is scheduled).
# Tail passes probe each table for its next commit and dispatch `tail_table` only for those
# with news or due a full check (audit/tail/polling.py); the alert scan refreshes the risk of tables
# whose findings changed and `refresh-risks` recomputes every table's; discovery with no roots
# configured does nothing; the orphan scan dispatches only the tables due.
_tail = env["AUDIT_TAIL_INTERVAL_SECONDS"]
_alert = env["ALERT_INTERVAL_SECONDS"]
_discover = env["AUDIT_DISCOVERY_INTERVAL_SECONDS"]
# The orphan pass runs every minute (by default) and queues only its share of the tables due
# (audit/tail/orphan_scans.py: `scans_per_pass`), so a lake's scans trickle in.
AUDIT_ORPHAN_PASS_SECONDS = min(env["AUDIT_ORPHAN_PASS_SECONDS"], env["AUDIT_ORPHAN_SCAN_SECONDS"])
_beat_entries: list[tuple[str, str, float, float | None, bool]] = [
    ("tail-all-tables", "workers.tasks.tail_all", _tail, max(_tail, 1.0), True),
    (
        "drain-notifications",
        "workers.tasks.drain_notifications",
        _tail,
        max(_tail, 1.0),
        bool(env["AUDIT_NOTIFY_QUEUES"]),
    ),
    ("process-alerts", "workers.alert_tasks.process_alerts", _alert, max(_alert * 2, 2.0), True),
    (
        "refresh-risks",
        "workers.alert_tasks.refresh_all_risks",
        env["ALERT_RISK_REFRESH_SECONDS"],
        None,
        True,
    ),
    (
        "discover-roots",
        "workers.discovery_tasks.discover_roots",
        _discover,
        max(_discover, 5.0),
        True,
    ),
    (
        "scan-orphans",
        "workers.orphan_tasks.scan_all_orphans",
        AUDIT_ORPHAN_PASS_SECONDS,
        AUDIT_ORPHAN_PASS_SECONDS,
        True,
    ),
]
CELERY_BEAT_SCHEDULE = {
    name: _beat(task, every, expires) for name, task, every, expires, on in _beat_entries if on
}

# --- teams ---------------------------------------------------------------------------------
# Log in through a reverse proxy that names the user in a header (the `request.META` key, e.g.
# "HTTP_X_REMOTE_USER"), honoured only from AUDIT_TRUSTED_PROXIES (audit/trust/remote_user.py),
# whose entries must parse: a typo stops the start, rather than a proxy that logs nobody in.
for _proxy in AUDIT_TRUSTED_PROXIES:  # noqa: F821  (a declared setting)
    try:
        ipaddress.ip_network(_proxy.strip(), strict=False)
    except ValueError:
        raise ConfigError(
            f"AUDIT_TRUSTED_PROXIES: not an address or network: {_proxy.strip()[:60]!r}"
        ) from None
if AUDIT_REMOTE_USER_HEADER:  # noqa: F821  (a declared setting)
    _AFTER_AUTH = MIDDLEWARE.index("django.contrib.auth.middleware.AuthenticationMiddleware") + 1
    MIDDLEWARE = [
        *MIDDLEWARE[:_AFTER_AUTH],
        "audit.trust.remote_user.HeaderRemoteUser",
        *MIDDLEWARE[_AFTER_AUTH:],
    ]
    AUTHENTICATION_BACKENDS = [*AUTHENTICATION_BACKENDS, "audit.trust.remote_user.ProxyUserBackend"]
