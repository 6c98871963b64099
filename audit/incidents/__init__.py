"""Stored incidents (`models`): a table's findings grouped by root cause, as the tail keeps
them (audit/ingest/incidents.py writes them; audit/core/incidents/ computes them)."""
