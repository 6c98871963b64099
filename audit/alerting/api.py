"""REST API for alerting: /api/alerts/rules/, /api/alerts/channels/ (+ {id}/test/), /api/alerts/deliveries/.

Rules and channels belong to projects (`project`, a name; "default" when none is given). A
user reads those of their projects (another project's answers 404, as a missing one: by id, as
a delivery filter, as a rule's channel); the owners of a project and administrators create,
change, delete and test them. Channel secrets are write-only; the recipients (webhook/Slack
URLs, which are credentials themselves for Slack, and e-mail addresses) are shown in full to
the project's owners and administrators only, and so are the error texts of channels and
deliveries (others see that there was an error, not its text).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import django_filters
from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import extend_schema
from rest_framework import pagination, permissions, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response

from audit.alerting import delivery, visibility
from audit.alerting.forms import HEALTH_TARGET, RULE_FIELDS, clean_channel_config, clean_kinds
from audit.alerting.models import AlertRule, Channel, Delivery, error_shown
from audit.models import DEFAULT_PROJECT
from audit.trust import access

MANAGERS_ONLY = "only owners of the project and administrators may change its alerting"


class OwnersWrite(permissions.BasePermission):
    """Reads for every authenticated user (the querysets hold their projects' rows only);
    writes for the owners of the object's project (the project named on create is checked by
    the serializer), after the object is found: another project's is a 404, not a 403."""

    message = MANAGERS_ONLY

    def has_permission(self, request, view) -> bool:
        return bool(request.user and request.user.is_authenticated)

    def has_object_permission(self, request, view, obj) -> bool:
        if request.method in permissions.SAFE_METHODS:
            return True
        return _manages(view.get_serializer_context(), obj.project_id)


def _manages(context: dict[str, Any], project_id: int) -> bool:
    """Whether the request's user manages the project (owners, staff); the projects they
    manage are read once per request."""
    request = context.get("request")
    if request is None:
        return False
    holder = getattr(request, "_request", request)
    if "_audit_managed_projects" not in holder.__dict__:
        holder._audit_managed_projects = access.managed_project_ids(request.user)
    managed = holder._audit_managed_projects
    return managed is None or project_id in managed


class ProjectOwned(serializers.ModelSerializer):
    """`project` by name: read as the object's, written as a project the user sees (else 404,
    as for none) and manages (else 403); "default" when a new object names none."""

    project = serializers.CharField(required=False, max_length=200)

    def to_representation(self, obj) -> dict:
        data = super().to_representation(obj)
        data["project"] = obj.project.name
        return data

    def validate(self, attrs: dict) -> dict:
        name = attrs.pop("project", None)
        if name is None and self.instance is not None:
            project = self.instance.project
        else:
            user = self.context["request"].user
            project = access.named_project(user, name or DEFAULT_PROJECT)
            if project is None:
                raise NotFound("no such project")
        if not _manages(self.context, project.pk):
            raise PermissionDenied(MANAGERS_ONLY)
        attrs["project"] = project
        return attrs


class VisibleChannels(serializers.PrimaryKeyRelatedField):
    """A rule's channels: ids of the channels the user sees (another project's id is refused
    as a missing one is)."""

    def get_queryset(self):
        return visibility.visible_channels(self.context["request"])


class RuleSerializer(ProjectOwned):
    kinds = serializers.ListField(child=serializers.CharField(max_length=64), required=False)
    channels = VisibleChannels(many=True, required=False)

    class Meta:
        model = AlertRule
        fields = ["id", "project", RULE_FIELDS[0], "kinds", *RULE_FIELDS[1:], "created_at"]
        read_only_fields = ["created_at"]

    def validate(self, attrs):
        attrs = super().validate(attrs)  # the project first: 404 / 403 before any other answer
        metric = attrs.get("health_metric", getattr(self.instance, "health_metric", ""))
        threshold = attrs.get("threshold", getattr(self.instance, "threshold", None))
        if metric and threshold is None:
            raise serializers.ValidationError({"threshold": ["a health rule needs a threshold"]})
        target = attrs.get("target", getattr(self.instance, "target", AlertRule.Target.FINDINGS))
        if metric and target == AlertRule.Target.INCIDENTS:
            raise serializers.ValidationError({"target": [HEALTH_TARGET]})
        channels = attrs.get("channels")
        if channels is None and self.instance is not None:
            channels = visibility.rule_channels(self.instance)
        if any(c.project_id != attrs["project"].pk for c in channels or []):
            raise serializers.ValidationError(
                {"channels": ["a rule sends only through channels of its own project"]}
            )
        return attrs

    def validate_kinds(self, value: list[str]) -> list[str]:
        try:
            return clean_kinds(value)
        except DjangoValidationError as err:
            raise serializers.ValidationError(err.messages) from None


def redacted_url(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname}/…" if parts.hostname else ""


def redacted_email(address: str) -> str:
    """An address as a reader who may not see recipients sees it: its domain only."""
    return "…@" + address.rpartition("@")[2]


