"""Security suite: allowed roots at every entry point, SSRF-like URIs, anonymous
access to every URL, CSRF on every form, hostile log strings, headers (production refusal:
test_production_settings.py).

Everything runs against real deltalake tables under tmp_path; the "outside" table a traversal
tries to reach holds a secret string in its log, which must never appear in a response.
"""

from __future__ import annotations

import os
import re
import shutil
from datetime import timedelta
from pathlib import Path

import orjson
import pyarrow as pa
import pytest
from deltalake import CommitProperties, write_deltalake
from django.core.management import call_command
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, resolve
from django.utils import timezone

from audit.api.urls import not_found as api_not_found
from audit.ingest.tables import register_table
from audit.models import Commit, Finding, Table
from audit.tail.step import tail_once
from audit.trust.paths import UriNotAllowed, check_allowed, check_registered
from tests.support.cli import run_audit

SECRET = "TOP-SECRET-OUTSIDE-THE-ROOT"

pytestmark = pytest.mark.django_db


def write_table(path: Path, user: str = "etl") -> Path:
    data = pa.table({"day": ["2024-01-01"], "id": pa.array([1], pa.int64())})
    props = CommitProperties(custom_metadata={"userName": user})
    write_deltalake(str(path), data, commit_properties=props)
    write_deltalake(str(path), data, mode="append", commit_properties=props)
    return path


