"""Stored table health, maintained by `audit.ingest.health_store` as the tail stores commits.

- `TableHealth`: the health document of the last stored version (what the API serves for
  the latest version without replaying anything), plus the sort keys of the fleet view.
- `HealthPoint`: num_files / total_bytes / small_files per version, for "health over time".
- `TableChange`: one schema / protocol / properties / partitioning change of a version.
Imported by audit.models so Django registers them in the `audit` app.
"""

from __future__ import annotations

from django.db import models


class TableHealth(models.Model):
    table = models.OneToOneField("audit.Table", on_delete=models.CASCADE, related_name="health")
    version = models.BigIntegerField()
    computed_at = models.DateTimeField()
    data = models.JSONField(default=dict)  # the health document (audit.core.health.compute)
    # Fleet sort keys, copied out of `data` so the tables list sorts in SQL.
    num_files = models.BigIntegerField(default=0)
    total_bytes = models.BigIntegerField(default=0)
    small_files = models.BigIntegerField(default=0)
    small_file_ratio = models.FloatField(default=0.0)
    vacuumable_bytes = models.BigIntegerField(default=0)
    checkpoint_lag = models.BigIntegerField(default=0)
    # Staged commits not yet published (catalog-managed, coordinated commits): versions, and
    # seconds the oldest has waited.
    publish_lag_versions = models.BigIntegerField(default=0)
    publish_lag_seconds = models.FloatField(default=0.0)

    def __str__(self) -> str:
        return f"health of table {self.table_id} at v{self.version}"


class HealthPoint(models.Model):
    table = models.ForeignKey("audit.Table", on_delete=models.CASCADE, related_name="health_points")
    version = models.BigIntegerField()
    timestamp = models.BigIntegerField(null=True, blank=True)  # ms since the epoch
    num_files = models.BigIntegerField()
    total_bytes = models.BigIntegerField()
    small_files = models.BigIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["table", "version"], name="uniq_health_point")
        ]

    def __str__(self) -> str:
        return f"table {self.table_id} v{self.version}: {self.num_files} files"


class TableChange(models.Model):
    table = models.ForeignKey("audit.Table", on_delete=models.CASCADE, related_name="changes")
    version = models.BigIntegerField()
    timestamp = models.BigIntegerField(null=True, blank=True)
    kind = models.CharField(max_length=20)  # audit.core.health.changes.KINDS
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    diff = models.JSONField(default=dict, blank=True)
    summary = models.TextField()

    class Meta:
        ordering = ["version", "id"]
        constraints = [
            models.UniqueConstraint(fields=["table", "version", "kind"], name="uniq_table_change")
        ]

    def __str__(self) -> str:
        return f"table {self.table_id} v{self.version}: {self.summary[:60]}"
