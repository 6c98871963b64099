from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "audit"
    verbose_name = "Delta Audit"

    def ready(self) -> None:
        from audit.trust import logscrub

        logscrub.install()  # secrets never reach a log line, whoever logs it
