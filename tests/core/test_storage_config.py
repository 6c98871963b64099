"""Per-root storage options (AUDIT_STORAGE_CONFIG) and storage error classification."""

from __future__ import annotations

import pytest

from audit.core.errors import DeltaAuditError
from audit.core.storage.config import (
    StorageConfig,
    describe_storage,
    parse_storage_config,
    resolve_storage,
    storage_for,
)
from audit.core.storage.errors import classify, scrub, storage_error

CONFIG = """
[[storage]]
prefix = "s3://lake/"
options = { aws_access_key_id = "env:LAKE_KEY", aws_secret_access_key = "env:LAKE_SECRET" }

[[storage]]
prefix = "s3://lake/finance/"
options = { aws_access_key_id = "env:FIN_KEY", aws_secret_access_key = "env:FIN_SECRET", aws_allow_http = true }

[[storage]]
prefix = "abfss://raw@acct.dfs.core.windows.net/"
options = { azure_storage_account_key = "inline-secret-value", azure_storage_endpoint = "http://127.0.0.1:10000/acct" }
"""
ENV = {
    "LAKE_KEY": "AKLAKE",
    "LAKE_SECRET": "lake-secret",
    "FIN_KEY": "AKFIN",
    "FIN_SECRET": "s3cr3t!",
}


@pytest.fixture
def config() -> StorageConfig:
    return parse_storage_config(CONFIG, "test.toml")


def test_the_longest_matching_prefix_wins(config):
    fin = resolve_storage("s3://lake/finance/orders", config, ENV)
    assert fin.root == "s3://lake/finance/"
    assert fin.options["aws_secret_access_key"] == "s3cr3t!"
    assert fin.options["aws_allow_http"] == "true"
    other = resolve_storage("s3://lake/marketing/clicks/", config, ENV)
    assert other.root == "s3://lake/"
    assert other.options["aws_access_key_id"] == "AKLAKE"
    # Prefixes match whole path segments: finance2 is not under finance/.
    assert resolve_storage("s3://lake/finance2/t", config, ENV).root == "s3://lake/"
    # s3a:// is the same store as s3://; the prefix itself is a table root too.
    assert resolve_storage("s3a://lake/finance", config, ENV).root == "s3://lake/finance/"


def test_no_matching_root_leaves_the_standard_environment(config):
    resolved = resolve_storage("s3://elsewhere/t", config, ENV)
    assert (resolved.root, resolved.options) == (None, {})
    assert (
        resolved.description == "root none (standard environment variables), credential environment"
    )


def test_description_names_the_root_and_credential_never_the_secret(config):
    fin = resolve_storage("s3://lake/finance/orders", config, ENV)
    assert fin.description == "root s3://lake/finance/, credential env:FIN_KEY"
    assert "s3cr3t!" in fin.secrets and "AKFIN" not in fin.secrets
    az = resolve_storage("abfss://raw@acct.dfs.core.windows.net/t", config, ENV)
    assert az.description == "root abfss://raw@acct.dfs.core.windows.net/, credential inline"
    assert "inline-secret-value" not in az.description
    assert "s3cr3t!" not in repr(fin)


def test_an_unset_variable_is_a_clear_error_naming_it(config):
    with pytest.raises(DeltaAuditError, match=r"environment variable FIN_SECRET .* is not set"):
        resolve_storage("s3://lake/finance/t", config, {"FIN_KEY": "x"})


@pytest.mark.parametrize(
    "text, message",
    [
        ("[[storage]\n", "not valid TOML"),
        ('[[storage]]\nprefix = "lake"\n', "prefix must be a URI"),
        ('[[storage]]\nprefix = "s3://a/"\noptions = { k = [1] }\n', "options must map"),
        ('[[storage]]\nprefix = "s3://a/"\n[[storage]]\nprefix = "s3://a"\n', "configured twice"),
    ],
)
def test_a_malformed_file_is_refused_with_one_line(text, message):
    with pytest.raises(DeltaAuditError, match=message) as err:
        parse_storage_config(text, "bad.toml")
    assert "\n" not in str(err.value)


def test_the_process_reads_the_file_named_by_the_environment(tmp_path, monkeypatch):
    path = tmp_path / "storage.toml"
    path.write_text(CONFIG)
    env = {**ENV, "AUDIT_STORAGE_CONFIG": str(path)}
    assert storage_for("s3://lake/finance/t", env).options["aws_access_key_id"] == "AKFIN"
    monkeypatch.setenv("AUDIT_STORAGE_CONFIG", str(tmp_path / "missing.toml"))
    assert "cannot read the storage configuration" in describe_storage("s3://lake/t")
    assert describe_storage("/data/t") == "local filesystem"


@pytest.mark.parametrize(
    "text, cause",
    [
        ("Generic S3 error: Error performing list request ... 403 Forbidden", "access_denied"),
        ("The operation lacked the necessary privileges to complete for path x", "access_denied"),
        ("AuthenticationFailed: Server failed to authenticate the request", "access_denied"),
        (
            "Error performing GET http://127.0.0.1:1/b in 1.5s, after 10 retries, max_retries",
            "unreachable",
        ),
        ("HTTP error: error sending request: client error (Connect)", "unreachable"),
        ("Object at location x/_delta_log/0.json not found", "not_found"),
        ("The specified bucket does not exist (NoSuchBucket)", "not_found"),
        ("Unknown configuration key: aws_bogus", "other"),
    ],
)
def test_storage_errors_are_classified(text, cause):
    assert classify(OSError(text)) == cause


def test_error_messages_hold_no_secrets_nor_signed_urls():
    err = OSError(
        "\x1b[31mGeneric error\x1b[0m GET https://acct.blob.core.windows.net/c?sig=SECRETSIG&se=1 "
        "key=hunter22 boom"
    )
    out = storage_error(
        err, "az://c/t", "reading x", where="root az://c/, credential env:K", secrets=["hunter22"]
    )
    text = str(out)
    assert out.cause == "other"
    assert "SECRETSIG" not in text and "hunter22" not in text and "\x1b" not in text
    assert text.startswith(
        "az://c/t: storage error while reading x (root az://c/, credential env:K)"
    )
    denied = storage_error(OSError("403 Forbidden sig=SECRETSIG"), "s3://b/t", "listing _delta_log")
    assert str(denied) == "s3://b/t: access denied while listing _delta_log"
    assert scrub("") == ""
