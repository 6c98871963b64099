"""Moved to `frontend.views.health` (and `frontend.views.table.health_config`); kept so the
old import path works."""

from frontend.views.health import health_config, table_diff_page

__all__ = ["health_config", "table_diff_page"]
