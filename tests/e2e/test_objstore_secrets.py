"""Secrets never reach a page, an API response, a log line or the database.

Two tables on the S3 protocol server (moto, IAM enforced): one read with a good key of its
root, one under a root whose secret is wrong and which sends a session token (so the error
path is rendered too); a third under an Azure root read with a SAS token from an endpoint that
does not answer. Alerts about the findings go to a Slack channel and a webhook whose URLs carry
tokens, at endpoints that refuse the connection, so deliveries fail and store their errors.
Every URL the project routes is fetched, as an administrator, with an API token and as a
member who is not an administrator, and the bodies, the captured log records and every text
column of every table of the test database are searched for each secret: the S3 secret key, the
session token, the SAS token, the Slack URL's path and the webhook URL's token. Administrators
are shown channel URLs on purpose, and a channel's config stores its URL: those two places are
the only ones a URL may appear.
"""

from __future__ import annotations

import logging
import re
from itertools import chain

import pytest
from django.db import connection
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.authtoken.models import Token

from audit.alerting import delivery
from audit.alerting.models import Channel
from audit.core.errors import DeltaAuditError
from audit.ingest.tables import register_table
from audit.models import Finding, Table
from audit.tail.step import tail_once
from tests.e2e.objstore import upload_table, write_storage_config
from tests.support import scenarios
from tests.support.alerting import SECRET, rule_for
from tests.support.ingested import ingest_table
from tests.support.net import free_port

pytestmark = [pytest.mark.services, pytest.mark.slow]

WRONG_SECRET = "Wr0ngSecretValue-DoNotLeak-123456"
SESSION_TOKEN = "FQoGZXIvYXdzEXAMPLESessionToken-DoNotLeak-77"
SAS_SIG = "SasSignature-DoNotLeak%2Fq%3D"
SAS_TOKEN = f"sv=2022-11-02&ss=b&srt=sco&sp=rl&se=2030-01-01T00%3A00%3A00Z&sig={SAS_SIG}"
SLACK_PATH_TOKEN = "SlackPathToken-DoNotLeak-2024"
WEBHOOK_TOKEN = "WebhookQueryToken-DoNotLeak-99"


@pytest.fixture
def lake_env(s3_server, tmp_path, monkeypatch, settings):
    s3_server.enforce_auth()
    bucket = s3_server.create_bucket()
    scenarios.build_ws_reorder_matching(str(tmp_path / "reorder"))
    for root in ("finance", "sales", "temp"):
        upload_table(tmp_path / "reorder", f"s3://{bucket}/{root}/orders", s3_server.options())
    reader = s3_server.read_only_user(bucket)
    base = {**s3_server.options(), "aws_access_key_id": "env:FIN_KEY"}
    config = write_storage_config(
        tmp_path / "storage.toml",
        {
            f"s3://{bucket}/finance/": {**base, "aws_secret_access_key": "env:FIN_SECRET"},
            f"s3://{bucket}/sales/": {**base, "aws_secret_access_key": "env:SALES_SECRET"},
            f"s3://{bucket}/temp/": {
                **base,
                "aws_secret_access_key": "env:SALES_SECRET",
                "aws_session_token": "env:TEMP_SESSION",
            },
            "az://lake/": {
                "azure_storage_account_name": "devstoreaccount1",
                "azure_storage_sas_key": "env:LAKE_SAS",
                "azure_storage_endpoint": f"http://127.0.0.1:{free_port()}/devstoreaccount1",
                "allow_http": "true",
            },
        },
    )
    monkeypatch.setenv("AUDIT_STORAGE_CONFIG", config)
    monkeypatch.setenv("FIN_KEY", reader.access_key_id)
    monkeypatch.setenv("FIN_SECRET", reader.secret_access_key)
    monkeypatch.setenv("SALES_SECRET", WRONG_SECRET)
    monkeypatch.setenv("TEMP_SESSION", SESSION_TOKEN)
    monkeypatch.setenv("LAKE_SAS", SAS_TOKEN)
    settings.AUDIT_ALLOWED_ROOTS = [f"s3://{bucket}", "az://lake"]
    storage = [reader.secret_access_key, WRONG_SECRET, SESSION_TOKEN, SAS_SIG]
    return {"bucket": bucket, "secrets": storage, "urls": [SLACK_PATH_TOKEN, WEBHOOK_TOKEN]}


def _failing_alert_channels() -> None:
    """A Slack channel and a webhook whose URLs are secrets, at ports nothing listens on."""
    dead = f"http://127.0.0.1:{free_port()}"
    slack = Channel.objects.create(
        name="slack",
        kind="slack",
        config={"url": f"{dead}/services/T0SECRET/B0SECRET/{SLACK_PATH_TOKEN}"},
    )
    hook = Channel.objects.create(
        name="hook",
        kind="webhook",
        config={"url": f"{dead}/hook?token={WEBHOOK_TOKEN}&sig={SAS_SIG}", "secret": SECRET},
    )
    rule_for(slack, hook, min_severity="info")
    delivery.scan()
    result = delivery.send_due("secrets-test")
    assert result.claimed >= 2 and result.sent == 0, result


