"""Spirit at the site root; Django's own admin is left out (Spirit has its own at /st/admin/)."""
from django.urls import include, path

import spirit.urls

urlpatterns = [path("", include(spirit.urls))]
