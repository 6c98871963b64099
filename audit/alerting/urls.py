"""Alerting routes: /metrics, the alert pages under /alerts/ and the API under /api/alerts/."""

from django.urls import include, path
from rest_framework.routers import DefaultRouter

from audit.alerting import api, views

router = DefaultRouter()
router.register("rules", api.RuleViewSet, basename="alert-rule")
router.register("channels", api.ChannelViewSet, basename="alert-channel")
router.register("deliveries", api.DeliveryViewSet, basename="alert-delivery")

app_name = "alerting"

urlpatterns = [
    path("metrics", views.metrics, name="metrics"),
    path("alerts/", views.index, name="index"),
    path("alerts/rules/new/", views.rule_form, name="rule-new"),
    path("alerts/rules/<int:rule_id>/", views.rule_form, name="rule-edit"),
    path("alerts/rules/<int:rule_id>/delete/", views.rule_delete, name="rule-delete"),
    path("alerts/channels/new/", views.channel_form, name="channel-new"),
    path("alerts/channels/<int:channel_id>/", views.channel_form, name="channel-edit"),
    path("alerts/channels/<int:channel_id>/delete/", views.channel_delete, name="channel-delete"),
    path("alerts/channels/<int:channel_id>/test/", views.channel_test, name="channel-test"),
    path("api/alerts/", include(router.urls)),
]
