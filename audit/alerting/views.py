"""/metrics and the alert pages (/alerts/): rules, channels, recent deliveries, forms, send test."""

from __future__ import annotations

import hmac

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from audit.alerting import delivery
from audit.alerting.forms import ChannelForm, RuleForm
from audit.alerting.metrics import registry
from audit.alerting.models import AlertRule, Channel, Delivery

RECENT_DELIVERIES = 50


def metrics(request: HttpRequest) -> HttpResponse:
    """Prometheus text; needs `Authorization: Bearer <METRICS_TOKEN>` or a logged-in user."""
    if not (request.user.is_authenticated or _bearer_ok(request)):
        return HttpResponse("Forbidden: a bearer token or a login is required\n", status=403)
    return HttpResponse(generate_latest(registry()), content_type=CONTENT_TYPE_LATEST)


def _bearer_ok(request: HttpRequest) -> bool:
    token = settings.METRICS_TOKEN
    header = request.headers.get("Authorization", "")
    scheme, _, given = header.partition(" ")
    if not token or scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(given.strip().encode(), token.encode())


def _admin_only(request: HttpRequest) -> None:
    if not request.user.is_staff:
        raise PermissionDenied("only administrators can change alerting")


@login_required
def index(request: HttpRequest) -> HttpResponse:
    ctx = {
        "rules": AlertRule.objects.prefetch_related("channels"),
        "channels": Channel.objects.all(),
        "deliveries": Delivery.objects.select_related("channel", "rule", "finding__table")[
            :RECENT_DELIVERIES
        ],
        "can_edit": request.user.is_staff,
    }
    return render(request, "alerting/index.html", ctx)


@login_required
def rule_form(request: HttpRequest, rule_id: int | None = None) -> HttpResponse:
    _admin_only(request)
    rule = get_object_or_404(AlertRule, id=rule_id) if rule_id else None
    form = RuleForm(request.POST or None, instance=rule)
    if request.method == "POST" and form.is_valid():
        form.save()
        messages.success(request, "Rule saved.")
        return redirect("alerting:index")
    return render(request, "alerting/form.html", {"form": form, "what": "rule", "obj": rule})


@login_required
def channel_form(request: HttpRequest, channel_id: int | None = None) -> HttpResponse:
    _admin_only(request)
    channel = get_object_or_404(Channel, id=channel_id) if channel_id else None
    form = ChannelForm(request.POST or None, instance=channel)
    if request.method == "POST" and form.is_valid():
        form.save()
        messages.success(request, "Channel saved.")
        return redirect("alerting:index")
    return render(request, "alerting/form.html", {"form": form, "what": "channel", "obj": channel})


@login_required
@require_POST
def rule_delete(request: HttpRequest, rule_id: int) -> HttpResponse:
    _admin_only(request)
    get_object_or_404(AlertRule, id=rule_id).delete()
    messages.success(request, "Rule deleted.")
    return redirect("alerting:index")


@login_required
@require_POST
def channel_delete(request: HttpRequest, channel_id: int) -> HttpResponse:
    _admin_only(request)
    get_object_or_404(Channel, id=channel_id).delete()
    messages.success(request, "Channel deleted.")
    return redirect("alerting:index")


@login_required
@require_POST
def channel_test(request: HttpRequest, channel_id: int) -> HttpResponse:
    _admin_only(request)
    channel = get_object_or_404(Channel, id=channel_id)
    result = delivery.send_test(channel)
    if result.status == Delivery.Status.SENT:
        messages.success(request, f"Test alert sent to {channel.name}.")
    else:
        messages.error(request, f"Test alert to {channel.name} failed: {result.last_error}")
    return redirect("alerting:index")
