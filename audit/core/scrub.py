"""The one scrubber: what an error text may keep before it is stored, shown or logged.

Error texts come from object stores, HTTP libraries and transports, and they quote what they
were given: signed URLs, SAS tokens, session tokens, Authorization headers, and for Slack the
webhook URL itself, whose path *is* the credential. `scrub(text, secrets)` removes

- the path, query and fragment of every http(s) URL (scheme and host stay, so the reader still
  sees which endpoint failed), and user:password@ in front of the host of any URI;
- signed-request parameters (`sig=`, `se=`, `X-Amz-Signature=`, `X-Amz-Security-Token=`,
  session tokens ...) and Azure connection-string keys;
- `Authorization:` and `Bearer` values;
- every literal secret value it is given.

`process_secrets()` is the list of literal secrets of this process: the secret options of the
storage configuration (`AUDIT_STORAGE_CONFIG`, `env:NAME` values resolved) and the values of
secret-looking environment variables (AWS_SECRET_ACCESS_KEY, AZURE_STORAGE_SAS_TOKEN, ...).
It reads the configuration itself (leniently, never raising) because `storage_config` imports
this module's notion of a secret option, and imports run one way.
"""

from __future__ import annotations

import functools
import os
import re
import tomllib
from collections.abc import Iterable, Mapping
from typing import Any

MASK = "***"
# Storage option names whose values are secrets (substrings of the lower-cased key).
SECRET_MARKERS = ("secret", "key", "token", "sas", "password", "credential", "signature")
# Option names that contain a marker but only name an identity.
NOT_SECRET_OPTIONS = frozenset({"aws_access_key_id", "access_key_id"})
# Words of an environment variable's name that make its value a secret.
_ENV_WORDS = frozenset(
    {"SECRET", "TOKEN", "KEY", "PASSWORD", "PASSWD", "SAS", "CREDENTIAL", "CREDENTIALS"}
)
# Shorter values are too likely to be ordinary words or numbers ("true", "3600").
MIN_SECRET_LENGTH = 8

_URL = re.compile(r"(?i)\b(https?)://(?:[^\s/?#@'\"<>]*@)?([^\s/?#'\"<>]+)([^\s'\"<>]*)")
_TRAILING = ".,;:)]}"
# `url: /path` as requests and urllib3 word a failed request (the host is said before it).
_BARE_PATH = re.compile(r"(?i)(\burl:\s*)/[^\s'\"<>)]*")
# Signed-request parameters anywhere (a SAS token pasted alone has no URL around it).
_SIGNED_NAMES = (
    "sig", "signature", "x-amz-signature", "x-amz-security-token", "x-amz-credential",
    "x-goog-signature", "x-goog-credential", "access_token", "session_token", "sessiontoken",
    "security_token", "client_secret", "accountkey", "sharedaccesssignature",
)  # fmt: skip
_SIGNED = re.compile(r"(?i)(\b(?:" + "|".join(_SIGNED_NAMES) + r")=)[^&\s;'\"<>]+")
# Query parameters that are secrets only after ? or & (bare `se=` or `st=` can be a partition).
_QUERY_PARAM = re.compile(
    r"(?i)([?&](?:se|st|sp|skoid|sktid|skt|ske|sks|skv|key|token|code)=)[^&\s'\"<>]+"
)
# user:password@ in front of any URI's host (s3://key:secret@bucket/...); http(s) URLs lose it
# with their path anyway.
_USER_PASSWORD = re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*://[^\s/?#@:'\"<>]*:)[^\s/?#@'\"<>]*@")
# urllib3 logs each request as `https://host:443 "POST /path HTTP/1.1" 200`: the path follows.
_LOGGED_REQUEST = re.compile(r"(?i)(https?://[^\s/\"'<>]+\s+\"[A-Z]+ )/[^\s\"]*")
_AUTHORIZATION = re.compile(r"(?i)(\bauthorization\b[\"']?\s*[:=]\s*[\"']?)[^\r\n\"']+")
# A credential has a digit or punctuation in it: "basic authentication" is left alone.
_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+(?=[A-Za-z]*[0-9._~+/=-])[A-Za-z0-9._~+/=-]{8,}")


def is_secret_option(key: str) -> bool:
    """Whether a storage option's value is a secret (its name has secret, key, token, ...)."""
    low = key.lower()
    return low not in NOT_SECRET_OPTIONS and any(m in low for m in SECRET_MARKERS)


@functools.lru_cache(maxsize=4096)
def is_secret_variable(name: str) -> bool:
    """Whether an environment variable holds a secret (AWS_SECRET_ACCESS_KEY, *_TOKEN, ...)."""
    words = name.upper().split("_")
    if words[-1] in ("ID", "NAME", "URL", "FILE", "PATH", "SECONDS", "REGION"):
        return False  # AWS_ACCESS_KEY_ID names who, not the secret; the rest are not values
    return any(word in _ENV_WORDS for word in words)


