"""Alert rules, channels and reliable delivery, against a real local HTTP receiver."""

from __future__ import annotations

import threading
from datetime import timedelta

import orjson
import pytest
from django.core import mail
from django.db import transaction
from django.utils import timezone
from rest_framework.test import APIClient

from audit.alerting import delivery, risk
from audit.alerting.models import AlertRule, Channel, Delivery
from audit.alerting.transports import slack_escape
from audit.ingest.findings import upsert_findings
from audit.models import DEFAULT_PROJECT, FindingFlip, Table
from tests.support.alerting import (
    SECRET,
    documented_verifier,
    make_table,
    open_finding,
    rule_for,
    run_until_quiet,
    webhook,
)
from tests.support.clients import authorize
from tests.support.projects import project


@pytest.fixture(autouse=True)
def fast_retries(settings):
    settings.ALERT_RETRY_BASE_SECONDS = 10
    settings.ALERT_RETRY_MAX_SECONDS = 80
    settings.ALERT_HTTP_TIMEOUT_SECONDS = 3
    settings.ALERT_SITE_URL = "https://audit.example.org"


# --------------------------------------------------------------------------- webhook


@pytest.mark.django_db
def test_it_sends_a_signed_webhook_that_the_documented_snippet_verifies(receiver):
    table = make_table()
    finding = open_finding(table)
    rule_for(webhook(receiver.url), name="critical anomalies", min_severity="critical")

    run_until_quiet()

    assert len(receiver.requests) == 1
    _, headers, body = receiver.requests[0]
    verify = documented_verifier()
    assert verify(SECRET, headers, body)
    assert not verify("another-secret-of-some-length", headers, body)
    assert not verify(SECRET, headers, body + b" ")
    stale = {
        **headers,
        "X-DeltaAudit-Timestamp": str(int(headers["X-DeltaAudit-Timestamp"]) - 3600),
    }
    assert not verify(SECRET, stale, body)
    payload = orjson.loads(body)
    assert payload["event"] == "finding.opened"
    assert payload["table"] == {"id": table.id, "name": "orders", "uri": "/lake/prod/orders"}
    assert payload["finding"]["kind"] == "never_existed_snapshot"
    assert payload["finding"]["version"] == 3
    assert payload["finding"]["related_versions"] == [2]
    assert payload["finding"]["confirmed"] is True
    assert payload["finding"]["explanation"].startswith("The DELETE at v3")
    assert "3 row(s) in 1 file(s)" in payload["finding"]["witness_summary"]
    assert payload["dashboard_url"] == f"https://audit.example.org/findings/{finding.id}/"
    assert payload["rule"]["name"] == "critical anomalies"
    d = Delivery.objects.get()
    assert (d.status, d.attempts, d.response_code) == ("sent", 1, 200)
    assert headers["X-DeltaAudit-Delivery"] == str(d.id)
    assert FindingFlip.objects.filter(processed__isnull=True).count() == 0


@pytest.mark.django_db
def test_it_delivers_each_alert_exactly_once_after_the_receiver_comes_back(receiver):
    receiver.stop()  # connection refused
    table = make_table()
    findings = [open_finding(table, v, related=(v - 1,)) for v in (3, 5, 7)]
    rule_for(webhook(receiver.url))
    now = timezone.now()
    delivery.scan(now)

    for _ in range(3):  # down: every attempt is refused and rescheduled
        result = delivery.send_due("tester", now=now)
        now += timedelta(seconds=200)
    assert result.retrying == 3
    assert set(Delivery.objects.values_list("status", flat=True)) == {"pending"}
    assert "ConnectionError" in Delivery.objects.first().last_error

    receiver.start()
    receiver.codes = [503, 503, 503, 503]  # up but unhealthy for a while
    # Duplicated work: scans and senders run again and again while it recovers.
    for _ in range(10):
        delivery.scan(now)
        delivery.send_due("tester-a", now=now)
        delivery.send_due("tester-b", now=now)
        now += timedelta(seconds=100)

    got = sorted(body["finding"]["id"] for body in receiver.bodies())
    assert got == sorted(f.id for f in findings)
    assert set(Delivery.objects.values_list("status", flat=True)) == {"sent"}
    assert min(Delivery.objects.values_list("attempts", flat=True)) >= 4
    assert Channel.objects.get().enabled


