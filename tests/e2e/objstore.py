"""Real object-store protocol servers for the tests: moto's S3 server and Azurite (Azure Blob).

Each server runs as a subprocess on a free loopback port and is stopped by its PID (its own
process group), never by name. The session fixtures `s3_server` / `azurite_server` are
registered by tests/e2e/conftest.py; the classes can be used directly too.

- `MotoS3`: `moto_server -H 127.0.0.1 -p PORT`. `enforce_auth()` turns IAM on (moto's
  /moto-api/reset-auth), after which only keys made by `make_user()` work, each with the
  policy it was given, so wrong-credential and access-denied cases are real 403s.
- `Azurite`: the blob endpoint of Azurite (npm package, installed by scripts/lib.sh under
  .cache/azurite). Shared-key auth with the well-known devstoreaccount1 key is always on.
- `upload_table(local_dir, uri, options)`: copies a local Delta table (log and data files)
  to `uri` through deltalake's own object_store file system, so what the product reads is
  exactly what delta-rs would have written there.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.cli import manage
from tests.support.net import free_port
from tests.support.paths import ROOT

AZURITE_DIR = ROOT / ".cache" / "azurite"
AZURITE_VERSION = "3.37.0"  # keep in step with scripts/lib.sh

# Azurite's well-known development account (public, documented by Microsoft).
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

# What a service may print that is not a test failure: keep its output in a file for debugging.
_LOG_DIR = ROOT / "var" / "objstore"


def _wait_for_port(port: int, proc: subprocess.Popen, log: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"server on port {port} did not start in {timeout:.0f} s")


@dataclass
class ServerProcess:
    """A subprocess in its own process group, stopped by its PID."""

    argv: list[str]
    port: int
    env: dict[str, str] = field(default_factory=dict)
    proc: subprocess.Popen | None = None
    log: Path | None = None

    def start(self) -> None:
        _LOG_DIR.mkdir(parents=True, exist_ok=True)
        self.log = _LOG_DIR / f"{Path(self.argv[0]).name}-{self.port}-{os.getpid()}.log"
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                self.argv,
                env={**os.environ, **self.env},
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                cwd=ROOT,
            )
        _wait_for_port(self.port, self.proc, self.log)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)


# --------------------------------------------------------------------------- S3 (moto)


@dataclass(frozen=True)
class S3Keys:
    access_key_id: str
    secret_access_key: str


class MotoS3:
    """moto's standalone server speaking the S3 (and IAM) protocol on a loopback port."""

    region = "us-east-1"

    def __init__(self) -> None:
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        exe = Path(sys.executable).with_name("moto_server")
        argv = [str(exe)] if exe.exists() else [sys.executable, "-m", "moto.server"]
        self.server = ServerProcess(
            [*argv, "-H", "127.0.0.1", "-p", str(self.port)],
            self.port,
            env={"AWS_EC2_METADATA_DISABLED": "true", "MOTO_ALLOW_NONEXISTENT_REGION": "true"},
        )
        # Until enforce_auth(), any key is accepted; after it, these admin keys still work.
        self.admin = S3Keys("testing", "testing")
        self.auth_enforced = False

    def start(self) -> MotoS3:
        self.server.start()
        return self

    def stop(self) -> None:
        self.server.stop()

    def client(self, service: str = "s3", keys: S3Keys | None = None):
        import boto3

        keys = keys or self.admin
        return boto3.client(
            service,
            endpoint_url=self.endpoint,
            region_name=self.region,
            aws_access_key_id=keys.access_key_id,
            aws_secret_access_key=keys.secret_access_key,
        )

    def options(self, keys: S3Keys | None = None) -> dict[str, str]:
        """deltalake/object_store storage options for this server."""
        keys = keys or self.admin
        return {
            "aws_endpoint_url": self.endpoint,
            "aws_access_key_id": keys.access_key_id,
            "aws_secret_access_key": keys.secret_access_key,
            "aws_region": self.region,
            "aws_allow_http": "true",
            "aws_conditional_put": "etag",
        }

    def env(self, keys: S3Keys | None = None) -> dict[str, str]:
        """The standard AWS_* environment variables for this server."""
        keys = keys or self.admin
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": keys.access_key_id,
            "AWS_SECRET_ACCESS_KEY": keys.secret_access_key,
            "AWS_REGION": self.region,
            "AWS_DEFAULT_REGION": self.region,
            "AWS_ALLOW_HTTP": "true",
            "AWS_EC2_METADATA_DISABLED": "true",
        }

    def create_bucket(self, name: str | None = None) -> str:
        name = name or f"lake-{uuid.uuid4().hex[:10]}"
        self.client().create_bucket(Bucket=name)
        return name

    def make_user(self, policy: dict | None = None, name: str | None = None) -> S3Keys:
        """An IAM user with `policy` (default: full access) and a fresh access key."""
        iam = self.client("iam")
        name = name or f"u-{uuid.uuid4().hex[:10]}"
        iam.create_user(UserName=name)
        policy = policy or {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}],
        }
        iam.put_user_policy(UserName=name, PolicyName="p", PolicyDocument=json.dumps(policy))
        key = iam.create_access_key(UserName=name)["AccessKey"]
        return S3Keys(key["AccessKeyId"], key["SecretAccessKey"])

    def read_only_user(self, bucket: str, prefix: str = "") -> S3Keys:
        """A user allowed only to list and get under s3://bucket/prefix (what docs/storage.md asks)."""
        policy = {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Action": ["s3:ListBucket"],
                    "Resource": f"arn:aws:s3:::{bucket}",
                },
                {
                    "Effect": "Allow",
                    "Action": ["s3:GetObject"],
                    "Resource": f"arn:aws:s3:::{bucket}/{prefix}*",
                },
            ],
        }
        return self.make_user(policy)

    def enforce_auth(self) -> None:
        """From now on only IAM keys work (the admin keys become an IAM admin first)."""
        if self.auth_enforced:
            return
        self.admin = self.make_user()
        import requests

        requests.post(f"{self.endpoint}/moto-api/reset-auth", data=b"0", timeout=10)
        self.auth_enforced = True

    def delete_prefix(self, bucket: str, prefix: str) -> int:
        s3 = self.client()
        keys = [
            {"Key": obj["Key"]}
            for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
            for obj in page.get("Contents", [])
        ]
        for i in range(0, len(keys), 1000):
            s3.delete_objects(Bucket=bucket, Delete={"Objects": keys[i : i + 1000]})
        return len(keys)


