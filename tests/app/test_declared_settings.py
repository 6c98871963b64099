"""config/declared.py is the one declaration of every setting: Django's settings take their values
from it, README.md's table is generated from it, and no code reads a setting it does not declare
(found by walking the source's syntax trees, so a new module is checked without listing it)."""

from __future__ import annotations

import ast
import json
import os
import runpy
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import global_settings, settings

from config import declared
from config.env import ConfigError
from tests.support.paths import ROOT

SOURCES = ("audit", "workers", "config", "frontend", "scripts", "bench")
# Names of this project's knobs: a read of one of these must be declared.
PROJECT_PREFIXES = ("AUDIT_", "ALERT_", "FRONTEND_", "METRICS_", "WEB_")
ENV_PREFIXES = (*PROJECT_PREFIXES, "DJANGO_", "DATABASE_", "CELERY_", "EMAIL_", "LOG_LEVEL")


def source_files() -> Iterator[Path]:
    yield ROOT / "manage.py"
    for top in SOURCES:
        yield from sorted((ROOT / top).rglob("*.py"))


def string_constants(tree: ast.Module) -> dict[str, str]:
    """Module-level `NAME = "..."`: reads often go through such a constant."""
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            for target in node.targets:
                if isinstance(target, ast.Name) and isinstance(node.value.value, str):
                    found[target.id] = node.value.value
    return found


def _text(node: ast.expr, constants: dict[str, str]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    return None


def _is_environ(node: ast.expr) -> bool:
    """os.environ, environ, env (a mapping of the environment passed in), os (os.getenv)."""
    name = ast.unparse(node)
    return name.endswith("environ") or name in ("env", "os")


def reads(source: str) -> Iterator[tuple[str, str, int]]:
    """("setting" | "environ", name, line) for every read of a Django setting or of an
    environment variable in `source`."""
    tree = ast.parse(source)
    constants = string_constants(tree)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "settings"
            and node.attr.isupper()
        ):
            yield "setting", node.attr, node.lineno
        elif isinstance(node, ast.Call) and node.args:
            func, first = node.func, node.args[0]
            if (
                isinstance(func, ast.Name)
                and func.id in ("getattr", "hasattr")
                and len(node.args) > 1
            ):
                if ast.unparse(first) == "settings" and (name := _text(node.args[1], constants)):
                    yield "setting", name, node.lineno
            elif (
                isinstance(func, ast.Attribute)
                and func.attr in ("get", "getenv")
                and _is_environ(func.value)
                and (name := _text(first, constants))
            ):
                yield "environ", name, node.lineno
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.ctx, ast.Load)
            and _is_environ(node.value)
            and (name := _text(node.slice, constants))
        ):
            yield "environ", name, node.lineno


def settings_module_names() -> set[str]:
    tree = ast.parse((ROOT / "config" / "settings.py").read_text())
    return {
        target.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign | ast.AnnAssign)
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Name) and target.id.isupper()
    }


def undeclared(path_label: str, source: str) -> list[str]:
    known_settings = declared.DJANGO_NAMES | settings_module_names() | set(dir(global_settings))
    problems = []
    for kind, name, line in reads(source):
        where = f"{path_label}:{line}"
        if kind == "setting":
            project = name.startswith(PROJECT_PREFIXES)
            if name not in (declared.DJANGO_NAMES if project else known_settings):
                problems.append(f"{where} reads settings.{name}, which is not declared")
        elif name.startswith(ENV_PREFIXES) and name not in declared.BY_NAME:
            problems.append(f"{where} reads ${name}, which config/declared.py does not declare")
    return problems


def test_it_declares_every_setting_the_code_reads():
    problems = []
    for path in source_files():
        problems += undeclared(str(path.relative_to(ROOT)), path.read_text(encoding="utf-8"))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    "snippet",
    [
        "from django.conf import settings\nx = settings.AUDIT_NOT_A_SETTING",
        'from django.conf import settings\nx = getattr(settings, "ALERT_NOT_A_SETTING", 1)',
        'import os\nx = os.environ["AUDIT_NOT_DECLARED"]',
        'import os\nx = os.environ.get("WEB_NOT_DECLARED", "")',
        'import os\nx = os.getenv("DJANGO_NOT_DECLARED")',
        'import os\nVAR = "AUDIT_NOT_DECLARED"\ndef f(env):\n    return env.get(VAR)',
        "from django.conf import settings\nx = settings.NOT_A_DJANGO_SETTING",
    ],
)
def test_it_catches_a_read_of_an_undeclared_setting(snippet):
    assert undeclared("snippet.py", snippet)


