"""Tables on a real Azure Blob protocol server (Azurite), through abfs:// / az:// with an endpoint.

`audit --json --files` of a table in the container equals the audit of its local copy; a wrong
account key is access denied naming the root and credential; a dead endpoint says so.
"""

from __future__ import annotations

import base64
import json
import shutil

import pytest

from tests.e2e.objstore import Azurite, audit_cli, upload_table, write_storage_config
from tests.support import scenarios
from tests.support.cli import located_nowhere
from tests.support.paths import DELTA_TABLES

pytestmark = [pytest.mark.services, pytest.mark.slow]

DATA = DELTA_TABLES


@pytest.fixture(scope="module")
def container(azurite_server: Azurite, tmp_path_factory):
    name = azurite_server.create_container()
    local = tmp_path_factory.mktemp("azure-local")
    scenarios.build_stale_full_overwrite(str(local / "overwrite"))
    shutil.copytree(DATA / "golden" / "checkpoint", local / "checkpoint")
    for table in ("overwrite", "checkpoint"):
        upload_table(local / table, f"abfs://{name}/raw/{table}", azurite_server.options())
    options = {**azurite_server.options(), "azure_storage_account_key": "env:RAW_KEY"}
    config = write_storage_config(local / "storage.toml", {f"abfs://{name}/raw/": options})
    return {
        "name": name,
        "local": local,
        "env": {"AUDIT_STORAGE_CONFIG": config, "RAW_KEY": azurite_server.key},
    }


@pytest.mark.parametrize("table", ["overwrite", "checkpoint"])
def test_audit_in_the_container_equals_the_audit_of_the_local_copy(container, table):
    uri = f"abfs://{container['name']}/raw/{table}"
    remote = audit_cli(uri, container["env"])
    assert remote.returncode == 0, remote.stderr
    here = audit_cli(str(container["local"] / table), {})
    remote_report, local_report = json.loads(remote.stdout), json.loads(here.stdout)
    assert remote_report["table"]["uri"] == uri
    assert located_nowhere(remote_report) == located_nowhere(local_report)
    assert remote_report["live_files"]
    if table == "overwrite":
        [found] = [f for f in remote_report["findings"] if f["kind"] == "never_existed_snapshot"]
        assert found["confirmed"] and found["witness"]["row_count"] == 2


def test_a_wrong_account_key_is_access_denied(container):
    wrong = base64.b64encode(b"a well-formed but wrong key").decode()
    uri = f"abfs://{container['name']}/raw/checkpoint"
    result = audit_cli(uri, {**container["env"], "RAW_KEY": wrong})
    assert result.returncode == 2
    assert "access denied" in result.stderr, result.stderr
    assert f"root abfs://{container['name']}/raw/" in result.stderr
    assert wrong not in result.stderr


def test_an_unreachable_azure_endpoint_says_so(container, azurite_server, tmp_path):
    options = {**azurite_server.options(), "azure_storage_endpoint": "http://127.0.0.1:9/x"}
    config = write_storage_config(tmp_path / "dead.toml", {f"abfs://{container['name']}/": options})
    result = audit_cli(
        f"abfs://{container['name']}/raw/checkpoint", {"AUDIT_STORAGE_CONFIG": config}
    )
    assert result.returncode == 2
    assert "storage endpoint unreachable" in result.stderr, result.stderr


def test_the_standard_azure_environment_still_works(container, azurite_server):
    result = audit_cli(f"az://{container['name']}/raw/checkpoint", azurite_server.env())
    assert result.returncode == 0, result.stderr
