"""The zip that carries the core and the Spark job's modules to a cluster's executors.

Built on the driver (workers.spark.job.prepare_executors adds it to the session; `entry
--bundle` writes it for spark-submit --py-files). Django-free, like everything in the zip.
"""

from __future__ import annotations

import hashlib
import tempfile
import zipfile
from pathlib import Path

# Modules of workers/spark/ that run on a cluster (the others need Django or Celery).
JOB_MODULES = (
    "job.py",
    "units.py",
    "transport.py",
    "archive.py",
    "probe.py",
    "output.py",
    "entry.py",
)
# The zip's `workers` and `workers.spark` packages hold only the Django-free job modules: the
# real workers/__init__.py starts the Celery app, which a cluster has no use for (nor Celery).
_WORKERS_STUB = b'"""The Spark job modules of Delta Audit (shipped zip: no Celery, no Django)."""\n'


def core_archive(target: str | None = None) -> str:
    """A zip of the core (audit/__init__.py + audit/core/**.py) and the Spark job's modules.

    The name carries a hash of the contents: Spark refuses to add a different file under a
    name it has already shipped, and a fresh name per build never serves a stale core.
    """
    root = Path(__file__).resolve().parents[2]
    sources = [(root / "audit" / "__init__.py", "audit/__init__.py")]
    # Every module of the core, subpackages too (vocab.py, jsonsafe.py, any core/x/ package).
    core = root / "audit" / "core"
    sources += [
        (p, f"audit/core/{p.relative_to(core).as_posix()}") for p in sorted(core.rglob("*.py"))
    ]
    sources += [
        (root / "workers" / "spark" / name, f"workers/spark/{name}") for name in JOB_MODULES
    ]
    digest = hashlib.sha256(_WORKERS_STUB)
    for path, name in sources:
        digest.update(name.encode() + b"\0" + path.read_bytes())
    directory = Path(target) if target else Path(tempfile.mkdtemp(prefix="delta-audit-code-"))
    target_path = directory / f"delta_audit_core_{digest.hexdigest()[:12]}.zip"
    with zipfile.ZipFile(target_path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("workers/__init__.py", _WORKERS_STUB)
        archive.writestr("workers/spark/__init__.py", _WORKERS_STUB)
        for path, name in sources:
            archive.write(path, name)
    return str(target_path)


def running_from_archive() -> bool:
    """True inside a shipped zip (spark-submit --py-files): executors have it already."""
    return not Path(__file__).is_file()
