from django.contrib import admin
from django.urls import include, path, re_path

from audit.api.urls import not_found
from frontend import errors

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", include("audit.api.urls")),
    path("", include("audit.alerting.urls")),
    path("", include("frontend.urls")),
    path("favicon.ico", errors.favicon, name="favicon"),
    path("healthz", errors.healthz, name="healthz"),
    # Whatever else is under /api/ (after the alerting app's /api/alerts/): a JSON 404.
    re_path(r"^api/(?P<rest>.*)$", not_found),
]

# Branded pages with the navigation and the reason (a JSON body under /api/).
handler403 = errors.forbidden
handler404 = errors.not_found
handler500 = errors.server_error
