"""How an alert leaves: one Transport per channel kind (like healthchecks' hc/api/transports.py).

`Transport(channel).notify(alert)` sends one alert and returns the HTTP status code (None for
email); on failure it raises `TransportError(message, permanent=...)`. A permanent error
(HTTP 4xx other than 429, an unusable configuration) disables the channel; any other error is
retried with backoff by `delivery.py`.

Every string in an alert may come from a Delta log, so it is untrusted: the webhook body is JSON
(encoded, never templated), the Slack text escapes Slack's mrkdwn control characters, and email
is plain text.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import smtplib
import socket
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import orjson
import requests
from django.conf import settings
from django.core.mail import send_mail

from audit.alerting.models import Channel
from audit.core.errors import one_line
from audit.core.scrub import scrub_error

SIGNATURE_HEADER = "X-DeltaAudit-Signature"
TIMESTAMP_HEADER = "X-DeltaAudit-Timestamp"
DELIVERY_HEADER = "X-DeltaAudit-Delivery"
USER_AGENT = "DeltaAudit-Alerts/1.0"


class TransportError(Exception):
    def __init__(self, message: str, permanent: bool = False, status_code: int | None = None):
        # Every stored or shown delivery error comes from here: scrubbed once, at the source
        # (a Slack URL's path is its credential; errors of requests quote it).
        message = scrub_error(message)
        super().__init__(message)
        self.message = message
        self.permanent = permanent
        self.status_code = status_code


@dataclass
class Alert:
    """What one delivery says. `payload` is the webhook JSON body (documented in docs/alerting.md)."""

    delivery_id: int
    subject: str
    payload: dict[str, Any]
    lines: list[str] = field(default_factory=list)  # plain-text body lines (email)


def check_url(url: str) -> str:
    """`url` if it is an absolute http(s) URL with a host; else a permanent TransportError."""
    try:
        parts = urlsplit(url)
    except ValueError as err:
        raise TransportError(f"invalid URL: {err}", permanent=True) from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise TransportError("the URL must be an absolute http:// or https:// URL", permanent=True)
    return url


def refused_address(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Whether an alert may not go to `ip`: loopback, link-local, private, unspecified,
    multicast, reserved or otherwise not globally routed (IPv4 inside IPv6 looked through)."""
    if isinstance(ip, ipaddress.IPv6Address):
        inner = ip.ipv4_mapped or ip.sixtofour or (ip.teredo[1] if ip.teredo else None)
        if inner is not None and refused_address(inner):
            return True
    return (
        ip.is_loopback
        or ip.is_link_local
        or ip.is_private
        or ip.is_unspecified
        or ip.is_multicast
        or ip.is_reserved
        or not ip.is_global
    )


def check_destination(url: str) -> str:
    """`url` when every address its host resolves to is public, or private ones are allowed
    (AUDIT_ALLOW_PRIVATE_WEBHOOKS); else a permanent TransportError. Checked when a channel is
    saved and again before each send (the host's addresses can change in between)."""
    check_url(url)
    if settings.AUDIT_ALLOW_PRIVATE_WEBHOOKS:
        return url
    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, ValueError, UnicodeError) as err:
        raise TransportError(f"cannot resolve the host {host}: {one_line(err)}") from None
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
        if refused_address(address):
            raise TransportError(
                f"the URL's host {host} resolves to {address}, a loopback, private or reserved "
                "address: alerts are not sent there unless AUDIT_ALLOW_PRIVATE_WEBHOOKS=true",
                permanent=True,
            )
    return url


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """`sha256=<hex>` over `<timestamp>.<raw body>`, keyed with the channel secret."""
    message = timestamp.encode("ascii") + b"." + body
    return "sha256=" + hmac.new(secret.encode("utf-8"), message, hashlib.sha256).hexdigest()


class Transport:
    def __init__(self, channel: Channel):
        self.channel = channel

    def notify(self, alert: Alert) -> int | None:
        raise NotImplementedError


class HttpTransport(Transport):
    def post(self, url: str, body: bytes, headers: dict[str, str]) -> int:
        check_destination(url)
        try:
            response = requests.post(
                url,
                data=body,
                headers={"Content-Type": "application/json", "User-Agent": USER_AGENT, **headers},
                timeout=settings.ALERT_HTTP_TIMEOUT_SECONDS,
                allow_redirects=False,  # a redirect could leave http(s) or the intended host
            )
        except requests.RequestException as err:
            raise TransportError(
                f"{type(err).__name__}: {one_line(err, limit=300, empty='')}"
            ) from None
        code = response.status_code
        if 200 <= code < 300:
            return code
        permanent = 400 <= code < 500 and code != 429
        raise TransportError(
            f"received HTTP {code}{_excerpt(response)}", permanent=permanent, status_code=code
        )


