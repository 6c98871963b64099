from django.apps import AppConfig


class AlertingConfig(AppConfig):
    name = "audit.alerting"
    label = "alerting"
    verbose_name = "Alerting"