# --------------------------------------------------------------------------- Azure (Azurite)


def azurite_executable() -> Path | None:
    """Azurite's blob server as installed by scripts/lib.sh (or on PATH)."""
    local = AZURITE_DIR / "node_modules" / ".bin" / "azurite-blob"
    if local.exists():
        return local
    found = shutil.which("azurite-blob")
    return Path(found) if found else None


def ensure_azurite() -> Path | None:
    """Install Azurite into .cache/azurite when node/npm are there (what scripts/lib.sh does)."""
    exe = azurite_executable()
    if exe is not None:
        return exe
    if shutil.which("npm") is None or shutil.which("node") is None:
        return None
    subprocess.run(["bash", "-c", "source scripts/lib.sh && ensure_azurite"], cwd=ROOT, check=False)
    return azurite_executable()


class Azurite:
    """Azurite's blob endpoint on a loopback port, data in a temporary folder."""

    def __init__(self, location: Path, exe: Path) -> None:
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}/{AZURITE_ACCOUNT}"
        self.account = AZURITE_ACCOUNT
        self.key = AZURITE_KEY
        self.server = ServerProcess(
            [
                str(exe),
                "--blobHost",
                "127.0.0.1",
                "--blobPort",
                str(self.port),
                "--location",
                str(location),
                "--silent",
                "--skipApiVersionCheck",
                "--disableTelemetry",
                "--loose",
            ],
            self.port,
        )

    def start(self) -> Azurite:
        self.server.start()
        return self

    def stop(self) -> None:
        self.server.stop()

    def options(self, key: str | None = None) -> dict[str, str]:
        """deltalake/object_store storage options for this server."""
        return {
            "azure_storage_account_name": self.account,
            "azure_storage_account_key": key or self.key,
            "azure_storage_endpoint": self.endpoint,
            "allow_http": "true",
        }

    def env(self) -> dict[str, str]:
        return {
            "AZURE_STORAGE_ACCOUNT_NAME": self.account,
            "AZURE_STORAGE_ACCOUNT_KEY": self.key,
            "AZURE_STORAGE_ENDPOINT": self.endpoint,
            "AZURE_ALLOW_HTTP": "true",
        }

    def _filesystem(self):
        from pyarrow import fs as pafs

        return pafs.AzureFileSystem(
            account_name=self.account,
            account_key=self.key,
            blob_storage_authority=f"127.0.0.1:{self.port}",
            blob_storage_scheme="http",
            dfs_storage_authority=f"127.0.0.1:{self.port}",
            dfs_storage_scheme="http",
        )

    def create_container(self, name: str | None = None) -> str:
        name = name or f"lake-{uuid.uuid4().hex[:10]}"
        self._filesystem().create_dir(name)
        return name

    def delete_prefix(self, container: str, prefix: str) -> None:
        self._filesystem().delete_dir(f"{container}/{prefix.strip('/')}")


