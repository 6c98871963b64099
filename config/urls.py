from django.contrib import admin
from django.urls import include, path

# The app is named in strings only: config stands below every package of the app
# (tests/app/test_house.py), and Django imports these when it resolves the first URL.
urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", include("audit.api.urls")),
    path("", include("audit.alerting.urls")),
    # The pages, then (last) the favicon, /healthz and the JSON 404 of any other /api/ path.
    path("", include("frontend.urls")),
    path("", include("frontend.errors")),
]

# Branded pages with the navigation and the reason (a JSON body under /api/).
handler403 = "frontend.errors.forbidden"
handler404 = "frontend.errors.not_found"
handler500 = "frontend.errors.server_error"
