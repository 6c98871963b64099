"""API clients as the personas of tests/conftest.py use them: a session or a token."""

from __future__ import annotations

from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient


def session_client(user) -> APIClient:
    """An API client logged in with the user's password (every persona's is "password");
    anonymous for `None`."""
    client = APIClient()
    if user is not None:
        assert client.login(username=user.username, password="password")
    return client


def authorize(client: APIClient, user) -> APIClient:
    """Give `client` a new API token of `user` (tests often ask first without one)."""
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


def token_client(user) -> APIClient:
    """An API client that sends a new token of `user`, as scripts do."""
    return authorize(APIClient(), user)


def error_of(response) -> str:
    body = response.json()
    assert set(body) == {"error", "detail"}, body
    assert isinstance(body["error"], str) and body["error"]
    return body["error"]


def walk(client: APIClient, url: str, **params) -> list[dict]:
    """Every page, following `next` links."""
    items, pages = [], 0
    response = client.get(url, params)
    while True:
        assert response.status_code == 200, response.content
        body = response.json()
        items += body["results"]
        pages += 1
        assert pages < 100
        if not body["next"]:
            return items
        response = client.get(body["next"])
