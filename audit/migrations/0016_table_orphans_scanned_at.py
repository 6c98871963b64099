from django.db import migrations, models
from django.db.models import Max, OuterRef, Subquery


def scanned_from_rows(apps, schema_editor):
    """Each table's latest stored scan, so an upgraded lake is not scanned all over at once."""
    Table = apps.get_model("audit", "Table")
    OrphanScan = apps.get_model("audit", "OrphanScan")
    latest = (
        OrphanScan.objects.filter(table=OuterRef("pk"))
        .order_by()
        .values("table")
        .annotate(at=Max("scanned_at"))
        .values("at")
    )
    Table.objects.update(orphans_scanned_at=Subquery(latest))


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0015_table_notified_at"),
    ]

    operations = [
        migrations.AddField(
            model_name="table",
            name="orphans_scanned_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="table",
            name="orphans_queued_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(scanned_from_rows, migrations.RunPython.noop),
    ]
