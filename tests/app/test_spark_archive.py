"""The zip shipped to Spark executors carries the whole core and every job module."""

from __future__ import annotations

import zipfile
from pathlib import Path

from workers.spark.archive import JOB_MODULES, core_archive

ROOT = Path(__file__).resolve().parent.parent.parent


def test_the_zip_holds_every_core_module_and_the_job_modules(tmp_path):
    names = set(zipfile.ZipFile(core_archive(str(tmp_path))).namelist())
    core = ROOT / "audit" / "core"
    wanted = {f"audit/core/{p.relative_to(core).as_posix()}" for p in core.rglob("*.py")}
    assert wanted <= names
    assert {"audit/core/vocab.py", "audit/core/jsonsafe.py", "audit/core/errors.py"} <= names
    assert {f"workers/spark/{m}" for m in JOB_MODULES} <= names
    assert "workers/spark/archive.py" in names and "workers/__init__.py" in names
    assert "workers/spark/__init__.py" in names


def test_the_zip_workers_package_is_the_stub_without_celery(tmp_path):
    with zipfile.ZipFile(core_archive(str(tmp_path))) as archive:
        stubs = [archive.read(f"{p}/__init__.py").decode() for p in ("workers", "workers/spark")]
    for stub in stubs:
        assert "celery" not in stub.lower().replace("no celery", "")


def test_the_same_sources_give_the_same_zip_name(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first, second = core_archive(str(tmp_path / "a")), core_archive(str(tmp_path / "b"))
    assert Path(first).name == Path(second).name
