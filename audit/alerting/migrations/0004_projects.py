"""Alert channels and rules belong to projects, as tables do; the existing ones go into the
project named "default" (where audit/migrations/0009_teams.py put the existing tables)."""

import django.db.models.deletion
from django.db import migrations, models

import audit.models


def into_default_project(apps, schema_editor):
    # The historical models: the app's own default would use today's model.
    project_model = apps.get_model("audit", "Project")
    default, _ = project_model.objects.get_or_create(name="default", defaults={"slug": "default"})
    for name in ("Channel", "AlertRule"):
        model = apps.get_model("alerting", name)
        model.objects.filter(project__isnull=True).update(project=default)


def _project(related_name: str, *, null: bool) -> models.ForeignKey:
    if null:
        return models.ForeignKey(
            null=True,
            on_delete=django.db.models.deletion.CASCADE,
            related_name=related_name,
            to="audit.project",
        )
    return models.ForeignKey(
        default=audit.models.default_project_id,
        on_delete=django.db.models.deletion.CASCADE,
        related_name=related_name,
        to="audit.project",
    )


class Migration(migrations.Migration):
    dependencies = [
        ("alerting", "0003_publish_lag"),
        ("audit", "0009_teams"),
    ]

    operations = [
        migrations.AddField("channel", "project", _project("channels", null=True)),
        migrations.AddField("alertrule", "project", _project("alert_rules", null=True)),
        migrations.RunPython(into_default_project, migrations.RunPython.noop),
        migrations.AlterField("channel", "project", _project("channels", null=False)),
        migrations.AlterField("alertrule", "project", _project("alert_rules", null=False)),
    ]
