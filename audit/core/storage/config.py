"""Storage credentials per root: which deltalake/object_store options a table URI is read with.

`AUDIT_STORAGE_CONFIG` names a TOML file of `[[storage]]` entries:

    [[storage]]
    prefix = "s3://lake/finance/"
    options = { aws_access_key_id = "env:FIN_KEY", aws_secret_access_key = "env:FIN_SECRET" }

The longest prefix matching a URI wins. A value `env:NAME` is read from the environment when
the options are used (so secrets stay in the environment or a secret store, never in the file,
the database or a page). With no matching root, object_store's own defaults apply: the standard
AWS_*, AZURE_STORAGE_* and GOOGLE_* variables.

The resolver is pure (`resolve_storage(uri, config, environ)`); `storage_for(uri)` is the one
call every reader makes (log reader, witness, Celery tail, Spark executors): it loads the file
named by the environment of the process it runs in, so an executor resolves its own secrets.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field

from audit.core.errors import DeltaAuditError
from audit.core.scrub import is_secret_option

ENV_VAR = "AUDIT_STORAGE_CONFIG"
ENV_PREFIX = "env:"

# Options that name the identity a root is read as, in the order the description prefers them.
_IDENTITY_OPTIONS = (
    "aws_access_key_id",
    "access_key_id",
    "aws_profile",
    "azure_storage_account_name",
    "account_name",
    "azure_client_id",
    "client_id",
    "google_service_account",
    "google_service_account_path",
    "service_account",
    "google_application_credentials",
)
_SCHEME_ALIASES = {"s3a": "s3", "gcs": "gs"}


@dataclass(frozen=True, slots=True)
class StorageRoot:
    prefix: str  # normalised: scheme lower-cased, ends with "/"
    options: tuple[tuple[str, str], ...]  # raw values: literals or "env:NAME"


@dataclass(frozen=True, slots=True)
class StorageConfig:
    roots: tuple[StorageRoot, ...] = ()
    source: str = ""  # the file it came from, for messages


@dataclass(frozen=True, slots=True)
class ResolvedStorage:
    """How one URI is read: the options to pass to deltalake/object_store, and a safe label."""

    uri: str
    root: str | None  # the matching prefix, None when only the environment applies
    options: dict[str, str] = field(repr=False)  # resolved values: may hold secrets
    credential: str  # e.g. "env:FIN_KEY", "inline", "environment"

    @property
    def description(self) -> str:
        """One redacted line, safe for pages, logs and the database."""
        root = self.root or "none (standard environment variables)"
        return f"root {root}, credential {self.credential}"

    @property
    def secrets(self) -> tuple[str, ...]:
        """Resolved secret values, so error texts can be scrubbed of them."""
        return tuple(v for k, v in self.options.items() if is_secret_option(k) and len(v) >= 4)


def normalise_uri(uri: str) -> str:
    """Lower-case scheme, scheme aliases folded (s3a -> s3), no trailing slash."""
    text = uri.strip()
    scheme, sep, rest = text.partition("://")
    if not sep:
        return text.rstrip("/") or text
    scheme = scheme.lower()
    scheme = _SCHEME_ALIASES.get(scheme, scheme)
    return f"{scheme}://{rest.rstrip('/')}"


def parse_storage_config(text: str, source: str = "storage config") -> StorageConfig:
    """Parse the TOML text of a storage configuration; DeltaAuditError on anything malformed."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise DeltaAuditError(f"{source}: not valid TOML: {err}") from None
    entries = data.get("storage", [])
    if not isinstance(entries, list):
        raise DeltaAuditError(f"{source}: [[storage]] must be a list of tables")
    roots: list[StorageRoot] = []
    seen: set[str] = set()
    for i, entry in enumerate(entries, 1):
        where = f"{source}: storage entry {i}"
        if not isinstance(entry, dict):
            raise DeltaAuditError(f"{where} is not a table")
        prefix = entry.get("prefix")
        if not isinstance(prefix, str) or "://" not in prefix:
            raise DeltaAuditError(f"{where}: prefix must be a URI such as s3://bucket/path/")
        options = entry.get("options", {})
        if not isinstance(options, dict) or not all(
            isinstance(k, str) and isinstance(v, str | bool | int) for k, v in options.items()
        ):
            raise DeltaAuditError(f"{where}: options must map option names to strings")
        norm = normalise_uri(prefix) + "/"
        if norm in seen:
            raise DeltaAuditError(f"{where}: prefix {prefix} is configured twice")
        seen.add(norm)
        values = tuple(sorted((k, _option_text(v)) for k, v in options.items()))
        roots.append(StorageRoot(norm, values))
    return StorageConfig(tuple(roots), source)


