"""Fixtures of the app layer (Django's test database, no long-running processes); shared
fixtures and personas are in tests/conftest.py."""

from __future__ import annotations

from tests.support.django_state import forget_api_tokens_and_cached_pages  # noqa: F401 - autouse
