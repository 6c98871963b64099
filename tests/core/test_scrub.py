"""audit/core/scrub.py: no URL path, signed parameter, authorization value or known secret
survives into a text that is stored, shown or logged; one_line and storage errors use it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from audit.core import scrub
from audit.core.errors import one_line
from audit.core.storage.errors import storage_error

SLACK = "https://hooks.slack.com/services/T0AAAA/B0BBBB/XyZsecretPathPart123"


@pytest.mark.parametrize(
    ("text", "kept", "gone"),
    [
        (f"POST {SLACK} failed", "https://hooks.slack.com/…", "XyZsecretPathPart123"),
        (
            "GET https://acct.blob.core.windows.net/c/p?sv=2021-08-06&se=2030-01-01&sig=AbC%2Fdef",
            "https://acct.blob.core.windows.net/…",
            "AbC%2Fdef",
        ),
        ("token sv=2021&ss=b&sig=QWERTYsas%3D&se=2030", "sig=***", "QWERTYsas"),
        (
            "X-Amz-Signature=deadbeefcafe&X-Amz-Security-Token=FQoGZX",
            "X-Amz-Signature=***",
            "FQoGZX",
        ),
        ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload", "Authorization: ***", "eyJhbG"),
        ("sent Bearer abcdefgh123 upstream", "Bearer ***", "abcdefgh123"),
        (
            "Max retries exceeded with url: /services/T0/B0/XYZ (Caused by ...)",
            "url: /…",
            "XYZ",
        ),
        ("https://user:pa55word@example.com/x", "https://example.com/…", "pa55word"),
        ("AccountKey=c2VjcmV0a2V5;EndpointSuffix=core", "AccountKey=***", "c2VjcmV0a2V5"),
    ],
)
def test_it_redacts_urls_signed_parameters_and_authorization(text, kept, gone):
    out = scrub.scrub(text)
    assert kept in out and gone not in out, out


@pytest.mark.parametrize(
    "text",
    [
        "s3://lake/t: access denied at https://minio.local:9000 (se=2024/part-0.parquet)",
        "the server wants basic authentication, not a bearer token",
        "Authorization header missing",
    ],
)
def test_it_keeps_what_is_not_a_secret(text):
    assert scrub.scrub(text) == text  # a host alone, a partition named `se`, plain words


def test_it_replaces_given_secrets_even_inside_a_longer_word():
    assert scrub.scrub("key=AKIAxSECRETxKEY!", ["SECRETxKEY"]) == "key=AKIAx***!"


def test_it_finds_secrets_in_the_environment_and_the_storage_config(tmp_path):
    config = tmp_path / "storage.toml"
    config.write_text(
        '[[storage]]\nprefix = "s3://lake/"\n'
        'options = { aws_secret_access_key = "env:FIN_PW", azure_storage_sas_key = "inline-sas-1",'
        ' aws_access_key_id = "AKIDENTITY1", aws_region = "eu-west-1" }\n'
    )
    env = {
        "AUDIT_STORAGE_CONFIG": str(config),
        "FIN_PW": "resolved-from-env-1",
        "AWS_SESSION_TOKEN": "session-token-value",
        "AZURE_STORAGE_ACCOUNT_KEY": "azure-account-key",
        "AWS_ACCESS_KEY_ID": "AKIDENTITY2",
        "AUDIT_API_TOKEN_CACHE_SECONDS": "10",
        "HOME": "/root/home/dir",
    }
    found = scrub.process_secrets(env)
    assert found == {
        "resolved-from-env-1",
        "inline-sas-1",
        "session-token-value",
        "azure-account-key",
    }


def test_it_scrubs_one_line_and_before_cutting_it(monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG")
    line = one_line(f"boom wJalrXUtnFEMI/K7MDENG then {SLACK}", limit=18)
    assert "wJal" not in line
    assert one_line(f"failed: {SLACK}") == "failed: https://hooks.slack.com/…"


def test_it_masks_a_secret_the_environment_gained_or_changed_after_a_scrub(monkeypatch):
    # The environment's secrets are remembered between scrubs: a change must still be seen.
    assert scrub.scrub_error("first value-one-12345") == "first value-one-12345"
    monkeypatch.setenv("SOME_SERVICE_TOKEN", "value-one-12345")
    assert "value-one" not in scrub.scrub_error("first value-one-12345")
    monkeypatch.setenv("SOME_SERVICE_TOKEN", "value-two-67890")
    masked = scrub.scrub_error("first value-one-12345 then value-two-67890")
    assert "value-one-12345" in masked and "value-two" not in masked
    monkeypatch.delenv("SOME_SERVICE_TOKEN")
    assert scrub.scrub_error("value-two-67890") == "value-two-67890"


def test_it_says_plain_http_was_refused_and_what_to_set():
    err = OSError(
        "Generic S3 error: Error performing GET http://127.0.0.1:9/bkt/t/_delta_log/x"
        " - HTTP error: builder error, max_retries 10"
    )
    message = str(storage_error(err, "s3://bkt/t", "listing _delta_log"))
    assert "plain http" in message and "AWS_ALLOW_HTTP=true" in message
    assert "unreachable" not in message


def test_it_scrubs_the_witness_per_file_errors(tmp_path):
    from audit.core.data import witness
    from audit.core.model import AddFile

    signed = "https://acct.blob.core.windows.net/c/part-0.parquet?sv=2021&sig=SASsecretValue1"
    local = f"{tmp_path}/gone.parquet?sig=SASsecretValue2"
    outcome = witness.find_rows(str(tmp_path), [AddFile(signed, {}), AddFile(local, {})], None, {})
    assert outcome.status == "unreadable"
    assert "SASsecretValue" not in outcome.note and "gone.parquet" in outcome.note


def test_it_names_the_first_three_unreadable_files_and_scrubs_no_more(tmp_path, monkeypatch):
    """A vacuumed history fails every file it reads: only the lines the note shows are made
    (and scrubbed), in path order, and the outcome is the same as with every line made."""
    from audit.core.data import witness
    from audit.core.model import AddFile

    calls = []
    real = witness.scrub_error
    monkeypatch.setattr(witness, "scrub_error", lambda text: calls.append(text) or real(text))
    adds = [AddFile(f"gone-{i:02d}.parquet?sig=SASsecretValue{i}", {}) for i in range(40)]
    outcome = witness.find_rows(str(tmp_path), list(reversed(adds)), None, {})
    assert outcome.status == "unreadable"
    named = [f"gone-{i:02d}" for i in range(40) if f"gone-{i:02d}" in outcome.note]
    assert named == ["gone-00", "gone-01", "gone-02"]
    assert len(calls) == witness.SHOWN_PROBLEMS
    assert "SASsecretValue" not in outcome.note


def test_it_reads_a_changed_environment_secret_at_once(monkeypatch):
    monkeypatch.setenv("BENCH_SCRUB_TOKEN", "first-secret-value")
    assert scrub.scrub_error("x first-secret-value y") == "x *** y"
    monkeypatch.setenv("BENCH_SCRUB_TOKEN", "second-secret-value")
    assert (
        scrub.scrub_error("x first-secret-value second-secret-value") == "x first-secret-value ***"
    )


def _every_rule(text: str) -> str:
    """scrub as it was before its literal checks: every pattern scanned, in order."""
    text = scrub._AUTHORIZATION.sub(lambda m: m.group(1) + scrub.MASK, text)
    text = scrub._BEARER.sub(lambda m: f"{m.group(1)} {scrub.MASK}", text)
    text = scrub._SIGNED.sub(lambda m: m.group(1) + scrub.MASK, text)
    text = scrub._QUERY_PARAM.sub(lambda m: m.group(1) + scrub.MASK, text)
    text = scrub._BARE_PATH.sub(lambda m: m.group(1) + "/…", text)
    text = scrub._LOGGED_REQUEST.sub(lambda m: m.group(1) + "/…", text)
    return scrub._URL.sub(scrub._url_without_path, text)


_FRAGMENTS = [
    "Authorization: ", "AUTHORIZATION=", "authorization\"", "Bearer ", "basic ", "BASIC ",
    "tok3n.Value/9=", "sig=", "SIG=", "ſig=", "Signature=", "x-amz-Security-Token=",
    "AccountKey=", "sharedAccessSignature=", "?se=", "&sp=", "?key=", "&Token=", "url: ",
    "URL:", "/path/to", "https://", "HTTP://", "host.example:443", " \"GET ", " ", ";", "'",
    "\"", "<", "&", "?", "=", "/", "…", "K", "İ", "ß", "secretValue123", "date=2024-01-01",
    "part-0001.parquet", "\n", "\t",
]  # fmt: skip


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(_FRAGMENTS), max_size=12))
def test_it_scrubs_exactly_as_scanning_every_rule_does(parts):
    text = "".join(parts)
    assert scrub.scrub(text) == _every_rule(text)


@given(st.text(max_size=60))
def test_it_scrubs_any_text_as_scanning_every_rule_does(text):
    assert scrub.scrub(text) == _every_rule(text)