class Webhook(HttpTransport):
    def notify(self, alert: Alert) -> int:
        if not self.channel.secret:
            raise TransportError("the webhook channel has no secret to sign with", permanent=True)
        body = orjson.dumps(alert.payload)
        timestamp = str(int(time.time()))
        headers = {
            TIMESTAMP_HEADER: timestamp,
            SIGNATURE_HEADER: sign(self.channel.secret, timestamp, body),
            DELIVERY_HEADER: str(alert.delivery_id),
        }
        return self.post(self.channel.url, body, headers)


def slack_escape(text: str) -> str:
    """Slack mrkdwn treats &, < and > as control characters (links, mentions): escape them."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slack_payload(alert: Alert) -> dict[str, Any]:
    """An incoming-webhook message: `text` (notifications, fallback) plus Block Kit blocks."""
    p = alert.payload
    table, finding = p.get("table") or {}, p.get("finding") or {}
    esc = slack_escape
    if finding:
        title = (
            f"*{esc(finding['severity'].upper())}* `{esc(finding['kind'])}` in table "
            f"*{esc(table.get('name') or '')}* at version {finding['version']}"
        )
        fields = [
            f"*Table URI*\n{esc(table.get('uri') or '')}",
            f"*Related versions*\n{esc(', '.join(map(str, finding['related_versions'])) or '-')}",
            f"*Confirmed*\n{'yes' if finding['confirmed'] else 'no'}",
            f"*Rule*\n{esc((p.get('rule') or {}).get('name') or '-')}",
        ]
        text = esc(f"[{finding['severity']}] {finding['kind']} in {table.get('name')}: ")
        text += esc(finding["summary"])
        summary = esc(finding["summary"])
    elif p.get("incident"):
        incident = p["incident"]
        title = (
            f"*{esc(str(incident['severity']).upper())}* incident "
            f"`{esc(incident['cause'])}` {esc(p['event'].removeprefix('incident.'))} in table "
            f"*{esc(table.get('name') or '')}*"
        )
        fields = [
            f"*Versions*\n{incident['first_version']}..{incident['last_version']}",
            f"*Occurrences*\n{incident['occurrences']}",
            f"*Rows wrong now*\n{esc(str(incident['rows_wrong_now']))}",
            f"*Rule*\n{esc((p.get('rule') or {}).get('name') or '-')}",
        ]
        text = summary = esc(incident["headline"])
    else:
        title, fields = "*Delta Audit test alert*", []
        text = summary = esc(alert.subject)
    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": title}},
        {"type": "section", "text": {"type": "mrkdwn", "text": summary[:2900]}},
    ]
    if fields:
        blocks.append(
            {"type": "section", "fields": [{"type": "mrkdwn", "text": f} for f in fields]}
        )
    if finding.get("witness_summary"):
        witness = esc(finding["witness_summary"])[:2900]
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": witness}})
    if p.get("dashboard_url"):
        blocks.append(
            {
                "type": "context",
                "elements": [
                    {"type": "mrkdwn", "text": f"<{esc(p['dashboard_url'])}|Open in Delta Audit>"}
                ],
            }
        )
    return {"text": text[:3000], "blocks": blocks}


class Slack(HttpTransport):
    def notify(self, alert: Alert) -> int:
        return self.post(self.channel.url, orjson.dumps(slack_payload(alert)), {})


class Email(Transport):
    def notify(self, alert: Alert) -> None:
        recipients = self.channel.emails
        if not recipients:
            raise TransportError("the email channel has no recipients", permanent=True)
        try:
            send_mail(
                alert.subject[:200].replace("\n", " ").replace("\r", " "),
                "\n".join(alert.lines),
                settings.DEFAULT_FROM_EMAIL,
                recipients,
            )
        except smtplib.SMTPRecipientsRefused as err:
            raise TransportError(
                f"recipients refused: {one_line(err, limit=300, empty='')}", permanent=True
            ) from None
        except (smtplib.SMTPException, OSError) as err:
            raise TransportError(
                f"{type(err).__name__}: {one_line(err, limit=300, empty='')}"
            ) from None
        return None


TRANSPORTS: dict[str, type[Transport]] = {
    Channel.Kind.WEBHOOK: Webhook,
    Channel.Kind.SLACK: Slack,
    Channel.Kind.EMAIL: Email,
}


def transport_for(channel: Channel) -> Transport:
    try:
        return TRANSPORTS[channel.kind](channel)
    except KeyError:
        raise TransportError(f"unknown channel kind {channel.kind!r}", permanent=True) from None


def _excerpt(response: requests.Response) -> str:
    text = response.text[:200].strip().replace("\n", " ") if response.content else ""
    return f": {text}" if text else ""
