"""Fixtures of the app layer (Django's test database, no long-running processes); shared
fixtures and personas are in tests/conftest.py."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from tests.support.django_state import forget_api_tokens_and_cached_pages  # noqa: F401 - autouse


@pytest.fixture
def fresh_cache(settings):
    """Django's cache empty before and after the test (fast password hashing for its logins):
    what a module testing cached answers builds on, with its own cache settings."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    cache.clear()
    yield
    cache.clear()
