from django.contrib import admin

from audit.alerting.models import AlertRule, Channel, Delivery


@admin.register(Channel)
class ChannelAdmin(admin.ModelAdmin):
    list_display = ["name", "kind", "enabled", "disabled_reason", "last_error"]
    list_filter = ["kind", "enabled"]


@admin.register(AlertRule)
class AlertRuleAdmin(admin.ModelAdmin):
    list_display = ["name", "min_severity", "confirmed_only", "table_pattern", "enabled"]
    filter_horizontal = ["channels"]


@admin.register(Delivery)
class DeliveryAdmin(admin.ModelAdmin):
    list_display = ["id", "finding", "rule", "channel", "level", "status", "attempts", "created_at"]
    list_filter = ["status", "is_test"]
    raw_id_fields = ["finding"]
    readonly_fields = ["claimed_by", "claimed_until"]
