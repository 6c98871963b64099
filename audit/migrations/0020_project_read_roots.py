"""A project's granted read roots (shallow clones within the project): empty for every
existing project, so each table reads inside its own location only until staff grant more."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0019_rollup_rows_by_column"),
    ]

    operations = [
        migrations.AddField(
            model_name="project",
            name="read_roots",
            field=models.JSONField(blank=True, default=list),
        ),
    ]
