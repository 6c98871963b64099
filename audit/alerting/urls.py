"""Alerting routes: /metrics, the alert pages under /alerts/ and the API under /api/alerts/."""

from django.urls import include, path
from rest_framework.routers import DefaultRouter

from audit.alerting import api, views

router = DefaultRouter()
router.register("rules", api.RuleViewSet, basename="alert-rule")
router.register("channels", api.ChannelViewSet, basename="alert-channel")
router.register("deliveries", api.DeliveryViewSet, basename="alert-delivery")

app_name = "alerting"


def _editable(what: str, form, delete, *more) -> list:
    """/alerts/<what>s/new/, /alerts/<what>s/<id>/ (edit), .../delete/ and `more` under <id>/;
    named <what>-new, <what>-edit, <what>-delete. Rules and channels are edited alike."""
    under_id = [path("", form, name=f"{what}-edit"), path("delete/", delete, name=f"{what}-delete")]
    return [
        path(f"alerts/{what}s/new/", form, name=f"{what}-new"),
        path(f"alerts/{what}s/<int:{what}_id>/", include([*under_id, *more])),
    ]


urlpatterns = [
    path("metrics", views.metrics, name="metrics"),
    path("alerts/", views.index, name="index"),
    *_editable("rule", views.rule_form, views.rule_delete),
    *_editable(
        "channel",
        views.channel_form,
        views.channel_delete,
        path("test/", views.channel_test, name="channel-test"),
    ),
    path("api/alerts/", include(router.urls)),
]
