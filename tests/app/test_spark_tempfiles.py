"""The Spark driver's and executors' files in the shared temp directory: made with mkstemp
(a new name, mode 0600) in a directory only this user can use, never a file or directory
another user could have made first under a predictable name."""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from pathlib import Path

import pytest

from workers.spark import job as spark_job
from workers.spark import session as spark_session

CONFIG = '[[storage]]\nprefix = "s3://lake/"\noptions = { aws_secret_access_key = "env:K" }\n'


@pytest.fixture
def temp_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(spark_job, "_config_files", {})
    monkeypatch.setattr(spark_session, "_private", [])
    monkeypatch.setattr(spark_session, "_log4j2_files", {})
    monkeypatch.delenv(spark_job.STORAGE_CONFIG_ENV, raising=False)
    return tmp_path


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_it_never_adopts_a_storage_config_file_made_first(temp_dir):
    digest = hashlib.sha256(CONFIG.encode()).hexdigest()[:16]
    # The predictable name of earlier versions, made first by someone else.
    planted = temp_dir / f"delta-audit-storage-{os.getuid()}-{digest}.toml"
    planted.write_text('[[storage]]\nprefix = "s3://lake/"\noptions = { endpoint = "x" }\n')
    planted.chmod(0o666)
    spark_job.use_storage_config(CONFIG)
    path = os.environ[spark_job.STORAGE_CONFIG_ENV]
    assert path != str(planted)
    assert Path(path).read_text() == CONFIG and _mode(path) == 0o600


def test_it_writes_one_file_per_configuration_and_a_new_one_if_it_was_replaced(temp_dir):
    spark_job.use_storage_config(CONFIG)
    first = os.environ[spark_job.STORAGE_CONFIG_ENV]
    spark_job.use_storage_config(CONFIG)
    assert os.environ[spark_job.STORAGE_CONFIG_ENV] == first
    os.unlink(first)
    (temp_dir / "other.toml").write_text("planted")
    os.symlink(temp_dir / "other.toml", first)  # swapped for a link between two tasks
    spark_job.use_storage_config(CONFIG)
    second = os.environ[spark_job.STORAGE_CONFIG_ENV]
    assert second != first and Path(second).read_text() == CONFIG


def test_it_leaves_a_driver_directory_someone_else_opened(temp_dir):
    shared = temp_dir / f"delta-audit-spark-{os.getuid()}"
    shared.mkdir()
    shared.chmod(0o777)  # made first, writable by everyone
    (shared / "log4j2-warn.properties").write_text("planted")
    path = spark_session._log4j2_file("WARN")
    assert not path.startswith(str(shared) + os.sep)
    assert _mode(os.path.dirname(path)) == 0o700 and _mode(path) == 0o600
    assert "WARN" in Path(path).read_text()
    assert spark_session._log4j2_file("WARN") == path  # one per level and process


def test_it_uses_the_usual_driver_directory_when_it_is_private(temp_dir):
    path = spark_session._log4j2_file("INFO")
    usual = temp_dir / f"delta-audit-spark-{os.getuid()}"
    assert os.path.dirname(path) == str(usual) and _mode(usual) == 0o700
    assert spark_session.default_log_file().startswith(str(usual))
