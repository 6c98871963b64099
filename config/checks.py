"""Start-up refusals of settings that would expose the product's own files.

Every table's reads stay inside AUDIT_ALLOWED_ROOTS (audit/trust/paths.py), and a log's paths
are steered by whoever writes the table: a root holding the SQLite database (and its `-wal`),
the var dir (logs, the embedded broker, the test database) or the storage configuration would
let a log name them as data files and show their bytes as a witness's rows. settings.py
refuses to start with such a root. Django-free and import-light, as config/declared.py.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from urllib.parse import unquote, urlsplit


def _local(uri: str) -> str | None:
    """The resolved local path of a root, None for a remote one."""
    text = uri.strip()
    if text.startswith("file:"):
        text = unquote(urlsplit(text).path)
    elif "://" in text or not text:
        return None
    return os.path.realpath(os.path.abspath(os.path.expanduser(text)))


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def exposed_product_files(
    roots: Iterable[str], files: Iterable[str], folders: Iterable[str]
) -> list[str]:
    """One line per allowed root that holds one of `files` (or its SQLite companions) or
    overlaps one of `folders` (holds it or lies in it); empty when none does."""
    product = [p for p in (_local(f) for f in files if f) if p]
    dirs = [p for p in (_local(f) for f in folders if f) if p]
    problems = []
    for root in roots:
        where = _local(root)
        if where is None:
            continue
        held = [f for f in product if _under(f, where)]
        held += [d for d in dirs if _under(d, where) or _under(where, d)]
        if held:
            problems.append(f"AUDIT_ALLOWED_ROOTS entry {root!r} holds {held[0]}")
    return problems


def exposed_roots(roots: Iterable[str], databases: dict, var_dir: str) -> list[str]:
    """The problems of `exposed_product_files` for this configuration: the SQLite database
    files (with `-wal`, `-shm`, `-journal`), the var dir, the storage configuration."""
    files = [os.environ.get("AUDIT_STORAGE_CONFIG", "").strip()]
    for db in databases.values():
        if db.get("ENGINE") == "django.db.backends.sqlite3":
            for name in (db.get("NAME"), (db.get("TEST") or {}).get("NAME")):
                if name and str(name) != ":memory:":
                    files += [f"{name}{suffix}" for suffix in ("", "-wal", "-shm", "-journal")]
    return exposed_product_files(roots, files, [var_dir])
