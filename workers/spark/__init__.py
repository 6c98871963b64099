"""The Spark path: the fleet job (Django-free: job, units, output, probe, entry, archive; shipped
to executors in the zip) and the dashboard's side of it (session, tasks, importer)."""
