"""The admin at /admin/, the public site (Wagtail's page tree) everywhere else, search at /search/."""
from blog import views
from django.urls import include, path
from wagtail import urls as wagtail_urls
from wagtail.admin import urls as wagtailadmin_urls

urlpatterns = [
    path("admin/", include(wagtailadmin_urls)),
    path("search/", views.search, name="search"),
    path("", include(wagtail_urls)),
]
