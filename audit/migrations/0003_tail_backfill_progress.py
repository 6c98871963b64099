from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("audit", "0002_commit_rollups")]

    operations = [
        migrations.AddField(
            model_name="table",
            name="backfill_started_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="table",
            name="backfill_start_done",
            field=models.BigIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="table",
            name="backfill_rate",
            field=models.FloatField(blank=True, null=True),
        ),
    ]
