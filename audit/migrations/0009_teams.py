"""Projects, memberships and read-only API tokens; every existing table goes into the
project named "default"."""

import audit.models
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def tables_into_default_project(apps, schema_editor):
    # The historical models: the app's own default would use today's model.
    project_model = apps.get_model("audit", "Project")
    table_model = apps.get_model("audit", "Table")
    default, _ = project_model.objects.get_or_create(name="default", defaults={"slug": "default"})
    table_model.objects.filter(project__isnull=True).update(project=default)


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0008_finding_attention_indexes"),
        ("authtoken", "0004_alter_tokenproxy_options"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="ApiToken",
            fields=[
                (
                    "token",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="audit",
                        serialize=False,
                        to="authtoken.token",
                    ),
                ),
                ("read_only", models.BooleanField(default=False)),
            ],
        ),
        migrations.CreateModel(
            name="Project",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(max_length=200, unique=True)),
                ("slug", models.SlugField(max_length=200, unique=True)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
            ],
            options={
                "ordering": ["name"],
            },
        ),
        migrations.AddField(
            model_name="table",
            name="project",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="tables",
                to="audit.project",
            ),
        ),
        migrations.RunPython(tables_into_default_project, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="table",
            name="project",
            field=models.ForeignKey(
                default=audit.models.default_project_id,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="tables",
                to="audit.project",
            ),
        ),
        migrations.CreateModel(
            name="Membership",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "role",
                    models.CharField(
                        choices=[("viewer", "Viewer"), ("member", "Member"), ("owner", "Owner")],
                        default="viewer",
                        max_length=10,
                    ),
                ),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="memberships",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "project",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="memberships",
                        to="audit.project",
                    ),
                ),
            ],
            options={
                "indexes": [models.Index(fields=["user", "project"], name="audit_membership_user")],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("project", "user"), name="audit_membership_unique"
                    )
                ],
            },
        ),
    ]
