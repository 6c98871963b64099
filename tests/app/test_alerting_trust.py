"""Alert channels at the trust boundary: a Slack URL's path (its credential) never reaches a
non-administrator, error texts are scrubbed when stored, and channels may not point inside the
network (loopback, private, link-local, reserved) unless AUDIT_ALLOW_PRIVATE_WEBHOOKS is on."""

from __future__ import annotations

import ipaddress

import pytest
from django.utils import timezone

from audit.alerting import delivery
from audit.alerting.models import HIDDEN_ERROR, Channel, Delivery
from audit.alerting.transports import TransportError, check_destination, refused_address
from tests.support.alerting import SECRET, make_table, open_finding, rule_for, run_until_quiet
from tests.support.clients import token_client
from tests.support.net import free_port

SLACK_PATH = "/services/T0ALERTS/B0HOOK/SlackTokenInThePath42"


def _failed_slack_delivery() -> tuple[Channel, Delivery]:
    """A Slack channel whose endpoint refuses connections: requests' error quotes the URL."""
    url = f"http://127.0.0.1:{free_port()}{SLACK_PATH}"
    channel = Channel.objects.create(name="slack", kind="slack", config={"url": url})
    rule_for(channel)
    open_finding(make_table())
    delivery.scan()
    delivery.send_due("tester")
    return channel, Delivery.objects.get()


@pytest.mark.django_db
def test_it_keeps_a_slack_url_path_out_of_stored_errors(settings):
    settings.ALERT_HTTP_TIMEOUT_SECONDS = 3
    channel, sent = _failed_slack_delivery()
    channel.refresh_from_db()
    assert sent.status == "pending" and sent.last_error, sent.last_error
    assert "127.0.0.1" in sent.last_error  # the host still says where it failed
    for text in (sent.last_error, channel.last_error):
        assert "SlackTokenInThePath42" not in text and "/services/" not in text, text


@pytest.mark.django_db
def test_it_shows_delivery_and_channel_errors_to_administrators_only(client, member, admin):
    # A row stored before errors were scrubbed still holds the whole URL.
    channel = Channel.objects.create(
        name="slack",
        kind="slack",
        config={"url": f"https://hooks.slack.com{SLACK_PATH}"},
        last_error=f"ConnectionError: POST https://hooks.slack.com{SLACK_PATH} failed",
        disabled_reason=f"received HTTP 404 from https://hooks.slack.com{SLACK_PATH}",
        enabled=False,
    )
    Delivery.objects.create(
        channel=channel,
        is_test=True,
        status="failed",
        next_attempt_at=timezone.now(),
        last_error=f"ConnectionError: POST https://hooks.slack.com{SLACK_PATH} failed",
    )
    as_member = token_client(member)
    deliveries = as_member.get("/api/alerts/deliveries/").json()["results"]
    assert [d["last_error"] for d in deliveries] == [HIDDEN_ERROR]
    channels = as_member.get("/api/alerts/channels/").json()
    assert channels[0]["last_error"] == HIDDEN_ERROR
    assert channels[0]["disabled_reason"] == HIDDEN_ERROR
    client.force_login(member)
    page = client.get("/alerts/").content.decode()
    assert HIDDEN_ERROR in page
    for body in (str(deliveries), str(channels), page):
        assert "SlackTokenInThePath42" not in body

    staff = token_client(admin).get("/api/alerts/deliveries/").json()["results"]
    assert "SlackTokenInThePath42" in staff[0]["last_error"]  # administrators see the URL anyway


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "::1",
        "::ffff:127.0.0.1",
        "::ffff:10.1.2.3",
        "2002:7f00:1::1",  # 6to4 around 127.0.0.1
        "10.0.0.5",
        "172.16.3.4",
        "192.168.1.1",
        "100.64.0.1",  # carrier-grade NAT
        "169.254.169.254",  # cloud metadata
        "fe80::1",
        "fc00::1",
        "0.0.0.0",
        "::",
        "224.0.0.1",
        "ff02::1",
        "240.0.0.1",
        "255.255.255.255",
    ],
)
def test_it_refuses_addresses_inside_the_network(address):
    assert refused_address(ipaddress.ip_address(address))


@pytest.mark.parametrize("address", ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"])
def test_it_allows_public_addresses(address):
    assert not refused_address(ipaddress.ip_address(address))


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9/hook",
        "http://localhost/hook",  # a name: every address it resolves to is checked
        "https://[::ffff:127.0.0.1]/hook",
        "http://169.254.169.254/latest/meta-data/",
    ],
)
def test_it_refuses_private_urls_unless_allowed(url, settings):
    settings.AUDIT_ALLOW_PRIVATE_WEBHOOKS = False
    with pytest.raises(TransportError, match="AUDIT_ALLOW_PRIVATE_WEBHOOKS") as caught:
        check_destination(url)
    assert caught.value.permanent
    settings.AUDIT_ALLOW_PRIVATE_WEBHOOKS = True
    assert check_destination(url) == url


@pytest.mark.django_db
def test_it_refuses_a_private_url_when_the_channel_is_saved(client, owner, settings, receiver):
    settings.AUDIT_ALLOW_PRIVATE_WEBHOOKS = False
    api = token_client(owner)
    r = api.post(
        "/api/alerts/channels/",
        {"name": "inside", "kind": "webhook", "url": receiver.url, "secret": SECRET},
        format="json",
    )
    assert r.status_code == 400 and "AUDIT_ALLOW_PRIVATE_WEBHOOKS" in str(r.json()), r.json()
    client.force_login(owner)
    page = client.post(
        "/alerts/channels/new/",
        {"name": "inside", "kind": "slack", "url": receiver.url, "enabled": "on"},
    )
    assert page.status_code == 200 and "AUDIT_ALLOW_PRIVATE_WEBHOOKS" in page.content.decode()
    assert not Channel.objects.exists()


@pytest.mark.django_db
def test_it_refuses_a_private_url_at_send_time(settings, receiver):
    # Saved while allowed (or before the check existed), sent after it was turned off.
    channel = Channel.objects.create(
        name="hook", kind="webhook", config={"url": receiver.url, "secret": SECRET}
    )
    settings.AUDIT_ALLOW_PRIVATE_WEBHOOKS = False
    rule_for(channel)
    open_finding(make_table())
    run_until_quiet()
    sent = Delivery.objects.get()
    assert sent.status == "failed" and sent.attempts == 1
    assert receiver.requests == []
    channel.refresh_from_db()
    assert not channel.enabled and "AUDIT_ALLOW_PRIVATE_WEBHOOKS" in channel.disabled_reason
