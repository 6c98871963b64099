"""Incidents: a table's findings grouped by root cause, each with its damage and the
statements that repair, show and prevent it.

`causes` (a finding's cause key), `grouping` (findings into incidents), `status`, `damage`
(rows wrong now, from the data), `updates` (an UPDATE's constant assignments, from its own
rewrite), `repairs` and `statements` (deltalake and Spark SQL), `quoting` (log values made
safe to paste), `build` (the entry point and the JSON). Import the submodules; this
package's __init__ stays empty.
"""