def _option_text(value: str | bool | int) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def matching_root(uri: str, config: StorageConfig) -> StorageRoot | None:
    """The root with the longest prefix of `uri` (on path-segment boundaries)."""
    target = normalise_uri(uri) + "/"
    best: StorageRoot | None = None
    for root in config.roots:
        if target.startswith(root.prefix) and (best is None or len(root.prefix) > len(best.prefix)):
            best = root
    return best


def resolve_storage(uri: str, config: StorageConfig, environ: Mapping[str, str]) -> ResolvedStorage:
    """Options for `uri`: its root's options with `env:NAME` values read from `environ`."""
    root = matching_root(uri, config)
    if root is None:
        return ResolvedStorage(uri, None, {}, "environment")
    options: dict[str, str] = {}
    for key, raw in root.options:
        if raw.startswith(ENV_PREFIX):
            name = raw[len(ENV_PREFIX) :]
            if name not in environ:
                raise DeltaAuditError(
                    f"storage root {root.prefix}: environment variable {name} "
                    f"(option {key}) is not set",
                    table_uri=uri,
                )
            options[key] = environ[name]
        else:
            options[key] = raw
    return ResolvedStorage(uri, root.prefix, options, _credential_label(root))


def _credential_label(root: StorageRoot) -> str:
    raw = dict(root.options)
    for key in _IDENTITY_OPTIONS:
        if key in raw:
            value = raw[key]
            return value if value.startswith(ENV_PREFIX) else f"inline {key}"
    refs = [v for k, v in root.options if v.startswith(ENV_PREFIX) and is_secret_option(k)]
    if refs:
        return ", ".join(refs)
    if any(is_secret_option(k) for k, _ in root.options):
        return "inline"
    return "environment"


# --------------------------------------------------------------------------- process level

_cache: dict[str, tuple[float, StorageConfig]] = {}


def load_storage_config(path: str) -> StorageConfig:
    """The configuration in file `path` (re-read when the file changes)."""
    try:
        mtime = os.stat(path).st_mtime
    except OSError as err:
        raise DeltaAuditError(
            f"{ENV_VAR}={path}: cannot read the storage configuration: {err.strerror}"
        ) from None
    cached = _cache.get(path)
    if cached is not None and cached[0] == mtime:
        return cached[1]
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as err:
        raise DeltaAuditError(
            f"{ENV_VAR}={path}: cannot read the storage configuration: {err}"
        ) from None
    config = parse_storage_config(text, source=path)
    _cache[path] = (mtime, config)
    return config


def current_config(environ: Mapping[str, str] | None = None) -> StorageConfig:
    """The configuration named by AUDIT_STORAGE_CONFIG in this process (empty when unset)."""
    env = os.environ if environ is None else environ
    path = env.get(ENV_VAR, "").strip()
    return load_storage_config(path) if path else StorageConfig()


def storage_for(uri: str, environ: Mapping[str, str] | None = None) -> ResolvedStorage:
    """How this process reads `uri` (call it where the read happens, e.g. on a Spark executor)."""
    env = os.environ if environ is None else environ
    return resolve_storage(uri, current_config(env), env)


def storage_options(uri: str) -> dict[str, str]:
    """The deltalake `storage_options` for `uri` in this process."""
    return storage_for(uri).options


def describe_storage(uri: str) -> str:
    """The redacted "root ..., credential ..." line for `uri`, or the configuration problem."""
    if "://" not in uri or uri.startswith("file:"):
        return "local filesystem"
    try:
        return storage_for(uri).description
    except DeltaAuditError as err:
        return str(err)
