from django.contrib import admin

from audit.alerting.models import AlertRule, Channel, Delivery


@admin.register(Channel)
class ChannelAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "kind", "enabled", "disabled_reason", "last_error"]
    list_filter = ["project", "kind", "enabled"]
    # The config holds the webhook's signing secret (write-only everywhere else) and is
    # validated (URL, address) only by the alert pages and the API: it is not edited here.
    exclude = ["config"]
    readonly_fields = ["url", "has_secret", "emails"]

    @admin.display(description="URL")
    def url(self, channel: Channel) -> str:
        return channel.url

    @admin.display(description="signing secret set", boolean=True)
    def has_secret(self, channel: Channel) -> bool:
        return bool(channel.secret)

    @admin.display(description="emails")
    def emails(self, channel: Channel) -> str:
        return ", ".join(channel.emails)


@admin.register(AlertRule)
class AlertRuleAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "min_severity", "confirmed_only", "table_pattern", "enabled"]
    list_filter = ["project"]
    filter_horizontal = ["channels"]


@admin.register(Delivery)
class DeliveryAdmin(admin.ModelAdmin):
    list_display = ["id", "finding", "rule", "channel", "level", "status", "attempts", "created_at"]
    list_filter = ["status", "is_test"]
    raw_id_fields = ["finding"]
    readonly_fields = ["claimed_by", "claimed_until"]