@pytest.fixture
def lake(tmp_path, settings):
    """root/ (allowed, one table), outside/ (a table with a secret), s3 root allowed too."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    write_table(root / "good")
    write_table(outside / "secret", user=SECRET)
    settings.AUDIT_ALLOWED_ROOTS = [str(root), "s3://bucket/prefix"]
    return root, outside


# --------------------------------------------------------------------------- the gate itself

TRAVERSALS = [
    "{root}/../outside/secret",
    "{root}/good/../../outside/secret",
    "{root}/%2e%2e/outside/secret",
    "{root}/%2E%2E/outside/secret",
    "{root}/%252e%252e/outside/secret",  # double encoding
    "{root}/..%2foutside%2fsecret",
    "{root}/..%5coutside%5csecret",
    "{root}\\..\\outside\\secret",
    "{root}/good\x00/../../outside/secret",
    "{root}/good%00",
    "file://{root}/../outside/secret",
    "file://{root}/%2e%2e/outside/secret",
    "file://evil.example.com{root}/good",
    "file:///etc",
    "file:///etc/passwd",
    "/etc",
    "{root}-other/good",
    "{root}/link-out",  # a symlink inside the root pointing outside
    "{root}/link-out/_delta_log",
    "~/.ssh",
    "",
]
SSRF = [
    "http://169.254.169.254/latest/meta-data/",
    "https://169.254.169.254/",
    "http://localhost:6379/",
    "gopher://127.0.0.1:6379/_FLUSHALL",
    "ftp://example.com/t",
    "s3://bucket/prefixother/t",
    "s3://bucket/prefix/../other/t",
    "s3://bucket/prefix/%2e%2e/other",
    "s3://bucket/prefix\\..\\other",
    "s3://other/prefix/t",
    "s3://bucket.evil.com/prefix/t",
    "s3://user:pass@bucket/prefix/t",
    "s3://bucket:9000/prefix/t",
    "s3://bucket/prefix/t?endpoint_override=169.254.169.254",
    "s3://bucket/prefix/t#x",
    "gs://bucket/prefix/t",  # scheme not configured
    "abfss://bucket@acct.dfs.core.windows.net/prefix/t",
    "hdfs://namenode/prefix/t",
]


def bad_uris(root: Path) -> list[str]:
    return [u.format(root=root) for u in TRAVERSALS] + SSRF


@pytest.fixture
def escape_link(lake):
    root, outside = lake
    os.symlink(outside / "secret", root / "link-out")
    return root


@pytest.mark.parametrize("uri", TRAVERSALS + SSRF)
def test_it_refuses_traversal_and_ssrf_uris_at_the_gate(escape_link, uri):
    with pytest.raises(UriNotAllowed) as err:
        check_allowed(uri.format(root=escape_link))
    message = str(err.value)
    assert message and "\n" not in message


def test_it_accepts_tables_under_the_roots(lake):
    root, _ = lake
    assert check_allowed(str(root / "good")) == str(root / "good")
    assert check_allowed(f"file://{root}/good/") == str(root / "good")
    assert check_allowed("s3://bucket/prefix/t") == "s3://bucket/prefix/t"
    assert check_allowed("s3://bucket/prefix/a/b/_delta_log") == "s3://bucket/prefix/a/b"
    os.symlink(root / "good", root / "link-in")  # a link that stays inside is fine
    assert check_allowed(str(root / "link-in")) == str(root / "good")


def assert_nothing_registered_or_leaked(*responses) -> None:
    assert not Table.objects.exists()
    for response in responses:
        body = response.content.decode(errors="replace") if hasattr(response, "content") else ""
        assert SECRET not in body


def test_the_api_refuses_every_bad_uri(client, owner, escape_link):
    client.force_login(owner)
    for uri in bad_uris(escape_link):
        response = client.post("/api/tables/", {"uri": uri}, content_type="application/json")
        assert response.status_code == 400, (uri, response.content)
        assert response["Content-Type"].startswith("application/json")
        assert_nothing_registered_or_leaked(response)
    ok = client.post(
        "/api/tables/", {"uri": str(escape_link / "good")}, content_type="application/json"
    )
    assert ok.status_code == 201, ok.content


def test_the_dashboard_register_form_refuses_every_bad_uri(client, owner, escape_link):
    client.force_login(owner)
    for uri in bad_uris(escape_link):
        response = client.post("/", {"uri": uri, "name": "x"})
        assert response.status_code == 200, uri  # the form again, with the error
        assert_nothing_registered_or_leaked(response)
        if uri.strip():
            assert b"errorlist" in response.content or b"error" in response.content


def test_the_admin_table_form_refuses_every_bad_uri(client, owner, escape_link):
    client.force_login(owner)
    for uri in bad_uris(escape_link):
        response = client.post("/admin/audit/table/add/", {"uri": uri, "name": "x", "status": "ok"})
        assert response.status_code == 200, uri  # the form again: no redirect = not saved
        assert_nothing_registered_or_leaked(response)
    response = client.post(
        "/admin/audit/table/add/",
        {"uri": f"{escape_link}/good/../good/", "name": "g", "status": "ingesting"},
    )
    assert response.status_code == 302
    assert Table.objects.get().uri == str(escape_link / "good")  # stored normalised


def test_the_add_table_cli_refuses_every_bad_uri(escape_link, capsys):
    for uri in [u for u in bad_uris(escape_link) if u]:
        with pytest.raises(SystemExit) as exit_:
            call_command("add_table", uri)
        assert exit_.value.code == 2, uri
        assert "error:" in capsys.readouterr().err
    assert_nothing_registered_or_leaked()


def test_the_audit_cli_is_a_local_users_tool_and_reads_any_path(lake):
    # Documented: `manage.py audit <uri>` is not gated (the user could `cat` the files anyway).
    _, outside = lake
    out = run_audit(str(outside / "secret"), "--json")
    assert out.returncode == 0, out.stderr
    assert orjson.loads(out.stdout)["table"]["version"] == 1


# --------------------------------------------------------------------------- read-time checks


@pytest.fixture
def swapped(lake):
    """A registered, ingested table whose directory is then replaced by a link outside."""
    root, outside = lake
    table, _ = register_table(str(root / "good"))
    assert tail_once(table.id).status == "ok"
    shutil.rmtree(root / "good")
    os.symlink(outside / "secret", root / "good")
    table.refresh_from_db()
    return table


def test_the_tail_task_refuses_a_table_swapped_for_a_symlink(swapped):
    from workers.tasks import tail_table

    line = tail_table(swapped.id)  # the Celery task body, in-process
    swapped.refresh_from_db()
    assert swapped.status == "error", line
    assert "registered table refused" in swapped.last_error
    assert "not under an allowed root" in swapped.last_error
    assert SECRET not in Commit.objects.filter(table=swapped).values_list("user_name", flat=True)


def test_the_tail_refuses_tables_outside_roots_removed_from_the_settings(lake, settings):
    root, _ = lake
    table, _ = register_table(str(root / "good"))
    settings.AUDIT_ALLOWED_ROOTS = ["/nowhere"]
    assert tail_once(table.id).status == "error"
    with pytest.raises(UriNotAllowed):
        check_registered(table.uri)
    assert not Commit.objects.filter(table=table).exists()


def test_analyses_explain_and_pages_refuse_a_swapped_table(client, member, swapped):
    client.force_login(member)
    responses = [
        client.get(f"/api/tables/{swapped.id}/settings/"),
        client.get(f"/api/tables/{swapped.id}/hotspots/"),
        client.post(
            "/api/explain/",
            {"text": "ConcurrentAppendException: x", "table": swapped.id},
            content_type="application/json",
        ),
    ]
    for response in responses:
        assert response.status_code in (400, 409), response.content
        assert b"registered table refused" in response.content
    pages = [
        client.get(f"/tables/{swapped.id}/analysis/"),
        client.get(f"/tables/{swapped.id}/commits/1/"),
        client.post("/explain/", {"text": "ConcurrentAppendException: x", "table": swapped.id}),
    ]
    for page in pages:
        assert page.status_code == 200
        assert b"registered table refused" in page.content
    for response in responses + pages:
        assert SECRET not in response.content.decode()


def test_explain_takes_table_ids_not_paths(client, member, lake):
    client.force_login(member)
    for table in ["../../etc/passwd", "/etc", "1 OR 1=1", "s3://bucket/prefix/t"]:
        response = client.post(
            "/api/explain/", {"text": "x", "table": table}, content_type="application/json"
        )
        assert response.status_code == 400
        page = client.post("/explain/", {"text": "x", "table": table})
        assert page.status_code == 200 and b"errorlist" in page.content


# --------------------------------------------------------------------------- every URL

# Reachable without logging in, on purpose. A new entry here needs a reason.
PUBLIC = {
    "/login/": "the login form",
    "/logout/": "logging out (POST) sends you to the login form",
    "/admin/login/": "the admin's login form",
    "/admin/logout/": "the admin's logout",
    "/favicon.ico": "the icon browsers ask of every page",
    "/healthz": "liveness and the run id scripts/run.sh checks; no data",
}


def walk(patterns, prefix: list | None = None):
    prefix = prefix or []
    for p in patterns:
        if isinstance(p, URLResolver):
            yield from walk(p.url_patterns, [*prefix, p.pattern])
        elif isinstance(p, URLPattern):
            yield [*prefix, p.pattern], p


def _regex_fill(regex: str, value) -> str:
    """A concrete string for a (simple) URL regex: named groups get values."""
    out, i = [], 0
    regex = regex.removeprefix("^").removesuffix("$").removesuffix("\\Z")
    while i < len(regex):
        if regex.startswith("(?P<", i):
            name = regex[i + 4 : regex.index(">", i)]
            depth, j = 0, i
            while True:
                depth += {"(": 1, ")": -1}.get(regex[j], 0) if regex[j - 1 : j] != "\\" else 0
                j += 1
                if depth == 0:
                    break
            if regex[j : j + 1] == "?":
                j += 1  # an optional group: filled anyway
            out.append(str(value(name, "".join(out))))
            i = j
            continue
        if regex.startswith("\\", i):
            out.append(regex[i + 1])
            i += 2
            continue
        if regex[i] in "?*+":
            i += 1
            continue
        out.append(regex[i])
        i += 1
    return "".join(out)


def concrete_url(parts, value) -> str:
    url = "/"
    for part in parts:
        text = str(part)
        if type(part).__name__ == "RoutePattern":
            url += re.sub(
                r"<(?:(\w+):)?(\w+)>",
                lambda m, u=url: (
                    ".json" if m.group(1) == "drf_format_suffix" else str(value(m.group(2), u))
                ),
                text,
            )
        else:
            url += _regex_fill(text, lambda name, done, u=url: value(name, u + done))
    return url


@pytest.fixture
def every_object(lake, owner):
    """One row of each model, so URLs carry ids that exist."""
    from audit.alerting.models import AlertRule, Channel, Delivery

    root, _ = lake
    table, _ = register_table(str(root / "good"))
    tail_once(table.id)
    finding = Finding.objects.create(
        table=table, kind="conflict_hotspot", severity="info", version=1, summary="s",
        key="k", last_seen=timezone.now(),
    )  # fmt: skip
    channel = Channel.objects.create(name="c", kind="webhook", config={"url": "http://x"})
    rule = AlertRule.objects.create(name="r")
    delivery = Delivery.objects.create(
        finding=finding, rule=rule, channel=channel,
        next_attempt_at=timezone.now() + timedelta(days=1),
    )  # fmt: skip
    ids = {
        "tables": table.id, "findings": finding.id, "rules": rule.id,
        "channels": channel.id, "deliveries": delivery.id, "table": table.id,
    }  # fmt: skip

    def value(name: str, url: str):
        if name in ("table_id",):
            return table.id
        if name in ("finding_id",):
            return finding.id
        if name == "rule_id":
            return rule.id
        if name == "channel_id":
            return channel.id
        if name == "version":
            return 1
        if name == "format":
            return "json"
        if name == "app_label":
            return "audit"
        if name == "url":
            return "no-such-page/"
        if name == "rest":
            return "tables/no/such/endpoint/"
        if name == "pk":
            segment = url.rstrip("/").rsplit("/", 1)[-1]
            return ids.get(segment, 1)
        return 1

    urls = {}
    for parts, pattern in walk(get_resolver().url_patterns):
        url = concrete_url(parts, value)
        match = resolve(url)  # fails loudly if the builder cannot handle a new pattern
        assert match.func.__name__ == pattern.callback.__name__, (url, parts)
        urls[url] = pattern
    assert len(urls) > 40, sorted(urls)
    return urls


def _refused(response) -> bool:
    if response.status_code in (401, 403):
        return True
    if response.status_code in (301, 302):
        return "/login/" in response["Location"]
    return False


def test_every_url_refuses_anonymous_users(every_object):
    anonymous = Client()
    public, leaks = set(), []
    for url in sorted(every_object):
        for method in ("get", "post"):
            response = getattr(anonymous, method)(url)
            if url in PUBLIC:
                public.add(url)
                assert response.status_code < 500, (method, url)
                continue
            if every_object[url].callback is api_not_found:
                assert response.status_code == 404  # the API's JSON 404: nothing to protect
                continue
            if not _refused(response):
                leaks.append(f"{method.upper()} {url} -> {response.status_code}")
    assert not leaks, "URLs open to anonymous users (add a login check, or to PUBLIC):\n" + (
        "\n".join(leaks)
    )
    assert public == set(PUBLIC), "a PUBLIC URL no longer exists; update the list"


def test_every_url_enforces_csrf_on_session_posts(every_object, owner):
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)
    missing = []
    for url in sorted(every_object):
        response = client.post(url, {"uri": "/x", "text": "x", "name": "x"})
        if response.status_code != 403:
            missing.append(f"POST {url} -> {response.status_code}")
    assert not missing, "POSTs accepted without a CSRF token:\n" + "\n".join(missing)
    assert Table.objects.count() == 1


def test_the_login_form_needs_a_csrf_token(owner):
    client = Client(enforce_csrf_checks=True)
    response = client.post("/login/", {"username": "alice", "password": "password"})
    assert response.status_code == 403
    page = client.get("/login/")
    token = page.cookies["csrftoken"].value
    response = client.post(
        "/login/", {"username": "alice", "password": "password", "csrfmiddlewaretoken": token}
    )
    assert response.status_code == 302


def test_api_tokens_need_no_csrf_but_sessions_do(every_object, owner):
    from rest_framework.authtoken.models import Token

    token = Token.objects.create(user=owner)
    client = Client(enforce_csrf_checks=True)
    finding = Finding.objects.get()
    by_token = client.post(
        f"/api/findings/{finding.id}/acknowledge/", HTTP_AUTHORIZATION=f"Token {token.key}"
    )
    assert by_token.status_code == 200
    client.force_login(owner)
    by_session = client.post(f"/api/findings/{finding.id}/reopen/")
    assert by_session.status_code == 403 and b"CSRF" in by_session.content


# --------------------------------------------------------------------------- hostile strings

SCRIPT = "<script>alert('xss')</script>"
IMG = "<img src=x onerror=alert(1)>"
JS_URL = "javascript:alert(document.cookie)"


@pytest.fixture
def hostile(tmp_path, settings):
    settings.AUDIT_ALLOWED_ROOTS = [str(tmp_path)]
    path = tmp_path / "hostile"
    data = pa.table({"day": [IMG], "id": pa.array([1], pa.int64())})
    props = CommitProperties(custom_metadata={"userName": SCRIPT, "userId": JS_URL})
    write_deltalake(str(path), data, partition_by=["day"], commit_properties=props)
    info = {
        "commitInfo": {
            "timestamp": 1_700_000_000_000,
            "operation": IMG,
            "operationParameters": {"predicate": SCRIPT, "mode": JS_URL},
            "userName": SCRIPT,
            "engineInfo": JS_URL,
            "readVersion": 0,
        }
    }
    add = {"add": {"path": f"day={IMG}/x.parquet", "partitionValues": {"day": IMG},
                   "size": 1, "modificationTime": 0, "dataChange": True}}  # fmt: skip
    (path / "_delta_log" / f"{1:020d}.json").write_bytes(
        orjson.dumps(info) + b"\n" + orjson.dumps(add) + b"\n"
    )
    table, _ = register_table(str(path), name=SCRIPT)
    assert tail_once(table.id).status == "ok", Table.objects.get().last_error
    Finding.objects.create(
        table=table, kind=IMG, severity="warning", version=1, summary=SCRIPT,
        explanation=JS_URL, key="hostile", last_seen=timezone.now(),
        witness={"sample_rows": [{"day": IMG, "link": JS_URL}]},
    )  # fmt: skip
    return table


def test_hostile_log_strings_are_inert_on_every_page(client, member, hostile):
    client.force_login(member)
    finding = Finding.objects.get()
    pages = [
        "/", "/?q=%3Cscript%3E", f"/tables/{hostile.id}/", f"/tables/{hostile.id}/commits/1/",
        f"/tables/{hostile.id}/commits/0/", f"/tables/{hostile.id}/analysis/", "/findings/",
        f"/findings/{finding.id}/", "/alerts/",
    ]  # fmt: skip
    seen_escaped = False
    for url in pages:
        response = client.get(url)
        assert response.status_code == 200, url
        html = response.content.decode()
        assert SCRIPT not in html and IMG not in html, url
        assert not re.search(r"""(href|src|action)\s*=\s*["']?\s*javascript:""", html, re.I), url
        seen_escaped |= "&lt;script&gt;alert(" in html or "\\u003Cscript\\u003E" in html
        assert "unsafe-inline" not in response["Content-Security-Policy"].split("style-src")[0]
    assert seen_escaped  # the strings are shown, as text


