"""Dashboard pages, grouped as frontend/views/ is: tables, a table's tabs, findings."""

from django.contrib.auth import views as auth_views
from django.urls import include, path

from frontend import views

app_name = "frontend"

# Under /tables/<id>/: the table's tabs, its status poll and its commits.
table_pages = [
    path("", views.table_detail, name="table"),
    path("status/", views.table_status, name="table_status"),
    path("analysis/", views.table_analysis_page, name="analysis"),
    path("history/", views.table_history_page, name="history"),
    path("schema/", views.table_schema_page, name="schema"),
    path("commits/<int:version>/", views.commit_detail, name="commit"),
    path("diff/", views.table_diff_page, name="diff"),
    path("writers/", views.table_writers_page, name="writers"),
    path("incidents/<int:incident_id>/", views.incident_detail, name="incident"),
    path(
        "incidents/<int:incident_id>/acknowledge/",
        views.incident_acknowledge,
        name="incident_acknowledge",
    ),
]

# Under /findings/<id>/: one finding, and what administrators do with it.
finding_pages = [
    path("", views.finding_detail, name="finding"),
    path("acknowledge/", views.finding_acknowledge, name="finding_acknowledge"),
    path("reopen/", views.finding_reopen, name="finding_reopen"),
]

urlpatterns = [
    path(
        "login/",
        auth_views.LoginView.as_view(
            template_name="frontend/login.html", redirect_authenticated_user=True
        ),
        name="login",
    ),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", views.index, name="index"),
    path("tables/<int:table_id>/", include(table_pages)),
    path("findings/", views.findings_list, name="findings"),
    path("findings/<int:finding_id>/", include(finding_pages)),
    path("explain/", views.explain, name="explain"),
]
