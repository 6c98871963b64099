"""Identity-column concurrency: "Tables with identity columns do not support concurrent
transactions" (reference page), yet the history shows data-changing commits in flight together."""

from __future__ import annotations

from typing import TYPE_CHECKING

from audit.core import severity as sev
from audit.core.conflicts.context import TableContext
from audit.core.facts.anomalies import IdentityFacts, commits_span
from audit.core.model import Finding
from audit.core.vocab import FindingKind
from audit.core.wording.table import identity_text

if TYPE_CHECKING:
    from audit.core.history.summary import History


def identity_facts(
    history: History, ctx: TableContext, concurrent_commits: list[int]
) -> IdentityFacts | None:
    """`concurrent_commits`: the versions that had a concurrent window, in version order."""
    columns = [c.name for c in history.state.identity_columns]
    if not columns or not concurrent_commits:
        return None
    concurrent = [
        v for v in concurrent_commits if (s := ctx.summary(v)) is not None and s.data_change
    ]
    if not concurrent:
        return None
    return IdentityFacts(columns, concurrent)


def identity_finding(
    history: History, ctx: TableContext, concurrent_commits: list[int]
) -> Finding | None:
    facts = identity_facts(history, ctx, concurrent_commits)
    if facts is None:
        return None
    return identity_text(facts).finding(
        FindingKind.IDENTITY_COLUMN_CONCURRENCY,
        sev.identity_concurrency_severity(),
        facts.concurrent[0],
        [],
        details={"identity_columns": facts.columns, **commits_span(facts.concurrent)},
    )