def test_it_lets_declared_and_django_settings_through():
    snippet = (
        "import os\nfrom django.conf import settings\n"
        "a = settings.AUDIT_LOCK_SECONDS\nb = settings.DATA_UPLOAD_MAX_MEMORY_SIZE\n"
        "c = settings.AUTH_USER_MODEL\nd = os.environ.get('AUDIT_STORAGE_CONFIG')\n"
        "e = os.environ.get('JAVA_HOME')\n"
    )
    assert undeclared("snippet.py", snippet) == []


def test_it_reads_settings_only_through_the_declaration():
    for name in ("settings.py", "gunicorn.conf.py"):
        tree = ast.parse((ROOT / "config" / name).read_text())
        direct = [
            ast.unparse(node)
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv")
        ]
        assert not direct, f"config/{name} reads the environment itself: {direct}"


def unread(declarations, sources: dict[str, str]) -> list[str]:
    """The declared settings nothing reads where their declaration says they are read: a
    Django setting read as `settings.NAME` by the code, or as `env["NAME"]` by
    config/settings.py; any other in the file its `read_by` names, by name."""
    read = {
        (kind, name)
        for path, source in sources.items()
        if path.endswith(".py")
        for kind, name, _ in reads(source)
    }
    composed = sources.get("config/settings.py", "")
    missing = []
    for s in declarations:
        if s.read_by == declared.SETTINGS:
            name = s.django_name
            found = f'env["{s.name}"]' in composed or ("environ", s.name) in read
            # Django and its apps read their own settings (SECRET_KEY, EMAIL_HOST...).
            found = found or not (name or "AUDIT_").startswith(PROJECT_PREFIXES)
            found = found or ("setting", name) in read
        elif s.read_by in sources:
            found = s.name in sources[s.read_by]
        else:  # EACH_PROCESS: read from the environment wherever it is needed
            found = ("environ", s.name) in read
        if not found:
            missing.append(f"{s.name} ({s.read_by})")
    return missing


def _sources() -> dict[str, str]:
    found = {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in source_files()}
    found.pop("config/declared.py")  # the declaration is no reader
    for extra in (declared.RUN_SH,):
        found[extra] = (ROOT / extra).read_text(encoding="utf-8")
    return found


def test_it_reads_every_setting_it_declares():
    """A declaration nothing reads would be a README row that changes nothing."""
    missing = unread(declared.DECLARED, _sources())
    assert not missing, f"declared but never read: {missing}"


def test_it_catches_a_declared_setting_nothing_reads():
    never = declared.Setting("AUDIT_NEVER_READ", 1, int, "a knob nobody reads")
    composed = declared.Setting("AUDIT_COMPOSED", "", str, "read by settings.py", "")
    gunicorn = declared.Setting("WEB_X", 1, int, "gunicorn's", read_by=declared.GUNICORN)
    sources = {"config/settings.py": 'X = env["AUDIT_COMPOSED"]', declared.GUNICORN: "WEB_Y"}
    assert unread([never, composed, gunicorn], sources) == [
        "AUDIT_NEVER_READ (settings)",
        f"WEB_X ({declared.GUNICORN})",
    ]


def test_it_keeps_the_readme_table_up_to_date():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert declared.with_table(readme) == readme, "run `python -m config.declared --write`"
    for setting in declared.DECLARED:
        assert f"| `{setting.name}` |" in readme


def test_it_declares_each_name_once_with_one_line_of_meaning():
    names = [s.name for s in declared.DECLARED]
    assert len(names) == len(set(names))
    for s in declared.DECLARED:
        assert s.meaning and "\n" not in s.meaning, s.name
        assert s.type in (str, bool, int, float, list, dict), s.name
        if not isinstance(s.default, declared.Derived):
            assert isinstance(s.default, s.type), s.name