class ChannelSerializer(ProjectOwned):
    url = serializers.CharField(required=False, allow_blank=True, max_length=2000)
    secret = serializers.CharField(
        required=False, allow_blank=True, write_only=True, max_length=200
    )
    emails = serializers.ListField(child=serializers.CharField(max_length=254), required=False)
    has_secret = serializers.SerializerMethodField()

    class Meta:
        model = Channel
        fields = [
            "id",
            "project",
            "name",
            "kind",
            "url",
            "secret",
            "has_secret",
            "emails",
            "enabled",
            "disabled_reason",
            "last_error",
            "created_at",
        ]
        read_only_fields = ["disabled_reason", "last_error", "created_at"]

    def get_has_secret(self, channel: Channel) -> bool:
        return bool(channel.secret)

    def to_representation(self, channel: Channel) -> dict:
        data = super().to_representation(channel)
        manager = _manages(self.context, channel.project_id)
        data["url"] = channel.url if manager else redacted_url(channel.url)
        emails = channel.emails
        data["emails"] = emails if manager else [redacted_email(e) for e in emails]
        for name in ("last_error", "disabled_reason"):
            data[name] = error_shown(data[name], manager)
        return data

    def validate(self, attrs: dict) -> dict:
        attrs = super().validate(attrs)
        current = self.instance
        kind = attrs.get("kind", current.kind if current else "")
        url = attrs.pop("url", current.url if current else "").strip()
        secret = attrs.pop("secret", "") or (current.secret if current else "")
        emails = attrs.pop("emails", current.emails if current else [])
        try:
            attrs["config"] = clean_channel_config(kind, url, secret, [e.strip() for e in emails])
        except DjangoValidationError as err:
            raise serializers.ValidationError(err.message_dict) from None
        if attrs.get("enabled"):
            attrs["disabled_reason"] = ""
        return attrs


class DeliverySerializer(serializers.ModelSerializer):
    table = serializers.SerializerMethodField()

    class Meta:
        model = Delivery
        fields = [
            "id",
            "finding",
            "incident",
            "event",
            "occurrences",
            "table",
            "rule",
            "channel",
            "level",
            "severity",
            "confirmed",
            "escalation",
            "is_test",
            "status",
            "attempts",
            "next_attempt_at",
            "last_error",
            "response_code",
            "created_at",
            "sent_at",
        ]
        read_only_fields = fields

    def get_table(self, obj: Delivery) -> int | None:
        if obj.incident_id:
            return obj.incident.table_id
        return obj.finding.table_id if obj.finding_id else None

    def to_representation(self, obj: Delivery) -> dict:
        data = super().to_representation(obj)
        data["last_error"] = error_shown(
            data["last_error"], _manages(self.context, obj.channel.project_id)
        )
        return data


class ProjectObjectViewSet(viewsets.ModelViewSet):
    """Rules and channels: the rows of the user's projects; another project's answers 404 on
    every route and method, before any role check (a 403 would tell that it exists)."""

    permission_classes = [OwnersWrite]

    def check_permissions(self, request):
        model = self.serializer_class.Meta.model
        visibility.check_visible(request, model, self.kwargs.get("pk"))
        super().check_permissions(request)

    def get_queryset(self):
        return visibility.api_rows(self.request, self.serializer_class.Meta.model)


class RuleViewSet(ProjectObjectViewSet):
    serializer_class = RuleSerializer


class ChannelViewSet(ProjectObjectViewSet):
    serializer_class = ChannelSerializer

    @extend_schema(request=None, responses={200: DeliverySerializer, 502: DeliverySerializer})
    @action(detail=True, methods=["post"])
    def test(self, request: Request, pk: str | None = None) -> Response:
        """Send a test alert now (no retries; owners of the channel's project and
        administrators); returns the recorded delivery."""
        result = delivery.send_test(self.get_object())
        status = 200 if result.status == Delivery.Status.SENT else 502
        body = DeliverySerializer(result, context=self.get_serializer_context()).data
        return Response(body, status=status)


class DeliveryPagination(pagination.PageNumberPagination):
    page_size = 100
    page_size_query_param = "page_size"
    max_page_size = 1000


class DeliveryFilter(django_filters.FilterSet):
    channel = django_filters.ModelChoiceFilter(queryset=visibility.choices(Channel))
    rule = django_filters.ModelChoiceFilter(queryset=visibility.choices(AlertRule))
    finding = django_filters.ModelChoiceFilter(queryset=visibility.choices(None))

    class Meta:
        model = Delivery
        fields = ["status", "channel", "rule", "finding", "is_test"]


class DeliveryViewSet(viewsets.ReadOnlyModelViewSet):
    pagination_class = DeliveryPagination
    serializer_class = DeliverySerializer
    permission_classes = [OwnersWrite]
    filterset_class = DeliveryFilter

    def check_permissions(self, request):
        # Another project's delivery is a 404 on every method, before the role check.
        visibility.check_visible(request, Delivery, self.kwargs.get("pk"))
        super().check_permissions(request)

    def get_queryset(self):
        # A delivery names a channel, a finding and its table: only those of the reader's
        # projects (test deliveries name no finding: the channel's project decides).
        return visibility.api_rows(self.request, Delivery)