# --------------------------------------------------------------------------- uploading tables


def upload_table(local_dir: str | os.PathLike[str], uri: str, options: dict[str, str]) -> int:
    """Copy every file of the local table `local_dir` to `uri`; returns the number of files.

    Goes through deltalake's object_store file system (the one the product reads with), so
    the objects land with the same keys delta-rs would write.
    """
    from deltalake.fs import DeltaStorageHandler

    # The Rust handler's own streams take bytes; through pa.PythonFile they would be handed
    # pyarrow Buffers, which they refuse.
    handler = DeltaStorageHandler(uri.rstrip("/"), options=options)._handler
    root = Path(local_dir)
    count = 0
    for path in sorted(root.rglob("*")):
        if not path.is_file():
            continue
        rel = path.relative_to(root).as_posix()
        out = handler.open_output_stream(rel, None)
        try:
            out.write(path.read_bytes())
        finally:
            out.close()
        count += 1
    return count


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def s3_server() -> Iterator[MotoS3]:
    """A moto S3 server for the whole session (IAM off until a test calls enforce_auth())."""
    server = MotoS3().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def azurite_server(tmp_path_factory) -> Iterator[Azurite]:
    """Azurite's blob server for the whole session; skipped only when node is absent."""
    exe = ensure_azurite()
    if exe is None:
        pytest.skip("Azure tests need node/npm for Azurite (scripts/lib.sh ensure_azurite)")
    server = Azurite(tmp_path_factory.mktemp("azurite"), exe).start()
    try:
        yield server
    finally:
        server.stop()


# --------------------------------------------------------------------------- configuration


def write_storage_config(path: str | os.PathLike[str], roots: dict[str, dict[str, str]]) -> str:
    """Write an AUDIT_STORAGE_CONFIG TOML file mapping prefix -> options; returns its path."""
    lines = []
    for prefix, options in roots.items():
        pairs = ", ".join(f"{k} = {json.dumps(v)}" for k, v in sorted(options.items()))
        lines += ["[[storage]]", f"prefix = {json.dumps(prefix)}", f"options = {{ {pairs} }}", ""]
    Path(path).write_text("\n".join(lines))
    return str(path)


def audit_cli(uri: str, env: dict[str, str], *extra: str) -> subprocess.CompletedProcess:
    """`manage.py audit <uri> --json --files` in a fresh process with exactly `env` on top of a
    clean environment (no AWS_*/AZURE_*/GOOGLE_* leaking in from the developer's shell)."""
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AWS_", "AZURE_", "GOOGLE_", "AUDIT_STORAGE_CONFIG"))
    }
    return manage("audit", uri, "--json", "--files", *extra, env={**base, **env}, timeout=300)
