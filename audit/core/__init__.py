"""Django-free core of Delta Audit: log reading, replay, summaries and the isolation audit.

Nothing in this package imports Django; models, tasks and views call into it.
"""
