"""/metrics and the alert pages (/alerts/): rules, channels, recent deliveries, forms, send test.

A user sees the rules, channels and deliveries of their projects (another project's rule or
channel answers 404, as a missing one); the owners of a project and administrators create,
edit, delete and test them, and read the channels' recipients and error texts."""

from __future__ import annotations

import hmac
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from rest_framework.exceptions import APIException

from audit.alerting import delivery, visibility
from audit.alerting.forms import ChannelForm, RuleForm
from audit.alerting.metrics import registry
from audit.alerting.models import AlertRule, Channel, Delivery, error_shown
from audit.trust import access
from audit.trust.tokens import CachedTokenAuthentication

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
        projects = access.projects(user)
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


def _manager_of(managed: frozenset[int] | None, project_id: int) -> bool:
    return managed is None or project_id in managed


@login_required
def index(request: HttpRequest) -> HttpResponse:
    user = request.user
    managed = access.managed_project_ids(user)
    channels, rules, deliveries = visibility.page_rows(user, RECENT_DELIVERIES)
    for ch in channels:
        ch.can_edit = _manager_of(managed, ch.project_id)
        ch.error_shown = error_shown(ch.last_error, ch.can_edit)
        ch.reason_shown = error_shown(ch.disabled_reason, ch.can_edit)
    for rule in rules:
        rule.can_edit = _manager_of(managed, rule.project_id)
    # Deliveries name tables and findings: only those of the reader's projects.
    for d in deliveries:
        d.error_shown = error_shown(d.last_error, _manager_of(managed, d.channel.project_id))
    ctx = {
        "rules": rules,
        "channels": channels,
        "deliveries": deliveries,
        "can_create": managed is None or bool(managed),
    }
    return render(request, "alerting/index.html", ctx)


def _managed(request: HttpRequest, model: type, pk: int | None) -> Any:
    """The rule or channel `pk` (None: a new one) for a change: 404 outside the user's
    projects (as for none), 403 unless they manage its project (or, for a new one, any)."""
    user = request.user
    obj = visibility.managed_object(user, model, pk) if pk else None
    if pk and obj is None:
        raise Http404(f"No {model.__name__} matches the given query.")
    project = obj.project_id if obj is not None else None
    managed = access.managed_project_ids(user)
    allowed = _manager_of(managed, project) if obj is not None else managed != frozenset()
    if not allowed:
        raise PermissionDenied("only owners of the project and administrators change its alerting")
    return obj


def _edit(request: HttpRequest, form_class: type, pk: int | None, what: str) -> HttpResponse:
    """The new/edit page of a rule or channel (`what`): the form, saved on a valid POST."""
    obj = _managed(request, form_class._meta.model, pk)
    form = form_class(request.POST or None, instance=obj, user=request.user)
    if request.method == "POST" and form.is_valid():
        form.save()
        messages.success(request, f"{what.capitalize()} saved.")
        return redirect("alerting:index")
    return render(request, "alerting/form.html", {"form": form, "what": what, "obj": obj})


def _delete(request: HttpRequest, model: type, pk: int, what: str) -> HttpResponse:
    visibility.remove(_managed(request, model, pk))
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
    channel = _managed(request, Channel, channel_id)
    result = delivery.send_test(channel)
    if result.status == Delivery.Status.SENT:
        messages.success(request, f"Test alert sent to {channel.name}.")
    else:
        messages.error(request, f"Test alert to {channel.name} failed: {result.last_error}")
    return redirect("alerting:index")
