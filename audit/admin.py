"""Django admin for tables, commits, findings and incidents (read-mostly: rows come from the workers)."""

from django import forms
from django.contrib import admin
from django.db import transaction

from audit.core.data.keys import valid_key_columns
from audit.core.errors import DeltaAuditError
from audit.incidents.models import Incident
from audit.models import (
    DEFAULT_PROJECT,
    ApiToken,
    Commit,
    Finding,
    FindingFlip,
    Membership,
    Project,
    Table,
    project_named,
)
from audit.trust.paths import check_allowed, check_grantable, check_registrable


class TableAdminForm(forms.ModelForm):
    """The admin registers tables too: the same allowed-roots gate as the API and the CLI."""

    class Meta:
        model = Table
        fields = "__all__"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["project"].required = False  # blank: the default project

    def clean_project(self) -> Project:
        return self.cleaned_data.get("project") or project_named(DEFAULT_PROJECT)

    def clean_key_columns(self) -> list[str]:
        try:
            return valid_key_columns(self.cleaned_data.get("key_columns"))
        except DeltaAuditError as err:
            raise forms.ValidationError(str(err)) from None

    def clean_uri(self) -> str:
        try:
            return check_allowed(self.cleaned_data["uri"])
        except DeltaAuditError as err:
            raise forms.ValidationError(str(err)) from None

    def clean(self) -> dict:
        # Not inside nor around another project's table (audit/trust/paths.py).
        data = super().clean()
        uri, project = data.get("uri"), data.get("project")
        if uri and project is not None:
            try:
                check_registrable(uri, project.pk)
            except DeltaAuditError as err:
                self.add_error("uri", str(err))
        return data


@admin.register(Table)
class TableAdmin(admin.ModelAdmin):
    form = TableAdminForm
    list_display = (
        "name",
        "uri",
        "status",
        "last_seen_version",
        "latest_version_in_log",
        "risk",
        "last_tail_at",
    )
    list_filter = ("status", "project")
    search_fields = ("name", "uri")
    readonly_fields = (
        "last_seen_version",
        "first_available_version",
        "latest_version_in_log",
        "backfill_target_version",
        "backfill_done",
        "backfill_started_at",
        "backfill_start_done",
        "backfill_rate",
        "settings_snapshot",
        "last_commit_at",
        "last_tail_at",
        "created_at",
        "locked_by",
        "locked_until",
    )

    # A table moved to another project leaves and joins cached lists of several tables (keyed
    # on the findings generation, audit/trust/access.py).
    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        Table.bump_findings(obj.pk)


class MembershipInline(admin.TabularInline):
    model = Membership
    raw_id_fields = ("user",)
    extra = 1


class ProjectAdminForm(forms.ModelForm):
    """A project's read roots are checked as `manage.py project_roots --add` checks them."""

    class Meta:
        model = Project
        fields = "__all__"

    def clean_read_roots(self) -> list[str]:
        roots = self.cleaned_data.get("read_roots") or []
        if not isinstance(roots, list) or not all(isinstance(r, str) for r in roots):
            raise forms.ValidationError("read roots must be a list of URIs")
        project_id = self.instance.pk or 0  # a new project has no table yet
        try:
            return sorted({check_grantable(root, project_id) for root in roots})
        except DeltaAuditError as err:
            raise forms.ValidationError(str(err)) from None


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    form = ProjectAdminForm
    list_display = ("name", "slug", "created_at")
    search_fields = ("name", "slug")
    prepopulated_fields = {"slug": ("name",)}
    inlines = [MembershipInline]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Mark an API token read-only (unsafe methods answer 403); `manage.py api_token` too."""

    list_display = ("token", "read_only")
    list_filter = ("read_only",)
    raw_id_fields = ("token",)


@admin.register(Commit)
class CommitAdmin(admin.ModelAdmin):
    list_display = (
        "table",
        "version",
        "committed_at",
        "operation",
        "read_version",
        "isolation_level",
        "blind_append",
        "concurrent_count",
        "engine",
    )
    list_filter = ("operation", "engine", "blind_append")
    list_select_related = ("table",)
    raw_id_fields = ("table",)
    search_fields = ("txn_id", "user_name", "predicate_raw")
    show_full_result_count = False  # COUNT(*) over millions of rows is slow on PostgreSQL


@admin.register(Finding)
class FindingAdmin(admin.ModelAdmin):
    list_display = ("table", "kind", "severity", "version", "confirmed", "status", "last_seen")
    list_filter = ("status", "severity", "kind", "confirmed")
    list_select_related = ("table",)
    raw_id_fields = ("table", "acknowledged_by")
    search_fields = ("summary", "key")
    readonly_fields = ("key", "first_seen", "last_seen", "resolved_at")

    # An edit here changes findings lists: move the tables' generations (cached list bodies).
    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        Table.bump_findings([obj.table_id, form.initial.get("table") or obj.table_id])

    def delete_model(self, request, obj):
        super().delete_model(request, obj)
        Table.bump_findings(obj.table_id)

    def delete_queryset(self, request, queryset):
        with transaction.atomic():
            tables = set(queryset.values_list("table_id", flat=True))
            super().delete_queryset(request, queryset)
            Table.bump_findings(tables)


@admin.register(FindingFlip)
class FindingFlipAdmin(admin.ModelAdmin):
    list_display = ("finding", "created", "old_status", "new_status", "processed")
    raw_id_fields = ("finding",)


@admin.register(Incident)
class IncidentAdmin(admin.ModelAdmin):
    """Read-only: the tail regroups a table's incidents from its findings on every refresh
    (audit/tail/incidents.py), so an edit here would be overwritten; acknowledging is the
    dashboard's and the API's (it records who and at which version)."""

    list_display = (
        "table",
        "incident_id",
        "cause",
        "severity",
        "status",
        "headline",
        "occurrences",
        "last_seen",
    )
    list_filter = ("status", "severity", "cause")
    list_select_related = ("table",)
    search_fields = ("incident_id", "headline", "operation")
    show_full_result_count = False

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
