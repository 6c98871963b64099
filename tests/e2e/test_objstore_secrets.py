"""Secrets of a storage root never reach a page, an API response, a log line or the database.

Two tables on the S3 protocol server (moto, IAM enforced): one read with a good key of its
root, one under a root whose secret is wrong (so the error path is rendered too). Every URL
the project routes is fetched for them, as an administrator and with an API token, and the
bodies, the captured log records and every stored row are searched for the secret values.
"""

from __future__ import annotations

import logging
import re

import pytest
from django.core import serializers
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.authtoken.models import Token

from audit import ingest
from audit.core.errors import DeltaAuditError
from audit.models import Commit, Finding, Table
from tests.e2e.objstore import upload_table, write_storage_config
from tests.support import scenarios
from tests.support.ingested import ingest_table

pytestmark = [pytest.mark.services, pytest.mark.slow]

WRONG_SECRET = "Wr0ngSecretValue-DoNotLeak-123456"


@pytest.fixture
def lake_env(s3_server, tmp_path, monkeypatch, settings):
    s3_server.enforce_auth()
    bucket = s3_server.create_bucket()
    scenarios.build_ws_reorder_matching(str(tmp_path / "reorder"))
    for root in ("finance", "sales"):
        upload_table(tmp_path / "reorder", f"s3://{bucket}/{root}/orders", s3_server.options())
    reader = s3_server.read_only_user(bucket)
    base = {**s3_server.options(), "aws_access_key_id": "env:FIN_KEY"}
    config = write_storage_config(
        tmp_path / "storage.toml",
        {
            f"s3://{bucket}/finance/": {**base, "aws_secret_access_key": "env:FIN_SECRET"},
            f"s3://{bucket}/sales/": {**base, "aws_secret_access_key": "env:SALES_SECRET"},
        },
    )
    monkeypatch.setenv("AUDIT_STORAGE_CONFIG", config)
    monkeypatch.setenv("FIN_KEY", reader.access_key_id)
    monkeypatch.setenv("FIN_SECRET", reader.secret_access_key)
    monkeypatch.setenv("SALES_SECRET", WRONG_SECRET)
    settings.AUDIT_ALLOWED_ROOTS = [f"s3://{bucket}"]
    return {"bucket": bucket, "secrets": [reader.secret_access_key, WRONG_SECRET]}


def _concrete_paths(values: dict[str, int]) -> list[str]:
    """Every routed GET path with its parameters filled from `values` (by name)."""
    paths: list[str] = []

    def walk(patterns, prefix: str) -> None:
        for p in patterns:
            text = _pattern_text(p)
            if isinstance(p, URLResolver):
                walk(p.url_patterns, prefix + text)
            elif isinstance(p, URLPattern):
                path = _fill(prefix + text, values)
                if path is not None:
                    paths.append("/" + path)

    walk(get_resolver().url_patterns, "")
    return sorted(set(paths))


def _pattern_text(p) -> str:
    text = str(p.pattern)
    return text.lstrip("^").rstrip("$").replace("\\Z", "")


_PARAM = re.compile(r"<(?:\w+:)?(\w+)>|\(\?P<(\w+)>[^)]*\)")


def _fill(path: str, values: dict[str, int]) -> str | None:
    if "format" in path or "(?" in _PARAM.sub("", path) or "logout" in path:
        return None  # format-suffix duplicates, unnamed regex groups, and signing out
    missing = False

    def param(m: re.Match) -> str:
        nonlocal missing
        name = m.group(1) or m.group(2)
        key = name
        if name == "pk":
            key = "finding_id" if "findings" in path[: m.start()] else "table_id"
        if key not in values:
            missing = True
            return ""
        return str(values[key])

    filled = _PARAM.sub(param, path)
    if missing or any(c in filled for c in "()[]*+?\\"):
        return None
    return filled


@pytest.mark.django_db
def test_no_page_endpoint_log_or_row_holds_a_secret(lake_env, client, owner, caplog):
    caplog.set_level(logging.DEBUG)
    bucket = lake_env["bucket"]
    good = ingest_table(f"s3://{bucket}/finance/orders")
    assert good.status == Table.Status.OK and good.last_seen_version == 3
    with pytest.raises(DeltaAuditError, match="access denied"):
        ingest.register_table(f"s3://{bucket}/sales/orders")
    bad = Table.objects.create(uri=f"s3://{bucket}/sales/orders", name="sales")
    ingest.tail_once(bad.id)
    bad.refresh_from_db()
    assert (bad.status, bad.error_cause) == (Table.Status.ERROR, "access_denied")
    assert "credential env:FIN_KEY" in bad.last_error

    finding = Finding.objects.filter(table=good).first()
    assert finding is not None
    client.force_login(owner)
    token = Token.objects.create(user=owner)
    bodies: dict[str, str] = {}
    for table in (good, bad):
        values = {
            "table_id": table.id,
            "version": 3,
            "finding_id": finding.id,
            "object_id": table.id,
        }
        for path in _concrete_paths(values):
            response = client.get(path, {"table": table.id})
            bodies[f"{path} (session)"] = response.content.decode(errors="replace")
            if path.startswith("/api/"):
                api = client.get(path, HTTP_AUTHORIZATION=f"Token {token.key}")
                bodies[f"{path} (token)"] = api.content.decode(errors="replace")
        page = client.get(f"/tables/{table.id}/").content.decode()
        assert f"root s3://{bucket}/" in page and "credential env:FIN_KEY" in page
    assert any(p.startswith("/api/tables/") for p in bodies), sorted(bodies)
    assert any("/commits/" in p for p in bodies)
    stored = serializers.serialize("json", [*Table.objects.all(), *Commit.objects.all()])
    stored += serializers.serialize("json", Finding.objects.all())
    logs = "\n".join(r.getMessage() for r in caplog.records)
    for secret in lake_env["secrets"]:
        for where, body in bodies.items():
            assert secret not in body, f"secret in {where}"
        assert secret not in stored, "secret in the database"
        assert secret not in logs, "secret in a log line"
    detail = client.get(f"/api/tables/{bad.id}/", HTTP_AUTHORIZATION=f"Token {token.key}").json()
    assert detail["error_cause"] == "access_denied"
    assert detail["storage"] == f"root s3://{bucket}/sales/, credential env:FIN_KEY"
