#!/usr/bin/env python
import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    if sys.argv[1:2] == ["audit"]:
        # The one-shot audit needs no apps, models or database: skip django.setup().
        from audit.management.commands.audit import run_standalone

        run_standalone(sys.argv)
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