def scrub(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with URL paths, signed-request parameters, authorization values and `secrets`
    replaced by masks."""
    # Literal secrets first: a URL or parameter rule could otherwise cut one in half.
    for secret in sorted({s for s in secrets if s and len(s) >= 4}, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return _apply(text, _RULES)


def scrub_parameters(text: str) -> str:
    """`text` with signed-request parameters (`sig=`, `X-Amz-Signature=`, `se=` after ? or &
    ...) and user:password@ of any URI masked, and nothing else changed: for a path shown as
    it is (audit/core/storage/roots.py `shown_path`), whose folders and file name stay."""
    return _apply(text, _PARAMETER_RULES)


def _apply(text: str, rules: tuple[tuple[re.Pattern[str], Any, tuple[str, ...]], ...]) -> str:
    for pattern, replace, needs in rules:
        # An ASCII text without any of the rule's literals cannot match it (most texts: a
        # local path, a parse error): its scan is skipped. Any other text is scanned, since
        # case-insensitive matching pairs some non-ASCII letters with ASCII ones ("ſ", "K").
        if text.isascii():
            lowered = text.lower()
            if not any(literal in lowered for literal in needs):
                continue
        text = pattern.sub(replace, text)
    return text


def _masked(match: re.Match[str]) -> str:
    return match.group(1) + MASK


def _path_cut(match: re.Match[str]) -> str:
    return match.group(1) + "/…"


def _password_masked(match: re.Match[str]) -> str:
    return match.group(1) + MASK + "@"


def _credential_masked(match: re.Match[str]) -> str:
    return f"{match.group(1)} {MASK}"


def _url_without_path(match: re.Match[str]) -> str:
    scheme, host, rest = match.group(1), match.group(2), match.group(3)
    tail = ""
    while rest and rest[-1] in _TRAILING:  # sentence punctuation after the URL stays
        rest, tail = rest[:-1], rest[-1] + tail
    kept = f"{scheme}://{host}"
    return (kept + "/…" if rest not in ("", "/") else kept + rest) + tail


# scrub's rules in order: a pattern, its replacement, and literals (lower case) at least one of
# which a match contains.
_RULES: tuple[tuple[re.Pattern[str], Any, tuple[str, ...]], ...] = (
    (_AUTHORIZATION, _masked, ("authorization",)),
    (_BEARER, _credential_masked, ("bearer", "basic")),
    (_SIGNED, _masked, tuple(f"{name}=" for name in _SIGNED_NAMES)),
    (_QUERY_PARAM, _masked, ("?", "&")),
    (_BARE_PATH, _path_cut, ("url:",)),
    (_LOGGED_REQUEST, _path_cut, ("://",)),
    (_URL, _url_without_path, ("://",)),
    (_USER_PASSWORD, _password_masked, ("://",)),
)
_PARAMETER_RULES = (_RULES[2], _RULES[3], _RULES[-1])  # signed, query parameters, passwords


def environment_secrets(environ: Mapping[str, str]) -> set[str]:
    """Values of secret-looking environment variables, long enough to be secrets."""
    return {
        value
        for name, value in environ.items()
        if len(value) >= MIN_SECRET_LENGTH and is_secret_variable(name)
    }


def config_secrets(text: str, environ: Mapping[str, str]) -> set[str]:
    """Secret option values of a storage configuration's TOML text, `env:NAME` resolved."""
    try:
        entries = tomllib.loads(text).get("storage", [])
    except (tomllib.TOMLDecodeError, AttributeError):
        return set()
    found: set[str] = set()
    for entry in entries if isinstance(entries, list) else []:
        options = entry.get("options") if isinstance(entry, dict) else None
        for key, raw in options.items() if isinstance(options, dict) else ():
            if not (isinstance(key, str) and isinstance(raw, str) and is_secret_option(key)):
                continue
            value = environ.get(raw[4:], "") if raw.startswith("env:") else raw
            if len(value) >= 4:
                found.add(value)
    return found


_config_cache: dict[str, tuple[float, str]] = {}


def _config_text(path: str) -> str:
    try:
        mtime = os.stat(path).st_mtime
        cached = _config_cache.get(path)
        if cached is not None and cached[0] == mtime:
            return cached[1]
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError):
        return ""
    _config_cache[path] = (mtime, text)
    return text


# The process environment's secrets, with the raw environment they were read from.
_environ_seen: list[Any] = [None, frozenset()]


def _os_environ_secrets() -> frozenset[str]:
    """`environment_secrets(os.environ)`, worked out again only when the environment changed.

    Every error kept is scrubbed, and an audit of a log whose files are gone keeps thousands
    (~40 variables decoded each through os.environ's mapping: 20 us an error). The raw
    environment (`os.environ._data`, bytes on POSIX) is compared whole, so any change to it,
    a test's or a worker's, is seen."""
    raw = getattr(os.environ, "_data", None)
    if not isinstance(raw, dict):
        return frozenset(environment_secrets(os.environ))
    snapshot = tuple(raw.items())
    if _environ_seen[0] != snapshot:
        _environ_seen[:] = [snapshot, frozenset(environment_secrets(os.environ))]
    return _environ_seen[1]


def process_secrets(environ: Mapping[str, str] | None = None) -> set[str]:
    """Every literal secret this process knows of (environment and storage configuration)."""
    env = os.environ if environ is None else environ
    found = set(_os_environ_secrets()) if environ is None else environment_secrets(env)
    path = env.get("AUDIT_STORAGE_CONFIG", "").strip()
    if path:
        found |= config_secrets(_config_text(path), env)
    return found


def scrub_error(text: str) -> str:
    """`scrub` with this process's secrets: the call for any text about to be kept."""
    return scrub(text, process_secrets())
