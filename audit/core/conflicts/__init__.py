"""Delta's commit-time conflict rules, re-run from the log.

- `scope`: what a commit read (ReadScope) and the facts of a commit that decide it;
- `context`: per-history caches the rules ask (config at a version, partition matchers);
- `rules`: the checks, one function each, in the order of Delta's ConflictChecker;
- `verdict`: what they found per pair (Recheck) and per commit (CommitAudit);
- `window`: which commits ran concurrently with a commit;
- `facts` / `findings`: the `missed_conflict` and `concurrent_metadata_change` findings
  (their words: wording/conflicts.py).

Import the submodules; this package's __init__ stays empty so that wording/ can import the
fact dataclasses without pulling in the rules that import wording/.
"""
