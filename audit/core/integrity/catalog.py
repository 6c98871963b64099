"""Catalog-managed tables: what the file-system log shows, and what only the catalog knows.

With the `catalogManaged` table feature (`catalogOwned-preview` before it was final), a commit
is first written as a *staged* commit (`_delta_log/_staged_commits/<version>.<uuid>.json`);
the catalog (e.g. Unity Catalog) ratifies one of them per version, and only later is it
*published* (backfilled) as `_delta_log/<version>.json`. The file system alone cannot tell
which staged file, if any, was ratified, so the audit's findings cover the published log and
this notice says how far it reaches and which staged versions lie beyond it (the
`catalog_managed_log` finding, info); staged commits that can be read unambiguously are
audited apart (runs/unpublished.py). Asking the catalog is out of scope: it needs catalog
credentials and an API this product does not speak.
"""

from __future__ import annotations

from audit.core.errors import DeltaAuditError
from audit.core.log.staged import staged_version
from audit.core.model import Finding, Protocol
from audit.core.severity import catalog_managed_severity
from audit.core.storage.store import LogStore
from audit.core.vocab import FindingKind
from audit.core.wording.log import catalog_managed_text

CATALOG_FEATURES = ("catalogManaged", "catalogOwned-preview")
CATALOG_MANAGED_LOG = FindingKind.CATALOG_MANAGED_LOG
STAGED_DIR = "_delta_log/_staged_commits"
_MAX_LISTED = 50  # related versions kept on the finding


def catalog_feature(protocol: Protocol | None) -> str | None:
    """The catalog-managed feature the table's protocol names, if any."""
    if protocol is None:
        return None
    features = {*(protocol.reader_features or []), *(protocol.writer_features or [])}
    return next((f for f in CATALOG_FEATURES if f in features), None)


def staged_versions(store: LogStore) -> list[int]:
    """Versions of the staged commit files present (ratified or not: unknowable here)."""
    try:
        entries = store.list(STAGED_DIR, stats=False)
    except DeltaAuditError:
        return []  # no staged commits directory: everything was published
    found = {staged_version(e.name) for e in entries if not e.is_dir}
    return sorted(v for v in found if v is not None)


def catalog_finding(feature: str, published: int, staged: list[int]) -> Finding:
    beyond = [v for v in staged if v > published]
    return catalog_managed_text(feature, published, beyond).finding(
        CATALOG_MANAGED_LOG,
        catalog_managed_severity(),
        published,
        beyond[:_MAX_LISTED],
        confirmed=True,
        details={
            "feature": feature,
            "published_version": published,
            "staged_versions": beyond[:_MAX_LISTED],
            "staged_count": len(beyond),
        },
    )


def catalog_findings(store: LogStore, protocol: Protocol | None, published: int) -> list[Finding]:
    feature = catalog_feature(protocol)
    if feature is None:
        return []
    return [catalog_finding(feature, published, staged_versions(store))]