@pytest.mark.django_db
def test_it_backs_off_exponentially_between_attempts(receiver, settings):
    receiver.default_code = 503
    rule_for(webhook(receiver.url))
    open_finding(make_table())
    now = timezone.now()
    delivery.scan(now)
    delays = []
    for _ in range(5):
        delivery.send_due("tester", now=now)
        d = Delivery.objects.get()
        delays.append((d.next_attempt_at - now).total_seconds())
        now = d.next_attempt_at
    assert delays == [10, 20, 40, 80, 80]
    assert d.response_code == 503 and "HTTP 503" in d.last_error

    settings.ALERT_MAX_ATTEMPTS = 6
    delivery.send_due("tester", now=now)
    d.refresh_from_db()
    assert d.status == "failed" and "gave up after 6 attempts" in d.last_error


@pytest.mark.django_db
def test_it_disables_the_channel_on_a_404_and_says_so_on_the_page(receiver, client, owner):
    receiver.default_code = 404
    channel = webhook(receiver.url)
    rule_for(channel)
    open_finding(make_table())

    run_until_quiet()

    d = Delivery.objects.get()
    assert (d.status, d.attempts, d.response_code) == ("failed", 1, 404)
    channel.refresh_from_db()
    assert not channel.enabled
    assert "HTTP 404" in channel.disabled_reason
    # No more deliveries for the disabled channel.
    open_finding(make_table("events", "/lake/prod/events"))
    run_until_quiet()
    assert Delivery.objects.count() == 1 and receiver.requests == []

    client.force_login(owner)
    page = client.get("/alerts/").content.decode()
    assert "disabled" in page and "received HTTP 404" in page


@pytest.mark.django_db
def test_it_retries_a_429_without_disabling(receiver):
    receiver.codes = [429]
    channel = webhook(receiver.url)
    rule_for(channel)
    open_finding(make_table())
    run_until_quiet()
    d = Delivery.objects.get()
    assert (d.status, d.attempts) == ("sent", 2)
    channel.refresh_from_db()
    assert channel.enabled and channel.last_error == ""


@pytest.mark.django_db
def test_it_refuses_non_http_urls_at_send_time(receiver):
    channel = Channel.objects.create(
        name="bad", kind="webhook", config={"url": "file:///etc/passwd", "secret": SECRET}
    )
    rule_for(channel)
    open_finding(make_table())
    run_until_quiet()
    assert Delivery.objects.get().status == "failed"
    channel.refresh_from_db()
    assert not channel.enabled and "http" in channel.disabled_reason