def test_it_gives_django_the_declared_defaults_when_nothing_is_set():
    """A fresh process with none of the declared variables set: every Django setting that is a
    declared value as is equals the declaration's default."""
    clean = {k: v for k, v in os.environ.items() if k not in declared.BY_NAME}
    names = sorted(declared.DJANGO_NAMES)
    script = (
        "import json, django; django.setup(); from django.conf import settings as s; "
        f"print(json.dumps({{n: getattr(s, n) for n in {names!r}}}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env={**clean, "DJANGO_SETTINGS_MODULE": "config.settings"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout)
    expected = declared.read_all(ROOT, environ={})
    for s in declared.DECLARED:
        if s.django_name:
            assert got[s.django_name] == expected[s.name], s.name
    assert got["AUDIT_LOCK_SECONDS"] == 120.0 and got["DATA_UPLOAD_MAX_MEMORY_SIZE"] == 2_621_440


def test_it_reads_typed_values_and_refuses_bad_ones():
    by = declared.BY_NAME
    assert declared.read(by["AUDIT_LOCK_SECONDS"], {"AUDIT_LOCK_SECONDS": "7"}) == 7.0
    assert declared.read(by["AUDIT_BACKFILL_CHUNK"], {"AUDIT_BACKFILL_CHUNK": " "}) == 5000
    assert declared.read(by["AUDIT_CHECK_DATA"], {"AUDIT_CHECK_DATA": "off"}) is False
    assert declared.read(by["AUDIT_NOTIFY_QUEUES"], {"AUDIT_NOTIFY_QUEUES": "a, ,b"}) == ["a", "b"]
    assert declared.read(by["AUDIT_SPARK_CONF"], {"AUDIT_SPARK_CONF": '{"k": 1}'}) == {"k": 1}
    assert declared.read(by["DJANGO_SECRET_KEY"], {"DJANGO_SECRET_KEY": ""}) == ""
    with pytest.raises(ConfigError, match="AUDIT_CHECK_DATA='maybe' is not a boolean"):
        declared.read(by["AUDIT_CHECK_DATA"], {"AUDIT_CHECK_DATA": "maybe"})
    with pytest.raises(ConfigError, match="is not an integer"):
        declared.read(by["AUDIT_BACKFILL_CHUNK"], {"AUDIT_BACKFILL_CHUNK": "5k"})
    with pytest.raises(ConfigError, match="must be a JSON object"):
        declared.read(by["AUDIT_SPARK_CONF"], {"AUDIT_SPARK_CONF": "[1]"})


def test_it_derives_defaults_from_where_the_app_runs(tmp_path):
    values = declared.read_all(tmp_path, environ={"AUDIT_VAR_DIR": str(tmp_path / "v")})
    assert values["AUDIT_ALLOWED_ROOTS"] == [str(tmp_path / "demo-tables")]  # not the checkout
    assert values["AUDIT_TEST_SQLITE"] == str(tmp_path / "v" / "test-db.sqlite3")
    assert values["DJANGO_SECURE_COOKIES"] is False
    production = declared.read_all(tmp_path, environ={"AUDIT_ENV": "Production"})
    assert production["DJANGO_SECURE_COOKIES"] is True


def test_it_schedules_and_imports_only_tasks_that_exist():
    from workers import app

    app.loader.import_default_modules()
    for module in settings.CELERY_IMPORTS:
        __import__(module)
    assert len(settings.CELERY_IMPORTS) == len(set(settings.CELERY_IMPORTS))
    for name, entry in settings.CELERY_BEAT_SCHEDULE.items():
        assert entry["task"] in app.tasks, name
        assert entry["schedule"] > 0, name
    assert "drain-notifications" not in settings.CELERY_BEAT_SCHEDULE  # no queues configured


@pytest.mark.parametrize(("threads", "expected"), [(None, 12), ("2", 6)])
def test_gunicorn_caps_a_workers_connections_above_its_threads(monkeypatch, threads, expected):
    # Uncapped (gunicorn's 1,000), the worker awake when clients connect keeps most keep-alive
    # connections and one GIL serves them (config/gunicorn.conf.py); a cap at or under the
    # threads would close every keep-alive connection, one just above them starves the clients
    # left waiting in the accept queue.
    monkeypatch.delenv("WEB_WORKER_CONNECTIONS", raising=False)
    if threads is None:
        monkeypatch.delenv("WEB_THREADS", raising=False)
    else:
        monkeypatch.setenv("WEB_THREADS", threads)
    conf = runpy.run_path(str(ROOT / "config" / "gunicorn.conf.py"))
    assert conf["worker_connections"] == expected == 3 * conf["threads"]
