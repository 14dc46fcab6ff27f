"""URLs of the Oscar counterpart: Oscar's own shop at the root."""
from django.apps import apps
from django.urls import include, path

urlpatterns = [
    path("i18n/", include("django.conf.urls.i18n")),
    path("", include(apps.get_app_config("oscar").urls[0])),
]
