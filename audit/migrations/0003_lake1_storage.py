# Storage roots and discovery: why a table's last read failed, and "gone" for tables discovery lost.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0002_commit_rollups"),
    ]

    operations = [
        migrations.AddField(
            model_name="table",
            name="error_cause",
            field=models.CharField(blank=True, max_length=20),
        ),
        migrations.AlterField(
            model_name="table",
            name="status",
            field=models.CharField(
                choices=[
                    ("ok", "Ok"),
                    ("ingesting", "Ingesting"),
                    ("backfilling", "Backfilling"),
                    ("error", "Error"),
                    ("paused", "Paused"),
                    ("gone", "Gone"),
                ],
                default="ingesting",
                max_length=16,
            ),
        ),
    ]
