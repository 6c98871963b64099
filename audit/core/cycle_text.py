"""Words for the dependency cycles: moved to audit/core/wording/cycles.py (re-exported here)."""

from __future__ import annotations

from audit.core.wording.cycles import cycle_sentence, edge_why, witness_fields

__all__ = ["cycle_sentence", "edge_why", "witness_fields"]
