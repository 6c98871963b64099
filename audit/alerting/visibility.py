"""Who sees which alert rules, channels and deliveries (a project's, as its tables are), and
what the alert pages and API read of them. The decision is `audit.trust.access`'s (projects);
the rows are alerting's own, read here and not in its views (`tests/app/test_web_layer_reads.py`).
"""

from __future__ import annotations

from typing import Any

from django.db.models import Q, QuerySet

from audit.alerting.models import AlertRule, Channel, Delivery
from audit.models import Project
from audit.reads.visible import visible_findings
from audit.trust import access


def visible_channels(who: Any) -> QuerySet[Channel]:
    """The alert channels of the projects the reader sees."""
    return access.restrict(Channel.objects.all(), who, "project_id")


def visible_rules(who: Any) -> QuerySet[AlertRule]:
    """The alert rules of the projects the reader sees."""
    return access.restrict(AlertRule.objects.all(), who, "project_id")


def visible_deliveries(who: Any) -> QuerySet[Delivery]:
    """Alert deliveries through the channels of the projects the reader sees, of a finding of
    those projects' tables or of none (a test). A rule sends only its own project's findings
    through its own project's channels; the finding is checked too for rows older than that."""
    ids = who if isinstance(who, frozenset) else access.projects(who)
    rows = Delivery.objects.all()
    if ids is None:
        return rows
    among = sorted(ids)
    return rows.filter(
        Q(finding__isnull=True) | Q(finding__table__project_id__in=among),
        Q(incident__isnull=True) | Q(incident__table__project_id__in=among),
        channel__project_id__in=among,
    )


VISIBLE = {AlertRule: visible_rules, Channel: visible_channels, Delivery: visible_deliveries}


def check_visible(request: Any, model: type, pk: Any) -> None:
    """Another project's rule, channel or delivery is a 404 on every route and method, before
    any role check (a 403 would tell that it exists)."""
    access.object_or_404(request, pk, VISIBLE[model], model.__name__)


def api_rows(request: Any, model: type) -> QuerySet:
    """The rows of the API's list and detail routes, with what their serializers read."""
    rows = VISIBLE[model](request)
    if model is Delivery:
        return rows.select_related("finding", "incident", "channel")
    rows = rows.select_related("project")
    return rows.prefetch_related("channels") if model is AlertRule else rows


def choices(model: type) -> Any:
    """A filter's choices: the rows the request's reader sees, so an id of another project's
    object is refused exactly as an id of none (400, the same body)."""
    rows = {Channel: visible_channels, AlertRule: visible_rules}.get(model, visible_findings)
    return lambda request: rows(request.user) if request is not None else rows(None)


def page_rows(user: Any, recent: int) -> tuple[list, list, list]:
    """The alert page's channels, rules and `recent` latest deliveries the user sees."""
    channels = list(visible_channels(user).select_related("project"))
    rules = list(visible_rules(user).select_related("project").prefetch_related("channels"))
    deliveries = visible_deliveries(user).select_related("channel", "rule", "finding__table")
    return channels, rules, list(deliveries[:recent])


def rule_channels(rule: AlertRule) -> list[Channel]:
    """The channels a rule sends through."""
    return list(rule.channels.all())


def managed_object(user: Any, model: type, pk: int) -> Any | None:
    """The rule or channel `pk` if the user sees it, else None."""
    return VISIBLE[model](user).filter(id=pk).first()


def managed_projects(user: Any) -> QuerySet[Project]:
    """The projects `user` may put rules and channels into (owners; staff: every one)."""
    managed = access.managed_project_ids(user)
    rows = Project.objects.all()
    return rows if managed is None else access.restrict(rows, managed, "id")


def remove(obj: AlertRule | Channel) -> None:
    """Delete a rule or channel the caller checked the user manages (its deliveries go with
    it, as the models' foreign keys say)."""
    obj.delete()
