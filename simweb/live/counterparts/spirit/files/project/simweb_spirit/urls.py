"""Spirit at the site root; Django's own admin is left out (Spirit has its own at /st/admin/)."""
import spirit.urls
from django.urls import include, path

urlpatterns = [path("", include(spirit.urls))]