@pytest.mark.django_db(transaction=True)
def test_concurrent_senders_send_each_delivery_once(receiver):
    rule_for(webhook(receiver.url))
    table = make_table()
    for v in range(20):
        open_finding(table, v, related=())
    now = timezone.now()
    delivery.scan(now)
    errors = []

    def sender(n: int) -> None:
        try:
            delivery.send_due(f"thread-{n}", now=now)
        except Exception as err:  # surfaced below
            errors.append(repr(err))

    threads = [threading.Thread(target=sender, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    ids = [h["X-DeltaAudit-Delivery"] for _, h, _ in receiver.requests]
    assert len(ids) == 20 and len(set(ids)) == 20
    assert Delivery.objects.filter(status="sent", attempts=1).count() == 20


@pytest.mark.django_db
def test_a_claim_is_taken_once():
    channel = webhook("http://127.0.0.1:9/")
    d = Delivery.objects.create(channel=channel, next_attempt_at=timezone.now())
    assert delivery.claim(d.id, "a")
    assert not delivery.claim(d.id, "b")
    d.refresh_from_db()
    assert (d.status, d.claimed_by, d.attempts) == ("sending", "a", 1)
    # A dead worker's claim is released after the lease, then someone else may take it.
    later = timezone.now() + timedelta(hours=1)
    assert delivery.release_expired_claims(later) == 1
    assert delivery.claim(d.id, "b", later)


# --------------------------------------------------------------------------- escalation, rules


@pytest.mark.django_db
def test_it_alerts_once_per_rule_and_channel_and_again_on_escalation(receiver):
    table = make_table()
    rule_for(webhook(receiver.url), min_severity="warning")
    open_finding(table, severity="warning", confirmed=False)
    now = run_until_quiet()
    assert len(receiver.requests) == 1
    # Found again unchanged, and reopened after a resolve: no new alert.
    open_finding(table, severity="warning", confirmed=False)
    with transaction.atomic():
        upsert_findings(table, [], scope=(3, 3))  # resolved
    open_finding(table, severity="warning", confirmed=False)  # reopened
    now = run_until_quiet(now + timedelta(seconds=1))
    assert len(receiver.requests) == 1
    # Severity rises: a new alert.
    open_finding(table, severity="critical", confirmed=False)
    now = run_until_quiet(now + timedelta(seconds=1))
    assert len(receiver.requests) == 2
    assert receiver.bodies()[1]["event"] == "finding.escalated"
    assert receiver.bodies()[1]["finding"]["severity"] == "critical"
    # Drops back to warning: nothing; becomes confirmed (critical): a new alert.
    open_finding(table, severity="warning", confirmed=False)
    now = run_until_quiet(now + timedelta(seconds=1))
    assert len(receiver.requests) == 2
    open_finding(table, severity="critical", confirmed=True)
    run_until_quiet(now + timedelta(seconds=1))
    assert len(receiver.requests) == 3
    assert receiver.bodies()[2]["finding"]["confirmed"] is True
    assert list(Delivery.objects.order_by("id").values_list("level", flat=True)) == [2, 4, 5]


@pytest.mark.django_db
def test_rules_filter_by_kind_severity_confirmation_and_table(receiver):
    hook = webhook(receiver.url)
    rule_for(hook, name="kinds", kinds=["write_serializable_reorder"], min_severity="info")
    rule_for(hook, name="confirmed", confirmed_only=True, min_severity="info")
    rule_for(hook, name="prod by uri", table_pattern="/lake/prod/*", min_severity="critical")
    rule_for(hook, name="sales by name", table_pattern="sales_*", min_severity="info")
    prod = make_table("orders", "/lake/prod/orders")
    sales = make_table("sales_eu", "/lake/dev/s")
    other = make_table("misc", "/lake/dev/misc")
    open_finding(prod, 1, kind="write_serializable_reorder", severity="warning", confirmed=False)
    open_finding(prod, 2, severity="critical", confirmed=False)
    open_finding(sales, 3, severity="info", confirmed=True)
    open_finding(other, 4, severity="info", confirmed=False)
    run_until_quiet()
    got = sorted((b["rule"]["name"], b["finding"]["version"]) for b in receiver.bodies())
    assert got == [
        ("confirmed", 3),
        ("kinds", 1),
        ("prod by uri", 2),
        ("sales by name", 3),
    ]


@pytest.mark.django_db
def test_a_disabled_rule_sends_nothing(receiver):
    rule_for(webhook(receiver.url), enabled=False)
    open_finding(make_table())
    run_until_quiet()
    assert receiver.requests == [] and not Delivery.objects.exists()


# --------------------------------------------------------------------------- slack, email


@pytest.mark.django_db
def test_slack_payload_has_text_and_blocks_with_untrusted_strings_escaped(receiver):
    slack = Channel.objects.create(name="slack", kind="slack", config={"url": receiver.url})
    rule_for(slack)
    table = make_table("<!channel> & <https://evil.example|click>", "/lake/x")
    open_finding(table, summary="hostile <@U123> summary & more")
    run_until_quiet()

    assert len(receiver.requests) == 1
    payload = receiver.bodies()[0]
    assert set(payload) == {"text", "blocks"}
    assert "&lt;@U123&gt; summary &amp; more" in payload["text"]
    types = [b["type"] for b in payload["blocks"]]
    assert types[0] == "section" and types[-1] == "context"
    for block in payload["blocks"]:
        texts = [block["text"]] if "text" in block else block.get("fields") or block["elements"]
        for t in texts:
            assert t["type"] == "mrkdwn"
    everything = orjson.dumps(payload).decode()
    assert "<!channel>" not in everything and "<@U123>" not in everything
    assert "&lt;!channel&gt; &amp; &lt;https://evil.example|click&gt;" in everything
    assert "<https://audit.example.org/findings/" in payload["blocks"][-1]["elements"][0]["text"]
    assert slack_escape("a<b>&c") == "a&lt;b&gt;&amp;c"


@pytest.mark.django_db
def test_email_goes_through_the_django_backend(settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    channel = Channel.objects.create(
        name="oncall", kind="email", config={"emails": ["oncall@example.org", "b@example.org"]}
    )
    rule_for(channel)
    open_finding(make_table())
    run_until_quiet()
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == ["oncall@example.org", "b@example.org"]
    assert message.subject == (
        "[Delta Audit] CRITICAL never_existed_snapshot in orders at version 3"
    )
    assert "rows of v2 survive the DELETE at v3" in message.body
    assert "related versions: 2" in message.body
    assert "Witness: 3 row(s)" in message.body
    assert Delivery.objects.get().status == "sent"


# --------------------------------------------------------------------------- risk


@pytest.mark.django_db
def test_risk_follows_the_documented_formula_and_refreshes_on_scan():
    table = make_table()
    assert risk.compute_risk(table) == 0.0
    open_finding(table, 1, severity="warning", confirmed=False)
    assert risk.compute_risk(table) == 9.5
    open_finding(table, 2, severity="critical", confirmed=True)
    assert risk.compute_risk(table) == 59.3  # weights 5 + 40 -> 100 * (1 - e^-0.9)
    for v in range(10, 20):
        open_finding(table, v, severity="critical", confirmed=True)
    assert 99.9 <= risk.compute_risk(table) <= 100.0
    delivery.scan()
    table.refresh_from_db()
    assert table.risk == risk.compute_risk(table)
    with transaction.atomic():
        upsert_findings(table, [], scope=(0, 100))  # every finding resolved
    delivery.scan()
    table.refresh_from_db()
    assert table.risk == 0.0


# --------------------------------------------------------------------------- pages and API


@pytest.mark.django_db
def test_alert_pages_need_a_login_and_only_admins_edit(client, member, owner, receiver):
    assert client.get("/alerts/").status_code == 302
    client.force_login(member)
    assert client.get("/alerts/").status_code == 200
    assert client.get("/alerts/rules/new/").status_code == 403
    assert client.post("/alerts/channels/new/", {"name": "x"}).status_code == 403

    client.force_login(owner)
    default = project(DEFAULT_PROJECT).id
    r = client.post(
        "/alerts/channels/new/",
        {
            "project": default,
            "name": "ops hook",
            "kind": "webhook",
            "url": receiver.url,
            "secret": SECRET,
            "enabled": "on",
        },
    )
    assert r.status_code == 302, r.content.decode()
    channel = Channel.objects.get(name="ops hook")
    assert channel.config == {"url": receiver.url, "secret": SECRET}
    r = client.post(
        "/alerts/channels/new/",
        {"name": "bad", "kind": "webhook", "url": "ftp://x/y", "secret": SECRET},
    )
    assert r.status_code == 200 and "http" in r.content.decode()
    r = client.post(
        "/alerts/rules/new/",
        {
            "project": default,
            "name": "critical",
            "kinds_text": "never_existed_snapshot, write_serializable_reorder",
            "min_severity": "critical",
            "table_pattern": "prod_*",
            "channels": [channel.id],
            "enabled": "on",
        },
    )
    assert r.status_code == 302
    rule = AlertRule.objects.get(name="critical")
    assert rule.kinds == ["never_existed_snapshot", "write_serializable_reorder"]
    # Editing a channel without retyping the secret keeps it.
    r = client.post(
        f"/alerts/channels/{channel.id}/",
        {
            "project": default,
            "name": "ops hook",
            "kind": "webhook",
            "url": receiver.url,
            "secret": "",
            "enabled": "on",
        },
    )
    assert r.status_code == 302
    channel.refresh_from_db()
    assert channel.secret == SECRET

    r = client.post(f"/alerts/channels/{channel.id}/test/", follow=True)
    assert "Test alert sent" in r.content.decode()
    assert receiver.bodies()[-1]["event"] == "test"
    assert documented_verifier()(SECRET, receiver.requests[-1][1], receiver.requests[-1][2])
    page = client.get("/alerts/").content.decode()
    assert "critical" in page and "ops hook" in page and "Send test" in page


@pytest.mark.django_db
def test_alert_pages_escape_untrusted_strings(client, owner):
    channel = webhook("http://127.0.0.1:9/")
    rule_for(channel)
    table = make_table("<script>alert(1)</script>", "/lake/x")
    finding = open_finding(table, kind="never_existed_snapshot")
    Delivery.objects.create(
        finding=finding, channel=channel, next_attempt_at=timezone.now(), last_error="<img src=x>"
    )
    client.force_login(owner)
    page = client.get("/alerts/").content.decode()
    assert "<script>alert(1)" not in page and "&lt;script&gt;" in page
    assert "<img src=x>" not in page


@pytest.mark.django_db
def test_alert_api_requires_a_token_and_admin_for_writes(member, owner, receiver):
    api = APIClient()
    assert api.get("/api/alerts/rules/").status_code in (401, 403)
    authorize(api, member)
    assert api.get("/api/alerts/channels/").status_code == 200
    body = {"name": "x", "kind": "webhook", "url": receiver.url, "secret": SECRET}
    assert api.post("/api/alerts/channels/", body, format="json").status_code == 403

    admin = APIClient()
    authorize(admin, owner)
    r = admin.post("/api/alerts/channels/", body, format="json")
    assert r.status_code == 201, r.json()
    channel_id = r.json()["id"]
    assert "secret" not in r.json() and r.json()["has_secret"] is True
    bad = {**body, "url": "gopher://x/"}
    assert admin.post("/api/alerts/channels/", bad, format="json").status_code == 400
    short = {**body, "secret": "short"}
    assert admin.post("/api/alerts/channels/", short, format="json").status_code == 400
    email = {"name": "mail", "kind": "email", "emails": ["not-an-address"]}
    assert admin.post("/api/alerts/channels/", email, format="json").status_code == 400

    rule = {"name": "r", "kinds": ["never_existed_snapshot"], "channels": [channel_id]}
    r = admin.post("/api/alerts/rules/", rule, format="json")
    assert r.status_code == 201 and r.json()["min_severity"] == "warning"
    assert (
        admin.post(
            "/api/alerts/rules/", {**rule, "kinds": ["Bad Kind!"]}, format="json"
        ).status_code
        == 400
    )

    # Members see the channel, but neither its secret nor its full URL.
    listed = api.get("/api/alerts/channels/").json()
    assert listed[0]["url"] == "http://127.0.0.1/…" and "secret" not in listed[0]

    assert api.post(f"/api/alerts/channels/{channel_id}/test/").status_code == 403
    r = admin.post(f"/api/alerts/channels/{channel_id}/test/")
    assert r.status_code == 200 and r.json()["status"] == "sent" and r.json()["is_test"]
    assert receiver.bodies()[-1]["event"] == "test"

    receiver.default_code = 404
    r = admin.post(f"/api/alerts/channels/{channel_id}/test/")
    assert r.status_code == 502 and "404" in r.json()["last_error"]
    assert Channel.objects.get(id=channel_id).enabled  # a test never disables a channel

    deliveries = api.get("/api/alerts/deliveries/?status=failed").json()
    assert deliveries["count"] == 1 and deliveries["results"][0]["response_code"] == 404

    # Re-enabling a disabled channel clears its reason.
    Channel.objects.filter(id=channel_id).update(enabled=False, disabled_reason="x")
    r = admin.patch(f"/api/alerts/channels/{channel_id}/", {"enabled": True}, format="json")
    assert r.status_code == 200 and r.json()["disabled_reason"] == ""


@pytest.mark.django_db
def test_the_beat_tasks_scan_send_and_refresh_risk(receiver):
    from workers import alert_tasks

    rule_for(webhook(receiver.url))
    table = make_table()
    open_finding(table)
    line = alert_tasks.process_alerts()
    assert "1 new deliveries" in line and "sent 1" in line
    assert len(receiver.requests) == 1
    assert "sent 0" in alert_tasks.process_alerts() and len(receiver.requests) == 1
    Table.objects.filter(id=table.id).update(risk=None)
    assert alert_tasks.refresh_all_risks() == "risk changed for 1 tables"
    table.refresh_from_db()
    assert table.risk == 55.1
