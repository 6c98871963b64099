"""Dashboard pages (issue 8)."""

from django.contrib.auth import views as auth_views
from django.urls import path

from frontend import views

app_name = "frontend"

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
    path("tables/<int:table_id>/", views.table_detail, name="table"),
    path("tables/<int:table_id>/status/", views.table_status, name="table_status"),
    path("tables/<int:table_id>/analysis/", views.table_analysis_page, name="analysis"),
    path("tables/<int:table_id>/commits/<int:version>/", views.commit_detail, name="commit"),
    path("tables/<int:table_id>/diff/", views.table_diff_page, name="diff"),
    path("findings/", views.findings_list, name="findings"),
    path("findings/<int:finding_id>/", views.finding_detail, name="finding"),
    path(
        "findings/<int:finding_id>/acknowledge/",
        views.finding_acknowledge,
        name="finding_acknowledge",
    ),
    path("findings/<int:finding_id>/reopen/", views.finding_reopen, name="finding_reopen"),
    path("explain/", views.explain, name="explain"),
]
