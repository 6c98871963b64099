"""Anomalies: history orders that no serial execution produces, and table-level facts.

Each module computes facts (dataclasses in audit/core/facts/anomalies.py) and builds its
findings; the sentences come from wording/. `never_existed` (with witness.py to find the rows),
`reorders` (WriteSerializable let a commit ignore blind appends), `hotspots` (partitions where
concurrent commits keep overlapping), `identity` (identity columns under concurrency),
`settings` (isolation settings writers ignore, missing read versions).

Import the submodules; this package's __init__ stays empty (importing one detector does not
load the others).
"""
