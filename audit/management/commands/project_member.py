"""`manage.py project_member <project> <username> --role viewer|member|owner [--remove]`: give
a user a role in a project (created if missing), or take it away."""

from __future__ import annotations

import sys

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from audit.models import Membership, project_named
from audit.trust.access import set_member


class Command(BaseCommand):
    help = "Make a user a viewer, member or owner of a project (created if missing)."

    def add_arguments(self, parser):
        parser.add_argument("project", help="project name")
        parser.add_argument("username")
        parser.add_argument(
            "--role",
            choices=Membership.Role.values,
            default=Membership.Role.VIEWER,
            help="viewer reads; member also acknowledges findings; owner also manages tables",
        )
        parser.add_argument("--remove", action="store_true", help="take the membership away")

    def handle(self, *args, project: str, username: str, role: str, remove: bool, **options):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            self.stderr.write(f"error: no user named {username!r}")
            sys.exit(2)
        if remove:
            gone, _ = Membership.objects.filter(project__name=project, user=user).delete()
            self.stdout.write(f"{username} {'removed from' if gone else 'was not in'} {project}")
            return
        set_member(project_named(project), user, role)
        self.stdout.write(f"{username} is now {role} of project {project!r}")