def test_hostile_log_strings_are_json_data_in_the_api(client, member, hostile):
    client.force_login(member)
    urls = [
        f"/api/tables/{hostile.id}/", f"/api/tables/{hostile.id}/commits/",
        f"/api/tables/{hostile.id}/commits/1/", f"/api/tables/{hostile.id}/timeline/",
        "/api/findings/", f"/tables/{hostile.id}/status/",
    ]  # fmt: skip
    texts = []
    for url in urls:
        response = client.get(url)
        assert response.status_code == 200, url
        assert response["Content-Type"].split(";")[0] == "application/json", url
        assert response["X-Content-Type-Options"] == "nosniff"
        texts.append(response.content.decode())
    joined = "\n".join(texts)
    assert SCRIPT in joined or "\\u003cscript" in joined.lower()  # data, verbatim
    assert orjson.loads(client.get(f"/api/tables/{hostile.id}/commits/1/").content)


# --------------------------------------------------------------------------- headers


def test_security_headers_on_pages_and_api(client, member, lake):
    login = client.get("/login/")
    logged_in = client.post("/login/", {"username": "bob", "password": "password"})
    assert logged_in.status_code == 302
    session = logged_in.cookies["sessionid"]
    assert session["httponly"] and session["samesite"] == "Lax"
    for response in (login, client.get("/"), client.get("/findings/"), client.get("/api/tables/")):
        assert response["X-Frame-Options"] == "DENY"
        assert response["X-Content-Type-Options"] == "nosniff"
        assert response["Referrer-Policy"] == "same-origin"
    for response in (login, client.get("/"), client.get("/explain/")):
        csp = response["Content-Security-Policy"]
        script_src = re.search(r"script-src ([^;]*)", csp).group(1)
        assert "'unsafe-inline'" not in script_src and "frame-ancestors 'none'" in csp
