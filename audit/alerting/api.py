"""REST API for alerting: /api/alerts/rules/, /api/alerts/channels/ (+ {id}/test/), /api/alerts/deliveries/.

Any authenticated user may read; only administrators (is_staff) may change anything or send a
test. Channel secrets are write-only, and webhook/Slack URLs (which are credentials themselves
for Slack) are shown in full to administrators only; so are the error texts of channels and
deliveries (others see that there was an error, not its text).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import extend_schema
from rest_framework import pagination, permissions, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from audit.alerting import delivery
from audit.alerting.forms import RULE_FIELDS, clean_channel_config, clean_kinds
from audit.alerting.models import AlertRule, Channel, Delivery, error_shown
from audit.trust import access


class AdminWritesOrReadOnly(permissions.BasePermission):
    def has_permission(self, request, view) -> bool:
        if not (request.user and request.user.is_authenticated):
            return False
        return request.method in permissions.SAFE_METHODS or request.user.is_staff


class RuleSerializer(serializers.ModelSerializer):
    kinds = serializers.ListField(child=serializers.CharField(max_length=64), required=False)
    channels = serializers.PrimaryKeyRelatedField(
        many=True, queryset=Channel.objects.all(), required=False
    )

    class Meta:
        model = AlertRule
        fields = ["id", RULE_FIELDS[0], "kinds", *RULE_FIELDS[1:], "created_at"]
        read_only_fields = ["created_at"]

    def validate(self, attrs):
        metric = attrs.get("health_metric", getattr(self.instance, "health_metric", ""))
        threshold = attrs.get("threshold", getattr(self.instance, "threshold", None))
        if metric and threshold is None:
            raise serializers.ValidationError({"threshold": ["a health rule needs a threshold"]})
        return attrs

    def validate_kinds(self, value: list[str]) -> list[str]:
        try:
            return clean_kinds(value)
        except DjangoValidationError as err:
            raise serializers.ValidationError(err.messages) from None


def _is_staff(serializer: serializers.Serializer) -> bool:
    request = serializer.context.get("request")
    return bool(request and request.user.is_staff)


def redacted_url(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname}/…" if parts.hostname else ""


class ChannelSerializer(serializers.ModelSerializer):
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
        staff = _is_staff(self)
        data["url"] = channel.url if staff else redacted_url(channel.url)
        data["emails"] = channel.emails
        for name in ("last_error", "disabled_reason"):
            data[name] = error_shown(data[name], staff)
        return data

    def validate(self, attrs: dict) -> dict:
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
        return obj.finding.table_id if obj.finding_id else None

    def to_representation(self, obj: Delivery) -> dict:
        data = super().to_representation(obj)
        data["last_error"] = error_shown(data["last_error"], _is_staff(self))
        return data


class RuleViewSet(viewsets.ModelViewSet):
    queryset = AlertRule.objects.prefetch_related("channels")
    serializer_class = RuleSerializer
    permission_classes = [AdminWritesOrReadOnly]


class ChannelViewSet(viewsets.ModelViewSet):
    queryset = Channel.objects.all()
    serializer_class = ChannelSerializer
    permission_classes = [AdminWritesOrReadOnly]

    @extend_schema(request=None, responses={200: DeliverySerializer, 502: DeliverySerializer})
    @action(detail=True, methods=["post"], permission_classes=[permissions.IsAdminUser])
    def test(self, request: Request, pk: str | None = None) -> Response:
        """Send a test alert now (no retries); returns the recorded delivery."""
        result = delivery.send_test(self.get_object())
        status = 200 if result.status == Delivery.Status.SENT else 502
        body = DeliverySerializer(result, context=self.get_serializer_context()).data
        return Response(body, status=status)


class DeliveryPagination(pagination.PageNumberPagination):
    page_size = 100
    page_size_query_param = "page_size"
    max_page_size = 1000


class DeliveryViewSet(viewsets.ReadOnlyModelViewSet):
    pagination_class = DeliveryPagination
    serializer_class = DeliverySerializer
    permission_classes = [AdminWritesOrReadOnly]

    def check_permissions(self, request):
        # Another project's delivery is a 404 on every method, before the role check.
        access.check_visible(
            request.user, self.kwargs.get("pk"), access.visible_deliveries, "Delivery"
        )
        super().check_permissions(request)

    def get_queryset(self):
        # A delivery names a finding and its table: only those of the reader's projects (test
        # deliveries name no finding: every reader sees them, as the channels).
        return access.visible_deliveries(self.request.user).select_related("finding")

    filterset_fields = ["status", "channel", "rule", "finding", "is_test"]
