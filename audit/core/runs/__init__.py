"""The ways of running the audit, above its rules: a table opened once (`table.py`, the front
door), the whole history, the tail's window (`tailwindow.py`), split ranges and their merged
whole-history findings (`split_history.py`, `range_partials.py`), unpublished commits
(`unpublished.py`), and the one-shot report's health sections (`sections.py`).
"""