def _stored_text() -> dict[str, str]:
    """Every text column of every table of the test database, as `table.column` -> text."""
    found: dict[str, list[str]] = {}
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names(cursor):
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")  # noqa: S608
            names = [f"{table}.{c[0]}" for c in cursor.description]
            for row in cursor.fetchall():
                for name, value in zip(names, row, strict=True):
                    if isinstance(value, str | bytes | memoryview):
                        text = (
                            bytes(value).decode(errors="replace")
                            if not isinstance(value, str)
                            else value
                        )
                        found.setdefault(name, []).append(text)
    return {name: "\n".join(texts) for name, texts in found.items()}


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


def _tail_the_lake(bucket: str) -> tuple[Table, Table, Table, Table]:
    """A readable table, one its credential may not read, one with a refused session token,
    one behind a SAS to a dead endpoint: every kind of stored error."""
    good = ingest_table(f"s3://{bucket}/finance/orders")
    assert good.status == Table.Status.OK and good.last_seen_version == 3
    with pytest.raises(DeltaAuditError, match="access denied"):
        register_table(f"s3://{bucket}/sales/orders")
    bad = Table.objects.create(uri=f"s3://{bucket}/sales/orders", name="sales")
    tail_once(bad.id)
    bad.refresh_from_db()
    assert (bad.status, bad.error_cause) == (Table.Status.ERROR, "access_denied")
    assert "credential env:FIN_KEY" in bad.last_error
    temp = Table.objects.create(uri=f"s3://{bucket}/temp/orders", name="temp")
    azure = Table.objects.create(uri="az://lake/orders", name="azure")
    for failing in (temp, azure):  # a session token refused; a SAS to a dead endpoint
        tail_once(failing.id)
        failing.refresh_from_db()
        assert failing.status == Table.Status.ERROR and failing.last_error
    return good, bad, temp, azure


def _shown_to_a_member(client, member) -> dict[str, str]:
    client.force_login(member)
    shown = {p: client.get(p).content.decode(errors="replace") for p in _concrete_paths({})}
    shown["/alerts/ (member)"] = client.get("/alerts/").content.decode()
    member_token = Token.objects.create(user=member)
    for path in ("/api/alerts/deliveries/", "/api/alerts/channels/"):
        api = client.get(path, HTTP_AUTHORIZATION=f"Token {member_token.key}")
        shown[f"{path} (member token)"] = api.content.decode()
    assert "failed (the details are shown to the project owners)" in shown["/alerts/ (member)"]
    return shown


def _shown_to_an_administrator(client, owner, token, bucket, finding, tables) -> dict[str, str]:
    good, bad, temp, azure = tables
    bodies: dict[str, str] = {}
    client.force_login(owner)
    for path in chain.from_iterable(
        (f"/tables/{t.id}/", f"/api/tables/{t.id}/") for t in (temp, azure)
    ):
        bodies[path] = client.get(path).content.decode(errors="replace")
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
    assert "/alerts/ (session)" in bodies and "/api/alerts/deliveries/ (token)" in bodies
    return bodies


def _assert_no_secret_anywhere(lake_env, bodies, shown, stored, logs) -> None:
    # An administrator is shown channel URLs, and a channel stores its URL: nowhere else.
    channel_pages = ("/api/alerts/channels/", "/admin/alerting/channel/")
    by_design = {p for p in bodies if p.startswith(channel_pages)}
    for secret in chain(lake_env["secrets"], lake_env["urls"]):
        url_secret = secret in lake_env["urls"] or secret == SAS_SIG
        for where, body in chain(bodies.items(), shown.items()):
            if not (url_secret and where in by_design):
                assert secret not in body, f"secret in {where}"
        for column, text in stored.items():
            if not (url_secret and column == "alerting_channel.config"):
                assert secret not in text, f"secret in the database: {column}"
        assert secret not in logs, "secret in a log line"
    for where, body in chain(bodies.items(), shown.items()):
        assert SECRET not in body, f"a webhook signing secret in {where}"


@pytest.mark.django_db
def test_no_page_endpoint_log_or_row_holds_a_secret(lake_env, client, owner, member, caplog):
    caplog.set_level(logging.DEBUG)
    bucket = lake_env["bucket"]
    tables = _tail_the_lake(bucket)
    good, bad = tables[0], tables[1]
    finding = Finding.objects.filter(table=good).first()
    assert finding is not None
    _failing_alert_channels()
    token = Token.objects.create(user=owner)
    shown = _shown_to_a_member(client, member)
    bodies = _shown_to_an_administrator(client, owner, token, bucket, finding, tables)
    stored = _stored_text()
    assert any("last_error" in column for column in stored)
    formatter = logging.Formatter("%(message)s")
    logs = "\n".join(formatter.format(r) for r in caplog.records)
    assert "failed unexpectedly" not in logs  # the deliveries failed as transports fail
    _assert_no_secret_anywhere(lake_env, bodies, shown, stored, logs)
    detail = client.get(f"/api/tables/{bad.id}/", HTTP_AUTHORIZATION=f"Token {token.key}").json()
    assert detail["error_cause"] == "access_denied"
    assert detail["storage"] == f"root s3://{bucket}/sales/, credential env:FIN_KEY"
