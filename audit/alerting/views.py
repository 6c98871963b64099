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
from rest_framework.exceptions import APIException

from audit.alerting import delivery
from audit.alerting.forms import ChannelForm, RuleForm
from audit.alerting.metrics import registry
from audit.alerting.models import AlertRule, Channel, Delivery, error_shown
from audit.api.authentication import CachedTokenAuthentication
from audit.trust import access

RECENT_DELIVERIES = 50


def metrics(request: HttpRequest) -> HttpResponse:
    """Prometheus text; needs `Authorization: Bearer <METRICS_TOKEN>` (every table), a user's
    `Authorization: Token <key>` or a login (the tables of that user's projects)."""
    if _bearer_ok(request):
        projects = None
    else:
        user = _token_user(request) or request.user
        if not user.is_authenticated:
            return HttpResponse("Forbidden: a bearer token or a login is required\n", status=403)
        projects = access.visible_project_ids(user)
    return HttpResponse(generate_latest(registry(projects)), content_type=CONTENT_TYPE_LATEST)


def _token_user(request: HttpRequest):
    """The user of a valid `Authorization: Token <key>` (DRF's API token), else None."""
    try:
        found = CachedTokenAuthentication().authenticate(request)
    except APIException:
        return None
    return found[0] if found else None


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
    staff = request.user.is_staff
    channels = list(Channel.objects.all())
    for ch in channels:
        ch.error_shown = error_shown(ch.last_error, staff)
        ch.reason_shown = error_shown(ch.disabled_reason, staff)
    # Deliveries name tables and findings: only those of the reader's projects.
    deliveries = list(
        access.visible_deliveries(request.user).select_related("channel", "rule", "finding__table")[
            :RECENT_DELIVERIES
        ]
    )
    for d in deliveries:
        d.error_shown = error_shown(d.last_error, staff)
    ctx = {
        "rules": AlertRule.objects.prefetch_related("channels"),
        "channels": channels,
        "deliveries": deliveries,
        "can_edit": staff,
    }
    return render(request, "alerting/index.html", ctx)


def _edit(request: HttpRequest, form_class: type, pk: int | None, what: str) -> HttpResponse:
    """The new/edit page of a rule or channel (`what`): the form, saved on a valid POST."""
    _admin_only(request)
    model = form_class._meta.model
    obj = get_object_or_404(model, id=pk) if pk else None
    form = form_class(request.POST or None, instance=obj)
    if request.method == "POST" and form.is_valid():
        form.save()
        messages.success(request, f"{what.capitalize()} saved.")
        return redirect("alerting:index")
    return render(request, "alerting/form.html", {"form": form, "what": what, "obj": obj})


def _delete(request: HttpRequest, model: type, pk: int, what: str) -> HttpResponse:
    _admin_only(request)
    get_object_or_404(model, id=pk).delete()
    messages.success(request, f"{what.capitalize()} deleted.")
    return redirect("alerting:index")


@login_required
def rule_form(request: HttpRequest, rule_id: int | None = None) -> HttpResponse:
    return _edit(request, RuleForm, rule_id, "rule")


@login_required
def channel_form(request: HttpRequest, channel_id: int | None = None) -> HttpResponse:
    return _edit(request, ChannelForm, channel_id, "channel")


@login_required
@require_POST
def rule_delete(request: HttpRequest, rule_id: int) -> HttpResponse:
    return _delete(request, AlertRule, rule_id, "rule")


@login_required
@require_POST
def channel_delete(request: HttpRequest, channel_id: int) -> HttpResponse:
    return _delete(request, Channel, channel_id, "channel")


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
