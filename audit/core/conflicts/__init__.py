"""Delta's commit-time conflict rules, re-run from the log.

- `scope`: what a commit read (ReadScope) and the facts of a commit that decide it;
- `context`: per-history caches the rules ask (config at a version, partition matchers);
- `rules`: the checks, one function each, in the order of Delta's ConflictChecker;
- `verdict`: what they found per pair (Recheck) and per commit (CommitAudit);
- `window`: which commits ran concurrently with a commit;
- `findings`: the `missed_conflict` and `concurrent_metadata_change` findings (their facts:
  audit/core/facts/conflicts.py; their words: wording/conflicts.py);
- `matrix`: the reference page's conflict matrices (which operation kinds can conflict).

Import the submodules; this package's __init__ stays empty (importing one rule's module does
not load the others).
"""
