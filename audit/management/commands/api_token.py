"""`manage.py api_token <username> [--read-only | --read-write]`: the user's API token (made
if missing), printed; optionally marked read-only (any unsafe method answers 403) or not."""

from __future__ import annotations

import sys

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from rest_framework.authtoken.models import Token

from audit.api.authentication import forget_tokens
from audit.models import ApiToken


class Command(BaseCommand):
    help = "Print a user's API token (made if missing); --read-only / --read-write set its mode."

    def add_arguments(self, parser):
        parser.add_argument("username")
        mode = parser.add_mutually_exclusive_group()
        mode.add_argument("--read-only", action="store_true", help="refuse unsafe methods")
        mode.add_argument("--read-write", action="store_true", help="allow unsafe methods")

    def handle(self, *args, username: str, read_only: bool, read_write: bool, **options):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            self.stderr.write(f"error: no user named {username!r}")
            sys.exit(2)
        token, _ = Token.objects.get_or_create(user=user)
        if read_only or read_write:
            ApiToken.objects.update_or_create(token=token, defaults={"read_only": read_only})
            forget_tokens()  # this process's memory of valid tokens
        mode = ApiToken.objects.filter(token=token, read_only=True).exists()
        self.stdout.write(f"{token.key} ({'read-only' if mode else 'read-write'})")
