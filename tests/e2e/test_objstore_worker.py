"""The Celery worker tails tables on real object-store servers (moto S3, Azurite).

Two roots in one bucket/container: `good/` read with a key that works, `bad/` with a wrong
secret. The worker keeps tailing the good root's tables while the bad root's table is in error
naming the cause; a table deleted from the bucket becomes a not-found error, not a crash.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from audit.ingest.tables import register_table
from audit.models import Table
from tests.e2e.objstore import upload_table, write_storage_config
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.services, pytest.mark.slow]


@dataclass
class Lake:
    """A bucket (S3) or container (Azure) with the options to write to it and to read it."""

    base: str  # s3://bucket or abfs://container
    admin: dict[str, str]  # options to upload with
    good: dict[str, str]  # root options with env: references
    bad: dict[str, str]
    env: dict[str, str]  # the values of those references
    delete: Any  # delete(prefix)
    secrets: list[str] = field(default_factory=list)


def _s3_lake(server) -> Lake:
    server.enforce_auth()
    bucket = server.create_bucket()
    keys = server.read_only_user(bucket)
    opts = {**server.options(), "aws_access_key_id": "env:LAKE_KEY"}
    wrong = "WrongSecret-for-the-bad-root-0000"
    return Lake(
        f"s3://{bucket}",
        server.options(),
        {**opts, "aws_secret_access_key": "env:LAKE_SECRET"},
        {**opts, "aws_secret_access_key": "env:BAD_SECRET"},
        {
            "LAKE_KEY": keys.access_key_id,
            "LAKE_SECRET": keys.secret_access_key,
            "BAD_SECRET": wrong,
        },
        lambda prefix: server.delete_prefix(bucket, prefix),
        [keys.secret_access_key, wrong],
    )


def _azure_lake(server) -> Lake:
    container = server.create_container()
    wrong = base64.b64encode(b"not the account key, but well-formed").decode()
    opts = {**server.options(), "azure_storage_account_name": "env:AZ_ACCOUNT"}
    return Lake(
        f"abfs://{container}",
        server.options(),
        {**opts, "azure_storage_account_key": "env:AZ_KEY"},
        {**opts, "azure_storage_account_key": "env:AZ_BAD_KEY"},
        {"AZ_ACCOUNT": server.account, "AZ_KEY": server.key, "AZ_BAD_KEY": wrong},
        lambda prefix: server.delete_prefix(container, prefix),
        [server.key, wrong],
    )


@pytest.fixture(params=["s3", "azure"])
def lake(request) -> Lake:
    if request.param == "s3":
        return _s3_lake(request.getfixturevalue("s3_server"))
    return _azure_lake(request.getfixturevalue("azurite_server"))


def _append(local: Path, lake: Lake, uri: str, start: int) -> None:
    write_deltalake(
        str(local), pa.table({"id": pa.array([start, start + 1], pa.int64())}), mode="append"
    )
    upload_table(local, uri, lake.admin)


def test_the_worker_tails_object_store_tables_per_root(
    lake, celery_workers, tmp_path, monkeypatch, settings
):
    local: dict[str, Path] = {}
    for name in ("t1", "t2", "t3"):
        local[name] = tmp_path / name
        write_deltalake(str(local[name]), pa.table({"id": pa.array([0, 1], pa.int64())}))
        write_deltalake(
            str(local[name]), pa.table({"id": pa.array([2], pa.int64())}), mode="append"
        )
    uris = {
        "t1": f"{lake.base}/good/t1",
        "t2": f"{lake.base}/good/deep/er/t2",
        "t3": f"{lake.base}/bad/t3",
    }
    for name, uri in uris.items():
        upload_table(local[name], uri, lake.admin)
    config = write_storage_config(
        tmp_path / "storage.toml", {f"{lake.base}/good/": lake.good, f"{lake.base}/bad/": lake.bad}
    )
    env = {"AUDIT_STORAGE_CONFIG": config, **lake.env}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    settings.AUDIT_ALLOWED_ROOTS = [lake.base]
    t1, _ = register_table(uris["t1"])
    t2, _ = register_table(uris["t2"])
    t3 = Table.objects.create(uri=uris["t3"], name="t3")
    worker = celery_workers.start("w1", AUDIT_ALLOWED_ROOTS=lake.base, **env)

    def state(table: Table) -> tuple[str, int | None, str]:
        table.refresh_from_db()
        return table.status, table.last_seen_version, table.error_cause

    logs = celery_workers.logs
    wait_for(lambda: state(t1)[:2] == ("ok", 1), 60, message=f"t1 tailed; {logs()}")
    wait_for(lambda: state(t2)[:2] == ("ok", 1), 60, message=f"t2 tailed; {logs()}")
    wait_for(lambda: state(t3)[2] == "access_denied", 60, message=f"t3 refused; {logs()}")
    assert t3.status == "error" and "access denied" in t3.last_error
    assert f"root {lake.base}/bad/" in t3.last_error

    # New commits on a good root keep arriving while the bad root stays in error.
    _append(local["t1"], lake, uris["t1"], 10)
    wait_for(lambda: state(t1)[1] == 2, 60, message=f"t1 v2; {logs()}")
    assert state(t3)[2] == "access_denied"

    # A table deleted from the bucket: a not-found error; the worker lives on.
    lake.delete("good/deep/er/t2/")
    wait_for(lambda: state(t2)[0] == "error", 60, message=f"t2 gone; {logs()}")
    assert t2.error_cause == "not_found" and "does not exist" in t2.last_error
    _append(local["t1"], lake, uris["t1"], 20)
    wait_for(lambda: state(t1)[1] == 3, 60, message=f"t1 v3; {logs()}")
    assert worker.poll() is None, "the worker survived"
    for secret in lake.secrets:
        assert secret not in logs()
        assert not Table.objects.filter(last_error__contains=secret).exists()
