"""Dashboard forms for alert rules and channels (validation shared with the API serializers).

Both take the user who edits: the project is one the user manages (audit/trust/access.py),
and a rule's channels are channels of the rule's project.
"""

from __future__ import annotations

import re
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.core.validators import validate_email

from audit.alerting import visibility
from audit.alerting.models import AlertRule, Channel
from audit.alerting.transports import TransportError, check_destination

HEALTH_TARGET = "a health rule alerts on its findings: its target is findings"
KIND_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
# The rule fields the form and the API serializer both edit (the API adds id, kinds, created_at).
RULE_FIELDS = (
    "name",
    "min_severity",
    "confirmed_only",
    "table_pattern",
    "channels",
    "enabled",
    "health_metric",
    "threshold",
    "target",
    "growth_threshold",
)


def clean_kinds(values: list[str]) -> list[str]:
    kinds = sorted({v.strip() for v in values if v.strip()})
    bad = [k for k in kinds if not KIND_NAME.match(k)]
    if bad:
        raise ValidationError(f"not a finding kind: {', '.join(bad[:3])}")
    return kinds


def clean_channel_config(kind: str, url: str, secret: str, emails: list[str]) -> dict:
    """The config JSON of a channel of `kind`, or ValidationError saying what is missing."""
    if kind in (Channel.Kind.WEBHOOK, Channel.Kind.SLACK):
        if not url:
            raise ValidationError({"url": "a URL is required"})
        try:
            check_destination(url)
        except TransportError as err:
            raise ValidationError({"url": err.message}) from None
        if kind == Channel.Kind.WEBHOOK:
            if len(secret) < 16:
                raise ValidationError({"secret": "a signing secret of at least 16 characters"})
            return {"url": url, "secret": secret}
        return {"url": url}
    if kind == Channel.Kind.EMAIL:
        if not emails:
            raise ValidationError({"emails": "at least one email address"})
        for address in emails:
            try:
                validate_email(address)
            except ValidationError:
                raise ValidationError(
                    {"emails": f"not an email address: {address[:100]}"}
                ) from None
        return {"emails": emails}
    raise ValidationError({"kind": "unknown channel kind"})


def managed_projects(user: Any):
    """The projects `user` may put rules and channels into (owners; staff: every one)."""
    return visibility.managed_projects(user)


def _choose_project(form: forms.ModelForm, user: Any) -> Any:
    """Limit the form's project to those `user` manages, no empty choice (the instance's, or
    the first one, is selected); returns them."""
    projects = managed_projects(user)
    field = form.fields["project"]
    field.queryset, field.empty_label = projects, None
    return projects


class RuleForm(forms.ModelForm):
    kinds_text = forms.CharField(
        label="Finding kinds",
        required=False,
        help_text="Comma-separated, e.g. never_existed_snapshot; empty = every kind.",
    )

    class Meta:
        model = AlertRule
        fields = ["project", *RULE_FIELDS]
        help_texts = {
            "table_pattern": "fnmatch pattern on the table name or URI (e.g. sales_* or "
            "s3://lake/prod/*); empty = every table.",
            "target": "findings: one alert per finding; incidents: one when an incident opens, "
            "grows, resolves (its kinds are then causes, e.g. stale_write_unchecked).",
            "growth_threshold": "An incident rule alerts again after this many new "
            "occurrences since its last alert of the incident.",
        }
        widgets = {"channels": forms.CheckboxSelectMultiple}

    def __init__(self, *args, user: Any, **kwargs):
        super().__init__(*args, **kwargs)
        projects = _choose_project(self, user)
        self.fields["channels"].queryset = Channel.objects.filter(project__in=projects)
        # A form posted without them (as before incidents) keeps a findings rule.
        self.fields["target"].required = self.fields["growth_threshold"].required = False
        if self.instance.pk:
            self.fields["kinds_text"].initial = ", ".join(self.instance.kinds or [])

    def clean(self):
        cleaned = super().clean()
        cleaned["target"] = cleaned.get("target") or AlertRule.Target.FINDINGS
        if cleaned.get("growth_threshold") is None:
            cleaned["growth_threshold"] = AlertRule._meta.get_field("growth_threshold").default
        if cleaned.get("health_metric") and cleaned.get("threshold") is None:
            self.add_error("threshold", "a health rule needs a threshold")
        if cleaned.get("health_metric") and cleaned.get("target") == AlertRule.Target.INCIDENTS:
            self.add_error("target", HEALTH_TARGET)
        project = cleaned.get("project")
        if project and any(c.project_id != project.pk for c in cleaned.get("channels") or []):
            self.add_error("channels", "a rule sends only through channels of its own project")
        return cleaned

    def clean_kinds_text(self) -> list[str]:
        return clean_kinds(self.cleaned_data["kinds_text"].split(","))

    def save(self, commit: bool = True) -> AlertRule:
        self.instance.kinds = self.cleaned_data["kinds_text"]
        return super().save(commit)


class ChannelForm(forms.ModelForm):
    url = forms.CharField(required=False, max_length=2000, help_text="webhook / Slack URL")
    secret = forms.CharField(
        required=False,
        max_length=200,
        widget=forms.PasswordInput(render_value=False),
        help_text="webhook signing secret (leave empty to keep the current one)",
    )
    emails = forms.CharField(required=False, help_text="email: comma-separated addresses")

    class Meta:
        model = Channel
        fields = ["project", "name", "kind", "enabled"]

    def __init__(self, *args, user: Any, **kwargs):
        super().__init__(*args, **kwargs)
        _choose_project(self, user)
        if self.instance.pk:
            self.fields["url"].initial = self.instance.url
            self.fields["emails"].initial = ", ".join(self.instance.emails)

    def clean(self):
        data = super().clean()
        emails = [e.strip() for e in (data.get("emails") or "").split(",") if e.strip()]
        secret = data.get("secret") or (self.instance.secret if self.instance.pk else "")
        try:
            self.instance.config = clean_channel_config(
                data.get("kind", ""), (data.get("url") or "").strip(), secret, emails
            )
        except ValidationError as err:
            for name, errors in err.message_dict.items():
                self.add_error(name if name in self.fields else None, errors)
        return data

    def save(self, commit: bool = True) -> Channel:
        if self.cleaned_data.get("enabled"):
            self.instance.disabled_reason = ""  # re-enabled by an owner after fixing it
        return super().save(commit)
