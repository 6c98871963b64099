"""audit/core is the Django-free core: every module under it (subpackages included, found by
walking the package, so new modules are checked without listing them) imports in a fresh
interpreter where Django, DRF and Celery cannot be imported at all."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from tests.support.paths import ROOT

FORBIDDEN = ("django", "rest_framework", "celery")

# Runs in a fresh interpreter: the finder goes first on sys.meta_path before anything of ours
# is imported, so even an indirect import (a core module importing a helper that imports
# Django) fails the way it would on a machine without Django installed.
IMPORT_EVERY_CORE_MODULE = textwrap.dedent(
    """
    import importlib, importlib.abc, json, pkgutil, sys, traceback

    FORBIDDEN = set(sys.argv[1].split(","))

    class Refuse(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in FORBIDDEN:
                raise ImportError(f"{name} is not importable in the core")
            return None

    sys.meta_path.insert(0, Refuse())

    import audit.core

    names = ["audit.core"]
    failures = {}

    def note(name):
        failures[name] = traceback.format_exc(limit=-3)

    # onerror: a subpackage whose __init__ fails to import is a failure, not a silent skip.
    for module in pkgutil.walk_packages(audit.core.__path__, "audit.core.", onerror=note):
        names.append(module.name)
        try:
            importlib.import_module(module.name)
        except BaseException:
            note(module.name)
    leaked = sorted(m for m in sys.modules if m.split(".")[0] in FORBIDDEN)
    print(json.dumps({"modules": names, "failures": failures, "leaked": leaked}))
    """
)


def test_every_core_module_imports_without_django_drf_or_celery():
    proc = subprocess.run(
        [sys.executable, "-c", IMPORT_EVERY_CORE_MODULE, ",".join(FORBIDDEN)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        # No DJANGO_SETTINGS_MODULE: nothing may need one.
        env={k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"},
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])

    assert report["failures"] == {}, "\n".join(
        f"{name}:\n{trace}" for name, trace in report["failures"].items()
    )
    assert report["leaked"] == []
    # The walk really reached the core (a broken walk must not pass as "nothing failed").
    assert {"audit.core.errors", "audit.core.vocab", "audit.core.jsonsafe"} <= set(
        report["modules"]
    )
    assert len(report["modules"]) > 20
