"""Prometheus metrics read from the database at scrape time (a custom Collector).

Every value is a gauge computed from the current rows, so any number of web processes report
the same thing and nothing is lost on restart. Table labels carry both `table_id` (unique) and
`table` (the display name, which may repeat). A scrape by a user (a login or their API token)
reports only the tables of their projects (`projects`; audit/trust/access.py); the deployment's
METRICS_TOKEN reports every table.
"""

from __future__ import annotations

from collections.abc import Iterator

from django.db.models import Count
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from audit.alerting.models import Channel, Delivery
from audit.models import Table
from audit.reads.queries import open_findings


class AuditCollector(Collector):
    def __init__(self, projects: frozenset[int] | None = None) -> None:
        self.projects = projects  # None: every project

    def _scoped(self, queryset, field: str):
        if self.projects is None:
            return queryset
        return queryset.filter(**{f"{field}__in": sorted(self.projects)})

    def collect(self) -> Iterator[Metric]:
        tables = list(
            self._scoped(Table.objects.all(), "project_id").values_list(
                "id",
                "name",
                "status",
                "risk",
                "last_seen_version",
                "latest_version_in_log",
                "last_tail_at",
            )
        )
        names = {t[0]: t[1] for t in tables}
        yield self.open_findings(names)
        yield from self.table_metrics(tables)
        yield from self.delivery_metrics()

    def open_findings(self, names: dict[int, str]) -> Metric:
        family = GaugeMetricFamily(
            "deltaaudit_open_findings",
            "Open findings by table, kind and severity.",
            labels=["table_id", "table", "kind", "severity"],
        )
        rows = (
            self._scoped(open_findings(), "table__project_id")
            .values("table_id", "kind", "severity")
            .annotate(n=Count("id"))
            .order_by("table_id", "kind", "severity")
        )
        for row in rows:
            table_id = row["table_id"]
            labels = [str(table_id), names.get(table_id, ""), row["kind"], row["severity"]]
            family.add_metric(labels, row["n"])
        return family

    def table_metrics(self, tables: list[tuple]) -> Iterator[Metric]:
        labels = ["table_id", "table"]
        risk = GaugeMetricFamily(
            "deltaaudit_table_risk", "Risk score 0..100 from open findings.", labels=labels
        )
        lag_versions = GaugeMetricFamily(
            "deltaaudit_tail_lag_versions",
            "Versions in the log not yet ingested (latest seen in the log minus last stored).",
            labels=labels,
        )
        lag_seconds = GaugeMetricFamily(
            "deltaaudit_tail_lag_seconds",
            "Seconds since the table was last tailed successfully or checked.",
            labels=labels,
        )
        error = GaugeMetricFamily(
            "deltaaudit_table_ingest_error",
            "1 when the table is in the error state (its ingest failed), else 0.",
            labels=labels,
        )
        by_status = GaugeMetricFamily(
            "deltaaudit_tables", "Registered tables by ingest status.", labels=["status"]
        )
        now = timezone.now()
        counts = dict.fromkeys(Table.Status.values, 0)
        for table_id, name, status, score, last_seen, latest, last_tail_at in tables:
            key = [str(table_id), name]
            counts[status] = counts.get(status, 0) + 1
            risk.add_metric(key, score or 0.0)
            if latest is not None:
                lag_versions.add_metric(
                    key, max(latest - (last_seen if last_seen is not None else -1), 0)
                )
            if last_tail_at is not None:
                lag_seconds.add_metric(key, max((now - last_tail_at).total_seconds(), 0.0))
            error.add_metric(key, 1 if status == Table.Status.ERROR else 0)
        for status, n in sorted(counts.items()):
            by_status.add_metric([status], n)
        yield from (risk, lag_versions, lag_seconds, error, by_status)

    def delivery_metrics(self) -> Iterator[Metric]:
        deliveries = GaugeMetricFamily(
            "deltaaudit_alert_deliveries",
            "Alert deliveries by status and channel kind.",
            labels=["status", "channel_kind"],
        )
        counts = {(s, k): 0 for s in Delivery.Status.values for k in Channel.Kind.values}
        deliveries_seen = Delivery.objects.all()
        if self.projects is not None:
            deliveries_seen = self._scoped(deliveries_seen, "channel__project_id")
        rows = deliveries_seen.values("status", "channel__kind").annotate(n=Count("id")).order_by()
        for row in rows:
            counts[(row["status"], row["channel__kind"])] = row["n"]
        for (status, kind), n in sorted(counts.items()):
            deliveries.add_metric([status, kind], n)
        yield deliveries
        disabled = GaugeMetricFamily(
            "deltaaudit_alert_channels_disabled",
            "Alert channels currently disabled (by a user or a permanent failure).",
        )
        channels = self._scoped(Channel.objects.filter(enabled=False), "project_id")
        disabled.add_metric([], channels.count())
        yield disabled


def registry(projects: frozenset[int] | None = None) -> CollectorRegistry:
    """A registry holding only our collector (no process metrics of whichever worker serves),
    reporting the tables of `projects` (ids; None: every table)."""
    reg = CollectorRegistry(auto_describe=False)
    reg.register(AuditCollector(projects))
    return reg
