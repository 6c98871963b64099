"""Per-process state of the Django app that must not leak from one test to the next."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def forget_api_tokens_and_cached_pages():
    """API tokens and response bodies are remembered per process for a few seconds; not
    across tests (ids and versions repeat from one test's tables to the next)."""
    from django.core.cache import cache

    from audit.api.authentication import forget_tokens

    forget_tokens()
    cache.clear()
